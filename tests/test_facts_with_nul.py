"""A hand-made --facts file may hold what no probe records: a NUL in a path. No check may crash on it (exit 3):
the quoting refuses a NUL (fixes.quoting), so what a check shows as a command must not hand it one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import REPO

from tfdoctor.engine import run_checks
from tfdoctor.facts import Facts
from tfdoctor.model import Status
from tfdoctor.registry import load_registry

FIXTURES = sorted((REPO / "tests" / "snapshots").rglob("*.json"))


def _with_nul(value):
    """Every string of the facts, keys aside, with a NUL in it."""
    if isinstance(value, str):
        return value + "\0x"
    if isinstance(value, list):
        return [_with_nul(item) for item in value]
    if isinstance(value, dict):
        return {key: _with_nul(item) for key, item in value.items()}
    return value


@pytest.mark.parametrize("fixture", FIXTURES, ids=[str(p.relative_to(REPO / "tests" / "snapshots")) for p in FIXTURES])
def test_a_nul_in_every_string_fact_crashes_no_check(tmp_path: Path, fixture: Path) -> None:
    data = json.loads(fixture.read_text())
    data["sections"] = _with_nul(data["sections"])
    (tmp_path / "facts.json").write_text(json.dumps(data))
    registry = load_registry()
    report = run_checks(registry.checks, Facts.load(tmp_path / "facts.json"), registry.errors)
    assert [(r.code, r.reason) for r in report.results if r.status is Status.CRASHED] == []


def test_pip_commands_name_the_interpreter_only_when_a_file_can_be_it() -> None:
    from tfdoctor.checks.packages import _pip
    from tfdoctor.testing import facts_from

    def pip(executable):
        return _pip(facts_from({"python": {"executable": executable}}))

    assert pip("/opt/job venv/bin/python") == "'/opt/job venv/bin/python' -m pip"
    assert pip("/opt/venv/bin/python") == "/opt/venv/bin/python -m pip"
    assert pip("/opt/a\0b/python") == pip("") == pip(3) == "pip"
