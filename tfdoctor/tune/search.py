"""The search: seeded with the current settings and the rule-based recommendation, it first finds out
which parameters matter (a two-level screening design from the rule seed, tfdoctor.tune.screening), then
searches only those (tfdoctor.tune.strategies: the ridge of the thread pools, the other choices of the
presets that mattered, optuna's TPE sampler and local steps around the best), then re-measures the
leading candidates and both baselines — and, where the two best are closer than the noise, measures them
again — so the best configuration is chosen on repeated measurements rather than on one lucky run — and
finally measures what the env script would change against the current settings, in paired rounds
(tfdoctor.tune.verify): a change is written only when it beats them beyond the noise.

The search strategy (TuneSettings.strategy) is one class of tfdoctor.tune.strategies: "screen" (the above,
the default), "tpe" and "random" (the baselines of benchmarks/tune_simulated.py).

Everything a trial produces goes to the results log before the next one starts; a resumed tune feeds
the logged trials back to the sampler and runs only what is missing.
"""

from __future__ import annotations

import math
import random
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tfdoctor.tune.objective import Measurement, Objective
from tfdoctor.tune.results import ResultsLog, TrialRecord
from tfdoctor.tune.screening import POOLS, SCREEN_PHASE, SCREENINGS, Effect, Screening
from tfdoctor.tune.space import Parameter, Space
from tfdoctor.tune.strategies import STRATEGIES, Strategy
from tfdoctor.tune.verify import (
    CHANGE,
    CURRENT,
    LOOKS,
    VERIFY_PHASE,
    NoisePrior,
    Pending,
    Proposal,
    Run,
    Verdict,
    decide,
)

SEED_PHASES = ("current", "rule")
SEARCH_PHASES = (*SEED_PHASES, SCREEN_PHASE, "search")  # the phases the trial budget counts
CLOSE_EXTRA_RUNS = 3  # at most this many more runs each for two leaders closer than the noise (in all)
VERIFY_RESERVE_RUNS = 3 * LOOKS[-1]  # the verdict of a change of two parameters (3 arms), both looks
NOT_MEASURED = (VERIFY_PHASE,)  # phases whose runs are no point of the search (verify runs change a subset)
ALWAYS_SEARCHED = POOLS


@dataclass(frozen=True)
class TuneSettings:
    """The bounds of one tune: trials, time, candidates re-measured and repeats."""

    budget: int | None = 40  # search trials, the two seeds included
    time_limit: float | None = None  # seconds for the whole tune, confirmation included
    leaders: int = 3  # candidates re-measured before a winner is declared
    repeats: int = 3  # measurements each candidate and baseline has after confirmation
    maximize: bool = True
    seed: int | None = None
    startup_trials: int = 8  # random trials TPE needs before it models the surface
    local_every: int = 3  # after the start-up, every n-th trial measures a neighbour of the best so far
    strategy: str = "screen"  # a key of tfdoctor.tune.strategies.STRATEGIES
    screening: str = "two-level"  # a key of tfdoctor.tune.screening.SCREENINGS (--screening)


@dataclass(frozen=True)
class Stats:
    """The measurements of one candidate, with the statistics tune compares them by."""

    values: tuple[float, ...]

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def spread(self) -> float:
        """Relative standard deviation (0 with one measurement: no spread could be seen)."""
        if self.n < 2 or self.median == 0:
            return 0.0
        return statistics.stdev(self.values) / abs(statistics.fmean(self.values))


@dataclass(frozen=True)
class Gain:
    """The winner over a baseline: relative change of medians (positive = better), and its noise."""

    ratio: float
    spread: float

    def describe(self) -> str:
        return f"{self.ratio * 100:+.1f} % ± {self.spread * 100:.1f} %"


@dataclass
class TuneResult:
    """How a tune ended: every trial, the best configuration found, and the verdict against the current
    settings. `winner` is what applying the verdict's change gives (the current settings with the written
    parameters changed); None when the verdict keeps the current settings (or nothing succeeded)."""

    records: list[TrialRecord]
    winner: dict[str, Any] | None = None
    winner_stats: Stats | None = None  # the written change's runs in the verification
    baselines: dict[str, Stats] = field(default_factory=dict)  # "current", "rule"
    gains: dict[str, Gain] = field(default_factory=dict)  # of `winner`; ratio of medians, relative spread
    stopped: str = ""  # why the search ended
    effects: dict[str, Effect] = field(default_factory=dict)  # measured one-at-a-time effects ("screen")
    mattered: tuple[str, ...] | None = None  # the parameters that changed the result; None: not screened
    candidate: dict[str, Any] | None = None  # the best configuration the search found (every parameter)
    candidate_stats: Stats | None = None
    verdict: Verdict | None = None  # None: no trial succeeded

    def summary_json(self) -> dict[str, Any]:
        """The results file's closing line (type "summary"): what a report needs besides the trials."""
        data: dict[str, Any] = {"stopped": self.stopped, "winner": self.winner,
                                "mattered": list(self.mattered) if self.mattered is not None else None,
                                "effects": {name: e.to_json() for name, e in self.effects.items()},
                                "candidate": self.candidate}
        if self.winner_stats is not None:
            data["winner_median"] = self.winner_stats.median
            data["winner_runs"] = self.winner_stats.n
        data["gains"] = {name: {"ratio": g.ratio, "spread": g.spread} for name, g in self.gains.items()}
        if self.verdict is not None:
            data.update(self.verdict.to_json())  # "verdict", "reason", "changes", "gain", "tests", ...
        return data


def params_key(space: Space, params: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(params.get(name) for name in space.names())


def _distributions(space: Space) -> dict[str, Any]:
    from optuna.distributions import CategoricalDistribution, IntDistribution

    out: dict[str, Any] = {}
    for p in space.parameters:
        if p.kind == "int":
            out[p.name] = IntDistribution(p.low, p.high, log=p.log)
        else:
            out[p.name] = CategoricalDistribution(list(p.choices))
    return out


def _random_point(space: Space, rng: random.Random) -> dict[str, Any]:
    return {p.name: rng.randint(p.low, p.high) if p.kind == "int" else rng.choice(p.choices)
            for p in space.parameters}


def _step(p: Parameter, value: int, direction: int) -> int | None:
    """The next integer one step away; on a log scale the step grows with the value (about 15 %)."""
    size = max(1, round(value * 0.15)) if p.log else 1
    target = value + direction * size
    return target if p.low <= target <= p.high else None


def _neighbours(space: Space, params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Points one step away: one integer up or down, two integers at once (a diagonal, which is how one
    walks along a ridge such as intra × inter = cores), or another choice of one categorical parameter."""
    out: list[dict[str, Any]] = []
    ints = [p for p in space.parameters if p.kind == "int"]
    for p in space.parameters:
        if p.kind == "choice":
            out.extend({**params, p.name: c} for c in p.choices if c != params[p.name])
    moves: list[dict[str, int]] = []
    for p in ints:
        moves.extend({p.name: v} for d in (-1, 1) if (v := _step(p, params[p.name], d)) is not None)
    for i, a in enumerate(ints):
        for b in ints[i + 1:]:
            for da in (-1, 1):
                for db in (-1, 1):
                    va, vb = _step(a, params[a.name], da), _step(b, params[b.name], db)
                    if va is not None and vb is not None:
                        moves.append({a.name: va, b.name: vb})
    out.extend({**params, **move} for move in moves)
    return out


class Tuner:
    def __init__(self, space: Space, objective: Objective, log: ResultsLog | None, settings: TuneSettings,
                 seeds: Mapping[str, dict[str, Any]], previous: list[TrialRecord] = (),  # type: ignore[assignment]
                 on_trial: Callable[[TrialRecord, TrialRecord | None], None] | None = None,
                 current_env: Mapping[str, str | None] | None = None, pool: Any = None) -> None:
        """`pool`: measures batches of runs on several workers at once (a shared tune's writer: its
        `measure(jobs)` takes a list of jobs, each a list of (env, launcher) run one after the other on one
        node, and returns their Measurements, job by job); None: every run here, one after the other."""
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.space, self.objective, self.log, self.settings = space, objective, log, settings
        self.seeds = dict(seeds)
        self.records: list[TrialRecord] = list(previous)
        self.on_trial = on_trial
        if settings.strategy not in STRATEGIES:
            raise ValueError(f"unknown search strategy {settings.strategy!r}")
        self.strategy: Strategy = STRATEGIES[settings.strategy]()
        self.rng = random.Random(settings.seed)
        self.started = time.monotonic()
        self.last_move: tuple[dict[str, Any], dict[str, Any], dict[str, Any]] | None = None
        self.effects: dict[str, Effect] = {}
        self.mattered: tuple[str, ...] | None = None
        self.verdict: Verdict | None = None
        # The environment the job has now, for the parameters of the space (None: unset): what the env
        # script changes is measured against it. Without it, the current seed's values stand in.
        self.pool = pool
        self.current_env = dict(current_env) if current_env is not None else (
            space.env_changes(self.seeds["current"]) if "current" in self.seeds else {})
        self.screening: Screening | None = None
        if "rule" in self.seeds:
            self.screening = SCREENINGS[settings.screening](space, self.seeds["rule"], settings.maximize)
        self._narrow(space, {})

    def _narrow(self, search_space: Space, fixed: dict[str, Any]) -> None:
        """Search `search_space` from now on, the other parameters held at `fixed`; a new TPE model learns
        every trial so far that agrees with `fixed`."""
        import optuna

        self.search_space, self.fixed = search_space, fixed
        self.distributions = _distributions(search_space)
        sampler = optuna.samplers.TPESampler(seed=self.settings.seed, multivariate=True, group=False,
                                             n_startup_trials=self.settings.startup_trials)
        self.study = optuna.create_study(direction="maximize" if self.settings.maximize else "minimize",
                                         sampler=sampler)
        for record in self.records:
            if record.phase in SEARCH_PHASES:
                self._teach(record)

    # -- bookkeeping -------------------------------------------------------------------------------
    def score(self, value: float) -> float:
        return value if self.settings.maximize else -value

    def _teach(self, record: TrialRecord) -> None:
        from optuna.trial import TrialState, create_trial

        if any(record.params.get(k) != v for k, v in self.fixed.items()):
            return  # measured with a parameter the search now holds elsewhere
        params = {k: record.params.get(k) for k in self.search_space.names()}
        if not all(p.contains(params[p.name]) for p in self.search_space.parameters):
            return  # logged under a different space (a narrowed resume): the sampler cannot use it
        if record.ok:
            trial = create_trial(params=params, distributions=self.distributions, value=record.value)
        else:
            trial = create_trial(params=params, distributions=self.distributions, state=TrialState.FAIL)
        self.study.add_trial(trial)

    def measure_and_teach(self, phase: str, params: dict[str, Any]) -> TrialRecord:
        """Measure `params` and let the sampler learn the result."""
        record = self.run_trial(phase, params)
        self._teach(record)
        return record

    def key(self, params: Mapping[str, Any]) -> tuple[Any, ...]:
        return params_key(self.space, params)

    def search_count(self) -> int:
        return sum(1 for r in self.records if r.phase in SEARCH_PHASES)

    def searched_past_seeds(self) -> int:
        return self.search_count() - len(SEED_PHASES)

    def measured(self, key: tuple[Any, ...]) -> list[float]:
        """Values of one configuration, seeds and confirmations included ('current' runs the unchanged
        environment, so it is its own configuration)."""
        return [r.value for r in self.records if r.ok and r.phase != "current" and r.role != "current"
                and r.phase not in NOT_MEASURED and params_key(self.space, r.params) == key]  # type: ignore[misc]

    def incumbent(self) -> dict[str, Any] | None:
        """The configuration with the best mean of its measurements (seeds included, 'current' not)."""
        leaders = self.leaders(1)
        return leaders[0] if leaders else None

    def tried(self, key: tuple[Any, ...]) -> bool:
        return any(r.phase != "current" and r.role != "current" and r.phase not in NOT_MEASURED
                   and params_key(self.space, r.params) == key for r in self.records)

    def best(self) -> TrialRecord | None:
        ok = [r for r in self.records if r.ok and r.phase not in NOT_MEASURED]
        return max(ok, key=lambda r: self.score(r.value)) if ok else None  # type: ignore[arg-type]

    def _mean_seconds(self) -> float:
        seconds = [r.seconds for r in self.records if r.seconds > 0]
        return statistics.fmean(seconds) if seconds else 0.0

    def _time_left(self) -> float:
        if self.settings.time_limit is None:
            return math.inf
        return self.settings.time_limit - (time.monotonic() - self.started)

    def _confirm_runs_planned(self) -> int:
        """Confirmation runs and the verdict's."""
        return (self.settings.leaders + 1) * max(0, self.settings.repeats - 1) + self._verify_runs_needed()

    def _verify_runs_needed(self) -> int:
        """The verdict's runs at most (every arm, both looks) for the best configuration so far."""
        if self.settings.time_limit is None:
            return VERIFY_RESERVE_RUNS  # no time to plan for: spare the work
        found = self._candidate()
        arms = len(self.proposal(found[0]).arms()) if found is not None else 3
        return max(VERIFY_RESERVE_RUNS, arms * LOOKS[-1])

    def _time_for_confirming(self) -> bool:
        """Under a time limit the verdict comes first: confirmation runs only while the verdict still fits
        after it."""
        return self._time_left() > self._mean_seconds() * (1 + self._verify_runs_needed())

    # -- running -----------------------------------------------------------------------------------
    def _trial_env(self, phase: str, params: Mapping[str, Any],
                   role: str = "") -> tuple[dict[str, str | None], tuple[str, ...]]:
        if phase == "current" or role == "current":
            return {}, ()
        if phase == VERIFY_PHASE:  # `params` holds only what the env script would change
            return self._changes_env(params)
        return self.space.env_changes(params), self.space.launcher(params)

    def run_trial(self, phase: str, params: dict[str, Any], role: str = "",
                  verify_round: int | None = None) -> TrialRecord:
        env, launcher = self._trial_env(phase, params, role)
        return self._record(phase, params, role, verify_round, env, self.objective.measure(env, launcher))

    def run_batch(self, jobs: list[list[tuple[str, dict[str, Any], str, int | None]]]) -> None:
        """Each job's runs (phase, params, role, round) one after the other; the jobs at once on the pool's
        workers, or here one after the other without a pool. Recorded job by job, in the order given."""
        jobs = [job for job in jobs if job]
        if self.pool is None or not jobs:
            for job in jobs:
                for phase, params, role, verify_round in job:
                    self.run_trial(phase, params, role, verify_round)
            return
        envs = [[self._trial_env(phase, params, role) for phase, params, role, _round in job] for job in jobs]
        results = self.pool.measure(envs)
        for job, job_envs, measurements in zip(jobs, envs, results, strict=True):
            for (phase, params, role, verify_round), (env, _launcher), measurement in zip(
                    job, job_envs, measurements, strict=True):
                self._record(phase, params, role, verify_round, env, measurement)

    def _record(self, phase: str, params: dict[str, Any], role: str, verify_round: int | None,
                env: dict[str, str | None], measurement: Measurement) -> TrialRecord:
        record = TrialRecord(len(self.records), phase, dict(params), measurement.status, measurement.value,
                             round(measurement.seconds, 3), env, measurement.error, role, verify_round)
        if self.log is not None:
            self.log.append(record)
        self.records.append(record)
        if self.on_trial is not None:
            self.on_trial(record, self.best())
        return record

    def search(self) -> str:
        """Run search trials until the budget or the time is used up; returns why it stopped."""
        done_phases = {r.phase for r in self.records}
        budget = self.settings.budget if self.settings.budget is not None else math.inf
        while self.search_count() < budget:
            # Keep time to confirm the leaders and measure the verdict, but never more than half of a short
            # time budget: a tune that spends its minutes re-measuring has searched nothing.
            reserve = self._mean_seconds() * (self._confirm_runs_planned() + 1)
            if self.settings.time_limit is not None:
                reserve = min(reserve, 0.5 * self.settings.time_limit)
            if self._time_left() <= reserve:
                return "time limit"
            pending = [name for name in SEED_PHASES if name in self.seeds and name not in done_phases]
            if pending:
                name = pending[0]
                done_phases.add(name)
                self.measure_and_teach(name, self.seeds[name])
                continue
            stop = self.strategy.step(self, budget)
            if stop is not None:
                return stop
        return "budget"

    # -- finding out what matters ------------------------------------------------------------------
    def next_screening_step(self) -> dict[str, Any] | None:
        """The screening's next run (tfdoctor.tune.screening), None when it has what it needs."""
        if self.screening is None:
            return None
        tried = [r.params for r in self.records if r.phase in ("rule", SCREEN_PHASE)]
        return self.screening.next_step(tried, self._screen_measurements())

    def _screen_measurements(self) -> list[tuple[dict[str, Any], float]]:
        return [(r.params, r.value) for r in self.records
                if r.ok and r.phase in ("rule", SCREEN_PHASE)]  # type: ignore[misc]

    def decide_what_matters(self, measure: bool = True) -> bool:
        """Narrow the search to the parameters whose steps changed the result; hold the others at the
        rule seed's value (or a step measured clearly better). False when nothing changed the result.
        With `measure`, the one-at-a-time optimum is measured once (a replay measures nothing)."""
        rule = self.seeds.get("rule")
        if rule is None or self.screening is None:
            self.mattered = tuple(self.space.names())
            return True
        self.effects = self.screening.effects(self._screen_measurements())
        self.mattered = tuple(n for n in self.space.names()
                              if (n in self.effects and self.effects[n].matters) or n in ALWAYS_SEARCHED)
        fixed = {n: (self.effects[n].best_value if n in self.effects else rule[n])
                 for n in self.space.names() if n not in self.mattered}
        if not self.mattered:
            return False
        self._narrow(Space(tuple(p for p in self.space.parameters if p.name in self.mattered)), fixed)
        # Where each parameter's best step is, together: the one-at-a-time optimum, measured once.
        combined = {**rule, **{n: e.best_value for n, e in self.effects.items()}}
        if (measure and not self.tried(params_key(self.space, combined))
                and self.search_count() < (self.settings.budget or math.inf)):
            self.measure_and_teach("search", combined)
        return True

    def _recover_screening(self) -> None:
        """A resumed tune whose screening had finished: what mattered, from the recorded runs (the search
        loop that decided it may never run again when the budget is already spent)."""
        if (self.strategy.screens and self.mattered is None and self.screening is not None
                and any(r.phase in (SCREEN_PHASE, "search") for r in self.records)
                and self.next_screening_step() is None):
            self.decide_what_matters(measure=False)

    def unmeasured_random(self) -> dict[str, Any] | None:
        seen = {params_key(self.space, r.params) for r in self.records
                if r.phase != "current" and r.phase not in NOT_MEASURED}
        for _ in range(10_000):
            point = {**self.fixed, **_random_point(self.search_space, self.rng)}
            if params_key(self.space, point) not in seen:
                return point
        return None

    def pattern_move(self, incumbent: dict[str, Any]) -> dict[str, Any] | None:
        """After a step from A to B improved, B + (B - A), if it is in the space and unmeasured."""
        if self.last_move is None or self.last_move[0] != incumbent:
            return None
        to, changed, origin = self.last_move
        self.last_move = None
        point = dict(incumbent)
        for name in changed:
            if name not in self.search_space.names():
                return None  # a step that reset a held parameter (a random point): nothing to repeat
            p = self.search_space.by_name(name)
            if p.kind != "int":
                return None
            point[name] = to[name] + (to[name] - origin[name])
            if not p.contains(point[name]):
                return None
        if self.tried(params_key(self.space, point)):
            return None
        return point

    def unmeasured_near(self, params: dict[str, Any]) -> dict[str, Any] | None:
        """An unmeasured point at the smallest distance from `params` (one step in one parameter, then
        two, …), chosen at random among equals; a random unmeasured point past distance 3."""
        seen = {params_key(self.space, r.params) for r in self.records
                if r.phase != "current" and r.role != "current" and r.phase not in NOT_MEASURED}
        if len(seen) >= self.space.size():
            return None
        frontier = [params]
        visited = {params_key(self.space, params)}
        for _distance in range(3):
            ring = []
            for point in frontier:
                for neighbour in _neighbours(self.search_space, point):
                    key = params_key(self.space, neighbour)
                    if key not in visited:
                        visited.add(key)
                        ring.append(neighbour)
            fresh = [p for p in ring if params_key(self.space, p) not in seen]
            if fresh:
                return self.rng.choice(fresh)
            frontier = ring
        for _ in range(10_000):
            point = {**self.fixed, **_random_point(self.search_space, self.rng)}
            if params_key(self.space, point) not in seen:
                return point
        return None

    def leaders(self, count: int | None = None) -> list[dict[str, Any]]:
        """The best distinct configurations by their mean measured value."""
        by_key: dict[tuple[Any, ...], dict[str, Any]] = {}
        for record in self.records:
            if record.ok and record.phase in ("rule", SCREEN_PHASE, "search"):
                by_key.setdefault(params_key(self.space, record.params), record.params)
        ranked = sorted(by_key.items(), key=lambda kv: -self.score(statistics.fmean(self.measured(kv[0]))))
        return [params for _key, params in ranked[: count or self.settings.leaders]]

    def confirm(self) -> None:
        """Bring each leader and the rule-based seed to `repeats` measurements, most promising first (the
        current settings are measured by the verdict, paired with the change)."""
        repeats = self.settings.repeats
        plan: list[tuple[str, dict[str, Any]]] = [("leader", p) for p in self.leaders()]
        if "rule" in self.seeds:
            plan.append(("rule", self.seeds["rule"]))
        if self.pool is not None:
            self._confirm_shared(plan, repeats)
            return
        for _round in range(repeats):
            for role, params in plan:
                values = self.measured(params_key(self.space, params))
                attempts = sum(1 for r in self.records if r.phase == "confirm" and r.role == role
                               and params_key(self.space, r.params) == params_key(self.space, params))
                if len(values) >= repeats or attempts >= repeats:
                    continue
                if not self._time_for_confirming():
                    return
                self.run_trial("confirm", params, role)

    def _confirm_shared(self, plan: list[tuple[str, dict[str, Any]]], repeats: int) -> None:
        """confirm() on the pool: every run still missing, all at once, one run a job (a shared tune has no
        time limit to keep to)."""
        missing = []
        for role, params in plan:
            key = params_key(self.space, params)
            attempts = sum(1 for r in self.records if r.phase == "confirm" and r.role == role
                           and params_key(self.space, r.params) == key)
            missing.append(max(0, min(repeats - len(self.measured(key)), repeats - attempts)))
        jobs = []
        for _round in range(repeats):  # in the order confirm() measures them: a run of each, round by round
            for index, (role, params) in enumerate(plan):
                if missing[index] > 0:
                    missing[index] -= 1
                    jobs.append([("confirm", params, role, None)])
        self.run_batch(jobs)

    def confirm_close(self) -> None:
        """The two best leaders closer than the noise can tell apart: measure both again (alternately)
        until they separate, each to at most `repeats` + CLOSE_EXTRA_RUNS runs in all (so a resumed tune
        does not start over). Noise is estimated from every configuration measured more than once."""
        limit = self.settings.repeats + CLOSE_EXTRA_RUNS
        for _extra in range(CLOSE_EXTRA_RUNS):
            ranked = sorted(((p, self.measured(params_key(self.space, p))) for p in self.leaders()),
                            key=lambda pv: -self.score(statistics.median(pv[1])) if pv[1] else math.inf)
            if len(ranked) < 2 or not ranked[1][1]:
                return
            (first, a), (second, b) = ranked[0], ranked[1]
            if max(len(a), len(b)) >= limit:
                return
            gap = abs(math.log(statistics.median(a) / statistics.median(b)))
            if gap > 2.0 * self._noise() * math.sqrt(1.0 / len(a) + 1.0 / len(b)):
                return
            if self.pool is not None:
                self.run_batch([[("confirm", first, "leader", None)], [("confirm", second, "leader", None)]])
                continue
            for params in (first, second):
                if not self._time_for_confirming():
                    return
                self.run_trial("confirm", params, "leader")

    def _noise_prior(self) -> NoisePrior:
        """Pooled standard deviation of log(value) over configurations measured more than once, and its
        degrees of freedom."""
        groups: dict[tuple[Any, ...], list[float]] = {}
        for record in self.records:
            if (record.ok and record.value and record.value > 0 and record.phase != "current"
                    and record.role != "current" and record.phase not in NOT_MEASURED):
                groups.setdefault(params_key(self.space, record.params), []).append(math.log(record.value))
        squares, freedom = 0.0, 0
        for values in groups.values():
            if len(values) > 1:
                mean = statistics.fmean(values)
                squares += sum((v - mean) ** 2 for v in values)
                freedom += len(values) - 1
        return NoisePrior(math.sqrt(squares / freedom) if freedom else 0.0, freedom)

    def _noise(self) -> float:
        prior = self._noise_prior()
        return max(0.01, prior.sigma) if prior.df else 0.02

    # -- the verdict -------------------------------------------------------------------------------
    def _candidate(self) -> tuple[dict[str, Any], Stats] | None:
        """The leader with the best median of its measurements."""
        candidates = []
        for params in self.leaders():
            values = self.measured(params_key(self.space, params))
            if values:
                candidates.append((params, Stats(tuple(values))))
        if not candidates:
            return None
        return max(candidates, key=lambda c: self.score(c[1].median))

    def _changes_env(self, changes: Mapping[str, Any]) -> tuple[dict[str, str | None], tuple[str, ...]]:
        """The environment and command prefix of a partial assignment: what the env script would change."""
        env: dict[str, str | None] = {}
        launcher: list[str] = []
        for p in self.space.parameters:
            if p.name in changes:
                if p.target == "env":
                    env[p.name] = p.env_value(changes[p.name])
                else:
                    launcher.extend(p.launchers.get(str(changes[p.name]), ()))
        return env, tuple(launcher)

    def _differs(self, p: Parameter, value: Any) -> bool:
        if p.target == "env":
            return p.env_value(value) != self.current_env.get(p.name)
        return bool(p.launchers.get(str(value)))  # the current settings run under no launcher

    def proposal(self, candidate: Mapping[str, Any]) -> Proposal:
        """Of the candidate's settings that differ from the current ones: left out (screening measured no
        effect; the pools excepted, searched for their interaction) or tested (every other one)."""
        found = self.effects
        if not found and self.screening is not None and self.strategy.screens:
            found = self.screening.effects(self._screen_measurements())  # a screening cut short
        tested: dict[str, Any] = {}
        left_out: list[str] = []
        for p in self.space.parameters:
            value = candidate[p.name]
            if not self._differs(p, value):
                continue
            effect = found.get(p.name)
            if effect is not None and not effect.matters and p.name not in ALWAYS_SEARCHED:
                left_out.append(p.name)
            else:
                tested[p.name] = value
        return Proposal(tested, tuple(left_out))

    def _verify_runs(self) -> list[Run]:
        return [Run(r.round, dict(r.params), r.value if r.ok else None) for r in self.records
                if r.phase == VERIFY_PHASE and r.round is not None]

    def decision(self) -> Verdict | Pending | None:
        """The verdict from the runs recorded so far, or the next verification run (None: no candidate)."""
        found = self._candidate()
        if found is None:
            return None
        return decide(self.proposal(found[0]), self._verify_runs(), self.settings.maximize, self._noise_prior())

    def verify(self) -> None:
        """Measure what the env script would change against the current settings until decided."""
        while True:
            state = self.decision()
            if not isinstance(state, Pending):
                self.verdict = state
                return
            if self.pool is not None:
                self.run_batch(self._rounds_to_next_look())
                continue
            if self._time_left() <= self._mean_seconds():
                self.verdict = self._unmeasured()
                return
            self.run_trial(VERIFY_PHASE, state.changes, CURRENT if not state.changes else CHANGE, state.round)

    def _rounds_to_next_look(self) -> list[list[tuple[str, dict[str, Any], str, int | None]]]:
        """The verification runs the verdict needs before it can look again, a job per paired round (a round's
        arms run one after the other on one node, so the pair stays a pair). Found by asking the verdict for
        its next run as if each run asked for had been measured (a placeholder value), until it would look."""
        found = self._candidate()
        if found is None:
            return []
        proposal, prior = self.proposal(found[0]), self._noise_prior()
        runs = self._verify_runs()
        real_rounds = {run.round for run in runs}
        by_round: dict[int, list[tuple[str, dict[str, Any], str, int | None]]] = {}
        start = self._complete_rounds(proposal, runs)
        for _step in range(200):  # a bound: LOOKS[-1] rounds of a few arms at most
            state = decide(proposal, runs, self.settings.maximize, prior)
            if not isinstance(state, Pending):
                break
            if state.round not in by_round and state.round not in real_rounds and len(by_round) >= LOOKS[-1]:
                break
            by_round.setdefault(state.round, []).append(
                (VERIFY_PHASE, dict(state.changes), CURRENT if not state.changes else CHANGE, state.round))
            runs = [*runs, Run(state.round, dict(state.changes), 1.0)]
            complete = self._complete_rounds(proposal, runs)
            if complete > start and complete in LOOKS:
                break
        return [by_round[number] for number in sorted(by_round)]

    @staticmethod
    def _complete_rounds(proposal: Proposal, runs: list[Run]) -> int:
        """The paired rounds of `runs` (measured or planned) that hold every arm of the proposal."""
        from tfdoctor.tune.verify import _rounds, arm_key

        keys = [arm_key(a) for a in proposal.arms()]
        return sum(1 for arms_run in _rounds(runs).values() if all(k in arms_run for k in keys))

    def _unmeasured(self) -> Verdict:
        """The verdict of a change the time limit left unmeasured (or measured in part)."""
        found = self._candidate()
        assert found is not None
        return Verdict(False, "the time limit came before the change was measured against the current settings "
                       "(give more --time)", left_out=self.proposal(found[0]).left_out)

    def result(self, stopped: str) -> TuneResult:
        result = TuneResult(self.records, stopped=stopped, effects=dict(self.effects), mattered=self.mattered)
        found = self._candidate()
        if found is None:
            return result
        result.candidate, result.candidate_stats = found
        verdict = self.verdict
        if verdict is None:
            state = self.decision()
            verdict = state if isinstance(state, Verdict) else self._unmeasured()
        result.verdict = verdict
        if result.mattered is not None:
            # A pool searched only for its interaction counts when its drop-one comparison showed it.
            result.mattered = tuple(
                n for n in result.mattered
                if n not in ALWAYS_SEARCHED or (n in self.effects and self.effects[n].matters)
                or n in verdict.changes)
        if not verdict.apply:
            return result
        runs = [r.value for r in self.records if r.ok and r.phase == VERIFY_PHASE and r.params == verdict.changes]
        stats = Stats(tuple(runs))  # type: ignore[arg-type]
        result.winner = {**self.seeds.get("current", found[0]), **verdict.changes}
        result.winner_stats = stats
        if "rule" in self.seeds:
            rule_values = self.measured(params_key(self.space, self.seeds["rule"]))
            if rule_values:
                result.baselines["rule"] = Stats(tuple(rule_values))
        current = [r.value for r in self.records if r.ok and r.phase == VERIFY_PHASE and r.role == CURRENT]
        result.baselines["current"] = Stats(tuple(current))  # type: ignore[arg-type]
        for name, base in result.baselines.items():
            if base.median == 0:
                continue
            ratio = stats.median / base.median - 1 if self.settings.maximize else base.median / stats.median - 1
            result.gains[name] = Gain(ratio, math.hypot(stats.spread, base.spread))
        return result

    def run(self) -> TuneResult:
        self._recover_screening()
        stopped = self.search()
        if self.settings.repeats > 1:
            self.confirm()
            if self.strategy.screens:
                self.confirm_close()
        self.verify()
        return self.result(stopped)

    def replay(self, stopped: str = "") -> TuneResult:
        """The result of the recorded trials, measuring nothing (a finished tune resumed without more budget)."""
        self._recover_screening()
        return self.result(stopped)
