"""Golden files pin the text and JSON reports of recorded machines. After an intended change, run
`UPDATE_GOLDEN=1 pytest tests/test_golden.py` and review the diff of tests/golden/ like code."""

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
    assert path.exists(), f"{path} missing: run with UPDATE_GOLDEN=1"
    assert text == path.read_text()


@pytest.mark.parametrize("snapshot", SNAPSHOTS, ids=[s.stem for s in SNAPSHOTS])
def test_reports_match_golden_files(snapshot):
    report = check_facts(Facts.load(snapshot))
    compare(f"{snapshot.stem}.txt", render_text(report, verbose=False, color=False))
    compare(f"{snapshot.stem}.verbose.txt", render_text(report, verbose=True, color=False))
    compare(f"{snapshot.stem}.json", render_json(report))
