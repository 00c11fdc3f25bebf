"""Healthy twins of the release-aware checks (issue 36 items 1 and 2): the ptxas XLA really runs is new
enough although an older toolkit is /usr/local/cuda (XLA002), cuda_malloc_async in a release that fixed it
(GPU107), CPU auto-clustering flags on a host whose TensorFlow clusters for the GPU (XLA107), and
TF_ENABLE_AUTO_MIXED_PRECISION set off beside a Keras mixed policy (MP107), and XLA_FLAGS on a release before the
flag tables, judged by its own library (XLA103, XLA108)."""

from __future__ import annotations

from pathlib import Path

from support import gpu_scenarios as gpu
from support import libdevice_layouts as layouts
from support.fake_site_packages import FakeSitePackages, record_line

from tfdoctor.testing import FakeRoot
from tfdoctor.testing.elf import shared_object
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


# -- tensorflow-cpu 2.14.1 (before xla_flags.toml's rows) with XLA_FLAGS: judged by its own library ---------------
# The xla_flag_names probe reads the installed libtensorflow_cc.so.2's .rodata (the names written here are those
# of the real 2.14.1 wheel, tests/data/release/xla-flags-tensorflow-cpu-2.14.1.txt): --xla_dump_hlo_as_dot, a
# real flag within a typo of --xla_dump_hlo_as_proto, is registered there (XLA103's and XLA108's twin).

LIST_2_14 = Path(__file__).parent.parent / "data" / "release" / "xla-flags-tensorflow-cpu-2.14.1.txt"
TF_2_14_REQUIRES = tuple(
    r.replace("ml-dtypes~=0.2.0", "ml-dtypes==0.2.0").replace("<2.16,>=2.15", "<2.15,>=2.14")
    .replace("<2.16,>=2.15.0", "<2.15,>=2.14.0") for r in parts.TF_2_15_REQUIRES if "extra ==" not in r)


def _cpu_node_214(root: FakeRoot) -> None:
    parts.cpus(root, parts.CASCADE_LAKE, cores_per_socket=4, threads_per_core=2)
    parts.process(root)
    parts.operating_system(root, "build14", mem_gib=32)
    site = FakeSitePackages(root.path / VENV.site.lstrip("/"))
    site.tensorflow(name="tensorflow-cpu", version="2.14.1", requires=TF_2_14_REQUIRES, requires_python=">=3.9",
                    tags=("cp311-cp311-manylinux_2_17_x86_64", "cp311-cp311-manylinux2014_x86_64"))
    for dist, version in {**parts.TF_2_15_DEPENDENCIES, "keras": "2.14.0", "tensorboard": "2.14.1",
                          "tensorflow_estimator": "2.14.0"}.items():
        site.dist(dist, version, top_level=(dist,))
    names = [n for n in LIST_2_14.read_text(encoding="utf-8").splitlines() if not n.startswith("#")]
    rodata = b"\x00" + b"".join(n.encode() + b"\x00" for n in names)
    library = "tensorflow/libtensorflow_cc.so.2"
    root.write(f"{VENV.site}/{library}", shared_object("libtensorflow_cc.so.2", rodata=rodata))
    # pip's RECORD names the file installed: this library, not the stand-in tensorflow() wrote.
    record = site.path / "tensorflow_cpu-2.14.1.dist-info" / "RECORD"
    lines = record.read_text().splitlines(keepends=True)
    record.write_text("".join(record_line(site.path, library) if line.startswith(f"{library},") else line
                              for line in lines))


register(HealthyMachine(
    "release-cpu-214-xla-flags-from-its-library", ("XLA",),
    "tensorflow-cpu 2.14.1 on an 8-thread CPU node with XLA_FLAGS=--xla_dump_to=… --xla_dump_hlo_as_dot "
    "--xla_cpu_enable_fast_math=false: no table row for 2.14, the flags its own library registers", _cpu_node_214,
    env={**USER_ENV, "XLA_FLAGS": "--xla_dump_to=/tmp/xla-dump --xla_dump_hlo_as_dot --xla_cpu_enable_fast_math=false"},
    python=VENV))


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
