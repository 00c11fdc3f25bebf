"""How often `tfdoctor tune --budget 40` (default space) picks a winner truly within 3 % of the best, on a
family of simulated jobs (benchmarks/simulated_jobs.py), beside two baselines measured in the same run:
random search and the search before screening ("tpe": TPE over the whole space from the start).

Every method is the very Tuner `tfdoctor tune` runs (seeds = current settings and the rule-based
recommendation, the same confirmation of the leaders), called in-process with the simulated objective;
only TuneSettings.strategy differs. Success for one seed: the declared winner's TRUE throughput is at
least 97 % of the true best over the whole space (noise can make a worse one look best: that fails).

    python benchmarks/tune_simulated.py [--seeds 20] [--budget 40] [--jobs threads-only,...] [--methods ...]

Done when: screen ≥ 95 % on every job, and not below tpe on any.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import simulated_jobs as jobs

from tfdoctor.tune.objective import Measurement
from tfdoctor.tune.search import STRATEGIES, Tuner, TuneResult, TuneSettings
from tfdoctor.tune.space import current_settings, rule_based_settings

TARGET = 0.97


class SimulatedJob:
    """The objective: a simulated job measured with its noise, from the trial's parameters."""

    def __init__(self, job: jobs.Job, seed: int) -> None:
        self.job, self.rng = job, random.Random(seed * 7919 + 17)
        self.params: dict[str, object] = {}

    def describe(self) -> dict[str, object]:
        return {"simulated": self.job.name}

    def measure(self, env_changes: Mapping[str, str | None], launcher: Sequence[str] = ()) -> Measurement:
        params = {name: (int(raw) if isinstance(default, int) else raw) if (raw := env_changes.get(name)) is not None
                  else default for name, default in jobs.UNSET_MEANS.items()}
        return Measurement("ok", self.job.measure(params, self.rng), 0.0)


def tune(job: jobs.Job, seed: int, strategy: str, budget: int) -> TuneResult:
    space = jobs.space()
    seeds = {"current": current_settings(space, {}, jobs.BUDGET), "rule": rule_based_settings(jobs.BUDGET, space)}
    settings = TuneSettings(budget=budget, seed=seed, strategy=strategy)
    return Tuner(space, SimulatedJob(job, seed), None, settings, seeds).run()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--budget", type=int, default=40)
    parser.add_argument("--jobs", default=",".join(j.name for j in jobs.JOBS))
    parser.add_argument("--methods", default="random,tpe,screen")
    parser.add_argument("--verbose", action="store_true", help="one line per failed seed")
    args = parser.parse_args()
    methods = [m for m in args.methods.split(",") if m in STRATEGIES]
    chosen = [j for j in jobs.JOBS if j.name in args.jobs.split(",")]
    load = os.getloadavg()[0]
    print(f"simulated host: 28 cores, 2 sockets; default space of {jobs.space().size():,} points; "
          f"budget {args.budget}; {args.seeds} seeds per job; success = winner truly within 3 % of the best")
    print(f"load average at start: {load:.2f}")
    header = (f"{'job':<20}" + "".join(f"{m:>14}" for m in methods)
              + "   screen: seeds naming exactly the parameters that matter; mattered in most seeds")
    print(header)
    failed_any = False
    timings = dict.fromkeys(methods, 0.0)
    trials = dict.fromkeys(methods, 0)
    for job in chosen:
        best = job.best
        row = f"{job.name:<20}"
        mattered_counts: dict[str, int] = {}
        exact = 0
        rates = {}
        for method in methods:
            wins = 0
            for seed in range(args.seeds):
                started = time.perf_counter()
                result = tune(job, seed, method, args.budget)
                timings[method] += time.perf_counter() - started
                trials[method] += len(result.records)
                ratio = job.throughput(result.winner) / best if result.winner else 0.0
                wins += ratio >= TARGET
                if method == "screen" and result.mattered is not None:
                    exact += set(result.mattered) == set(job.matters)
                    for name in result.mattered:
                        mattered_counts[name] = mattered_counts.get(name, 0) + 1
                if args.verbose and ratio < TARGET:
                    print(f"  {job.name} {method} seed {seed}: {ratio:.3f} {result.winner}")
            rates[method] = wins / args.seeds
            row += f"{wins:>8}/{args.seeds} {rates[method]:>3.0%}"[-14:].rjust(14)
        common = [n.replace("TF_NUM_", "").replace("_THREADS", "") for n, c in mattered_counts.items()
                  if c > args.seeds // 2]
        print(row + f"   {exact}/{args.seeds}; " + ", ".join(common))
        if "screen" in rates and (rates["screen"] < 0.95 or rates["screen"] < rates.get("tpe", 0.0)):
            failed_any = True
    print("seconds per tune: " + ", ".join(f"{m} {timings[m] / (args.seeds * len(chosen)):.2f}" for m in methods)
          + "; trials per tune (confirmation included): "
          + ", ".join(f"{m} {trials[m] / (args.seeds * len(chosen)):.1f}" for m in methods))
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    return 1 if failed_any else 0


if __name__ == "__main__":
    raise SystemExit(main())
