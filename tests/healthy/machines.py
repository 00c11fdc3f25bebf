"""The healthy machines, one `register(...)` each. See README.md in this folder for how to add one."""

from __future__ import annotations

import gpu_scenarios as gpu

from tfdoctor.testing import FakeRoot
from tfdoctor.testing.fake_nvml import FakeGpu

from . import parts
from .corpus import HealthyMachine, register
from .parts import PythonEnv

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


# -- GPU machines -----------------------------------------------------------------------------------------

def _workstation_second_toolkit(root: FakeRoot) -> None:
    parts.cpus(root, parts.CASCADE_LAKE, cores_per_socket=24, threads_per_core=2)
    parts.process(root)
    parts.operating_system(root, "ws-ada", mem_gib=192)
    gpu.driver(root)
    parts.gpu_placement(root, "0000:3b:00.0", 0)
    # TensorFlow from pip with its CUDA wheels; a CUDA 12.4 toolkit from NVIDIA's .deb for other work, whose
    # libraries the .deb lists in /etc/ld.so.conf.d (TensorFlow finds its wheels first).
    parts.tensorflow_2_15_and_cuda(root, VENV)
    base = gpu.toolkit(root, "12.4")
    gpu.link(root, "/usr/local/cuda", base)
    gpu.ld_cache(root, [f"{base}/lib64"])


register(HealthyMachine(
    "gpu-workstation-pip-cuda-second-toolkit", ("CUDA", "CUPTI", "DRV", "XLA", "GPU", "PKG", "THR", "CPU"),
    "one A100, tensorflow[and-cuda] 2.15 in a venv, an unused CUDA 12.4 toolkit in /usr/local/cuda",
    _workstation_second_toolkit, env=USER_ENV, python=VENV, gpus=(FakeGpu(),)))
