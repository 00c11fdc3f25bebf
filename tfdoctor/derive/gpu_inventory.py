"""Which NVIDIA GPUs this job has, derived from facts (pure). Shared by the GPU, NUMA, framework and
fleet families.

The contract with the probes (facts section "nvml", filled by tfdoctor/facts/probes/nvml.py):

    "nvml": {
        "driver_version": "550.54.15",
        "cuda_driver_version": "12.4",           # the CUDA version the driver supports
        "devices": [{
            "index": 0, "uuid": "GPU-…", "name": "NVIDIA A100-SXM4-40GB",
            "pci_bus_id": "00000000:3B:00.0", "compute_capability": "8.0",
            "memory_total_mib": 40960, "memory_used_mib": 3, ...
        }]
    }

or an Unknown whose reason says why NVML could not answer. `host.nvidia_driver` (None when
/proc/driver/nvidia/version is absent) and `host.wsl2` tell a host without an NVIDIA driver from one
whose NVML failed. When NVML fails on a driver host, the probe falls back ("source": "procfs" or
"pci", "nvml_error": why): GPUs listed by /proc or the PCI bus with their unknown fields Unknown, or
"devices" Unknown when nothing lists them — never an empty list.
"""

from __future__ import annotations

import re

from tfdoctor.facts import Facts, NotChecked, Unknown
from tfdoctor.facts.parse import count
from tfdoctor.records import value_tuple

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import Any


@value_tuple
class Gpu:
    """One NVIDIA GPU as NVML (or the PCI bus, without NVML) lists it."""

    index: int
    name: str
    compute_capability: tuple[int, int] | None
    uuid: str = ""
    pci_bus_id: str = ""
    raw: Any = None  # the whole device record, for checks that need more

    @property
    def cc_text(self) -> str:
        return f"{self.compute_capability[0]}.{self.compute_capability[1]}" if self.compute_capability else "?"


def parse_compute_capability(value: Any) -> tuple[int, int] | None:
    if isinstance(value, (list, tuple)) and len(value) == 2:
        if not all(isinstance(part, int) or (isinstance(part, str) and part.isdigit()) for part in value):
            return None  # a hand-edited or foreign facts file: unknown, not a crash
        return int(value[0]), int(value[1])
    if isinstance(value, str) and "." in value:
        major, _, minor = value.partition(".")
        if major.isdigit() and minor.isdigit():
            return int(major), int(minor)
    return None


def all_gpus(facts: Facts) -> list[Gpu]:
    """Every NVIDIA GPU on the host; [] when the host has no NVIDIA driver at all.

    Raises NotChecked when a driver is present but NVML could not list the devices.
    """
    nvml = facts.peek("nvml", default=Unknown("nvml facts were not collected"))
    if isinstance(nvml, Unknown):
        if not driver_loaded(facts):
            return []  # no /proc/driver/nvidia/version, no WSL2 driver: no usable GPU
        raise NotChecked(f"GPUs unknown: {nvml.reason}")
    if not isinstance(nvml, dict):
        raise NotChecked(f"nvml holds a JSON {type(nvml).__name__}, not an object")
    devices = nvml.get("devices")
    if isinstance(devices, Unknown):
        raise NotChecked(f"GPUs unknown: {devices.reason}")
    if devices is not None and not isinstance(devices, list):
        raise NotChecked(f"nvml.devices holds a JSON {type(devices).__name__}, not a list")
    gpus = []
    for position, device in enumerate(devices or []):
        if not isinstance(device, dict):
            raise NotChecked(f"nvml.devices[{position}] holds a JSON {type(device).__name__}, not an object")
        index = device.get("index", position)
        if isinstance(index, bool) or not (isinstance(index, int) or (isinstance(index, str) and index.isdigit())):
            raise NotChecked(f"nvml.devices[{position}].index is {index!r}, not a whole number")
        name = device.get("name", "")
        gpus.append(Gpu(
            index=int(index),
            name=name if isinstance(name, str) else "NVIDIA GPU (name unknown)",
            compute_capability=parse_compute_capability(device.get("compute_capability")),
            uuid=device["uuid"] if isinstance(device.get("uuid"), str) else "",
            pci_bus_id=str(device.get("pci_bus_id", "")),
            raw=device,
        ))
    return gpus


_MODULE_VERSION = re.compile(r"Kernel Module(?: for [A-Za-z0-9_]+)?\s+([0-9]+(?:\.[0-9]+)+)")


def wsl2(facts: Facts) -> bool:
    """WSL2: the Windows driver reached through /dev/dxg (no /proc/driver/nvidia)."""
    return facts.peek("host.wsl2.detected") is True


def driver_loaded(facts: Facts) -> bool:
    """An NVIDIA driver this Linux can use: /proc/driver/nvidia/version, or WSL2's /dev/dxg."""
    return facts.peek("host.nvidia_driver") is not None or wsl2(facts)


def driver_version(facts: Facts) -> tuple[str | None, str]:
    """(the driver's version, where it was read): NVML's answer, else /proc/driver/nvidia/version."""
    version = facts.peek("nvml.driver_version")
    if isinstance(version, str) and version:
        source = facts.peek("nvml.source")
        return version, "NVML" if source == "nvml" else "/proc/driver/nvidia/version"
    line = facts.peek("host.nvidia_driver")
    match = _MODULE_VERSION.search(line) if isinstance(line, str) else None
    if match:
        return match.group(1), "/proc/driver/nvidia/version"
    reason = version.reason if isinstance(version, Unknown) else "neither NVML nor /proc/driver/nvidia/version"
    return None, reason


def visible_gpus(facts: Facts) -> list[Gpu]:
    """The GPUs TensorFlow will see, after CUDA_VISIBLE_DEVICES (indices or GPU-/MIG- UUIDs).

    An empty CUDA_VISIBLE_DEVICES hides every GPU. Entries that match nothing are dropped here;
    the CUDA family reports them.
    """
    gpus = all_gpus(facts)
    setting = facts.env("CUDA_VISIBLE_DEVICES")
    if setting is None:
        return gpus
    chosen: list[Gpu] = []
    for entry in (e.strip() for e in setting.split(",")):
        if not entry:
            # CUDA stops at the first entry it cannot parse; an empty one ends the list.
            break
        if entry.lstrip("-").isdigit():
            index = count(entry.lstrip("-"))  # None: not ASCII digits ('²'), which CUDA cannot parse either
            if index is None or entry.startswith("-"):
                break
            match = next((g for g in gpus if g.index == index), None)
        else:
            match = next((g for g in gpus if g.uuid and (g.uuid == entry or g.uuid.startswith(entry))), None)
        if match is None:
            break
        if match not in chosen:
            chosen.append(match)
    return chosen
