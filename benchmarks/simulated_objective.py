"""A simulated training job: prints a throughput computed from the thread settings in its environment.

The surface models a 28-core, 2-socket host running a graph with a few independent branches:
- each op speeds up with its intra-op threads by Amdahl's law (95 % parallel), and loses 12 % when its
  threads spread over both sockets (remote memory);
- the inter-op pool runs up to GRAPH_WIDTH ops side by side; idle inter-op threads cost a little;
- when intra × concurrent ops approaches the cores, threads start to time-share them — gradually, not at
  a sharp corner (load imbalance, OS noise and SMT blur it: a soft minimum of demand and cores,
  SATURATION_SHARPNESS; an infinite one is a hard corner) — and each extra runnable thread adds
  contention (context switches, cache thrashing): the optimum is well below "intra = cores";
- every measurement is multiplied by log-normal noise (2 %), as a real run is.

The grid is TF_NUM_INTRAOP_THREADS 1..28 × TF_NUM_INTEROP_THREADS 1..24: 672 configurations.
Run as a script it reads its environment and prints `throughput: N images/sec`.
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Mapping

CORES, CORES_PER_SOCKET, GRAPH_WIDTH = 28, 14, 6
INTRA_RANGE, INTER_RANGE = range(1, 29), range(1, 25)
NOISE = 0.02
SATURATION_SHARPNESS = 4.0
# TensorFlow's own defaults when the variables are unset: every logical CPU for both pools.
DEFAULT_INTRA, DEFAULT_INTER = CORES, CORES


def true_throughput(intra: int, inter: int, sharpness: float | None = None) -> float:
    amdahl = 1.0 / (0.05 + 0.95 / intra)
    if intra > CORES_PER_SOCKET:
        amdahl *= 0.88
    concurrent = min(inter, GRAPH_WIDTH)
    # Branches are not equally long: a second op in flight is worth less than the first.
    overlap = sum(0.8**k for k in range(concurrent))
    demand = intra * concurrent
    k = SATURATION_SHARPNESS if sharpness is None else sharpness
    share = min(1.0, CORES / demand) if k == math.inf else (1.0 + (demand / CORES) ** k) ** (-1.0 / k)
    contention = 1.0 / (1.0 + 0.1 * max(0.0, demand / CORES - 1.0))
    idle_inter = 1.0 - 0.006 * max(0, inter - concurrent)
    return 40.0 * amdahl * overlap * share * contention * idle_inter


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    try:
        value = int(env.get(name, ""))
    except ValueError:
        return default
    return default if value <= 0 else value


def settings(env: Mapping[str, str]) -> tuple[int, int]:
    return _int(env, "TF_NUM_INTRAOP_THREADS", DEFAULT_INTRA), _int(env, "TF_NUM_INTEROP_THREADS", DEFAULT_INTER)


def measured_throughput(env: Mapping[str, str], rng: random.Random) -> float:
    intra, inter = settings(env)
    return true_throughput(intra, inter) * math.exp(rng.gauss(0.0, NOISE))


def grid_best() -> tuple[float, int, int]:
    return max((true_throughput(a, b), a, b) for a in INTRA_RANGE for b in INTER_RANGE)


if __name__ == "__main__":
    print(f"throughput: {measured_throughput(os.environ, random.Random()):.2f} images/sec")
