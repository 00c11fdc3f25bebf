"""Real reports of category "release" (issue 36 items 1 and 2): a setting or a tool that one TensorFlow release
gets wrong, judged against the release the thread ran. Each `expect` and `split` was written from the thread
before tfdoctor ran on the machine (two of six held out, chosen by thread)."""

from __future__ import annotations

from healthy import parts
from healthy.machines import HOME, USER_ENV, VENV
from healthy.machines_release import wheel_library_path
from healthy.parts import PythonEnv
from support import gpu_scenarios as gpu
from support import libdevice_layouts as layouts
from support.fake_site_packages import TF_2_15_DEPENDENCIES, FakeSitePackages

from tfdoctor.model import Severity
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


# -- conda's cuda-nvcc in the environment's prefix, TensorFlow 2.15 from pip (XLA001) ----------------------------
# gpu-jupyter's image before its PR #130 (custom/gpulibs.Dockerfile at aae5d43^): nvidia/cuda:12.0.1-cudnn8-runtime
# (no nvvm), docker-stacks' conda in /opt/conda, `pip install tensorflow==2.15.0 keras==2.15.0`, then `mamba install
# -c nvidia cuda-nvcc` (12.3 in January 2024: libdevice in /opt/conda/nvvm/libdevice) and ENV CUDA_PATH=/opt/conda/.
# TensorFlow 2.15's XLA searches /usr/local/cuda-12.2, /usr/local/cuda and the pip nvcc wheel only; the thread's
# fix installed the nvidia-cuda-nvcc wheel next to TensorFlow.

JUPYTER_CONDA = PythonEnv("/opt/conda", version="3.11.7", base_prefix="/opt/conda")
CUDA_120_RUNTIME = {"libcudart.so.12": "libcudart.so.12.0.146", "libcublas.so.12": "libcublas.so.12.0.2.224",
                    "libcublasLt.so.12": "libcublasLt.so.12.0.2.224", "libcufft.so.11": "libcufft.so.11.0.1.95",
                    "libcusolver.so.11": "libcusolver.so.11.4.3.1", "libcusparse.so.12": "libcusparse.so.12.0.1.140"}


def _gpu_jupyter_conda_nvcc(root: FakeRoot) -> tuple[FakeGpu, ...]:
    parts.cpus(root, parts.TIGER_LAKE, cores_per_socket=8, threads_per_core=2)
    parts.process(root)
    parts.operating_system(root, "8c1f3e2a9b7d", mem_gib=64, address="172.17.0.2", nic="eth0")
    root.write("/.dockerenv", "").write("/proc/1/cgroup", "0::/\n")
    gpus = parts.nvidia_driver(root, parts.RTX_4090, [("0000:01:00.0", 0)], version="545.29.06")
    for soname, real in CUDA_120_RUNTIME.items():  # the runtime image's toolkit: libraries, no nvvm
        gpu.lib(root, f"/usr/local/cuda-12.0/targets/x86_64-linux/lib/{real}", soname)
        gpu.link(root, f"/usr/local/cuda-12.0/targets/x86_64-linux/lib/{soname}", real)
    gpu.link(root, "/usr/local/cuda-12.0/lib64", "targets/x86_64-linux/lib")
    gpu.link(root, "/usr/local/cuda", "/usr/local/cuda-12.0")
    gpu.lib(root, "/usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.0", "libcudnn.so.8")
    gpu.link(root, "/usr/lib/x86_64-linux-gnu/libcudnn.so.8", "libcudnn.so.8.9.0")
    # The loader finds them (TensorFlow saw the GPU in the thread): the toolkit packages' ld.so.conf.d entry.
    gpu.ld_cache(root, ["/usr/local/cuda-12.0/targets/x86_64-linux/lib"])
    gpu.release(root, "2.15.0", site=JUPYTER_CONDA.site)
    # What pip resolved with tensorflow==2.15.0 keras==2.15.0 (TF_2_15_DEPENDENCIES, 2.15.1's: Keras 2.15, numpy
    # 1), with the ml-dtypes 2.15.0 pins (~=0.2.0).
    site = FakeSitePackages(root.path / JUPYTER_CONDA.site.lstrip("/"))
    site.healthy_dependencies(**{**TF_2_15_DEPENDENCIES, "ml_dtypes": "0.2.0"})
    layouts.conda_cuda_nvcc(root, JUPYTER_CONDA.prefix, version="12.3.107")
    gpu.link(root, "/usr/bin/ptxas", "/opt/conda/bin/ptxas")  # the Dockerfile's `ln -s $CONDA_DIR/bin/ptxas`
    return gpus


register(RealReport(
    "gpu-jupyter-129-conda-nvcc-unsearched-by-tf215", "https://github.com/iot-salzburg/gpu-jupyter/issues/129",
    "release", "dev",
    "gpu-jupyter image: TensorBoard's getting-started model fails with \"Can't find libdevice directory\" (searched "
    "/usr/local/cuda-12.2, /usr/local/cuda, the nvcc wheel); conda's cuda-nvcc put libdevice in /opt/conda, where "
    "TensorFlow 2.15 does not look; the fix installed the nvidia-cuda-nvcc wheel",
    expect=("XLA001",), least=Severity.ERROR, twin="release-conda-221-cuda-nvcc-in-prefix",
    build=_gpu_jupyter_conda_nvcc,
    env={"HOME": "/home/jovyan", "USER": "jovyan", "CONDA_DIR": "/opt/conda", "CUDA_PATH": "/opt/conda/",
         "PATH": "/opt/conda/bin:/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:"
                 "/usr/bin:/sbin:/bin",
         "LD_LIBRARY_PATH": "/usr/local/nvidia/lib:/usr/local/nvidia/lib64", "NVIDIA_VISIBLE_DEVICES": "all",
         "NVIDIA_DRIVER_CAPABILITIES": "compute,utility"},
    python=JUPYTER_CONDA, nvml={"driver": "545.29.06", "cuda": 12030}))
