"""THR — threads: thread-pool sizes and affinity against the CPU budget the job really has.

Recommendations follow Intel's published guide for TensorFlow on CPUs ("Maximize TensorFlow
Performance on CPU: Considerations and Recommendations for Inference Workloads") and TensorFlow's own
performance guide: intra-op = physical cores, OMP_NUM_THREADS = intra-op, inter-op = sockets,
KMP_BLOCKTIME=1, and KMP_AFFINITY=granularity=fine,compact,1,0 for one process per node only (several
processes with one binding pin the same cores: THR106). The OpenMP and affinity model is in
docs/threads.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tfdoctor.derive.cpu_budget import CpuBudget, cpu_budget, recommended_threads
from tfdoctor.derive.openmp_runtimes import (
    RuntimeCopy,
    openmp_copies,
    scan_incomplete,
    threading_model,
)
from tfdoctor.derive.process_layout import node_cpus, process_layout, processes_share_cpus
from tfdoctor.derive.thread_settings import THREAD_VARIABLES, parse_thread_count, thread_settings
from tfdoctor.facts import Facts, NotChecked
from tfdoctor.facts.parse import count, parse_affinity_list, parse_omp_places
from tfdoctor.model import AdminFix, Applicability, EnvFix, Finding, Severity, set_env, unset_env
from tfdoctor.registry import check

KMP_BLOCKTIME_DEFAULT_MS = 200


def _recommend_fix(budget: CpuBudget, names: tuple[str, ...] | None = None) -> EnvFix:
    values = recommended_threads(budget)
    chosen = {k: v for k, v in values.items() if names is None or k in names}
    return EnvFix(
        f"Size the thread pools for {budget.cpus} CPU(s): {', '.join(f'{k}={v}' for k, v in chosen.items())}",
        tuple(set_env(k, v) for k, v in chosen.items()),
    )


@check("THR001", "thread-count-not-a-number", Severity.ERROR)
def thread_count_not_a_number(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Checks that OMP_NUM_THREADS, MKL_NUM_THREADS, TF_NUM_INTRAOP_THREADS and TF_NUM_INTEROP_THREADS
    hold positive whole numbers (TensorFlow's two also accept 0, meaning "choose for me").

    Why is this bad?
    A runtime that cannot parse its thread count ignores it or warns once and falls back to its own
    default, usually every core of the host: the setting the user believes in is not in force. Values
    such as "abc", "0" or "-1" usually come from a job script computing them from an unset variable.

    Example:
    OMP_NUM_THREADS=abc, or OMP_NUM_THREADS=$((SLURM_CPUS_PER_TASK)) outside a Slurm job.

    Fix:
    Set the variable to the recommended count for the job's CPU budget (physical cores of the budget).

    Fix safety:
    Safe: a thread count changes speed, never results.
    """
    budget = _optional_budget(facts)
    for name in THREAD_VARIABLES:
        raw = facts.env(name)
        if raw is None or parse_thread_count(name, raw) is not None:
            continue
        fixes: tuple[EnvFix, ...] = ()
        if budget is not None:
            value = recommended_threads(budget).get(name, str(budget.physical_cores))
            fixes = (EnvFix(f"Set {name}={value}", (set_env(name, value),)),)
        yield Finding(
            f"{name}={raw!r} is not a positive whole number; the runtime ignores it",
            evidence={f"env.{name}": raw},
            fixes=fixes,
        )


def _optional_budget(facts: Facts) -> CpuBudget | None:
    try:
        return cpu_budget(facts)
    except NotChecked:
        return None


def _openmp_matters(facts: Facts) -> bool:
    """Whether an OpenMP team can run in the job: the build is OpenMP-threaded (or no build was found to
    say otherwise), or the environment holds an OpenMP runtime (numpy/MKL, scikit-learn, torch start
    their own teams). A stock TensorFlow in an environment without one never reads OMP_NUM_THREADS.
    Unknown runtimes count as present."""
    model = threading_model(facts)
    if model.per_op_teams or not model.known:
        return True
    try:
        return bool(openmp_copies(facts))
    except NotChecked:
        return True


@check("THR101", "thread-pools-unsized-in-cpu-limit", Severity.WARNING)
def thread_pools_unsized_in_cpu_limit(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds a job limited to fewer CPUs than it may run on — a CFS quota (cgroup v2 cpu.max, v1
    cpu.cfs_quota_us) or a Slurm/PBS allocation that no binding enforces — whose thread counts are
    left unset. A limit by CPU affinity or a cpuset is not one: TensorFlow and OpenMP size their
    pools from the affinity mask (sched_getaffinity), so they already fit it; where the only
    difference is hyperthread siblings, a tip (info) says so.

    Why is this bad?
    A quota or an unenforced allocation is invisible to the runtimes: a `docker run --cpus=2`
    container on a 64-core host starts 64 intra-op threads, and the quota throttles all of them every
    period; the slowdown is often several-fold.

    Example:
    `docker run --cpus=2` on a 64-core host (cpu.max "200000 100000"), with OMP_NUM_THREADS,
    TF_NUM_INTRAOP_THREADS and TF_NUM_INTEROP_THREADS unset. Not this: `taskset -c 0-3`, a cpuset
    container (`--cpuset-cpus`), `srun --cpu-bind=cores`.

    OMP_NUM_THREADS is asked for only where an OpenMP team can run: an OpenMP-threaded build, or an
    OpenMP runtime in the environment (the openmp facts); a stock build alone never reads it.

    Fix:
    Set TF_NUM_INTRAOP_THREADS and OMP_NUM_THREADS to the physical cores of the budget and
    TF_NUM_INTEROP_THREADS to the sockets in it (Intel's rules for TensorFlow on CPUs).

    Fix safety:
    Safe: thread counts change speed, never results.
    """
    budget = cpu_budget(facts)
    if not budget.constrained:
        return
    settings = thread_settings(facts)
    wanted = ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS")
    if _openmp_matters(facts):
        wanted += ("OMP_NUM_THREADS",)
    unset = tuple(name for name in wanted if name not in settings)
    if not unset:
        return
    visible = len(budget.allowed)  # what sched_getaffinity reports: the runtimes' own sizing
    verb = "is" if len(unset) == 1 else "are"
    evidence = {**budget.evidence(), "cpu.allowed_cpus": visible, "env.unset": list(unset)}
    if budget.cpus < visible:
        kind = "a CFS quota" if budget.source.startswith("cgroup quota") else "an allocation no binding enforces"
        yield Finding(
            f"this job may use {budget.cpus} of the {visible} CPUs it can run on ({budget.source}: {kind}) but "
            f"{', '.join(unset)} {verb} not set to a valid count: TensorFlow and OpenMP size their pools from "
            f"the {visible} CPUs, not from this limit",
            evidence={**evidence, "limit_kind": "quota" if kind == "a CFS quota" else "allocation"},
            fixes=(_recommend_fix(budget, unset),),
        )
        return
    pools = tuple(n for n in unset if n != "TF_NUM_INTEROP_THREADS")
    if budget.physical_cores < budget.cpus and pools:
        yield Finding(
            f"tip: the {visible} CPUs this job may run on ({budget.source}) are {budget.physical_cores} cores "
            f"and their hyperthread siblings; TensorFlow and OpenMP already size their pools from them, and "
            f"Intel's advice is one intra-op/OpenMP thread per physical core",
            evidence={**evidence, "cpu.budget.physical_cores": budget.physical_cores, "limit_kind": "affinity"},
            fixes=(_recommend_fix(budget, pools),),
            severity=Severity.INFO,
        )


@check("THR102", "thread-pools-exceed-cpu-budget", Severity.WARNING)
def thread_pools_exceed_cpu_budget(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Compares the thread counts that are set with the job's CPU budget: any one pool (intra-op,
    OpenMP, MKL, inter-op) larger than the budget and, for OpenMP-threaded builds only, intra-op ×
    inter-op above the budget times the sockets in it. Which threading model applies is decided from
    what the build links (the OpenMP runtimes in the DT_NEEDED of TensorFlow's libraries), else from the
    distribution (knowledge table `tensorflow_threading`), and named in the finding:
    - stock builds (tensorflow, tensorflow-cpu, …): oneDNN and Eigen kernels run on TensorFlow's one
      intra-op pool, which every op started by an inter-op thread shares; about intra + inter threads
      are runnable at once, so each pool within the budget fits (TensorFlow's own defaults, both pools
      = the CPUs, included);
    - OpenMP-threaded builds (intel-tensorflow, a build linking or bundling an OpenMP runtime, such as
      one built from source with --config=mkl on GNU OpenMP): every op started by an
      inter-op thread runs its own OpenMP team, so up to intra × inter threads run at once (the
      rule-of-thumb product, intra = cores and inter = sockets, always fits).

    Why is this bad?
    More runnable threads than CPUs means context switches, cache thrashing and, under a cgroup
    quota, throttling; OpenMP's spinning threads make it worse.

    Example:
    TF_NUM_INTRAOP_THREADS=16 and OMP_NUM_THREADS=16 in a Slurm job with SLURM_CPUS_PER_TASK=4; or,
    with intel-tensorflow on 8 cores, intra-op 8 and inter-op 4 (32 threads at once).

    Fix:
    Set intra-op and OMP_NUM_THREADS to the budget's physical cores, inter-op to its sockets.

    Fix safety:
    Safe: thread counts change speed, never results.
    """
    budget = cpu_budget(facts)
    settings = thread_settings(facts)
    if not settings:
        return
    model = threading_model(facts)
    over = {k: v for k, v in settings.items() if v > budget.cpus}
    intra = max(settings.get("TF_NUM_INTRAOP_THREADS", 0), settings.get("OMP_NUM_THREADS", 0))
    inter = settings.get("TF_NUM_INTEROP_THREADS", 0)
    product_over = (model.per_op_teams and intra and inter and intra * inter > budget.cpus * budget.sockets)
    if not over and not product_over:
        return
    names = set(over) | ({"TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS"} if product_over else set())
    if over:
        listed = ", ".join(f"{k}={v}" for k, v in sorted(over.items()))
        message = (f"{listed} {'exceeds' if len(over) == 1 else 'exceed'} the {budget.cpus} CPU(s) this job "
                   f"may use ({budget.source})")
    else:
        message = (f"intra-op × inter-op = {intra} × {inter} = {intra * inter} threads can be runnable at "
                   f"once, more than the {budget.cpus} CPU(s) × {budget.sockets} socket(s) of this job "
                   f"({budget.source}), because {model.why}")
    yield Finding(
        message,
        evidence={**budget.evidence(), **{f"env.{k}": v for k, v in sorted(settings.items())},
                  "threading_model": model.kind, "threading_model.why": model.why},
        fixes=(_recommend_fix(budget, tuple(n for n in recommended_threads(budget) if n in names)),),
    )


@check("THR103", "omp-threads-on-hyperthreads", Severity.WARNING)
def omp_threads_on_hyperthreads(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds OMP_NUM_THREADS (or TF_NUM_INTRAOP_THREADS) above the physical cores of the budget but
    within its logical CPUs: the extra threads land on hyperthread siblings.

    Why is this bad?
    Compute-bound oneDNN and Eigen kernels gain nothing from a core's second hardware thread; two
    OpenMP threads sharing a core's vector units each run at about half speed, and a barrier waits
    for the slowest.

    Example:
    OMP_NUM_THREADS=32 on a 16-core, 32-thread CPU.

    Fix:
    Set OMP_NUM_THREADS and TF_NUM_INTRAOP_THREADS to the physical core count.

    Fix safety:
    Safe: thread counts change speed, never results.
    """
    budget = cpu_budget(facts)
    settings = thread_settings(facts)
    for name in ("OMP_NUM_THREADS", "TF_NUM_INTRAOP_THREADS"):
        value = settings.get(name)
        if value is None or value <= budget.physical_cores or value > budget.cpus:
            continue
        yield Finding(
            f"{name}={value} is above the {budget.physical_cores} physical core(s) of this job's "
            f"{budget.cpus} CPUs: {value - budget.physical_cores} thread(s) share a core with another",
            evidence={f"env.{name}": value, "cpu.budget.physical_cores": budget.physical_cores,
                      "cpu.budget": budget.cpus},
            fixes=(EnvFix(f"Set {name}={budget.physical_cores}", (set_env(name, str(budget.physical_cores)),)),),
        )


@check("THR104", "omp-and-intraop-threads-disagree", Severity.WARNING)
def omp_and_intraop_threads_disagree(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds OMP_NUM_THREADS and TF_NUM_INTRAOP_THREADS both set, to different values.

    Why is this bad?
    With an OpenMP build of oneDNN (Intel's TensorFlow builds) the OpenMP pool runs the oneDNN
    kernels and TensorFlow's intra-op pool runs the rest; sized differently, one of them either
    oversubscribes the cores or leaves some idle. Intel's guide sets them equal.

    Example:
    OMP_NUM_THREADS=4, TF_NUM_INTRAOP_THREADS=16.

    Fix:
    Set OMP_NUM_THREADS to TF_NUM_INTRAOP_THREADS (or both to the physical cores of the budget).

    Fix safety:
    Safe: thread counts change speed, never results.
    """
    settings = thread_settings(facts)
    omp, intra = settings.get("OMP_NUM_THREADS"), settings.get("TF_NUM_INTRAOP_THREADS")
    if omp is None or intra is None or omp == intra:
        return
    budget = _optional_budget(facts)
    target = min(intra, budget.physical_cores) if budget else intra
    yield Finding(
        f"OMP_NUM_THREADS={omp} and TF_NUM_INTRAOP_THREADS={intra} disagree",
        evidence={"env.OMP_NUM_THREADS": omp, "env.TF_NUM_INTRAOP_THREADS": intra},
        fixes=(EnvFix(f"Set both to {target}", (set_env("OMP_NUM_THREADS", str(target)),
                                                set_env("TF_NUM_INTRAOP_THREADS", str(target)))),),
    )


# -- affinity ------------------------------------------------------------------------------------

AFFINITY_VARIABLES = ("KMP_AFFINITY", "GOMP_CPU_AFFINITY", "OMP_PROC_BIND", "OMP_PLACES")


def _kmp_affinity(value: str) -> tuple[str | None, list[int] | None]:
    """KMP_AFFINITY -> (type, explicit proclist). Modifiers and type come in any order, commas
    inside the proclist brackets included."""
    proclist: list[int] | None = None
    match = re.search(r"proclist=\[([^\]]*)\]", value)
    if match:
        proclist = _cpus_of_list(match.group(1))
        value = value.replace(match.group(0), "")
    kind = None
    for token in (t.strip().lower() for t in value.split(",")):
        if token in ("none", "compact", "scatter", "balanced", "explicit", "disabled", "logical", "physical"):
            kind = token
    return kind, proclist


def _cpus_of_list(text: str) -> list[int] | None:
    """GOMP_CPU_AFFINITY / proclist syntax: "0 3 1-2 4-15:2" or "0,3,{4,5}"; None if unparsable or naming
    CPUs beyond any machine (bounded parser; THR120 reports those)."""
    try:
        return parse_affinity_list(text)
    except ValueError:
        return None


def _omp_places(value: str) -> tuple[str | None, int | None, list[int] | None]:
    """OMP_PLACES -> (abstract name, count, cpus of an explicit list); bounded like _cpus_of_list."""
    try:
        return parse_omp_places(value)
    except ValueError:
        return None, None, None


def _thread_count(facts: Facts, budget: CpuBudget | None) -> int | None:
    settings = thread_settings(facts)
    return settings.get("OMP_NUM_THREADS") or settings.get("TF_NUM_INTRAOP_THREADS") or (
        budget.cpus if budget else None)


@check("THR105", "affinity-pins-all-threads-to-one-cpu", Severity.ERROR)
def affinity_pins_all_threads_to_one_cpu(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Reads KMP_AFFINITY, GOMP_CPU_AFFINITY, OMP_PLACES and OMP_PROC_BIND and finds settings that bind
    every thread of a multi-threaded process to one CPU: an explicit proclist or GOMP_CPU_AFFINITY
    naming a single CPU, OMP_PLACES with a single one-CPU place, or OMP_PROC_BIND=master/primary
    (every thread on the primary thread's place) with per-core or per-thread places.

    Why is this bad?
    All threads then share one core: a job configured for 32 threads runs on one, 10-30× slower,
    and nothing warns. It usually comes from a template written for one process per core.

    Example:
    KMP_AFFINITY=granularity=fine,proclist=[0],explicit with OMP_NUM_THREADS=16;
    OMP_PROC_BIND=master OMP_PLACES=cores.

    Fix:
    Unset the pinning variable. With one process per node, Intel's
    KMP_AFFINITY=granularity=fine,compact,1,0 spreads the threads over the cores instead; where several
    processes share the node, no compact (or other) binding is recommended: each process would pin
    its threads to the same cores (THR106). Bind each process to CPUs of its own first (srun
    --cpu-bind=cores, `tfdoctor fix --write-launcher`), or leave the binding unset.

    Fix safety:
    Safe: affinity changes speed, never results.
    """
    budget = _optional_budget(facts)
    threads = _thread_count(facts, budget)
    if threads is not None and threads <= 1:
        return
    bind = (facts.env("OMP_PROC_BIND") or "").strip().lower()
    pinned: list[tuple[str, str, str]] = []  # (variable, value, why)
    kmp = facts.env("KMP_AFFINITY")
    if kmp:
        kind, proclist = _kmp_affinity(kmp)
        if kind == "explicit" and proclist is not None and len(proclist) == 1:
            pinned.append(("KMP_AFFINITY", kmp, f"an explicit proclist with the single CPU {proclist[0]}"))
    gomp = facts.env("GOMP_CPU_AFFINITY")
    if gomp:
        cpus = _cpus_of_list(gomp)
        if cpus is not None and len(cpus) == 1:
            pinned.append(("GOMP_CPU_AFFINITY", gomp, f"the single CPU {cpus[0]}"))
    places = facts.env("OMP_PLACES")
    if places and bind != "false":
        abstract, count, cpus = _omp_places(places)
        if (abstract in ("threads", "cores") and count == 1) or (cpus is not None and len(cpus) == 1):
            pinned.append(("OMP_PLACES", places, "a single place of one CPU"))
    if bind.split(",", 1)[0] in ("master", "primary"):
        abstract = _omp_places(places)[0] if places else "threads"
        if abstract in ("threads", "cores"):
            pinned.append(("OMP_PROC_BIND", facts.env("OMP_PROC_BIND") or "",
                           f"every thread on the primary thread's place, and places are {abstract}"))
    layout = process_layout(facts)
    for name, value, why in pinned:
        fixes: tuple[EnvFix | AdminFix, ...] = (EnvFix(f"Unset {name}", (unset_env(name),)),)
        if layout.processes > 1:
            fixes += (AdminFix(f"{layout.processes} processes share this node ({layout.source}): bind each to CPUs "
                               "of its own before binding its threads, never the same binding in all",
                               ("srun --cpu-bind=cores ...", "mpirun --bind-to core ...",
                                "tfdoctor fix --write-launcher run.sh")),)
        yield Finding(
            f"{name}={value!r} binds all {threads or 'the'} threads to one CPU ({why})",
            evidence={f"env.{name}": value, "threads": threads},
            fixes=fixes,
        )


def _binding_variables(facts: Facts, processes: int, on_node: int) -> dict[str, str]:
    """The OpenMP affinity settings in force that bind threads from the first CPU of the process's mask:
    OMP_PROC_BIND=true|close|spread|master|primary, OMP_PLACES=threads|cores|sockets|…, KMP_AFFINITY
    compact|scatter|balanced|explicit (unless none or disabled), GOMP_CPU_AFFINITY. An explicit CPU list
    counts only when it spans more than one process's share of the node: per-rank lists (a launcher's)
    may differ between the processes, a list wider than a share cannot."""
    active: dict[str, str] = {}
    bind = (facts.env("OMP_PROC_BIND") or "").strip()
    bind_off = bind.lower().split(",", 1)[0].strip() == "false"
    if bind.lower().split(",", 1)[0].strip() in ("true", "close", "spread", "master", "primary"):
        active["OMP_PROC_BIND"] = bind
    places = (facts.env("OMP_PLACES") or "").strip()
    if places and not bind_off:
        abstract, _count, cpus = _omp_places(places)
        if abstract or (cpus and len(cpus) * processes > on_node):
            active["OMP_PLACES"] = places
    kmp = (facts.env("KMP_AFFINITY") or "").strip()
    if kmp:
        tokens = {t.strip().lower() for t in re.sub(r"proclist=\[[^\]]{0,4096}\]", "", kmp).split(",")}
        kind, proclist = _kmp_affinity(kmp)
        wide = kind != "explicit" or bool(proclist and len(proclist) * processes > on_node)
        if not tokens & {"none", "disabled"} and kind in ("compact", "scatter", "balanced", "explicit") and wide:
            active["KMP_AFFINITY"] = kmp
    gomp = (facts.env("GOMP_CPU_AFFINITY") or "").strip()
    if gomp:
        cpus = _cpus_of_list(gomp)
        if cpus and len(cpus) * processes > on_node:
            active["GOMP_CPU_AFFINITY"] = gomp
    return active


def _numa_node_count(facts: Facts) -> int:
    nodes = facts.peek("numa.nodes")
    return len(nodes) if isinstance(nodes, list) else 0


@check("THR106", "affinity-overlaps-across-local-ranks", Severity.WARNING)
def affinity_overlaps_across_local_ranks(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds several processes of the job on this node whose CPU masks overlap — each may run on more
    than its share of the node's CPUs, and no launcher binds each to CPUs of its own — while an
    OpenMP affinity setting binds threads: OMP_PROC_BIND=true|close|spread|master|primary,
    OMP_PLACES=threads|cores|sockets, KMP_AFFINITY=compact|scatter|balanced (without none or
    disabled), or a GOMP_CPU_AFFINITY / explicit list wider than one process's share. The processes are
    counted from the launcher: Slurm (SLURM_STEP_TASKS_PER_NODE, SLURM_NTASKS_PER_NODE,
    SLURM_TASKS_PER_NODE), Open MPI, MPICH / Intel MPI, Cray PALS and PMI, Horovod, torchrun,
    `tf.distribute` workers listed on this host in TF_CONFIG, and TFDOCTOR_PROCESSES_PER_NODE for
    multiprocessing or data-loader workers no launcher announces.

    Why is this bad?
    Each process computes its placement from its own CPU mask, the same for all of them: all pin their
    first thread to the same first core, their second to the second, and so on. TensorFlow's pool
    threads are created by the bound primary thread and inherit its binding, so the whole process
    follows. The processes pile onto the same cores while the others idle.

    Example:
    srun --ntasks-per-node=4 --cpu-bind=none python train.py with OMP_PROC_BIND=close OMP_PLACES=cores;
    two tf.distribute workers on one host (TF_CONFIG) with KMP_AFFINITY=granularity=fine,compact,1,0.

    Fix:
    Unset the affinity variables (threads then float within each process's mask), or give each process
    CPUs of its own and bind within them: srun --cpu-bind=cores, mpirun --bind-to core, or tfdoctor's
    launcher (`tfdoctor fix --write-launcher run.sh`), which gives each local rank its NUMA node's CPUs
    with OMP_PLACES for them.

    Fix safety:
    Safe: affinity changes speed, never results.
    """
    layout = process_layout(facts)
    if layout.processes < 2:
        return
    budget = cpu_budget(facts)
    on_node = len(node_cpus(facts) or budget.allowed)
    if not processes_share_cpus(layout, len(budget.allowed), on_node):
        return
    active = _binding_variables(facts, layout.processes, on_node)
    if not active:
        return
    share = max(1, on_node // layout.processes)
    steps = [f"srun --ntasks-per-node={layout.processes} --cpus-per-task={share} --cpu-bind=cores python train.py",
             f"mpirun --map-by ppr:{layout.processes}:node:PE={share} --bind-to core python train.py"]
    nodes = _numa_node_count(facts)
    if nodes > 1 and layout.processes <= nodes:
        steps.append("tfdoctor fix --write-launcher run.sh; srun --cpu-bind=none ./run.sh python train.py   "
                     "# each local rank on its own NUMA node, with OMP_PLACES for its CPUs")
    first = budget.allowed[0] if budget.allowed else 0
    yield Finding(
        f"{layout.processes} processes of this job on this node ({layout.source}) may each run on the same "
        f"{len(budget.allowed)} CPUs, and {', '.join(f'{k}={v}' for k, v in sorted(active.items()))} binds each "
        f"one's threads from the first of them (CPU {first}): the processes, and the TensorFlow pool threads "
        f"that inherit the binding, pile onto the same cores",
        evidence={**layout.evidence(), "cpu.allowed_cpus": len(budget.allowed), "cpus_on_node": on_node,
                  **{f"env.{k}": v for k, v in sorted(active.items())}},
        fixes=(
            EnvFix("Unset the OpenMP affinity variables: threads then float within each process's CPUs",
                   tuple(unset_env(n) for n in sorted(active))),
            AdminFix(f"Give each of the {layout.processes} processes CPUs of its own ({share} each), then bind "
                     "within them", tuple(steps)),
        ),
    )


@check("THR107", "kmp-blocktime-spins-on-shared-node", Severity.WARNING)
def kmp_blocktime_spins_on_shared_node(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Where Intel's OpenMP runtime (libiomp5) is in use and the job shares its node (its CPU budget is
    smaller than the host), finds KMP_BLOCKTIME unset (200 ms by default) or above 10 ms.

    Why is this bad?
    After each parallel region every OpenMP thread spins for KMP_BLOCKTIME before sleeping. TensorFlow
    runs thousands of small regions per step, so the threads spin most of the time, burning the CPUs
    that the job's other threads (and its neighbours on the node) need. Intel's TensorFlow guide
    recommends KMP_BLOCKTIME=1 (0 for some models).

    Example:
    An Intel-optimised TensorFlow in a Slurm job with 8 of 64 CPUs and KMP_BLOCKTIME unset.

    Fix:
    Set KMP_BLOCKTIME=1.

    Fix safety:
    Safe: spinning time changes speed, never results.
    """
    raw = facts.env("KMP_BLOCKTIME")
    if raw is not None:
        text = raw.strip().lower()
        blocktime = count(text)
        if blocktime is not None and blocktime <= 10:
            return
    # Intel's runtime is in use when a KMP_ variable configures it, else when the environment has it.
    intel_configured = any(facts.env(n) for n in ("KMP_AFFINITY", "KMP_HW_SUBSET", "KMP_SETTINGS"))
    if not intel_configured and not any(copy.runtime == "libiomp5" for copy in openmp_copies(facts)):
        return
    budget = cpu_budget(facts)
    if not budget.constrained:
        return
    shown = "unset (200 ms)" if raw is None else f"{raw!r}"
    yield Finding(
        f"KMP_BLOCKTIME is {shown} while this job shares its node ({budget.cpus} of {budget.host_cpus} "
        "CPUs): idle OpenMP threads spin on CPUs others need",
        evidence={"env.KMP_BLOCKTIME": raw, **budget.evidence()},
        fixes=(EnvFix("Set KMP_BLOCKTIME=1", (set_env("KMP_BLOCKTIME", "1"),)),),
    )


def _copies_by_runtime(copies: list[RuntimeCopy]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for copy in copies:
        grouped.setdefault(copy.runtime, []).append(copy.describe())
    return dict(sorted(grouped.items()))


def _keep_one_fix(title: str, copies: list[RuntimeCopy]) -> AdminFix:
    """What to keep, as prose (the copies and who brought them); the one command there is (conda's), as a step."""
    prose = [f"{c.runtime}: {c.describe()}" for c in copies]
    steps = []
    owners = sorted({c.owner for c in copies if c.owner})
    if owners:
        prose.append(f"brought by: {', '.join(owners)} — keep the one your TensorFlow build needs; remove the "
                     "package that brings another copy, or install builds of it that use the environment's runtime")
    if any(c.owner and c.owner.endswith("(conda)") for c in copies):
        prose.append("conda-forge selects one runtime for every package")
        steps.append("conda install -c conda-forge '_openmp_mutex=*=*_llvm'   # LLVM libomp; or "
                     "'_openmp_mutex=*=*_gnu' for libgomp")
    if any(c.found_by == "LD_LIBRARY_PATH" for c in copies):
        prose.append("remove from LD_LIBRARY_PATH the folder that adds a copy no package of the environment needs")
    return AdminFix(title, tuple(steps), text="; ".join(prose))


@check("THR108", "several-openmp-runtimes", Severity.WARNING)
def several_openmp_runtimes(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Lists every OpenMP runtime a process of this environment can load — libiomp5 (Intel), libomp
    (LLVM), libgomp (GNU), hash-suffixed copies such as libgomp-a34b3233.so.1 in a `*.libs` folder —
    found on LD_LIBRARY_PATH, in the environment's lib folder, in every binary wheel's RECORD (any
    depth) and by a bounded walk of folders no package records, and names the package that brought
    each. It reports:
    - two copies of the Intel/LLVM family (libiomp5 twice, or libiomp5 with libomp): warning;
    - runtimes of two families (libgomp with libiomp5 or libomp): warning;
    - several copies of libgomp only (wheels bundle renamed copies so that they coexist): info.

    Why is this bad?
    Intel's and LLVM's runtimes register with each other at start-up: the second copy to initialise
    aborts the process with "OMP: Error #15: Initializing libiomp5.so, but found libiomp5.so already
    initialized" (or, libiomp5 with libomp, may deadlock or crash). Two runtimes of different
    families each start their own thread pool sized for every CPU: twice the threads, fighting each
    other. Copies of libgomp each start a pool of their own as well, when their packages run at once.

    Example:
    intel-openmp's libiomp5.so in the environment's lib folder and another libiomp5.so bundled deep in
    a package; scikit-learn's libgomp-d22c30c5.so.1.0.0 beside intel-openmp's libiomp5.so.

    Fix:
    Keep one runtime: remove the package that brings the other copy, or install builds that share one
    (conda-forge's _openmp_mutex selects one for every package). KMP_DUPLICATE_LIB_OK=TRUE only lets
    the process start with two Intel/LLVM copies: Intel documents that it may crash or silently
    produce incorrect results — a stopgap, never the fix.

    Fix safety:
    Manual: which package can go is the user's decision. The KMP_DUPLICATE_LIB_OK stopgap is unsafe.
    """
    copies = openmp_copies(facts)
    kmp = [c for c in copies if c.family == "kmp"]
    gnu = [c for c in copies if c.family != "kmp"]
    incomplete = scan_incomplete(facts)
    base = {f"openmp.runtimes.{k}": v for k, v in _copies_by_runtime(copies).items()}
    if incomplete:
        base["openmp.incomplete"] = incomplete
    duplicate_ok = facts.env("KMP_DUPLICATE_LIB_OK")
    if len(kmp) >= 2:
        masked = (duplicate_ok or "").strip().upper() in ("TRUE", "1", "YES", "ON")
        names = " and ".join(sorted({c.runtime for c in kmp})) if len({c.runtime for c in kmp}) > 1 else \
            f"{kmp[0].runtime} twice"
        outcome = ("KMP_DUPLICATE_LIB_OK=TRUE lets the process start with both, at the risk of crashes or "
                   "silently incorrect results" if masked else
                   "the second to initialise aborts the process with \"OMP: Error #15: Initializing "
                   f"{kmp[1].runtime}.so, but found {kmp[0].runtime}.so already initialized\"")
        fixes: tuple[AdminFix | EnvFix, ...] = (_keep_one_fix("Keep one Intel/LLVM OpenMP runtime", kmp),)
        if not masked:
            fixes += (EnvFix("Stopgap only, not the fix: KMP_DUPLICATE_LIB_OK=TRUE lets the process start; "
                             "Intel warns it may crash or silently produce incorrect results",
                             (set_env("KMP_DUPLICATE_LIB_OK", "TRUE"),), Applicability.UNSAFE),)
        yield Finding(
            f"{len(kmp)} copies of the Intel/LLVM OpenMP runtime ({names}) can load into one process: {outcome}",
            evidence={**base, "env.KMP_DUPLICATE_LIB_OK": duplicate_ok},
            fixes=fixes,
        )
    if kmp and gnu:
        yield Finding(
            f"OpenMP runtimes of two families in this environment ({', '.join(sorted({c.runtime for c in copies}))}): "
            "each starts its own thread pool sized for every CPU, and the two fight over the cores",
            evidence=base,
            fixes=(_keep_one_fix("Keep one OpenMP runtime in the environment", copies),),
        )
    elif len(gnu) >= 2 and not kmp:
        yield Finding(
            f"{len(gnu)} copies of libgomp ({', '.join(sorted({c.brought_by() for c in gnu}))}): wheels rename "
            "their copies so that they coexist, but each package using its own starts a thread pool of its own",
            evidence=base,
            fixes=(_keep_one_fix("If those packages run at once, keep one runtime", gnu),),
            severity=Severity.INFO,
        )


def _binding_settings(facts: Facts) -> dict[str, str]:
    """The OpenMP variables set that bind threads to places at all (whatever the layout): OMP_PROC_BIND
    other than false, OMP_PLACES unless binding is off, KMP_AFFINITY of a binding type, GOMP_CPU_AFFINITY."""
    found: dict[str, str] = {}
    bind = (facts.env("OMP_PROC_BIND") or "").strip()
    first = bind.lower().split(",", 1)[0].strip()
    if first in ("true", "close", "spread", "master", "primary"):
        found["OMP_PROC_BIND"] = bind
    places = (facts.env("OMP_PLACES") or "").strip()
    if places and first != "false":
        found["OMP_PLACES"] = places
    kmp = (facts.env("KMP_AFFINITY") or "").strip()
    if kmp:
        tokens = {t.strip().lower() for t in re.sub(r"proclist=\[[^\]]{0,4096}\]", "", kmp).split(",")}
        if not tokens & {"none", "disabled"} and _kmp_affinity(kmp)[0] in ("compact", "scatter", "balanced",
                                                                             "explicit"):
            found["KMP_AFFINITY"] = kmp
    gomp = (facts.env("GOMP_CPU_AFFINITY") or "").strip()
    if gomp:
        found["GOMP_CPU_AFFINITY"] = gomp
    return found


@check("THR109", "openmp-binding-with-eigen-thread-pools", Severity.WARNING)
def openmp_binding_with_eigen_thread_pools(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds OpenMP binding variables (OMP_PROC_BIND, OMP_PLACES, KMP_AFFINITY, GOMP_CPU_AFFINITY) set for
    a stock TensorFlow build, whose inter- and intra-op pool threads are Eigen threads, not OpenMP threads
    (tfdoctor/knowledge/tensorflow_threading.toml), in an environment where an OpenMP runtime can
    initialise in the process (the openmp probe found libiomp5, libomp or libgomp: numpy or SciPy with
    MKL, scikit-learn, PyTorch, …).

    Why is this bad?
    The variables do not bind TensorFlow's threads: they bind the thread that initialises the OpenMP
    runtime. When that is the main thread (the first numpy/MKL call, or libgomp reading
    GOMP_CPU_AFFINITY at load), the runtime pins it to its first place, and every thread created
    after that inherits the main thread's affinity mask — TensorFlow's whole inter-op and intra-op
    pools then share one core (or one place), and training runs many times slower with no error.

    Example:
    KMP_AFFINITY=granularity=fine,compact,1,0 (Intel's advice for intel-tensorflow) kept after
    switching to the stock `tensorflow` wheel, with numpy from conda (MKL, libiomp5).

    Fix:
    Unset the binding variables: the stock build has no OpenMP team for them to place. To keep a job
    on some CPUs, bind the whole process instead (taskset, numactl, the scheduler's CPU binding).

    Fix safety:
    Unsafe: another library's OpenMP threads lose their pinning (usually harmless, occasionally slower).
    """
    settings = _binding_settings(facts)
    if not settings:
        return
    model = threading_model(facts)
    if model.per_op_teams or not model.known:
        return  # OpenMP-threaded builds: the variables place TensorFlow's own teams (THR105/THR106)
    copies = openmp_copies(facts)
    if not copies:
        return  # no OpenMP runtime can start here: nothing reads the variables
    runtimes = sorted({c.brought_by() for c in copies})
    names = ", ".join(f"{k}={v}" for k, v in settings.items())
    yield Finding(
        f"{names} set, but {model.why} (no OpenMP threads to place): when the OpenMP runtime of "
        f"{', '.join(runtimes)} initialises on the main thread it binds that thread to one place, and every "
        "thread created afterwards, TensorFlow's pools included, inherits its mask — all of TensorFlow can end "
        "up on one core",
        evidence={**{f"env.{k}": v for k, v in settings.items()}, "threading_model": model.why,
                  "openmp.runtimes": [c.path for c in copies]},
        fixes=(EnvFix("Unset the OpenMP binding variables (bind the process with taskset/numactl instead)",
                      tuple(unset_env(k) for k in settings), applicability=Applicability.UNSAFE),),
    )
