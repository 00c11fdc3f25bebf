"""Healthy nodes of multi-process jobs: Slurm and MPI ranks bound per rank, a DGX-like 8-GPU node with NCCL
and NVLink, a multi-worker TF_CONFIG job, a process bound to its GPU's NUMA node."""

from __future__ import annotations

import json

from tfdoctor.testing import FakeRoot
from tfdoctor.testing.fake_nvml import FakeGpu

from . import parts
from .corpus import HealthyMachine, register
from .machines import USER_ENV, VENV

# Two 24-core Cascade Lake sockets with hyperthreads: node 0 = 0-23,48-71, node 1 = 24-47,72-95. Four GPUs
# behind the sockets' PCIe roots, two per socket, as in most 2U four-GPU servers.
FOUR_GPUS = [("0000:18:00.0", 0), ("0000:3b:00.0", 0), ("0000:86:00.0", 1), ("0000:af:00.0", 1)]


def _four_gpu_server(root: FakeRoot, hostname: str, cpus_allowed: str | None, mems_allowed: str | None,
                     admin_only: int = 0) -> tuple[FakeGpu, ...]:
    parts.cpus(root, parts.CASCADE_LAKE, sockets=2, cores_per_socket=24, threads_per_core=2)
    parts.process(root, cpus_allowed=cpus_allowed, mems_allowed=mems_allowed)
    parts.operating_system(root, hostname, os_release=parts.ROCKY_9, mem_gib=768, address="10.10.4.17",
                           nic="ens1f0", nic_mbps=100000)
    root.tool("numactl").tool("taskset")
    gpus = parts.nvidia_driver(root, parts.A100_SXM4, FOUR_GPUS, profiling_admin_only=admin_only)
    parts.tensorflow_2_15(root, VENV)
    return gpus


# -- Slurm: one rank per GPU, each bound to cores of its GPU's socket ----------------------------------------

def _slurm_rank(root: FakeRoot) -> tuple[FakeGpu, ...]:
    gpus = _four_gpu_server(root, "gpu017", cpus_allowed="36-47,84-95", mems_allowed="0-1")
    # Slurm's task/cgroup plugin on cgroup v2: the job's cgroup holds the node (--exclusive), no quota.
    root.cgroup_v2("max 100000", path="/system.slice/slurmstepd.scope/job_4242/step_0/user/task_3",
                   cpuset="0-95")
    return gpus


SLURM_ENV = {**USER_ENV, "SLURM_JOB_ID": "4242", "SLURM_STEP_ID": "0", "SLURM_PROCID": "3", "SLURM_LOCALID": "3",
             "SLURM_NODEID": "0", "SLURM_NTASKS": "8", "SLURM_NTASKS_PER_NODE": "4",
             "SLURM_STEP_TASKS_PER_NODE": "4(x2)", "SLURM_TASKS_PER_NODE": "4(x2)", "SLURM_CPUS_PER_TASK": "24",
             "SLURM_CPU_BIND": "quiet,mask_cpu:0x000000FFF000000000FFF000", "SLURM_CPU_BIND_TYPE": "mask_cpu:",
             "SLURM_GPUS_ON_NODE": "4", "SLURM_STEP_GPUS": "0,1,2,3", "SLURM_JOB_NODELIST": "gpu[017-018]",
             "CUDA_VISIBLE_DEVICES": "0,1,2,3", "OMP_NUM_THREADS": "12"}
register(HealthyMachine(
    "slurm-rank-bound-to-gpu-socket", ("NUMA", "THR", "DIST", "GPU"),
    "rank 3 of `srun --ntasks-per-node=4 --cpus-per-task=24 --cpu-bind=cores --gpus-per-node=4`, bound to 12 "
    "cores of GPU 3's socket, OMP_NUM_THREADS=12 as the sbatch script exports it", _slurm_rank,
    env=SLURM_ENV, python=VENV))


# -- one process bound to its GPU's NUMA node with numactl ---------------------------------------------------

def _numactl_bound(root: FakeRoot) -> tuple[FakeGpu, ...]:
    gpus = _four_gpu_server(root, "gpu031", cpus_allowed="24-47,72-95", mems_allowed="1")
    root.membind("permitted")
    return gpus


register(HealthyMachine(
    "two-socket-gpu-host-bound-to-gpu-node", ("NUMA", "THR", "CUDA", "GPU"),
    "`CUDA_VISIBLE_DEVICES=2 numactl --cpunodebind=1 --membind=1 python train.py`: GPU 2 is on node 1",
    _numactl_bound, env={**USER_ENV, "CUDA_VISIBLE_DEVICES": "2"}, python=VENV))


# -- MPI (Horovod on CPUs): two ranks per node, each bound to one socket, threads sized for it --------------

def _mpi_cpu_rank(root: FakeRoot) -> None:
    parts.cpus(root, parts.GENOA, sockets=2, cores_per_socket=96, threads_per_core=1)
    parts.process(root, cpus_allowed="96-191", mems_allowed="1")
    parts.operating_system(root, "cpu112", os_release=parts.ROCKY_9, mem_gib=1536, address="10.10.8.112",
                           nic="ens2f0np0", nic_mbps=200000)
    parts.tensorflow_2_21(root, VENV)


MPI_ENV = {**USER_ENV, "OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_RANK": "1",
           "OMPI_COMM_WORLD_LOCAL_SIZE": "2", "OMPI_COMM_WORLD_NODE_RANK": "1", "OMP_NUM_THREADS": "96",
           "TF_NUM_INTRAOP_THREADS": "96", "TF_NUM_INTEROP_THREADS": "2"}
register(HealthyMachine(
    "mpi-cpu-rank-bound-to-socket", ("THR", "NUMA", "CPU", "MP"),
    "rank 3 of `mpirun -np 4 --map-by ppr:1:socket --bind-to socket` on 2×96-core Genoa nodes, threads "
    "sized for the socket as Intel's and AMD's tuning guides say (intra = cores, inter = 2)", _mpi_cpu_rank,
    env=MPI_ENV, python=VENV))


# -- a DGX-like node: 8 GPUs over NVLink, NCCL over InfiniBand, one rank per GPU ----------------------------

DGX_GPUS = [("0000:07:00.0", 0), ("0000:0f:00.0", 0), ("0000:47:00.0", 0), ("0000:4e:00.0", 0),
            ("0000:87:00.0", 1), ("0000:90:00.0", 1), ("0000:b7:00.0", 1), ("0000:bd:00.0", 1)]


def _dgx(root: FakeRoot) -> tuple[FakeGpu, ...]:
    parts.cpus(root, parts.ROME, sockets=2, cores_per_socket=64, threads_per_core=2)
    # Rank 5 of `mpirun --map-by ppr:4:socket:PE=16 --bind-to core`: 16 cores of socket 1 and their siblings.
    parts.process(root, cpus_allowed="80-95,208-223", mems_allowed="0-1")
    parts.operating_system(root, "dgx03", mem_gib=2048, address="10.20.0.3", nic="enp226s0", nic_mbps=100000,
                           cmdline="BOOT_IMAGE=/boot/vmlinuz-5.15.0-1042-nvidia root=/dev/md0 ro amd_iommu=on "
                                   "iommu=pt pci=realloc=off")
    for unit in ("ivhd0", "ivhd1", "ivhd2", "ivhd3"):
        root.write(f"/sys/class/iommu/{unit}/device/numa_node", "0\n")
    for group in range(24):
        root.write(f"/sys/kernel/iommu_groups/{group}/type", "identity\n")
    for hca in range(8):
        port = f"/sys/class/infiniband/mlx5_{hca}/ports/1"
        root.write(f"{port}/state", "4: ACTIVE\n").write(f"{port}/rate", "200 Gb/sec (4X HDR)\n")
        root.write(f"{port}/link_layer", "InfiniBand\n")
    gpus = parts.nvidia_driver(root, parts.A100_SXM4, DGX_GPUS, version="535.161.08", profiling_admin_only=0)
    parts.tensorflow_2_15(root, VENV)
    return gpus


DGX_ENV = {**USER_ENV, "OMPI_COMM_WORLD_RANK": "5", "OMPI_COMM_WORLD_SIZE": "16",
           "OMPI_COMM_WORLD_LOCAL_RANK": "5", "OMPI_COMM_WORLD_LOCAL_SIZE": "8", "NCCL_SOCKET_IFNAME": "enp226s0",
           "NCCL_IB_HCA": "mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_6,mlx5_7,mlx5_8,mlx5_9",
           "TF_NUM_INTRAOP_THREADS": "16", "TF_NUM_INTEROP_THREADS": "2", "TFDOCTOR_PARAMS": "340M",
           "TFDOCTOR_MIXED_PRECISION": "mixed_float16", "TF_GPU_THREAD_MODE": "gpu_private",
           "TF_GPU_THREAD_COUNT": "2"}
register(HealthyMachine(
    "dgx-a100-8gpu-nccl-rank", ("DIST", "NUMA", "THR", "GPU", "CUDA", "DRV", "MP", "XLA"),
    "rank 5 of 16 (two DGX A100 nodes) under Horovod/mpirun, one rank per GPU bound to 16 cores of its GPU's "
    "socket, NCCL over 8×HDR InfiniBand, iommu=pt, mixed_float16", _dgx,
    env=DGX_ENV, python=VENV, nvml={"driver": "535.161.08", "cuda": 12020}))


# -- a multi-worker job described by TF_CONFIG ------------------------------------------------------------

def _multi_worker(root: FakeRoot) -> tuple[FakeGpu, ...]:
    return _four_gpu_server(root, "gpu021", cpus_allowed="0-23,48-71", mems_allowed="0")


TF_CONFIG = {"cluster": {"worker": ["gpu021.cluster.local:12345", "gpu022.cluster.local:12345"]},
             "task": {"type": "worker", "index": 0}}
register(HealthyMachine(
    "multi-worker-tf-config-node", ("DIST", "NUMA", "THR"),
    "worker 0 of a two-node MultiWorkerMirroredStrategy job: TF_CONFIG names this host, NCCL on its 100 GbE "
    "interface, the process bound to the node of its two GPUs (CUDA_VISIBLE_DEVICES=0,1)", _multi_worker,
    env={**USER_ENV, "TF_CONFIG": json.dumps(TF_CONFIG), "NCCL_SOCKET_IFNAME": "ens1f0",
         "CUDA_VISIBLE_DEVICES": "0,1", "TFDOCTOR_PARAMS": "25.6M", "TF_NUM_INTRAOP_THREADS": "24",
         "TF_NUM_INTEROP_THREADS": "2"},
    python=VENV))
