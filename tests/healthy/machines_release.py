"""Healthy twins of the release-aware checks (issue 36 items 1 and 2): the ptxas XLA really runs is new
enough although an older toolkit is /usr/local/cuda (XLA002), cuda_malloc_async in a release that fixed it
(GPU107), CPU auto-clustering flags on a host whose TensorFlow clusters for the GPU (XLA107), and
TF_ENABLE_AUTO_MIXED_PRECISION set off beside a Keras mixed policy (MP107)."""

from __future__ import annotations

from support import gpu_scenarios as gpu
from support import libdevice_layouts as layouts
from support.fake_site_packages import FakeSitePackages

from tfdoctor.testing import FakeRoot
from tfdoctor.testing.fake_nvml import FakeGpu

from . import parts
from .corpus import HealthyMachine, register
from .machines import HOME, USER_ENV, VENV


def _workstation(root: FakeRoot) -> tuple[FakeGpu, ...]:
    parts.cpus(root, parts.CASCADE_LAKE, cores_per_socket=24, threads_per_core=2)
    parts.process(root)
    parts.operating_system(root, "ws-ada", mem_gib=192)
    return parts.nvidia_driver(root, parts.RTX_4090, [("0000:65:00.0", 0)])


# -- pip CUDA wheels, an old toolkit as /usr/local/cuda, a newer toolkit's bin/ on PATH (XLA002's twin) -----
# XLA 2.15 tries PATH before /usr/local/cuda and the wheel (tsl PreferPtxasFromPath): it runs the 12.4 ptxas
# on PATH, newer than the CUDA 12.2 build; the 11.8 toolkit behind /usr/local/cuda is never run. (Judging the
# candidate roots first, as tfdoctor did, called this machine's ptxas too old.)

def _toolkit_on_path(root: FakeRoot) -> tuple[FakeGpu, ...]:
    gpus = _workstation(root)
    parts.tensorflow_2_15(root, VENV)
    gpu.link(root, "/usr/local/cuda", gpu.toolkit(root, "11.8", nccl=False))
    gpu.toolkit(root, "12.4", nccl=False)
    return gpus


register(HealthyMachine(
    "release-pip-215-newer-toolkit-on-path", ("XLA",),
    "tensorflow[and-cuda] 2.15 on an RTX 4090, /usr/local/cuda -> 11.8, CUDA 12.4's bin/ on PATH (the ptxas XLA "
    "runs)", _toolkit_on_path,
    env={**USER_ENV, "PATH": f"{VENV.prefix}/bin:/usr/local/cuda-12.4/bin:/usr/local/bin:/usr/bin:/bin"},
    python=VENV))


# -- cuda_malloc_async where it works, auto-clustering for a GPU, the AMP variable off (GPU107, XLA107, MP107) --

def _pip_workstation(root: FakeRoot) -> tuple[FakeGpu, ...]:
    gpus = _workstation(root)
    parts.tensorflow_2_15(root, VENV)
    return gpus


register(HealthyMachine(
    "release-pip-215-async-allocator-gpu-clustering", ("GPU", "XLA", "MP"),
    "tensorflow[and-cuda] 2.15 on an RTX 4090 with TF_GPU_ALLOCATOR=cuda_malloc_async (fixed in 2.7), "
    "--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit with the GPU TensorFlow clusters for, "
    "TF_ENABLE_AUTO_MIXED_PRECISION=0 and the Keras mixed_float16 policy", _pip_workstation,
    env={**USER_ENV, "TF_GPU_ALLOCATOR": "cuda_malloc_async",
         "TF_XLA_FLAGS": "--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit",
         "TF_ENABLE_AUTO_MIXED_PRECISION": "0", "TFDOCTOR_MIXED_PRECISION": "mixed_float16"},
    python=VENV))


# -- a CPU-only node with no auto-clustering flags (XLA107's twin for its CPU report) -------------------------

def _cpu_node(root: FakeRoot) -> None:
    parts.cpus(root, parts.CASCADE_LAKE, cores_per_socket=4, threads_per_core=2)
    parts.process(root)
    parts.operating_system(root, "build18", mem_gib=32)
    parts.tensorflow_2_21(root, VENV)


register(HealthyMachine(
    "release-cpu-221-no-auto-clustering", ("XLA",),
    "tensorflow-cpu 2.21 on an 8-thread CPU node, XLA left to jit_compile=True (no TF_XLA_FLAGS), XLA_FLAGS with "
    "flags of 2.21's XLA (XLA108's twin)", _cpu_node,
    env={**USER_ENV, "XLA_FLAGS": "--xla_cpu_use_thunk_runtime=false --xla_dump_to=/tmp/xla-dump"}, python=VENV))


# -- tensorflow[and-cuda] 2.16.1 whose XLA finds the nvcc wheel's ptxas (the twin of a system CUDA on PATH) -----
# The conda environment of tests/reports/reports_release.py's tf-68966 without the system CUDA 12.3 Update 1:
# XLA 2.16 finds no ptxas on PATH and none in /usr/local/cuda, and runs the wheel's.

A10 = parts.GpuModel("NVIDIA A10", "0x2236", (8, 6), 23028)
CONDA_ENV = "/home/ada/.conda/envs/tf-2.16"
CONDA_PY = parts.PythonEnv(CONDA_ENV, version="3.12.3", base_prefix=CONDA_ENV)


def wheel_library_path(site: str) -> str:
    """Every nvidia-* wheel's lib/ folder: what 2.16.1 users put on LD_LIBRARY_PATH (its RUNPATH misses them)."""
    return ":".join(f"{site}/nvidia/{folder}/lib" for folder in gpu.WHEEL_FILES if folder != "cuda_nvcc")


def _tf216_wheel_ptxas(root: FakeRoot) -> tuple[FakeGpu, ...]:
    parts.cpus(root, parts.CASCADE_LAKE, cores_per_socket=20, threads_per_core=2)
    parts.process(root)
    parts.operating_system(root, "gpu-a10-07", os_release=parts.ROCKY_9, mem_gib=256)
    gpus = parts.nvidia_driver(root, A10, [("0000:17:00.0", 0)])
    gpu.tensorflow(root, version="2.16.1", cuda="12.3", cudnn="8", pins=gpu.PINS_216, site=CONDA_PY.site)
    gpu.wheels(root, gpu.PINS_216, site=CONDA_PY.site)
    return gpus


register(HealthyMachine(
    "release-pip-216-wheel-ptxas", ("XLA",),
    "tensorflow[and-cuda] 2.16.1 in a conda env on an A10, no system CUDA: XLA runs the nvcc wheel's ptxas 12.3.107",
    _tf216_wheel_ptxas,
    env={"HOME": "/home/ada", "USER": "ada", "CONDA_PREFIX": CONDA_ENV,
         "PATH": f"{CONDA_ENV}/bin:/usr/local/bin:/usr/bin:/bin", "LD_LIBRARY_PATH": wheel_library_path(CONDA_PY.site)},
    python=CONDA_PY))


# -- libdevice in a root only newer releases search (issue 36 item 2: XLA001's twins) -------------------------
# TensorFlow 2.19 on also looks in /opt/cuda and in the environment TensorFlow is installed in
# (tfdoctor/knowledge/xla_ptxas.toml [[roots]]): Arch's CUDA and a conda environment's cuda-nvcc need no flag.

ARCH_LINUX = 'NAME="Arch Linux"\nPRETTY_NAME="Arch Linux"\nID=arch\nBUILD_ID=rolling\n'
DRIVER_575 = {"driver": "575.57.08", "cuda": 12090}  # new enough for 2.21's CUDA 12.5 build


def _pip_221_without_nvcc(root: FakeRoot, hostname: str, os_release: str, env: parts.PythonEnv
                          ) -> tuple[FakeGpu, ...]:
    """`pip install tensorflow[and-cuda]==2.21.0` and what pip resolved with it, less the nvcc wheel (2.21's
    framework does not reach nvidia/cusolver/lib: the machines put it on LD_LIBRARY_PATH, as its users do)."""
    parts.cpus(root, parts.CASCADE_LAKE, cores_per_socket=24, threads_per_core=2)
    parts.process(root)
    parts.operating_system(root, hostname, os_release=os_release, mem_gib=192)
    gpus = parts.nvidia_driver(root, parts.RTX_4090, [("0000:65:00.0", 0)], version=DRIVER_575["driver"])
    gpu.pip_release(root, "2.21.0", leave_out=("cuda_nvcc",), site=env.site)
    FakeSitePackages(root.path / env.site.lstrip("/")).healthy_dependencies()
    return gpus


def _arch_opt_cuda(root: FakeRoot) -> tuple[FakeGpu, ...]:
    gpus = _pip_221_without_nvcc(root, "ws-arch", ARCH_LINUX, VENV)
    layouts.arch_opt_cuda(root)
    return gpus


register(HealthyMachine(
    "release-pip-221-arch-opt-cuda", ("XLA",),
    "pip tensorflow 2.21 without the nvcc wheel on Arch Linux, CUDA 12.6 from pacman in /opt/cuda (its bin/ on "
    "PATH): XLA 2.21 finds libdevice there", _arch_opt_cuda,
    env={**USER_ENV, "PATH": f"{VENV.prefix}/bin:/usr/local/bin:/usr/bin:/bin:/opt/cuda/bin",
         "CUDA_PATH": "/opt/cuda", "LD_LIBRARY_PATH": f"{VENV.site}/nvidia/cusolver/lib"},
    python=VENV, nvml=DRIVER_575))

CONDA_221 = parts.PythonEnv(layouts.CONDA_ENV, version="3.11.9", base_prefix=f"{HOME}/miniconda3")


def _conda_cuda_nvcc(root: FakeRoot) -> tuple[FakeGpu, ...]:
    gpus = _pip_221_without_nvcc(root, "ws-ada", parts.UBUNTU_2204, CONDA_221)
    layouts.conda_cuda_nvcc(root, CONDA_221.prefix)
    return gpus


register(HealthyMachine(
    "release-conda-221-cuda-nvcc-in-prefix", ("XLA",),
    "pip tensorflow 2.21 in a conda environment with NVIDIA's cuda-nvcc (libdevice in $CONDA_PREFIX/nvvm/libdevice, "
    "no XLA_FLAGS): XLA 2.21 searches the environment's prefix", _conda_cuda_nvcc,
    env={"HOME": HOME, "USER": "ada", "CONDA_PREFIX": CONDA_221.prefix, "CONDA_DEFAULT_ENV": "tf",
         "PATH": f"{CONDA_221.prefix}/bin:{HOME}/miniconda3/condabin:/usr/local/bin:/usr/bin:/bin",
         "LD_LIBRARY_PATH": f"{CONDA_221.site}/nvidia/cusolver/lib"},
    python=CONDA_221, nvml=DRIVER_575))
