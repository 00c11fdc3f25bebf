"""A family of simulated training jobs over `tfdoctor tune`'s default space, for benchmarks/tune_simulated.py.

The host: 2 sockets × 14 cores = 28 CPUs, no SMT. The default space there (tfdoctor.tune.space.default_space)
is TF_NUM_INTRAOP_THREADS 1..28 (log) × TF_NUM_INTEROP_THREADS 1..14 × OMP_NUM_THREADS 1..28 (log) ×
KMP_BLOCKTIME (5) × KMP_AFFINITY (4) × OMP_PROC_BIND (4) × TF_ENABLE_ONEDNN_OPTS (2): 1,756,160 points.

Each job is a true throughput (bigger is better) of the trial's settings; a measurement multiplies it by
log-normal noise of 2 %, as a real run does. The jobs differ in which parameters matter and how:

- threads-only       intra × inter with a contention optimum (benchmarks/simulated_objective.py); the
                     other five parameters do nothing — the common case the issue describes.
- cores-product      equal graph branches: throughput follows intra × inter = cores (a ridge), and
                     oneDNN off costs 25 %; everything else does nothing.
- sharp-corner       threads saturate the cores at a hard corner (no blur), and OMP_NUM_THREADS sizes
                     oneDNN's pool: its math uses min(intra, OMP) threads while max(intra, OMP) compete.
- two-optima         a broad optimum (one inter-op thread, many intra) and a narrow, 8 % better one
                     (many inter-op threads of 2 intra each) with a valley between; spinning OpenMP
                     threads (KMP_BLOCKTIME) cost more the more threads are oversubscribed.
- affinity-2-sockets pinning (KMP_AFFINITY / OMP_PROC_BIND) matters only when intra-op threads span more
                     than one socket (> 14): compact pinning then keeps memory local; best is 28 pinned.
- memory-bound       memory bandwidth saturates at 10 busy cores, and every thread past that only
                     contends: the optimum (intra × inter ≈ 10) is far below the cores — off the
                     intra × inter = cores ridge the search probes first.
- all-matter         every parameter has an effect (blocktime, affinity, proc-bind, oneDNN, OMP vs
                     intra, and the threads surface): the space has no parameter to drop; several
                     effects are 3-4 %, below what one or two noisy runs can resolve.
- all-matter-clearly the same with effects of 6-14 % per knob.
"""

from __future__ import annotations

import functools
import itertools
import math
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import simulated_objective as sim

from tfdoctor.derive.cpu_budget import CpuBudget
from tfdoctor.tune.space import Space, apply_space_file, default_space

CORES, PER_SOCKET = 28, 14
NOISE = 0.02
BUDGET = CpuBudget(cpus=CORES, source="simulated", host_cpus=CORES, allowed=tuple(range(CORES)),
                   physical_cores=CORES, sockets=2)

Params = Mapping[str, Any]
# What an unset variable means to the job: TensorFlow's and Intel OpenMP's own defaults.
UNSET_MEANS: dict[str, Any] = {"TF_NUM_INTRAOP_THREADS": CORES, "TF_NUM_INTEROP_THREADS": CORES,
                               "OMP_NUM_THREADS": CORES, "KMP_BLOCKTIME": "200", "KMP_AFFINITY": "unset",
                               "OMP_PROC_BIND": "unset", "TF_ENABLE_ONEDNN_OPTS": "1"}


def space() -> Space:
    return default_space(BUDGET)


def _threads(p: Params) -> tuple[int, int, int]:
    return p["TF_NUM_INTRAOP_THREADS"], p["TF_NUM_INTEROP_THREADS"], p["OMP_NUM_THREADS"]


def threads_only(p: Params) -> float:
    intra, inter, _ = _threads(p)
    return sim.true_throughput(intra, inter)


def cores_product(p: Params) -> float:
    intra, inter, _ = _threads(p)
    width = min(inter, 8)  # eight equal branches
    amdahl = 1.0 / (0.08 + 0.92 / intra)
    demand = intra * width
    share = (1.0 + (demand / CORES) ** 6) ** (-1.0 / 6)
    onednn = 1.0 if p["TF_ENABLE_ONEDNN_OPTS"] == "1" else 0.75
    return 10.0 * width * amdahl * share * onednn / (1.0 + 0.05 * max(0, inter - 8))


def sharp_corner(p: Params) -> float:
    intra, inter, omp = _threads(p)
    concurrent = min(inter, sim.GRAPH_WIDTH)
    math_threads = min(intra, omp)
    amdahl = 1.0 / (0.05 + 0.95 / math_threads)
    if max(intra, omp) > PER_SOCKET:
        amdahl *= 0.88
    overlap = sum(0.8**k for k in range(concurrent))
    demand = max(intra, omp) * concurrent
    share = min(1.0, CORES / demand)  # a hard corner
    contention = 1.0 / (1.0 + 0.1 * max(0.0, demand / CORES - 1.0))
    return 40.0 * amdahl * overlap * share * contention


BLOCKTIME_SPIN = {"0": 0.0, "1": 0.002, "10": 0.01, "50": 0.03, "200": 0.06}


def two_optima(p: Params) -> float:
    intra, inter, _ = _threads(p)
    # broad optimum: one inter-op thread, intra-op threads saturating the cores
    broad = 100.0 * (1.0 / (0.04 + 0.96 / intra)) / (1.0 / (0.04 + 0.96 / CORES)) / (1.0 + 0.08 * (inter - 1))
    # narrow optimum, 8 % better: 12 inter-op threads of 2 intra-op threads each (a wide graph of small
    # ops); it falls off fast in intra and slower in inter, and dominates the small-intra corner
    narrow = 108.0 - 2.5 * abs(inter - 12) - 8.0 * abs(intra - 2)
    oversubscribed = max(0.0, intra * inter / CORES - 1.0)
    # Spinning costs at most 95 %: a job oversubscribed 28 times over still makes some progress.
    spin = max(0.05, 1.0 - BLOCKTIME_SPIN[p["KMP_BLOCKTIME"]] * (1.0 + oversubscribed))
    return max(broad, narrow, 30.0) * spin


AFFINITY_SPANNING = {"unset": 0.85, "granularity=fine,compact,1,0": 1.0, "granularity=fine,scatter": 0.8,
                     "none": 0.85}
PROC_BIND_SPANNING = {"unset": 1.0, "close": 1.0, "spread": 0.9, "false": 0.95}


def affinity_two_sockets(p: Params) -> float:
    intra, inter, _ = _threads(p)
    amdahl = 1.0 / (0.03 + 0.97 / intra)
    demand = intra * min(inter, 2)
    share = (1.0 + (demand / CORES) ** 8) ** (-1.0 / 8)
    value = 30.0 * amdahl * share * (1.0 + 0.15 * (min(inter, 2) - 1))
    if intra > PER_SOCKET:  # threads on both sockets: pinning decides whether memory stays local
        value *= AFFINITY_SPANNING[p["KMP_AFFINITY"]] * PROC_BIND_SPANNING[p["OMP_PROC_BIND"]]
    return value


def memory_bound(p: Params) -> float:
    intra, inter, _ = _threads(p)
    concurrent = min(inter, 4)
    busy = intra * concurrent
    bandwidth = min(busy, 10) ** 0.9  # the memory system feeds about 10 cores
    contention = 1.0 / (1.0 + 0.04 * max(0, busy - 10))
    return 20.0 * bandwidth * contention * (1.0 - 0.03 * abs(concurrent - 2))


ALL_BLOCKTIME = {"0": 0.97, "1": 1.0, "10": 0.99, "50": 0.96, "200": 0.93}
ALL_AFFINITY = {"unset": 0.97, "granularity=fine,compact,1,0": 1.0, "granularity=fine,scatter": 1.04, "none": 0.95}
ALL_PROC_BIND = {"unset": 1.0, "close": 0.98, "spread": 1.03, "false": 0.96}


def all_matter(p: Params) -> float:
    intra, inter, omp = _threads(p)
    value = sim.true_throughput(intra, inter)
    value *= 1.0 - 0.08 * abs(math.log(omp / intra))
    value *= ALL_BLOCKTIME[p["KMP_BLOCKTIME"]] * ALL_AFFINITY[p["KMP_AFFINITY"]]
    value *= ALL_PROC_BIND[p["OMP_PROC_BIND"]] * (1.0 if p["TF_ENABLE_ONEDNN_OPTS"] == "1" else 0.8)
    return value


BIG_BLOCKTIME = {"0": 0.94, "1": 1.0, "10": 0.97, "50": 0.92, "200": 0.86}
BIG_AFFINITY = {"unset": 0.94, "granularity=fine,compact,1,0": 1.0, "granularity=fine,scatter": 1.08, "none": 0.9}
BIG_PROC_BIND = {"unset": 1.0, "close": 0.96, "spread": 1.06, "false": 0.92}


def all_matter_clearly(p: Params) -> float:
    intra, inter, omp = _threads(p)
    value = sim.true_throughput(intra, inter)
    value *= 1.0 - 0.12 * abs(math.log(omp / intra))
    value *= BIG_BLOCKTIME[p["KMP_BLOCKTIME"]] * BIG_AFFINITY[p["KMP_AFFINITY"]]
    value *= BIG_PROC_BIND[p["OMP_PROC_BIND"]] * (1.0 if p["TF_ENABLE_ONEDNN_OPTS"] == "1" else 0.8)
    return value


# The host of issue 28: 56 logical CPUs (2 sockets × 14 cores × 2 hardware threads), intra 1..56 × inter
# 1..12 = 672 thread configurations; with the five other knobs of the default space, or without them.
WIDE_CPUS, WIDE_CORES = 56, 28
WIDE_BUDGET = CpuBudget(cpus=WIDE_CPUS, source="simulated", host_cpus=WIDE_CPUS, allowed=tuple(range(WIDE_CPUS)),
                        physical_cores=WIDE_CORES, sockets=2)
WIDE_UNSET_MEANS = {**UNSET_MEANS, "TF_NUM_INTRAOP_THREADS": WIDE_CPUS, "TF_NUM_INTEROP_THREADS": WIDE_CPUS,
                    "OMP_NUM_THREADS": WIDE_CPUS}
OTHER_FIVE = ("OMP_NUM_THREADS", "KMP_BLOCKTIME", "KMP_AFFINITY", "OMP_PROC_BIND", "TF_ENABLE_ONEDNN_OPTS")


def wide_space(seven: bool = True) -> Space:
    """The default space on the 56-CPU host with inter-op narrowed to 1..12 (a space file would); without
    `seven`, the two pools only."""
    spec: dict[str, Any] = {"TF_NUM_INTEROP_THREADS": {"low": 1, "high": 12}}
    if not seven:
        spec.update({name: {"drop": True} for name in OTHER_FIVE})
    return apply_space_file(default_space(WIDE_BUDGET), {"parameters": spec})


def wide_threads(p: Params) -> float:
    """Hardware threads: a core's second thread adds a quarter of a core; an op whose threads span both
    sockets (past 28 logical CPUs) loses 10 %; the rest as simulated_objective (soft saturation of the 56
    logical CPUs, contention past them, up to 6 branches side by side)."""
    intra, inter = p["TF_NUM_INTRAOP_THREADS"], p["TF_NUM_INTEROP_THREADS"]
    cores = min(intra, WIDE_CORES) + 0.25 * max(0, intra - WIDE_CORES)
    amdahl = 1.0 / (0.05 + 0.95 / cores) * (0.9 if intra > WIDE_CORES else 1.0)
    concurrent = min(inter, sim.GRAPH_WIDTH)
    overlap = sum(0.8**k for k in range(concurrent))
    demand = intra * concurrent
    share = (1.0 + (demand / WIDE_CPUS) ** 4) ** (-1.0 / 4)
    contention = 1.0 / (1.0 + 0.1 * max(0.0, demand / WIDE_CPUS - 1.0))
    return 40.0 * amdahl * overlap * share * contention * (1.0 - 0.006 * max(0, inter - concurrent))


@dataclass(frozen=True)
class Job:
    name: str
    throughput: Callable[[Params], float]
    matters: tuple[str, ...]  # the parameters that change the result (for the report's check)
    space: Callable[[], Space] = space  # the space the tune searches
    budget: CpuBudget = BUDGET  # the simulated host's
    unset_means: Mapping[str, Any] = field(default_factory=lambda: UNSET_MEANS)

    def measure(self, params: Params, rng: random.Random) -> float:
        return self.throughput(params) * math.exp(rng.gauss(0.0, NOISE))

    @functools.cached_property
    def best(self) -> float:
        """The true best over the whole space (exhaustive over the parameters that matter)."""
        s = self.space()
        base = {p.name: (p.low if p.kind == "int" else p.choices[0]) for p in s.parameters}
        axes = [[(p.name, v) for v in (range(p.low, p.high + 1) if p.kind == "int" else p.choices)]
                for p in s.parameters if p.name in self.matters]
        return max(self.throughput({**base, **dict(combo)}) for combo in itertools.product(*axes))


JOBS = (
    Job("threads-only", threads_only, ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS")),
    Job("cores-product", cores_product, ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "TF_ENABLE_ONEDNN_OPTS")),
    Job("sharp-corner", sharp_corner, ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "OMP_NUM_THREADS")),
    Job("two-optima", two_optima, ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "KMP_BLOCKTIME")),
    Job("affinity-2-sockets", affinity_two_sockets, ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS",
                                                      "KMP_AFFINITY", "OMP_PROC_BIND")),
    Job("memory-bound", memory_bound, ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS")),
    Job("all-matter", all_matter, ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "OMP_NUM_THREADS",
                                   "KMP_BLOCKTIME", "KMP_AFFINITY", "OMP_PROC_BIND", "TF_ENABLE_ONEDNN_OPTS")),
    Job("all-matter-clearly", all_matter_clearly, ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS",
                                                   "OMP_NUM_THREADS", "KMP_BLOCKTIME", "KMP_AFFINITY",
                                                   "OMP_PROC_BIND", "TF_ENABLE_ONEDNN_OPTS")),
    Job("wide-56", wide_threads, ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS"), wide_space, WIDE_BUDGET,
        WIDE_UNSET_MEANS),
    Job("wide-56-two", wide_threads, ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS"),
        functools.partial(wide_space, seven=False), WIDE_BUDGET, WIDE_UNSET_MEANS),
)
