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
from dataclasses import dataclass, replace
from typing import Any, Protocol

from tfdoctor.tune.space import Parameter, Space

SCREEN_PHASE = "screen"
INTRA, INTER, OMP = "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "OMP_NUM_THREADS"
# TensorFlow's two pools interact (intra × inter against the cores): a one-at-a-time step from the seed
# can show no effect of either where the pair matters most, so they are always searched.
POOLS = frozenset({INTRA, INTER})
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


# -- a two-level screening design ----------------------------------------------------------------
# Plackett–Burman generators: the first row of a cyclic design of N runs (N - 1 columns); the others are
# its cyclic shifts, and a last row has every factor at its low level (here: the rule seed itself).
PB_GENERATORS = {4: "++-", 8: "+++-+--", 12: "++-+++---+-", 20: "++--++++-+-+----++-",
                 24: "+++++-+-++--++--+-+----"}
MAX_FACTORS = max(PB_GENERATORS) - 1
DESIGN_NOISE = 0.02  # the noise of one run assumed before the design's spare columns say more
FLAG_SIGMAS = 2.5  # a design effect past this many standard errors is confirmed by a one-at-a-time run
MATTERS_SIGMAS = 3.0  # ... and the design and the confirmation together must pass this many
CONFIRMED_SHARE = 0.5  # ... with the step alone showing at least this share of the design's effect


def plackett_burman(factors: int) -> list[tuple[int, ...]]:
    """The rows (+1 high / -1 low per factor) of the smallest Plackett–Burman design with room for
    `factors` columns; the first `factors` columns are used, the spare ones estimate the noise. Its
    last row is every factor low. ValueError past MAX_FACTORS."""
    for runs, generator in sorted(PB_GENERATORS.items()):
        if factors <= runs - 1:
            signs = [1 if c == "+" else -1 for c in generator]
            rows = [tuple(signs[(j - i) % (runs - 1)] for j in range(runs - 1)) for i in range(runs - 1)]
            return [*rows, tuple([-1] * (runs - 1))]
    raise ValueError(f"no two-level design here for {factors} factors")


def high_level(parameter: Parameter, seed_value: Any) -> Any:
    """The value a factor takes at its high level: the choice farthest down the list from the seed's
    (the largest contrast the list offers: blocktime 1 -> 200, oneDNN 1 -> 0), for a count the
    one-at-a-time step (probe_values). None: nothing to move to."""
    if parameter.kind == "choice":
        others = [c for c in parameter.choices if c != seed_value]
        if not others:
            return None
        index = parameter.choices.index(seed_value) if seed_value in parameter.choices else 0
        return max(others, key=lambda c: abs(parameter.choices.index(c) - index))
    steps = probe_values(parameter, seed_value)
    return steps[0] if steps else None


def _log_mean(values: Sequence[float]) -> float:
    return statistics.fmean(math.log(max(v, 1e-300)) for v in values)


@dataclass(frozen=True)
class TwoLevelDesign:
    """Every parameter moved together in a Plackett–Burman design from the rule seed (low level: the seed's
    value; high: high_level). The seed is the design's all-low row, so the seven parameters of the default
    space cost 7 new runs (a one-at-a-time screening of them costs 15 and more), three cost 3. Each
    factor's effect is the mean log result of the runs where it was high minus that of the runs where it
    was low: every run counts for every factor, so its standard error is sigma * 2 / sqrt(N) — half of a
    one-at-a-time step's with N = 8 — where sigma is the larger of DESIGN_NOISE and what the spare
    columns (whose "effects" are only noise) show. A factor past FLAG_SIGMAS is confirmed by a
    one-at-a-time step from the seed (and the seed measured again): in a design this small an effect may
    be the alias of two others acting together, and the step measures it alone. It matters when the step
    shows at least CONFIRMED_SHARE of the design's effect, the same way, and the design and the step
    together (inverse-variance weighted) pass MATTERS_SIGMAS — or when the step alone passes
    MATTERS_SIGMAS of its own noise (strong interactions can turn the design's average around). The pools
    are factors too (their best step starts the narrowed search) though the search varies them whatever
    their effect."""

    space: Space
    seed: Mapping[str, Any]
    maximize: bool = True

    def factors(self) -> list[tuple[Parameter, Any]]:
        out = []
        for parameter in self.space.parameters:
            value = high_level(parameter, self.seed[parameter.name])
            if value is not None:
                out.append((parameter, value))
        return out

    def factors_by_name(self) -> list[tuple[str, Any]]:
        return [(p.name, high) for p, high in self.factors()]

    def _slides(self) -> bool:
        """OMP_NUM_THREADS on a sliding level: the rule seed sets it to the intra-op count, and both pools
        can take each other's two levels."""
        names = {p.name for p, _high in self.factors()}
        if not {INTRA, OMP} <= names or self.seed[OMP] != self.seed[INTRA]:
            return False
        omp, intra_high = self.space.by_name(OMP), high_level(self.space.by_name(INTRA), self.seed[INTRA])
        return omp.contains(intra_high)

    def point(self, high: Iterable[str]) -> dict[str, Any]:
        """The configuration with the factors named in `high` at their high level, the others at the seed's.
        OMP_NUM_THREADS slides with the intra-op count (SLIDING_LEVEL): low follows it, high differs from it."""
        high = set(high)
        out = dict(self.seed)
        for parameter, value in self.factors():
            if parameter.name in high:
                out[parameter.name] = value
        if self._slides():
            if OMP not in high:
                out[OMP] = out[INTRA]
            elif INTRA in high:
                out[OMP] = self.seed[INTRA]  # intra moved to its high level: OMP at the other one
        return out

    def design(self) -> list[dict[str, Any]]:
        factors = self.factors()
        if not factors:
            return [dict(self.seed)]
        rows = plackett_burman(len(factors))
        return [self.point(p.name for i, (p, _high) in enumerate(factors) if row[i] > 0) for row in rows]

    def _design_effects(self, measured: Measured) -> tuple[dict[str, float], float] | None:
        """Each factor's design effect (log of high over low, sign: larger is better when maximizing)
        and the noise sigma of one run; None until every row has a measurement."""
        factors = self.factors()
        if not factors:
            return {}, DESIGN_NOISE
        rows = plackett_burman(len(factors))
        points = self.design()
        logs = []
        for point in points:
            values = [v for params, v in measured if v > 0 and _same(params, point)]
            if not values:
                return None
            logs.append(_log_mean(values))
        sign = 1.0 if self.maximize else -1.0
        runs = len(rows)
        columns = [sign * sum(row[j] * y for row, y in zip(rows, logs, strict=True)) * 2 / runs
                   for j in range(runs - 1)]
        spare = columns[len(factors):]
        sigma = DESIGN_NOISE
        if spare:  # a spare column's effect has variance sigma^2 * 4 / N
            sigma = max(sigma, math.sqrt(statistics.fmean(c * c for c in spare) * runs / 4))
        return {p.name: columns[i] for i, (p, _high) in enumerate(factors)}, sigma

    def _flagged(self, measured: Measured) -> list[tuple[Parameter, Any]]:
        found = self._design_effects(measured)
        if found is None:
            return []
        design, sigma = found
        standard_error = sigma * 2 / math.sqrt(len(self.design()))
        return [(p, high) for p, high in self.factors() if abs(design[p.name]) > FLAG_SIGMAS * standard_error]

    def next_step(self, tried: Sequence[Mapping[str, Any]], measured: Measured) -> dict[str, Any] | None:
        def runs(step: Mapping[str, Any]) -> int:
            return sum(1 for params in tried if _same(params, step))

        for point in self.design():
            if runs(point) < 1:
                return point
        flagged = self._flagged(measured)
        if flagged and runs(self.seed) < 2:
            return dict(self.seed)
        for parameter, _high in flagged:
            step = self.point([parameter.name])
            if runs(step) < 1:
                return step
        return None

    def effects(self, measured: Measured) -> dict[str, Effect]:
        found = self._design_effects(measured)
        if found is None:
            return {}
        design, sigma = found
        runs = len(self.design())
        flagged = {p.name for p, _high in self._flagged(measured)}
        seed_logs = [math.log(v) for params, v in measured if v > 0 and _same(params, self.seed)]
        sign = 1.0 if self.maximize else -1.0
        result: dict[str, Effect] = {}
        for parameter, _high in self.factors():
            name, estimate = parameter.name, design[parameter.name]
            matters, combined = False, estimate
            alone = self.point([name])
            step = [math.log(v) for params, v in measured if v > 0 and _same(params, alone)]
            if name in flagged and step and seed_logs:
                confirmation = sign * (statistics.fmean(step) - statistics.fmean(seed_logs))
                # Inverse-variance weights, in units of sigma^2: the design's 4 / N, the step's
                # 1 / steps + 1 / seed runs.
                w_design = runs / 4
                w_step = 1 / (1 / len(step) + 1 / len(seed_logs))
                combined = (w_design * estimate + w_step * confirmation) / (w_design + w_step)
                # The step alone must show at least half of the design's effect, the same way: an alias
                # (two other factors acting together) shows the design an effect the step does not have.
                agrees = (confirmation * estimate > 0 and abs(confirmation) > CONFIRMED_SHARE * abs(estimate)
                          and abs(combined) > MATTERS_SIGMAS * sigma / math.sqrt(w_design + w_step))
                # Where factors interact strongly the design's average can even point the wrong way; a
                # step that alone changes the result by MATTERS_SIGMAS of its own noise matters all the
                # same (a one-at-a-time test), and its own change is what holding the value would give.
                by_itself = abs(confirmation) > MATTERS_SIGMAS * sigma / math.sqrt(w_step)
                matters = agrees or by_itself
                if not agrees:
                    combined = confirmation
            better = matters and combined > 0
            best_value = alone[name] if better else self.seed[name]
            result[name] = Effect(name, math.exp(abs(combined)) - 1, best_value,
                                  math.exp(combined) - 1 if better else 0.0, 1 + (name in flagged), matters)
        if self._slides() and OMP in result and INTRA in result and result[OMP].best_value == self.seed[OMP]:
            # OMP's low level is "as many as intra": where intra's best step goes, it follows.
            follows = result[INTRA].best_value
            if self.space.by_name(OMP).contains(follows):
                result[OMP] = replace(result[OMP], best_value=follows)
        return result


def _same(params: Mapping[str, Any], point: Mapping[str, Any]) -> bool:
    return all(params.get(k) == v for k, v in point.items())


SCREENINGS: dict[str, Any] = {"one-at-a-time": OneAtATime, "two-level": TwoLevelDesign}


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
