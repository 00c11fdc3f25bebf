"""Facts builders for the framework-family tests (LAY, MP, XLA1xx, GPU1xx, DIST)."""

from __future__ import annotations

from typing import Any

from support.gpu_scenarios import gpu_uuid
from tfdoctor.facts import Facts
from tfdoctor.testing import HASWELL_FLAGS, facts_from

A100 = ("NVIDIA A100-SXM4-40GB", "8.0")
V100 = ("Tesla V100-SXM2-16GB", "7.0")
T4 = ("Tesla T4", "7.5")
GTX1660 = ("NVIDIA GeForce GTX 1660 SUPER", "7.5")
P100 = ("Tesla P100-PCIE-16GB", "6.0")


def gpu_devices(*models: tuple[str, str], **extra: Any) -> list[dict[str, Any]]:
    return [{"index": i, "name": name, "compute_capability": cc, "uuid": gpu_uuid(i),
             "pci_bus_id": f"00000000:{i + 1:02X}:00.0", **extra} for i, (name, cc) in enumerate(models)]


# The first line of /proc/driver/nvidia/version with driver 550.54.15 loaded (NVML's driver_version below).
DRIVER_LINE = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Thu Feb 22 01:44:30 UTC 2024"


def make_facts(env: dict[str, str] | None = None, gpus: list[dict[str, Any]] | None = None,
               keras: dict[str, Any] | None = None, flags: tuple[str, ...] = HASWELL_FLAGS,
               container: bool = False, network: dict[str, Any] | None = None, shm: dict[str, Any] | None = None,
               iommu: dict[str, Any] | None = None, profile: dict[str, Any] | None = None) -> Facts:
    sections: dict[str, Any] = {
        "host": {"arch": "x86_64", "container": {"detected": container, "signs": []},
                 "nvidia_driver": DRIVER_LINE if gpus else None},
        "cpu": {"cpuinfo": {"flags": sorted(flags), "vendor": "GenuineIntel", "model_name": "Fake", "processors": 8}},
        "keras": {"path": "/home/u/.keras/keras.json", "exists": keras is not None, "config": keras},
        "network": network or {"hostname": "node1", "names": ["node1", "node1.cluster.local"],
                               "addresses": ["127.0.0.1", "10.0.0.1", "::1"],
                               "interfaces": {"lo": {"operstate": "unknown", "speed_mbps": None},
                                              "eth0": {"operstate": "up", "speed_mbps": 100000}},
                               "infiniband": []},
        "shm": shm or {"mounted": True, "size_bytes": 16 * 1024**3, "source": "statvfs"},
        "iommu": iommu or {"cmdline": {}, "units": [], "group_count": 0, "group_types": []},
    }
    if gpus is not None:
        sections["nvml"] = {"driver_version": "550.54.15", "cuda_driver_version": "12.4", "devices": gpus}
    if profile is not None:
        sections["profile"] = profile
    return facts_from(sections, env=env or {})
