"""Whether a process's GPUs reach each other over NVLink (pure, over the nvml section's `nvlink` records).

Two GPUs are joined when an active link of one reaches the other's PCI bus id, or when both have a link
to an NVSwitch (every GPU on a DGX/HGX baseboard's switches reaches every other). A set of GPUs is
NVLink-connected when those joins connect all of them: their peer-to-peer traffic (all-reduce) then
never crosses the CPUs' socket link, whatever NUMA nodes their PCIe roots hang from.
"""

from __future__ import annotations

from tfdoctor.derive.gpu_inventory import Gpu


def _bus(text: object) -> str:
    """"00000000:3B:00.0" and "0000:3b:00.0" -> "3b:00.0" (domain dropped: NVML pads it to 8 digits)."""
    value = str(text or "").strip().lower()
    return value.split(":", 1)[1] if value.count(":") == 2 else value


def nvlink_connected(gpus: list[Gpu]) -> bool | None:
    """True when NVLink joins all of `gpus`; False when it does not; None when a GPU's links are unknown."""
    if len(gpus) < 2:
        return None
    records = []
    for gpu in gpus:
        record = gpu.raw.get("nvlink") if isinstance(gpu.raw, dict) else None
        if record is None and isinstance(gpu.raw, dict) and "nvlink" in gpu.raw:
            return False  # a GPU without NVLink: its traffic goes over PCIe
        if not isinstance(record, dict) or not isinstance(record.get("active_links"), int):
            return None
        records.append(record)
    buses = [_bus(g.pci_bus_id) for g in gpus]
    joined = {0}
    changed = True
    while changed:
        changed = False
        for i, record in enumerate(records):
            if i in joined:
                continue
            peers_i = {_bus(p) for p in record.get("peers") or []}
            for j in list(joined):
                peers_j = {_bus(p) for p in records[j].get("peers") or []}
                if (buses[j] in peers_i or buses[i] in peers_j
                        or (record.get("switch") is True and records[j].get("switch") is True)):
                    joined.add(i)
                    changed = True
                    break
    return len(joined) == len(gpus)


__all__ = ["nvlink_connected"]
