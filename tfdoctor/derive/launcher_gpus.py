"""GPUs per task and per node as the launcher and the PCI bus say, not as NVML happens to list them (pure).

Under Slurm with ConstrainDevices=yes (and under a container runtime) a task's device cgroup admits only
its own GPUs: NVML and CUDA list those, while /proc/driver/nvidia and the PCI bus still list every GPU of
the host. So "how many GPUs does this node have" is the PCI bus's answer, and "how many GPUs do this job's
tasks on the node share" is the launcher's: SLURM_GPUS_PER_TASK (each task its own), SLURM_JOB_GPUS or
SLURM_GPUS_ON_NODE (the job's GPUs on this node), else the host's.
"""

from __future__ import annotations

import re

from tfdoctor.derive.gpu_inventory import Gpu
from tfdoctor.derive.process_layout import LOCAL_RANK_VARIABLES
from tfdoctor.facts import Facts
from tfdoctor.facts.parse import count
from tfdoctor.records import value_tuple

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import Any

# MPI launchers' "ranks on this host": what a hostfile's slots, -npernode or --map-by ppr put there.
MPI_LOCAL_SIZE_VARIABLES = ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "PALS_LOCAL_SIZE", "PMI_LOCAL_SIZE",
                            "HOROVOD_LOCAL_SIZE")


def _first_count(raw: str | None) -> int | None:
    match = re.match(r"\s*([0-9]+)", raw or "")
    return count(match.group(1)) if match else None


def pci_gpu_count(facts: Facts) -> int | None:
    """NVIDIA GPUs on this host's PCI bus (what a device cgroup does not hide), or None when unread."""
    devices = facts.peek("gpu_pci.devices")
    return len(devices) if isinstance(devices, list) else None


def host_gpu_count(facts: Facts, listed: list[Gpu]) -> tuple[int, str]:
    """(GPUs of this host, where that was read): the PCI bus when it lists more than NVML does."""
    pci = pci_gpu_count(facts)
    if pci is not None and pci > len(listed):
        return pci, "gpu_pci.devices"
    return len(listed), "nvml.devices"


def gpus_per_task(facts: Facts) -> int | None:
    """SLURM_GPUS_PER_TASK (srun/sbatch --gpus-per-task): "1", or typed as "a100:1"."""
    raw = facts.env("SLURM_GPUS_PER_TASK") or ""
    return count(raw.rsplit(":", 1)[-1]) if raw.strip() else None


def job_gpus_on_node(facts: Facts) -> tuple[int, str] | None:
    """The GPUs the launcher gave this job's tasks on this node, and the variable that said so."""
    jobs = facts.env("SLURM_JOB_GPUS")
    if jobs and all(count(part) is not None for part in jobs.split(",")):
        return len(jobs.split(",")), "SLURM_JOB_GPUS"
    on_node = _first_count(facts.env("SLURM_GPUS_ON_NODE"))
    if on_node:
        return on_node, "SLURM_GPUS_ON_NODE"
    return None


@value_tuple
class NodeGpus:
    """How this job's processes on the node are served by GPUs: `shared` is the pigeonhole."""

    processes: int  # this job's processes on the node
    gpus: int  # GPUs those processes may use between them
    per_task: int | None  # each task's own GPUs, when the launcher gives every task its own
    evidence: dict[str, Any]

    @property
    def shared(self) -> bool:
        return self.per_task is None and self.processes > self.gpus


def node_gpus(facts: Facts, listed: list[Gpu], local: tuple[int, str]) -> NodeGpus:
    """The GPUs `local` (processes on the node, the variable that said so) share: per task from the
    launcher, else the job's GPUs on the node, else the host's (the PCI bus when NVML lists fewer)."""
    processes, variable = local
    evidence: dict[str, Any] = {f"env.{variable}": processes}
    per_task = gpus_per_task(facts)
    if per_task:
        evidence["env.SLURM_GPUS_PER_TASK"] = facts.env("SLURM_GPUS_PER_TASK")
        return NodeGpus(processes, per_task * processes, per_task, evidence)
    job = job_gpus_on_node(facts)
    if job is not None:
        evidence[f"env.{job[1]}"] = facts.env(job[1])
        return NodeGpus(processes, job[0], None, evidence)
    gpus, source = host_gpu_count(facts, listed)
    evidence["gpus.host"] = gpus
    if source != "nvml.devices":
        evidence["gpus.host_source"] = source
    return NodeGpus(processes, gpus, None, evidence)


def local_rank(facts: Facts) -> tuple[int, str] | None:
    """(this process's rank among the job's processes on the node, the variable), or None outside a step."""
    for name in LOCAL_RANK_VARIABLES:
        value = count(facts.env(name) or "")
        if value is not None:
            return value, name
    return None


def mpi_local_size(facts: Facts) -> tuple[int, str] | None:
    """(ranks an MPI launcher put on this host, the variable), or None when no MPI launcher says."""
    for name in MPI_LOCAL_SIZE_VARIABLES:
        value = _first_count(facts.env(name))
        if value:
            return value, name
    return None


def pci_host_gpus(facts: Facts) -> list[Gpu]:
    """The host's NVIDIA GPUs in PCI bus order (NVML's and nvidia-smi's default order), from the PCI bus:
    what a device cgroup does not hide. [] when the bus was not read."""
    devices = facts.peek("gpu_pci.devices")
    if not isinstance(devices, list):
        return []
    addresses = sorted(str(d.get("address")) for d in devices if isinstance(d, dict) and d.get("address"))
    return [Gpu(index=i, name="NVIDIA GPU (from the PCI bus)", compute_capability=None, pci_bus_id=address)
            for i, address in enumerate(addresses)]


__all__ = ["NodeGpus", "gpus_per_task", "host_gpu_count", "job_gpus_on_node", "local_rank", "mpi_local_size",
           "node_gpus", "pci_gpu_count", "pci_host_gpus"]
