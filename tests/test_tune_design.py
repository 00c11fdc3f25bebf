"""The two-level screening design (tfdoctor.tune.screening.TwoLevelDesign): fewer runs than one per
parameter, effects attributed, and a found effect confirmed by a run of its own."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping

import pytest

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


def test_a_space_too_large_for_the_design_is_a_usage_error(tmp_path, monkeypatch, capsys):
    from tests.test_tune_verdict import _cli
    from tfdoctor.cli import main

    argv = _cli(tmp_path, monkeypatch, None, "--screening", "two-level")
    extra = "".join(f"[parameters.EXTRA_{i}]\nvalues = [1, 2]\n" for i in range(20))
    (tmp_path / "space.toml").write_text((tmp_path / "space.toml").read_text() + extra)
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
    from tests.test_tune_verdict import INTRA, _cli
    from tfdoctor.cli import main
    from tfdoctor.tune.results import load_results

    with pytest.raises(SystemExit) as exit_:
        main(_cli(tmp_path, monkeypatch, INTRA, "--budget", "16", "--screening", "two-level"))
    assert exit_.value.code == 0
    _header, records = load_results(tmp_path / "r.jsonl")
    screen = [r for r in records if r.phase == "screen"]
    assert 7 <= len(screen) <= 9  # the design, then the seed again and the intra-op step to confirm
    assert f"verdict: change {INTRA}=4 (everything else as it is now)" in capsys.readouterr().out


def test_a_resumed_tune_screens_with_the_design_it_was_recorded_with(tmp_path, monkeypatch, capsys):
    pytest.importorskip("optuna")
    from tests.test_tune_verdict import INTRA, _cli
    from tfdoctor.cli import main
    from tfdoctor.tune.results import load_results

    with pytest.raises(SystemExit):
        main(_cli(tmp_path, monkeypatch, INTRA, "--budget", "9", "--screening", "two-level"))
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
