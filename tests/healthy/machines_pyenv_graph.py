"""Healthy twins of the requirement graph below TensorFlow (PKG021) and of the add-on release tables (PKG017's
fix), issue 36: environments where a dependency's own requirements are met, numpy 1 included, jax beside
TensorFlow, add-ons at the release built for the installed TensorFlow. Requires-Dist as the wheels write them."""

from __future__ import annotations

from support.fake_site_packages import (
    CP,
    JAX_0_4_38_REQUIRES,
    ML_DTYPES_0_5_REQUIRES,
    ML_DTYPES_0_7_REQUIRES,
    FakeSitePackages,
)

from tfdoctor.testing import FakeRoot

from . import parts
from .corpus import HealthyMachine, register
from .machines import USER_ENV, VENV
from .machines_pyenv import INTEL_2_14_REQUIRES

# keras 3.15.1 (py3-none-any) and what it brings, as their METADATA write them.
KERAS_3_15_REQUIRES = ("absl-py", "numpy", "rich", "namex", "h5py", "optree", "ml-dtypes", "packaging")
RICH_REQUIRES = ("markdown-it-py>=2.2.0", "pygments<3.0.0,>=2.13.0")
OPTREE_REQUIRES = ("typing-extensions>=4.6.0",)


def _keras_graph(site) -> None:
    site.dist("keras", "3.15.1", requires=KERAS_3_15_REQUIRES, requires_python=">=3.11", top_level=("keras",))
    site.dist("rich", "14.2.0", requires=RICH_REQUIRES, requires_python=">=3.8.0", top_level=("rich",))
    site.dist("markdown_it_py", "4.0.0", requires=("mdurl~=0.1",), top_level=("markdown_it",))
    site.dist("mdurl", "0.1.2", top_level=("mdurl",))
    site.dist("pygments", "2.19.2", top_level=("pygments",))
    site.dist("namex", "0.1.0", top_level=("namex",))
    site.dist("optree", "0.18.0", requires=OPTREE_REQUIRES, top_level=("optree",),
              tags=(f"{CP}-{CP}-manylinux_2_27_x86_64",))


def _numpy_1_with_ml_dtypes_0_5(root: FakeRoot) -> None:
    # `pip install tensorflow-cpu==2.21.0 'numpy<2' 'ml-dtypes<0.6'`: the last ml-dtypes that accepts numpy 1
    # (0.6 and 0.7 require numpy>=2.0.0), so every requirement of the graph holds.
    parts.cpus(root, parts.TIGER_LAKE, cores_per_socket=4, threads_per_core=2, governor="performance")
    parts.process(root)
    parts.operating_system(root, "ada-legacy", mem_gib=32)
    site = parts.tensorflow_2_21(root, VENV, numpy="1.26.4", ml_dtypes="0.5.4")
    site.dist("ml_dtypes", "0.5.4", requires=ML_DTYPES_0_5_REQUIRES, requires_python=">=3.9",
              top_level=("ml_dtypes",), tags=(f"{CP}-{CP}-manylinux_2_27_x86_64",))
    _keras_graph(site)


register(HealthyMachine(
    "tensorflow-2.21-numpy-1-ml-dtypes-0.5", ("PKG",),
    "tensorflow-cpu 2.21 on numpy 1.26.4 with ml-dtypes 0.5.4 (which accepts numpy 1), keras with its own deps",
    _numpy_1_with_ml_dtypes_0_5, env=USER_ENV, python=VENV))


def _jax_beside_tensorflow(root: FakeRoot) -> None:
    # TensorFlow 2.21 and jax in one environment: ml-dtypes 0.7.0 and numpy 2.4.6 meet both.
    parts.cpus(root, parts.SAPPHIRE_RAPIDS, sockets=2, cores_per_socket=56)
    parts.process(root)
    parts.operating_system(root, "jax-tf", os_release=parts.ROCKY_9, mem_gib=512)
    site = parts.tensorflow_2_21(root, VENV, ml_dtypes="0.7.0")
    site.dist("ml_dtypes", "0.7.0", requires=ML_DTYPES_0_7_REQUIRES, requires_python=">=3.10",
              top_level=("ml_dtypes",), tags=(f"{CP}-{CP}-manylinux_2_27_x86_64",))
    site.dist("jax", "0.4.38", requires=JAX_0_4_38_REQUIRES, requires_python=">=3.10", top_level=("jax",))
    site.dist("jaxlib", "0.4.38", requires=("ml-dtypes>=0.2.0", "numpy>=1.24", "scipy>=1.10"),
              top_level=("jaxlib",), tags=(f"{CP}-{CP}-manylinux2014_x86_64",))
    site.dist("scipy", "1.16.3", requires=("numpy<2.6,>=1.25.2",), top_level=("scipy",),
              tags=(f"{CP}-{CP}-manylinux_2_27_x86_64",))
    site.dist("opt_einsum", "3.4.0", top_level=("opt_einsum",))
    _keras_graph(site)


register(HealthyMachine(
    "tensorflow-2.21-beside-jax", ("PKG",),
    "tensorflow-cpu 2.21 and jax 0.4.38 in one venv, ml-dtypes 0.7.0 and numpy 2.4.6 meeting both",
    _jax_beside_tensorflow, env=USER_ENV, python=VENV))


def _addons_at_their_releases(root: FakeRoot) -> None:
    # tensorflow-text 2.21.1 (2.21.0 is broken as published: PKG010) installed with --no-deps next to
    # tensorflow-cpu (it names the `tensorflow` distribution), and tensorflow-io-gcs-filesystem; a PYTHONPATH
    # with the site's own tools only.
    parts.cpus(root, parts.TIGER_LAKE, cores_per_socket=4, threads_per_core=2, governor="performance")
    parts.process(root)
    parts.operating_system(root, "ada-text", mem_gib=32)
    site = parts.tensorflow_2_21(root, VENV)
    site.dist("tensorflow_text", "2.21.1", requires=("tensorflow<2.22,>=2.21.0",
                                                     'tensorflow-cpu<2.22,>=2.21.0; extra == "tensorflow-cpu"'),
              top_level=("tensorflow_text",), tags=(f"{CP}-{CP}-manylinux_2_27_x86_64",))
    tools = root.path / "opt/site-tools"
    (tools / "sitetools").mkdir(parents=True)
    (tools / "sitetools" / "__init__.py").write_text("")


register(HealthyMachine(
    "tensorflow-2.21-with-tensorflow-text-2.21", ("PKG",),
    "tensorflow-cpu 2.21 with tensorflow-text 2.21.1 (--no-deps), PYTHONPATH holding only a site's own tools",
    _addons_at_their_releases, env={**USER_ENV, "PYTHONPATH": "/opt/site-tools"}, python=VENV))


# Twins of the real reports of tests/reports/reports_pyenv.py: the same settings done right; the reports build
# their machines with these builders too.
TF_2_14_TAGS = (f"{CP}-{CP}-manylinux_2_17_x86_64", f"{CP}-{CP}-manylinux2014_x86_64")
# tensorflow 2.16.1 (cp311 manylinux_2_17_x86_64), as its METADATA writes them: Keras 3, numpy below 2.
TF_2_16_REQUIRES = (
    "absl-py>=1.0.0", "astunparse>=1.6.0", "flatbuffers>=23.5.26", "gast!=0.5.0,!=0.5.1,!=0.5.2,>=0.2.1",
    "google-pasta>=0.1.1", "h5py>=3.10.0", "libclang>=13.0.0", "ml-dtypes~=0.3.1", "opt-einsum>=2.3.2", "packaging",
    "protobuf!=4.21.0,!=4.21.1,!=4.21.2,!=4.21.3,!=4.21.4,!=4.21.5,<5.0.0dev,>=3.20.3", "requests<3,>=2.21.0",
    "setuptools", "six>=1.12.0", "termcolor>=1.1.0", "typing-extensions>=3.6.6", "wrapt>=1.11.0",
    "grpcio<2.0,>=1.24.3", "tensorboard<2.17,>=2.16", "keras>=3.0.0",
    'tensorflow-io-gcs-filesystem>=0.23.1; python_version < "3.12"',
    'numpy<2.0.0,>=1.23.5; python_version <= "3.11"', 'numpy<2.0.0,>=1.26.0; python_version >= "3.12"',
)
TF_2_16_DEPENDENCIES = {"numpy": "1.26.4", "ml_dtypes": "0.3.2", "keras": "3.3.3", "protobuf": "4.25.3",
                        "tensorboard": "2.16.2", "h5py": "3.11.0", "wrapt": "1.16.0",
                        "tensorflow_io_gcs_filesystem": "0.37.0"}
TF_2_14_DEPENDENCIES = {"numpy": "1.26.4", "keras": "2.14.0", "ml_dtypes": "0.2.0", "protobuf": "4.24.3",
                        "wrapt": "1.14.1", "tensorboard": "2.14.0", "tensorflow_estimator": "2.14.0",
                        "tensorflow_io_gcs_filesystem": "0.34.0", "h5py": "3.9.0"}


def tensorflow_2_14(root: FakeRoot, version: str = "2.14.0", **versions: str) -> FakeSitePackages:
    site = FakeSitePackages(root.path / VENV.site.lstrip("/"))
    site.tensorflow(name="tensorflow", version=version, requires=INTEL_2_14_REQUIRES, requires_python=">=3.9",
                    tags=TF_2_14_TAGS)
    return site.healthy_dependencies(**{**TF_2_14_DEPENDENCIES, **versions})


def tensorflow_2_16(root: FakeRoot, **versions: str) -> FakeSitePackages:
    site = FakeSitePackages(root.path / VENV.site.lstrip("/"))
    site.tensorflow(name="tensorflow", version="2.16.1", requires=TF_2_16_REQUIRES, requires_python=">=3.9",
                    tags=TF_2_14_TAGS)
    return site.healthy_dependencies(**{**TF_2_16_DEPENDENCIES, **versions})


def _tensorflow_2_14_as_resolved(root: FakeRoot) -> None:
    # `pip install tensorflow==2.14.0 'numpy<2'`: ml-dtypes 0.2.0, as TensorFlow 2.14 pins it.
    parts.cpus(root, parts.TIGER_LAKE, cores_per_socket=4, threads_per_core=2, governor="performance")
    parts.process(root)
    parts.operating_system(root, "ada-np1", mem_gib=32)
    tensorflow_2_14(root)


register(HealthyMachine(
    "tensorflow-2.14-ml-dtypes-0.2", ("PKG",),
    "tensorflow 2.14.0 with numpy 1.26.4 and the ml-dtypes 0.2.0 it pins",
    _tensorflow_2_14_as_resolved, env=USER_ENV, python=VENV))


def _tensorflow_2_16_with_io_0_37(root: FakeRoot) -> None:
    parts.cpus(root, parts.TIGER_LAKE, cores_per_socket=4, threads_per_core=2, governor="performance")
    parts.process(root)
    parts.operating_system(root, "ada-io", mem_gib=32)
    site = tensorflow_2_16(root)
    site.dist("tensorflow_io", "0.37.1", requires=(
        "tensorflow-io-gcs-filesystem==0.37.1", 'tensorflow<2.17.0,>=2.16.0; extra == "tensorflow"',
        'tensorflow-cpu<2.17.0,>=2.16.0; extra == "tensorflow-cpu"'),
        requires_python=">=3.7,<3.13", top_level=("tensorflow_io",), tags=TF_2_14_TAGS)


register(HealthyMachine(
    "tensorflow-2.16-with-tensorflow-io-0.37", ("PKG",),
    "tensorflow 2.16.1 with tensorflow-io 0.37.1, the release built for it",
    _tensorflow_2_16_with_io_0_37, env=USER_ENV, python=VENV))


def _tensorflow_2_15_with_addons_0_23(root: FakeRoot) -> None:
    # `pip install tensorflow-cpu==2.15.1 tensorflow-addons==0.23.0` (Keras 2: the last TensorFlow Addons supports).
    parts.cpus(root, parts.TIGER_LAKE, cores_per_socket=4, threads_per_core=2, governor="performance")
    parts.process(root)
    parts.operating_system(root, "ada-vit", mem_gib=32)
    site = FakeSitePackages(root.path / VENV.site.lstrip("/"))
    site.tensorflow_2_15()
    site.dist("tensorflow_addons", "0.23.0", requires=(
        "packaging", "typeguard<3.0.0,>=2.7", "tensorflow<2.16.0,>=2.13.0; extra == 'tensorflow'",
        "tensorflow-cpu<2.16.0,>=2.13.0; extra == 'tensorflow-cpu'"),
        top_level=("tensorflow_addons",), tags=(f"{CP}-{CP}-manylinux_2_17_x86_64",))
    site.dist("typeguard", "2.13.3", top_level=("typeguard",))


register(HealthyMachine(
    "tensorflow-2.15-with-tensorflow-addons-0.23", ("PKG",),
    "tensorflow-cpu 2.15.1 with tensorflow-addons 0.23.0, its final release, built for 2.13-2.15",
    _tensorflow_2_15_with_addons_0_23, env=USER_ENV, python=VENV))


# tensorflow 2.12.1 (cp310 manylinux_2_17_x86_64): it required jax (jax>=0.3.15), as pip's message in the thread
# quotes; the rest as its METADATA writes them.
TF_2_12_REQUIRES = (
    "absl-py>=1.0.0", "astunparse>=1.6.0", "flatbuffers>=2.0", "gast<=0.4.0,>=0.2.1", "google-pasta>=0.1.1",
    "h5py>=2.9.0", "jax>=0.3.15", "libclang>=13.0.0", "numpy<1.24,>=1.22", "opt-einsum>=2.3.2", "packaging",
    "protobuf!=4.21.0,!=4.21.1,!=4.21.2,!=4.21.3,!=4.21.4,!=4.21.5,<5.0.0dev,>=3.20.3", "setuptools",
    "six>=1.12.0", "termcolor>=1.1.0", "typing-extensions>=3.6.6", "wrapt<1.15,>=1.11.0",
    "tensorflow-io-gcs-filesystem>=0.23.1", "grpcio<2.0,>=1.24.3", "tensorboard<2.13,>=2.12",
    "tensorflow-estimator<2.13,>=2.12.0", "keras<2.13,>=2.12.0",
)
TF_2_12_DEPENDENCIES = {"numpy": "1.23.5", "keras": "2.12.0", "protobuf": "4.23.4", "wrapt": "1.14.1",
                        "tensorboard": "2.12.3", "tensorflow_estimator": "2.12.0", "h5py": "3.9.0",
                        "tensorflow_io_gcs_filesystem": "0.32.0", "gast": "0.4.0", "flatbuffers": "23.5.26"}


def tensorflow_2_12(root: FakeRoot, jax: str) -> FakeSitePackages:
    site = FakeSitePackages(root.path / VENV.site.lstrip("/"))
    site.tensorflow(name="tensorflow", version="2.12.1", requires=TF_2_12_REQUIRES, requires_python=">=3.8",
                    tags=TF_2_14_TAGS)
    site.healthy_dependencies(**TF_2_12_DEPENDENCIES)
    site.dist("jax", jax, requires=("numpy>=1.20", "opt_einsum", "scipy>=1.5"), top_level=("jax",))
    site.dist("scipy", "1.10.1", requires=("numpy<1.27.0,>=1.19.5",), top_level=("scipy",), tags=TF_2_14_TAGS)
    site.dist("opt_einsum", "3.3.0", requires=("numpy>=1.7",), top_level=("opt_einsum",))
    return site


def _tensorflow_2_12_with_jax_0_4(root: FakeRoot) -> None:
    parts.cpus(root, parts.TIGER_LAKE, cores_per_socket=4, threads_per_core=2, governor="performance")
    parts.process(root)
    parts.operating_system(root, "ada-binder", mem_gib=32)
    tensorflow_2_12(root, jax="0.4.13")


register(HealthyMachine(
    "tensorflow-2.12-with-jax-0.4", ("PKG",),
    "tensorflow 2.12.1 with the jax it requires (>=0.3.15): 0.4.13",
    _tensorflow_2_12_with_jax_0_4, env=USER_ENV, python=VENV))
