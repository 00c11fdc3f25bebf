"""How many of this node's processes share its GPUs (pure, over facts). Shared by GPU and DIST checks."""

from __future__ import annotations

import re

from tfdoctor.derive.gpu_inventory import Gpu
from tfdoctor.facts import Facts

# Launchers' "processes on this node" variables, most specific first.
LOCAL_SIZE_VARIABLES = ("LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_NTASKS_PER_NODE",
                        "SLURM_TASKS_PER_NODE")


def local_processes(facts: Facts) -> tuple[int, str] | None:
    """(processes on this node, the variable that said so), or None when no launcher says."""
    for name in LOCAL_SIZE_VARIABLES:
        raw = facts.env(name)
        # SLURM_TASKS_PER_NODE reads like "4(x2),3": this node's count is the first number.
        match = re.match(r"\s*([0-9]+)", raw or "")
        if match and int(match.group(1)) > 0:
            return int(match.group(1)), name
    return None


def other_gpu_processes(gpu: Gpu) -> int:
    """Compute processes NVML lists on a GPU (optional device field "compute_processes": a count or list)."""
    value = gpu.raw.get("compute_processes") if isinstance(gpu.raw, dict) else None
    if isinstance(value, list):
        return len(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return 0


def gpu_sharing(facts: Facts, visible: list[Gpu], host: list[Gpu]) -> dict[str, object] | None:
    """Evidence that several processes share a GPU, or None.

    More processes on the node than the GPUs they are given must share (pigeonhole); comparing with the
    GPUs this process sees would be wrong where the launcher gives every task its own CUDA_VISIBLE_DEVICES,
    and so would NVML's count where a device cgroup (Slurm's ConstrainDevices, a container) hides the
    other tasks' GPUs: the launcher and the PCI bus say how many there are (derive/launcher_gpus.py).
    """
    if not visible:
        return None
    local = local_processes(facts)
    if local is not None:
        from tfdoctor.derive.launcher_gpus import node_gpus

        layout = node_gpus(facts, host, local)
        if layout.shared:
            return layout.evidence
    busy = {g.index: n for g in visible if (n := other_gpu_processes(g)) > 0}
    if busy:
        return {"nvml.devices.compute_processes": busy}
    return None
