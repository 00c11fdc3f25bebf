"""Healthy twins of the Python-environment checks (PKG002, PKG012, PKG014, PKG015; issue 18, issue 12 item 3)."""

from __future__ import annotations

from support.fake_site_packages import CP, FakeSitePackages

from tfdoctor.testing import FakeRoot

from . import parts
from .corpus import HealthyMachine, register
from .machines import USER_ENV, VENV


def _keras_3_with_tf_keras(root: FakeRoot) -> None:
    # `pip install tensorflow-cpu==2.21.0 'transformers<5'`, then `pip install --no-deps tf-keras==2.21.0`
    # (without --no-deps tf-keras would pull the `tensorflow` distribution too), TF_USE_LEGACY_KERAS=1.
    parts.cpus(root, parts.TIGER_LAKE, cores_per_socket=4, threads_per_core=2, governor="performance")
    parts.process(root)
    parts.operating_system(root, "ada-nlp", mem_gib=32)
    site = parts.tensorflow_2_21(root, VENV)
    site.dist("tf_keras", "2.21.0", requires=("tensorflow<2.22,>=2.21",), top_level=("tf_keras",))
    site.dist("transformers", "4.57.6", requires=("numpy>=1.17", "huggingface-hub<1.0,>=0.34.0"),
              requires_python=">=3.9.0", top_level=("transformers",))
    # protobuf's wheel is abi3 (cp310-abi3): it loads in every CPython from 3.10 on.
    site.dist("protobuf", "7.36.2", top_level=("google",), tags=("cp310-abi3-manylinux2014_x86_64",))
    site.dist("numpy", "2.4.6", top_level=("numpy",), tags=(f"{CP}-{CP}-manylinux_2_27_x86_64",))


register(HealthyMachine(
    "keras-3-transformers-with-tf-keras", ("PKG",),
    "tensorflow-cpu 2.21 with transformers 4 and tf-keras installed --no-deps, TF_USE_LEGACY_KERAS=1",
    _keras_3_with_tf_keras, env={**USER_ENV, "TF_USE_LEGACY_KERAS": "1"}, python=VENV))


# intel-tensorflow-avx512 2.14.0 (cp311 manylinux_2_17_x86_64), as its METADATA writes them (platform shims left out).
INTEL_2_14_REQUIRES = (
    "absl-py (>=1.0.0)", "astunparse (>=1.6.0)", "flatbuffers (>=23.5.26)", "gast (!=0.5.0,!=0.5.1,!=0.5.2,>=0.2.1)",
    "google-pasta (>=0.1.1)", "h5py (>=2.9.0)", "libclang (>=13.0.0)", "ml-dtypes (==0.2.0)", "numpy (>=1.23.5)",
    "opt-einsum (>=2.3.2)", "packaging",
    "protobuf (!=4.21.0,!=4.21.1,!=4.21.2,!=4.21.3,!=4.21.4,!=4.21.5,<5.0.0dev,>=3.20.3)", "setuptools",
    "six (>=1.12.0)", "termcolor (>=1.1.0)", "typing-extensions (>=3.6.6)", "wrapt (<1.15,>=1.11.0)",
    "tensorflow-io-gcs-filesystem (>=0.23.1)", "grpcio (<2.0,>=1.24.3)", "tensorboard (<2.15,>=2.14)",
    "tensorflow-estimator (<2.15,>=2.14.0)", "keras (<2.15,>=2.14.0)",
)
# What pip resolved with it when numpy was held below 2 (its open numpy range would take numpy 2: PKG010).
INTEL_2_14_DEPENDENCIES = {
    "numpy": "1.26.4", "keras": "2.14.0", "ml_dtypes": "0.2.0", "protobuf": "4.25.3", "wrapt": "1.14.1",
    "tensorboard": "2.14.1", "tensorflow_estimator": "2.14.0", "tensorflow_io_gcs_filesystem": "0.37.0",
    "h5py": "3.11.0",
}


def _intel_avx512_on_sapphire_rapids(root: FakeRoot) -> None:
    # Intel's AVX-512 build on the Xeon it is made for (avx512f and friends in /proc/cpuinfo).
    parts.cpus(root, parts.SAPPHIRE_RAPIDS, sockets=2, cores_per_socket=56)
    parts.process(root)
    parts.operating_system(root, "xeon-train", os_release=parts.ROCKY_9, mem_gib=512)
    site = FakeSitePackages(root.path / VENV.site.lstrip("/"))
    tags = (f"{CP}-{CP}-manylinux_2_17_x86_64", f"{CP}-{CP}-manylinux2014_x86_64")
    site.tensorflow(name="intel-tensorflow-avx512", version="2.14.0", requires=INTEL_2_14_REQUIRES,
                    requires_python=">=3.9", tags=tags)
    site.healthy_dependencies(**INTEL_2_14_DEPENDENCIES)


register(HealthyMachine(
    "intel-tensorflow-avx512-on-sapphire-rapids", ("PKG", "CPU"),
    "intel-tensorflow-avx512 on a Xeon 8480+ that has AVX-512",
    _intel_avx512_on_sapphire_rapids, env=USER_ENV, python=VENV))


# tensorflow[and-cuda]==2.21.0's nvidia-* wheels (the versions its and-cuda extra resolved), in a venv on
# a shared file system, checked on the login node, which has no GPU (issue 27 item 3: PKG018's twin).
AND_CUDA_2_21 = {
    "nvidia-cublas-cu12": "12.5.3.2", "nvidia-cuda-cupti-cu12": "12.5.82", "nvidia-cuda-nvcc-cu12": "12.5.82",
    "nvidia-cuda-nvrtc-cu12": "12.5.82", "nvidia-cuda-runtime-cu12": "12.5.82", "nvidia-cudnn-cu12": "9.3.0.75",
    "nvidia-cufft-cu12": "11.2.3.61", "nvidia-curand-cu12": "10.3.6.82", "nvidia-cusolver-cu12": "11.6.3.83",
    "nvidia-cusparse-cu12": "12.5.1.3", "nvidia-nccl-cu12": "2.27.7", "nvidia-nvjitlink-cu12": "12.5.82",
}


def _gpu_venv_on_login_node(root: FakeRoot) -> None:
    from support.fake_site_packages import BUILD_INFO_CUDA, TF_2_21_REQUIRES

    parts.cpus(root, parts.TIGER_LAKE, cores_per_socket=4, threads_per_core=2, governor="performance")
    parts.process(root)
    parts.operating_system(root, "login01", mem_gib=32)
    site = FakeSitePackages(root.path / VENV.site.lstrip("/"))
    site.tensorflow(name="tensorflow", build_info=BUILD_INFO_CUDA, requires=TF_2_21_REQUIRES, gencode="6.31.1")
    site.healthy_dependencies()
    for name, version in AND_CUDA_2_21.items():
        site.dist(name, version, top_level=("nvidia",), tags=("py3-none-manylinux2014_x86_64",))
    # an add-on built for this very release (PKG017's twin)
    site.dist("tensorflow-text", "2.21.1", requires=("tensorflow<2.22,>=2.21.0",), top_level=("tensorflow_text",),
              tags=(f"{CP}-{CP}-manylinux_2_17_x86_64",))


register(HealthyMachine(
    "gpu-venv-on-login-node", ("PKG",),
    "tensorflow[and-cuda] 2.21 with its nvidia-* wheels and tensorflow-text 2.21, checked on a login node without GPU",
    _gpu_venv_on_login_node, env=USER_ENV, python=VENV))


def _tensorflow_2_20_with_protobuf_5(root: FakeRoot) -> None:
    # tensorflow-cpu 2.20.0 asks for protobuf>=5.28.0 without a cap; its code was generated by protobuf 5.28.3:
    # protobuf 5.29.5 is the same major, not older (PKG016's twin).
    from support.fake_site_packages import TF_2_20_REQUIRES

    parts.cpus(root, parts.TIGER_LAKE, cores_per_socket=4, threads_per_core=2, governor="performance")
    parts.process(root)
    parts.operating_system(root, "ada-laptop", mem_gib=32)
    site = FakeSitePackages(root.path / VENV.site.lstrip("/"))
    site.tensorflow(version="2.20.0", requires=TF_2_20_REQUIRES, gencode="5.28.3")
    site.healthy_dependencies(protobuf="5.29.5", keras="3.11.3")
    site.dist("protobuf", "5.29.5", top_level=("google",), tags=("cp38-abi3-manylinux2014_x86_64",))


register(HealthyMachine(
    "tensorflow-2-20-protobuf-5", ("PKG",),
    "tensorflow-cpu 2.20 (protobuf>=5.28.0, no cap; gencode 5.28.3) with protobuf 5.29.5",
    _tensorflow_2_20_with_protobuf_5, env=USER_ENV, python=VENV))
