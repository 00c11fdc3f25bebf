"""The two-level screening design (tfdoctor.tune.screening.TwoLevelDesign): fewer runs than one per
parameter, effects attributed, and a found effect confirmed by a run of its own."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping

import pytest
from support.tune_setup import INTRA, thread_space, tune_command

from tfdoctor.derive.cpu_budget import CpuBudget
from tfdoctor.tune.screening import TwoLevelDesign, high_level, plackett_burman
from tfdoctor.tune.space import apply_space_file, default_space, rule_based_settings

BUDGET = CpuBudget(cpus=8, source="test", host_cpus=8, allowed=tuple(range(8)), physical_cores=8, sockets=1)


def _space():
    return default_space(BUDGET)


@pytest.mark.parametrize("factors, runs", [(1, 4), (3, 4), (4, 8), (5, 8), (7, 8), (11, 12), (12, 20), (19, 20),
                                           (23, 24)])
def test_the_design_is_orthogonal_and_ends_with_every_factor_low(factors, runs):
    rows = plackett_burman(factors)
    assert len(rows) == runs
    assert rows[-1] == (-1,) * (runs - 1)
    for i in range(runs - 1):
        assert sum(row[i] for row in rows) == 0  # each column: half high, half low
        for j in range(i):
            assert sum(row[i] * row[j] for row in rows) == 0


def test_more_factors_than_the_largest_design_is_an_error():
    with pytest.raises(ValueError):
        plackett_burman(24)


def _with_27_parameters(tmp_path, argv: list[str]) -> list[str]:
    """The command of tune_command with 20 more parameters in its space file: 27, past the largest design."""
    extra = "".join(f"[parameters.EXTRA_{i}]\nvalues = [1, 2]\n" for i in range(20))
    (tmp_path / "space.toml").write_text((tmp_path / "space.toml").read_text() + extra)
    return argv


def test_a_space_too_large_for_the_design_is_a_usage_error(tmp_path, monkeypatch, capsys):
    from tfdoctor.cli import main

    argv = _with_27_parameters(tmp_path, tune_command(tmp_path, monkeypatch, None, "--screening", "two-level"))
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert "--screening two-level screens at most 23 parameters; the space has 27" in capsys.readouterr().err
    assert not (tmp_path / "r.jsonl").exists()  # refused before anything was written


def test_the_high_level_is_the_choice_farthest_from_the_seed():
    space = _space()
    seed = rule_based_settings(BUDGET, space)
    assert high_level(space.by_name("KMP_BLOCKTIME"), "1") == "200"
    assert high_level(space.by_name("TF_ENABLE_ONEDNN_OPTS"), "1") == "0"
    assert high_level(space.by_name("OMP_PROC_BIND"), "unset") == "false"
    assert high_level(space.by_name("OMP_NUM_THREADS"), seed["OMP_NUM_THREADS"]) == 3  # sqrt(1 * 8)


def _screen(design: TwoLevelDesign, truth, seed: int = 0, noise: float = 0.02):
    rng = random.Random(seed)
    tried: list[Mapping] = [dict(design.seed)]
    measured = [(dict(design.seed), truth(design.seed) * math.exp(rng.gauss(0, noise)))]
    while (step := design.next_step(tried, measured)) is not None:
        tried.append(step)
        measured.append((step, truth(step) * math.exp(rng.gauss(0, noise))))
    return tried, design.effects(measured)


def test_seven_parameters_that_do_nothing_cost_seven_runs_and_none_matters():
    space = _space()
    design = TwoLevelDesign(space, rule_based_settings(BUDGET, space))
    for seed in range(10):
        tried, found = _screen(design, lambda p: 100.0, seed)
        assert len(tried) == 8, seed  # the rule seed (the design's all-low row) and 7 new runs
        assert set(found) == set(space.names())
        assert not any(e.matters for e in found.values()), seed


def test_an_effect_is_found_confirmed_and_its_better_value_kept():
    space = _space()
    rule = rule_based_settings(BUDGET, space)
    design = TwoLevelDesign(space, rule)

    def truth(p):  # blocktime 200 costs 15 %, oneDNN off gains 12 %
        return 100.0 * (0.85 if p["KMP_BLOCKTIME"] == "200" else 1.0) * (
            1.12 if p["TF_ENABLE_ONEDNN_OPTS"] == "0" else 1.0)

    for seed in range(10):
        tried, found = _screen(design, truth, seed)
        # 8 design rows, the seed again, and one confirming step for each of the two effects (and, now and
        # then, for a noise excursion past 2.5 standard errors among the five other factors)
        assert 11 <= len(tried) <= 12, seed
        assert {**rule, "KMP_BLOCKTIME": "200"} in tried and {**rule, "TF_ENABLE_ONEDNN_OPTS": "0"} in tried
        assert {n for n, e in found.items() if e.matters} == {"KMP_BLOCKTIME", "TF_ENABLE_ONEDNN_OPTS"}, seed
        assert found["KMP_BLOCKTIME"].best_value == "1"  # the high level was worse: the seed's value stays
        assert found["TF_ENABLE_ONEDNN_OPTS"].best_value == "0"
        assert found["TF_ENABLE_ONEDNN_OPTS"].best_gain == pytest.approx(0.12, abs=0.04)


def test_an_alias_of_two_factors_acting_together_is_not_confirmed():
    """In a design of 8 runs a factor's column is the product of two others': an interaction of those two
    shows up as the third one's effect. The one-at-a-time confirmation measures it alone and rejects it."""
    space = apply_space_file(_space(), {"parameters": {n: {"drop": True} for n in (
        "OMP_NUM_THREADS", "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS")}})
    rule = rule_based_settings(BUDGET, space)
    design = TwoLevelDesign(space, rule)
    names = [p.name for p, _high in design.factors()]
    rows = plackett_burman(len(names))
    # find a column that is the product of two others (resolution III)
    alias = next((k, i, j) for k in range(len(names)) for i in range(len(names)) for j in range(i)
                 if k not in (i, j) and all(r[k] == -r[i] * r[j] for r in rows))
    k, i, j = alias
    highs = dict(design.factors_by_name())

    def truth(p):  # only the two together do something: a 20 % loss
        both = p[names[i]] == highs[names[i]] and p[names[j]] == highs[names[j]]
        return 100.0 * (0.8 if both else 1.0)

    flagged_alias = 0
    for seed in range(10):
        tried, found = _screen(design, truth, seed)
        flagged_alias += {**rule, names[k]: highs[names[k]]} in tried
        assert not found[names[k]].matters, seed
    assert flagged_alias > 0  # the design saw an effect of the third factor: the confirmation said no


def test_the_command_screens_with_the_two_level_design_when_asked(tmp_path, monkeypatch, capsys):
    """`--screening two-level`: the seven parameters are screened in 7 runs (the rule seed is the eighth
    row) and more only to confirm an effect; the intra-op pool, the only parameter the job depends on,
    is the one written."""
    pytest.importorskip("optuna")
    from tfdoctor.cli import main
    from tfdoctor.tune.results import load_results

    with pytest.raises(SystemExit) as exit_:
        main(tune_command(tmp_path, monkeypatch, INTRA, "--budget", "16", "--screening", "two-level"))
    assert exit_.value.code == 0
    _header, records = load_results(tmp_path / "r.jsonl")
    screen = [r for r in records if r.phase == "screen"]
    assert 7 <= len(screen) <= 9  # the design, then the seed again and the intra-op step to confirm
    assert f"verdict: change {INTRA}=4 (everything else as it is now)" in capsys.readouterr().out


def test_a_resumed_tune_screens_with_the_design_it_was_recorded_with(tmp_path, monkeypatch, capsys):
    pytest.importorskip("optuna")
    from tfdoctor.cli import main
    from tfdoctor.tune.results import load_results

    with pytest.raises(SystemExit):
        main(tune_command(tmp_path, monkeypatch, INTRA, "--budget", "9", "--screening", "two-level"))
    header, first = load_results(tmp_path / "r.jsonl")
    assert header["screening"] == "two-level"
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(["tune", "--resume", "r.jsonl", "--budget", "16"])
    assert exit_.value.code == 0
    _header, records = load_results(tmp_path / "r.jsonl")
    assert [r.phase for r in first].count("screen") == 7  # the design, within the first budget of 9
    later = [r for r in records[len(first):] if r.phase == "screen"]
    # The continuation only confirms what the design flagged (the seed again, the intra-op step): one at a
    # time it would step through every other blocktime choice, 0, 10 and 50.
    assert len(later) <= 3 and not any(r.params["KMP_BLOCKTIME"] in ("0", "10", "50") for r in later)


def test_openmp_threads_slide_with_the_intra_op_threads():
    """OMP_NUM_THREADS matters relative to the intra-op threads: on fixed levels its effect averages out over
    intra's two levels. On a sliding level its low is "as many as intra" and its high "another count", in
    every row — so a job that only pays for OMP differing from intra shows it as OMP's effect."""
    space = _space()
    rule = rule_based_settings(BUDGET, space)
    design = TwoLevelDesign(space, rule)
    names = [p.name for p, _high in design.factors()]
    omp, intra = names.index("OMP_NUM_THREADS"), names.index("TF_NUM_INTRAOP_THREADS")
    for row, point in zip(plackett_burman(len(names)), design.design(), strict=True):
        assert (point["OMP_NUM_THREADS"] == point["TF_NUM_INTRAOP_THREADS"]) == (row[omp] < 0), point
        assert point["TF_NUM_INTRAOP_THREADS"] == (3 if row[intra] > 0 else rule["TF_NUM_INTRAOP_THREADS"])

    def truth(p):  # 20 % lost when the two pools differ, whatever their sizes
        return 100.0 * (0.8 if p["OMP_NUM_THREADS"] != p["TF_NUM_INTRAOP_THREADS"] else 1.0)

    for seed in range(10):
        tried, found = _screen(design, truth, seed)
        assert {n for n, e in found.items() if e.matters} == {"OMP_NUM_THREADS"}, seed
        assert {**rule, "OMP_NUM_THREADS": 3} in tried  # confirmed alone: intra at the seed's 8, OMP 3
        # not better at its high level: where intra's best value goes, OMP follows
        assert found["OMP_NUM_THREADS"].best_value == found["TF_NUM_INTRAOP_THREADS"].best_value


class _Job:
    """An in-process objective from a function of the trial's parameters, with 2 % seeded noise."""

    def __init__(self, space, truth, seed: int) -> None:
        self.space, self.truth, self.rng = space, truth, random.Random(seed)

    def describe(self) -> dict:
        return {"fake": "design"}

    def measure(self, env_changes, launcher=()):
        from tfdoctor.tune.objective import Measurement

        params = {p.name: (int(v) if p.kind == "int" else v) if (v := env_changes.get(p.name)) is not None
                  else (p.low if p.kind == "int" else p.choices[0]) for p in self.space.parameters}
        return Measurement("ok", self.truth(params) * math.exp(self.rng.gauss(0, 0.02)), 0.0)


def test_a_preset_that_mattered_has_its_other_choices_searched():
    """The design sees KMP_AFFINITY at two choices (compact, none: none costs 10 %); the best one, scatter
    (+15 %), is neither: the best configuration found and the written change have it."""
    pytest.importorskip("optuna")
    from tfdoctor.tune.search import Tuner, TuneSettings
    from tfdoctor.tune.space import current_settings

    space = thread_space(BUDGET)
    levels = {"granularity=fine,compact,1,0": 1.0, "none": 0.9, "granularity=fine,scatter": 1.15, "unset": 1.0}

    def truth(p):
        return 100.0 * levels[p["KMP_AFFINITY"]]

    for seed in range(3):
        seeds = {"current": current_settings(space, {}, BUDGET), "rule": rule_based_settings(BUDGET, space)}
        result = Tuner(space, _Job(space, truth, seed), None, TuneSettings(budget=25, seed=seed), seeds,
                       current_env={}).run()
        assert result.effects["KMP_AFFINITY"].matters, seed
        swept = {r.params["KMP_AFFINITY"] for r in result.records if r.phase == "search"}
        assert {"granularity=fine,scatter", "unset"} <= swept, seed
        assert result.candidate["KMP_AFFINITY"] == "granularity=fine,scatter", seed
        assert result.verdict.changes.get("KMP_AFFINITY") == "granularity=fine,scatter", seed


def test_the_strategies_keep_their_names_and_an_unknown_one_is_refused():
    pytest.importorskip("optuna")
    from tfdoctor.tune.search import Tuner, TuneSettings
    from tfdoctor.tune.strategies import STRATEGIES, ModelSearch, RandomSearch, ScreenedSearch

    assert {"screen": ScreenedSearch, "tpe": ModelSearch, "random": RandomSearch} == STRATEGIES
    assert [cls.screens for cls in STRATEGIES.values()] == [True, False, False]
    assert TuneSettings().strategy == "screen" and TuneSettings().screening == "two-level"
    with pytest.raises(ValueError, match="unknown search strategy 'grid'"):
        Tuner(_space(), _Job(_space(), lambda p: 1.0, 0), None, TuneSettings(strategy="grid"), {})


def test_a_space_too_large_for_the_design_is_screened_one_at_a_time_by_default(tmp_path, monkeypatch, capsys):
    pytest.importorskip("optuna")
    from tfdoctor.cli import main
    from tfdoctor.tune.results import load_results

    argv = _with_27_parameters(tmp_path, tune_command(tmp_path, monkeypatch, None, "--budget", "4"))
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 0
    header, _records = load_results(tmp_path / "r.jsonl")
    assert header["screening"] == "one-at-a-time"


def test_the_sweep_measures_each_unjudged_choice_of_a_preset_that_mattered_then_holds_the_best():
    """ScreenedSearch.next_level_point, step by step, in the space's order: from the screened optimum (here
    the rule seed), the choices of KMP_BLOCKTIME not yet judged (the screening measured "200" alone:
    skipped), then, holding the best of them, those of KMP_AFFINITY ("none" measured alone: skipped)."""
    pytest.importorskip("optuna")
    from tfdoctor.tune.results import TrialRecord
    from tfdoctor.tune.screening import Effect
    from tfdoctor.tune.search import Tuner, TuneSettings
    from tfdoctor.tune.space import Space
    from tfdoctor.tune.strategies import ScreenedSearch

    space = thread_space(BUDGET, high=2)
    rule = rule_based_settings(BUDGET, space)
    affinity, blocktime = "KMP_AFFINITY", "KMP_BLOCKTIME"
    value = {"unset": 100.0, "granularity=fine,scatter": 120.0, "granularity=fine,compact,1,0": 110.0}
    records = [TrialRecord(0, "rule", dict(rule), "ok", 110.0, 1.0),
               TrialRecord(1, "screen", {**rule, affinity: "none"}, "ok", 90.0, 1.0),
               TrialRecord(2, "screen", {**rule, blocktime: "200"}, "ok", 80.0, 1.0)]
    tuner = Tuner(space, _Job(space, lambda p: 1.0, 0), None, TuneSettings(budget=40, seed=1), {"rule": rule},
                  records)
    tuner.effects = {name: Effect(name, 0.2, rule[name], 0.0, 2, True) for name in (affinity, blocktime)}
    names = {"TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", affinity, blocktime}
    tuner._narrow(Space(tuple(p for p in space.parameters if p.name in names)),
                  {n: v for n, v in rule.items() if n not in names})
    strategy, order = ScreenedSearch(), []
    while (point := strategy.next_level_point(tuner)) is not None:
        changed = {n: v for n, v in point.items() if v != rule[n]}
        order.append(changed)
        measured = value.get(point[affinity], 0.0) + (5.0 if point[blocktime] == "10" else 0.0)
        tuner.records.append(TrialRecord(len(tuner.records), "search", point, "ok", measured, 1.0))
    ten = {blocktime: "10"}  # the best blocktime measured, held while the affinity's choices are swept
    assert order == [{blocktime: "0"}, ten, {blocktime: "50"}, {**ten, affinity: "unset"},
                     {**ten, affinity: "granularity=fine,scatter"}]
