"""Healthy machines of launchers, multi-worker networking and severities that depend on use (issue 35):
one GPU per Slurm task under ConstrainDevices, a proxy whose no_proxy covers the cluster, XLA unused on an
image without libdevice, one process on both NUMA nodes of an NVLink node."""

from __future__ import annotations

import dataclasses
import json

from support import gpu_scenarios as gpu
from support.fake_site_packages import FakeSitePackages

from tfdoctor.testing import FakeRoot
from tfdoctor.testing.fake_nvml import FakeGpu

from . import parts
from .corpus import HealthyMachine, register
from .machines import USER_ENV, VENV
from .machines_cluster import DGX_GPUS, FOUR_GPUS, SLURM_ENV, TF_CONFIG, _four_gpu_server, _multi_worker

# -- Slurm: `srun --ntasks-per-node=4 --gpus-per-task=1 --cpus-per-task=24 --cpu-bind=cores` on a 2-socket,
# 4-GPU node whose cgroup.conf has ConstrainDevices=yes. Task 2: its device cgroup admits /dev/nvidia2 only,
# so NVML (and CUDA) list one GPU, while /proc/driver/nvidia and the PCI bus list all four; Slurm sets
# CUDA_VISIBLE_DEVICES=0 (the one device the task can open) and binds it to 12 cores of GPU 2's socket.

def _one_gpu_per_task(root: FakeRoot) -> tuple[FakeGpu, ...]:
    return (_one_gpu_per_task_node(root)[2],)


def _one_gpu_per_task_node(root: FakeRoot) -> tuple[FakeGpu, ...]:
    """The node of that step, with NVML's answer for all four GPUs (what a task sees without a device cgroup)."""
    parts.cpus(root, parts.CASCADE_LAKE, sockets=2, cores_per_socket=24, threads_per_core=2)
    parts.process(root, cpus_allowed="24-35,72-83", mems_allowed="0-1")
    parts.operating_system(root, "gpu042", os_release=parts.ROCKY_9, mem_gib=768, address="10.10.4.42",
                           nic="ens1f0", nic_mbps=100000)
    root.tool("numactl").tool("taskset")
    gpus = parts.nvidia_driver(root, parts.A100_SXM4, FOUR_GPUS, profiling_admin_only=0)
    # The device cgroup hides nothing from /dev or sysfs: it refuses open(2), so NVML lists only GPU 2.
    for minor in range(4):
        root.write(f"/dev/nvidia{minor}", "")
    root.cgroup_v2("max 100000", path="/system.slice/slurmstepd.scope/job_7311/step_0/user/task_2",
                   cpuset="0-95")
    parts.tensorflow_2_15(root, VENV)
    return gpus


SLURM_TASK_ENV = {
    **USER_ENV, "SLURM_JOB_ID": "7311", "SLURM_STEP_ID": "0", "SLURM_PROCID": "2", "SLURM_LOCALID": "2",
    "SLURM_NODEID": "0", "SLURM_NNODES": "1", "SLURM_NTASKS": "4", "SLURM_NTASKS_PER_NODE": "4",
    "SLURM_STEP_TASKS_PER_NODE": "4", "SLURM_TASKS_PER_NODE": "4", "SLURM_CPUS_PER_TASK": "24",
    "SLURM_CPU_BIND": "quiet,mask_cpu:0x000000000FFF000000000FFF", "SLURM_CPU_BIND_TYPE": "mask_cpu:",
    "SLURM_GPUS_PER_TASK": "1", "SLURM_GPUS_ON_NODE": "4", "SLURM_JOB_GPUS": "0,1,2,3", "SLURM_STEP_GPUS": "2",
    "GPU_DEVICE_ORDINAL": "0", "CUDA_VISIBLE_DEVICES": "0", "SLURM_JOB_NODELIST": "gpu042",
    "OMP_NUM_THREADS": "12",
}
register(HealthyMachine(
    "slurm-one-gpu-per-task-constrained", ("GPU", "NUMA", "THR", "DIST"),
    "task 2 of `srun --ntasks-per-node=4 --gpus-per-task=1 --cpus-per-task=24 --cpu-bind=cores` with "
    "ConstrainDevices=yes: NVML lists its one GPU, the PCI bus all four", _one_gpu_per_task,
    env=SLURM_TASK_ENV, python=VENV))


def _one_gpu_per_task_cgroup_v1(root: FakeRoot) -> tuple[FakeGpu, ...]:
    # The same step on a cgroup v1 node (RHEL 8): task/cgroup gives the task a cpuset of its own CPUs, so the
    # node's other CPUs are not visible to it either.
    gpus = _one_gpu_per_task(root)
    root.cgroup_v1(path="/slurm/uid_1000/job_7311/step_0/task_2", cpuset="24-35,72-83")
    return gpus


register(HealthyMachine(
    "slurm-one-gpu-per-task-constrained-cgroup-v1", ("GPU", "NUMA", "THR", "DIST"),
    "the same task on a cgroup v1 node, whose task cgroup's cpuset holds only its 24 CPUs",
    _one_gpu_per_task_cgroup_v1, env=SLURM_TASK_ENV, python=VENV))


# -- Horovod under srun, every task seeing the node's four GPUs and selecting gpus[hvd.local_rank()] ------------

def _horovod_all_gpus_visible(root: FakeRoot) -> tuple[FakeGpu, ...]:
    gpus = _four_gpu_server(root, "gpu017", cpus_allowed="36-47,84-95", mems_allowed="0-1")
    root.cgroup_v2("max 100000", path="/system.slice/slurmstepd.scope/job_4242/step_0/user/task_3", cpuset="0-95")
    horovod(root, VENV)
    return gpus


def horovod(root: FakeRoot, env: parts.PythonEnv) -> None:
    """`HOROVOD_GPU_OPERATIONS=NCCL pip install horovod[tensorflow]==0.28.1`: an sdist built on the machine."""
    site = FakeSitePackages(root.path / env.site.lstrip("/"))
    site.dist("horovod", "0.28.1", requires=("cloudpickle", "psutil", "pyyaml", "packaging"),
              top_level=("horovod",), tags=("cp311-cp311-linux_x86_64",))


register(HealthyMachine(
    "slurm-horovod-rank-sees-node-gpus", ("DIST", "GPU", "NUMA"),
    "rank 3 of `srun --ntasks-per-node=4 --gpus-per-node=4 python train_hvd.py`: every task sees the four GPUs, "
    "so Horovod's gpus[hvd.local_rank()] is GPU 3", _horovod_all_gpus_visible, env=SLURM_ENV, python=VENV))


# -- a multi-worker job behind a corporate proxy, with no_proxy exempting the cluster's domain and subnet -------

PROXY_ENV = {"http_proxy": "http://proxy.corp.example:3128", "https_proxy": "http://proxy.corp.example:3128",
             "HTTP_PROXY": "http://proxy.corp.example:3128", "HTTPS_PROXY": "http://proxy.corp.example:3128",
             "no_proxy": "localhost,127.0.0.1,.cluster.local,10.10.0.0/16",
             "NO_PROXY": "localhost,127.0.0.1,.cluster.local,10.10.0.0/16"}
register(HealthyMachine(
    "multi-worker-behind-proxy-with-no-proxy", ("DIST", "NUMA", "THR"),
    "worker 0 of a two-node MultiWorkerMirroredStrategy job on a network whose outbound traffic goes through "
    "a proxy; no_proxy exempts .cluster.local and the cluster's 10.10.0.0/16", _multi_worker,
    env={**USER_ENV, **PROXY_ENV, "TF_CONFIG": json.dumps(TF_CONFIG), "NCCL_SOCKET_IFNAME": "ens1f0",
         "CUDA_VISIBLE_DEVICES": "0,1", "TFDOCTOR_PARAMS": "25.6M", "TF_NUM_INTRAOP_THREADS": "24",
         "TF_NUM_INTEROP_THREADS": "2"},
    python=VENV))


# -- XLA unused: TensorFlow 2.10 (Keras 2.10, whose optimizers do not compile with XLA) in a CUDA runtime image,
# which ships no nvcc, hence no libdevice. From Keras 2.11 the optimizers' jit_compile=True makes every fit() on a
# GPU compile with XLA, so only an older Keras (or nothing of Keras) leaves libdevice unneeded.

PY310 = parts.PythonEnv("/usr/local", version="3.10.12", base_prefix="/usr/local")
# tensorflow 2.10.1's METADATA (cp310 manylinux2014 wheel), built with CUDA 11.2 and cuDNN 8.1.
TF_2_10_REQUIRES = (
    "absl-py>=1.0.0", "astunparse>=1.6.0", "flatbuffers>=2.0", "gast<=0.4.0,>=0.2.1", "google-pasta>=0.1.1",
    "h5py>=2.9.0", "keras-preprocessing>=1.1.1", "libclang>=13.0.0", "numpy>=1.20", "opt-einsum>=2.3.2",
    "packaging", "protobuf<3.20,>=3.9.2", "setuptools", "six>=1.12.0", "termcolor>=1.1.0",
    "typing-extensions>=3.6.6", "wrapt>=1.11.0", "tensorflow-io-gcs-filesystem>=0.23.1", "grpcio<2.0,>=1.24.3",
    "tensorboard<2.11,>=2.10", "tensorflow-estimator<2.11,>=2.10.0", "keras<2.11,>=2.10.0",
)
TF_2_10_DEPENDENCIES = {
    "absl_py": "1.4.0", "astunparse": "1.6.3", "flatbuffers": "23.5.26", "gast": "0.4.0", "google_pasta": "0.2.0",
    "h5py": "3.9.0", "keras_preprocessing": "1.1.2", "libclang": "16.0.6", "numpy": "1.23.5", "opt_einsum": "3.3.0",
    "packaging": "23.1", "protobuf": "3.19.6", "setuptools": "68.0.0", "six": "1.16.0", "termcolor": "2.3.0",
    "typing_extensions": "4.7.1", "wrapt": "1.15.0", "tensorflow_io_gcs_filesystem": "0.33.0", "grpcio": "1.56.2",
    "tensorboard": "2.10.1", "tensorflow_estimator": "2.10.0", "keras": "2.10.0",
}
BUILD_INFO_2_10 = (
    "import collections\n\nbuild_info = collections.OrderedDict([('cpu_compiler', '/dt9/usr/bin/gcc'), "
    "('cuda_compute_capabilities', ['sm_35', 'sm_50', 'sm_60', 'sm_70', 'sm_75', 'compute_80']), "
    "('cuda_version', '11.2'), ('cudnn_version', '8'), ('is_cuda_build', True), ('is_rocm_build', False), "
    "('is_tensorrt_build', True)])\n"
)


def _runtime_image_without_libdevice(root: FakeRoot) -> tuple[FakeGpu, ...]:
    parts.cpus(root, parts.CASCADE_LAKE, cores_per_socket=24, threads_per_core=2)
    parts.process(root, uid=0, cap_eff=parts.CAP_DOCKER_DEFAULT)
    parts.operating_system(root, "7c1e9b2d4f60", mem_gib=384, shm="8g", address="172.17.0.4", nic="eth0",
                           nic_mbps=10000)
    root.write("/.dockerenv", "").write("/proc/1/cgroup", "0::/\n")
    gpus = parts.nvidia_driver(root, parts.T4, [("0000:3b:00.0", 0)])
    # tensorflow/tensorflow:2.10.1-gpu: CUDA 11.2's libraries, cuda-command-line-tools (CUPTI) and cuDNN 8.1
    # from NVIDIA's .deb packages, its CUPTI folder on LD_LIBRARY_PATH; no nvcc, so no nvvm/libdevice.
    base = gpu.toolkit(root, "11.2", cudnn="8.1.0", libdevice=False)
    gpu.link(root, "/usr/local/cuda", base)
    gpu.ld_cache(root, [f"{base}/lib64"])
    site = FakeSitePackages(root.path / PY310.site.lstrip("/"))
    site.tensorflow(name="tensorflow", version="2.10.1", build_info=BUILD_INFO_2_10, requires=TF_2_10_REQUIRES,
                    requires_python=">=3.7", tags=("cp310-cp310-manylinux_2_17_x86_64.manylinux2014_x86_64",))
    for dist, version in TF_2_10_DEPENDENCIES.items():
        site.dist(dist, version, top_level=(dist,))
    return gpus


register(HealthyMachine(
    "gpu-runtime-image-xla-unused-without-libdevice", ("XLA", "CUDA", "DRV", "GPU"),
    "the tensorflow/tensorflow:2.10.1-gpu image (Keras 2.10; CUDA 11.2 libraries and CUPTI, cuDNN 8.1, no nvcc, "
    "so no libdevice), nothing turning XLA on: XLA001 is a note, not a warning", _runtime_image_without_libdevice,
    env={"HOME": "/root", "PATH": "/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:"
                                  "/usr/sbin:/usr/bin:/sbin:/bin",
         "NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
         "LD_LIBRARY_PATH": "/usr/local/cuda/extras/CUPTI/lib64:/usr/local/cuda/lib64:/usr/local/nvidia/lib:"
                            "/usr/local/nvidia/lib64", "HOSTNAME": "7c1e9b2d4f60"},
    python=PY310))


# -- one process on all eight GPUs of an NVSwitch node (both sockets): the node's intended use ---------------

# DGX A100: each GPU's 12 NVLinks go two by two to the baseboard's six NVSwitches (PCI functions of their own).
NVSWITCHES = ("00000000:C4:00.0", "00000000:C5:00.0", "00000000:C6:00.0", "00000000:C7:00.0", "00000000:C8:00.0",
              "00000000:C9:00.0")


def _dgx_one_process(root: FakeRoot) -> tuple[FakeGpu, ...]:
    parts.cpus(root, parts.ROME, sockets=2, cores_per_socket=64, threads_per_core=2)
    parts.process(root)
    parts.operating_system(root, "dgx07", mem_gib=1024, address="10.20.0.7", nic="enp226s0", nic_mbps=100000,
                           cmdline="BOOT_IMAGE=/boot/vmlinuz-5.15.0-1042-nvidia root=/dev/md0 ro amd_iommu=on "
                                   "iommu=pt pci=realloc=off")
    root.tool("numactl").tool("taskset")
    gpus = parts.nvidia_driver(root, parts.A100_SXM4, DGX_GPUS, version="535.161.08", profiling_admin_only=0)
    parts.tensorflow_2_15(root, VENV)
    links = [(switch, 2) for switch in NVSWITCHES for _ in range(2)]
    return tuple(dataclasses.replace(gpu, nvlinks=links) for gpu in gpus)


register(HealthyMachine(
    "dgx-a100-one-process-all-gpus-nvlink", ("NUMA", "GPU", "DIST", "THR"),
    "`python train.py` with MirroredStrategy over all eight GPUs of a DGX A100 (four per socket, all on the "
    "NVSwitches): the all-reduce stays on NVLink", _dgx_one_process,
    env={**USER_ENV, "TF_GPU_THREAD_MODE": "gpu_private", "TF_GPU_THREAD_COUNT": "2", "NCCL_SOCKET_IFNAME": "enp226s0",
         "TFDOCTOR_PARAMS": "25.6M", "TFDOCTOR_MIXED_PRECISION": "mixed_float16"},
    python=VENV, nvml={"driver": "535.161.08", "cuda": 12020}))


# -- the one-GPU-per-task step with OpenMP binding inside each task's own cores (HPC centres' usual advice) --------

register(HealthyMachine(
    "slurm-one-gpu-per-task-omp-bound-cgroup-v1", ("THR", "NUMA", "GPU"),
    "the cgroup v1 task of `--gpus-per-task=1 --cpu-bind=cores` with OMP_PROC_BIND=close OMP_PLACES=cores: each "
    "task binds its threads within its own 12 cores", _one_gpu_per_task_cgroup_v1,
    env={**SLURM_TASK_ENV, "OMP_PROC_BIND": "close", "OMP_PLACES": "cores"}, python=VENV))


# -- the same step where cgroup.conf does not constrain devices: Slurm gives each task CUDA_VISIBLE_DEVICES of its
# own GPU's index, and NVML (which ignores CUDA_VISIBLE_DEVICES) lists all four -----------------------------------

def _one_gpu_per_task_unconstrained(root: FakeRoot) -> tuple[FakeGpu, ...]:
    return _one_gpu_per_task_node(root)


register(HealthyMachine(
    "slurm-one-gpu-per-task-unconstrained", ("GPU", "NUMA", "THR", "DIST"),
    "task 2 of the same `--gpus-per-task=1` step on a node without ConstrainDevices: CUDA_VISIBLE_DEVICES=2, NVML "
    "lists the four GPUs", _one_gpu_per_task_unconstrained,
    env={**SLURM_TASK_ENV, "CUDA_VISIBLE_DEVICES": "2", "GPU_DEVICE_ORDINAL": "2"}, python=VENV))
