"""How often `tfdoctor tune --budget 40` (default space) picks a winner truly within 3 % of the best, on a
family of simulated jobs (benchmarks/simulated_jobs.py), beside baselines measured in the same run:
random search, the search before screening ("tpe": TPE over the whole space from the start) and the
screened search with the screening that was the default before the two-level design
("screen:one-at-a-time"); "screen" is the default (two-level screening).

Every method is the very Tuner `tfdoctor tune` runs (seeds = current settings and the rule-based
recommendation, the same confirmation of the leaders and verdict), called in-process with the simulated
objective; only TuneSettings.strategy differs. Success for one seed: a configuration's TRUE throughput is
at least 97 % of the true best over the whole space (noise can make a worse one look best: that fails).
Two configurations are scored:

- found:   the best configuration the search found (every parameter set; before the verdict existed,
           the "winner" the tune declared);
- written: what the user gets by sourcing the env script: the current settings (here: nothing set) with
           only the script's changes applied — "keep your current settings" scores the current settings.

`keep` counts the "keep your current settings" verdicts, `worse` the written changes truly slower than the
current settings (never acceptable: the exit status is 1 when there is one).

    python benchmarks/tune_simulated.py [--seeds 20] [--budget 40] [--jobs threads-only,...] [--methods ...]
                                        [--compare-with /path/to/other/checkout]

--compare-with runs the same benchmark against another checkout of tfdoctor first (a subprocess with
PYTHONPATH set to it; an older tune without a verdict writes its winner's `mattered` parameters, as its env
script did) and prints both tables, before and after, from the same run.
"""

from __future__ import annotations

import argparse
import inspect
import os
import random
import subprocess
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


def params_of(env: Mapping[str, str | None], job: jobs.Job | None = None) -> dict[str, object]:
    """The job's settings under an environment: an unset variable means the job's own default."""
    unset = job.unset_means if job is not None else jobs.UNSET_MEANS
    return {name: (int(raw) if isinstance(default, int) else raw) if (raw := env.get(name)) is not None
            else default for name, default in unset.items()}


class SimulatedJob:
    """The objective: a simulated job measured with its noise, from the trial's parameters."""

    def __init__(self, job: jobs.Job, seed: int) -> None:
        self.job, self.rng = job, random.Random(seed * 7919 + 17)

    def describe(self) -> dict[str, object]:
        return {"simulated": self.job.name}

    def measure(self, env_changes: Mapping[str, str | None], launcher: Sequence[str] = ()) -> Measurement:
        return Measurement("ok", self.job.measure(params_of(env_changes, self.job), self.rng), 0.0)


def tune(job: jobs.Job, seed: int, method: str, budget: int) -> TuneResult:
    """`method`: a strategy, or "screen:DESIGN" for the screened search with another screening."""
    space = job.space()
    seeds = {"current": current_settings(space, {}, job.budget), "rule": rule_based_settings(job.budget, space)}
    strategy, _, design = method.partition(":")
    settings = TuneSettings(budget=budget, seed=seed, strategy=strategy,
                            **({"screening": design} if design else {}))
    # The simulated job runs with nothing set: the env script's changes are measured against that (a tune
    # from before the verdict, run by --compare-with, has no such argument).
    extra = {"current_env": {}} if "current_env" in inspect.signature(Tuner).parameters else {}
    return Tuner(space, SimulatedJob(job, seed), None, settings, seeds, **extra).run()


def found_and_written(result: TuneResult, job: jobs.Job) -> tuple[dict | None, dict[str, str | None], bool]:
    """The best configuration found, the environment the env script changes, and whether it keeps the
    current settings. A tune from before the verdict: its winner, and the env script it wrote then (the
    `mattered` parameters of the winner, or all of them)."""
    space = job.space()
    if hasattr(result, "verdict"):
        if result.verdict is None:
            return None, {}, True
        changes = result.verdict.changes
        env = {p.name: p.env_value(changes[p.name]) for p in space.parameters if p.name in changes}
        return result.candidate, env, not result.verdict.apply
    if result.winner is None:
        return None, {}, True
    env = {n: v for n, v in space.env_changes(result.winner).items()
           if result.mattered is None or n in result.mattered}
    return result.winner, env, False


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--budget", type=int, default=40)
    parser.add_argument("--jobs", default=",".join(j.name for j in jobs.JOBS))
    parser.add_argument("--methods", default="random,tpe,screen:one-at-a-time,screen")
    parser.add_argument("--verbose", action="store_true", help="one line per failed seed")
    parser.add_argument("--compare-with", metavar="CHECKOUT", help="run the benchmark of this checkout first")
    args = parser.parse_args()
    if args.compare_with:
        argv = [a for a in sys.argv[1:] if not a.startswith("--compare-with") and a != args.compare_with]
        env = {**os.environ, "PYTHONPATH": str(Path(args.compare_with).resolve())}
        print(f"== before: {args.compare_with} ==", flush=True)
        subprocess.run([sys.executable, __file__, *argv], env=env, check=False)
        print("== after: this checkout ==", flush=True)
    import tfdoctor

    methods = [m for m in args.methods.split(",") if m.partition(":")[0] in STRATEGIES]
    chosen = [j for j in jobs.JOBS if j.name in args.jobs.split(",")]
    load = os.getloadavg()[0]
    print(f"tfdoctor from {Path(tfdoctor.__file__).parent}")
    print("simulated hosts: 28 cores, 2 sockets (wide-56: 56 logical CPUs, inter-op 1..12); "
          f"default space of {jobs.space().size():,} points; "
          f"budget {args.budget}; {args.seeds} seeds per job; success = truly within 3 % of the best")
    print(f"load average at start: {load:.2f}")
    print(f"{'job':<20}" + "".join(f"{m + ': found  written  keep  worse':>40}" for m in methods)
          + "   screen: named exactly the parameters that matter")
    failed_any = False
    timings = dict.fromkeys(methods, 0.0)
    trials = dict.fromkeys(methods, 0)
    for job in chosen:
        best = job.best
        row = f"{job.name:<20}"
        exact: dict[str, int] = {}
        for method in methods:
            found_wins = written_wins = keeps = worse = 0
            for seed in range(args.seeds):
                started = time.perf_counter()
                result = tune(job, seed, method, args.budget)
                timings[method] += time.perf_counter() - started
                trials[method] += len(result.records)
                found, env, keep = found_and_written(result, job)
                found_ratio = job.throughput({**params_of({}, job), **found}) / best if found else 0.0
                written = job.throughput(params_of(env, job))
                found_wins += found_ratio >= TARGET
                written_wins += written / best >= TARGET
                keeps += keep
                worse += written < job.throughput(params_of({}, job)) * 0.999
                if method.startswith("screen") and result.mattered is not None:
                    exact[method] = exact.get(method, 0) + (set(result.mattered) == set(job.matters))
                if args.verbose and written / best < TARGET:
                    print(f"  {job.name} {method} seed {seed}: found {found_ratio:.3f} written {written / best:.3f} "
                          f"{env}")
            row += f"{found_wins:>16}/{args.seeds} {written_wins:>5}/{args.seeds} {keeps:>5} {worse:>6}"
            failed_any = failed_any or worse > 0  # an env script that makes the job slower: never acceptable
        print(row + "   " + ", ".join(f"{m} {n}/{args.seeds}" for m, n in exact.items()))
    print("seconds per tune: " + ", ".join(f"{m} {timings[m] / (args.seeds * len(chosen)):.2f}" for m in methods)
          + "; runs per tune (confirmation and verdict included): "
          + ", ".join(f"{m} {trials[m] / (args.seeds * len(chosen)):.1f}" for m in methods))
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    return 1 if failed_any else 0


if __name__ == "__main__":
    raise SystemExit(main())
