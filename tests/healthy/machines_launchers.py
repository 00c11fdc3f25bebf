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
    return (gpus[2],)


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


# -- XLA unused: TensorFlow 2.15 (Keras 2) in a CUDA runtime image, which ships no nvcc, hence no libdevice -------

def _runtime_image_without_libdevice(root: FakeRoot) -> tuple[FakeGpu, ...]:
    parts.cpus(root, parts.CASCADE_LAKE, cores_per_socket=24, threads_per_core=2)
    parts.process(root)
    parts.operating_system(root, "infer07", mem_gib=384)
    gpus = parts.nvidia_driver(root, parts.T4, [("0000:3b:00.0", 0)])
    parts.tensorflow_2_15(root, VENV, cuda_wheels=False)
    base = gpu.toolkit(root, "12.2", cudnn="8.9.7", libdevice=False)
    gpu.link(root, "/usr/local/cuda", base)
    gpu.ld_cache(root, [f"{base}/lib64", f"{base}/extras/CUPTI/lib64"])
    return gpus


register(HealthyMachine(
    "gpu-runtime-image-xla-unused-without-libdevice", ("XLA", "CUDA", "DRV", "GPU"),
    "tensorflow 2.15 (Keras 2) on CUDA 12.2 runtime libraries and cuDNN 8.9 without nvcc (so no libdevice), "
    "nothing turning XLA on: XLA001 is a note, not a warning", _runtime_image_without_libdevice,
    env={**USER_ENV, "PATH": f"{VENV.prefix}/bin:/usr/local/cuda/bin:/usr/local/bin:/usr/bin:/bin"}, python=VENV))


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
