"""Where a job runs against where its GPUs and memory are, derived from facts (pure). Shared by the
NUMA checks and the launcher renderer (tfdoctor/fixes/render_launcher.py).

A GPU's node is its PCI `numa_node`; when the firmware reports -1 (unknown) but the GPU's
`local_cpulist` is exactly one node's CPUs, that node is used. The process's GPUs are the visible ones,
or — under a launcher with several local ranks — the one its local rank selects (the usual
one-GPU-per-rank convention: rank r uses visible GPU r).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from tfdoctor.derive.cpu_budget import cpu_budget, cpu_ids, recommended_threads, topology_entry
from tfdoctor.derive.gpu_inventory import Gpu, all_gpus, visible_gpus
from tfdoctor.facts import Facts, NotChecked, Unknown
from tfdoctor.facts.parse import count, format_cpulist
from tfdoctor.facts.parse_numa import normalize_bus_id, parse_tasks_per_node

# In the order a launcher consults them; PMI_RANK is a global rank (right on one node only).
LOCAL_RANK_VARIABLES = ("LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMI_RANK")
# The first four describe the running step (the launcher reads them at run time too); the last two the
# job, as a batch script sees it before `srun`.
LOCAL_SIZE_VARIABLES = ("LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
                        "SLURM_STEP_TASKS_PER_NODE", "SLURM_NTASKS_PER_NODE", "SLURM_TASKS_PER_NODE")
STEP_SIZE_VARIABLES = LOCAL_SIZE_VARIABLES[:4]
SLURM_LAYOUT_VARIABLES = ("SLURM_CPU_BIND", "SLURM_GPUS_ON_NODE", "SLURM_STEP_GPUS")


@dataclass(frozen=True)
class NumaNode:
    """A NUMA node that has CPUs: its number, its CPUs and its memory."""

    node: int
    cpus: tuple[int, ...]
    mem_total_kib: int | None


@dataclass(frozen=True)
class GpuPlacement:
    """A GPU and the NUMA node a process using it should be bound to, with how that node is known."""

    gpu: Gpu
    bus_id: str
    node: int | None  # the node binding should use; None: unknown
    reported_node: int | None  # sysfs numa_node as read (-1: firmware does not say); None: not found
    how: str  # "numa_node", "local_cpulist" or why unknown

    @property
    def label(self) -> str:
        return f"GPU {self.gpu.index} ({self.bus_id or 'no PCI id'})"


@dataclass(frozen=True)
class RankLayout:
    """This process's local rank and the local rank count, with the variables that said so."""

    local_rank: int | None
    rank_variable: str | None
    local_size: int | None
    size_variable: str | None
    slurm: dict[str, str] = field(default_factory=dict)

    @property
    def several_ranks(self) -> bool:
        """This process is one of several local ranks (a batch script that merely knows the task
        count, with no rank of its own, is not)."""
        return self.local_rank is not None and ((self.local_size or 0) > 1 or self.local_rank > 0)

    def evidence(self) -> dict[str, object]:
        data: dict[str, object] = {}
        if self.rank_variable:
            data[f"env.{self.rank_variable}"] = self.local_rank
        if self.size_variable:
            data[f"env.{self.size_variable}"] = self.local_size
        data.update({f"env.{k}": v for k, v in self.slurm.items()})
        return data


def numa_nodes(facts: Facts) -> list[NumaNode]:
    """The host's nodes that have CPUs (memory-only nodes cannot be bound to by CPU)."""
    nodes = []
    recorded = facts.get("numa.nodes")
    if not isinstance(recorded, list):
        raise NotChecked(f"numa.nodes holds a JSON {type(recorded).__name__}, not a list")
    for entry in recorded:
        if not isinstance(entry, dict) or not isinstance(entry.get("node"), int):
            raise NotChecked(f"numa.nodes holds {str(entry)[:40]!r}, not a node record")
        cpus = entry.get("cpus")
        if isinstance(cpus, Unknown):
            raise NotChecked(f"CPUs of NUMA node {entry.get('node')} unknown: {cpus.reason}")
        if cpus is not None and not cpu_ids(cpus):
            raise NotChecked(f"CPUs of NUMA node {entry['node']} are {str(cpus)[:40]!r}, not CPU numbers")
        memory = entry.get("mem_total_kib")
        if cpus:
            nodes.append(NumaNode(int(entry["node"]), tuple(cpus), memory if isinstance(memory, int) else None))
    return nodes


def nodes_of(cpus: object, nodes: list[NumaNode]) -> list[int]:
    chosen = set(cpus) if isinstance(cpus, (list, tuple, set)) else set()
    return [n.node for n in nodes if chosen & set(n.cpus)]


def gpu_placements(facts: Facts, gpus: list[Gpu], nodes: list[NumaNode]) -> list[GpuPlacement]:
    records = facts.get("numa.pci_gpus")
    if not isinstance(records, list) or not all(isinstance(record, dict) for record in records):
        raise NotChecked(f"numa.pci_gpus is {str(records)[:40]!r}, not a list of PCI device records")
    by_bus: dict[str, dict] = {}
    for record in records:
        try:
            by_bus[normalize_bus_id(str(record.get("bus_id", "")))] = record
        except ValueError:
            continue
    placements = []
    for gpu in gpus:
        try:
            bus_id = normalize_bus_id(gpu.pci_bus_id)
        except ValueError:
            placements.append(GpuPlacement(gpu, gpu.pci_bus_id, None, None, "NVML gave no PCI bus id"))
            continue
        record = by_bus.get(bus_id)
        if record is None:
            placements.append(GpuPlacement(gpu, bus_id, None, None, f"{bus_id} not in /sys/bus/pci/devices"))
            continue
        reported = record.get("numa_node")
        reported = reported if isinstance(reported, int) else None
        # A node without CPUs (memory-only, or not recorded) cannot be bound to: judge by the local CPUs.
        if reported is not None and reported >= 0 and any(n.node == reported for n in nodes):
            placements.append(GpuPlacement(gpu, bus_id, reported, reported, "numa_node"))
            continue
        if len(nodes) == 1:
            # One node: binding to it is trivially right, whatever the firmware says.
            placements.append(GpuPlacement(gpu, bus_id, nodes[0].node, reported, "only node"))
            continue
        local = record.get("local_cpus")
        # CPU numbers only: a recorded list of anything else (a hand-made --facts file) matches no node.
        local_set = set(local) if isinstance(local, list) and all(type(c) is int for c in local) else None
        match = [n.node for n in nodes if local_set is not None and local_set == set(n.cpus)]
        if len(match) == 1:
            placements.append(GpuPlacement(gpu, bus_id, match[0], reported, "local_cpulist"))
        else:
            why = "numa_node is -1" if reported is None or reported < 0 else f"numa_node {reported} has no CPUs"
            placements.append(GpuPlacement(gpu, bus_id, None, reported, why))
    return placements


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    return count(text)


def rank_layout(facts: Facts) -> RankLayout:
    rank, rank_variable = None, None
    for name in LOCAL_RANK_VARIABLES:
        value = _int(facts.env(name))
        if value is not None:
            rank, rank_variable = value, name
            break
    size, size_variable = None, None
    for name in LOCAL_SIZE_VARIABLES:
        raw = facts.env(name)
        value = parse_tasks_per_node(raw) if raw is not None else None
        if value:
            size, size_variable = value, name
            break
    slurm = {name: value for name in SLURM_LAYOUT_VARIABLES if (value := facts.env(name)) is not None}
    return RankLayout(rank, rank_variable, size, size_variable, slurm)


def process_gpus(visible: list[Gpu], layout: RankLayout) -> list[Gpu]:
    """The GPUs this process uses: all visible ones, or its local rank's one when ranks share them."""
    if layout.several_ranks and layout.local_rank is not None and len(visible) > 1:
        return [visible[layout.local_rank % len(visible)]]
    return visible


@dataclass(frozen=True)
class Placement:
    """Everything the NUMA checks compare about this process, read once."""

    nodes: list[NumaNode]
    layout: RankLayout
    gpus: list[GpuPlacement]  # this process's GPUs
    allowed: list[int]
    process_nodes: list[int]  # nodes whose CPUs the process may run on

    @property
    def gpu_nodes(self) -> list[int]:
        return sorted({p.node for p in self.gpus if p.node is not None})

    def node(self, number: int) -> NumaNode:
        return next(n for n in self.nodes if n.node == number)

    def evidence(self) -> dict[str, object]:
        data: dict[str, object] = {
            "numa.gpu_nodes": {str(p.gpu.index): p.node for p in self.gpus},
            "cpu.allowed_cpus": format_cpulist(self.allowed),
            "numa.process_nodes": self.process_nodes,
        }
        for number in sorted(set(self.gpu_nodes) | set(self.process_nodes)):
            data[f"numa.node{number}.cpus"] = format_cpulist(list(self.node(number).cpus))
        return {**data, **self.layout.evidence()}


def process_placement(facts: Facts) -> Placement | None:
    """This process's GPUs and CPUs against the host's nodes; None when there is nothing to place (one
    node, or no GPU for this process)."""
    layout = rank_layout(facts)
    gpus = process_gpus(visible_gpus(facts), layout)
    if not gpus:
        return None
    nodes = numa_nodes(facts)
    if len(nodes) < 2:
        return None
    allowed = facts.get("cpu.allowed_cpus")
    if not cpu_ids(allowed):
        raise NotChecked(f"cpu.allowed_cpus is {str(allowed)[:40]!r}, not a list of CPU numbers")
    return Placement(nodes, layout, gpu_placements(facts, gpus, nodes), allowed, nodes_of(allowed, nodes))


@dataclass(frozen=True)
class Slot:
    """Where one process goes: a node (None: no binding), its CPUs, the thread sizes for it."""

    node: int | None
    cpus: tuple[int, ...]
    threads: dict[str, str]
    gpus: tuple[int, ...] = ()  # NVML indices of the GPUs it serves
    sharing: int = 1  # processes bound to the same node

    @property
    def cpulist(self) -> str:
        return format_cpulist(list(self.cpus))


@dataclass(frozen=True)
class LaunchPlan:
    """How the launcher binds each local rank: its slots, in rank order, and the binding methods to try."""

    single: Slot  # a process started without a local-rank variable
    ranks: tuple[Slot, ...]  # local rank r goes to ranks[r % len(ranks)]
    methods: tuple[str, ...]  # "numactl", "taskset", then always "omp"
    nodes: int
    membind_error: str | None = None

    def slot_for(self, rank: int | None) -> Slot:
        if rank is None or not self.ranks:
            return self.single
        return self.ranks[rank % len(self.ranks)]

    def command_for(self, rank: int | None) -> list[str]:
        """The binding prefix the launcher execs the user's command with (its first method)."""
        return bind_command(self.methods[0], self.slot_for(rank))


def bind_command(method: str, slot: Slot) -> list[str]:
    if slot.node is None or method == "omp":
        return []
    if method == "numactl":
        return ["numactl", f"--cpunodebind={slot.node}", f"--membind={slot.node}", "--"]
    return ["taskset", "-c", slot.cpulist]


def _job_cpus(facts: Facts) -> set[int]:
    """CPUs the job may ever use (the cgroup cpuset), whatever this process's own affinity."""
    online = facts.get("cpu.online")
    if not cpu_ids(online):
        raise NotChecked(f"cpu.online is {str(online)[:40]!r}, not a list of CPU numbers")
    online = set(online)
    cgroup = facts.peek("cgroup")
    cpuset = cgroup.get("cpuset") if isinstance(cgroup, dict) else None
    return online & set(cpuset) if cpu_ids(cpuset) and cpuset else online


def node_slot(facts: Facts, node: NumaNode | None, sharing: int = 1, gpus: tuple[int, ...] = ()) -> Slot:
    """Thread sizes for a process bound to `node`, sharing it with `sharing - 1` others (the budget is
    the bound set, split between them)."""
    if node is None:
        budget = cpu_budget(facts)
        return Slot(None, budget.allowed, recommended_threads(budget), gpus, sharing)
    cpus = tuple(sorted(set(node.cpus) & _job_cpus(facts))) or node.cpus
    budget = cpu_budget(facts, bound_to=cpus, bound_label=f"bound to node {node.node}")
    threads = dict(recommended_threads(budget))
    # Ranks bound to one node split its cores; a per-task allocation (SLURM_CPUS_PER_TASK) already
    # is one rank's part, hence the smaller of the two.
    topology = facts.peek("cpu.topology")
    chosen = [t for t in topology if topology_entry(t) and t["cpu"] in cpus] if isinstance(topology, list) else []
    node_cores = len({(t["socket"], t["core"]) for t in chosen}) or len(cpus)
    share = str(max(1, min(budget.physical_cores, node_cores // max(1, sharing))))
    threads["TF_NUM_INTRAOP_THREADS"] = threads["OMP_NUM_THREADS"] = share
    return Slot(node.node, cpus, threads, gpus, sharing)


def _rank_gpus(facts: Facts, visible: list[Gpu]) -> list[Gpu]:
    """The GPUs the local ranks take in turn. When each rank sees only its own GPU (Slurm's
    --gpus-per-task, a per-rank CUDA_VISIBLE_DEVICES), they are the step's GPUs (SLURM_STEP_GPUS) or
    the host's, in index order: rank r is assumed to get the r-th. Where a device cgroup (Slurm's
    ConstrainDevices) lets NVML list only this task's GPU, the host's GPUs are the PCI bus's."""
    if not rank_layout(facts).several_ranks or len(visible) != 1:
        return visible
    from tfdoctor.derive.launcher_gpus import pci_host_gpus

    host = all_gpus(facts)
    if len(host) < 2:
        host = pci_host_gpus(facts) or host
    # SLURM_STEP_GPUS is the task's own GPU under per-task binding: only a list of several says which
    # of the host's GPUs the step's ranks take in turn.
    for variable in ("SLURM_STEP_GPUS", "SLURM_JOB_GPUS"):
        listed = [n for e in (facts.env(variable) or "").split(",") if (n := count(e)) is not None]
        if len(listed) > 1:
            host = [g for g in host if g.index in listed]
            break
    return host if len(host) > 1 else visible


def launch_plan(facts: Facts, local_ranks: int | None = None) -> LaunchPlan:
    """One slot per visible GPU (rank r → GPU r's node); with no GPUs, one per node the job may use.
    `local_ranks` (default: the layout's local size, else one per slot) decides how many share a node."""
    nodes = numa_nodes(facts)
    by_number = {n.node: n for n in nodes}
    visible = visible_gpus(facts)
    slot_gpus = _rank_gpus(facts, visible)
    placements = gpu_placements(facts, slot_gpus, nodes) if slot_gpus else []
    job = _job_cpus(facts)
    if placements:
        targets = [(by_number.get(p.node) if p.node is not None else None, (p.gpu.index,)) for p in placements]
    else:
        targets = [(n, ()) for n in nodes if set(n.cpus) & job]
    count = local_ranks or rank_layout(facts).local_size or len(targets)
    sharing = Counter(targets[r % len(targets)][0].node for r in range(count)
                      if targets and targets[r % len(targets)][0] is not None)
    ranks = tuple(node_slot(facts, node, sharing.get(node.node, 1) if node else 1, gpus)
                  for node, gpus in targets)

    if slot_gpus is not visible:
        placements = gpu_placements(facts, visible, nodes)
    gpu_nodes = {p.node for p in placements}
    if placements and len(gpu_nodes) == 1 and None not in gpu_nodes:
        single_node = by_number.get(next(iter(gpu_nodes)))  # type: ignore[arg-type]
    elif not placements and len([n for n in nodes if set(n.cpus) & job]) == 1:
        single_node = next(n for n in nodes if set(n.cpus) & job)
    else:
        single_node = None  # GPUs on several nodes (or unknown): no one node is right for all
    single = node_slot(facts, single_node, 1, tuple(p.gpu.index for p in placements))

    tools = facts.peek("numa.tools", {})
    tools = tools if isinstance(tools, dict) else {}
    membind = facts.peek("numa.membind")
    refused = isinstance(membind, dict) and membind.get("permitted") is False
    methods = []
    if tools.get("numactl") and not refused:
        methods.append("numactl")
    if tools.get("taskset"):
        methods.append("taskset")
    methods.append("omp")
    return LaunchPlan(single, ranks, tuple(methods), len(nodes),
                      str(membind.get("error", "")) if refused else None)
