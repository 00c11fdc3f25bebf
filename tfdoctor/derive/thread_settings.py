"""The thread counts a job's environment sets, read the way each runtime reads them (pure).

Shared by the THR family (sizes against the CPU budget) and NUMA (sizes against one node).
"""

from __future__ import annotations

import re

from tfdoctor.facts import Facts
from tfdoctor.facts.parse import count

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS")
# TensorFlow reads 0 as "choose for me"; OpenMP and MKL require a positive count.
ZERO_MEANS_DEFAULT = ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS")


def parse_thread_count(name: str, raw: str) -> int | None:
    """The count a runtime will use, or None when it will reject the value (or ignore it).

    OMP_NUM_THREADS may be a nesting list ("8,2"): the first level is the team size.
    """
    text = raw.strip()
    if name == "OMP_NUM_THREADS":
        text = text.split(",", 1)[0].strip()
    if not re.fullmatch(r"[0-9]+", text):
        return None
    value = count(text)  # capped: a 120,000-digit value is "more than the budget", not a crash
    if value is None or (value == 0 and name not in ZERO_MEANS_DEFAULT):
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
