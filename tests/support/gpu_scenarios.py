"""Fake GPU machines: the trees the GPU probes are tested on, and the source of the recorded fixtures
in tests/snapshots/gpu/ (`python tests/support/gpu_scenarios.py` rewrites them).

Each scenario builds a FakeRoot (CUDA toolkits, pip nvidia-* wheels in a venv, /proc/driver/nvidia,
/sys/bus/pci) and a fake NVML, runs tfdoctor's own probes over it, and adds the python section a GPU
machine's interpreter would report. The fixture is then exactly what `tfdoctor collect` writes.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from tfdoctor.facts import Facts, from_jsonable
from tfdoctor.testing import FakeRoot
from tfdoctor.testing.elf import shared_object
from tfdoctor.testing.fake_nvml import FakeGpu, FakeNvml

SNAPSHOTS = Path(__file__).resolve().parents[1] / "snapshots" / "gpu"
HOME = "/home/ada"
VENV = f"{HOME}/venv"
SITE = f"{VENV}/lib/python3.11/site-packages"
CAPS_215 = ["sm_50", "sm_60", "sm_70", "sm_80", "compute_90"]
PINS_215 = {
    "nvidia-cublas-cu12": "12.2.5.6", "nvidia-cuda-cupti-cu12": "12.2.142", "nvidia-cuda-nvcc-cu12": "12.2.140",
    "nvidia-cuda-nvrtc-cu12": "12.2.140", "nvidia-cuda-runtime-cu12": "12.2.140", "nvidia-cudnn-cu12": "8.9.4.25",
    "nvidia-cufft-cu12": "11.0.8.103", "nvidia-curand-cu12": "10.3.3.141", "nvidia-cusolver-cu12": "11.5.2.141",
    "nvidia-cusparse-cu12": "12.1.2.141", "nvidia-nccl-cu12": "2.16.5", "nvidia-nvjitlink-cu12": "12.2.140",
}
PINS_216 = {  # tensorflow 2.16.1's and-cuda extra
    "nvidia-cublas-cu12": "12.3.4.1", "nvidia-cuda-cupti-cu12": "12.3.101", "nvidia-cuda-nvcc-cu12": "12.3.107",
    "nvidia-cuda-nvrtc-cu12": "12.3.107", "nvidia-cuda-runtime-cu12": "12.3.101", "nvidia-cudnn-cu12": "8.9.7.29",
    "nvidia-cufft-cu12": "11.0.12.1", "nvidia-curand-cu12": "10.3.4.107", "nvidia-cusolver-cu12": "11.5.4.101",
    "nvidia-cusparse-cu12": "12.2.0.103", "nvidia-nccl-cu12": "2.19.3", "nvidia-nvjitlink-cu12": "12.3.101",
}
# wheel folder under site-packages/nvidia -> (dist, files: name -> version-carrying real name or None)
WHEEL_FILES = {
    "cublas": ("nvidia-cublas-cu12", ["libcublas.so.12", "libcublasLt.so.12"]),
    "cuda_cupti": ("nvidia-cuda-cupti-cu12", ["libcupti.so.12"]),
    "cuda_runtime": ("nvidia-cuda-runtime-cu12", ["libcudart.so.12"]),
    "cudnn": ("nvidia-cudnn-cu12", ["libcudnn.so.8"]),
    "cufft": ("nvidia-cufft-cu12", ["libcufft.so.11"]),
    "cusolver": ("nvidia-cusolver-cu12", ["libcusolver.so.11"]),
    "cusparse": ("nvidia-cusparse-cu12", ["libcusparse.so.12"]),
    "nccl": ("nvidia-nccl-cu12", ["libnccl.so.2"]),
    "cuda_nvcc": ("nvidia-cuda-nvcc-cu12", []),
}
# Toolkit library real names, by CUDA version (soname -> file).
TOOLKIT_LIBS = {
    "12.2": {"libcudart.so.12": "libcudart.so.12.2.140", "libcublas.so.12": "libcublas.so.12.2.5.6",
             "libcublasLt.so.12": "libcublasLt.so.12.2.5.6", "libcufft.so.11": "libcufft.so.11.0.8.103",
             "libcusolver.so.11": "libcusolver.so.11.5.2.141", "libcusparse.so.12": "libcusparse.so.12.1.2.141"},
    "12.4": {"libcudart.so.12": "libcudart.so.12.4.127", "libcublas.so.12": "libcublas.so.12.4.5.8",
             "libcublasLt.so.12": "libcublasLt.so.12.4.5.8"},
    "11.8": {"libcudart.so.11.0": "libcudart.so.11.8.89", "libcublas.so.11": "libcublas.so.11.11.3.6",
             "libcublasLt.so.11": "libcublasLt.so.11.11.3.6", "libcufft.so.10": "libcufft.so.10.9.0.58",
             "libcusolver.so.11": "libcusolver.so.11.4.1.48", "libcusparse.so.11": "libcusparse.so.11.7.5.86"},
    "11.2": {"libcudart.so.11.0": "libcudart.so.11.2.152", "libcublas.so.11": "libcublas.so.11.4.1.1043",
             "libcublasLt.so.11": "libcublasLt.so.11.4.1.1043", "libcufft.so.10": "libcufft.so.10.4.1.152",
             "libcusolver.so.11": "libcusolver.so.11.1.0.152", "libcusparse.so.11": "libcusparse.so.11.4.1.1152"},
}
A100_DEVICE_ID = "0x20b0"  # the PCI device id of the A100 SXM4 (pci.ids: GA100)
# NVML's name of each model a scenario or a recorded fixture lists -> its PCI device id (pci.ids, vendor 10de)
# and class: the datacenter parts are 3D controllers (0x0302), the GeForce cards VGA controllers (0x0300).
PCI_MODELS = {
    "NVIDIA A100-SXM4-40GB": (A100_DEVICE_ID, "0x030200"),  # GA100 [A100 SXM4 40GB]
    "NVIDIA A100-SXM4-80GB": ("0x20b2", "0x030200"),  # GA100 [A100 SXM4 80GB]
    "Tesla V100-SXM2-32GB": ("0x1db5", "0x030200"),  # GV100GL [Tesla V100 SXM2 32GB]
    "Tesla V100-SXM2-16GB": ("0x1db1", "0x030200"),  # GV100GL [Tesla V100 SXM2 16GB]
    "Tesla P100-PCIE-16GB": ("0x15f8", "0x030200"),  # GP100GL [Tesla P100 PCIe 16GB]
    "Tesla T4": ("0x1eb8", "0x030200"),  # TU104GL [Tesla T4]
    "NVIDIA H100 80GB HBM3": ("0x2330", "0x030200"),  # GH100 [H100 SXM5 80GB]
    "Tesla K80": ("0x102d", "0x030200"),  # GK210GL [Tesla K80]
    "NVIDIA GeForce RTX 5090": ("0x2b85", "0x030000"),  # GB202 [GeForce RTX 5090]
    "NVIDIA GeForce RTX 4090": ("0x2684", "0x030000"),  # AD102 [GeForce RTX 4090]
}
CUPTI_DATED = {"12.2": "libcupti.so.2023.2.2", "12.4": "libcupti.so.2024.1.1", "11.8": "libcupti.so.2022.3.0",
               "11.2": "libcupti.so.2020.3.1"}


def lib(root: FakeRoot, path: str, soname: str | None = None) -> None:
    root.write(path, shared_object(soname or path.rsplit("/", 1)[1]))


def link(root: FakeRoot, path: str, target: str) -> None:
    if not (root.path / path.lstrip("/")).is_symlink():
        root.symlink(path, target)


RECORDS = Path(__file__).resolve().parents[1] / "data" / "wheel_records"


def record(version: str) -> dict[str, Any]:
    """The committed record of a real tensorflow wheel (python -m tfdoctor.knowledge.extract)."""
    return json.loads((RECORDS / f"tensorflow-{version}.json").read_text())


def release(root: FakeRoot, version: str, site: str = SITE) -> dict[str, Any]:
    """TensorFlow `version` as its real wheel installs it: build_info.py, METADATA (the real Requires-Dist)
    and the main shared objects with their real NEEDED and RUNPATH, all from the committed record."""
    wheel = record(version)
    info = wheel["build_info"]
    tensorflow(root, version=version, cuda=info["cuda_version"], cudnn=info["cudnn_version"],
               caps=info["cuda_compute_capabilities"], site=site, requires=wheel["requires_dist"])
    for name, elf in wheel["libraries"].items():
        root.write(f"{site}/{name}", shared_object(elf["soname"] or name.rsplit("/", 1)[1],
                                                   needed=tuple(elf["needed"]), runpath=tuple(elf["runpath"])))
    return wheel


def tensorflow(root: FakeRoot, version: str = "2.15.0", cuda: str | None = "12.2", cudnn: str | None = "8",
               caps: list[str] | None = None, pins: dict[str, str] | None = None, site: str = SITE,
               requires: list[str] | None = None) -> None:
    build: dict[str, Any] = {"is_cuda_build": cuda is not None, "is_rocm_build": False, "is_tensorrt_build": False}
    if cuda:
        build.update(cuda_version=cuda, cudnn_version=cudnn, cuda_compute_capabilities=caps or CAPS_215)
    root.write(f"{site}/tensorflow/__init__.py", "")
    root.write(f"{site}/tensorflow/python/platform/build_info.py",
               f"import collections\nbuild_info = collections.OrderedDict({sorted(build.items())!r})\n")
    lines = requires if requires is not None else [f'{n}=={v}; extra == "and-cuda"' for n, v in (pins or {}).items()]
    text = "".join(f"Requires-Dist: {line}\n" for line in lines)
    root.write(f"{site}/tensorflow-{version}.dist-info/METADATA",
               f"Metadata-Version: 2.1\nName: tensorflow\nVersion: {version}\n{text}\n")


def wheels(root: FakeRoot, versions: dict[str, str] = PINS_215, only: tuple[str, ...] | None = None,
           site: str = SITE, cudnn_major: str = "8") -> None:
    for folder, (dist, files) in WHEEL_FILES.items():
        if only is not None and folder not in only:
            continue
        version = versions[dist]
        files = [f.replace("libcudnn.so.8", f"libcudnn.so.{cudnn_major}") for f in files]
        root.write(f"{site}/{dist.replace('-', '_')}-{version}.dist-info/METADATA",
                   f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n\n")
        root.write(f"{site}/nvidia/{folder}/__init__.py", "")
        for name in files:
            lib(root, f"{site}/nvidia/{folder}/lib/{name}")
        if folder == "cuda_nvcc":
            root.write(f"{site}/nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc", b"BC\xc0\xde")
            root.write(f"{site}/nvidia/cuda_nvcc/bin/ptxas", "#!/bin/sh\n", mode=0o755)


def toolkit(root: FakeRoot, version: str = "12.2", cupti: str = "versioned", libdevice: bool = True,
            cudnn: str | None = None, nccl: bool = True) -> str:
    """/usr/local/cuda-<version> with lib64, extras/CUPTI/lib64 and nvvm; returns its path.
    cupti: "versioned" (libcupti.so.<soname> -> dated file), "dated" (the dated file only), "none"."""
    base = f"/usr/local/cuda-{version}"
    major = version.split(".")[0]
    for soname, real in TOOLKIT_LIBS[version].items():
        lib(root, f"{base}/lib64/{real}", soname)
        link(root, f"{base}/lib64/{soname}", real)
    if cudnn:
        lib(root, f"{base}/lib64/libcudnn.so.{cudnn}", f"libcudnn.so.{cudnn.split('.')[0]}")
        link(root, f"{base}/lib64/libcudnn.so.{cudnn.split('.')[0]}", f"libcudnn.so.{cudnn}")
        parts = zip(("MAJOR", "MINOR", "PATCHLEVEL"), cudnn.split("."), strict=True)
        root.write(f"{base}/include/cudnn_version.h", "".join(f"#define CUDNN_{k} {v}\n" for k, v in parts))
    cupti_soname = f"libcupti.so.{major}" if int(major) >= 12 else f"libcupti.so.{version}"
    if cupti != "none":
        lib(root, f"{base}/extras/CUPTI/lib64/{CUPTI_DATED[version]}", cupti_soname)
        if cupti == "versioned":
            link(root, f"{base}/extras/CUPTI/lib64/{cupti_soname}", CUPTI_DATED[version])
    if libdevice:
        root.write(f"{base}/nvvm/libdevice/libdevice.10.bc", b"BC\xc0\xde")
    root.write(f"{base}/bin/ptxas", "#!/bin/sh\n", mode=0o755)
    if nccl:  # NCCL comes from the distribution's libnccl2 package, in the default folder.
        lib(root, "/usr/lib/x86_64-linux-gnu/libnccl.so.2.18.3", "libnccl.so.2")
        link(root, "/usr/lib/x86_64-linux-gnu/libnccl.so.2", "libnccl.so.2.18.3")
    patch = {"12.2": "12.2.140", "12.4": "12.4.131", "11.8": "11.8.89", "11.2": "11.2.152"}[version]
    root.write(f"{base}/version.json", json.dumps({"cuda": {"name": "CUDA SDK", "version": patch},
                                                   "cuda_nvcc": {"version": patch}}))
    return base


def gpu_uuid(index: int) -> str:
    """The UUID /proc/driver/nvidia/gpus/<bus>/information gives GPU `index` of a fake machine."""
    return f"GPU-{index:08d}-5a1d-4b2e-9f3a-0d6c7b8e9f10"


def driver(root: FakeRoot, version: str = "550.54.15", gpus: int = 1, profiling_admin_only: int = 0,
           proc_gpus: bool = True, buses: Sequence[str] | None = None) -> None:
    """A loaded nvidia module that has claimed the GPUs: `gpus` A100s from 0000:3b:00.0 on, put on the PCI
    bus here, or the GPUs already on the bus at `buses`. proc_gpus=False: no /proc/driver/nvidia/gpus (the
    GPUs show only on the PCI bus, as in a container that mounts the driver's version file but not the
    per-GPU folders)."""
    claimed = [f"0000:{0x3b + i:02x}:00.0" for i in range(gpus)] if buses is None else list(buses)
    root.write("/proc/driver/nvidia/version",
               f"NVRM version: NVIDIA UNIX x86_64 Kernel Module  {version}  Thu Feb 22 01:44:30 UTC 2024\n"
               "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n")
    root.write("/proc/driver/nvidia/params", f"ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: "
                                             f"{profiling_admin_only}\nEnableMSI: 1\n")
    for i, bus in enumerate(claimed):
        root.write(f"/dev/nvidia{i}", "")
        if not proc_gpus:
            continue
        root.write(f"/proc/driver/nvidia/gpus/{bus}/information",
                   f"Model: \t\t NVIDIA A100-SXM4-40GB\nDevice Minor: \t {i}\nBus Location: \t {bus}\n"
                   f"GPU UUID: \t {gpu_uuid(i)}\n")
    if buses is None:
        pci(root, gpus)
    bind(root, claimed)
    lib(root, f"/usr/lib/x86_64-linux-gnu/libcuda.so.{version}", "libcuda.so.1")
    link(root, "/usr/lib/x86_64-linux-gnu/libcuda.so.1", f"libcuda.so.{version}")


def bind(root: FakeRoot, buses: Sequence[str]) -> None:
    """The nvidia module's claim on each PCI function, as sysfs shows it: the device's driver link and the
    driver's link back. NVML lists only GPUs the module has claimed."""
    for bus in buses:
        link(root, f"/sys/bus/pci/devices/{bus}/driver", "../../drivers/nvidia")
        link(root, f"/sys/bus/pci/drivers/nvidia/{bus}", f"../../devices/{bus}")


def pci(root: FakeRoot, gpus: int = 1) -> None:
    """`gpus` A100s (device id 0x20b0) on the PCI bus from 0000:3b:00.0 on, and a SATA controller (build_root
    then makes each the model its scenario's NVML names: dress_gpus)."""
    for i in range(gpus):
        base = f"/sys/bus/pci/devices/0000:{0x3b + i:02x}:00.0"
        root.write(f"{base}/vendor", "0x10de\n").write(f"{base}/class", "0x030200\n")
        root.write(f"{base}/device", f"{A100_DEVICE_ID}\n").write(f"{base}/numa_node", f"{i % 2}\n")
    root.write("/sys/bus/pci/devices/0000:00:1f.2/vendor", "0x8086\n")
    root.write("/sys/bus/pci/devices/0000:00:1f.2/class", "0x010601\n")


# Real effective capability masks (CapEff of /proc/self/status).
CAPS_DOCKER_DEFAULT = "00000000a80425fb"  # docker/podman/containerd default set: no CAP_SYS_ADMIN (bit 21)
CAPS_DOCKER_SYS_ADMIN = "00000000a82425fb"  # the default set plus --cap-add SYS_ADMIN
CAPS_PRIVILEGED = "000001ffffffffff"  # --privileged (kernel ≥ 5.9: 41 capabilities); host root alike
CAPS_PRIVILEGED_OLD_KERNEL = "0000003fffffffff"  # --privileged before CAP_PERFMON/BPF/CHECKPOINT_RESTORE


def process(root: FakeRoot, uid: int = 1000, cap_eff: str = "0000000000000000", cgroup: str | None = None) -> None:
    root.write("/proc/self/status", f"Name:\tpython\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\nCapEff:\t{cap_eff}\n"
                                    "Cpus_allowed_list:\t0-7\nMems_allowed_list:\t0\n")
    if cgroup is not None:
        root.write("/proc/self/cgroup", cgroup)


def wsl2(root: FakeRoot) -> None:
    """WSL2: /dev/dxg and the Windows driver's user-space libraries in /usr/lib/wsl/lib (on the loader's
    path through /etc/ld.so.conf.d/ld.wsl.conf); no /proc/driver/nvidia, no NVIDIA device on the PCI bus."""
    root.write("/dev/dxg", "")
    lib(root, "/usr/lib/wsl/lib/libcuda.so.1.1", "libcuda.so.1")
    link(root, "/usr/lib/wsl/lib/libcuda.so.1", "libcuda.so.1.1")
    lib(root, "/usr/lib/wsl/lib/libnvidia-ml.so.1", "libnvidia-ml.so.1")
    root.write("/proc/version", "Linux version 5.15.133.1-microsoft-standard-WSL2 (root@1c602f52c2e4) "
                                "(gcc (GCC) 11.2.0) #1 SMP Thu Oct 5 21:02:42 UTC 2023\n")
    ld_cache(root, ["/usr/lib/wsl/lib"])


def ld_cache(root: FakeRoot, dirs: list[str]) -> bool:
    """A real /etc/ld.so.cache over `dirs`, built by ldconfig (False when ldconfig is missing)."""
    ldconfig = shutil.which("ldconfig") or ("/sbin/ldconfig" if Path("/sbin/ldconfig").exists() else None)
    root.write("/etc/ld.so.conf", "".join(d + "\n" for d in ["/usr/lib/x86_64-linux-gnu", *dirs]))
    if not ldconfig:
        return False
    subprocess.run([ldconfig, "-r", str(root.path), "-C", "/etc/ld.so.cache", "-f", "/etc/ld.so.conf", "-X"],
                   check=True, capture_output=True, timeout=30)
    return True


# -- the python section a GPU machine's interpreter would report ----------------------------------

def python_section(tf_version: str | None = "2.15.0", cuda: str | None = "12.2", cudnn: str | None = "8",
                   caps: list[str] | None = None, pins: dict[str, str] | None = None,
                   installed: dict[str, str] | None = None, profiler: bool = False,
                   dist: str = "tensorflow") -> dict[str, Any]:
    watched: dict[str, Any] = {}
    tf_section: dict[str, Any] = {"package_dir": None, "build_info": None}
    if tf_version:
        requires = [f'{n}=={v}; extra == "and-cuda"' for n, v in (pins or {}).items()]
        watched[dist] = {"version": tf_version, "location": SITE, "requires_dist": requires,
                         "requires_python": ">=3.9", "wheel_tags": ["cp311-cp311-manylinux_2_17_x86_64"]}
        build: dict[str, Any] = {"is_cuda_build": cuda is not None, "is_rocm_build": False}
        if cuda:
            build.update(cuda_version=cuda, cudnn_version=cudnn, cuda_compute_capabilities=caps or CAPS_215)
        tf_section = {"package_dir": f"{SITE}/tensorflow", "build_info": build}
    for name, version in (installed or {}).items():
        watched[name] = {"version": version, "location": SITE, "requires_dist": [], "requires_python": None,
                         "wheel_tags": ["py3-none-manylinux1_x86_64"]}
    if profiler:
        watched["tensorboard-plugin-profile"] = {"version": "2.15.1", "location": SITE, "requires_dist": [],
                                                 "requires_python": None, "wheel_tags": ["py3-none-any"]}
    return {
        "executable": f"{VENV}/bin/python", "version": "3.11.7", "implementation": "CPython",
        "prefix": VENV, "base_prefix": "/usr", "platform": "linux", "machine": "x86_64",
        "path": [f"{VENV}/lib/python311.zip", SITE],
        "distributions": {k: {"version": v["version"], "location": SITE} for k, v in sorted(watched.items())},
        "watched": watched, "tensorflow": tf_section,
    }


# -- scenarios ------------------------------------------------------------------------------------

@dataclass
class Scenario:
    """One machine: how to build its tree, its NVML, its environment, and what it should report."""

    name: str
    build: Callable[[FakeRoot], None]
    gpus: list[FakeGpu] = field(default_factory=lambda: [FakeGpu()])
    nvml: dict[str, Any] = field(default_factory=dict)  # FakeNvml keyword arguments
    env: dict[str, str] = field(default_factory=dict)
    python: dict[str, Any] = field(default_factory=dict)  # python_section keyword arguments
    expect: tuple[str, ...] = ()  # codes of the GPU families this machine must report (exactly)
    host: dict[str, Any] = field(default_factory=dict)  # host fields to override (e.g. Windows)
    no_nvml: bool = False  # no driver: the nvml section stays what the probe says

    def environment(self) -> dict[str, str]:
        return user_environment(self.env)


def user_environment(extra: dict[str, str]) -> dict[str, str]:
    """The variables of ada's shell with the venv activated, then `extra`."""
    return {"HOME": HOME, "USER": "ada", "VIRTUAL_ENV": VENV, "PATH": f"{VENV}/bin:/usr/local/bin:/usr/bin:/bin",
            **extra}


def _pip_machine(root: FakeRoot, gpus: int = 1) -> None:
    driver(root, gpus=gpus)
    process(root)
    tensorflow(root, pins=PINS_215)
    wheels(root)


def _system_toolkit(root: FakeRoot) -> None:
    driver(root)
    process(root)
    tensorflow(root, version="2.13.0", cuda="11.8", cudnn="8", caps=["sm_35", "sm_50", "sm_60", "sm_70", "sm_75",
                                                                      "compute_80"])
    base = toolkit(root, "11.8", cudnn="8.6.0")
    link(root, "/usr/local/cuda", base)
    ld_cache(root, [f"{base}/lib64", f"{base}/extras/CUPTI/lib64"])


def _laptop(root: FakeRoot) -> None:
    process(root)
    tensorflow(root, version="2.15.0", cuda=None, pins={})


PIP = {"pins": PINS_215, "installed": PINS_215}
SYSTEM_118 = {"tf_version": "2.13.0", "cuda": "11.8", "caps": ["sm_35", "sm_50", "sm_60", "sm_70", "sm_75",
                                                               "compute_80"]}
V100 = [FakeGpu(name="Tesla V100-SXM2-32GB", compute_capability=(7, 0), memory_total_mib=32768, remapped=None,
                mig=None, pcie=(3, 3, 16, 16))]
HEALTHY_PIP = Scenario("healthy-cuda12-pip", _pip_machine, python=PIP)


def _with(base: Callable[[FakeRoot], None], *extra: Callable[[FakeRoot], None]) -> Callable[[FakeRoot], None]:
    def build(root: FakeRoot) -> None:
        base(root)
        for step in extra:
            step(root)
    return build


def _toolkit_no_wheels(root: FakeRoot) -> None:
    driver(root)
    process(root)
    tensorflow(root, pins=PINS_215)
    base = toolkit(root, "12.2", cudnn="8.9.7")
    link(root, "/usr/local/cuda", base)
    wheels(root, only=("cuda_nvcc", "nccl"))


def _nothing_installed(root: FakeRoot) -> None:
    driver(root)
    process(root)
    tensorflow(root, pins=PINS_215)
    wheels(root, only=("cuda_nvcc",))


def _old_cudnn_on_path(root: FakeRoot) -> None:
    _pip_machine(root)
    lib(root, "/opt/cudnn-8.6/lib/libcudnn.so.8.6.0", "libcudnn.so.8")
    link(root, "/opt/cudnn-8.6/lib/libcudnn.so.8", "libcudnn.so.8.6.0")


def _newer_cublas_on_path(root: FakeRoot) -> None:
    _pip_machine(root)
    toolkit(root, "12.4")


def _cupti_off_path(root: FakeRoot) -> None:
    driver(root)
    process(root)
    tensorflow(root, version="2.13.0", cuda="11.8", cudnn="8", caps=SYSTEM_118["caps"])
    base = toolkit(root, "11.8", cudnn="8.6.0")
    link(root, "/usr/local/cuda", base)


def _cupti_dated_only(root: FakeRoot) -> None:
    driver(root)
    process(root)
    tensorflow(root, version="2.13.0", cuda="11.8", cudnn="8", caps=SYSTEM_118["caps"])
    base = toolkit(root, "11.8", cudnn="8.6.0", cupti="dated")
    link(root, "/usr/local/cuda", base)


def _no_driver(root: FakeRoot) -> None:
    process(root)
    pci(root)
    root.write("/.dockerenv", "")
    tensorflow(root, pins=PINS_215)
    wheels(root)


def _toolkit_without_cuda_link(root: FakeRoot) -> None:
    # CUDA 12.4, not the 12.2 the wheel was built with: TensorFlow 2.15's XLA also searches
    # /usr/local/cuda-12.2 (its build's toolkit path), and would find a 12.2 toolkit there.
    driver(root)
    process(root)
    tensorflow(root, pins={})
    base = toolkit(root, "12.4", cudnn="8.9.7")
    # The rest of a CUDA 12.4 toolkit's libraries TensorFlow loads (TOOLKIT_LIBS["12.4"] has the cuBLAS ones).
    for soname, real in {"libcufft.so.11": "libcufft.so.11.2.1.3", "libcusolver.so.11": "libcusolver.so.11.6.1.9",
                         "libcusparse.so.12": "libcusparse.so.12.3.1.170"}.items():
        lib(root, f"{base}/lib64/{real}", soname)
        link(root, f"{base}/lib64/{soname}", real)


def _old_toolkit_as_cuda(root: FakeRoot) -> None:
    _pip_machine(root)
    link(root, "/usr/local/cuda", toolkit(root, "11.8"))


def _profiling_restricted(root: FakeRoot) -> None:
    driver(root, profiling_admin_only=1)
    process(root)
    root.write("/.dockerenv", "")
    tensorflow(root, pins=PINS_215)
    wheels(root)


def _root_in_docker(root: FakeRoot) -> None:
    """`docker run --gpus all` as root: CapEff is Docker's default set, cgroup v2 namespaced ("0::/")."""
    driver(root, profiling_admin_only=1)
    process(root, uid=0, cap_eff=CAPS_DOCKER_DEFAULT, cgroup="0::/\n")
    root.write("/.dockerenv", "")
    tensorflow(root, pins=PINS_215)
    wheels(root)


def _root_in_kubernetes(root: FakeRoot) -> None:
    """A Kubernetes pod on cgroup v1 (containerd): no marker file, the pod's cgroup path and the service env."""
    driver(root, profiling_admin_only=1)
    process(root, uid=0, cap_eff=CAPS_DOCKER_DEFAULT, cgroup=(
        "12:cpuset:/kubepods/burstable/pod7f9c2a31-4b0e-4c6a-9d7e-2f1b8c3d4e5f/"
        "3c1e0f6a9b8d7c6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e\n"
        "11:memory:/kubepods/burstable/pod7f9c2a31-4b0e-4c6a-9d7e-2f1b8c3d4e5f/"
        "3c1e0f6a9b8d7c6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e\n"))
    tensorflow(root, pins=PINS_215)
    wheels(root)


def _container_with(cap_eff: str) -> Callable[[FakeRoot], None]:
    def build(root: FakeRoot) -> None:
        driver(root, profiling_admin_only=1)
        process(root, uid=0, cap_eff=cap_eff, cgroup="0::/\n")
        root.write("/.dockerenv", "")
        tensorflow(root, pins=PINS_215)
        wheels(root)
    return build


def _driver_without_nvml(version: str) -> Callable[[FakeRoot], None]:
    """The driver's version file and the GPU on the PCI bus, but no NVML (and no /proc/driver/nvidia/gpus)."""
    def build(root: FakeRoot) -> None:
        driver(root, version=version, proc_gpus=False)
        process(root)
        tensorflow(root, pins=PINS_215)
        wheels(root)
    return build


def _wsl2_machine(root: FakeRoot) -> None:
    wsl2(root)
    process(root)
    tensorflow(root, pins=PINS_215)
    wheels(root)


def _old_cudnn_minor(root: FakeRoot) -> None:
    """TensorFlow 2.13 (built with cuDNN 8.6; build_info says only "8") over the distribution's cuDNN 8.5."""
    driver(root)
    process(root)
    tensorflow(root, version="2.13.0", cuda="11.8", cudnn="8", caps=SYSTEM_118["caps"])
    base = toolkit(root, "11.8", cudnn="8.5.0")
    link(root, "/usr/local/cuda", base)
    ld_cache(root, [f"{base}/lib64", f"{base}/extras/CUPTI/lib64"])


def _pip_without_nccl(gpus: int) -> Callable[[FakeRoot], None]:
    """TensorFlow 2.21 (it loads NCCL: nvidia/nccl/lib on its framework's RUNPATH) without the NCCL wheel."""
    return _release_pip("2.21.0", gpus=gpus, leave_out=("nccl",))


def _static_nccl_two_gpus(root: FakeRoot) -> None:
    """TensorFlow 2.13 links NCCL in: no libnccl.so.2 anywhere, two GPUs, nothing missing."""
    driver(root, gpus=2)
    process(root)
    tensorflow(root, version="2.13.0", cuda="11.8", cudnn="8", caps=SYSTEM_118["caps"])
    base = toolkit(root, "11.8", cudnn="8.6.0", nccl=False)
    link(root, "/usr/local/cuda", base)
    ld_cache(root, [f"{base}/lib64", f"{base}/extras/CUPTI/lib64"])


def _tf216_pip(root: FakeRoot) -> None:
    """pip install 'tensorflow[and-cuda]==2.16.1': the wheels are there, TensorFlow's RUNPATH misses them."""
    driver(root)
    process(root)
    tensorflow(root, version="2.16.1", cuda="12.3", pins=PINS_216)
    wheels(root, PINS_216)


def _release_pip(version: str, gpus: int = 1, leave_out: tuple[str, ...] = (),
                 wheel_versions: dict[str, str] | None = None) -> Callable[[FakeRoot], None]:
    """pip install 'tensorflow[and-cuda]==<version>' from the real wheel's record; `leave_out` wheel folders,
    `wheel_versions` other nvidia-* versions than the and-cuda extra's."""
    def build(root: FakeRoot) -> None:
        driver(root, gpus=gpus)
        process(root)
        pip_release(root, version, leave_out, wheel_versions)
    return build


def pip_release(root: FakeRoot, version: str, leave_out: tuple[str, ...] = (),
                wheel_versions: dict[str, str] | None = None, site: str = SITE) -> None:
    """The venv of `pip install 'tensorflow[and-cuda]==<version>'`: the release and its nvidia-* wheels."""
    wheel = release(root, version, site=site)
    floors = {name: spec.lstrip("=>").split(",")[0] for name, spec in wheel["and_cuda"].items()}
    wheels(root, {**PINS_216, **floors, **(wheel_versions or {})},
           only=tuple(f for f in WHEEL_FILES if f not in leave_out),
           cudnn_major=wheel["build_info"]["cudnn_version"], site=site)


# The nvidia-* wheels of CUDA 12.8 (a source build of TensorFlow for Blackwell would pin these).
WHEELS_128 = {"nvidia-cublas-cu12": "12.8.4.1", "nvidia-cuda-cupti-cu12": "12.8.90", "nvidia-cuda-nvcc-cu12": "12.8.93",
              "nvidia-cuda-runtime-cu12": "12.8.90", "nvidia-cudnn-cu12": "9.8.0.87", "nvidia-cufft-cu12": "11.3.3.83",
              "nvidia-cusolver-cu12": "11.7.3.90", "nvidia-cusparse-cu12": "12.5.8.93", "nvidia-nccl-cu12": "2.26.2"}


def _ptxas_toolkit(release: str, nvcc: str) -> Callable[[FakeRoot], None]:
    """TensorFlow 2.17.1 from pip without the nvidia-cuda-nvcc wheel, and /usr/local/cuda -> a CUDA 12.3
    toolkit whose version.json names its release and its nvcc component (what ptxas --version prints)."""
    def build(root: FakeRoot) -> None:
        _release_pip("2.17.1", leave_out=("cuda_nvcc",))(root)
        base = "/usr/local/cuda-12.3"
        root.write(f"{base}/version.json", json.dumps({"cuda": {"name": "CUDA SDK", "version": release},
                                                       "cuda_nvcc": {"name": "CUDA NVCC", "version": nvcc}}))
        root.write(f"{base}/bin/ptxas", "#!/bin/sh\n", mode=0o755)
        root.write(f"{base}/nvvm/libdevice/libdevice.10.bc", b"BC\xc0\xde")
        link(root, "/usr/local/cuda", base)
    return build


def release_python(version: str) -> dict[str, Any]:
    """The python section of an interpreter with that real release and its pinned wheels installed."""
    wheel = record(version)
    info = wheel["build_info"]
    floors = {name: spec.lstrip("=>").split(",")[0] for name, spec in wheel["and_cuda"].items()}
    pins = {name: spec[2:] for name, spec in wheel["and_cuda"].items() if spec.startswith("==")}  # 2.20 on: ranges
    return {"tf_version": version, "cuda": info["cuda_version"], "cudnn": info["cudnn_version"],
            "caps": info["cuda_compute_capabilities"], "pins": pins, "installed": floors}


WHEEL_LIB_PATH_216 = ":".join(f"{SITE}/nvidia/{folder}/lib" for folder in WHEEL_FILES if folder != "cuda_nvcc")
CONDA_ENV = f"{HOME}/miniconda3/envs/tf"
CONDA_SITE = f"{CONDA_ENV}/lib/python3.10/site-packages"


def _conda_without_activate_d(root: FakeRoot) -> None:
    """conda install -c conda-forge cudatoolkit=11.8.0 and pip install tensorflow==2.12.1, but not the
    install guide's etc/conda/activate.d/env_vars.sh: the libraries sit in $CONDA_PREFIX/lib, unseen."""
    driver(root)
    process(root)
    tensorflow(root, version="2.12.1", cuda="11.8", cudnn="8", caps=SYSTEM_118["caps"], site=CONDA_SITE)
    for soname, real in TOOLKIT_LIBS["11.8"].items():
        lib(root, f"{CONDA_ENV}/lib/{real}", soname)
        link(root, f"{CONDA_ENV}/lib/{soname}", real)
    lib(root, f"{CONDA_ENV}/lib/libcudnn.so.8.6.0", "libcudnn.so.8")
    link(root, f"{CONDA_ENV}/lib/libcudnn.so.8", "libcudnn.so.8.6.0")
    lib(root, f"{CONDA_ENV}/lib/libcupti.so.2022.3.0", "libcupti.so.11.8")
    link(root, f"{CONDA_ENV}/lib/libcupti.so.11.8", "libcupti.so.2022.3.0")
    # conda install -c nvidia cuda-nvcc=11.8.89, libdevice copied where XLA_FLAGS points (the guide's steps)
    root.write(f"{CONDA_ENV}/lib/nvvm/libdevice/libdevice.10.bc", b"BC\xc0\xde")
    root.write(f"{CONDA_ENV}/bin/ptxas", "#!/bin/sh\n", mode=0o755)


def _conda_with_activate_d(root: FakeRoot) -> None:
    _conda_without_activate_d(root)
    root.write(f"{CONDA_ENV}/etc/conda/activate.d/env_vars.sh",
               "export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$CONDA_PREFIX/lib/\n")


CONDA_ENVIRONMENT = {"CONDA_PREFIX": CONDA_ENV, "CONDA_DEFAULT_ENV": "tf", "VIRTUAL_ENV": "",
                     "CONDA_EXE": f"{HOME}/miniconda3/bin/conda", "CONDA_PYTHON_EXE": f"{HOME}/miniconda3/bin/python",
                     "PATH": f"{CONDA_ENV}/bin:/usr/local/bin:/usr/bin:/bin",
                     "XLA_FLAGS": f"--xla_gpu_cuda_data_dir={CONDA_ENV}/lib/"}
CONDA_PYTHON = {"tf_version": "2.12.1", "cuda": "11.8", "caps": SYSTEM_118["caps"]}
def _cupti_of_another_cuda(root: FakeRoot) -> None:
    """tensorflow[and-cuda] 2.15 without the CUPTI wheel, /usr/local/cuda -> cuda-11.8 whose extras/CUPTI
    has the toolkit's unversioned libcupti.so link; CUDA 12.2's toolkit is on disk too."""
    driver(root)
    process(root)
    tensorflow(root, pins=PINS_215)
    wheels(root, only=tuple(f for f in WHEEL_FILES if f != "cuda_cupti"))
    old = toolkit(root, "11.8")
    link(root, f"{old}/extras/CUPTI/lib64/libcupti.so", "libcupti.so.11.8")
    link(root, "/usr/local/cuda", old)
    toolkit(root, "12.2")


XLA_122 = {"XLA_FLAGS": "--xla_gpu_cuda_data_dir=/usr/local/cuda-12.2"}
CUPTI_ENV_OLD = {"LD_LIBRARY_PATH": "/usr/local/cuda/extras/CUPTI/lib64", **XLA_122}
CUPTI_ENV_RIGHT = {"LD_LIBRARY_PATH": "/usr/local/cuda-12.2/extras/CUPTI/lib64", **XLA_122}
PIP_NO_CUPTI = {"pins": PINS_215, "installed": {k: v for k, v in PINS_215.items() if "cupti" not in k}}
RTX_5090 = [FakeGpu(name="NVIDIA GeForce RTX 5090", compute_capability=(12, 0), memory_total_mib=32607, ecc=None,
                    remapped=None, mig=None, pcie=(5, 5, 16, 16))]
H100 = [FakeGpu(name="NVIDIA H100 80GB HBM3", compute_capability=(9, 0), memory_total_mib=81559, pcie=(5, 5, 16, 16))]
DRIVER_575 = {"driver": "575.57.08", "cuda": 12090}
CUSOLVER_221 = f"{SITE}/nvidia/cusolver/lib"
TWO_A100 = [FakeGpu(), FakeGpu(uuid="GPU-1b2c3d4e-0000-4b2e-9f3a-0d6c7b8e9f11", pci_bus_id="00000000:3C:00.0")]
RTX_4090_WSL = [FakeGpu(name="NVIDIA GeForce RTX 4090", compute_capability=(8, 9), memory_total_mib=24564, ecc=None,
                        remapped=None, mig=None, persistence=None, pci_bus_id="00000000:01:00.0")]
LIB_PATH_122 = "/usr/local/cuda-12.2/lib64"
TOOLKIT_124_ENV = {"LD_LIBRARY_PATH": "/usr/local/cuda-12.4/lib64:/usr/local/cuda-12.4/extras/CUPTI/lib64"}

SCENARIOS: list[Scenario] = [
    HEALTHY_PIP,
    Scenario("healthy-system-toolkit", _system_toolkit, python=SYSTEM_118, gpus=V100),
    Scenario("healthy-cpu-laptop", _laptop, gpus=[], no_nvml=True,
             python={"cuda": None, "pins": {}}),
    Scenario("cuda001-library-not-on-loader-path", _toolkit_no_wheels, python={"pins": PINS_215, "installed": {
        "nvidia-cuda-nvcc-cu12": "12.2.140", "nvidia-nccl-cu12": "2.16.5"}}, expect=("CUDA001", "CUPTI001")),
    Scenario("cuda001-library-not-installed", _nothing_installed, python={"pins": PINS_215, "installed": {
        "nvidia-cuda-nvcc-cu12": "12.2.140"}}, expect=("CUDA001", "CUPTI001")),
    Scenario("cuda002-cudnn-older-than-build", _old_cudnn_on_path, python=PIP,
             env={"LD_LIBRARY_PATH": "/opt/cudnn-8.6/lib"}, expect=("CUDA002",)),
    Scenario("cuda003-cublas-shadowed", _newer_cublas_on_path, python=PIP,
             env={"LD_LIBRARY_PATH": "/usr/local/cuda-12.4/lib64"}, expect=("CUDA003",)),
    Scenario("cuda004-visible-devices-missing", partial(_pip_machine, gpus=2), python=PIP, gpus=TWO_A100,
        env={"CUDA_VISIBLE_DEVICES": "1,2,3"}, expect=("CUDA004",)),
    Scenario("cuda005-visible-devices-empty", _pip_machine, python=PIP, env={"CUDA_VISIBLE_DEVICES": ""},
             expect=("CUDA005",)),
    Scenario("cuda006-visible-devices-mixed", partial(_pip_machine, gpus=2), python=PIP, gpus=TWO_A100,
        env={"CUDA_VISIBLE_DEVICES": "0,GPU-1b2c3d4e"}, expect=("CUDA006",)),
    Scenario("cuda007-jit-cache-default", _pip_machine, python=PIP,
             gpus=H100, expect=("CUDA007", "DRV003")),
    # Set up to profile (tensorboard-plugin-profile): a warning. The dated-name one profiles nothing: an info.
    Scenario("cupti001-cupti-not-on-loader-path", _cupti_off_path, python={**SYSTEM_118, "profiler": True},
             env={"LD_LIBRARY_PATH": "/usr/local/cuda/lib64"}, nvml={"cuda": 12020}, gpus=V100, expect=("CUPTI001",)),
    Scenario("cupti001-cupti-dated-name-only", _cupti_dated_only, python=SYSTEM_118,
             env={"LD_LIBRARY_PATH": "/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64"},
             nvml={"cuda": 12020}, gpus=V100, expect=("CUPTI001",)),
    Scenario("cupti002-profiling-admin-only", _profiling_restricted, python={**PIP, "profiler": True},
             expect=("CUPTI002",)),
    Scenario("drv001-driver-not-loaded", _no_driver, python=PIP, no_nvml=True, gpus=[], expect=("DRV001",)),
    Scenario("drv002-driver-cuda-too-old", _pip_machine, python=PIP, nvml={"driver": "470.82.01", "cuda": 11040},
             expect=("DRV002",)),
    Scenario("drv003-gpu-older-than-build", _pip_machine, python=PIP,
             gpus=[FakeGpu(name="Tesla K80", compute_capability=(3, 7), memory_total_mib=11441, remapped=None,
                           mig=None, pcie=(3, 3, 16, 16))], expect=("DRV003",)),
    Scenario("drv004-windows-native", _laptop, python={"cuda": None, "pins": {}, "dist": "tensorflow-intel"},
             host={"system": "Windows", "nvidia_driver": None}, gpus=[FakeGpu(name="NVIDIA GeForce RTX 4090",
             compute_capability=(8, 9), ecc=None, remapped=None, mig=None)], expect=("DRV004",)),
    Scenario("gpu001-persistence-off", _pip_machine, python=PIP, gpus=[FakeGpu(persistence=False)],
             expect=("GPU001",)),
    Scenario("gpu002-uncorrectable-ecc", _pip_machine, python=PIP, gpus=[FakeGpu(ecc=(True, 2, 5))],
             expect=("GPU002",)),
    Scenario("gpu003-row-remap-pending", _pip_machine, python=PIP,
             gpus=[FakeGpu(remapped=(0, 1, True, False), retired=(0, 1, True))], expect=("GPU003",)),
    Scenario("gpu004-power-brake-at-idle", _pip_machine, python=PIP, gpus=[FakeGpu(clock_reasons=0x1 | 0x80)],
             expect=("GPU004",)),
    Scenario("gpu005-pcie-width-degraded", _pip_machine, python=PIP, gpus=[FakeGpu(pcie=(4, 4, 8, 16))],
             expect=("GPU005",)),
    Scenario("gpu006-mig-without-instances", _pip_machine, python=PIP, gpus=[FakeGpu(mig=(True, True))],
             expect=("GPU006",)),
    Scenario("gpu007-memory-held-by-other-process", _pip_machine, python=PIP,
             gpus=[FakeGpu(memory_used_mib=31000, processes=[(4242, 30990)], utilization=0)], expect=("GPU007",)),
    Scenario("cupti002-root-in-docker", _root_in_docker, python={**PIP, "profiler": True}, expect=("CUPTI002",)),
    Scenario("cupti002-root-in-kubernetes", _root_in_kubernetes, python={**PIP, "profiler": True},
             env={"KUBERNETES_SERVICE_HOST": "10.96.0.1"}, expect=("CUPTI002",)),
    # TensorBoard before 2.2 bundled the profile plugin: the intent to profile, as a plugin would be.
    Scenario("cupti002-tensorboard-2-1-bundles-the-profiler", _root_in_docker,
             python={**PIP, "installed": {**PIP["installed"], "tensorboard": "2.1.1"}}, expect=("CUPTI002",)),
    Scenario("healthy-tensorboard-2-1-with-sys-admin", _container_with(CAPS_DOCKER_SYS_ADMIN),
             python={**PIP, "installed": {**PIP["installed"], "tensorboard": "2.1.1"}}),
    Scenario("healthy-container-with-sys-admin", _container_with(CAPS_DOCKER_SYS_ADMIN),
             python={**PIP, "profiler": True}),
    Scenario("healthy-privileged-container", _container_with(CAPS_PRIVILEGED_OLD_KERNEL),
             python={**PIP, "profiler": True}),
    Scenario("drv002-driver-too-old-without-nvml", _driver_without_nvml("470.82.01"), python=PIP, no_nvml=True,
             gpus=[], expect=("DRV002",)),
    Scenario("healthy-driver-without-nvml", _driver_without_nvml("550.54.15"), python=PIP, no_nvml=True, gpus=[]),
    Scenario("healthy-wsl2", _wsl2_machine, python=PIP, gpus=RTX_4090_WSL, nvml={"driver": "546.33", "cuda": 12030}),
    Scenario("drv002-wsl2-windows-driver-too-old", _wsl2_machine, python=PIP, gpus=RTX_4090_WSL,
             nvml={"driver": "531.41", "cuda": 12010}, expect=("DRV002",)),
    Scenario("cuda002-cudnn-minor-older-than-release", _old_cudnn_minor, python=SYSTEM_118, gpus=V100,
             expect=("CUDA002",)),
    # NCCL: compiled into 2.14-2.20 (no libnccl.so.2 needed), loaded by 2.21 (libtensorflow_framework.so.2
    # names nvidia/nccl/lib on its RUNPATH). 2.21's framework lacks nvidia/cusolver/lib: on LD_LIBRARY_PATH here.
    Scenario("cuda001-nccl-missing-two-gpus", _pip_without_nccl(2), python=release_python("2.21.0"), gpus=TWO_A100,
             nvml=DRIVER_575, env={"LD_LIBRARY_PATH": CUSOLVER_221}, expect=("CUDA001",)),
    Scenario("healthy-tf221-two-gpus-with-nccl", _release_pip("2.21.0", gpus=2), python=release_python("2.21.0"),
             gpus=TWO_A100, nvml=DRIVER_575, env={"LD_LIBRARY_PATH": CUSOLVER_221}),
    Scenario("healthy-tf218-two-gpus-without-nccl", _release_pip("2.18.0", gpus=2, leave_out=("nccl",)),
             python=release_python("2.18.0"), gpus=TWO_A100, nvml=DRIVER_575),
    Scenario("healthy-one-gpu-without-nccl", _pip_without_nccl(1), python=release_python("2.21.0"), nvml=DRIVER_575,
             env={"LD_LIBRARY_PATH": CUSOLVER_221}),
    Scenario("cuda001-tf221-cusolver-off-runpath", _release_pip("2.21.0"), python=release_python("2.21.0"),
             nvml=DRIVER_575, expect=("CUDA001",)),
    # RUNPATH is the build's: 2.16.1's framework reaches only nvidia/cuda_runtime/lib, 2.16.2's and 2.17's all.
    Scenario("cuda001-tf2161-runpath-misses-wheels", _release_pip("2.16.1"), python=release_python("2.16.1"),
             expect=("CUDA001",)),
    Scenario("healthy-tf2162-pip", _release_pip("2.16.2"), python=release_python("2.16.2")),
    Scenario("healthy-tf2170-pip", _release_pip("2.17.0"), python=release_python("2.17.0")),
    Scenario("healthy-tf2171-pip", _release_pip("2.17.1"), python=release_python("2.17.1")),
    Scenario("healthy-static-nccl-two-gpus", _static_nccl_two_gpus, python=SYSTEM_118, gpus=[
        replace(g, name="Tesla V100-SXM2-32GB", compute_capability=(7, 0), memory_total_mib=32768) for g in TWO_A100]),
    Scenario("cuda001-tf216-wheels-off-runpath", _tf216_pip, python={"tf_version": "2.16.1", "cuda": "12.3",
             "pins": PINS_216, "installed": PINS_216}, expect=("CUDA001",)),
    Scenario("healthy-tf216-wheels-on-ld-library-path", _tf216_pip, python={"tf_version": "2.16.1", "cuda": "12.3",
             "pins": PINS_216, "installed": PINS_216}, env={"LD_LIBRARY_PATH": WHEEL_LIB_PATH_216}),
    Scenario("cuda001-conda-lib-not-on-loader-path", _conda_without_activate_d, python=CONDA_PYTHON,
             env=CONDA_ENVIRONMENT, gpus=V100, expect=("CUDA001", "CUPTI001")),
    Scenario("healthy-conda-activate-d", _conda_with_activate_d, python=CONDA_PYTHON, gpus=V100,
             env={**CONDA_ENVIRONMENT, "LD_LIBRARY_PATH": f":{CONDA_ENV}/lib/"}),
    Scenario("drv003-ptx-too-new-for-driver", _pip_machine, python=PIP, nvml={"driver": "525.85.12", "cuda": 12000},
             gpus=H100, expect=("CUDA007", "DRV002", "DRV003")),
    Scenario("cupti003-cupti-of-another-cuda", _cupti_of_another_cuda, python={**PIP_NO_CUPTI, "profiler": True},
             env=CUPTI_ENV_OLD, expect=("CUPTI003",)),
    Scenario("healthy-cupti-of-the-builds-cuda", _cupti_of_another_cuda, python={**PIP_NO_CUPTI, "profiler": True},
             env=CUPTI_ENV_RIGHT),
    # Auto-clustering on (TF_XLA_FLAGS): XLA compiles, so the missing libdevice is an error (issue 35).
    Scenario("xla001-libdevice-not-found", _toolkit_without_cuda_link, python={"pins": {}},
             env=TOOLKIT_124_ENV | {"PATH": f"{VENV}/bin:/usr/local/cuda-12.4/bin:/usr/bin:/bin",
                                    "TF_XLA_FLAGS": "--tf_xla_auto_jit=2"},
             expect=("XLA001",)),
    # CUDA 12.3 Update 1: version.json says 12.3.1, its ptxas is 12.3.103, which XLA (2.17 on) refuses.
    Scenario("xla004-ptxas-version-refused", _ptxas_toolkit("12.3.1", "12.3.103"), python=release_python("2.17.1"),
             expect=("XLA004",)),
    Scenario("healthy-cuda-123-update-2-ptxas", _ptxas_toolkit("12.3.2", "12.3.107"), python=release_python("2.17.1")),
    # Blackwell (compute capability 12.0): 2.18's CUDA 12.5 PTX cannot target sm_120; a CUDA 12.8 build with sm_120 can.
    Scenario("drv003-blackwell-newer-than-every-kernel", _release_pip("2.18.0"), python=release_python("2.18.0"),
             gpus=RTX_5090, nvml=DRIVER_575, expect=("DRV003",)),
    # Hopper (compute capability 9.0) on that 2.18 build: no sm_90 kernels, but its compute_90 PTX JITs on 9.x.
    Scenario("drv003-hopper-on-a-ptx-only-build", _release_pip("2.18.0"), python=release_python("2.18.0"),
             gpus=H100, nvml=DRIVER_575, expect=("CUDA007", "DRV003")),
    Scenario("healthy-blackwell-with-a-cuda-128-build", _release_pip("2.18.0", wheel_versions=WHEELS_128),
             gpus=RTX_5090, nvml=DRIVER_575,
             python={**release_python("2.18.0"), "cuda": "12.8.1", "pins": {}, "installed": WHEELS_128,
                     "caps": ["sm_60", "sm_70", "sm_80", "sm_89", "sm_90", "sm_100", "sm_120", "compute_120"]}),
    Scenario("xla002-ptxas-older-than-build", _old_toolkit_as_cuda, python=PIP, expect=("XLA002",)),
    Scenario("xla003-data-dir-without-libdevice", _pip_machine, python=PIP,
             env={"XLA_FLAGS": "--xla_gpu_autotune_level=2 --xla_gpu_cuda_data_dir=/home/ada/venv/lib/python3.11/"
                               "site-packages/nvidia/cuda_nvcc/nvvm"}, expect=("XLA003",)),
]
GPU_FAMILIES = ("CUDA", "CUPTI", "DRV", "XLA0", "GPU0")


def by_name(name: str) -> Scenario:
    return next(s for s in SCENARIOS if s.name == name)


def build_root(scenario: Scenario, path: Path) -> FakeRoot:
    root = FakeRoot(path)
    scenario.build(root)
    if "driver" in scenario.nvml and not scenario.no_nvml:
        loaded_driver(root, scenario.nvml["driver"])
    dress_gpus(root, scenario.gpus)
    return root


def dress_gpus(root: FakeRoot, gpus: Sequence[FakeGpu]) -> None:
    """The builders put A100s on the bus; the GPU at each of the scenario's buses becomes the model NVML names
    there: its PCI device id and class, and the model line of the driver's /proc information file."""
    for gpu in gpus:
        bus = gpu.pci_bus_id.lower()[-12:]  # NVML's 00000000:3B:00.0 is sysfs's 0000:3b:00.0
        device, klass = PCI_MODELS[gpu.name]
        base = root.path / "sys/bus/pci/devices" / bus
        if (base / "device").is_file():
            root.write(f"/sys/bus/pci/devices/{bus}/device", f"{device}\n")
            root.write(f"/sys/bus/pci/devices/{bus}/class", f"{klass}\n")
        information = root.path / "proc/driver/nvidia/gpus" / bus / "information"
        if information.is_file():
            text = information.read_text()
            _, _, rest = text.partition("\n")
            information.write_text(f"Model: \t\t {gpu.name}\n{rest}")


def loaded_driver(root: FakeRoot, version: str) -> None:
    """The nvidia module a scenario's NVML answers for is the one loaded: NVML is that module's own library
    (another version fails with "Driver/library version mismatch"), so /proc/driver/nvidia/version and
    libcuda.so.1 are `version`'s. A machine without the version file (WSL2) keeps its libraries."""
    proc = root.path / "proc/driver/nvidia/version"
    if not proc.is_file():
        return
    first, _, rest = proc.read_text().partition("\n")
    words = first.split()
    loaded = words[words.index("Module") + 1]
    if loaded == version:
        return
    proc.write_text(first.replace(f"  {loaded}  ", f"  {version}  ", 1) + "\n" + rest)
    libs = "/usr/lib/x86_64-linux-gnu"
    stale = root.path / libs.lstrip("/") / f"libcuda.so.{loaded}"
    if stale.is_file():
        stale.unlink()
        (root.path / libs.lstrip("/") / "libcuda.so.1").unlink()
        lib(root, f"{libs}/libcuda.so.{version}", "libcuda.so.1")
        link(root, f"{libs}/libcuda.so.1", f"libcuda.so.{version}")


def collect(scenario: Scenario, root: FakeRoot) -> Facts:
    """What `tfdoctor collect` writes on that machine: the probes over the tree, NVML from the fake."""
    from tfdoctor.engine import gather_facts
    from tfdoctor.facts.probes import nvml
    from tfdoctor.registry import load_registry

    probes = [p for p in load_registry().probes if p.section in (
        "env", "host", "nvml", "gpu_pci", "cuda_libs", "privileges", "xla_toolchain")]
    previous = nvml.NVML_OVERRIDE
    fake = FakeNvml(scenario.gpus, **scenario.nvml)
    nvml.NVML_OVERRIDE = None if scenario.no_nvml else (lambda: fake)
    try:
        facts = gather_facts(probes, root.machine(scenario.environment(), timeout=10.0))
    finally:
        nvml.NVML_OVERRIDE = previous
    sections = dict(facts.sections)
    sections["python"] = from_jsonable(python_section(**scenario.python))
    if scenario.host:
        sections["host"] = {**sections["host"], **scenario.host}
    return Facts(sections, recorded_meta(facts, scenario.name))


def recorded_meta(facts: Facts, name: str) -> dict[str, Any]:
    """The meta of a fixture: named for its machine, and nothing that changes from one recording to the next
    (the fake root's folder, the clock, the probes' timings)."""
    return {**facts.meta, "hostname": name, "root": "/", "collected_at": "2026-11-22T00:00:00+00:00",
            "probe_seconds": {}}


def variant(scenario: Scenario, **changes: Any) -> Scenario:
    return replace(scenario, **changes)


def main(target: Path = SNAPSHOTS) -> None:
    import tempfile

    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for scenario in SCENARIOS:
            root = build_root(scenario, Path(tmp) / scenario.name)
            facts = collect(scenario, root)
            (target / f"{scenario.name}.json").write_text(facts.dumps() + "\n")
            print(f"wrote {target / (scenario.name + '.json')}", file=sys.stderr)


if __name__ == "__main__":
    main()
