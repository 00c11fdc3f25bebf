"""How many processes of this job run on this node, and whether each has CPUs of its own (pure).

OpenMP affinity (OMP_PROC_BIND, OMP_PLACES, KMP_AFFINITY, GOMP_CPU_AFFINITY) is computed by every
process from its own CPU mask. Several processes with the same mask and the same setting therefore
pin their threads to the same CPUs, and TensorFlow's own pool threads, created by the bound primary
thread, inherit its mask. Whether that happens depends on the layout, read here from what launchers
export: Slurm, Open MPI, MPICH / Intel MPI (Hydra), Cray PALS and PMI, Horovod, torchrun, `tf.distribute`'s
TF_CONFIG (tasks listed on this host), and TFDOCTOR_PROCESSES_PER_NODE for what no launcher says
(multiprocessing or data-loader workers that run OpenMP code).
"""

from __future__ import annotations

import re

from tfdoctor.derive.cpu_budget import cpu_ids
from tfdoctor.facts import Facts
from tfdoctor.facts.parse import count
from tfdoctor.records import value_tuple

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import Any

# "Processes of this step on this node", most specific first. SLURM_TASKS_PER_NODE reads "4(x2),3":
# this node's count is the first number.
NODE_PROCESS_VARIABLES = (
    "LOCAL_WORLD_SIZE",  # torchrun-style launchers
    "OMPI_COMM_WORLD_LOCAL_SIZE",  # Open MPI
    "MPI_LOCALNRANKS",  # MPICH and Intel MPI (Hydra)
    "PALS_LOCAL_SIZE",  # Cray PALS (PBS Pro's mpiexec on HPE Cray systems)
    "PMI_LOCAL_SIZE",  # Cray PMI
    "HOROVOD_LOCAL_SIZE",  # horovodrun
    "SLURM_STEP_TASKS_PER_NODE",
    "SLURM_NTASKS_PER_NODE",
    "SLURM_TASKS_PER_NODE",
)
# Set inside a launched step (a rank), not in the batch script that will launch it.
LOCAL_RANK_VARIABLES = ("LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                        "PALS_LOCAL_RANKID", "PMI_LOCAL_RANK", "HOROVOD_LOCAL_RANK")
DECLARED = "TFDOCTOR_PROCESSES_PER_NODE"
# srun --cpu-bind types that give every task CPUs of its own (none/verbose/quiet do not).
SLURM_PER_TASK_BINDING = re.compile(r"(^|,)(cores|threads|sockets|ldoms|rank|rank_ldom|map_cpu|mask_cpu|map_ldom|"
                                    r"mask_ldom)\b")
# The ones that give each task cores of its own (sockets and ldoms bind several tasks to one shared node).
SLURM_OWN_CPUS_BINDING = re.compile(r"(^|,)(cores|threads|rank|map_cpu|mask_cpu)\b")


@value_tuple
class ProcessLayout:
    """How many processes of this job share the node, what says so, and whether the launcher binds them."""

    processes: int  # processes of this job on this node
    source: str  # the variable (or TF_CONFIG) that said so
    in_step: bool  # this process is one of them (a local rank), not a batch script about to launch them
    launcher_binds: str | None  # the launcher setting that gives each process its own CPUs, if one is seen

    def evidence(self) -> dict[str, Any]:
        data: dict[str, Any] = {f"env.{self.source}" if self.source != "TF_CONFIG" else "TF_CONFIG.local_tasks":
                                self.processes}
        if self.launcher_binds:
            data["launcher_binding"] = self.launcher_binds
        return data


def _count(raw: str | None) -> int | None:
    match = re.match(r"\s*([0-9]+)", raw or "")
    return count(match.group(1)) if match else None


def _tf_config_local_tasks(facts: Facts) -> int | None:
    raw = facts.env("TF_CONFIG")
    if not raw:
        return None
    from tfdoctor.derive.tf_config import host_is_local, parse_tf_config, split_address

    config, _problems = parse_tf_config(raw)
    if config is None:
        return None
    names = facts.peek("network.names")
    addresses = facts.peek("network.addresses")
    names = [n for n in names if isinstance(n, str)] if isinstance(names, list) else []
    addresses = [a for a in addresses if isinstance(a, str)] if isinstance(addresses, list) else []
    local = 0
    for job in ("chief", "worker", "master", "evaluator"):
        for address in config.cluster.get(job, []):
            if isinstance(address, str) and host_is_local(split_address(address)[0], names, addresses):
                local += 1
    return local


def process_layout(facts: Facts) -> ProcessLayout:
    """The processes of this job on this node (1 when nothing says more)."""
    in_step = any(facts.env(name) not in (None, "") for name in LOCAL_RANK_VARIABLES)
    bind = facts.env("SLURM_CPU_BIND") or facts.env("SLURM_CPU_BIND_TYPE") or ""
    launcher_binds = f"SLURM_CPU_BIND={bind}" if SLURM_PER_TASK_BINDING.search(bind.lower()) else None
    for name in NODE_PROCESS_VARIABLES:
        count = _count(facts.env(name))
        if count and count > 1:
            return ProcessLayout(count, name, in_step, launcher_binds)
    local = _tf_config_local_tasks(facts)
    if local and local > 1:
        return ProcessLayout(local, "TF_CONFIG", True, None)
    declared = _count(facts.env(DECLARED))
    if declared and declared > 1:
        return ProcessLayout(declared, DECLARED, True, None)
    return ProcessLayout(1, "", in_step, launcher_binds)


def node_cpus(facts: Facts) -> list[int] | None:
    """The CPUs the job may use on this node: the cgroup cpuset within the online CPUs (else all online)."""
    online = facts.peek("cpu.online")
    if not cpu_ids(online) or not online:
        return None
    cgroup = facts.peek("cgroup")
    cpuset = cgroup.get("cpuset") if isinstance(cgroup, dict) else None
    if cpu_ids(cpuset) and cpuset:
        return sorted(set(online) & set(cpuset)) or list(online)
    return list(online)


def launcher_gives_own_cpus(layout: ProcessLayout) -> bool:
    """A task of a step that srun binds to cores of its own (--cpu-bind=cores, threads, rank, map_cpu,
    mask_cpu). Under Slurm's cgroup v1 the task's cpuset then holds its CPUs only, so the node's other
    CPUs are not even visible to it: its mask, not the node, is what it runs on."""
    binding = (layout.launcher_binds or "").lower().removeprefix("slurm_cpu_bind=")
    return layout.in_step and bool(SLURM_OWN_CPUS_BINDING.search(binding))


def processes_share_cpus(layout: ProcessLayout, allowed: int, on_node: int) -> bool:
    """Several processes whose CPU masks must overlap: each may run on more than its share of the node's
    CPUs, and no launcher setting says it will get CPUs of its own. A batch script (no local rank) judged
    before `srun --cpu-bind=cores` would bind the tasks: the launcher setting decides."""
    if layout.processes < 2:
        return False
    if layout.launcher_binds and not layout.in_step:
        return False
    if launcher_gives_own_cpus(layout):
        return False
    return allowed * layout.processes > on_node


__all__ = ["ProcessLayout", "launcher_gives_own_cpus", "node_cpus", "process_layout", "processes_share_cpus"]
