"""Golden files pin the text and JSON reports of recorded machines. After an intended change, run
`python tools/regenerate.py` (it runs this module with UPDATE_GOLDEN=1) and review the diff of tests/golden/
like code."""

from __future__ import annotations

import os

import pytest
from conftest import REPO, check_facts

from tfdoctor.facts import Facts
from tfdoctor.report.json_report import render_json
from tfdoctor.report.text import render_text

SNAPSHOTS = sorted((REPO / "tests" / "snapshots" / "core").glob("*.json"))
GOLDEN = REPO / "tests" / "golden"


def compare(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    fix = "run `python tools/regenerate.py` and review the diff of tests/golden/"
    assert path.exists(), f"{path.relative_to(REPO)} is missing: {fix}"
    assert text == path.read_text(), f"{path.relative_to(REPO)} differs from today's report: if intended, {fix}"


@pytest.mark.parametrize("snapshot", SNAPSHOTS, ids=[s.stem for s in SNAPSHOTS])
def test_reports_match_golden_files(snapshot):
    report = check_facts(Facts.load(snapshot))
    compare(f"{snapshot.stem}.txt", render_text(report, verbose=False, color=False))
    compare(f"{snapshot.stem}.verbose.txt", render_text(report, verbose=True, color=False))
    compare(f"{snapshot.stem}.json", render_json(report))


def test_a_stale_golden_names_the_command_that_rewrites_it(monkeypatch):
    monkeypatch.delenv("UPDATE_GOLDEN", raising=False)
    with pytest.raises(AssertionError, match=r"slurm-node-bad-threads.txt differs .* run `python tools/regenerate.py`"):
        compare("slurm-node-bad-threads.txt", "not the report\n")
    with pytest.raises(AssertionError, match=r"no-such-machine.txt is missing: run `python tools/regenerate.py`"):
        compare("no-such-machine.txt", "")
