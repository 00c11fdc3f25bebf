"""Whether a function's time grows linearly, judged without a wall-clock bound a busy machine could flip.

The same work is timed at n and at 4n, best of three each: a slower machine slows both alike, so the ratio
stays near 4 for linear work and near 16 for quadratic work; 8 separates them with room on either side."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def best_time(run: Callable[[], Any], tries: int = 3) -> float:
    best = float("inf")
    for _ in range(tries):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def growth_ratio(make: Callable[[int], Any], work: Callable[[Any], Any], n: int) -> float:
    """How much longer `work` takes on make(4n) than on make(n)."""
    small, large = make(n), make(4 * n)
    return best_time(lambda: work(large)) / max(best_time(lambda: work(small)), 1e-9)
