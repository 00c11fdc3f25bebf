"""A/B comparison of two environments (or in-process snippets) by interleaved fresh processes.

The budget is a wall-clock promise: `compare` returns within `budget` seconds of its start, whatever
the children do — importing TensorFlow, building, stepping or hanging. Every wait is bounded by what
is left of the budget; when it runs out, the live processes are killed and the result is what the
finished chunk pairs decided, or undecided.

A round starts a fresh process for A and one for B; both import TensorFlow, build and warm up at the
same time (untimed, so the two cores are used), then the parent runs their timed steps in alternating
chunks — A B, B A, A B … (each pair in the other order than the last, so a steady drift of the load
falls on both arms alike). Each chunk gives one value per arm, each chunk pair one log ratio; the
rounds' log ratios give the interval of `stats.nested_ratio_interval`. After each round one look
(Bonferroni: ALPHA split over the looks) decides, or another round runs if one fits in the budget.

What is timed (`metric`): wall time per step, or the CPU time of the whole workload process per step.
CPU time is what a step costs, unaffected by waiting for a CPU that other processes hold — the honest
measure on a busy machine when both arms run the same number of threads. It is dishonest where the
arms differ in parallelism (threads, affinity: two threads halve the wall time at the same CPU time),
where a step waits for something (input, a GPU), so `auto` takes wall time there. Docs:
docs/profile.md "Comparisons and validation".
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tfdoctor.profile.runner import WorkloadSession, foreign_cpu_share, read_cpu_times
from tfdoctor.profile.stats import UNDECIDED, RatioInterval, nested_ratio_interval, quantile

ALPHA = 0.05
FIRST_LOOK_ALPHA = 0.01  # of ALPHA, spent on the look after round 1; the rest split over later looks
MAX_ROUNDS = 8
DEFAULT_BUDGET = 60.0
# Chunk pairs per round, steps per chunk, untimed steps first. Long rounds: on a busy 2-CPU machine a
# round's setup (importing TensorFlow twice) costs as much as 10-20 chunk pairs, while the processes add
# little variance (about 1 %) next to the chunks' (about 30 % under load), so pairs are the cheap data.
PAIRS, CHUNK_STEPS, WARMUP = 16, 6, 3
CHUNK_SECONDS = 0.5  # a chunk of a slow arm stops early, after at least two steps
MIN_PAIRS = 2  # a round cut short by the budget still counts with this many finished pairs
LOW_QUANTILE = 0.1
RESERVE = 1.0  # seconds kept to stop the children and return
CLOSE_GRACE = 2.0  # seconds a child may take to exit after EOF before it is killed
BUSY_MACHINE = 0.25  # above this share of the CPUs used by others, a comparison says so
WALL, CPU, AUTO = "wall", "cpu", "auto"
METRICS = (AUTO, WALL, CPU)

# Variables that change how many CPUs a step may use, or which: CPU time cannot judge them.
_PARALLELISM = re.compile(r"^(TF_NUM_(INTRA|INTER)OP_THREADS|OMP_\w+|KMP_\w+|GOMP_\w+|MKL_NUM_THREADS|"
                          r"OPENBLAS_NUM_THREADS|TF_OVERRIDE_GLOBAL_THREADPOOL|TFDOCTOR_NUMA\w*)$")
_PARALLEL_CODE = re.compile(r"threading|affinity|sched_setaffinity")

Progress = Callable[[str], None]
SessionFactory = Callable[..., Any]


@dataclass(frozen=True)
class Arm:
    """One side of an A/B comparison: its label, its environment and the snippet it runs."""

    label: str
    env: Mapping[str, str]
    snippet: str | None = None


@dataclass
class Comparison:
    """An A/B comparison's measurements and its verdict, with the machine's noise while it ran."""

    baseline: str
    candidate: str
    verdict: str = UNDECIDED
    interval: RatioInterval | None = None
    a_steps: list[float] = field(default_factory=list)  # per round: the process's low value of the metric
    b_steps: list[float] = field(default_factory=list)
    log_ratios: list[list[float]] = field(default_factory=list)  # per round: log(B / A) of each chunk pair
    rounds: int = 0
    seconds: float = 0.0
    budget: float = DEFAULT_BUDGET
    metric: str = WALL
    metric_reason: str = ""
    stopped: str | None = None  # why no further round ran, when it ended undecided
    error: str | None = None
    cpu_steal: float | None = None
    foreign_cpu: float | None = None  # share of the machine's CPU other processes used meanwhile

    @property
    def pairs(self) -> int:
        return sum(len(r) for r in self.log_ratios)

    def to_json(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline, "candidate": self.candidate, "verdict": self.verdict,
            "interval": self.interval.to_json() if self.interval else None,
            "baseline_step_seconds": self.a_steps, "candidate_step_seconds": self.b_steps,
            "log_ratios": self.log_ratios, "pairs": self.pairs,
            "rounds": self.rounds, "seconds": self.seconds, "budget": self.budget, "metric": self.metric,
            "metric_reason": self.metric_reason, "stopped": self.stopped, "error": self.error,
            "cpu_steal": self.cpu_steal, "foreign_cpu": self.foreign_cpu,
        }

    def describe(self) -> str:
        if self.error:
            return f"not measured: {self.error}"
        busy = ""
        if self.foreign_cpu is not None and self.foreign_cpu > BUSY_MACHINE:
            busy = f"; other processes used {self.foreign_cpu:.0%} of the CPUs meanwhile"
        measure = "step wall time" if self.metric == WALL else "step CPU time"
        why = f" — {self.stopped}" if self.stopped and self.verdict == UNDECIDED else ""
        if self.interval is None:
            return f"undecided after {self.rounds} round(s) in {self.seconds:.0f} s{why}{busy}"
        i = self.interval
        words = {"slower": "slower", "faster": "faster", "no-effect": "no measurable effect",
                 "undecided": "undecided"}[self.verdict]
        return (f"{words}: {measure} ×{i.ratio:.2f} ({i.confidence:.1%} CI {i.low:.2f}–{i.high:.2f}; "
                f"{self.rounds} round(s), {self.pairs} chunk pairs, {self.seconds:.0f} s of {self.budget:.0f}"
                f"{busy}){why}")


def look_alpha(rounds: int, max_rounds: int = MAX_ROUNDS) -> float:
    """The error rate spent on the look after `rounds` rounds; the looks' rates sum to ALPHA
    (Bonferroni), so the chance that any look wrongly decides stays within ALPHA."""
    if rounds <= 1:
        return FIRST_LOOK_ALPHA
    return (ALPHA - FIRST_LOOK_ALPHA) / max(1, max_rounds - 1)


def choose_metric(baseline: Arm, candidate: Arm, workload: str, device: str) -> tuple[str, str]:
    """(`cpu` or `wall`, why): CPU time where it is honest, wall time where it is not (module doc).
    A GPU the children report is handled by the caller, once they are up."""
    changed = sorted(k for k in set(baseline.env) | set(candidate.env)
                     if baseline.env.get(k) != candidate.env.get(k) and _PARALLELISM.match(k))
    if changed:
        return WALL, f"the arms differ in parallelism ({', '.join(changed)})"
    if any(arm.snippet and _PARALLEL_CODE.search(arm.snippet) for arm in (baseline, candidate)):
        return WALL, "a snippet changes threading"
    if workload in ("pyfunc", "script"):
        return WALL, f"the {workload} workload waits for input"
    if device == "gpu":
        return WALL, "steps run on a GPU"
    return CPU, "same parallelism on the CPU: CPU time is not lengthened by other processes"


def compare(baseline: Arm, candidate: Arm, workload: str = "cnn", *, budget: float = DEFAULT_BUDGET,
            device: str = "auto", python: str | None = None, progress: Progress | None = None,
            session: SessionFactory = WorkloadSession, clock: Callable[[], float] = time.monotonic,
            max_rounds: int = MAX_ROUNDS, metric: str = AUTO) -> Comparison:
    """Rounds of A/B until decided, at most `max_rounds`, returning within `budget` seconds."""
    if metric not in METRICS:
        raise ValueError(f"metric: one of {', '.join(METRICS)}")
    result = Comparison(baseline.label, candidate.label, budget=budget)
    if metric == AUTO:
        result.metric, result.metric_reason = choose_metric(baseline, candidate, workload, device)
    else:
        result.metric, result.metric_reason = metric, "chosen by the caller"
    started = clock()
    ticks, own_before = read_cpu_times(), _children_cpu()
    try:
        _Rounds(baseline, candidate, result, clock, started + budget, progress,
                lambda arm: session(workload, arm.env, warmup=WARMUP, device=device, snippet=arm.snippet,
                                    python=python),
                metric == AUTO).run(max_rounds)
    finally:
        result.seconds = clock() - started
        result.foreign_cpu = foreign_cpu_share(ticks, read_cpu_times(), _children_cpu() - own_before)
    return result


def _children_cpu() -> float:
    import os

    times = os.times()
    return times.children_user + times.children_system


@dataclass
class _Rounds:
    """The rounds of one comparison, against one deadline (`compare`'s budget minus RESERVE)."""

    baseline: Arm
    candidate: Arm
    result: Comparison
    clock: Callable[[], float]
    deadline: float
    progress: Progress | None
    start: Callable[[Arm], Any]
    auto: bool
    longest_setup: float = 0.0
    longest_pair: float = 0.0
    steals: list[float] = field(default_factory=list)

    def left(self) -> float:
        return self.deadline - RESERVE - self.clock()

    def say(self, message: str) -> None:
        if self.progress:
            self.progress(f"round {self.result.rounds + 1}: {message}")

    def run(self, max_rounds: int) -> None:
        result = self.result
        while result.rounds < max_rounds:
            # Start a round only when its setup and two chunk pairs fit in what is left, as long as the
            # longest so far (the first round always starts: the budget then cuts it short if it must).
            if result.rounds and self.left() < self.longest_setup + 2 * self.longest_pair:
                result.stopped = f"another round would not fit in the {result.budget:.0f} s budget"
                return
            if not self.round():
                return
            if self.look():
                return
        result.stopped = f"still undecided after {max_rounds} rounds"

    def round(self) -> bool:
        """One round; False when the comparison must stop (an error, or the budget ran out)."""
        result = self.result
        self.say(f"starting {self.baseline.label} and {self.candidate.label}")
        round_started = self.clock()
        pair = [self.start(arm) for arm in (self.baseline, self.candidate)]
        ratios: list[float] = []
        go_on = True
        try:
            for arm, live in zip((self.baseline, self.candidate), pair, strict=True):
                if not live.wait_ready(max(0.0, self.left())):
                    go_on = self._failed(arm, live, "starting")
                    return go_on
            self.longest_setup = max(self.longest_setup, self.clock() - round_started)
            self._metric_from_devices(pair)
            ratios, go_on = self._chunk_pairs(pair)
        finally:
            out_of_time = self.left() < CLOSE_GRACE
            for live in pair:
                live.close(grace=0.0 if out_of_time else CLOSE_GRACE)
        if len(ratios) >= MIN_PAIRS:
            result.log_ratios.append(ratios)
            self._process_values(pair)
            result.rounds += 1
            steal = pair[0].cpu_steal
            if steal is not None:
                self.steals.append(steal)
                result.cpu_steal = max(self.steals)
        elif go_on:
            go_on = False
            result.stopped = result.stopped or "too few chunk pairs finished"
        if not go_on and not result.error and len(ratios) >= MIN_PAIRS:
            self.look()  # a round cut short by the budget still gets its look
        return go_on

    def _chunk_pairs(self, pair: list[Any]) -> tuple[list[float], bool]:
        import math

        arms = (self.baseline, self.candidate)
        ratios: list[float] = []
        for number in range(PAIRS):
            if ratios and self.left() < self.longest_pair:
                self.result.stopped = f"the {self.result.budget:.0f} s budget ran out"
                return ratios, False
            self.say(f"timing chunk pair {number + 1}/{PAIRS}")
            pair_started = self.clock()
            order = (0, 1) if number % 2 == 0 else (1, 0)
            for index in order:
                live = pair[index]
                if not live.run_steps(CHUNK_STEPS, max(0.0, self.left()), CHUNK_SECONDS):
                    return ratios, self._failed(arms[index], live, "timing")
            self.longest_pair = max(self.longest_pair, self.clock() - pair_started)
            a, b = (self._value(live.chunks[-1]) for live in pair)
            ratios.append(math.log(b / a))
        return ratios, True

    def _failed(self, arm: Arm, live: Any, phase: str) -> bool:
        """A child that failed is an error; one still busy when the budget ran out is not."""
        if getattr(live, "timed_out", False):
            self.result.stopped = f"the {self.result.budget:.0f} s budget ran out while {phase} {arm.label}"
        else:
            self.result.error = f"{arm.label}: {live.error}"
        return False

    def _metric_from_devices(self, pair: list[Any]) -> None:
        if self.auto and self.result.metric == CPU and any("GPU" in getattr(s, "devices", ()) for s in pair):
            self.result.metric, self.result.metric_reason = WALL, "steps run on a GPU"

    def _value(self, chunk: Any) -> float:
        values = chunk.cpu if self.result.metric == CPU and chunk.cpu else chunk.wall
        value = quantile(values, LOW_QUANTILE)
        assert value is not None
        return max(value, 1e-9)  # a step of no measurable CPU time must not divide by zero

    def _process_values(self, pair: list[Any]) -> None:
        for live, out in zip(pair, (self.result.a_steps, self.result.b_steps), strict=True):
            values = live.cpu_seconds if self.result.metric == CPU and live.cpu_seconds else live.step_seconds
            value = quantile(values, LOW_QUANTILE)
            if value is not None:
                out.append(value)

    def look(self) -> bool:
        """True when decided."""
        result = self.result
        if result.pairs < MIN_PAIRS:
            return False
        result.interval = nested_ratio_interval(result.log_ratios, look_alpha(result.rounds, MAX_ROUNDS))
        result.verdict = result.interval.verdict()
        if result.verdict != UNDECIDED:
            result.stopped = None
            return True
        return False
