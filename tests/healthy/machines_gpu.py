"""Healthy GPU machines: workstations, servers, containers, WSL2, MIG."""

from __future__ import annotations

from support import gpu_scenarios as gpu

from tfdoctor.testing import FakeRoot
from tfdoctor.testing.fake_nvml import FakeGpu

from . import parts
from .corpus import HealthyMachine, register
from .machines import HOME, USER_ENV, VENV
from .parts import PythonEnv

GPU_FAMILIES = ("CUDA", "CUPTI", "DRV", "XLA", "GPU")
ROOT_ENV = {"HOME": "/root", "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
# What the NVIDIA Container Toolkit sets in CUDA images (nvidia/cuda:12.2.2-cudnn8-runtime-ubuntu22.04).
CUDA_IMAGE_ENV = {**ROOT_ENV, "NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
                  "LD_LIBRARY_PATH": "/usr/local/nvidia/lib:/usr/local/nvidia/lib64",
                  "PATH": "/usr/local/nvidia/bin:/usr/local/cuda/bin:" + ROOT_ENV["PATH"]}


def _workstation(root: FakeRoot, model: parts.GpuModel = parts.RTX_4090) -> tuple[FakeGpu, ...]:
    parts.cpus(root, parts.CASCADE_LAKE, cores_per_socket=24, threads_per_core=2)
    parts.process(root)
    parts.operating_system(root, "ws-ada", mem_gib=192)
    return parts.nvidia_driver(root, model, [("0000:65:00.0", 0)])


# -- pip CUDA wheels, with a second toolkit that TensorFlow does not use ----------------------------------

def _second_toolkit(root: FakeRoot) -> tuple[FakeGpu, ...]:
    gpus = _workstation(root)
    # TensorFlow from pip with its CUDA wheels; a CUDA 12.4 toolkit from NVIDIA's .deb for other work, whose
    # libraries the .deb lists in /etc/ld.so.conf.d (TensorFlow loads its wheels' copies first).
    parts.tensorflow_2_15(root, VENV)
    base = gpu.toolkit(root, "12.4")
    gpu.link(root, "/usr/local/cuda", base)
    gpu.ld_cache(root, [f"{base}/lib64", f"{base}/extras/CUPTI/lib64"])
    return gpus


register(HealthyMachine(
    "gpu-workstation-pip-cuda-second-toolkit", (*GPU_FAMILIES, "PKG", "MP", "LAY"),
    "an RTX 4090, tensorflow[and-cuda] 2.15 in a venv, an unused CUDA 12.4 toolkit as /usr/local/cuda in "
    "ld.so.cache", _second_toolkit, env=USER_ENV, python=VENV))


# -- the system's CUDA toolkit and cuDNN, from NVIDIA's .deb packages -------------------------------------

def _system_toolkit(root: FakeRoot) -> tuple[FakeGpu, ...]:
    parts.cpus(root, parts.CASCADE_LAKE, cores_per_socket=24, threads_per_core=2)
    parts.process(root)
    parts.operating_system(root, "infer03", mem_gib=384)
    gpus = parts.nvidia_driver(root, parts.T4, [("0000:3b:00.0", 0)])
    parts.tensorflow_2_15(root, VENV, cuda_wheels=False)  # pip install tensorflow==2.15.1: CUDA from the system
    base = gpu.toolkit(root, "12.2", cudnn="8.9.7")
    gpu.link(root, "/usr/local/cuda", base)
    gpu.ld_cache(root, [f"{base}/lib64", f"{base}/extras/CUPTI/lib64"])
    return gpus


register(HealthyMachine(
    "gpu-server-system-cuda-toolkit", (*GPU_FAMILIES, "PKG"),
    "a T4 inference server, tensorflow 2.15 without [and-cuda], CUDA 12.2 and cuDNN 8.9 from NVIDIA's "
    ".deb packages in ld.so.cache, NCCL from libnccl2", _system_toolkit,
    env={**USER_ENV, "PATH": f"{VENV.prefix}/bin:/usr/local/cuda/bin:/usr/local/bin:/usr/bin:/bin"}, python=VENV))


# -- containers: profiling restricted (the driver's default) with SYS_ADMIN, or not restricted --------------

def _container(root: FakeRoot, cap_eff: str, admin_only: int) -> tuple[FakeGpu, ...]:
    parts.cpus(root, parts.SAPPHIRE_RAPIDS, sockets=2, cores_per_socket=56, threads_per_core=2, governor=None)
    gpus = parts.nvidia_driver(root, parts.A100_SXM4, [("0000:19:00.0", 0), ("0000:3b:00.0", 0),
                                                        ("0000:4c:00.0", 0), ("0000:5d:00.0", 0),
                                                        ("0000:9b:00.0", 1), ("0000:bb:00.0", 1),
                                                        ("0000:cb:00.0", 1), ("0000:db:00.0", 1)],
                               profiling_admin_only=admin_only, visible_in_container=[4])
    parts.process(root, uid=0, cap_eff=cap_eff, cpus_allowed="56-111,168-223", mems_allowed="1")
    parts.operating_system(root, "3f9c2a7d81e4", mem_gib=2048, shm="16g", address="172.17.0.3", nic="eth0",
                           nic_mbps=10000)
    root.write("/.dockerenv", "").write("/proc/1/cgroup", "0::/\n")
    parts.tensorflow_2_15(root, parts.PythonEnv("/usr/local", version="3.11.9", base_prefix="/usr/local"))
    parts.tensorflow_profiler(root, CONTAINER_PYTHON)
    return gpus


CONTAINER_PYTHON = parts.PythonEnv("/usr/local", version="3.11.9", base_prefix="/usr/local")
CONTAINER_ENV = {**ROOT_ENV, "NVIDIA_VISIBLE_DEVICES": "4", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
                 "HOSTNAME": "3f9c2a7d81e4"}
register(
    HealthyMachine(
        "container-profiling-restricted-with-sys-admin", ("CUPTI", "DRV", "GPU", "NUMA", "THR"),
        "docker run --gpus device=4 --cap-add SYS_ADMIN --cpuset-cpus/--cpuset-mems of GPU 4's node, "
        "RmProfilingAdminOnly=1, the profiler plugin installed",
        lambda root: _container(root, parts.CAP_DOCKER_SYS_ADMIN, 1), env=CONTAINER_ENV, python=CONTAINER_PYTHON),
    HealthyMachine(
        "container-profiling-open-default-caps", ("CUPTI", "DRV", "GPU", "NUMA", "THR"),
        "docker run --gpus device=4 with Docker's default capabilities on a host whose driver is loaded with "
        "NVreg_RestrictProfilingToAdminUsers=0, the profiler plugin installed",
        lambda root: _container(root, parts.CAP_DOCKER_DEFAULT, 0), env=CONTAINER_ENV, python=CONTAINER_PYTHON),
)


# -- MIG: an A100 split into instances, the job given one of them ------------------------------------------

MIG_UUID = "MIG-4f5c8e2a-9b1d-5e7f-a3c6-2d8b0e4f1a97"


def _mig(root: FakeRoot) -> tuple[FakeGpu, ...]:
    parts.cpus(root, parts.MILAN, sockets=2, cores_per_socket=64, threads_per_core=2)
    parts.process(root)
    parts.operating_system(root, "mig02", mem_gib=1024)
    (a100,) = parts.nvidia_driver(root, parts.A100_SXM4, [("0000:81:00.0", 1)])
    parts.tensorflow_2_15(root, VENV)
    return (FakeGpu(**{**a100.__dict__, "mig": (True, True),
                       "mig_uuids": [MIG_UUID, "MIG-0b7d2c41-6e3a-5f88-91c2-7a4e5d6f8b03"]}),)


register(HealthyMachine(
    "gpu-mig-instance", ("GPU", "CUDA", "DRV"),
    "an A100 in MIG mode with two 3g.40gb instances; the job is given one by its MIG UUID", _mig,
    env={**USER_ENV, "CUDA_VISIBLE_DEVICES": MIG_UUID}, python=VENV))


# -- WSL2: the Windows driver seen through /usr/lib/wsl and /dev/dxg -----------------------------------------

def _wsl2(root: FakeRoot) -> tuple[FakeGpu, ...]:
    parts.cpus(root, parts.RAPHAEL_WSL, cores_per_socket=16, threads_per_core=2, governor=None)
    parts.process(root)
    parts.operating_system(root, "DESKTOP-7Q2KD4M", mem_gib=32, address="172.29.118.42", nic="eth0",
                           nic_mbps=10000, cmdline="initrd=\\initrd.img WSL_ROOT_INIT=1 panic=-1 nr_cpus=32 "
                           "hv_utils.timesync_implicit=1 swiotlb=force pty.legacy_count=0", pci_others=False)
    # The only PCI function a WSL2 guest sees: Hyper-V's GPU paravirtualisation, "Microsoft Corporation
    # Basic Render Driver" (vendor 0x1414), not the NVIDIA GPU itself.
    root.pci_gpu("c2d6:00:00.0", -1, "", vendor="0x1414", pci_class="0x030200")
    root.write("/proc/version", "Linux version 5.15.153.1-microsoft-standard-WSL2 (root@941d701f84f1) "
                                "(gcc (GCC) 11.2.0, GNU ld (GNU Binutils) 2.37) #1 SMP Fri Mar 29 23:14:13 UTC 2024\n")
    root.write("/proc/sys/kernel/osrelease", "5.15.153.1-microsoft-standard-WSL2\n")
    root.write("/dev/dxg", "")
    for name in ("libcuda.so", "libcuda.so.1", "libcuda.so.1.1", "libnvidia-ml.so.1", "libdxcore.so"):
        gpu.lib(root, f"/usr/lib/wsl/lib/{name}", name if not name.startswith("libcuda") else "libcuda.so.1")
    root.write("/etc/ld.so.conf.d/ld.wsl.conf", "/usr/lib/wsl/lib\n")
    gpu.ld_cache(root, ["/usr/lib/wsl/lib"])
    parts.tensorflow_2_15(root, VENV)
    # NVML answers through /usr/lib/wsl/lib/libnvidia-ml.so.1; the GPU has no PCI function in the VM.
    return (parts.fake_gpu(parts.RTX_4090, "0000:01:00.0", "GPU-7d1c0f9e-2b4a-4c8e-9f31-5a6b7c8d9e0f"),)


register(HealthyMachine(
    "wsl2-gpu-workstation", ("DRV", "CUDA", "PKG", "THR", "CPU"),
    "Windows 11 with an RTX 4090, Ubuntu 22.04 in WSL2, tensorflow[and-cuda] 2.15 in a venv", _wsl2,
    env={**USER_ENV, "WSL_DISTRO_NAME": "Ubuntu-22.04"}, python=VENV))





# -- machines recorded by `python tests/support/gpu_scenarios.py` (tests/snapshots/gpu/healthy-*.json), replayed -----

register(
    HealthyMachine("recorded-gpu-pip-cuda12", GPU_FAMILIES,
                   "recorded: an A100 with tensorflow[and-cuda] 2.15's pip CUDA wheels",
                   facts="tests/snapshots/gpu/healthy-cuda12-pip.json"),
    HealthyMachine("recorded-gpu-system-toolkit", GPU_FAMILIES,
                   "recorded: a V100 with TensorFlow 2.13 on the CUDA 11.8 toolkit found through ld.so.cache",
                   facts="tests/snapshots/gpu/healthy-system-toolkit.json"),
    HealthyMachine("recorded-cpu-laptop", ("DRV", "CUDA"), "recorded: a laptop without a GPU, TensorFlow 2.15",
                   facts="tests/snapshots/gpu/healthy-cpu-laptop.json"),
)


# -- a conda environment set up as TensorFlow's install guide says (TensorFlow 2.12) -------------------------

CONDA = PythonEnv(f"{HOME}/miniconda3/envs/tf", version="3.10.13", base_prefix=f"{HOME}/miniconda3")
# TensorFlow 2.12.1's METADATA (cp310 manylinux2014 wheel).
TF_2_12_REQUIRES = (
    "absl-py>=1.0.0", "astunparse>=1.6.0", "flatbuffers>=2.0", "gast<=0.4.0,>=0.2.1", "google-pasta>=0.1.1",
    "h5py>=2.9.0", "jax>=0.3.15", "libclang>=13.0.0", "numpy<1.24,>=1.22", "opt-einsum>=2.3.2", "packaging",
    "protobuf!=4.21.0,!=4.21.1,!=4.21.2,!=4.21.3,!=4.21.4,!=4.21.5,<5.0.0dev,>=3.20.3", "setuptools",
    "six>=1.12.0", "termcolor>=1.1.0", "typing-extensions>=3.6.6", "wrapt<1.15,>=1.11.0",
    'tensorflow-io-gcs-filesystem>=0.23.1; platform_machine != "arm64" or platform_system != "Darwin"',
    "grpcio<2.0,>=1.24.3", "tensorboard<2.13,>=2.12", "tensorflow-estimator<2.13,>=2.12.0", "keras<2.13,>=2.12.0",
)
TF_2_12_DEPENDENCIES = {
    "absl_py": "1.4.0", "astunparse": "1.6.3", "flatbuffers": "23.5.26", "gast": "0.4.0", "google_pasta": "0.2.0",
    "h5py": "3.9.0", "jax": "0.4.13", "ml_dtypes": "0.2.0", "libclang": "16.0.6", "numpy": "1.23.5",
    "opt_einsum": "3.3.0", "packaging": "23.1", "protobuf": "4.23.4", "setuptools": "68.0.0", "six": "1.16.0",
    "termcolor": "2.3.0", "typing_extensions": "4.7.1", "wrapt": "1.14.1", "tensorflow_io_gcs_filesystem": "0.33.0",
    "grpcio": "1.56.2", "tensorboard": "2.12.3", "tensorflow_estimator": "2.12.0", "keras": "2.12.0",
}
BUILD_INFO_2_12 = (
    "import collections\n\nbuild_info = collections.OrderedDict([('cpu_compiler', '/dt9/usr/bin/gcc'), "
    "('cuda_compute_capabilities', ['sm_35', 'sm_50', 'sm_60', 'sm_70', 'sm_75', 'compute_80']), "
    "('cuda_version', '11.8'), ('cudnn_version', '8'), ('is_cuda_build', True), ('is_rocm_build', False), "
    "('is_tensorrt_build', True)])\n"
)
# conda-forge cudatoolkit 11.8.0 puts the runtime libraries, CUPTI and libdevice in $CONDA_PREFIX/lib.
CUDATOOLKIT_118 = {**gpu.TOOLKIT_LIBS["11.8"], "libcurand.so.10": "libcurand.so.10.3.0.86",
                   "libnvrtc.so.11.2": "libnvrtc.so.11.8.89", "libcupti.so.11.8": "libcupti.so.2022.3.0"}
RTX_2080_TI = parts.GpuModel("NVIDIA GeForce RTX 2080 Ti", "0x1e07", (7, 5), 11264, ecc=False, remapping=False,
                             pcie=(3, 16))


def _conda(root: FakeRoot) -> tuple[FakeGpu, ...]:
    parts.cpus(root, parts.MILAN, cores_per_socket=16, threads_per_core=2)
    parts.process(root)
    parts.operating_system(root, "lab-ws2", mem_gib=128)
    gpus = parts.nvidia_driver(root, RTX_2080_TI, [("0000:21:00.0", 0)], version="535.171.04")
    lib = f"{CONDA.prefix}/lib"
    for soname, real in CUDATOOLKIT_118.items():
        gpu.lib(root, f"{lib}/{real}", soname)
        gpu.link(root, f"{lib}/{soname}", real)
    root.write(f"{lib}/libdevice.10.bc", b"BC\xc0\xde")
    # conda install -c nvidia cuda-nvcc=11.8.89; mkdir -p $CONDA_PREFIX/lib/nvvm/libdevice; cp ... (the guide)
    root.write(f"{lib}/nvvm/libdevice/libdevice.10.bc", b"BC\xc0\xde")
    root.write(f"{CONDA.prefix}/bin/ptxas", "\x7fELF", mode=0o755)
    root.write(f"{CONDA.prefix}/conda-meta/cuda-nvcc-11.8.89-0.json", '{"name": "cuda-nvcc", "version": "11.8.89"}')
    root.write(f"{CONDA.prefix}/conda-meta/cudatoolkit-11.8.0-h4ba93d1_13.json",
               '{"name": "cudatoolkit", "version": "11.8.0"}')
    site = parts.FakeSitePackages(root.path / CONDA.site.lstrip("/"))
    site.tensorflow(name="tensorflow", version="2.12.1", build_info=BUILD_INFO_2_12, requires=TF_2_12_REQUIRES,
                    requires_python=">=3.8", tags=("cp310-cp310-manylinux_2_17_x86_64.manylinux2014_x86_64",))
    for dist, version in TF_2_12_DEPENDENCIES.items():
        site.dist(dist, version, top_level=(dist,))
    # pip install nvidia-cudnn-cu11==8.6.0.163
    site.dist("nvidia-cudnn-cu11", "8.6.0.163", tags=("py3-none-manylinux1_x86_64",), top_level=("nvidia",))
    gpu.lib(root, f"{CONDA.site}/nvidia/cudnn/lib/libcudnn.so.8", "libcudnn.so.8")
    root.write(f"{CONDA.site}/nvidia/cudnn/__init__.py", "")
    return gpus


register(HealthyMachine(
    "conda-cuda-as-install-guide", (*GPU_FAMILIES, "PKG"),
    "TensorFlow 2.12's install guide followed: conda cudatoolkit 11.8, pip nvidia-cudnn-cu11, "
    "LD_LIBRARY_PATH and XLA_FLAGS from the conda env's activate.d, an RTX 2080 Ti", _conda,
    env={"HOME": HOME, "USER": "ada", "CONDA_PREFIX": CONDA.prefix, "CONDA_DEFAULT_ENV": "tf",
         "PATH": f"{CONDA.prefix}/bin:{HOME}/miniconda3/condabin:/usr/local/bin:/usr/bin:/bin",
         "LD_LIBRARY_PATH": f":{CONDA.prefix}/lib/:{CONDA.site}/nvidia/cudnn/lib",
         "XLA_FLAGS": f"--xla_gpu_cuda_data_dir={CONDA.prefix}/lib/"},
    python=CONDA))


# -- a GPU shared with another user's job, TensorFlow growing its memory as it needs --------------------------

def _shared_gpu(root: FakeRoot) -> tuple[FakeGpu, ...]:
    parts.cpus(root, parts.MILAN, sockets=1, cores_per_socket=64, threads_per_core=2)
    parts.process(root)
    parts.operating_system(root, "share01", mem_gib=512)
    (a100,) = parts.nvidia_driver(root, parts.A100_SXM4, [("0000:41:00.0", 0)], profiling_admin_only=0)
    parts.tensorflow_2_15(root, VENV)
    # Another user's notebook holds 9 GiB of the 80 (a third of what TensorFlow would grab up front).
    return (FakeGpu(**{**a100.__dict__, "memory_used_mib": 9230, "processes": [(811342, 9216)],
                       "utilization": 12, "clock_reasons": 0}),)


register(HealthyMachine(
    "gpu-shared-with-memory-growth", ("GPU", "CUDA", "DRV", "MP"),
    "an A100 80GB shared with another user's notebook (9 GiB), TF_FORCE_GPU_ALLOW_GROWTH=true, mixed_float16",
    _shared_gpu, env={**USER_ENV, "TF_FORCE_GPU_ALLOW_GROWTH": "true", "TFDOCTOR_MIXED_PRECISION": "mixed_float16"},
    python=VENV))


# -- GPU runtime and XLA settings as NVIDIA's performance guides give them ---------------------------------

def _tuned(root: FakeRoot) -> tuple[FakeGpu, ...]:
    parts.cpus(root, parts.SAPPHIRE_RAPIDS, sockets=1, cores_per_socket=32, threads_per_core=2)
    parts.process(root)
    parts.operating_system(root, "l40s-01", mem_gib=512)
    gpus = parts.nvidia_driver(root, parts.L40S, [("0000:17:00.0", 0), ("0000:31:00.0", 0)],
                               profiling_admin_only=0)
    parts.tensorflow_2_15(root, VENV)
    parts.keras_json(root, HOME)
    return gpus


register(HealthyMachine(
    "gpu-tuned-runtime-xla-amp", ("GPU", "XLA", "MP", "LAY", "NUMA", "DIST"),
    "two L40S in one process (MirroredStrategy), gpu_private threads, cuda_malloc_async, XLA auto-jit, "
    "mixed_float16, keras.json channels_last", _tuned,
    env={**USER_ENV, "TF_GPU_THREAD_MODE": "gpu_private", "TF_GPU_THREAD_COUNT": "2",
         "TF_GPU_ALLOCATOR": "cuda_malloc_async", "TF_XLA_FLAGS": "--tf_xla_auto_jit=2",
         "XLA_FLAGS": "--xla_gpu_autotune_level=4", "TFDOCTOR_MIXED_PRECISION": "mixed_float16",
         "TF_CPP_MIN_LOG_LEVEL": "1"}, python=VENV))


# -- channels_first in float32 on a GPU (cuDNN's NCHW kernels) ------------------------------------------------

def _channels_first(root: FakeRoot) -> tuple[FakeGpu, ...]:
    parts.cpus(root, parts.CASCADE_LAKE, cores_per_socket=16, threads_per_core=2)
    parts.process(root)
    parts.operating_system(root, "v100-ws", mem_gib=128)
    gpus = parts.nvidia_driver(root, parts.GpuModel("Tesla V100-PCIE-32GB", "0x1db6", (7, 0), 32768,
                                                    remapping=False, pcie=(3, 16)),
                               [("0000:3b:00.0", 0)], profiling_admin_only=0)
    parts.tensorflow_2_15(root, VENV)
    parts.keras_json(root, HOME, data_format="channels_first")
    return gpus


register(HealthyMachine(
    "gpu-channels-first-float32", ("LAY", "MP", "GPU", "DRV"),
    "a V100 workstation whose keras.json asks for channels_first, training in float32", _channels_first,
    env=USER_ENV, python=VENV))


# -- a cloud VM with one GPU: one NUMA node, the GPU's PCI function reports none (-1) ----------------------------

A10G = parts.GpuModel("NVIDIA A10G", "0x2237", (8, 6), 23028, remapping=True, pcie=(4, 16))


def _cloud_vm(root: FakeRoot) -> tuple[FakeGpu, ...]:
    epyc_7r32 = parts.CpuModel("AMD EPYC 7R32", "AuthenticAMD", parts.ROME.flags.replace(" svm", "") + " hypervisor")
    parts.cpus(root, epyc_7r32, cores_per_socket=2, threads_per_core=2, governor=None)
    parts.process(root)
    parts.operating_system(root, "ip-172-31-40-9", mem_gib=16, address="172.31.40.9", nic="ens5", nic_mbps=0,
                           cmdline="BOOT_IMAGE=/boot/vmlinuz-6.5.0-1020-aws root=PARTUUID=8d1c ro console=tty1 "
                                   "console=ttyS0 nvme_core.io_timeout=4294967295", pci_others=False)
    root.pci_gpu("0000:00:05.0", -1, "", vendor="0x1d0f", pci_class="0x020000")  # ENA
    gpus = parts.nvidia_driver(root, A10G, [("0000:00:1e.0", -1)], version="535.183.01")
    parts.tensorflow_2_15(root, VENV)
    return gpus


register(HealthyMachine(
    "cloud-vm-one-gpu-no-numa", ("NUMA", "GPU", "CUDA", "DRV", "THR"),
    "an AWS g5.xlarge (A10G, 4 vCPUs, one NUMA node; the GPU's numa_node is -1), tensorflow[and-cuda] 2.15",
    _cloud_vm, env={**USER_ENV, "HOME": "/home/ubuntu", "USER": "ubuntu"}, python=VENV,
    nvml={"driver": "535.183.01", "cuda": 12020}))


# -- two GeForce RTX 4090 in one workstation: no P2P in hardware, NCCL told so -------------------------------

def _two_4090(root: FakeRoot) -> tuple[FakeGpu, ...]:
    parts.cpus(root, parts.CpuModel("AMD Ryzen Threadripper PRO 5975WX 32-Cores", "AuthenticAMD",
                                    parts.MILAN.flags), cores_per_socket=32, threads_per_core=2)
    parts.process(root)
    parts.operating_system(root, "tr-ws", mem_gib=256)
    gpus = parts.nvidia_driver(root, parts.RTX_4090, [("0000:01:00.0", 0), ("0000:41:00.0", 0)],
                               profiling_admin_only=0)
    parts.tensorflow_2_15(root, VENV)
    return gpus


register(HealthyMachine(
    "two-rtx4090-nccl-p2p-off", ("DIST", "GPU", "NUMA", "MP", "CUDA"),
    "two RTX 4090 (GeForce Ada: no peer-to-peer) with MirroredStrategy, NCCL_P2P_DISABLE=1 as NVIDIA advises for "
    "them, mixed_float16", _two_4090,
    env={**USER_ENV, "NCCL_P2P_DISABLE": "1", "TFDOCTOR_MIXED_PRECISION": "mixed_float16"}, python=VENV))


# -- an A100 server after `tfdoctor profile`: what the profiler recorded of a healthy training step ----------

def _profile_section() -> dict:
    """profile_section() over the run's own timings and the XSpace summary of a healthy mixed_float16 step
    (tests/support/gpu_xspace.py "healthy": tensor-core kernels, input and copies hidden under compute)."""
    from support.gpu_xspace import SCENARIOS, build

    from tfdoctor.profile.facts import profile_section
    from tfdoctor.profile.runner import RunResult
    from tfdoctor.profile.xspace import summarize_xspace, xplane_module

    pb = xplane_module()
    xspace = pb if not hasattr(pb, "XSpace") else summarize_xspace(build(pb, SCENARIOS["healthy"]))
    steps = tuple(0.0100 + 0.00002 * (i % 5) for i in range(30))
    run = RunResult(ok=True, step_seconds=steps, input_seconds=tuple(0.0002 for _ in steps), import_seconds=2.9,
                    wall_seconds=14.2, cpu_steal=0.0, tf_version="2.15.1", policy="mixed_float16",
                    devices=({"name": "/device:CPU:0", "type": "CPU"}, {"name": "/device:GPU:0", "type": "GPU"}),
                    logdir="/tmp/tfdoctor-profile-8k2f")
    return profile_section(run, "cnn", xspace, xspace_path="/tmp/tfdoctor-profile-8k2f/plugins/profile/"
                                                           "2026_11_23_15_40_12/a100-07.xplane.pb")


def _profiled_a100(root: FakeRoot) -> tuple[FakeGpu, ...]:
    parts.cpus(root, parts.MILAN, sockets=1, cores_per_socket=32, threads_per_core=2)
    parts.process(root)
    parts.operating_system(root, "a100-07", mem_gib=512)
    gpus = parts.nvidia_driver(root, parts.A100_SXM4, [("0000:41:00.0", 0)], profiling_admin_only=0)
    parts.tensorflow_2_15(root, VENV)
    parts.tensorflow_profiler(root, VENV)
    return gpus


register(HealthyMachine(
    "gpu-profiled-healthy-steps", ("PROF", "CUPTI", "MP", "GPU"),
    "an A100 server after `tfdoctor profile` with mixed_float16: tensor-core kernels, input under 2 %, GPU "
    "activity captured (profiling open to users), no steal", _profiled_a100,
    env={**USER_ENV, "TFDOCTOR_MIXED_PRECISION": "mixed_float16"}, python=VENV,
    sections={"profile": _profile_section()}))

# The same server after `tfdoctor profile --measure-mixed-precision`: the declared policy measured against
# float32 on the CNN and found faster (the healthy twin of PROF004, which reports a measured slowdown).
MEASURED_FASTER = {"verdict": "faster", "policy": "mixed_float16", "why": "declared (TFDOCTOR_MIXED_PRECISION)",
                   "summary": "mixed_float16 against float32: step time ×0.52 (0.48–0.56, 99 % confidence)",
                   "metric": "step time", "workload": "cnn", "seconds": 41.5, "budget": 60.0,
                   "ratio": 0.52, "low": 0.48, "high": 0.56, "confidence": 0.99}
register(HealthyMachine(
    "gpu-profiled-mixed-precision-measured-faster", ("PROF", "MP"),
    "the A100 server above, mixed_float16 measured against float32 and found about twice as fast",
    _profiled_a100, env={**USER_ENV, "TFDOCTOR_MIXED_PRECISION": "mixed_float16"}, python=VENV,
    sections={"profile": {**_profile_section(), "mixed_precision": MEASURED_FASTER,
                          "mixed_precision_policy": "mixed_float16", "mixed_precision_speedup": 1 / 0.52}}))


# -- a Kubernetes GPU pod: two GPUs from the device plugin, /dev/shm from a memory emptyDir, a CPU quota -------

def _kubernetes_gpu_pod(root: FakeRoot) -> tuple[FakeGpu, ...]:
    parts.cpus(root, parts.ROME, sockets=2, cores_per_socket=64, threads_per_core=2, governor=None)
    gpus = parts.nvidia_driver(root, parts.A100_SXM4, [("0000:07:00.0", 0), ("0000:0f:00.0", 0),
                                                        ("0000:47:00.0", 0), ("0000:4e:00.0", 0),
                                                        ("0000:87:00.0", 1), ("0000:90:00.0", 1),
                                                        ("0000:b7:00.0", 1), ("0000:bd:00.0", 1)],
                               profiling_admin_only=0, visible_in_container=[2, 3])
    # A Guaranteed pod under the kubelet's static CPU manager and the topology manager's single-numa-node
    # policy: 16 whole cores (32 CPUs) of the GPUs' node as its cpuset, and the CFS quota of its limit.
    parts.process(root, uid=1000, cpus_allowed="16-31,144-159")
    # /dev/shm: an emptyDir with medium: Memory, sizeLimit: 16Gi, mounted over the runtime's 64 MiB.
    parts.operating_system(root, "bert-ft-worker-0", os_release=parts.UBUNTU_2204, mem_gib=1024, shm="16777216k",
                           address="10.244.7.31", nic="eth0", nic_mbps=100000, pci_others=False)
    root.cgroup_v2("3200000 100000", cpuset="16-31,144-159")
    root.write("/proc/1/cgroup", "0::/\n")
    parts.tensorflow_2_15(root, parts.PythonEnv("/usr/local", base_prefix="/usr/local"))
    return gpus


register(HealthyMachine(
    "kubernetes-gpu-pod-two-gpus", ("DIST", "GPU", "CUDA", "DRV", "THR", "NUMA"),
    "a Guaranteed pod with nvidia.com/gpu: 2 and cpu: 32 on a DGX A100 (static CPU manager, single-numa-node "
    "topology), /dev/shm from a 16Gi memory emptyDir, MirroredStrategy, intra-op threads = its 16 cores",
    _kubernetes_gpu_pod,
    env={"HOME": "/home/jovyan", "PATH": "/usr/local/bin:/usr/bin:/bin", "KUBERNETES_SERVICE_HOST": "10.96.0.1",
         "HOSTNAME": "bert-ft-worker-0", "NVIDIA_VISIBLE_DEVICES": "GPU-02,GPU-03",
         "NVIDIA_DRIVER_CAPABILITIES": "compute,utility", "TF_NUM_INTRAOP_THREADS": "16",
         "TF_NUM_INTEROP_THREADS": "2", "TF_GPU_THREAD_MODE": "gpu_private",
         "TFDOCTOR_MIXED_PRECISION": "mixed_float16"},
    python=parts.PythonEnv("/usr/local", base_prefix="/usr/local"),
    nvml={"driver": "550.54.15", "cuda": 12040}))
