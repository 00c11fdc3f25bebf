"""Fixes keep one shape (issue 36): an admin fix's steps are commands one could type — a `# comment` after one
at most — and what a person edits, checks or decides is prose in its text. Held over every finding the
recorded fixtures under tests/snapshots/ produce."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import check_facts

from tfdoctor.facts import Facts
from tfdoctor.model import AdminFix

SNAPSHOTS = Path(__file__).parent / "snapshots"
TRIGGERING = re.compile(r"[a-z]+\d{3}-[a-z0-9-]+")  # tests/snapshots/README.md: <code>-<situation>.json
# How prose starts: an alternative ("or …"), an instruction in words ("edit …", "Install …"), a sentence.
PROSE = re.compile(r"^(or\b|or:|edit |install |Install |Run |Enable |Update |check |reseat |stop |add |"
                   r"disable |launch |list |set a |use |Valid |Kubernetes:|brought by|conda-forge selects|"
                   r"libcuda|remove )")


def admin_fixes() -> list[tuple[str, str, AdminFix]]:
    found = []
    for path in sorted(SNAPSHOTS.rglob("*.json")):
        if not TRIGGERING.fullmatch(path.stem):
            continue  # a check's triggering fixture: where the findings, and their fixes, are
        try:
            facts = Facts.from_json(json.loads(path.read_text()))
        except (ValueError, KeyError, TypeError):
            continue  # not a facts file
        for finding in check_facts(facts).findings():
            found += [(path.name, finding.code, fix) for fix in finding.fixes if isinstance(fix, AdminFix)]
    return found


FIXES = admin_fixes()


def test_the_fixtures_hold_admin_fixes_of_every_kind():
    assert len({code for _, code, _ in FIXES}) >= 20


@pytest.mark.parametrize(("fixture", "code", "fix"), FIXES, ids=[f"{c}-{f}" for f, c, _ in FIXES])
def test_admin_fix_steps_are_commands_and_prose_is_text(fixture, code, fix):
    for step in fix.steps:
        command = step.split("  #", 1)[0].strip()
        sentence = command.endswith(".") and not command.endswith("...")  # "docker run … ..." is a command
        assert command and not PROSE.match(command) and not sentence, (code, step)
    assert "\n" not in fix.text
