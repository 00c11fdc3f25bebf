"""THR120 — OpenMP affinity variables that name CPUs this machine does not have.

Separate from the thread checks (tfdoctor/checks/threads.py) because it is about the CPU lists themselves:
they are parsed against the machine's CPU count with the bounded parsers of tfdoctor.facts.parse, so a
value such as GOMP_CPU_AFFINITY=0-4000000000 is a finding here and costs nothing anywhere.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tfdoctor.facts import Facts, NotChecked
from tfdoctor.facts.parse import CPU_ID_LIMIT, CpusBeyondMachine, parse_affinity_list, parse_omp_places
from tfdoctor.model import EnvFix, Finding, Severity, unset_env
from tfdoctor.registry import check


def _cpu_count(facts: Facts) -> int:
    """One more than the highest online CPU number: the CPU numbers this machine can be asked for."""
    online = facts.get("cpu.online")
    if not isinstance(online, list) or not online or not all(isinstance(c, int) and c >= 0 for c in online):
        raise NotChecked(f"cpu.online is {str(online)[:40]!r}, not a list of CPU numbers")
    return min(max(online) + 1, CPU_ID_LIMIT)


def _beyond(name: str, value: str, limit: int) -> CpusBeyondMachine | None:
    try:
        if name == "OMP_PLACES":
            parse_omp_places(value, limit)
        elif name == "KMP_AFFINITY":
            match = re.search(r"proclist=\[([^\]]*)\]", value)
            if match:
                parse_affinity_list(match.group(1), limit)
        else:
            parse_affinity_list(value, limit)
    except CpusBeyondMachine as exc:
        return exc
    except ValueError:  # malformed: not this check's business
        return None
    return None


@check("THR120", "affinity-names-missing-cpus", Severity.WARNING)
def affinity_names_missing_cpus(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Reads GOMP_CPU_AFFINITY, OMP_PLACES and the proclist of KMP_AFFINITY and finds CPU numbers at or
    beyond this machine's online CPUs (one more than the highest online CPU number).

    Why is this bad?
    The OpenMP runtime drops the places it cannot bind (GNU libgomp warns and ignores them, Intel's
    runtime may refuse the whole setting), so the threads end up bound differently from what the
    variable says, or not at all. Such a value usually comes from a job template written for a larger
    node.

    Example:
    GOMP_CPU_AFFINITY=0-127 on a 64-CPU node; OMP_PLACES="{0:4000000000}".

    Fix:
    Unset the variable, or write the list for this node's CPUs (`tfdoctor fix --write-launcher`
    writes per-rank lists that fit the node).

    Fix safety:
    Safe: affinity changes speed, never results.
    """
    limit = _cpu_count(facts)
    for name in ("GOMP_CPU_AFFINITY", "OMP_PLACES", "KMP_AFFINITY"):
        value = facts.env(name)
        if not value:
            continue
        beyond = _beyond(name, value, limit)
        if beyond is None:
            continue
        shown = value if len(value) <= 60 else value[:57] + "..."
        yield Finding(
            f"{name}={shown!r} names CPUs this machine does not have (CPU {beyond.highest}; "
            f"the highest online CPU is {limit - 1})",
            evidence={f"env.{name}": shown, "cpu.online.count": limit},
            fixes=(EnvFix(f"Unset {name}", (unset_env(name),)),),
        )
