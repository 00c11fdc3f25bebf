"""The record of threads tfdoctor gave up waiting for: a probe past its time, a hung NVML call, checks past
the --timeout budget. It lives below the engine because a probe (NVML) notes its own stuck call; the engine
and the command line read it to say which probes did not finish and to leave with os._exit."""

from __future__ import annotations

import threading

_abandoned: list[threading.Thread] = []


def abandoned_mark() -> int:
    """A position in the record of abandoned probes; pass it to `abandoned_probes(since=...)`."""
    return len(_abandoned)


def abandoned_probes(since: int = 0) -> list[str]:
    """Probes given up on (after `since`) that are still running; one that finished late no longer counts."""
    return [t.name.removeprefix("probe-") for t in _abandoned[since:] if t.is_alive()]


def note_abandoned(thread: threading.Thread) -> None:
    """A thread left stuck in a call that was given up on (a probe's lane, a hung NVML call)."""
    _abandoned.append(thread)
