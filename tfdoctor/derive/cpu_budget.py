"""The CPU budget a job really has, derived from facts (pure).

The smallest of: the CPUs the process may run on (affinity, intersected with the cgroup cpuset), the
cgroup CPU quota, and the scheduler's allocation (Slurm, PBS). TensorFlow sizes its thread pools from
the host's core count and knows none of these limits, which is why a 2-CPU container on a 64-core host
starts 64 intra-op threads.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from types import MappingProxyType

from tfdoctor.facts import Facts, NotChecked
from tfdoctor.records import value_tuple


@value_tuple
class CpuBudget:
    """How many CPUs the job may really keep busy, the limit that decided it, and the host's counts."""

    cpus: int  # whole CPUs (logical) the job may keep busy
    source: str  # which limit decided, e.g. "cgroup quota 200000/100000"
    host_cpus: int  # online logical CPUs of the host
    allowed: tuple[int, ...]  # logical CPUs the process may run on
    physical_cores: int  # distinct cores among the allowed CPUs, capped by `cpus`
    sockets: int  # distinct sockets among the allowed CPUs
    limits: Mapping[str, float] = MappingProxyType({})  # every limit seen, by source

    @property
    def constrained(self) -> bool:
        """True when the job may use fewer CPUs than the host has (container, cpuset, allocation)."""
        return self.cpus < self.host_cpus

    def evidence(self) -> dict[str, object]:
        return {"cpu.budget": self.cpus, "cpu.budget.source": self.source, "cpu.host_cpus": self.host_cpus}


def _positive_int(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        value = int(text.strip())
    except ValueError:
        return None
    return value if value > 0 else None


def scheduler_allocation(facts: Facts) -> tuple[int, str] | None:
    """CPUs the batch scheduler gave this task, when a scheduler is visible in the environment."""
    per_task = _positive_int(facts.env("SLURM_CPUS_PER_TASK"))
    if per_task:
        return per_task, "SLURM_CPUS_PER_TASK"
    on_node = _positive_int(facts.env("SLURM_CPUS_ON_NODE"))
    if on_node:
        tasks = _positive_int(facts.env("SLURM_NTASKS_PER_NODE"))
        if tasks and tasks > 1:
            return max(1, on_node // tasks), "SLURM_CPUS_ON_NODE / SLURM_NTASKS_PER_NODE"
        return on_node, "SLURM_CPUS_ON_NODE"
    if facts.env("PBS_JOBID"):
        ncpus = _positive_int(facts.env("NCPUS"))
        if ncpus:
            return ncpus, "NCPUS (PBS)"
    return None


def cpu_ids(value: object) -> bool:
    """A list of CPU numbers: what the probe records (a hand-edited facts file may hold anything)."""
    return isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value)


def _quota(limit: object) -> bool:
    return (isinstance(limit, dict) and all(isinstance(limit.get(k), (int, float)) for k in ("quota_us", "period_us"))
            and limit["period_us"] > 0)


def topology_entry(entry: object) -> bool:
    return isinstance(entry, dict) and all(isinstance(entry.get(k), int) for k in ("cpu", "socket", "core"))


def cpu_budget(facts: Facts, bound_to: Collection[int] | None = None, bound_label: str = "") -> CpuBudget:
    """Raises NotChecked when neither the host's CPUs nor any limit can be read.

    `bound_to`: the CPUs the process will be bound to (a NUMA node, by the launcher) instead of its
    current affinity — the budget is the bound set, still within the cgroup's cpuset, quota and the
    scheduler's allocation. `bound_label` names it in `source` ("bound to node 1").
    """
    online = facts.get("cpu.online")
    if not cpu_ids(online):
        raise NotChecked(f"cpu.online is {str(online)[:40]!r}, not a list of CPU numbers")
    host_cpus = len(online)
    if host_cpus == 0:
        raise NotChecked("no online CPUs recorded")
    allowed = set(online)
    limits: dict[str, float] = {"host": float(host_cpus)}

    affinity = facts.peek("cpu.allowed_cpus") if bound_to is None else sorted(set(bound_to) & allowed)
    if cpu_ids(affinity) and affinity:
        allowed &= set(affinity)
        limits["affinity" if bound_to is None else (bound_label or "bound CPUs")] = float(len(affinity))
    cgroup = facts.peek("cgroup")
    if isinstance(cgroup, dict):
        cpuset = cgroup.get("cpuset")
        if cpu_ids(cpuset) and cpuset:
            allowed &= set(cpuset)
            limits["cgroup cpuset"] = float(len(cpuset))
        limits_recorded = cgroup.get("limits") or []
        for limit in limits_recorded if isinstance(limits_recorded, list) else [limits_recorded]:
            if not _quota(limit):
                raise NotChecked(f"cgroup.limits holds {str(limit)[:40]!r}, not a quota_us/period_us pair")
            quota = limit["quota_us"] / limit["period_us"]
            key = f"cgroup quota {limit['quota_us']}/{limit['period_us']}"
            limits[key] = quota
    if not allowed:
        allowed = set(online)
    limits["allowed CPUs"] = float(len(allowed))
    allocation = scheduler_allocation(facts)
    if allocation:
        limits[allocation[1]] = float(allocation[0])

    # The binding limit; ties resolve to the more specific source (a quota over the host count).
    source, value = min(((k, v) for k, v in limits.items() if k != "host"), key=lambda kv: kv[1])
    if value >= host_cpus:
        source = "host"
    # A fractional quota (1.5 CPUs) still keeps one thread per whole CPU busy; never below one.
    cpus = max(1, int(value + 1e-9))  # int() is floor() for what max() keeps; math is not imported for it

    topology = facts.peek("cpu.topology")
    if isinstance(topology, list) and topology and all(topology_entry(t) for t in topology):
        chosen = [t for t in topology if t["cpu"] in allowed]
        cores = len({(t["socket"], t["core"]) for t in chosen}) or cpus
        sockets = len({t["socket"] for t in chosen}) or 1
        # A quota or allocation smaller than the allowed set fits in fewer sockets than it spans.
        per_socket = max(1, cores // sockets)
        sockets = min(sockets, -(-cpus // per_socket))  # the ceiling of cpus / per_socket
    else:
        cores, sockets = cpus, 1
    return CpuBudget(
        cpus=cpus,
        source=source,
        host_cpus=host_cpus,
        allowed=tuple(sorted(allowed)),
        physical_cores=min(cores, cpus),
        sockets=max(1, min(sockets, cpus)),
        limits=limits,
    )


def recommended_threads(budget: CpuBudget) -> dict[str, str]:
    """Intel's published rules for TensorFlow on CPUs: intra-op = physical cores of the budget,
    OMP_NUM_THREADS = intra-op, inter-op = sockets in the budget."""
    return {
        "TF_NUM_INTRAOP_THREADS": str(budget.physical_cores),
        "TF_NUM_INTEROP_THREADS": str(budget.sockets),
        "OMP_NUM_THREADS": str(budget.physical_cores),
    }


__all__ = ["CpuBudget", "cpu_budget", "recommended_threads", "scheduler_allocation"]
