"""THR — threads: thread-pool sizes and affinity against the CPU budget the job really has.

Recommendations follow Intel's published guide for TensorFlow on CPUs ("Maximize TensorFlow
Performance on CPU: Considerations and Recommendations for Inference Workloads") and TensorFlow's own
performance guide: intra-op = physical cores, OMP_NUM_THREADS = intra-op, inter-op = sockets,
KMP_AFFINITY=granularity=fine,compact,1,0, KMP_BLOCKTIME=1.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tfdoctor.cpu_budget import CpuBudget, cpu_budget, recommended_threads
from tfdoctor.facts import Facts
from tfdoctor.model import EnvFix, Finding, Severity, set_env
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
        f"{', '.join(unset)} {'is' if len(unset) == 1 else 'are'} unset: TensorFlow will size its pools "
        f"for {budget.host_cpus}",
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
