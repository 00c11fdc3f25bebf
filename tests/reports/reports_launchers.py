"""Real reports of issue 35's launcher, multi-worker networking and severity categories, each rebuilt as the
machine its thread describes. Labels (`expect`) and splits were written from the threads before tfdoctor ran
on any of them; the held-out ones were chosen by thread (one in three or so), not by result."""

from __future__ import annotations

import json

from healthy import parts
from healthy.machines import USER_ENV, VENV
from healthy.machines_cluster import FOUR_GPUS
from healthy.machines_gpu import TF_2_12_DEPENDENCIES, TF_2_12_REQUIRES
from healthy.machines_launchers import horovod
from support import gpu_scenarios as gpu
from support.fake_site_packages import FakeSitePackages

from tfdoctor.model import Severity
from tfdoctor.testing import FakeRoot
from tfdoctor.testing.fake_nvml import FakeGpu

from .corpus import RealReport, register

V100_PCIE = parts.GpuModel("Tesla V100-PCIE-16GB", "0x1db4", (7, 0), 16160, remapping=False, pcie=(3, 16))


def _proxied_host(root: FakeRoot, hostname: str, address: str) -> None:
    """A CPU host on a corporate network: TensorFlow 2.15 in a venv, nothing else of note."""
    parts.cpus(root, parts.CASCADE_LAKE, sockets=2, cores_per_socket=20, threads_per_core=2)
    parts.process(root)
    parts.operating_system(root, hostname, os_release=parts.UBUNTU_2204, mem_gib=192, address=address)
    parts.tensorflow_2_15(root, VENV, cuda_wheels=False)


# -- networking --------------------------------------------------------------------------------------------

def _collective_on_localhost(root: FakeRoot) -> None:
    _proxied_host(root, "dev-box", "10.239.44.17")


# The thread's own set-up: CollectiveAllReduceStrategy with the chief and a worker on the same desktop, and a
# corporate https_proxy in the shell (first an https:// one gRPC refused, then the right http:// one: the hang).
LOCAL_CLUSTER = {"cluster": {"chief": ["localhost:2222"], "worker": ["localhost:2223"]},
                 "task": {"type": "chief", "index": 0}}
register(RealReport(
    "tf-collective-hangs-behind-https-proxy", "https://github.com/tensorflow/tensorflow/issues/24887", "networking",
    "dev", "CollectiveAllReduceStrategy on localhost hangs at start; the thread found https_proxy set and gRPC "
    "sending even the local workers' channels to the proxy",
    expect=("DIST112",), twin="multi-worker-behind-proxy-with-no-proxy", build=_collective_on_localhost,
    env={**USER_ENV, "TF_CONFIG": json.dumps(LOCAL_CLUSTER), "https_proxy": "http://proxy.example.com:911",
         "http_proxy": "http://proxy.example.com:911"}, python=VENV))


def _spark_executor(root: FakeRoot) -> None:
    _proxied_host(root, "sr231", "172.168.2.231")


# BigDL/Analytics Zoo's TF2 backend on a Spark cluster behind Intel's proxy: its PR adds the cluster nodes'
# addresses to no_proxy because "TF distributed will try to send data through proxy".
SPARK_CLUSTER = {"cluster": {"worker": ["172.168.2.231:41235", "172.168.2.232:41235", "172.168.2.233:41235"]},
                 "task": {"type": "worker", "index": 0}}
register(RealReport(
    "bigdl-tf2-workers-through-proxy", "https://github.com/intel/BigDL/pull/2977", "networking", "heldout",
    "TF2 MultiWorkerMirroredStrategy workers on Spark executors fail to talk: their gRPC traffic goes to the "
    "http_proxy; the fix adds the cluster nodes' IPs to no_proxy",
    expect=("DIST112",), twin="multi-worker-behind-proxy-with-no-proxy", build=_spark_executor,
    env={**USER_ENV, "TF_CONFIG": json.dumps(SPARK_CLUSTER), "http_proxy": "http://proxy.example.com:913",
         "https_proxy": "http://proxy.example.com:913", "no_proxy": "localhost,127.0.0.1"}, python=VENV))


# -- launchers ---------------------------------------------------------------------------------------------

def _four_v100_server(root: FakeRoot, cpus_allowed: str | None = None) -> tuple[FakeGpu, ...]:
    parts.cpus(root, parts.CASCADE_LAKE, sockets=2, cores_per_socket=20, threads_per_core=2)
    parts.process(root, cpus_allowed=cpus_allowed)
    parts.operating_system(root, "gpu-node-3", os_release=parts.UBUNTU_2204, mem_gib=384, address="10.1.0.13")
    gpus = parts.nvidia_driver(root, V100_PCIE, FOUR_GPUS)
    parts.tensorflow_2_15(root, VENV)
    horovod(root, VENV)
    return gpus


# "'visible_device_list' listed an invalid GPU id '5' but visible device count is 4": mpirun started more
# workers on the server than it has GPUs; the maintainer: one worker per GPU.
register(RealReport(
    "horovod-more-workers-than-gpus", "https://github.com/horovod/horovod/issues/86", "launchers", "dev",
    "Horovod under mpirun with 8 workers on a 4-GPU server: rank 5 asks for GPU 5 of 4; the thread: never run "
    "more workers on a server than it has GPUs",
    expect=("DIST111",), twin="dgx-a100-8gpu-nccl-rank", build=_four_v100_server,
    env={**USER_ENV, "OMPI_COMM_WORLD_RANK": "5", "OMPI_COMM_WORLD_SIZE": "8", "OMPI_COMM_WORLD_LOCAL_RANK": "5",
         "OMPI_COMM_WORLD_LOCAL_SIZE": "8", "OMPI_COMM_WORLD_NODE_RANK": "0"}, python=VENV))


# sbatch --nodes=2 --tasks-per-node=40 --gres=gpu:4, then `mpirun python TEM_train.py`: 40 ranks per node, 4 GPUs.
register(RealReport(
    "horovod-slurm-40-tasks-per-4-gpu-node", "https://github.com/horovod/horovod/issues/1038", "launchers",
    "heldout", "Horovod on Slurm fails on two 4-GPU nodes: the batch script asks for 40 tasks per node and "
    "mpirun starts 40 ranks on each",
    expect=("DIST111", "GPU103"), twin="slurm-horovod-rank-sees-node-gpus",
    build=lambda root: _four_v100_server(root, cpus_allowed="0-19,40-59"),
    env={**USER_ENV, "SLURM_JOB_ID": "118842", "SLURM_NNODES": "2", "SLURM_NTASKS": "80",
         "SLURM_NTASKS_PER_NODE": "40", "SLURM_TASKS_PER_NODE": "40(x2)", "SLURM_JOB_GPUS": "0,1,2,3",
         "SLURM_GPUS_ON_NODE": "4", "CUDA_VISIBLE_DEVICES": "0,1,2,3", "OMP_NUM_THREADS": "4",
         "OMPI_COMM_WORLD_RANK": "7", "OMPI_COMM_WORLD_SIZE": "80", "OMPI_COMM_WORLD_LOCAL_RANK": "7",
         "OMPI_COMM_WORLD_LOCAL_SIZE": "40", "OMPI_COMM_WORLD_NODE_RANK": "0"}, python=VENV))


def _rank_given_one_gpu(root: FakeRoot) -> tuple[FakeGpu, ...]:
    gpus = _four_v100_server(root, cpus_allowed="20-29,60-69")
    for minor in range(4):  # a device cgroup hides no /dev node: it refuses open(2), and NVML lists one GPU
        root.write(f"/dev/nvidia{minor}", "")
    return (gpus[2],)


# Every rank logs "Adding visible gpu devices: 0" and all but rank 0 stop in gpus[hvd.local_rank()] with
# IndexError: each rank sees one GPU, so the local rank indexes past it.
register(RealReport(
    "horovod-rank-sees-one-gpu-indexes-local-rank", "https://github.com/horovod/horovod/issues/1458", "launchers",
    "heldout", "TF 2 with Horovod under mpirun on a cluster: every rank sees one GPU (device 0) and ranks 1-3 "
    "fail in set_visible_devices(gpus[hvd.local_rank()]) with IndexError",
    expect=("DIST110",), twin="slurm-horovod-rank-sees-node-gpus", build=_rank_given_one_gpu,
    env={**USER_ENV, "SLURM_JOB_ID": "5527193", "SLURM_NTASKS": "4", "SLURM_NTASKS_PER_NODE": "4",
         "SLURM_GPUS_PER_TASK": "1", "CUDA_VISIBLE_DEVICES": "0", "OMPI_COMM_WORLD_RANK": "2",
         "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_RANK": "2", "OMPI_COMM_WORLD_LOCAL_SIZE": "4"},
    python=VENV))


# -- severity that depends on use --------------------------------------------------------------------------

CONDA_211 = parts.PythonEnv("/home/ada/miniconda3/envs/tf", version="3.9.15", base_prefix="/home/ada/miniconda3")
BUILD_INFO_2_11 = (
    "import collections\n\nbuild_info = collections.OrderedDict([('cpu_compiler', '/dt9/usr/bin/gcc'), "
    "('cuda_compute_capabilities', ['sm_35', 'sm_50', 'sm_60', 'sm_70', 'sm_75', 'compute_80']), "
    "('cuda_version', '11.2'), ('cudnn_version', '8'), ('is_cuda_build', True), ('is_rocm_build', False), "
    "('is_tensorrt_build', True)])\n"
)
GTX_1060 = parts.GpuModel("NVIDIA GeForce GTX 1060 6GB", "0x1c03", (6, 1), 6144, ecc=False, remapping=False,
                          pcie=(3, 16))


def _conda_cudatoolkit_112(root: FakeRoot) -> tuple[FakeGpu, ...]:
    parts.cpus(root, parts.TIGER_LAKE, cores_per_socket=4, threads_per_core=2)
    parts.process(root)
    parts.operating_system(root, "ns-desktop", mem_gib=32)
    gpus = parts.nvidia_driver(root, GTX_1060, [("0000:01:00.0", 0)], version="520.61.05")
    # TensorFlow 2.11's install guide: conda install -c conda-forge cudatoolkit=11.2 cudnn=8.1.0, then
    # LD_LIBRARY_PATH=$CONDA_PREFIX/lib; cudatoolkit has no nvcc, so no nvvm/libdevice.
    lib = f"{CONDA_211.prefix}/lib"
    for soname, real in {**gpu.TOOLKIT_LIBS["11.2"], "libcupti.so.11.2": "libcupti.so.2020.3.1",
                         "libcudnn.so.8": "libcudnn.so.8.1.0"}.items():
        gpu.lib(root, f"{lib}/{real}", soname)
        gpu.link(root, f"{lib}/{soname}", real)
    site = FakeSitePackages(root.path / CONDA_211.site.lstrip("/"))
    requires = tuple(r.replace("2.13", "2.12").replace(">=2.12", ">=2.11") for r in TF_2_12_REQUIRES
                     if not r.startswith("jax"))
    site.tensorflow(name="tensorflow", version="2.11.0", build_info=BUILD_INFO_2_11, requires=requires,
                    requires_python=">=3.7", tags=("cp39-cp39-manylinux_2_17_x86_64.manylinux2014_x86_64",))
    versions = {**TF_2_12_DEPENDENCIES, "tensorboard": "2.11.2", "tensorflow_estimator": "2.11.0",
                "keras": "2.11.0"}
    versions.pop("jax")
    for dist, version in versions.items():
        site.dist(dist, version, top_level=(dist,))
    return gpus


register(RealReport(
    "tf-211-fit-fails-without-libdevice", "https://github.com/tensorflow/tensorflow/issues/58681", "severity",
    "dev", "TensorFlow 2.11 installed by its guide (conda cudatoolkit 11.2, cuDNN 8.1): model.fit fails with "
    "\"Can't find libdevice directory ${CUDA_DIR}/nvvm/libdevice\"; nothing the user set turns XLA on",
    expect=("XLA001",), least=Severity.ERROR, twin="conda-cuda-as-install-guide", build=_conda_cudatoolkit_112,
    env={**USER_ENV, "CONDA_PREFIX": CONDA_211.prefix, "LD_LIBRARY_PATH": f"{CONDA_211.prefix}/lib/",
         "PATH": f"{CONDA_211.prefix}/bin:/home/ada/miniconda3/condabin:/usr/local/bin:/usr/bin:/bin"},
    python=CONDA_211))


def _docker_profiling(root: FakeRoot) -> tuple[FakeGpu, ...]:
    parts.cpus(root, parts.CASCADE_LAKE, cores_per_socket=8, threads_per_core=2)
    parts.process(root, uid=0, cap_eff=parts.CAP_DOCKER_DEFAULT)
    parts.operating_system(root, "4b0d6f1e2a93", mem_gib=64, shm="64m", address="172.17.0.2", nic="eth0",
                           nic_mbps=10000)
    root.write("/.dockerenv", "").write("/proc/1/cgroup", "0::/\n")
    gpus = parts.nvidia_driver(root, V100_PCIE, [("0000:3b:00.0", 0)], version="440.64.00")
    container = parts.PythonEnv("/usr/local", version="3.11.9", base_prefix="/usr/local")
    parts.tensorflow_2_15(root, container)
    parts.tensorflow_profiler(root, container)
    return gpus


# Profiling a training run in `docker run --gpus all` with the TensorBoard profiler plugin: CUPTI refuses
# (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES); the thread: the container needs --privileged (or SYS_ADMIN).
register(RealReport(
    "xprof-cupti-refused-in-docker", "https://github.com/openxla/xprof/issues/63", "severity", "dev",
    "TensorBoard's profiler in a default Docker container shows no GPU kernels: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, "
    "the driver restricts the counters to administrators and the container has no SYS_ADMIN",
    expect=("CUPTI002",), twin="container-profiling-restricted-with-sys-admin", build=_docker_profiling,
    env={"HOME": "/root", "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
         "NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
         "HOSTNAME": "4b0d6f1e2a93"},
    python=parts.PythonEnv("/usr/local", version="3.11.9", base_prefix="/usr/local"), nvml={"driver": "440.64.00"}))


V100_SXM2 = parts.GpuModel("Tesla V100-SXM2-32GB", "0x1db5", (7, 0), 32510, remapping=False, pcie=(3, 16))
DGX1_GPUS = [("0000:06:00.0", 0), ("0000:07:00.0", 0), ("0000:0a:00.0", 0), ("0000:0b:00.0", 0),
             ("0000:85:00.0", 1), ("0000:86:00.0", 1), ("0000:89:00.0", 1), ("0000:8a:00.0", 1)]


def _dgx1_container(root: FakeRoot) -> tuple[FakeGpu, ...]:
    parts.cpus(root, parts.CASCADE_LAKE, sockets=2, cores_per_socket=20, threads_per_core=2)
    parts.process(root, uid=0, cap_eff=parts.CAP_DOCKER_DEFAULT)
    parts.operating_system(root, "dgx1-07", mem_gib=512, shm="16g", address="10.30.1.7", nic="ib0", nic_mbps=100000)
    root.write("/.dockerenv", "").write("/proc/1/cgroup", "0::/\n")
    gpus = parts.nvidia_driver(root, V100_SXM2, DGX1_GPUS)
    container = parts.PythonEnv("/usr/local", version="3.11.9", base_prefix="/usr/local")
    parts.tensorflow_2_15(root, container)
    horovod(root, container)
    return gpus


# `mpirun -np 16 python my_script.py` inside a Docker image on two DGX nodes: "visible_device_list listed an
# invalid GPU id"; fixed by deleting the image's /usr/local/etc/openmpi-mca-params.conf, which conflicted with
# the cluster's configuration (all 16 ranks were mapped to one 8-GPU node).
register(RealReport(
    "horovod-sixteen-ranks-on-one-dgx", "https://github.com/horovod/horovod/issues/520", "launchers", "heldout",
    "Horovod with `mpirun -np 16` in a container on DGX-1 nodes: ranks ask for GPU ids past the node's 8; an "
    "Open MPI MCA file in the image mapped all ranks onto one node",
    expect=("DIST111",), twin="dgx-a100-8gpu-nccl-rank", build=_dgx1_container,
    env={"HOME": "/root", "PATH": "/usr/local/mpi/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
         "NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
         "OMPI_COMM_WORLD_RANK": "11", "OMPI_COMM_WORLD_SIZE": "16", "OMPI_COMM_WORLD_LOCAL_RANK": "11",
         "OMPI_COMM_WORLD_LOCAL_SIZE": "16", "OMPI_COMM_WORLD_NODE_RANK": "0", "NCCL_DEBUG": "INFO"},
    python=parts.PythonEnv("/usr/local", version="3.11.9", base_prefix="/usr/local")))
