"""Which parameters matter: one-at-a-time steps from the rule-based seed, and their measured effects (pure).

Most knobs do nothing for a given job; a search that spends its budget on them lets the noise pick the
"winner". So before searching, a tune moves each parameter alone away from the rule seed (every other
choice of a preset; a low and a middle value of a thread count) and measures. A parameter matters when
one of its steps changes the result by more than the noise can: MATTERS_EFFECT, about three standard
deviations of a difference of two 2 %-noise measurements. The search then varies only the parameters
that matter; the others stay at the rule seed's value (or at a step measured clearly better), and the
env script leaves them unset.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from tfdoctor.tune.space import Parameter, Space

SCREEN_PHASE = "screen"
# A step changes the result when |log(step / seed)| exceeds MATTERS_EFFECT. With 2 % noise per run,
# one step against the mean of two seed runs differs by noise with a standard deviation of 2.4 %: 7 %
# is three of those, so the dozen steps of the default space flag a knob that does nothing about once
# in thirty tunes. A step between AMBIGUOUS_EFFECT and that is measured again (and the seed, to three
# runs); then the noise of the difference is 1.8 % and 4.5 % (2.5 of those) decides.
MATTERS_EFFECT = 0.07
AMBIGUOUS_EFFECT = 0.025
REMEASURED_EFFECT = 0.045
AGREE_EFFECT = 0.035  # ... and each of its runs must point the same way by this much
CLEAR_EFFECT = 0.105  # a single run past this is not noise even when the seed's mean moves later


def probe_values(parameter: Parameter, seed_value: Any) -> list[Any]:
    """The values a parameter takes in its one-at-a-time steps: every other choice of a preset; for a
    count, the geometric middle of its range (where thread counts change most), or an end when the
    seed is the middle."""
    if parameter.kind == "choice":
        return [c for c in parameter.choices if c != seed_value]
    middle = round(math.sqrt(parameter.low * parameter.high)) if parameter.low > 0 else (parameter.high // 2)
    for value in (middle, parameter.low, parameter.high):
        if value != seed_value and parameter.contains(value):
            return [value]
    return []


def ambiguous_steps(space: Space, seed: Mapping[str, Any], found: Mapping[str, Effect],
                    measured: Iterable[tuple[Mapping[str, Any], float]]) -> list[dict[str, Any]]:
    """Second runs for the steps whose change was between AMBIGUOUS_EFFECT and CLEAR_EFFECT: of each
    parameter, the step that changed the result most (does it matter?) and the best-looking one (is it
    the value to keep?); the seed first, to three runs."""
    measured = list(measured)
    out: list[dict[str, Any]] = []
    for name in found:
        for step in (_step(seed, name, measured, largest=True), _step(seed, name, measured, largest=False)):
            if step is None or step[2] >= 2 or not AMBIGUOUS_EFFECT < abs(step[1]) <= CLEAR_EFFECT:
                continue
            if {**seed, name: step[0]} not in out:
                out.append({**seed, name: step[0]})
    seed_runs = sum(1 for params, _ in measured if all(params.get(k) == v for k, v in seed.items()))
    if out and seed_runs < 3:
        out.insert(0, dict(seed))
    return out


def _step(seed: Mapping[str, Any], name: str, measured: list[tuple[Mapping[str, Any], float]],
          largest: bool) -> tuple[Any, float, int] | None:
    """(value, log change from the seed's mean, runs) of the parameter's step that changed the result
    most (largest) or improved it most."""
    base = [math.log(v) for params, v in measured if v > 0 and all(params.get(k) == seed[k] for k in seed)]
    by_value: dict[Any, list[float]] = {}
    for params, value in measured:
        if value > 0 and params.get(name) != seed[name] and all(
                params.get(k) == seed[k] for k in seed if k != name):
            by_value.setdefault(params[name], []).append(math.log(value))
    if not base or not by_value:
        return None
    mean = statistics.fmean(base)
    change = {value: statistics.fmean(logs) - mean for value, logs in by_value.items()}
    value = max(change, key=lambda v: abs(change[v]) if largest else change[v])
    return value, change[value], len(by_value[value])


def screening_plan(space: Space, seed: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The seed again (a second measurement to compare with), then each one-at-a-time step."""
    plan = [dict(seed)]
    for parameter in space.parameters:
        plan.extend({**seed, parameter.name: value} for value in probe_values(parameter, seed[parameter.name]))
    return plan


@dataclass(frozen=True)
class Effect:
    """What moving one parameter away from the seed did: the largest |relative change| seen, the best
    value seen (the seed's own if no step beat it clearly), and whether that is more than noise."""

    name: str
    effect: float  # max over its steps of |step / seed - 1|
    best_value: Any
    best_gain: float  # best step / seed - 1 (negative: every step was worse)
    steps: int
    matters: bool

    def to_json(self) -> dict[str, Any]:
        return {"effect": round(self.effect, 4), "best_value": self.best_value, "best_gain": round(self.best_gain, 4),
                "steps": self.steps, "matters": self.matters}


def effects(space: Space, seed: Mapping[str, Any], measured: Iterable[tuple[Mapping[str, Any], float]],
            maximize: bool = True) -> dict[str, Effect]:
    """Each parameter's effect from measurements of the seed and of one-at-a-time steps from it."""
    seed_values: list[float] = []
    steps: dict[str, dict[Any, list[float]]] = {p.name: {} for p in space.parameters}
    for params, value in measured:
        differing = [p.name for p in space.parameters if params.get(p.name) != seed.get(p.name)]
        if not differing:
            seed_values.append(value)
        elif len(differing) == 1:
            steps[differing[0]].setdefault(params[differing[0]], []).append(value)
    result: dict[str, Effect] = {}
    if not seed_values or any(v <= 0 for v in seed_values):
        return result
    base = math.exp(statistics.fmean(math.log(v) for v in seed_values))
    for parameter in space.parameters:
        ratios = {value: math.exp(statistics.fmean(math.log(max(v, 1e-300)) for v in values)) / base
                  for value, values in steps[parameter.name].items()}
        if not ratios:
            continue
        if not maximize:
            ratios = {value: 1.0 / ratio for value, ratio in ratios.items()}
        def past_noise(value: Any, ratio: float, runs: dict[Any, list[float]] = steps[parameter.name]) -> bool:
            change = math.log(ratio)
            values = runs.get(value, [])
            if len(values) < 2 or len(seed_values) < 3:
                return abs(change) > MATTERS_EFFECT
            # A step measured again because its first run stood out: the mean keeps half of that first
            # run's luck, so every run must also point the same way by more than AGREE_EFFECT.
            sign = 1.0 if maximize else -1.0
            each = [sign * math.log(max(v, 1e-300) / base) for v in values]
            return abs(change) > REMEASURED_EFFECT and all(e * change > 0 and abs(e) > AGREE_EFFECT for e in each)

        largest = max(abs(math.log(r)) for r in ratios.values())
        matters = any(past_noise(value, r) for value, r in ratios.items())
        best_value, best_ratio = max(ratios.items(), key=lambda kv: kv[1])
        if best_ratio <= 1.0 or not past_noise(best_value, best_ratio):  # the seed's value stays
            best_value, best_ratio = seed[parameter.name], 1.0
        result[parameter.name] = Effect(parameter.name, math.exp(largest) - 1, best_value, best_ratio - 1,
                                        len(ratios), matters)
    return result


Measured = Sequence[tuple[Mapping[str, Any], float]]


class Screening(Protocol):
    """How a tune finds out which parameters matter before it searches. The tuner asks for runs until
    `next_step` returns None, then reads `effects`; an Effect with `matters` is what the env script may set
    (tfdoctor.tune.verify), one without is held at its `best_value` and left out. Another design (fewer
    runs) plugs in through TuneSettings.screening and SCREENINGS."""

    def next_step(self, tried: Sequence[Mapping[str, Any]], measured: Measured) -> dict[str, Any] | None:
        """The next configuration to measure; `tried`: every screening run so far (failed ones too),
        `measured`: the successful ones with their values."""
        ...

    def effects(self, measured: Measured) -> dict[str, Effect]:
        """Each parameter's measured effect (parameters with no run yet are absent)."""
        ...


@dataclass(frozen=True)
class OneAtATime:
    """From the rule seed, each parameter moved alone (screening_plan); a step that stood out by less
    than CLEAR_EFFECT is measured again, the seed to three runs (ambiguous_steps)."""

    space: Space
    seed: Mapping[str, Any]
    maximize: bool = True

    def next_step(self, tried: Sequence[Mapping[str, Any]], measured: Measured) -> dict[str, Any] | None:
        def runs(step: Mapping[str, Any]) -> int:
            return sum(1 for params in tried if all(params.get(k) == v for k, v in step.items()))

        for step in screening_plan(self.space, self.seed):
            if runs(step) < (2 if step == self.seed else 1):
                return step
        for step in ambiguous_steps(self.space, self.seed, self.effects(measured), measured):
            if runs(step) < (3 if step == self.seed else 2):
                return step
        return None

    def effects(self, measured: Measured) -> dict[str, Effect]:
        return effects(self.space, self.seed, measured, self.maximize)


SCREENINGS = {"one-at-a-time": OneAtATime}


INTRA, INTER, OMP = "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "OMP_NUM_THREADS"
RIDGE_INTER = (1, 2, 3, 4, 6, 8, 12)


def ridge_points(space: Space, base: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Points along intra × inter = the CPU budget (the intra-op range's top), where thread optima
    usually lie: the inter-op pool runs ops side by side, each with the intra-op threads, and together
    they should fill the cores, not oversubscribe them. OMP_NUM_THREADS follows intra (its rule)."""
    names = space.names()
    if INTRA not in names or INTER not in names:
        return []
    intra_p, inter_p = space.by_name(INTRA), space.by_name(INTER)
    points = []
    for inter in RIDGE_INTER:
        if not inter_p.contains(inter):
            continue
        intra = min(intra_p.high, max(intra_p.low, round(intra_p.high / inter)))
        point = {**base, INTRA: intra, INTER: inter}
        if OMP in names:
            point[OMP] = min(space.by_name(OMP).high, max(space.by_name(OMP).low, intra))
        if point not in points:
            points.append(point)
    return points
