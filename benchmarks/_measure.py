"""Shared by the benchmark scripts: run a command in a fresh process, return its wall time and the
peak RSS of that one child (os.wait4 gives the child's own rusage, not a running maximum)."""

from __future__ import annotations

import os
import statistics
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Run:
    seconds: float
    peak_rss_mb: float
    returncode: int


def run_once(command: Sequence[str], env: Mapping[str, str] | None = None, cwd: str | None = None) -> Run:
    start = time.perf_counter()
    process = subprocess.Popen(list(command), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env=dict(env) if env is not None else None, cwd=cwd)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    return Run(elapsed, usage.ru_maxrss / 1024, process.returncode)


def median_of(command: Sequence[str], runs: int, **kwargs: object) -> tuple[float, float, list[Run]]:
    results = [run_once(command, **kwargs) for _ in range(runs)]  # type: ignore[arg-type]
    return statistics.median(r.seconds for r in results), max(r.peak_rss_mb for r in results), results


def median_ms(func: Callable[[], object], runs: int = 20, warm: bool = True) -> float:
    """Median wall time of an in-process call, in ms; one untimed call first warms imports and caches."""
    if warm:
        func()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000
