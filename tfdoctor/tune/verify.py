"""The verdict of a tune: does what the env script would change beat the current settings beyond the noise?

The search ends with its best configuration (the candidate). The env script does not apply the candidate
whole: it changes only parameters with a measured effect, on top of the settings the job has now. So the
verdict measures exactly that change against the current settings, in paired rounds (each round runs
every arm once, in rotating order, so a slow minute of the machine hits all arms alike):

- `Proposal`: of the parameters the candidate sets differently from the current environment, those
  screening measured with no effect are *left out* (left as the job has them); every other one is
  *tested*: it must earn its place by a drop-one comparison (the full change against the full change
  without it). A screening effect alone is not enough: it shows that some step of the parameter changed
  the result, not that the candidate's value beats the value the job has now.
- Arms: the current settings, the full change, and the full change without each tested parameter.
- Looks after LOOKS rounds; each look uses a two-sided interval at 1 - (1 - CONFIDENCE) / len(LOOKS)
  (Bonferroni over the looks), so "better" is claimed with at least CONFIDENCE overall; the drop-one
  comparisons of k parameters share a look's error by Holm's step-down (1 - (1 - CONFIDENCE) / (len(LOOKS) m)
  with m of them still undecided), so that the written parameters earned their places with CONFIDENCE
  together, not each alone. The noise of a
  paired difference is pooled from the comparison's own rounds and from every configuration the tune
  measured more than once (`NoisePrior`).
- The written change: the tested parameters that won their comparison. It is applied
  only when its interval against the current settings lies entirely above zero; otherwise the verdict
  is "keep your current settings" (undecided, measured slower, or nothing with an effect to change).

Everything here is a pure function of the recorded "verify" trials, so a resumed tune reaches the same
verdict without measuring anything again.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tfdoctor.profile.stats import SIGMA_FLOOR, paired_ratio_interval

VERIFY_PHASE = "verify"
CONFIDENCE = 0.95
LOOKS = (3, 6)  # paired rounds after which the comparisons are looked at
LOOK_CONFIDENCE = 1 - (1 - CONFIDENCE) / len(LOOKS)
MAX_FAILED = 2  # runs of one arm that may fail before the verdict gives up on the change
CURRENT, CHANGE = "current", "change"  # the roles of verify trials

Changes = Mapping[str, Any]  # parameter -> value, for the parameters an arm changes


def arm_key(changes: Changes) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(changes.items(), key=lambda kv: kv[0]))


@dataclass(frozen=True)
class NoisePrior:
    """Run-to-run noise the tune already measured: standard deviation of log(value), and its degrees of
    freedom (0: nothing measured twice)."""

    sigma: float = 0.0
    df: int = 0


@dataclass(frozen=True)
class Comparison:
    """Arm B against arm A over paired rounds: `gain` > 0 means B is better (in the tune's direction)."""

    gain: float
    low: float
    high: float
    pairs: int
    confidence: float

    @property
    def better(self) -> bool:
        return self.low > 0

    @property
    def worse(self) -> bool:
        return self.high < 0

    @property
    def decided(self) -> bool:
        return self.better or self.worse

    def describe(self) -> str:
        return (f"{self.gain * 100:+.1f} % ({self.confidence * 100:.4g} % interval {self.low * 100:+.1f} … "
                f"{self.high * 100:+.1f} %, {self.pairs} paired runs each)")

    def to_json(self) -> dict[str, Any]:
        return {"gain": round(self.gain, 5), "low": round(self.low, 5), "high": round(self.high, 5),
                "pairs": self.pairs, "confidence": self.confidence}


def compare(pairs: list[tuple[float, float]], maximize: bool, prior: NoisePrior,
            confidence: float = LOOK_CONFIDENCE) -> Comparison | None:
    """(a, b) values of the rounds that measured both; None below two rounds."""
    pairs = [(a, b) for a, b in pairs if a > 0 and b > 0]
    if len(pairs) < 2:
        return None
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    # The gain in the tune's direction: B over A when larger is better, A over B when smaller is.
    # A paired difference of two runs has twice the variance of one run: the prior, and the floor of one
    # run's noise, enter times sqrt(2).
    interval = paired_ratio_interval(a if maximize else b, b if maximize else a, 1 - confidence,
                                     prior_sd=math.sqrt(2) * prior.sigma, prior_df=prior.df,
                                     floor=SIGMA_FLOOR * math.sqrt(2))
    return Comparison(interval.ratio - 1, interval.low - 1, interval.high - 1, len(pairs), confidence)


@dataclass(frozen=True)
class Proposal:
    """What the env script could change: the candidate's settings that differ from the current ones."""

    tested: dict[str, Any] = field(default_factory=dict)  # each decided by a drop-one comparison
    left_out: tuple[str, ...] = ()  # screening measured no effect: left as the job has them

    @property
    def full(self) -> dict[str, Any]:
        return dict(self.tested)

    def arms(self) -> list[dict[str, Any]]:
        """The current settings ({}), the full change, and the full change without each tested parameter."""
        full = self.full
        out: list[dict[str, Any]] = [{}, full] if full else [{}]
        for name in self.tested:
            reduced = {k: v for k, v in full.items() if k != name}
            if reduced not in out:
                out.append(reduced)
        return out


@dataclass(frozen=True)
class Verdict:
    """Apply `changes` (measured better than the current settings by `gain`), or keep the current settings."""

    apply: bool
    reason: str
    changes: dict[str, Any] = field(default_factory=dict)  # empty when the current settings are kept
    gain: Comparison | None = None  # `changes` against the current settings
    tests: dict[str, Comparison] = field(default_factory=dict)  # full change against it without NAME
    left_out: tuple[str, ...] = ()
    full_gain: Comparison | None = None  # the full change against the current settings

    def to_json(self) -> dict[str, Any]:
        return {"verdict": "apply" if self.apply else "keep-current", "reason": self.reason,
                "changes": dict(self.changes), "gain": self.gain.to_json() if self.gain else None,
                "tests": {name: c.to_json() for name, c in self.tests.items()}, "left_out": list(self.left_out),
                "full_gain": self.full_gain.to_json() if self.full_gain else None}


@dataclass(frozen=True)
class Pending:
    """The next verification run: `changes` in paired round `round`."""

    round: int
    changes: dict[str, Any]


@dataclass(frozen=True)
class Run:
    """One recorded verification run (value None: it failed)."""

    round: int
    changes: dict[str, Any]
    value: float | None


def keep(reason: str, proposal: Proposal, **extra: Any) -> Verdict:
    return Verdict(False, reason, left_out=proposal.left_out, **extra)


def _rounds(runs: Iterable[Run]) -> dict[int, dict[tuple[tuple[str, Any], ...], float | None]]:
    out: dict[int, dict[tuple[tuple[str, Any], ...], float | None]] = {}
    for run in runs:
        out.setdefault(run.round, {})[arm_key(run.changes)] = run.value
    return out


class _Stage:
    """Paired rounds of a set of arms: which round comes next, and the comparisons at a look."""

    def __init__(self, arms: list[dict[str, Any]], rounds: dict[int, dict[tuple[tuple[str, Any], ...], float | None]],
                 maximize: bool, prior: NoisePrior) -> None:
        self.arms, self.keys = arms, [arm_key(a) for a in arms]
        self.all_rounds, self.maximize, self.prior = rounds, maximize, prior
        self.complete = sorted(r for r, arms_run in rounds.items() if all(k in arms_run for k in self.keys))

    def next_run(self) -> Pending:
        """The first arm missing from the round in progress (the latest round, when it has only arms of this
        stage and not all of them), else the first arm of a new round; arms rotate so each goes first as
        often. A round of other arms (an earlier stage, a candidate a resumed search replaced) is never
        completed later: its runs are minutes apart from the new ones, no longer a pair."""
        latest = max(self.all_rounds, default=-1)
        if latest >= 0 and latest not in self.complete and set(self.all_rounds[latest]) <= set(self.keys):
            number = latest
        else:
            number = latest + 1
        order = self.arms[number % len(self.arms):] + self.arms[: number % len(self.arms)]
        done = self.all_rounds.get(number, {})
        arm = next(a for a in order if arm_key(a) not in done)
        return Pending(number, dict(arm))

    def compare(self, a: Changes, b: Changes, rounds: int, confidence: float = LOOK_CONFIDENCE) -> Comparison | None:
        ka, kb = arm_key(a), arm_key(b)
        pairs = []
        for number in self.complete[:rounds]:
            va, vb = self.all_rounds[number].get(ka), self.all_rounds[number].get(kb)
            if va is not None and vb is not None:
                pairs.append((va, vb))
        return compare(pairs, self.maximize, self.prior, confidence)

    def failed(self) -> int:
        """The most failed runs of any one arm."""
        return max((sum(1 for arms_run in self.all_rounds.values() if arms_run.get(k, 0.0) is None)
                    for k in self.keys), default=0)


def _drop_one_tests(stage: _Stage, proposal: Proposal, look: int) -> dict[str, Comparison]:
    """Each tested parameter: the full change against it without the parameter. Holm's step-down keeps the
    error of all k comparisons together within one look's share: with m still undecided, each is looked
    at with 1 - share / m; the decided ones leave, and the rest are looked at again with the smaller m."""
    full = proposal.full
    share = (1 - CONFIDENCE) / len(LOOKS)
    tests: dict[str, Comparison] = {}
    open_ = list(proposal.tested)
    while open_:
        confidence = 1 - share / len(open_)
        decided = []
        for name in open_:
            test = stage.compare({k: v for k, v in full.items() if k != name}, full, look, confidence)
            if test is not None:
                tests[name] = test
                if test.decided:
                    decided.append(name)
        if not decided:
            break
        open_ = [n for n in open_ if n not in decided]
    return tests


def decide(proposal: Proposal, runs: Iterable[Run], maximize: bool, prior: NoisePrior) -> Verdict | Pending:
    """The verdict from the verification runs recorded so far, or the run to measure next."""
    full = proposal.full
    if not full:
        reason = ("no parameter the search changed had a measured effect" if proposal.left_out
                  else "the best configuration found is the current settings")
        return keep(reason, proposal)
    rounds = _rounds(runs)
    stage = _Stage(proposal.arms(), rounds, maximize, prior)
    if stage.failed() >= MAX_FAILED:
        return keep("the change failed to run in the verification (see the results file)", proposal)
    n = len(stage.complete)
    if n < LOOKS[0] or (n < LOOKS[-1] and n not in LOOKS):
        return stage.next_run()
    look = n if n in LOOKS else LOOKS[-1]
    last = look >= LOOKS[-1]
    full_gain = stage.compare({}, full, look)
    if full_gain is None:
        return stage.next_run() if not last else keep("the change could not be measured in pairs", proposal)
    if look == LOOKS[0] and full_gain.gain <= 0:
        # Futility: no faster after the first look; stopping here cannot make a false "better" likelier.
        return keep(f"the change measured {full_gain.describe()} against the current settings: not better",
                    proposal, full_gain=full_gain)
    tests = _drop_one_tests(stage, proposal, look)
    if not last and not all(name in tests and tests[name].decided for name in proposal.tested):
        return stage.next_run()
    written = {n: v for n, v in proposal.tested.items() if n in tests and tests[n].better}
    if not written:
        extra = {"tests": tests, "full_gain": full_gain, "gain": full_gain}
        if full_gain.worse:
            return keep(f"the change measured slower than the current settings: {full_gain.describe()}", proposal,
                        **extra)
        if not full_gain.better:
            return keep(f"the change measured {full_gain.describe()} against the current settings: not better "
                        "beyond the noise", proposal, **extra)
        return keep(f"the change measured {full_gain.describe()} against the current settings, but no parameter "
                    "of it was measured to matter on its own", proposal, **extra)
    if written in stage.arms:
        gain = stage.compare({}, written, look)
        if gain is not None and not gain.decided and not last:
            return stage.next_run()
    else:
        # Fewer parameters than any arm measured: the written change alone against the current settings.
        final = _Stage([{}, written], rounds, maximize, prior)
        if final.failed() >= MAX_FAILED:
            return keep("the change failed to run in the verification (see the results file)", proposal)
        m = len(final.complete)
        if m < LOOKS[0] or (m < LOOKS[-1] and m not in LOOKS):
            return final.next_run()
        gain = final.compare({}, written, m if m in LOOKS else LOOKS[-1])
        if gain is not None and not gain.decided and m < LOOKS[-1]:
            return final.next_run()
    extra = {"tests": tests, "full_gain": full_gain}
    if gain is None:
        return keep("the change could not be measured in pairs", proposal, **extra)
    if gain.better:
        return Verdict(True, f"{gain.describe()} over the current settings", dict(written), gain,
                       left_out=proposal.left_out, **extra)
    if gain.worse:
        return keep(f"the change measured slower than the current settings: {gain.describe()}", proposal,
                    gain=gain, **extra)
    return keep(f"the change measured {gain.describe()} against the current settings: not better beyond the "
                "noise", proposal, gain=gain, **extra)
