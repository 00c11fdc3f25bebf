"""Healthy twins of the release-aware checks (issue 36 items 1 and 2): the ptxas XLA really runs is new
enough although an older toolkit is /usr/local/cuda (XLA002), cuda_malloc_async in a release that fixed it
(GPU107), CPU auto-clustering flags on a host whose TensorFlow clusters for the GPU (XLA107), and
TF_ENABLE_AUTO_MIXED_PRECISION set off beside a Keras mixed policy (MP107)."""

from __future__ import annotations

from support import gpu_scenarios as gpu

from tfdoctor.testing import FakeRoot
from tfdoctor.testing.fake_nvml import FakeGpu

from . import parts
from .corpus import HealthyMachine, register
from .machines import USER_ENV, VENV


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
