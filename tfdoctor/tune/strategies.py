"""The search strategies of a tune: what each search trial measures, once the two seeds are measured.
One class each, chosen by TuneSettings.strategy (the names are the benchmark's and the results files'):

- "screen" (ScreenedSearch, the default): find out which parameters matter first
  (tfdoctor.tune.screening), then the ridge intra × inter = CPU budget, the other choices of every preset
  that mattered, and ModelSearch over what mattered;
- "tpe" (ModelSearch): TPE over the whole space from the start, every n-th trial a local step from the
  best so far (the search before screening existed, kept as a baseline);
- "random" (RandomSearch): unmeasured random points (the other baseline).

A strategy holds no state of its own: everything it decides from is the tuner's records, so a resumed
tune takes up where the recorded trials leave it.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any, ClassVar, Protocol

from tfdoctor.tune.results import TrialRecord
from tfdoctor.tune.screening import POOLS, SCREEN_PHASE, Effect, ridge_points
from tfdoctor.tune.space import Space


class Tuner(Protocol):
    """What a strategy reads and calls of the tuner (tfdoctor.tune.search.Tuner), which imports this
    module: the records, the narrowed search, and running a trial."""

    settings: Any  # TuneSettings
    space: Space
    search_space: Space
    fixed: dict[str, Any]
    seeds: dict[str, dict[str, Any]]
    effects: dict[str, Effect]
    mattered: tuple[str, ...] | None
    study: Any  # optuna's
    distributions: dict[str, Any]
    last_move: tuple[dict[str, Any], dict[str, Any], dict[str, Any]] | None

    def key(self, params: Mapping[str, Any]) -> tuple[Any, ...]: ...
    def tried(self, key: tuple[Any, ...]) -> bool: ...
    def measured(self, key: tuple[Any, ...]) -> list[float]: ...
    def score(self, value: float) -> float: ...
    def search_count(self) -> int: ...
    def searched_past_seeds(self) -> int: ...
    def incumbent(self) -> dict[str, Any] | None: ...
    def run_trial(self, phase: str, params: dict[str, Any]) -> TrialRecord: ...
    def measure_and_teach(self, phase: str, params: dict[str, Any]) -> TrialRecord: ...
    def unmeasured_random(self) -> dict[str, Any] | None: ...
    def unmeasured_near(self, params: dict[str, Any]) -> dict[str, Any] | None: ...
    def pattern_move(self, incumbent: dict[str, Any]) -> dict[str, Any] | None: ...
    def next_screening_step(self) -> dict[str, Any] | None: ...
    def decide_what_matters(self) -> bool: ...


LOCAL_EVERY_NARROWED = 2  # in the narrowed space every other trial is a step from the best so far
FINAL_LOCAL_SHARE = 0.25  # the last quarter of the budget only steps from the best


class Strategy:
    """One search trial at a time: `step` measures the next one (or several) and returns why the search
    must stop, or None to go on."""

    name: ClassVar[str]
    screens: ClassVar[bool] = False  # finds out what matters first: its effects decide what may be written

    def step(self, tuner: Tuner, budget: float) -> str | None:
        raise NotImplementedError


class RandomSearch(Strategy):
    name = "random"

    def step(self, tuner: Tuner, budget: float) -> str | None:
        params = tuner.unmeasured_random()
        if params is None:
            return "space exhausted"
        tuner.run_trial("search", params)
        return None


class ModelSearch(Strategy):
    """TPE (optuna) over the tuner's search space; after the start-up trials, every n-th trial a step
    from the best so far (a pattern move after an improving step)."""

    name = "tpe"

    def local_every(self, tuner: Tuner, budget: float) -> int:
        return tuner.settings.local_every

    def step(self, tuner: Tuner, budget: float) -> str | None:
        searched = tuner.searched_past_seeds()
        every = self.local_every(tuner, budget)
        if every and searched >= tuner.settings.startup_trials and searched % every == every - 1:
            incumbent = tuner.incumbent()
            if incumbent is not None:
                return self._local_step(tuner, incumbent)
        return self._model_step(tuner)

    def _local_step(self, tuner: Tuner, incumbent: dict[str, Any]) -> str | None:
        params = tuner.pattern_move(incumbent) or tuner.unmeasured_near(incumbent)
        if params is None:
            return "space exhausted"
        tuner.measure_and_teach("search", params)
        if tuner.incumbent() == params:
            # An improving step: try the same step again next time (a pattern move).
            tuner.last_move = (params, {k: v for k, v in params.items() if incumbent[k] != v}, dict(incumbent))
        return None

    def _model_step(self, tuner: Tuner) -> str | None:
        from optuna.trial import TrialState

        trial = tuner.study.ask(tuner.distributions)
        params = {**tuner.fixed, **trial.params}
        key = tuner.key(params)
        if tuner.tried(key):
            # TPE on a discrete space re-proposes points it likes, which would measure nothing new (and a
            # failed point fails again). Its proposal says where it believes the optimum is: measure the
            # nearest point not tried yet instead (a local step the model alone takes many trials to make).
            previous = tuner.measured(key)
            if previous:
                tuner.study.tell(trial, statistics.fmean(previous))
            else:
                tuner.study.tell(trial, state=TrialState.FAIL)
            near = tuner.unmeasured_near(params)
            if near is None:
                return "space exhausted"
            tuner.measure_and_teach("search", near)
            return None
        record = tuner.run_trial("search", params)
        if record.ok:
            tuner.study.tell(trial, record.value)
        else:
            tuner.study.tell(trial, state=TrialState.FAIL)
        return None


class ScreenedSearch(ModelSearch):
    """The screening's runs until it has what it needs; then the search narrowed to what mattered: the
    ridge points, the other choices of the presets that mattered, then ModelSearch stepping from the best
    every other trial (every trial in the last quarter of the budget)."""

    name = "screen"
    screens = True

    def local_every(self, tuner: Tuner, budget: float) -> int:
        if budget - tuner.search_count() <= budget * FINAL_LOCAL_SHARE:
            return 1  # the last trials refine around the best: no more exploring
        return LOCAL_EVERY_NARROWED

    def step(self, tuner: Tuner, budget: float) -> str | None:
        if tuner.mattered is None:
            point = tuner.next_screening_step()
            if point is not None:
                tuner.measure_and_teach(SCREEN_PHASE, point)
                return None
            return None if tuner.decide_what_matters() else "no parameter changed the result"
        point = self.next_ridge_point(tuner) or self.next_level_point(tuner)
        if point is not None:
            tuner.measure_and_teach("search", point)
            return None
        return super().step(tuner, budget)

    @staticmethod
    def screened_base(tuner: Tuner) -> dict[str, Any]:
        """The one-at-a-time optimum: the rule seed with each parameter's best step."""
        return {**tuner.seeds.get("rule", {}), **{n: e.best_value for n, e in tuner.effects.items()}, **tuner.fixed}

    def next_ridge_point(self, tuner: Tuner) -> dict[str, Any] | None:
        base = self.screened_base(tuner)
        for point in ridge_points(tuner.search_space, base):
            full = {**base, **point}
            if set(full) >= set(tuner.space.names()) and not tuner.tried(tuner.key(full)):
                return full
        return None

    def next_level_point(self, tuner: Tuner) -> dict[str, Any] | None:
        """A two-level screening moves a preset between two of its choices; a preset that mattered has its
        other choices measured too, one preset at a time from the best of the screened optimum and the
        ridge, each then held at its best measured choice (a coordinate sweep). A choice the screening
        measured alone against the rule seed was judged there and is not measured again (a one-at-a-time
        screening measured them all: it sweeps nothing)."""
        start = self.screened_base(tuner)
        starts = [start, *({**start, **point} for point in ridge_points(tuner.search_space, start))]
        scored = [(statistics.fmean(v), point) for point in starts if (v := tuner.measured(tuner.key(point)))]
        base = dict(max(scored, key=lambda sc: tuner.score(sc[0]))[1]) if scored else start
        rule = tuner.seeds.get("rule", {})
        for p in tuner.search_space.parameters:
            if p.kind != "choice" or p.name in POOLS:
                continue
            sweep = [{**base, p.name: c} for c in p.choices]
            for point in sweep:
                if point[p.name] != base[p.name] and tuner.tried(tuner.key({**rule, p.name: point[p.name]})):
                    continue
                if not tuner.tried(tuner.key(point)):
                    return point
            levels = [(statistics.fmean(v), point[p.name]) for point in sweep
                      if (v := tuner.measured(tuner.key(point)))]
            if levels:
                base[p.name] = max(levels, key=lambda sc: tuner.score(sc[0]))[1]
        return None


STRATEGIES: dict[str, type[Strategy]] = {cls.name: cls for cls in (ScreenedSearch, ModelSearch, RandomSearch)}
