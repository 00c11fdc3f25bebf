"""How many trials `tfdoctor tune`'s search needs on a simulated 672-configuration surface.

The objective is benchmarks/simulated_objective.py (a 28-core host; TF_NUM_INTRAOP_THREADS 1..28 ×
TF_NUM_INTEROP_THREADS 1..24, with a contention optimum and 2 % multiplicative noise). The search is the
very code `tfdoctor tune` runs (Tuner: TPE seeded with the current settings and the rules of thumb),
called in-process so ten seeds take seconds; the objective is the script's own function.

For each seed it prints the trials needed until the search's best-measured configuration is truly within
3 % of the grid's best (noise can make a worse one look best: that does not count as reached), and the
baseline of the same run: the expected trials for random sampling without replacement.
Done when: ≤ 40 trials in at least 9 of 10 seeds.

    python benchmarks/tune_simulated.py [--seeds 10] [--budget 60]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import simulated_objective as sim

from tfdoctor.tune.objective import Measurement, trial_environment
from tfdoctor.tune.search import Tuner, TuneSettings
from tfdoctor.tune.space import Space, int_param

TARGET = 0.97


class SimulatedObjective:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def describe(self) -> dict[str, object]:
        return {"simulated": "benchmarks/simulated_objective.py"}

    def measure(self, env_changes: Mapping[str, str | None], launcher: Sequence[str] = ()) -> Measurement:
        env = trial_environment({}, env_changes)
        return Measurement("ok", sim.measured_throughput(env, self.rng), 0.0)


def simulated_space() -> Space:
    return Space((int_param("TF_NUM_INTRAOP_THREADS", 1, 28, log=True),
                  int_param("TF_NUM_INTEROP_THREADS", 1, 24, log=True)))


def seeds() -> dict[str, dict[str, int]]:
    # Unset variables = TensorFlow's defaults (all CPUs, clipped into the space); rules: intra = cores,
    # inter = sockets.
    return {"current": {"TF_NUM_INTRAOP_THREADS": 28, "TF_NUM_INTEROP_THREADS": 24},
            "rule": {"TF_NUM_INTRAOP_THREADS": 28, "TF_NUM_INTEROP_THREADS": 2}}


def trials_to_reach(seed: int, budget: int) -> int | None:
    """Trials until the best-measured configuration is truly within 3 % of the grid's best."""
    best_true = sim.grid_best()[0]
    tuner = Tuner(simulated_space(), SimulatedObjective(seed), None,
                  TuneSettings(budget=budget, repeats=1, seed=seed), seeds())
    tuner.run()
    incumbent = None
    for count, record in enumerate(tuner.records, start=1):
        if incumbent is None or record.value > incumbent.value:
            incumbent = record
        params = incumbent.params
        value = sim.true_throughput(params["TF_NUM_INTRAOP_THREADS"], params["TF_NUM_INTEROP_THREADS"])
        if value >= TARGET * best_true:
            return count
    return None


def random_search_expectation() -> float:
    """Expected draws (without replacement) to hit one of the k good cells of N: (N + 1) / (k + 1)."""
    best_true = sim.grid_best()[0]
    cells = [(a, b) for a in sim.INTRA_RANGE for b in sim.INTER_RANGE]
    good = sum(1 for a, b in cells if sim.true_throughput(a, b) >= TARGET * best_true)
    return (len(cells) + 1) / (good + 1)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--budget", type=int, default=60)
    parser.add_argument("--sharpness", type=float, default=sim.SATURATION_SHARPNESS,
                        help="how sharply threads saturate the cores (inf: a hard corner, a harder surface)")
    args = parser.parse_args()
    sim.SATURATION_SHARPNESS = args.sharpness
    cells = [(a, b) for a in sim.INTRA_RANGE for b in sim.INTER_RANGE]
    best, intra, inter = sim.grid_best()
    print(f"grid 28 x 24 = 672 configurations; best {best:.1f} at intra={intra} inter={inter}; "
          f"rule-based (28, 2) = {sim.true_throughput(28, 2) / best:.2f} of best; "
          f"{sum(1 for a, b in cells if sim.true_throughput(a, b) >= TARGET * best)} configurations within 3 %; "
          f"saturation sharpness {args.sharpness:g}")
    needed = []
    for seed in range(args.seeds):
        count = trials_to_reach(seed, args.budget)
        needed.append(count)
        print(f"seed {seed}: {f'not reached in {args.budget}' if count is None else count} trials")
    reached = sorted(n for n in needed if n is not None)
    within = sum(1 for n in reached if n <= 40)
    print(f"trials needed: {needed}")
    if reached:
        print(f"median {statistics.median(reached):g}, max {max(reached)}; <= 40 trials in {within}/{args.seeds} seeds")
    print(f"baseline (same run): random sampling needs {random_search_expectation():.0f} trials on average")
    return 0 if within >= 0.9 * args.seeds else 1


if __name__ == "__main__":
    raise SystemExit(main())
