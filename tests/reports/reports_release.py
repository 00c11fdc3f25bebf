"""Real reports of category "release" (issue 36 items 1 and 2): a setting or a tool that one TensorFlow release
gets wrong, judged against the release the thread ran. Each `expect` and `split` was written from the thread
before tfdoctor ran on the machine (two of six held out, chosen by thread)."""

from __future__ import annotations

from healthy import parts
from healthy.machines import HOME, USER_ENV, VENV
from healthy.machines_release import wheel_library_path
from healthy.parts import PythonEnv
from support import gpu_scenarios as gpu
from support.fake_site_packages import FakeSitePackages

from tfdoctor.testing import FakeRoot
from tfdoctor.testing.fake_nvml import FakeGpu

from .corpus import RealReport, register


def build_info(cuda: str, cudnn: str, caps: tuple[str, ...]) -> str:
    """build_info.py as a CUDA build of TensorFlow writes it."""
    return ("# Auto-generated module providing information about the build.\nimport collections\n\n"
            f"build_info = collections.OrderedDict([('cpu_compiler', '/dt9/usr/bin/gcc'), "
            f"('cuda_compute_capabilities', {list(caps)!r}), ('cuda_version', '{cuda}'), "
            f"('cudnn_version', '{cudnn}'), ('is_cuda_build', True), ('is_rocm_build', False), "
            "('is_tensorrt_build', True)])\n")


CAPS_25 = ("sm_35", "sm_50", "sm_60", "sm_70", "sm_75", "compute_80")  # the 2.5/2.6 wheels
CPU_BUILD = ("# Auto-generated module providing information about the build.\nimport collections\n\n"
             "build_info = collections.OrderedDict([('cpu_compiler', '/usr/bin/gcc-12'), ('is_cuda_build', False), "
             "('is_rocm_build', False), ('is_tensorrt_build', False)])\n")


def _tensorflow(root: FakeRoot, env: PythonEnv, version: str, info: str, tag: str) -> FakeSitePackages:
    site = FakeSitePackages(root.path / env.site.lstrip("/"))
    site.tensorflow(name="tensorflow", version=version, build_info=info, requires=(), requires_python=">=3.6",
                    tags=(tag,))
    return site


def _workstation(root: FakeRoot, model: parts.GpuModel, hostname: str) -> tuple[FakeGpu, ...]:
    parts.cpus(root, parts.CASCADE_LAKE, cores_per_socket=16, threads_per_core=2)
    parts.process(root)
    parts.operating_system(root, hostname, mem_gib=128)
    return parts.nvidia_driver(root, model, [("0000:65:00.0", 0)])


# -- TF_GPU_ALLOCATOR=cuda_malloc_async with TensorFlow 2.5 (GPU107) --------------------------------------

PY38 = PythonEnv(f"{HOME}/venv", version="3.8.10")


def _tf25_cuda_toolkit(root: FakeRoot) -> tuple[FakeGpu, ...]:
    gpus = _workstation(root, parts.RTX_4090, "ws-r")
    _tensorflow(root, PY38, "2.5.0", build_info("11.2", "8", CAPS_25), "cp38-cp38-manylinux2010_x86_64")
    base = gpu.toolkit(root, "11.8", cudnn="8.6.0")
    gpu.link(root, "/usr/local/cuda", base)
    gpu.ld_cache(root, [f"{base}/lib64", f"{base}/extras/CUPTI/lib64"])
    return gpus


ASYNC_ENV = {**USER_ENV, "VIRTUAL_ENV": PY38.prefix, "TF_GPU_ALLOCATOR": "cuda_malloc_async"}

register(
    RealReport(
        "tf-48869-cuda-malloc-async-tf25", "https://github.com/tensorflow/tensorflow/issues/48869", "release", "dev",
        "TF_GPU_ALLOCATOR=cuda_malloc_async to fit large tensors with TensorFlow 2.5: InternalError: No allocator "
        "statistics; the allocator was broken in 2.5 (fixed by PR 49173/50961)",
        expect=("GPU107",), twin="release-pip-215-async-allocator-gpu-clustering",
        build=_tf25_cuda_toolkit, env=ASYNC_ENV, python=PY38),
    RealReport(
        "tf-48545-cuda-malloc-async-tf25-comment", "https://github.com/tensorflow/tensorflow/issues/48545", "release",
        "dev",
        "asked whether cuda_malloc_async is supported in TF 2.5.0 after InternalError: No allocator statistics; the "
        "maintainer: it was bugged in 2.5, try 2.6",
        expect=("GPU107",), twin="release-pip-215-async-allocator-gpu-clustering",
        build=_tf25_cuda_toolkit, env=ASYNC_ENV, python=PY38),
    RealReport(
        "tf-50669-cuda-malloc-async-tf25-cuda114", "https://github.com/tensorflow/tensorflow/issues/50669", "release",
        "heldout",
        "Internal Error with TF_GPU_ALLOCATOR=cuda_malloc_async on TensorFlow 2.5 (CUDA 11.4, cuDNN 8.2.2); the "
        "allocator-statistics fix was reverted and merged again later (PR 50961)",
        expect=("GPU107",), twin="release-pip-215-async-allocator-gpu-clustering",
        build=_tf25_cuda_toolkit, env=ASYNC_ENV, python=PY38),
)


# -- TF_ENABLE_AUTO_MIXED_PRECISION under TensorFlow 2 (MP107) ----------------------------------------------

NGC_PYTHON = PythonEnv("/usr", version="3.8.10", base_prefix="/usr")


def _ngc_tf2_container(root: FakeRoot) -> tuple[FakeGpu, ...]:
    # nvcr.io/nvidia/tensorflow:21.10-tf2-py3: TensorFlow 2.6 in the system Python, root in the container.
    parts.cpus(root, parts.CASCADE_LAKE, cores_per_socket=16, threads_per_core=2)
    parts.process(root, uid=0, cap_eff=parts.CAP_DOCKER_DEFAULT)
    parts.operating_system(root, "3f2a9c1b7d4e", mem_gib=128)
    root.write("/.dockerenv", "")
    gpus = parts.nvidia_driver(root, parts.T4, [("0000:3b:00.0", 0)])
    site = FakeSitePackages(root.path / "usr/local/lib/python3.8/dist-packages")
    site.tensorflow(name="tensorflow", version="2.6.0+nv21.10", build_info=build_info("11.4", "8", CAPS_25),
                    requires=(), requires_python=">=3.6", tags=("cp38-cp38-linux_x86_64",))
    base = gpu.toolkit(root, "11.8", cudnn="8.6.0")
    gpu.link(root, "/usr/local/cuda", base)
    gpu.ld_cache(root, [f"{base}/lib64", f"{base}/extras/CUPTI/lib64"])
    return gpus


register(RealReport(
    "nvidia-tf-39-auto-mixed-precision-no-effect-tf26", "https://github.com/NVIDIA/tensorflow/issues/39", "release",
    "dev",
    "TF_ENABLE_AUTO_MIXED_PRECISION=1 in the NGC 21.10-tf2 container (TensorFlow 2.6) for BERT inference: nothing "
    "happened but the log 'TF_ENABLE_AUTO_MIXED_PRECISION has no effect.'; TensorFlow 2 does not read it",
    expect=("MP107",), twin="release-pip-215-async-allocator-gpu-clustering",
    build=_ngc_tf2_container,
    env={"HOME": "/root", "PATH": "/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
         "NVIDIA_VISIBLE_DEVICES": "all", "TF_ENABLE_AUTO_MIXED_PRECISION": "1"},
    python=PythonEnv("/usr/local", version="3.8.10", base_prefix="/usr/local")))


# -- XLA auto-clustering on a CPU-only machine (XLA107) ----------------------------------------------------

def _cpu_source_build(root: FakeRoot) -> None:
    parts.cpus(root, parts.CASCADE_LAKE, cores_per_socket=4, threads_per_core=2)
    parts.process(root)
    parts.operating_system(root, "build18", mem_gib=32)
    _tensorflow(root, VENV, "2.10.0", CPU_BUILD, "cp36-cp36m-linux_x86_64")


register(RealReport(
    "tf-58142-xla-cpu-clusters-single-threaded", "https://github.com/tensorflow/tensorflow/issues/58142", "release",
    "heldout",
    "CPU-only TensorFlow 2.10 built from source, XLA auto-clustering on: slower, _XlaRun on the critical path runs "
    "on one thread where the stock kernels used all 8 cores; --tf_xla_max_cluster_size=10 did not help",
    expect=("XLA107",), twin="release-cpu-221-no-auto-clustering",
    build=_cpu_source_build,
    env={**USER_ENV, "TF_XLA_FLAGS": "--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit --tf_xla_max_cluster_size=10"},
    python=VENV))


# -- a system CUDA 12.3 Update 1 on PATH before the nvcc wheel, TensorFlow 2.16 (XLA004) ---------------------

A10 = parts.GpuModel("NVIDIA A10", "0x2236", (8, 6), 23028)
CONDA_ENV = f"{HOME}/.conda/envs/tf-2.16"
CONDA_PY = PythonEnv(CONDA_ENV, version="3.12.3", base_prefix=CONDA_ENV)


def _tf216_and_cuda_with_system_cuda(root: FakeRoot) -> tuple[FakeGpu, ...]:
    parts.cpus(root, parts.CASCADE_LAKE, cores_per_socket=20, threads_per_core=2)
    parts.process(root)
    parts.operating_system(root, "gpu-a10-07", os_release=parts.ROCKY_9, mem_gib=256)
    gpus = parts.nvidia_driver(root, A10, [("0000:17:00.0", 0)])
    gpu.tensorflow(root, version="2.16.1", cuda="12.3", cudnn="8", pins=gpu.PINS_216, site=CONDA_PY.site)
    gpu.wheels(root, gpu.PINS_216, site=CONDA_PY.site)
    base = "/usr/local/cuda-12.3"  # CUDA 12.3 Update 1: version.json "cuda" 12.3.1, its nvcc 12.3.103
    root.write(f"{base}/version.json", '{"cuda": {"name": "CUDA SDK", "version": "12.3.1"}, '
               '"cuda_nvcc": {"name": "CUDA NVCC", "version": "12.3.103"}}')
    root.write(f"{base}/bin/ptxas", "#!/bin/sh\n", mode=0o755)
    root.write(f"{base}/nvvm/libdevice/libdevice.10.bc", b"BC\xc0\xde")
    gpu.link(root, "/usr/local/cuda", base)
    return gpus


# The kernel's environment: the conda env, and the system CUDA 12.3's bin/ (kernel.json's "env").
TF216_ENV = {"HOME": HOME, "USER": "ada", "CONDA_PREFIX": CONDA_ENV,
             "PATH": f"{CONDA_ENV}/bin:/usr/local/cuda-12.3/bin:/usr/local/bin:/usr/bin:/bin",
             "LD_LIBRARY_PATH": wheel_library_path(CONDA_PY.site)}

register(RealReport(
    "tf-68966-ptxas-12-3-103-on-path-tf216", "https://github.com/tensorflow/tensorflow/issues/68966", "release",
    "dev",
    "tensorflow[and-cuda] 2.16.1 works in a terminal, but the Jupyter kernel (its kernel.json puts the system CUDA "
    "12.3 on PATH) dies: 'ptxas 12.3.103 has a bug that we think can affect XLA'; XLA ran the system ptxas",
    expect=("XLA004",), twin="release-pip-216-wheel-ptxas",
    build=_tf216_and_cuda_with_system_cuda,
    env=TF216_ENV, python=CONDA_PY))
