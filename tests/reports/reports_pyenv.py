"""Real reports of the Python environment (issue 36, category "pyenv"): a dependency or an add-on of another
release than the installed TensorFlow, a second TensorFlow distribution pulled by an add-on. Each machine is
the environment the thread describes, its Requires-Dist as the wheels write them. Labels (expect) and split
were written before tfdoctor ran on any of them."""

from __future__ import annotations

from healthy import parts
from healthy.machines import USER_ENV, VENV
from healthy.machines_pyenv_graph import TF_2_14_TAGS, tensorflow_2_12, tensorflow_2_14, tensorflow_2_16
from support.fake_site_packages import CP, TF_2_21_REQUIRES

from tfdoctor.testing import FakeRoot

from .corpus import RealReport, register


def _host(root: FakeRoot, name: str) -> None:
    parts.cpus(root, parts.TIGER_LAKE, cores_per_socket=4, threads_per_core=2, governor="performance")
    parts.process(root)
    parts.operating_system(root, name, mem_gib=32)


def _ml_dtypes_0_3_under_2_14(root: FakeRoot) -> None:
    # CI: "Successfully installed keras-2.14.0 … ml-dtypes-0.3.0 … tensorflow-2.14.0rc1 …": ml_dtypes 0.3.0
    # removed float8_e4m3b11, which TensorFlow 2.14 (ml-dtypes==0.2.0) registers at import.
    _host(root, "ci-runner")
    tensorflow_2_14(root, version="2.14.0rc1", ml_dtypes="0.3.0")


def _numpy_2_3_under_2_14(root: FakeRoot) -> None:
    # `pip install tensorflow==2.14.0 numpy==2.3.4`: TensorFlow 2.14 declares numpy>=1.23.5 with no cap.
    _host(root, "ada-np2")
    tensorflow_2_14(root, numpy="2.3.4")


def _tensorflow_io_0_36_under_2_16(root: FakeRoot) -> None:
    # TensorFlow 2.16.1 with tensorflow-io 0.36.0, built for 2.15: "missing libtensorflow_io.so".
    _host(root, "ada-io")
    site = tensorflow_2_16(root)
    site.dist("tensorflow_io", "0.36.0", requires=(
        "tensorflow-io-gcs-filesystem==0.36.0", 'tensorflow<2.16.0,>=2.15.0; extra == "tensorflow"',
        'tensorflow-cpu<2.16.0,>=2.15.0; extra == "tensorflow-cpu"'),
        requires_python=">=3.7,<3.12", top_level=("tensorflow_io",), tags=TF_2_14_TAGS)


def _text_pulls_tensorflow_next_to_cpu(root: FakeRoot) -> None:
    # A project declaring tensorflow-cpu adds tensorflow-text, which requires `tensorflow`: both TensorFlow
    # distributions end up in the environment (the thread: uv, issue #3164 there).
    _host(root, "ada-uv")
    site = parts.tensorflow_2_21(root, VENV)
    site.tensorflow(name="tensorflow", requires=TF_2_21_REQUIRES)
    site.dist("tensorflow_text", "2.21.1", requires=("tensorflow<2.22,>=2.21.0",), top_level=("tensorflow_text",),
              tags=(f"{CP}-{CP}-manylinux_2_27_x86_64",))


def _addons_under_keras_3(root: FakeRoot) -> None:
    # vit-keras with TensorFlow 2.16 (Keras 3): tensorflow-addons 0.23.0, built for 2.13-2.15, is imported.
    _host(root, "ada-vit")
    site = tensorflow_2_16(root)
    site.dist("tensorflow_addons", "0.23.0", requires=(
        "packaging", "typeguard<3.0.0,>=2.7", "tensorflow<2.16.0,>=2.13.0; extra == 'tensorflow'",
        "tensorflow-cpu<2.16.0,>=2.13.0; extra == 'tensorflow-cpu'"),
        top_level=("tensorflow_addons",), tags=TF_2_14_TAGS)
    site.dist("typeguard", "2.13.3", top_level=("typeguard",))
    site.dist("vit_keras", "0.1.2", requires=("scipy", "validators"), top_level=("vit_keras",))


def _jax_0_2_under_2_12(root: FakeRoot) -> None:
    # The project's conda environment: tensorflow 2.12.1 from conda, then its pip section's jax 0.2.19; pip:
    # "tensorflow 2.12.1 requires jax>=0.3.15, but you have jax 0.2.19 which is incompatible".
    _host(root, "ada-binder")
    tensorflow_2_12(root, jax="0.2.19")


register(
    RealReport(
        "jax-0.2-under-tensorflow-2.12", "https://github.com/nrbennet/dl_binder_design/issues/31", "pyenv", "dev",
        "tensorflow 2.12.1 requires jax>=0.3.15 and the environment's pip section installs jax 0.2.19: jax and "
        "jaxlib troubles until TensorFlow is taken back to 2.11.1",
        expect=("PKG005",), twin="tensorflow-2.12-with-jax-0.4",
        build=_jax_0_2_under_2_12, env=USER_ENV, python=VENV),
    RealReport(
        "ml-dtypes-0.3-under-tensorflow-2.14", "https://github.com/jax-ml/ml_dtypes/issues/101", "pyenv", "dev",
        "TensorFlow 2.14.0rc1 fails at import after ml-dtypes 0.3.0 was released (float8_e4m3b11 removed); "
        "TensorFlow 2.14 requires ml-dtypes==0.2.0",
        expect=("PKG005", "PKG010"), twin="tensorflow-2.14-ml-dtypes-0.2",
        build=_ml_dtypes_0_3_under_2_14, env=USER_ENV, python=VENV),
    RealReport(
        "numpy-2-under-tensorflow-2.14", "https://github.com/tensorflow/tensorflow/issues/102743", "pyenv",
        "heldout",
        "`pip install tensorflow==2.14.0 numpy==2.3.4` resolves (numpy>=1.23.5, no cap) and import tensorflow "
        "fails: a module compiled using NumPy 1.x cannot be run in NumPy 2.3.4",
        expect=("PKG010", "PKG005"), twin="tensorflow-2.14-ml-dtypes-0.2",
        build=_numpy_2_3_under_2_14, env=USER_ENV, python=VENV),
    RealReport(
        "tensorflow-io-0.36-under-tensorflow-2.16", "https://github.com/tensorflow/io/issues/1972", "pyenv", "dev",
        "tensorflow-io 0.36.0 with TensorFlow 2.16.1 raises a missing libtensorflow_io.so; no tensorflow-io release "
        "was built for 2.16 yet",
        expect=("PKG017",), twin="tensorflow-2.16-with-tensorflow-io-0.37",
        build=_tensorflow_io_0_36_under_2_16, env=USER_ENV, python=VENV),
    RealReport(
        "tensorflow-text-pulls-tensorflow-next-to-cpu", "https://github.com/tensorflow/text/issues/1393", "pyenv",
        "heldout",
        "tensorflow-text requires the `tensorflow` distribution: next to tensorflow-cpu both end up installed",
        expect=("PKG002",), twin="tensorflow-2.21-with-tensorflow-text-2.21",
        build=_text_pulls_tensorflow_next_to_cpu, env=USER_ENV, python=VENV),
    RealReport(
        "tensorflow-addons-under-keras-3", "https://github.com/faustomorales/vit-keras/pull/45", "pyenv", "dev",
        "vit-keras imports tensorflow-addons, which ended with 0.23 (TensorFlow 2.13-2.15) and does not work with "
        "TensorFlow 2.16+ (Keras 3)",
        expect=("PKG017",), twin="tensorflow-2.15-with-tensorflow-addons-0.23",
        build=_addons_under_keras_3, env=USER_ENV, python=VENV),
)
