"""The healthy machines, one `register(...)` each. See README.md in this folder for how to add one."""

from __future__ import annotations

from tfdoctor.testing import FakeRoot

from . import parts
from .corpus import HealthyMachine, register
from .parts import PythonEnv

# The false alarms of issue 16 that other branches fix (see README.md: false_alarms).

HOME = "/home/ada"
VENV = PythonEnv(f"{HOME}/venv")
USER_ENV = {"HOME": HOME, "USER": "ada", "VIRTUAL_ENV": VENV.prefix,
            "PATH": f"{VENV.prefix}/bin:/usr/local/bin:/usr/bin:/bin"}


# -- CPU-only machines ----------------------------------------------------------------------------------

def _laptop(root: FakeRoot) -> None:
    parts.cpus(root, parts.TIGER_LAKE, cores_per_socket=4, threads_per_core=2, governor="powersave")
    parts.process(root)
    parts.operating_system(root, "ada-xps", mem_gib=32, nic="wlp0s20f3", nic_mbps=0)
    parts.tensorflow_2_21(root, VENV)


register(HealthyMachine(
    "laptop-cpu-venv", ("THR", "CPU", "PKG", "LAY", "MP", "XLA", "GPU"),
    "a Tiger Lake laptop, `pip install tensorflow-cpu` in a venv, nothing configured",
    _laptop, env=USER_ENV, python=VENV))


def _kubernetes_pod(root: FakeRoot) -> None:
    # A 4-CPU limit on a 2×64-core Milan node: the pod sees every CPU, the quota is in cpu.max.
    parts.cpus(root, parts.MILAN, sockets=2, cores_per_socket=64, threads_per_core=2, governor=None)
    parts.process(root, uid=1000)
    parts.operating_system(root, "train-7c9f6d-x2k4q", os_release=parts.DEBIAN_12, mem_gib=1024,
                           shm="65536k", address="10.244.3.17", nic="eth0", nic_mbps=10000)
    root.cgroup_v2("400000 100000")
    root.write("/proc/1/cgroup", "0::/\n")
    parts.tensorflow_2_21(root, VENV)


POD_ENV = {**USER_ENV, "KUBERNETES_SERVICE_HOST": "10.96.0.1", "HOSTNAME": "train-7c9f6d-x2k4q",
           "TF_NUM_INTRAOP_THREADS": "4", "TF_NUM_INTEROP_THREADS": "2", "OMP_NUM_THREADS": "4"}
register(HealthyMachine(
    "kubernetes-cpu-pod-quota", ("THR", "CPU", "PKG", "DIST"),
    "a CPU pod with limits.cpu=4 (cgroup v2 cpu.max) on a 256-thread node, thread pools set to the quota",
    _kubernetes_pod, env=POD_ENV, python=VENV))


# -- Docker on a cgroup v1 host: --cpus=8, threads set as Intel's guide says ------------------------------

def _cgroup_v1_container(root: FakeRoot) -> None:
    parts.cpus(root, parts.CASCADE_LAKE, sockets=2, cores_per_socket=24, threads_per_core=2)
    parts.process(root, uid=0, cap_eff=parts.CAP_DOCKER_DEFAULT)
    parts.operating_system(root, "5b8e0c1d9a2f", os_release=parts.DEBIAN_12, mem_gib=384, shm="64m",
                           address="172.17.0.2", nic="eth0", nic_mbps=10000)
    docker = "/docker/5b8e0c1d9a2f7e3c4d6b8a0f1e2d3c4b5a6978877665544332211009f8e7d6c5"
    root.cgroup_v1(quota_us=800000, period_us=100000, path=docker)
    root.write("/proc/1/cgroup", f"12:cpu,cpuacct:{docker}\n11:cpuset:{docker}\n0::/\n")
    root.write("/.dockerenv", "")
    parts.tensorflow_2_21(root, parts.PythonEnv("/usr/local", base_prefix="/usr/local"))


register(HealthyMachine(
    "cgroup-v1-docker-cpus-quota", ("THR", "CPU", "PKG", "DIST"),
    "`docker run --cpus=8` on a cgroup v1 host, TF_NUM_INTRAOP_THREADS=OMP_NUM_THREADS=8 and one inter-op "
    "thread per socket as Intel's tuning guide says", _cgroup_v1_container,
    env={"HOME": "/root", "PATH": "/usr/local/bin:/usr/bin:/bin", "HOSTNAME": "5b8e0c1d9a2f",
         "TF_NUM_INTRAOP_THREADS": "8", "TF_NUM_INTEROP_THREADS": "1", "OMP_NUM_THREADS": "8"},
    python=parts.PythonEnv("/usr/local", base_prefix="/usr/local")))


# -- Intel's optimised build on the CPU it is tuned for, bfloat16 on AMX ------------------------------------

def _intel_sapphire_rapids(root: FakeRoot) -> None:
    parts.cpus(root, parts.SAPPHIRE_RAPIDS, sockets=2, cores_per_socket=56, threads_per_core=2)
    # numactl --cpunodebind=0 --membind=0 --physcpubind=0-55: the first thread of every core of socket 0.
    parts.process(root, cpus_allowed="0-55", mems_allowed="0")
    parts.operating_system(root, "spr01", os_release=parts.ROCKY_9, mem_gib=1024)
    root.tool("numactl")
    requires = tuple(r for r in parts.TF_2_15_REQUIRES if "extra ==" not in r)
    site = parts.FakeSitePackages(root.path / VENV.site.lstrip("/"))
    site.tensorflow(name="intel-tensorflow", version="2.15.0", requires=requires, requires_python=">=3.9",
                    tags=(parts.TF_2_15_WHEEL_TAG,))
    for dist, version in parts.TF_2_15_DEPENDENCIES.items():
        site.dist(dist, version, top_level=(dist,))


register(HealthyMachine(
    "intel-tensorflow-on-sapphire-rapids", ("CPU", "MP", "THR", "PKG", "NUMA"),
    "intel-tensorflow 2.15 on a Xeon 8480+ bound to socket 0's cores, oneDNN on, KMP settings and "
    "mixed_bfloat16 (AMX) as Intel's guide says", _intel_sapphire_rapids,
    env={**USER_ENV, "TF_ENABLE_ONEDNN_OPTS": "1", "OMP_NUM_THREADS": "56", "TF_NUM_INTRAOP_THREADS": "56",
         "TF_NUM_INTEROP_THREADS": "1", "KMP_AFFINITY": "granularity=fine,compact,1,0", "KMP_BLOCKTIME": "1",
         "TFDOCTOR_MIXED_PRECISION": "mixed_bfloat16"}, python=VENV))


# -- Keras 3 era TensorFlow with tf-keras for code that still needs Keras 2 ---------------------------------

def _legacy_keras(root: FakeRoot) -> None:
    parts.cpus(root, parts.MILAN, cores_per_socket=8, threads_per_core=2, governor=None)
    parts.process(root)
    parts.operating_system(root, "vm-ml-4", mem_gib=64, nic="ens4", nic_mbps=0, pci_others=True)
    site = parts.tensorflow_2_21(root, VENV, name="tensorflow")
    site.dist("tf_keras", "2.21.0", requires=("tensorflow<2.22,>=2.21",), requires_python=">=3.9",
              top_level=("tf_keras",))


register(HealthyMachine(
    "keras3-era-tensorflow-with-tf-keras", ("PKG", "THR", "CPU", "LAY"),
    "tensorflow 2.21 with tf-keras 2.21 and TF_USE_LEGACY_KERAS=1 for a Keras 2 code base, on a cloud VM",
    _legacy_keras, env={**USER_ENV, "TF_USE_LEGACY_KERAS": "1"}, python=VENV))


# -- a desktop with OpenMP on the physical cores -------------------------------------------------------------

def _desktop_physical_cores(root: FakeRoot) -> None:
    parts.cpus(root, parts.MILAN, cores_per_socket=16, threads_per_core=2, governor="schedutil")
    parts.process(root)
    parts.operating_system(root, "ryzen-box", mem_gib=64)
    parts.tensorflow_2_21(root, VENV)


register(HealthyMachine(
    "desktop-threads-on-physical-cores", ("THR", "CPU"),
    "16 cores / 32 threads, OMP_NUM_THREADS=TF_NUM_INTRAOP_THREADS=16 (one per core), OMP_PROC_BIND=close, "
    "OMP_PLACES=cores", _desktop_physical_cores,
    env={**USER_ENV, "OMP_NUM_THREADS": "16", "TF_NUM_INTRAOP_THREADS": "16", "TF_NUM_INTEROP_THREADS": "2",
         "OMP_PROC_BIND": "close", "OMP_PLACES": "cores"}, python=VENV))


# -- an Arm server (AWS Graviton3) ---------------------------------------------------------------------------

GRAVITON3_FEATURES = ("fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma "
                      "lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm ssbs paca pacg "
                      "dcpodp svei8mm svebf16 i8mm bf16 dgh rng")


ARM_VENV = PythonEnv(f"{HOME}/venv", arch="aarch64")


def _graviton(root: FakeRoot) -> None:
    root.cpus(sockets=1, cores_per_socket=16, threads_per_core=1)
    root.write("/proc/cpuinfo", "\n".join(
        f"processor\t: {cpu}\nBogoMIPS\t: 2100.00\nFeatures\t: {GRAVITON3_FEATURES}\nCPU implementer\t: 0x41\n"
        "CPU architecture: 8\nCPU variant\t: 0x1\nCPU part\t: 0xd40\nCPU revision\t: 1\n" for cpu in range(16)) + "\n")
    root.write("/proc/sys/kernel/arch", "aarch64\n")
    root.numa(["0-15"])
    parts.process(root)
    parts.operating_system(root, "ip-172-31-7-18", os_release=parts.UBUNTU_2204, mem_gib=32, address="172.31.7.18",
                           nic="ens5", nic_mbps=0, pci_others=False)
    root.pci_gpu("0000:00:05.0", -1, "", vendor="0x1d0f", pci_class="0x020000")  # the ENA network adapter
    site = parts.FakeSitePackages(root.path / ARM_VENV.site.lstrip("/"))
    site.tensorflow(name="tensorflow", tags=("cp311-cp311-manylinux_2_17_aarch64.manylinux2014_aarch64",))
    site.healthy_dependencies()


register(HealthyMachine(
    "arm-graviton3-cpu", ("CPU", "THR", "PKG", "MP"),
    "a c7g.4xlarge (Graviton3, 16 Neoverse V1 cores), tensorflow 2.21's aarch64 wheel in a venv", _graviton,
    env=USER_ENV, python=ARM_VENV))
