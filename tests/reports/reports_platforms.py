"""Real reports of the category "platforms" (issue 36): Jetson boards, Macs, CUPTI under WSL2. Each is
rebuilt as the machine its thread describes; `expect` and `split` were written from the thread before
tfdoctor ran on any of them."""

from __future__ import annotations

from healthy import parts
from healthy import platform_parts as hosts
from healthy.machines_platforms import record_requires
from healthy.parts import PythonEnv
from support import gpu_scenarios as g
from support.fake_site_packages import FakeSitePackages

from tfdoctor.testing import FakeRoot

from .corpus import RealReport, register

JETSON_TWIN = "jetson-orin-jetpack-6-nvidia-tensorflow"
ROSETTA_TWIN = "mac-apple-silicon-native-python"
METAL_TWIN = "mac-apple-silicon-metal-of-its-release"
WSL2_TWIN = "gpu-stack-wsl2-pip"


def _pypi_on_jetson(model: str, release: str, os_release: str, env: PythonEnv, version: str, cores: int = 12,
                    features: str = hosts.A78AE_FEATURES, part: str = "0xd42", kernel: str = "5.10.120-tegra"):
    """`pip install tensorflow` on a Jetson: PyPI's `tensorflow` for Linux aarch64, which pulls the CPU-only
    tensorflow-cpu-aws build (the shim's Requires-Dist, from the release's real METADATA)."""
    def build(root: FakeRoot) -> None:
        hosts.jetson(root, model, release, cores=cores, features=features, part=part, kernel=kernel,
                     os_release=os_release)
        requires = record_requires(version)
        cp = "cp" + "".join(env.version.split(".")[:2])
        hosts.pypi_aarch64_tensorflow(root, env, version, name="tensorflow-cpu-aws",
                                      requires=tuple(r for r in requires if "platform_system" not in r))
        site = FakeSitePackages(root.path / env.site.lstrip("/"))
        site.dist("tensorflow", version, requires=requires, top_level=(), tags=(f"{cp}-{cp}-manylinux_2_17_aarch64",))
        hosts.resolved(site, ".".join(version.split(".")[:2]))
    return build


def _jetson_user(env: PythonEnv) -> dict[str, str]:
    return {**hosts.JETSON_USER, "VIRTUAL_ENV": env.prefix,
            "PATH": f"{env.prefix}/bin:/usr/local/cuda/bin:/usr/bin:/bin"}


ORIN_PY38 = PythonEnv("/home/nvidia/venv", version="3.8.10", arch="aarch64")
NANO_PY38 = PythonEnv("/home/jetson/venv", version="3.8.0", arch="aarch64")
ORIN_NX_PY310 = PythonEnv("/home/nvidia/venv", version="3.10.12", arch="aarch64")


def _kumatea_cpu_wheel(root: FakeRoot) -> None:
    # A Jetson Nano (JetPack 4.6.1, L4T R32.7.1, Ubuntu 18.04) with a community aarch64 build of TensorFlow
    # 2.8.0 for Python 3.8 (KumaTea/tensorflow-aarch64, built on CPUs only), installed from its own index.
    hosts.jetson(root, hosts.NANO, hosts.L4T_32_7_1, cores=4, features=hosts.A57_FEATURES, part="0xd07",
                 kernel="4.9.253-tegra", os_release=hosts.UBUNTU_1804, mem_gib=4)
    hosts.pypi_aarch64_tensorflow(root, NANO_PY38, "2.8.0", requires=())


def _rosetta(version: str, name: str, python: str, minimum: str, requires_of: str, system: str):
    """An x86_64 Python under Rosetta 2 on an M1 Mac with the x86_64 wheel of `name`."""
    def build(root: FakeRoot) -> None:
        hosts.mac(root, hosts.M1_ROSETTA, system)
        env = PythonEnv("/Users/ada/venv", version=python, arch="x86_64", system="darwin")
        cp = "cp" + "".join(python.split(".")[:2])
        site = FakeSitePackages(root.path / env.site.lstrip("/"))
        site.tensorflow(name=name, version=version, requires=record_requires(requires_of), requires_python=">=3.8",
                        tags=(f"{cp}-{cp}-macosx_{minimum}_x86_64",))
        hosts.resolved(site, ".".join(version.split(".")[:2]))
    return build


def _rosetta_env(python: str) -> PythonEnv:
    return PythonEnv("/Users/ada/venv", version=python, arch="x86_64", system="darwin")


MAC_ENV = {"HOME": "/Users/ada", "USER": "ada", "VIRTUAL_ENV": "/Users/ada/venv",
           "PATH": "/Users/ada/venv/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"}


def _metal(python: str, version: str, metal: str, sysctl: str, system: str):
    def build(root: FakeRoot) -> None:
        hosts.mac(root, sysctl, system)
        env = PythonEnv("/Users/ada/venv", version=python, arch="arm64", system="darwin")
        site = FakeSitePackages(root.path / env.site.lstrip("/"))
        tag = hosts.mac_wheel_tag(env)
        site.tensorflow(name="tensorflow", version=version, requires=record_requires(version), requires_python=">=3.9",
                        tags=(tag,))
        site.dist("tensorflow-metal", metal, requires=("wheel ~=0.35", "six >=1.15.0"), top_level=(), tags=(tag,),
                  record=("tensorflow-plugins/libmetal_plugin.dylib",))
        site.file("tensorflow-plugins/libmetal_plugin.dylib", "\xcf\xfa\xed\xfe")
        hosts.resolved(site, ".".join(version.split(".")[:2]))
    return build


def _metal_env(python: str) -> PythonEnv:
    return PythonEnv("/Users/ada/venv", version=python, arch="arm64", system="darwin")


def _wsl2_conda_tf_2_12(root: FakeRoot):
    """TensorFlow's 2.12 install guide followed under WSL2 (RTX 4090): conda's cudatoolkit 11.8 and cuDNN 8.6
    in $CONDA_PREFIX/lib, on the loader's path through etc/conda/activate.d; tensorboard-plugin-profile."""
    g.wsl2(root)
    g.process(root)
    g.tensorflow(root, version="2.12.1", cuda="11.8", cudnn="8", caps=g.SYSTEM_118["caps"], site=g.CONDA_SITE)
    for soname, real in g.TOOLKIT_LIBS["11.8"].items():
        g.lib(root, f"{g.CONDA_ENV}/lib/{real}", soname)
        g.link(root, f"{g.CONDA_ENV}/lib/{soname}", real)
    g.lib(root, f"{g.CONDA_ENV}/lib/libcudnn.so.8.6.0", "libcudnn.so.8")
    g.link(root, f"{g.CONDA_ENV}/lib/libcudnn.so.8", "libcudnn.so.8.6.0")
    g.lib(root, f"{g.CONDA_ENV}/lib/libcupti.so.2022.3.0", "libcupti.so.11.8")
    g.link(root, f"{g.CONDA_ENV}/lib/libcupti.so.11.8", "libcupti.so.2022.3.0")
    root.write(f"{g.CONDA_ENV}/etc/conda/activate.d/env_vars.sh",
               "export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$CONDA_PREFIX/lib/\n")
    root.write("/proc/sys/kernel/osrelease", "5.15.90.1-microsoft-standard-WSL2\n")
    parts.tensorflow_profiler(root, WSL_CONDA)
    return tuple(g.RTX_4090_WSL)


def _wsl2_pip_tf_2_15(root: FakeRoot):
    """tensorflow[and-cuda] 2.15 under WSL2 (the corpus's healthy WSL2 machine) with tensorboard-plugin-profile."""
    g.wsl2(root)
    g.process(root)
    g.tensorflow(root, pins=g.PINS_215)
    g.wheels(root)
    root.write("/proc/sys/kernel/osrelease", "5.15.133.1-microsoft-standard-WSL2\n")
    parts.tensorflow_profiler(root, WSL_VENV)
    return tuple(g.RTX_4090_WSL)


WSL_CONDA = PythonEnv(g.CONDA_ENV, version="3.10.12", base_prefix="/home/ada/miniconda3")
WSL_VENV = PythonEnv(g.VENV, version="3.11.9")


register(
    RealReport(
        "jetson-orin-pypi-tensorflow-2.13", "https://github.com/tensorflow/tensorflow/issues/62711", "platforms",
        "dev", "`pip install tensorflow` (2.13.1, Python 3.8) on a Jetson AGX Orin: no GPU, not built with CUDA; "
        "PyPI's aarch64 wheel is CPU-only, NVIDIA's Jetson wheel is needed",
        expect=("PLAT001",), twin=JETSON_TWIN,
        build=_pypi_on_jetson(hosts.ORIN_AGX, hosts.L4T_35_4_1, hosts.UBUNTU_2004, ORIN_PY38, "2.13.1"),
        env=_jetson_user(ORIN_PY38), python=ORIN_PY38),
    RealReport(
        "jetson-nano-community-cpu-wheel", "https://github.com/KumaTea/tensorflow-aarch64/issues/6", "platforms",
        "heldout", "a community aarch64 TensorFlow on a Jetson Nano lists no GPU: the build is CPU-only",
        expect=("PLAT001",), twin=JETSON_TWIN, build=_kumatea_cpu_wheel, env=_jetson_user(NANO_PY38),
        python=NANO_PY38),
    RealReport(
        "jetson-orin-nx-jetpack-6-pypi", "https://github.com/tensorflow/tensorflow/issues/78983", "platforms", "dev",
        "TensorFlow 2.16.1 from PyPI (Python 3.10) on a Jetson Orin NX with JetPack 6.0: the GPU is not recognised",
        expect=("PLAT001",), twin=JETSON_TWIN,
        build=_pypi_on_jetson(hosts.ORIN_NX, hosts.L4T_36_3_0, parts.UBUNTU_2204, ORIN_NX_PY310, "2.16.1", cores=6,
                              kernel="5.15.136-tegra"),
        env=_jetson_user(ORIN_NX_PY310), python=ORIN_NX_PY310),
    RealReport(
        "mac-rosetta-tensorflow-macos-2.9", "https://github.com/tensorflow/tensorflow/issues/58339", "platforms",
        "dev", "tensorflow-macos 2.9.2 in an x86 Python under Rosetta on an M1: Illegal instruction, the wheel "
        "uses AVX, which Rosetta does not translate",
        expect=("PLAT010", "CPU001"), twin=ROSETTA_TWIN,
        build=_rosetta("2.9.2", "tensorflow-macos", "3.8.12", "10_14", "2.9.3", hosts.MONTEREY),
        env=MAC_ENV, python=_rosetta_env("3.8.12")),
    RealReport(
        "mac-rosetta-tensorflow-2.16", "https://github.com/tensorflow/tensorflow/issues/63495", "platforms",
        "heldout", "tensorflow 2.16.1 on a Mac: `import tensorflow` dies with illegal hardware instruction; the "
        "Python was an x86_64 one running under Rosetta",
        expect=("PLAT010", "CPU001"), twin=ROSETTA_TWIN,
        build=_rosetta("2.16.1", "tensorflow", "3.10.13", "10_15", "2.16.1", hosts.SONOMA),
        env=MAC_ENV, python=_rosetta_env("3.10.13")),
    RealReport(
        "mac-metal-1.1-with-tensorflow-2.18", "https://github.com/tensorflow/tensorflow/issues/81987", "platforms",
        "dev", "`pip install tensorflow tensorflow-metal` (2.18.0 and 1.1.0, Python 3.9): Symbol not found in "
        "libmetal_plugin.dylib at import",
        expect=("PLAT011",), twin=METAL_TWIN,
        build=_metal("3.9.20", "2.18.0", "1.1.0", hosts.M3_MAX_NATIVE, hosts.SEQUOIA),
        env=MAC_ENV, python=_metal_env("3.9.20")),
    RealReport(
        "mac-metal-1.1-after-upgrade-to-2.18", "https://github.com/tensorflow/tensorflow/issues/84167", "platforms",
        "dev", "tensorflow-metal 1.1.0 worked with TensorFlow 2.17; after upgrading TensorFlow to 2.18 the import "
        "fails (M2 Max, Python 3.11)",
        expect=("PLAT011",), twin=METAL_TWIN,
        build=_metal("3.11.11", "2.18.0", "1.1.0", hosts.M3_MAX_NATIVE, hosts.SEQUOIA),
        env=MAC_ENV, python=_metal_env("3.11.11")),
    RealReport(
        "wsl2-profiler-tf-2.12", "https://github.com/tensorflow/tensorflow/issues/61210", "platforms", "dev",
        "TensorFlow 2.12 (CUDA 11.8) under WSL2 with the profiler plugin: no GPU trace (\"Failed to load libcupti\")",
        expect=("CUPTI004",), twin=WSL2_TWIN, build=_wsl2_conda_tf_2_12,
        env={**{k: v for k, v in g.CONDA_ENVIRONMENT.items() if k != "XLA_FLAGS"},
             "LD_LIBRARY_PATH": f":{g.CONDA_ENV}/lib/"}, python=WSL_CONDA,
        nvml={"driver": "536.40", "cuda": 12020}),
    RealReport(
        "wsl2-profiler-tf-2.15", "https://github.com/tensorflow/tensorflow/issues/62895", "platforms", "heldout",
        "TensorFlow 2.15 under WSL2: cuptiSubscribe fails with CUPTI_ERROR_INVALID_DEVICE when profiling",
        expect=("CUPTI004",), twin=WSL2_TWIN, build=_wsl2_pip_tf_2_15,
        env={"HOME": g.HOME, "USER": "ada", "VIRTUAL_ENV": g.VENV, "PATH": f"{g.VENV}/bin:/usr/bin:/bin"},
        python=WSL_VENV, nvml={"driver": "546.33", "cuda": 12030}),
)


# conda-forge/tensorflow-feedstock#288: `conda config --set channel_priority flexible`, then
# `conda create --name cftf tensorflow-gpu=2.10 python=3.9 --channel conda-forge --channel defaults
# --override-channels`: keras and tensorboard were taken from pkgs/main beside conda-forge's tensorflow-gpu
# and libprotobuf (the solve the thread shows).
FEEDSTOCK_PREFIX = "/home/ada/miniconda3/envs/cftf"
FEEDSTOCK_ENV = PythonEnv(FEEDSTOCK_PREFIX, version="3.9.15", base_prefix=FEEDSTOCK_PREFIX)
FEEDSTOCK_STACK = (
    ("python", "3.9.15", "hba424b6_0_cpython", hosts.CONDA_FORGE_URL, "linux-64"),
    ("tensorflow-gpu", "2.10.0", "cuda112py39h0bbbad9_0", hosts.CONDA_FORGE_URL, "linux-64"),
    ("tensorflow", "2.10.0", "cuda112py39h9333c2f_0", hosts.CONDA_FORGE_URL, "linux-64"),
    ("tensorflow-base", "2.10.0", "cuda112py39he87a039_0", hosts.CONDA_FORGE_URL, "linux-64"),
    ("libprotobuf", "3.21.10", "h6239696_0", hosts.CONDA_FORGE_URL, "linux-64"),
    ("tensorboard", "2.10.0", "py39h06a4308_0", hosts.DEFAULTS_URL, "linux-64"),
    ("keras", "2.10.0", "py39h06a4308_0", hosts.DEFAULTS_URL, "linux-64"),
    ("numpy", "1.23.5", "py39h3d75532_0", hosts.CONDA_FORGE_URL, "linux-64"),
)


def _feedstock_flexible(root: FakeRoot) -> None:
    parts.cpus(root, parts.CASCADE_LAKE, cores_per_socket=8)
    parts.process(root)
    parts.operating_system(root, "cf-build")
    for name, version, build, channel, subdir in FEEDSTOCK_STACK:
        hosts.conda_record(root, FEEDSTOCK_ENV.prefix, name, version, build, channel, subdir=subdir)
    root.write("/home/ada/.condarc", "channel_priority: flexible\n")
    site = FakeSitePackages(root.path / FEEDSTOCK_ENV.site.lstrip("/"))
    site.tensorflow(name="tensorflow", version="2.10.0", requires=record_requires("2.10.1"), requires_python=">=3.7",
                    tags=("cp39-cp39-linux_x86_64",))
    hosts.resolved(site, "2.10", installer="conda")


register(RealReport(
    "conda-feedstock-keras-from-main", "https://github.com/conda-forge/tensorflow-feedstock/issues/288", "platforms",
    "dev", "tensorflow-gpu 2.10 from conda-forge with channel_priority flexible: keras and tensorboard came from "
    "pkgs/main and the environment's protobuf does not fit TensorFlow",
    expect=("PKG030",), twin="conda-forge-only-strict-priority", build=_feedstock_flexible,
    env={"HOME": "/home/ada", "USER": "ada", "CONDA_PREFIX": FEEDSTOCK_ENV.prefix, "CONDA_DEFAULT_ENV": "cftf",
         "CONDA_EXE": "/home/ada/miniconda3/bin/conda", "CONDA_PYTHON_EXE": "/home/ada/miniconda3/bin/python",
         "PATH": f"{FEEDSTOCK_ENV.prefix}/bin:/usr/bin:/bin"}, python=FEEDSTOCK_ENV))
