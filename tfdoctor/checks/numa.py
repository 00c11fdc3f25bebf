"""NUMA — where the process runs against where its GPUs and memory are.

On a multi-socket host every host↔device copy of a process running on the other socket crosses the
socket interconnect (UPI, Infinity Fabric) and its pinned buffers land in the other node's memory; the
recipes of NVIDIA's and Intel's published benchmarks bind each process with
`numactl --cpunodebind=N --membind=N` to its GPU's node and size its thread pools for that node.
"""

from __future__ import annotations

from collections.abc import Iterator

from tfdoctor.derive.cpu_budget import cpu_ids
from tfdoctor.derive.gpu_inventory import Gpu, all_gpus, visible_gpus
from tfdoctor.derive.process_layout import launcher_gives_own_cpus, process_layout
from tfdoctor.derive.thread_settings import thread_settings
from tfdoctor.facts import Facts, NotChecked
from tfdoctor.model import AdminFix, Applicability, EnvFix, Finding, Severity, set_env
from tfdoctor.registry import check

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from tfdoctor.derive.numa_placement import Placement

# The placement derivations (tfdoctor.derive.numa_placement) are imported by each check only once it
# knows there is something to place: the most common hook host, one node or no GPU, never pays for them.


def _single_node(facts: Facts) -> bool:
    """Fewer than two NUMA nodes recorded: no placement can be wrong."""
    nodes = facts.peek("numa.nodes")
    return isinstance(nodes, list) and len(nodes) < 2


def _placement(facts: Facts) -> Placement | None:
    """None when there is nothing to place: one node, or no GPU for this process."""
    if not visible_gpus(facts):
        return None  # checked first: a host without GPUs needs no NUMA facts to pass
    from tfdoctor.derive.numa_placement import process_placement

    return process_placement(facts)


def _bind_fixes(facts: Facts, place: Placement, target: int) -> tuple[EnvFix | AdminFix, ...]:
    """Thread sizes for the target node (this rank's share of it, as the launcher would give) and the
    ways to bind: the launcher, or the binding command by hand."""
    from tfdoctor.derive.numa_placement import bind_command, launch_plan, node_slot

    plan = launch_plan(facts)
    slot = plan.slot_for(place.layout.local_rank) if place.layout.several_ranks else None
    if slot is None or slot.node != target:
        slot = node_slot(facts, place.node(target))
    prefix = [part for part in bind_command(plan.methods[0], slot) if part != "--"]
    command = " ".join([*prefix, "python", "train.py"])
    launch = "./run.sh python train.py"
    if place.layout.several_ranks:
        launch = f"srun --cpu-bind=none {launch}"
    steps = ("tfdoctor fix --write-launcher run.sh",
             f"{launch}   # binds each process to its GPU's node and sizes its threads")
    if command != "python train.py":
        steps += (f"{command}   # or by hand",)
    threads = slot.threads
    return (
        EnvFix(f"Size the thread pools for node {target} ({len(slot.cpus)} CPUs"
               f"{f', shared by {slot.sharing} ranks' if slot.sharing > 1 else ''}): "
               + ", ".join(f"{k}={v}" for k, v in threads.items()),
               tuple(set_env(k, v) for k, v in threads.items())),
        AdminFix(f"Bind the process to NUMA node {target}, the node of its GPU(s)", steps,
                 Applicability.MANUAL),
    )


@check("NUMA001", "process-unbound-from-gpu-node", Severity.WARNING)
def process_unbound_from_gpu_node(facts: Facts) -> Iterator[Finding]:
    """What it does:
    On a host with several NUMA nodes, finds a process that may run on the CPUs of several nodes while
    all of its GPUs sit on one.

    Why is this bad?
    The scheduler moves the process's threads across sockets: host-to-device copies, the input
    pipeline and pinned staging buffers end up on the far node half of the time, and every such
    access crosses the socket interconnect. Binding to the GPU's node is often worth tens of percent
    for input-bound training.

    Example:
    A 2-socket host, GPUs 2 and 3 on node 1, `CUDA_VISIBLE_DEVICES=2,3 python train.py` started
    without numactl or taskset (allowed CPUs 0-63).

    Fix:
    Start the job through the launcher (`tfdoctor fix --write-launcher run.sh`, then
    `./run.sh python train.py`), or `numactl --cpunodebind=N --membind=N`; size the thread pools for
    the node (the environment script sets them).

    Fix safety:
    The thread sizes are safe (speed only). Binding is shown, never applied: it is a change to how
    the job is started.
    """
    place = _placement(facts)
    if place is None or len(place.gpu_nodes) != 1 or any(p.node is None for p in place.gpus):
        return
    target = place.gpu_nodes[0]
    if len(place.process_nodes) < 2 or target not in place.process_nodes:
        return
    gpus = ", ".join(str(p.gpu.index) for p in place.gpus)
    who = f"local rank {place.layout.local_rank}" if place.layout.several_ranks else "this process"
    yield Finding(
        f"{who} may run on NUMA nodes {', '.join(map(str, place.process_nodes))} but its GPU(s) {gpus} "
        f"sit on node {target}: it is not bound",
        evidence=place.evidence(),
        fixes=_bind_fixes(facts, place, target),
    )


def _off_node(place: Placement) -> bool:
    """Bound to nodes that hold none of its GPUs."""
    return bool(place.gpu_nodes) and bool(place.process_nodes) and not set(place.process_nodes) & set(place.gpu_nodes)


@check("NUMA002", "process-bound-off-gpu-node", Severity.ERROR)
def process_bound_off_gpu_node(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds a process bound (by affinity, cpuset, numactl or taskset) to CPUs of NUMA nodes that hold
    none of its GPUs.

    Why is this bad?
    Every host↔device transfer and every pinned buffer crosses the socket interconnect, for the whole
    run: the worst placement there is, worse than no binding at all.

    Example:
    GPUs 2 and 3 on node 1, and `numactl --cpunodebind=0 --membind=0 python train.py`.

    Fix:
    Bind to the GPUs' node instead (the launcher from `tfdoctor fix --write-launcher run.sh` picks it),
    or choose GPUs on the node the process is bound to.

    Fix safety:
    The thread sizes are safe (speed only). Binding is shown, never applied.
    """
    place = _placement(facts)
    if place is None or place.layout.several_ranks or not _off_node(place):
        return
    gpus = ", ".join(str(p.gpu.index) for p in place.gpus)
    target = place.gpu_nodes[0]
    yield Finding(
        f"this process is bound to NUMA node(s) {', '.join(map(str, place.process_nodes))} but its GPU(s) "
        f"{gpus} sit on node(s) {', '.join(map(str, place.gpu_nodes))}",
        evidence=place.evidence(),
        fixes=_bind_fixes(facts, place, target),
    )


@check("NUMA003", "gpus-span-numa-nodes", Severity.WARNING)
def gpus_span_numa_nodes(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds one process using GPUs that sit on different NUMA nodes (sockets).

    Why is this bad?
    Whatever node the process is bound to, some of its GPUs are remote: their copies cross the socket
    interconnect, and every all-reduce between GPUs of different sockets goes through the CPUs' link
    (no PCIe switch or NVLink shared between them), usually the slowest hop of the ring.

    Example:
    A 2-socket host with GPUs 0-1 on node 0 and 2-3 on node 1, and one process using all four.

    Fix:
    Use the GPUs of one node (CUDA_VISIBLE_DEVICES, with CUDA_DEVICE_ORDER=PCI_BUS_ID so the indices are
    the ones nvidia-smi shows), or run one process per GPU (or per node) with the launcher, each bound
    to its GPU's node.

    When NVML shows the process's GPUs joined by NVLink (directly or through NVSwitches, the usual
    8-GPU node), their all-reduce never crosses sockets: only the host copies of the remote GPUs do,
    and a process using every GPU is the point of such a node. That is an info, and its fix is one
    process per GPU (or per node), never fewer GPUs.

    Fix safety:
    Manual: the suggested CUDA_VISIBLE_DEVICES gives the job fewer GPUs; shown, never applied.
    """
    place = _placement(facts)
    if place is None or len(place.gpu_nodes) < 2:
        return
    from tfdoctor.derive.nvlink import nvlink_connected

    if nvlink_connected([p.gpu for p in place.gpus]):
        nodes = ", ".join(map(str, place.gpu_nodes))
        yield Finding(
            f"this process uses GPUs on NUMA nodes {nodes}, joined by NVLink: their all-reduce stays on NVLink; "
            "only the host-to-device copies of the GPUs of the other node cross sockets",
            evidence={**place.evidence(), "nvml.devices.nvlink": "connected"},
            fixes=(AdminFix("Run one process per GPU (or per NUMA node), each bound to its GPU's node", (
                "tfdoctor fix --write-launcher run.sh",
                "srun --ntasks-per-node=<GPUs> --cpu-bind=none ./run.sh python train.py   # or mpirun -np <GPUs>",
            ), Applicability.MANUAL),),
            severity=Severity.INFO)
        return
    by_node: dict[int, list[Gpu]] = {}
    for p in place.gpus:
        if p.node is not None:
            by_node.setdefault(p.node, []).append(p.gpu)
    bound = place.process_nodes[0] if len(place.process_nodes) == 1 else None
    best = max(by_node, key=lambda n: (len(by_node[n]), n == bound, -n))
    chosen = ",".join(str(g.index) for g in by_node[best])
    layout = "; ".join(f"node {n}: GPU {','.join(str(g.index) for g in gs)}" for n, gs in sorted(by_node.items()))
    yield Finding(
        f"this process uses GPUs on {len(by_node)} NUMA nodes ({layout}): their traffic crosses sockets",
        evidence=place.evidence(),
        fixes=(EnvFix(f"Use the {len(by_node[best])} GPU(s) of node {best}: CUDA_VISIBLE_DEVICES={chosen}",
                      (set_env("CUDA_DEVICE_ORDER", "PCI_BUS_ID"), set_env("CUDA_VISIBLE_DEVICES", chosen)),
                      Applicability.MANUAL),),
    )


@check("NUMA004", "gpu-numa-node-unknown", Severity.WARNING)
def gpu_numa_node_unknown(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds NVIDIA GPUs whose PCI `numa_node` in sysfs is -1: the firmware (ACPI _PXM) does not say which
    node they are attached to. On a single-node host this is harmless and reported as info.

    Why is this bad?
    On a multi-node host nothing can bind a process to its GPU's node: not tfdoctor's launcher, not
    NCCL's or the CUDA driver's own topology detection, which then treat every GPU as equally far.

    Example:
    /sys/bus/pci/devices/0000:3b:00.0/numa_node reads -1 on a 2-socket server (often: NUMA or
    "ACPI SRAT"/"proximity domain" reporting disabled in the BIOS, or a virtual machine without a
    virtual NUMA topology).

    Fix:
    Enable NUMA reporting in the firmware setup (BIOS: NUMA / SRAT / sub-NUMA settings) or give the
    virtual machine a NUMA topology with the GPU's PCI root on the right node; as a stop-gap, root can
    write the node into /sys/bus/pci/devices/<bdf>/numa_node (taints the kernel, lost at reboot).

    Fix safety:
    Manual: firmware and kernel settings need an administrator.
    """
    gpus = all_gpus(facts)
    if not gpus:
        return
    from tfdoctor.derive.numa_placement import gpu_placements, numa_nodes

    nodes = numa_nodes(facts)
    unknown = [p for p in gpu_placements(facts, gpus, nodes) if p.reported_node == -1]
    if not unknown:
        return
    listed = ", ".join(p.label for p in unknown)
    inferred = [p for p in unknown if p.how == "local_cpulist"]
    multi = len(nodes) > 1
    message = (f"{listed}: numa_node is -1 (the firmware does not report the GPU's node)"
               + ("" if multi else "; harmless on this single-node host"))
    if inferred:
        message += "; inferred from local_cpulist: " + ", ".join(f"GPU {p.gpu.index} on node {p.node}"
                                                                  for p in inferred)
    prose = ("Enable NUMA / ACPI SRAT (proximity domain) reporting in the BIOS setup, or give the virtual "
             "machine a NUMA topology that places the GPU's PCI root on its node; the commands are a stop-gap as "
             "root (lost at reboot, taints the kernel), NODE the GPU's node")
    steps = tuple(f"echo NODE | sudo tee /sys/bus/pci/devices/{p.bus_id}/numa_node" for p in unknown)
    yield Finding(
        message,
        evidence={"numa.pci_gpus.numa_node": {p.bus_id: p.reported_node for p in unknown},
                  "numa.nodes": len(nodes)},
        fixes=(AdminFix("Make the firmware report each GPU's NUMA node", steps, text=prose),) if multi else (),
        severity=None if multi else Severity.INFO,
    )


@check("NUMA101", "thread-pools-exceed-node-share", Severity.WARNING)
def thread_pools_exceed_node_share(facts: Facts) -> Iterator[Finding]:
    """What it does:
    With several local ranks, each to be bound to its GPU's NUMA node, finds thread counts
    (intra-op, OpenMP, MKL) larger than this rank's share of that node: the node's physical cores
    divided by the ranks bound to it. (A single bound process is THR102's: its budget is the bound set.)

    Why is this bad?
    Ranks bound to one node share its cores: two ranks each running 16 OpenMP threads on a 16-core
    node run 32 threads on 16 cores, and OpenMP's spinning barriers make the oversubscription costly.

    Example:
    4 local ranks on a 2-socket host with 16 cores per socket and two GPUs per socket, each rank with
    OMP_NUM_THREADS=16 (the whole socket) instead of 8.

    Fix:
    Size the pools for the share (the launcher from `tfdoctor fix --write-launcher run.sh` does it per
    rank; the environment script sets the share).

    Fix safety:
    Safe: thread counts change speed, never results.
    """
    if _single_node(facts):
        return
    from tfdoctor.derive.numa_placement import launch_plan, numa_nodes, rank_layout

    layout = rank_layout(facts)
    if not layout.several_ranks or layout.local_size is None or layout.local_size < 2:
        return
    if launcher_gives_own_cpus(process_layout(facts)):
        return  # each task has CPUs of its own: its budget is that set (THR102 judges it)
    nodes = numa_nodes(facts)
    if len(nodes) < 2:
        return
    plan = launch_plan(facts)
    slot = plan.slot_for(layout.local_rank or 0)
    if slot.node is None or slot.sharing < 2:
        return
    allowed = facts.get("cpu.allowed_cpus")
    if not cpu_ids(allowed):
        raise NotChecked(f"cpu.allowed_cpus is {str(allowed)[:40]!r}, not a list of CPU numbers")
    if not set(slot.cpus) <= set(allowed):
        return  # already bound to part of the node: the CPU budget (THR) judges the counts
    share = int(slot.threads["OMP_NUM_THREADS"])
    settings = thread_settings(facts)
    over = {k: v for k, v in settings.items() if k != "TF_NUM_INTEROP_THREADS" and v > share}
    if not over:
        return
    listed = ", ".join(f"{k}={v}" for k, v in sorted(over.items()))
    yield Finding(
        f"{listed} per rank, but {slot.sharing} local ranks share node {slot.node} "
        f"({len(slot.cpus)} CPUs): each rank's share is {share} thread(s)",
        evidence={**{f"env.{k}": v for k, v in sorted(over.items())}, **layout.evidence(),
                  "numa.rank_node": slot.node, "numa.ranks_on_node": slot.sharing, "numa.node_share": share},
        fixes=(EnvFix(f"Size the thread pools for {share} thread(s) per rank",
                      tuple(set_env(k, str(share)) for k in sorted(over))),),
    )


@check("NUMA102", "rank-bound-off-gpu-node", Severity.ERROR)
def rank_bound_off_gpu_node(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Under srun, mpirun or another launcher with several local ranks, finds a rank whose CPU binding
    lies on NUMA nodes that do not hold its GPU (rank r uses visible GPU r, or the one GPU it sees).

    Why is this bad?
    Schedulers bind ranks to cores or sockets in their own order (Slurm's default distribution is
    cyclic across sockets), which need not be the order of the GPUs: rank 1 on socket 1 drives GPU 1
    on socket 0, and all its transfers cross the interconnect.

    Example:
    `srun --ntasks-per-node=4 --cpu-bind=sockets python train.py` on a host with GPUs 0-1 on node 0 and
    2-3 on node 1: ranks 1 and 2 are bound to the wrong socket.

    Fix:
    Start the ranks through the launcher (`tfdoctor fix --write-launcher run.sh`, then
    `srun --cpu-bind=none ./run.sh python train.py`), which binds each rank to its GPU's node, or use
    Slurm's GPU-aware binding (`--gpu-bind=closest` with `--cpu-bind` matching it).

    Fix safety:
    Manual: a change to how the job is started; shown, never applied.
    """
    place = _placement(facts)
    if place is None or not place.layout.several_ranks or not _off_node(place):
        return
    gpu = place.gpus[0]
    target = place.gpu_nodes[0]
    yield Finding(
        f"local rank {place.layout.local_rank} is bound to NUMA node(s) "
        f"{', '.join(map(str, place.process_nodes))} but its GPU {gpu.gpu.index} sits on node {target}",
        evidence=place.evidence(),
        fixes=_bind_fixes(facts, place, target),
    )
