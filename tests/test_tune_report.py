"""The report page's tune section reads the tune's verdict: the change written with its measured gain, or
"keep your current settings" — never a configuration measured slower than the current settings as a
winner."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.report_inputs import write_tune_results
from support.report_pages import visible_words
from support.tune_setup import INTRA

from tfdoctor.tune.results import ResultsLog, TrialRecord, load_results

pytest.importorskip("optuna")
pytest.importorskip("plotly")



def _section(path: Path, verify: list[tuple[str, dict, float]], summary: dict | None):
    from tfdoctor.report.html.tune_section import tune_section

    write_tune_results(path)
    log = ResultsLog(path)
    header, records = load_results(path)
    for offset, (role, params, value) in enumerate(verify):
        record = TrialRecord(len(records) + offset, "verify", params, "ok", value, 1.0, role=role, round=offset // 2)
        log.append(record)
    header, records = load_results(path)
    return tune_section(header, records, str(path), summary=summary)


def test_an_applied_verdict_shows_the_change_and_its_gain_over_the_current_settings(tmp_path):
    verify = [("current", {}, 80.0), ("change", {INTRA: 6}, 100.0), ("current", {}, 82.0),
              ("change", {INTRA: 6}, 99.0), ("current", {}, 81.0), ("change", {INTRA: 6}, 101.0)]
    summary = {"verdict": "apply", "reason": "+23.0 % (97.5 % interval +20.0 … +26.0 %, 3 paired runs each) over "
               "the current settings", "changes": {INTRA: 6}, "winner": {INTRA: 6, "TF_NUM_INTEROP_THREADS": 2},
               "gain": {"gain": 0.23, "low": 0.2, "high": 0.26, "pairs": 3, "confidence": 0.975},
               "mattered": [INTRA, "KMP_BLOCKTIME"], "effects": {}}
    shown = visible_words(_section(tmp_path / "t.jsonl", verify, summary).body)
    assert f"Verdict: change {INTRA}=6 (everything else as it is now): +23.0 % (97.5 % interval" in shown
    assert "the change written 100 99 – 101 (3 runs) +23.0% (interval +20.0% … +26.0%, 97.5%)" in shown
    assert "current settings 81 80 – 82 (3 runs) —" in shown
    assert "rules of thumb 94 93 – 95 (2 runs) —" in shown
    assert "winner" not in shown  # the verdict's words: the change written


def test_keep_current_settings_shows_no_winner(tmp_path):
    # the best configuration searched measured slower than the current settings in the verification
    verify = [("current", {}, 110.0), ("change", {INTRA: 6}, 100.0), ("current", {}, 111.0),
              ("change", {INTRA: 6}, 99.0)]
    summary = {"verdict": "keep-current", "reason": "the change measured -9.9 % against the current settings",
               "changes": {}, "winner": None, "gain": {"gain": -0.099, "low": -0.12, "high": -0.08}}
    shown = visible_words(_section(tmp_path / "t.jsonl", verify, summary).body)
    assert "Verdict: keep your current settings (the change measured -9.9 % against the current settings)" in shown
    assert "current settings 110.5 110 – 111 (2 runs)" in shown
    assert "winner" not in shown and "the change written" not in shown


def test_a_tune_before_the_verdict_never_shows_a_winner_slower_than_the_current_settings(tmp_path):
    """A results file from before the verdict (its summary has no "verdict"): its leader (6, 1, "0": 99 and
    101) against current runs planted faster (120, 121) is not shown as a winner."""
    path = tmp_path / "t.jsonl"
    write_tune_results(path)
    log = ResultsLog(path)
    params = {INTRA: 2, "TF_NUM_INTEROP_THREADS": 2, "KMP_BLOCKTIME": "0"}
    for number, value in ((14, 120.0), (15, 121.0)):
        log.append(TrialRecord(number, "confirm", params, "ok", value, 1.0, role="current"))
    from tfdoctor.report.html.tune_section import tune_section

    header, records = load_results(path)
    shown = visible_words(tune_section(header, records, str(path), summary={"stopped": "budget"}).body)
    assert re.search(r"Verdict: keep your current settings \(the best configuration searched measured "
                     r"[0-9.]+% slower", shown)
    assert "winner" not in shown
