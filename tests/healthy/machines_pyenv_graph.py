"""Healthy twins of the requirement graph below TensorFlow (PKG021) and of the add-on release tables (PKG017's
fix), issue 36: environments where a dependency's own requirements are met, numpy 1 included, jax beside
TensorFlow, add-ons at the release built for the installed TensorFlow. Requires-Dist as the wheels write them."""

from __future__ import annotations

from support.fake_site_packages import CP, JAX_0_4_38_REQUIRES, ML_DTYPES_0_5_REQUIRES, ML_DTYPES_0_7_REQUIRES

from tfdoctor.testing import FakeRoot

from . import parts
from .corpus import HealthyMachine, register
from .machines import USER_ENV, VENV

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
    # tensorflow-text 2.21.0 installed with --no-deps next to tensorflow-cpu (it names the `tensorflow`
    # distribution), and tensorflow-io-gcs-filesystem; a PYTHONPATH with the site's own tools only.
    parts.cpus(root, parts.TIGER_LAKE, cores_per_socket=4, threads_per_core=2, governor="performance")
    parts.process(root)
    parts.operating_system(root, "ada-text", mem_gib=32)
    site = parts.tensorflow_2_21(root, VENV)
    site.dist("tensorflow_text", "2.21.0", requires=("tensorflow<2.22,>=2.21.0",
                                                     'tensorflow-cpu<2.22,>=2.21.0; extra == "tensorflow-cpu"'),
              top_level=("tensorflow_text",), tags=(f"{CP}-{CP}-manylinux_2_27_x86_64",))
    tools = root.path / "opt/site-tools"
    (tools / "sitetools").mkdir(parents=True)
    (tools / "sitetools" / "__init__.py").write_text("")


register(HealthyMachine(
    "tensorflow-2.21-with-tensorflow-text-2.21", ("PKG",),
    "tensorflow-cpu 2.21 with tensorflow-text 2.21.0 (--no-deps), PYTHONPATH holding only a site's own tools",
    _addons_at_their_releases, env={**USER_ENV, "PYTHONPATH": "/opt/site-tools"}, python=VENV))
