"""Healthy twins of the THR findings of issues 12 and 16: limits the runtimes see, ranks bound per rank,
an OpenMP-threaded build with its one runtime, tf.distribute workers one per host."""

from __future__ import annotations

import json

from support.fake_site_packages import FakeSitePackages

from tfdoctor.testing import FakeRoot

from . import parts
from .corpus import HealthyMachine, register
from .machines import USER_ENV, VENV
from .parts import PythonEnv

# -- a Slurm rank bound per rank, OpenMP binding within its own cores (THR106's twin) -------------------

SLURM_TASK_CGROUP = "/system.slice/slurmstepd.scope/job_4242/step_0/user/task_1"
# `srun --ntasks-per-node=8 --cpus-per-task=28 --cpu-bind=cores` on 2 × 56-core Sapphire Rapids with SMT:
# rank 1 gets cores 14-27 and their siblings 126-139.
SLURM_RANK_1 = {
    **USER_ENV, "SLURM_JOB_ID": "4242", "SLURM_STEP_ID": "0", "SLURM_PROCID": "1", "SLURM_LOCALID": "1",
    "SLURM_NODEID": "0", "SLURM_NNODES": "1", "SLURM_NTASKS": "8", "SLURM_NTASKS_PER_NODE": "8",
    "SLURM_TASKS_PER_NODE": "8", "SLURM_STEP_TASKS_PER_NODE": "8", "SLURM_CPUS_PER_TASK": "28",
    "SLURM_CPUS_ON_NODE": "224", "SLURM_JOB_CPUS_PER_NODE": "224", "SLURM_CPU_BIND": "quiet,cores",
    "SLURM_CPU_BIND_TYPE": "cores", "SLURM_CPU_BIND_VERBOSE": "quiet", "SLURMD_NODENAME": "cpu017",
    "OMP_NUM_THREADS": "14", "TF_NUM_INTRAOP_THREADS": "14", "TF_NUM_INTEROP_THREADS": "1",
    "OMP_PROC_BIND": "close", "OMP_PLACES": "cores",
}


def _slurm_rank_bound(root: FakeRoot) -> None:
    parts.cpus(root, parts.SAPPHIRE_RAPIDS, sockets=2, cores_per_socket=56, threads_per_core=2)
    parts.process(root, cpus_allowed="14-27,126-139", mems_allowed="0-1")
    parts.operating_system(root, "cpu017", os_release=parts.ROCKY_9, mem_gib=512)
    root.cgroup_v2("max 100000", path=SLURM_TASK_CGROUP, cpuset="0-223")
    parts.tensorflow_2_21(root, VENV)


register(HealthyMachine(
    "slurm-rank-bound-per-rank-omp-close", ("THR",),
    "rank 1 of 8 on a node, srun --cpu-bind=cores, OMP_PROC_BIND=close OMP_PLACES=cores within its 14 cores",
    _slurm_rank_bound, env=SLURM_RANK_1, python=VENV))


# -- a container limited by a cpuset, thread counts left to the runtimes (THR101's twin) ----------------

def _cpuset_container(root: FakeRoot) -> None:
    # `docker run --cpuset-cpus=0-7` on a 64-core Milan: the runtimes size their pools from the 8 CPUs.
    parts.cpus(root, parts.MILAN, sockets=1, cores_per_socket=64, threads_per_core=2, governor=None)
    parts.process(root, uid=0, cap_eff=parts.CAP_DOCKER_DEFAULT, cpus_allowed="0-7")
    parts.operating_system(root, "3f9c2d1e7a4b", os_release=parts.DEBIAN_12, mem_gib=256, shm="65536k",
                           address="172.17.0.2", nic="eth0", nic_mbps=10000)
    root.cgroup_v2("max 100000", cpuset="0-7")
    parts.tensorflow_2_21(root, PythonEnv("/usr/local", base_prefix="/usr/local"))


register(HealthyMachine(
    "docker-cpuset-threads-unset", ("THR",),
    "docker --cpuset-cpus=0-7 on a 64-core host, no thread count set: TensorFlow sizes its pools from the mask",
    _cpuset_container, env={"HOME": "/root", "PATH": "/usr/local/bin:/usr/bin:/bin", "HOSTNAME": "3f9c2d1e7a4b"},
    python=PythonEnv("/usr/local", base_prefix="/usr/local")))


# -- an Intel-optimised TensorFlow with its one OpenMP runtime (THR102, THR107, THR108's twin) -----------

INTEL_TF_BUNDLED = ("tensorflow/python/_solib_k8/_U@mkl_Ulinux_S_S_Cmkl_Ulibs_Ulinux___Uexternal_Smkl_Ulinux_Slib/"
                    "libiomp5.so")
INTEL_TF_REQUIRES = tuple(r for r in parts.TF_2_15_REQUIRES if "extra ==" not in r)


def _intel_tensorflow(root: FakeRoot) -> None:
    parts.cpus(root, parts.CASCADE_LAKE, sockets=2, cores_per_socket=24, threads_per_core=2)
    parts.process(root)
    parts.operating_system(root, "infer03", mem_gib=384)
    site = FakeSitePackages(root.path / VENV.site.lstrip("/"))
    site.tensorflow(name="intel-tensorflow", version="2.15.0", requires=INTEL_TF_REQUIRES, requires_python=">=3.9",
                    tags=(parts.TF_2_15_WHEEL_TAG,),
                    record=("tensorflow/__init__.py", "tensorflow/python/platform/build_info.py", INTEL_TF_BUNDLED,
                            "intel_tensorflow-2.15.0.dist-info/RECORD"))
    site.file(INTEL_TF_BUNDLED, "\x7fELF")
    for dist, version in parts.TF_2_15_DEPENDENCIES.items():
        site.dist(dist, version, top_level=(dist,))


# Intel's published settings: intra-op = OpenMP = physical cores, inter-op = sockets, compact over cores.
INTEL_ENV = {**USER_ENV, "OMP_NUM_THREADS": "48", "TF_NUM_INTRAOP_THREADS": "48", "TF_NUM_INTEROP_THREADS": "2",
             "KMP_AFFINITY": "granularity=fine,compact,1,0", "KMP_BLOCKTIME": "1"}
register(HealthyMachine(
    "intel-tensorflow-one-openmp-runtime", ("THR",),
    "intel-tensorflow 2.15 (OpenMP-threaded, its bundled libiomp5 the only runtime) with Intel's settings",
    _intel_tensorflow, env=INTEL_ENV, python=VENV))


# -- tf.distribute workers, one per host, with a compact binding (THR106's twin) ------------------------

def _worker_host(root: FakeRoot) -> None:
    parts.cpus(root, parts.CASCADE_LAKE, sockets=2, cores_per_socket=24, threads_per_core=2)
    parts.process(root)
    parts.operating_system(root, "worker-0", address="10.0.3.21")
    parts.tensorflow_2_21(root, VENV)


WORKER_ENV = {
    **USER_ENV, "HOSTNAME": "worker-0",
    "TF_CONFIG": json.dumps({"cluster": {"worker": ["worker-0:2222", "worker-1:2222"]},
                             "task": {"type": "worker", "index": 0}}),
    "OMP_NUM_THREADS": "48", "TF_NUM_INTRAOP_THREADS": "48", "TF_NUM_INTEROP_THREADS": "2",
    "KMP_AFFINITY": "granularity=fine,compact,1,0", "KMP_BLOCKTIME": "1",
}
register(HealthyMachine(
    "tf-distribute-one-worker-per-host-compact", ("THR", "DIST"),
    "worker 0 of a two-host MultiWorkerMirroredStrategy, alone on its host, KMP_AFFINITY compact",
    _worker_host, env=WORKER_ENV, python=VENV))
