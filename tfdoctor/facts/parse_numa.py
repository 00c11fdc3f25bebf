"""Pure parsers for the NUMA files in sysfs and the rank-layout variables. Text in, values out."""

from __future__ import annotations

import re

from tfdoctor.facts.parse import count

NVIDIA_VENDOR = 0x10DE
DISPLAY_CLASS = 0x03  # PCI base class 03: display controllers (VGA 0300xx, 3D 0302xx)

_BUS_ID = re.compile(r"^(?:([0-9a-fA-F]{4,8}):)?([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])$")


def normalize_bus_id(text: str) -> str:
    """NVML's "00000000:3B:00.0" and sysfs's "0000:3b:00.0" -> "0000:3b:00.0" (sysfs form).

    Raises ValueError on anything that is not a PCI address.
    """
    match = _BUS_ID.match(text.strip())
    if not match:
        raise ValueError(f"{text!r} is not a PCI bus id")
    domain, bus, device, function = match.groups()
    return f"{int(domain or '0', 16):04x}:{bus.lower()}:{device.lower()}.{function}"


def parse_node_meminfo(text: str) -> int:
    """A node's meminfo ("Node 0 MemTotal:  131072 kB") -> MemTotal in KiB."""
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[0] == "Node" and parts[2] == "MemTotal:":
            return int(parts[3])
    raise ValueError("no MemTotal line")


def parse_distance(text: str) -> list[int]:
    """A node's distance row ("10 21") -> [10, 21], indexed by node position in the online list."""
    values = [int(v) for v in text.split()]
    if not values:
        raise ValueError("empty distance row")
    return values


def parse_hex(text: str) -> int:
    return int(text.strip(), 16)


def is_nvidia_gpu(vendor: int, pci_class: int) -> bool:
    return vendor == NVIDIA_VENDOR and (pci_class >> 16) == DISPLAY_CLASS


def parse_tasks_per_node(text: str) -> int | None:
    """Slurm's compressed per-node task counts ("4(x2),3") -> the first node's count (4)."""
    match = re.match(r"\s*([0-9]+)", text)
    return count(match.group(1)) if match else None
