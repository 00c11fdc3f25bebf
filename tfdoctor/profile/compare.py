"""A/B comparison of two environments (or in-process snippets) by interleaved fresh processes.

A round starts a fresh process for A and one for B; both import TensorFlow, build and warm up the
workload at the same time (untimed, so the two cores are used), then the parent runs their timed
steps in alternating chunks — A B A B … — so that whatever else the machine does at that moment
falls on both arms alike. Each process's value is the 10th percentile of its step times; the round's
value is log(B / A). Rounds repeat until the interval of `stats.paired_ratio_interval` decides or
another round would overrun the budget. Statistics: tfdoctor/profile/stats.py, docs/profile.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tfdoctor.profile.runner import WorkloadSession, busy_ticks, foreign_cpu_share, low_quantile
from tfdoctor.profile.stats import UNDECIDED, RatioInterval, paired_ratio_interval

ALPHA = 0.05
MIN_ROUNDS = 2
MAX_ROUNDS = 8
FIRST_LOOK_ALPHA = 0.01  # of ALPHA, spent on the look after round 2; the rest split over later looks
DEFAULT_BUDGET = 60.0
CHUNKS, CHUNK_STEPS, WARMUP = 6, 6, 3
CHUNK_SECONDS = 0.6  # a chunk of a slow arm stops early, after at least two steps
LOW_QUANTILE = 0.1
SETUP_TIMEOUT = 60.0
BUSY_MACHINE = 0.25  # above this share of the CPUs used by others, a comparison says so

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
    a_steps: list[float] = field(default_factory=list)  # per round: the process's low step time
    b_steps: list[float] = field(default_factory=list)
    rounds: int = 0
    seconds: float = 0.0
    error: str | None = None
    cpu_steal: float | None = None
    foreign_cpu: float | None = None  # share of the machine's CPU other processes used meanwhile

    def to_json(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline, "candidate": self.candidate, "verdict": self.verdict,
            "interval": self.interval.to_json() if self.interval else None,
            "baseline_step_seconds": self.a_steps, "candidate_step_seconds": self.b_steps,
            "rounds": self.rounds, "seconds": self.seconds, "error": self.error, "cpu_steal": self.cpu_steal,
            "foreign_cpu": self.foreign_cpu,
        }

    def describe(self) -> str:
        if self.error:
            return f"not measured: {self.error}"
        if self.interval is None:
            return f"undecided after {self.rounds} round(s) in {self.seconds:.0f} s"
        i = self.interval
        words = {"slower": "slower", "faster": "faster", "no-effect": "no measurable effect",
                 "undecided": "undecided"}[self.verdict]
        busy = ""
        if self.foreign_cpu is not None and self.foreign_cpu > BUSY_MACHINE:
            busy = f"; other processes used {self.foreign_cpu:.0%} of the CPUs meanwhile"
        return (f"{words}: step time ×{i.ratio:.2f} ({i.confidence:.1%} CI {i.low:.2f}–{i.high:.2f}; "
                f"{self.rounds} rounds, {self.seconds:.0f} s{busy})")


def look_alpha(rounds: int, max_rounds: int = MAX_ROUNDS) -> float:
    """The error rate spent on the look after `rounds` rounds; the looks' rates sum to ALPHA
    (Bonferroni), so the chance that any look wrongly decides stays within ALPHA."""
    if rounds == MIN_ROUNDS:
        return FIRST_LOOK_ALPHA
    return (ALPHA - FIRST_LOOK_ALPHA) / max(1, max_rounds - MIN_ROUNDS)


def compare(baseline: Arm, candidate: Arm, workload: str = "cnn", *, budget: float = DEFAULT_BUDGET,
            device: str = "auto", python: str | None = None, progress: Progress | None = None,
            session: SessionFactory = WorkloadSession, clock: Callable[[], float] = time.monotonic,
            max_rounds: int = MAX_ROUNDS) -> Comparison:
    """Rounds of A/B until decided, at most `max_rounds`, not starting a round that would overrun."""
    result = Comparison(baseline.label, candidate.label)
    started = clock()
    steals: list[float] = []
    ticks, own_before = busy_ticks(), _children_cpu()
    try:
        _rounds(baseline, candidate, workload, result, budget, device, python, progress, session, clock,
                max_rounds, started, steals)
    finally:
        result.seconds = clock() - started
        result.foreign_cpu = foreign_cpu_share(ticks, busy_ticks(), _children_cpu() - own_before)
    return result


def _children_cpu() -> float:
    import os

    times = os.times()
    return times.children_user + times.children_system


def _rounds(baseline: Arm, candidate: Arm, workload: str, result: Comparison, budget: float, device: str,
            python: str | None, progress: Progress | None, session: SessionFactory, clock: Callable[[], float],
            max_rounds: int, started: float, steals: list[float]) -> None:
    longest = 0.0
    while result.rounds < max_rounds:
        round_started = clock()
        # Never start a round that, as long as the longest so far, would end past the budget.
        if result.rounds and round_started - started + longest > budget:
            break
        if progress:
            progress(f"round {result.rounds + 1}: starting {baseline.label} and {candidate.label}")
        pair = [session(workload, arm.env, warmup=WARMUP, device=device, snippet=arm.snippet, python=python)
                for arm in (baseline, candidate)]
        try:
            for chunk in range(CHUNKS):
                for arm, live in zip((baseline, candidate), pair, strict=True):
                    if progress:
                        progress(f"round {result.rounds + 1}: timing {arm.label} ({chunk + 1}/{CHUNKS})")
                    if not live.run_steps(CHUNK_STEPS, SETUP_TIMEOUT, CHUNK_SECONDS):
                        result.error = f"{arm.label}: {live.error}"
                        return
            a_value = low_quantile(pair[0].step_seconds, LOW_QUANTILE)
            b_value = low_quantile(pair[1].step_seconds, LOW_QUANTILE)
            steal = pair[0].cpu_steal
        finally:
            for live in pair:
                live.close()
        assert a_value is not None and b_value is not None
        result.a_steps.append(a_value)
        result.b_steps.append(b_value)
        if steal is not None:
            steals.append(steal)
        result.rounds += 1
        longest = max(longest, clock() - round_started)
        result.cpu_steal = max(steals) if steals else None
        if result.rounds >= MIN_ROUNDS:
            alpha = look_alpha(result.rounds, max_rounds)
            result.interval = paired_ratio_interval(result.a_steps, result.b_steps, alpha)
            result.verdict = result.interval.verdict()
            if result.verdict != UNDECIDED:
                return
