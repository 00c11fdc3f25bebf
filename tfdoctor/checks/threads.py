"""THR — threads: thread-pool sizes and affinity against the CPU budget the job really has.

Recommendations follow Intel's published guide for TensorFlow on CPUs ("Maximize TensorFlow
Performance on CPU: Considerations and Recommendations for Inference Workloads") and TensorFlow's own
performance guide: intra-op = physical cores, OMP_NUM_THREADS = intra-op, inter-op = sockets,
KMP_AFFINITY=granularity=fine,compact,1,0, KMP_BLOCKTIME=1.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tfdoctor.derive.cpu_budget import CpuBudget, cpu_budget, recommended_threads
from tfdoctor.facts import Facts, NotChecked
from tfdoctor.facts.parse import parse_affinity_list, parse_omp_places
from tfdoctor.model import AdminFix, EnvFix, Finding, Severity, set_env, unset_env
from tfdoctor.registry import check

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS")
# TensorFlow reads 0 as "choose for me"; OpenMP and MKL require a positive count.
ZERO_MEANS_DEFAULT = ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS")
KMP_BLOCKTIME_DEFAULT_MS = 200


def parse_thread_count(name: str, raw: str) -> int | None:
    """The count a runtime will use, or None when it will reject the value (or ignore it).

    OMP_NUM_THREADS may be a nesting list ("8,2"): the first level is the team size.
    """
    text = raw.strip()
    if name == "OMP_NUM_THREADS":
        text = text.split(",", 1)[0].strip()
    if not re.fullmatch(r"[0-9]+", text):
        return None
    value = int(text)
    if value == 0 and name not in ZERO_MEANS_DEFAULT:
        return None
    return value


def thread_settings(facts: Facts) -> dict[str, int]:
    """The valid, non-default thread counts that are set."""
    settings = {}
    for name in THREAD_VARIABLES:
        raw = facts.env(name)
        if raw is None:
            continue
        value = parse_thread_count(name, raw)
        if value:
            settings[name] = value
    return settings


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
    from tfdoctor.facts import NotChecked

    try:
        return cpu_budget(facts)
    except NotChecked:
        return None


@check("THR101", "thread-pools-unsized-in-cpu-limit", Severity.WARNING)
def thread_pools_unsized_in_cpu_limit(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds a job limited to fewer CPUs than the host has (cgroup quota, cpuset, affinity, Slurm or PBS
    allocation) whose thread counts are left unset.

    Why is this bad?
    TensorFlow and OpenMP size their pools from the host's cores, not from the job's limit: a 2-CPU
    container on a 64-core host starts 64 intra-op threads that fight over 2 CPUs. Under a cgroup
    quota the threads are throttled every period; the slowdown is often several-fold.

    Example:
    `docker run --cpus=2` on a 64-core host, with OMP_NUM_THREADS, TF_NUM_INTRAOP_THREADS and
    TF_NUM_INTEROP_THREADS unset.

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
    unset = tuple(name for name in ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "OMP_NUM_THREADS")
                  if name not in settings)
    if not unset:
        return
    yield Finding(
        f"this job may use {budget.cpus} of the host's {budget.host_cpus} CPUs ({budget.source}) but "
        f"{', '.join(unset)} {'is' if len(unset) == 1 else 'are'} not set to a valid count: TensorFlow "
        f"will size its pools for {budget.host_cpus}",
        evidence={**budget.evidence(), "env.unset": list(unset)},
        fixes=(_recommend_fix(budget, unset),),
    )


@check("THR102", "thread-pools-exceed-cpu-budget", Severity.WARNING)
def thread_pools_exceed_cpu_budget(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Compares the thread counts that are set with the job's CPU budget: any one pool (intra-op,
    OpenMP, MKL) larger than the budget, an inter-op pool larger than the budget, or intra-op ×
    inter-op (ops running concurrently, each with a full intra-op pool) above the budget times the
    sockets in it (the rule-of-thumb product, intra = cores and inter = sockets, always fits).

    Why is this bad?
    More runnable threads than CPUs means context switches, cache thrashing and, under a cgroup
    quota, throttling; OpenMP's spinning threads make it worse.

    Example:
    TF_NUM_INTRAOP_THREADS=16 and OMP_NUM_THREADS=16 in a Slurm job with SLURM_CPUS_PER_TASK=4.

    Fix:
    Set intra-op and OMP_NUM_THREADS to the budget's physical cores, inter-op to its sockets.

    Fix safety:
    Safe: thread counts change speed, never results.
    """
    budget = cpu_budget(facts)
    settings = thread_settings(facts)
    if not settings:
        return
    over = {k: v for k, v in settings.items() if v > budget.cpus}
    intra = max(settings.get("TF_NUM_INTRAOP_THREADS", 0), settings.get("OMP_NUM_THREADS", 0))
    inter = settings.get("TF_NUM_INTEROP_THREADS", 0)
    product_over = intra and inter and intra * inter > budget.cpus * budget.sockets
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
                   f"({budget.source})")
    yield Finding(
        message,
        evidence={**budget.evidence(), **{f"env.{k}": v for k, v in sorted(settings.items())}},
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
    Unset the pinning variable (or use Intel's recommended
    KMP_AFFINITY=granularity=fine,compact,1,0, which spreads threads over cores).

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
    for name, value, why in pinned:
        yield Finding(
            f"{name}={value!r} binds all {threads or 'the'} threads to one CPU ({why})",
            evidence={f"env.{name}": value, "threads": threads},
            fixes=(EnvFix(f"Unset {name}", (unset_env(name),)),),
        )


def _local_ranks(facts: Facts) -> tuple[int, str] | None:
    for name in ("SLURM_NTASKS_PER_NODE", "OMPI_COMM_WORLD_LOCAL_SIZE", "LOCAL_WORLD_SIZE", "MPI_LOCALNRANKS"):
        raw = facts.env(name)
        if raw and raw.split("(")[0].strip().isdigit() and int(raw.split("(")[0]) > 1:
            return int(raw.split("(")[0]), name
    return None


@check("THR106", "affinity-overlaps-across-local-ranks", Severity.WARNING)
def affinity_overlaps_across_local_ranks(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds several processes per node (Slurm, Open MPI or torchrun-style local ranks) that are not
    bound by their launcher — each may run on every CPU of the host — while an OpenMP affinity
    setting (KMP_AFFINITY, GOMP_CPU_AFFINITY, OMP_PROC_BIND, OMP_PLACES) is active.

    Why is this bad?
    Each process computes its thread placement from its own CPU mask, which is the whole host for
    every rank: all ranks pin their first thread to the same first core, their second to the
    second, and so on. The ranks pile onto the same cores while others idle.

    Example:
    srun --ntasks-per-node=4 --cpu-bind=none python train.py with KMP_AFFINITY=compact.

    Fix:
    Unset the affinity variables and let the launcher bind each rank to its own CPUs
    (srun --cpu-bind=cores, mpirun --bind-to core, or tfdoctor's launcher).

    Fix safety:
    Safe: affinity changes speed, never results.
    """
    ranks = _local_ranks(facts)
    if ranks is None:
        return
    budget = cpu_budget(facts)
    if len(budget.allowed) < budget.host_cpus:
        return  # the launcher already gave this rank its own CPUs
    active = {}
    for name in AFFINITY_VARIABLES:
        value = facts.env(name)
        if value is None or not value.strip():
            continue
        lowered = value.strip().lower()
        if name == "OMP_PROC_BIND" and lowered == "false":
            continue
        if name == "KMP_AFFINITY" and _kmp_affinity(value)[0] in (None, "none", "disabled"):
            continue
        active[name] = value
    if not active:
        return
    yield Finding(
        f"{ranks[0]} processes per node ({ranks[1]}) each may run on all {budget.host_cpus} CPUs, and "
        f"{', '.join(sorted(active))} pins each one's threads from the same first CPU: the ranks overlap",
        evidence={f"env.{ranks[1]}": ranks[0], "cpu.allowed_cpus": len(budget.allowed),
                  **{f"env.{k}": v for k, v in sorted(active.items())}},
        fixes=(
            EnvFix("Unset the OpenMP affinity variables", tuple(unset_env(n) for n in sorted(active))),
            AdminFix("Bind each rank to its own CPUs in the launcher",
                     ("srun --cpu-bind=cores ...", "mpirun --bind-to core --map-by socket ...")),
        ),
    )


def _intel_openmp_in_use(facts: Facts) -> bool | None:
    if any(facts.env(n) for n in ("KMP_AFFINITY", "KMP_HW_SUBSET", "KMP_SETTINGS")):
        return True
    runtimes = facts.peek("python.openmp_runtimes")
    if not isinstance(runtimes, list):
        return None
    return any(isinstance(r, dict) and r.get("runtime") == "libiomp5" for r in runtimes)


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
        if text.isdigit() and int(text) <= 10:
            return
    intel = _intel_openmp_in_use(facts)
    if intel is None:
        facts.get("python.openmp_runtimes")  # raises NotChecked with the reason
    if not intel:
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


@check("THR108", "several-openmp-runtimes", Severity.WARNING)
def several_openmp_runtimes(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Lists the OpenMP runtimes (libiomp5, libgomp, libomp) found in the environment's library folders
    (LD_LIBRARY_PATH, the environment's lib folder, the packages' bundled libraries) and reports more
    than one.

    Why is this bad?
    Two OpenMP runtimes in one process each start their own thread pool, sized for every core:
    twice the threads, fighting each other. Intel's runtime aborts with "OMP: Error #15: Initializing
    libiomp5.so, but found libiomp5.so already initialized" when loaded twice, and the usual
    workaround (KMP_DUPLICATE_LIB_OK=TRUE) can give wrong results.

    Example:
    An environment with intel-openmp (libiomp5) and a PyTorch or scikit-learn wheel bundling libgomp.

    Fix:
    Keep one runtime: remove the package that brings the other, or install builds that share one.

    Fix safety:
    Manual: which package can go is the user's decision.
    """
    runtimes = facts.get("python.openmp_runtimes")
    if not isinstance(runtimes, list) or not all(
            isinstance(e, dict) and isinstance(e.get("runtime"), str) and isinstance(e.get("path"), str)
            for e in runtimes):
        raise NotChecked(f"python.openmp_runtimes holds {str(runtimes)[:40]!r}, not a list of runtime records")
    kinds: dict[str, list[str]] = {}
    for entry in runtimes:
        kinds.setdefault(entry["runtime"], []).append(entry["path"])
    if len(kinds) < 2:
        return
    yield Finding(
        f"{len(kinds)} OpenMP runtimes in this environment: {', '.join(sorted(kinds))}",
        evidence={f"python.openmp_runtimes.{k}": v for k, v in sorted(kinds.items())},
        fixes=(AdminFix("Keep one OpenMP runtime in the environment",
                        tuple(f"{k}: {', '.join(v)}" for k, v in sorted(kinds.items()))),),
    )
