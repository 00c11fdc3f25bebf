"""Healthy twins of the platform checks (issue 36): a Jetson running NVIDIA's TensorFlow for its JetPack,
Macs with a native arm64 Python (with and without the Metal plug-in of the right release), an Intel Mac
with the x86_64 wheel. The trees are platform_parts.py's: real L4T lines and device-tree
models, SystemVersion.plist and the sysctl answers real Macs print."""

from __future__ import annotations

import json
from pathlib import Path

from support.fake_site_packages import FakeSitePackages, record_line
from support.gpu_scenarios import RECORDS

from tfdoctor.testing import FakeRoot

from . import parts
from . import platform_parts as hosts
from .corpus import HealthyMachine, register


def record_requires(version: str) -> tuple[str, ...]:
    """The Requires-Dist of the real tensorflow wheel of this version (tests/data/wheel_records), without
    the and-cuda extra: the same setup.py writes it on every platform."""
    wheel = json.loads((Path(RECORDS) / f"tensorflow-{version}.json").read_text())
    return tuple(r for r in wheel["requires_dist"] if "extra" not in r)


def _jetson_jetpack_6(root: FakeRoot) -> None:
    # JetPack 6.0 on an AGX Orin: `pip install --extra-index-url .../jp/v60 tensorflow==2.15.0+nv24.05`.
    hosts.jetson(root, hosts.ORIN_AGX, hosts.L4T_36_3_0)
    hosts.nvidia_jetson_tensorflow(root, hosts.JETSON_ENV)


# JetPack 6.2 on an Orin NX 16GB (Super), L4T R36.4.3 as a real board's file has it, 8 Cortex-A78AE cores.
ORIN_NX_PY310 = parts.PythonEnv("/home/nvidia/venv", version="3.10.12", arch="aarch64")
ORIN_NX_PY38 = parts.PythonEnv("/home/nvidia/venv", version="3.8.10", arch="aarch64")


def source_requires(version: str) -> tuple[str, ...]:
    """The Requires-Dist of a TensorFlow built from its sources, as NVIDIA's Jetson wheels are: the PyPI
    release's without the platform shims (tensorflow-cpu-aws, tensorflow-intel) and extras."""
    return tuple(r for r in record_requires(version) if "platform_system" not in r)


def jetson_jetpack_6_2(version: str, cuda: str, cudnn: str):
    """An Orin NX on JetPack 6.2 with NVIDIA's TensorFlow `version` (built against CUDA `cuda`, cuDNN `cudnn`)
    and what pip resolved beside that release."""
    release = ".".join(version.split(".")[:2])
    requires = {"2.15": parts.TF_2_15_REQUIRES, "2.16": source_requires("2.16.1")}[release]

    def build(root: FakeRoot) -> None:
        hosts.jetson(root, hosts.ORIN_NX_SUPER, hosts.L4T_36_4_3, cores=8, kernel="5.15.148-tegra", mem_gib=16)
        hosts.nvidia_jetson_tensorflow(
            root, ORIN_NX_PY310, version, cuda=cuda, cudnn=cudnn,
            requires=tuple(r for r in requires if "platform_system" not in r and "extra" not in r),
            dependencies=None if release == "2.15" else hosts.RESOLVED[release])
    return build


def _jetson_jetpack_5_1_3(root: FakeRoot) -> None:
    # JetPack 5.1.3 (L4T R35.5.0) on an Orin NX: NVIDIA built no TensorFlow for 5.1.3, so the JetPack 5.1.2
    # wheel (`--extra-index-url .../jp/v512 tensorflow==2.12.0+nv23.06`, same CUDA 11.4 and cuDNN 8.6).
    hosts.jetson(root, hosts.ORIN_NX, hosts.L4T_35_5_0, cores=8, os_release=hosts.UBUNTU_2004, mem_gib=16)
    hosts.nvidia_jetson_tensorflow(root, ORIN_NX_PY38, "2.12.0+nv23.06", cuda="11.4", cudnn="8",
                                   requires_python=">=3.8", requires=source_requires("2.12.1"),
                                   dependencies=hosts.RESOLVED["2.12"])


def _jetson_user(env: parts.PythonEnv) -> dict[str, str]:
    return {**hosts.JETSON_USER, "VIRTUAL_ENV": env.prefix,
            "PATH": f"{env.prefix}/bin:/usr/local/cuda/bin:/usr/local/bin:/usr/bin:/bin"}


# Python 3.11 on an Apple silicon Mac, TensorFlow 2.21's macOS arm64 wheel and what pip resolved with it.
def _mac_native(root: FakeRoot) -> None:
    hosts.mac(root, hosts.M3_MAX_NATIVE, hosts.SEQUOIA)
    site = FakeSitePackages(root.path / hosts.MAC_ARM_ENV.site.lstrip("/"))
    site.tensorflow(name="tensorflow", tags=(hosts.mac_wheel_tag(hosts.MAC_ARM_ENV),))
    site.healthy_dependencies()


# tensorflow 2.17.1 with tensorflow-metal 1.1.0 (built for 2.14, loads through 2.17: tensorflow/tensorflow#84167).
TF_2_17_DEPENDENCIES = {
    "absl_py": "2.1.0", "astunparse": "1.6.3", "flatbuffers": "24.3.25", "gast": "0.6.0", "google_pasta": "0.2.0",
    "h5py": "3.12.1", "libclang": "18.1.1", "ml_dtypes": "0.4.1", "opt_einsum": "3.4.0", "packaging": "24.1",
    "protobuf": "4.25.5", "requests": "2.32.3", "setuptools": "75.1.0", "six": "1.16.0", "termcolor": "2.5.0",
    "typing_extensions": "4.12.2", "wrapt": "1.16.0", "grpcio": "1.67.0", "tensorboard": "2.17.1",
    "keras": "3.6.0", "numpy": "1.26.4", "tensorflow_io_gcs_filesystem": "0.37.1", "wheel": "0.44.0",
}


def _mac_metal(root: FakeRoot) -> None:
    hosts.mac(root, hosts.M3_MAX_NATIVE, hosts.SEQUOIA)
    site = FakeSitePackages(root.path / hosts.MAC_ARM_ENV.site.lstrip("/"))
    tag = hosts.mac_wheel_tag(hosts.MAC_ARM_ENV)
    site.tensorflow(name="tensorflow", version="2.17.1", requires=record_requires("2.17.1"), requires_python=">=3.9",
                    tags=(tag,))
    for name, version in TF_2_17_DEPENDENCIES.items():
        site.dist(name, version, top_level=(name,))
    site.dist("tensorflow-metal", "1.1.0", requires=("wheel ~=0.35", "six >=1.15.0"), top_level=(),
              tags=(tag,), record=("tensorflow-plugins/libmetal_plugin.dylib",))
    site.file("tensorflow-plugins/libmetal_plugin.dylib", "\xcf\xfa\xed\xfe")


INTEL_MAC_ENV = parts.PythonEnv("/Users/ada/venv", version="3.11.9", arch="x86_64", system="darwin",
                                base_prefix="/Library/Frameworks/Python.framework/Versions/3.11")


def _intel_mac(root: FakeRoot) -> None:
    # A 2019 MacBook Pro (Core i9-9880H: AVX2) with tensorflow 2.15.0's macOS x86_64 wheel.
    hosts.mac(root, hosts.I9_9880H, hosts.MONTEREY)
    site = FakeSitePackages(root.path / INTEL_MAC_ENV.site.lstrip("/"))
    site.tensorflow(name="tensorflow", version="2.15.0", requires=parts.TF_2_15_REQUIRES, requires_python=">=3.9",
                    tags=(hosts.mac_wheel_tag(INTEL_MAC_ENV, "10_15"),))
    for name, version in parts.TF_2_15_DEPENDENCIES.items():
        site.dist(name, version, top_level=(name,))


def _user(env: parts.PythonEnv) -> dict[str, str]:
    return {**hosts.MAC_USER, "VIRTUAL_ENV": env.prefix,
            "PATH": f"{env.prefix}/bin:/opt/homebrew/bin:/usr/bin:/bin:/usr/sbin:/sbin"}


register(
    HealthyMachine("jetson-orin-jetpack-6-nvidia-tensorflow", ("PLAT",),
                   "a Jetson AGX Orin with JetPack 6.0 (L4T R36.3.0) and NVIDIA's tensorflow 2.15.0+nv24.05 "
                   "from the JetPack 6.0 index", _jetson_jetpack_6, env=hosts.JETSON_USER, python=hosts.JETSON_ENV),
    HealthyMachine("jetson-orin-nx-jetpack-6-2-with-the-6-1-wheel", ("PLAT",),
                   "a Jetson Orin NX with JetPack 6.2 (L4T R36.4.3), which has no TensorFlow wheel of its own, and "
                   "NVIDIA's tensorflow 2.16.1+nv24.08 from the JetPack 6.1 index (same CUDA 12.6, cuDNN 9.3)",
                   jetson_jetpack_6_2("2.16.1+nv24.08", "12.6", "9"), env=_jetson_user(ORIN_NX_PY310),
                   python=ORIN_NX_PY310),
    HealthyMachine("jetson-orin-nx-jetpack-5-1-3-with-the-5-1-2-wheel", ("PLAT",),
                   "a Jetson Orin NX with JetPack 5.1.3 (L4T R35.5.0) and NVIDIA's tensorflow 2.12.0+nv23.06 "
                   "from the JetPack 5.1.2 index (JetPack 5.1.x share CUDA 11.4, cuDNN 8.6, TensorRT 8.5)",
                   _jetson_jetpack_5_1_3, env=_jetson_user(ORIN_NX_PY38), python=ORIN_NX_PY38),
    HealthyMachine("mac-apple-silicon-native-python", ("PLAT", "CPU"),
                   "an M3 Max Mac (macOS 15.0), a native arm64 Python 3.11 with tensorflow 2.21.0 (macosx arm64)",
                   _mac_native, env=_user(hosts.MAC_ARM_ENV), python=hosts.MAC_ARM_ENV),
    HealthyMachine("mac-apple-silicon-metal-of-its-release", ("PLAT",),
                   "an M3 Max Mac, native Python 3.11, tensorflow 2.17.1 with tensorflow-metal 1.1.0",
                   _mac_metal, env=_user(hosts.MAC_ARM_ENV), python=hosts.MAC_ARM_ENV),
    HealthyMachine("mac-intel-x86-wheel", ("PLAT", "CPU"),
                   "a 2019 Intel MacBook Pro (Core i9-9880H, AVX2), macOS 12.6, tensorflow 2.15.0 macosx x86_64",
                   _intel_mac, env=_user(INTEL_MAC_ENV), python=INTEL_MAC_ENV),
)


# A conda environment whose TensorFlow stack is conda-forge's only, with strict priority (~/.condarc):
# `conda create -n tf -c conda-forge --override-channels python=3.11 tensorflow=2.15`.
CONDA_FORGE_ENV = parts.PythonEnv("/home/ada/miniforge3/envs/tf", version="3.11.9",
                                  base_prefix="/home/ada/miniforge3/envs/tf")
CONDA_FORGE_STACK = (
    ("python", "3.11.9", "hb806964_0_cpython"), ("tensorflow", "2.15.0", "cpu_py311h6ac8430_2"),
    ("tensorflow-base", "2.15.0", "cpu_py311h21fe4a4_2"), ("tensorflow-estimator", "2.15.0", "cpu_py311ha26ac30_2"),
    ("keras", "2.15.0", "pyhd8ed1ab_0"), ("tensorboard", "2.15.2", "pyhd8ed1ab_0"),
    ("numpy", "1.26.4", "py311h64a7726_0"), ("libprotobuf", "4.24.4", "hf27288f_0"),
    ("protobuf", "4.24.4", "py311h46cbc50_0"), ("libabseil", "20230802.1", "cxx17_h59595ed_0"),
    ("libgrpc", "1.59.3", "hd6c4280_0"), ("grpcio", "1.59.3", "py311ha6695c7_0"),
    ("h5py", "3.10.0", "nompi_py311h3839ddf_100"),
    ("hdf5", "1.14.3", "nompi_h4f84152_100"), ("libstdcxx-ng", "13.2.0", "h7e041cc_5"),
)


def _conda_forge_only(root: FakeRoot) -> None:
    parts.cpus(root, parts.MILAN, cores_per_socket=8)
    parts.process(root)
    parts.operating_system(root, "ada-ws")
    env = CONDA_FORGE_ENV
    for name, version, build in CONDA_FORGE_STACK:
        hosts.conda_record(root, env.prefix, name, version, build, hosts.CONDA_FORGE_URL,
                           subdir="noarch" if build.startswith("pyhd8ed1ab") else "linux-64")
    root.write("/home/ada/.condarc", "channels:\n  - conda-forge\nchannel_priority: strict\n")
    site = FakeSitePackages(root.path / env.site.lstrip("/"))
    site.tensorflow(name="tensorflow", version="2.15.0", requires=parts.TF_2_15_REQUIRES, requires_python=">=3.9",
                    tags=("cp311-cp311-linux_x86_64",))
    for name, version in parts.TF_2_15_DEPENDENCIES.items():
        site.dist(name, version, top_level=(name,), installer="conda")
    (site.path / "tensorflow-2.15.0.dist-info" / "INSTALLER").write_text("conda\n")


CONDA_USER = {"HOME": "/home/ada", "USER": "ada", "CONDA_PREFIX": CONDA_FORGE_ENV.prefix, "CONDA_DEFAULT_ENV": "tf",
              "CONDA_EXE": "/home/ada/miniforge3/bin/conda", "CONDA_PYTHON_EXE": "/home/ada/miniforge3/bin/python",
              "PATH": f"{CONDA_FORGE_ENV.prefix}/bin:/home/ada/miniforge3/condabin:/usr/bin:/bin"}

register(HealthyMachine(
    "conda-forge-only-strict-priority", ("PKG",),
    "a conda environment with tensorflow 2.15 and its stack from conda-forge only, channel_priority strict",
    _conda_forge_only, env=CONDA_USER, python=CONDA_FORGE_ENV))


# TensorFlow 2.15 built from source on the cluster (`bazel build --config=mkl`: oneDNN on GNU OpenMP, the
# framework NEEDs libgomp.so.1), run with the published advice for OpenMP builds: one inter-op thread.
SOURCE_ENV = parts.PythonEnv("/home/ada/venv")
SOURCE_LIBRARIES = ("libtensorflow_framework.so.2", "libtensorflow_cc.so.2", "python/_pywrap_tensorflow_internal.so")
GLIBC_NEEDS = ("libdl.so.2", "libpthread.so.0", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1", "libc.so.6")


def _source_build_gnu_openmp(root: FakeRoot) -> None:
    from tfdoctor.testing.elf import shared_object

    parts.cpus(root, parts.CASCADE_LAKE, cores_per_socket=8, threads_per_core=1)
    parts.process(root)
    parts.operating_system(root, "cpu-node", os_release=parts.ROCKY_9)
    site = FakeSitePackages(root.path / SOURCE_ENV.site.lstrip("/"))
    site.tensorflow(name="tensorflow", version="2.15.0", requires=parts.TF_2_15_REQUIRES,
                    tags=("cp311-cp311-linux_x86_64",))
    for name, version in parts.TF_2_15_DEPENDENCIES.items():
        site.dist(name, version, top_level=(name,))
    framework, *others = SOURCE_LIBRARIES
    root.write(f"{SOURCE_ENV.site}/tensorflow/{framework}",
               shared_object(framework, needed=("libgomp.so.1", *GLIBC_NEEDS)))
    for library in others:
        root.write(f"{SOURCE_ENV.site}/tensorflow/{library}",
                   shared_object(library.rsplit("/", 1)[-1], needed=(framework, *GLIBC_NEEDS)))
    # The RECORD the build's wheel wrote names these files with their own sizes and hashes.
    record = site.path / "tensorflow-2.15.0.dist-info" / "RECORD"
    lines = record.read_text().splitlines(keepends=True)
    record.write_text("".join(record_line(site.path, line.split(",")[0]) if line.split(",")[0] in
                              [f"tensorflow/{lib}" for lib in SOURCE_LIBRARIES] else line for line in lines))
    root.write("/usr/lib64/libgomp.so.1.0.0", shared_object("libgomp.so.1"))
    root.symlink("/usr/lib64/libgomp.so.1", "libgomp.so.1.0.0")


register(HealthyMachine(
    "source-build-gnu-openmp-one-inter-op-thread", ("THR",),
    "TensorFlow 2.15 built from source with --config=mkl (links libgomp.so.1) on 8 cores, intra-op 8, "
    "OMP_NUM_THREADS 8, inter-op 1", _source_build_gnu_openmp,
    env={"HOME": "/home/ada", "USER": "ada", "VIRTUAL_ENV": SOURCE_ENV.prefix,
         "PATH": f"{SOURCE_ENV.prefix}/bin:/usr/bin:/bin",
         "TF_NUM_INTRAOP_THREADS": "8", "OMP_NUM_THREADS": "8", "TF_NUM_INTEROP_THREADS": "1"},
    python=SOURCE_ENV))
