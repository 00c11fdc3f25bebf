"""Shared memory (/dev/shm) and the IOMMU: what NCCL's intra-node transports depend on."""

from __future__ import annotations

import os

from tfdoctor.facts import Unknown
from tfdoctor.facts.machine import Machine
from tfdoctor.facts.parse_platform import parse_iommu_cmdline, parse_meminfo_total, parse_mount, parse_size
from tfdoctor.registry import probe

# Enough group types to tell "identity" (passthrough) from "DMA" (translated) without walking hundreds.
MAX_IOMMU_GROUPS = 32


@probe("shm", timeout=1.0)
def probe_shm(machine: Machine) -> dict[str, object]:
    mounts = machine.read_text("/proc/mounts")
    if isinstance(mounts, Unknown):
        return {"mounted": mounts, "size_bytes": mounts, "source": "/proc/mounts"}
    entry = parse_mount(mounts, "/dev/shm")
    if entry is None:
        return {"mounted": False, "size_bytes": None, "source": "/proc/mounts"}
    if machine.is_live:
        try:
            stat = os.statvfs("/dev/shm")
            return {"mounted": True, "size_bytes": stat.f_blocks * stat.f_frsize, "source": "statvfs"}
        except OSError:
            pass  # fall back to the mount options below
    options = {k: v for k, _, v in (o.partition("=") for o in entry["options"])}  # type: ignore[union-attr]
    if "size" in options:
        size = parse_size(options["size"])
        return {"mounted": True, "source": "/proc/mounts",
                "size_bytes": size if size is not None else Unknown(f"tmpfs size={options['size']} not understood")}
    # tmpfs without size= gets half of RAM.
    meminfo = machine.read_text("/proc/meminfo")
    total = parse_meminfo_total(meminfo) if isinstance(meminfo, str) else None
    return {"mounted": True, "source": "tmpfs default (half of MemTotal)",
            "size_bytes": total // 2 if total else Unknown("/dev/shm has no size= and MemTotal is unreadable")}


@probe("iommu", timeout=1.0)
def probe_iommu(machine: Machine) -> dict[str, object]:
    cmdline = machine.read_text("/proc/cmdline")
    units = machine.listdir("/sys/class/iommu")
    groups = machine.listdir("/sys/kernel/iommu_groups")
    types: list[str] = []
    for group in groups[:MAX_IOMMU_GROUPS] if isinstance(groups, list) else []:
        text = machine.read_text(f"/sys/kernel/iommu_groups/{group}/type")
        if isinstance(text, str) and text.strip() not in types:
            types.append(text.strip())
    return {
        "cmdline": parse_iommu_cmdline(cmdline) if isinstance(cmdline, str) else cmdline,
        # An absent /sys/class/iommu means no IOMMU driver is active: a known "none".
        "units": units if isinstance(units, list) else [],
        "group_count": len(groups) if isinstance(groups, list) else 0,
        "group_types": sorted(types),
    }
