"""Every registered check, by one rule (issue 29): it fires on its own fixture and stays silent on a healthy
twin. A check's fixture is a facts file named for its code, `tests/snapshots/<folder>/<code>-<situation>.json`
(tests/snapshots/README.md); its healthy twin is a machine of tests/healthy/ on which it runs and finds
nothing. A new check without either fails here, with the file to add in the message; nothing here counts
checks, so adding one needs no other edit to this file."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest
from conftest import REPO, check_facts

from tfdoctor.facts import Facts
from tfdoctor.model import Status
from tfdoctor.registry import load_registry

SNAPSHOTS = REPO / "tests" / "snapshots"
FIXTURE_NAME = re.compile(r"([a-z]+\d{3})-[a-z0-9-]+")  # cuda001-library-not-installed, thr101-…
CHECKS = {spec.code: spec for spec in load_registry().checks}


def fixtures() -> dict[str, list[Path]]:
    """Code -> the facts files named for it, anywhere under tests/snapshots/."""
    found: dict[str, list[Path]] = defaultdict(list)
    for path in sorted(SNAPSHOTS.rglob("*.json")):
        match = FIXTURE_NAME.fullmatch(path.stem)
        if match:
            found[match.group(1).upper()].append(path)
    return found


FIXTURES = fixtures()


def where(path: Path) -> str:
    return str(path.relative_to(REPO))


@pytest.mark.parametrize("code", sorted(CHECKS))
def test_check_fires_on_its_fixture(code: str) -> None:
    """At its own severity or above, on at least one of its fixtures: a warning check whose only fixture draws
    an info tip has not been shown to find what it is named for."""
    spec = CHECKS[code]
    paths = FIXTURES.get(code)
    assert paths, (f"{code} has no triggering fixture: add tests/snapshots/checks/{code.lower()}-<situation>.json, "
                   f"a facts file on which {code} fires (how: tests/snapshots/README.md)")
    severities = []
    for path in paths:
        result = check_facts(Facts.load(path), select=[code]).result(code)
        assert result.status is not Status.CRASHED, f"{where(path)}: {code} crashed: {result.reason}"
        assert result.findings, (f"{where(path)} is named for {code}, but {code} is {result.status.value} there"
                                 + (f": {result.reason}" if result.reason else ""))
        severities += [f.severity for f in result.findings]
    assert max(severities) >= spec.severity, (
        f"{code} is a check of severity {spec.severity.label} but its fixtures draw only "
        f"{sorted({s.label for s in severities})}: add one on which it fires at that severity")


@pytest.mark.parametrize("code", sorted(CHECKS))
def test_check_stays_silent_on_a_healthy_twin(code: str, examined_corpus) -> None:
    """Some healthy machine on which the check ran and found nothing. (That no healthy machine gets a
    warning from any check is tests/test_healthy_corpus.py's.)"""
    ran_silent = [name for name, report in examined_corpus.items()
                  if any(r.code == code and r.status is Status.PASSED for r in report.results)]
    if not ran_silent and code.startswith("PROF") and not _xspace_protos():
        pytest.skip("the healthy profiled machines' step breakdown is read with TensorFlow's XSpace protos, "
                    "and TensorFlow is not installed here")
    assert ran_silent, (f"{code} has no healthy twin: on every machine of tests/healthy/ it is not checked, not "
                        f"applicable or fires. Add the machine where its situation is almost there but right "
                        f"(how: tests/healthy/README.md)")


def _xspace_protos() -> bool:
    from tfdoctor.facts import Unknown
    from tfdoctor.profile.xspace import xplane_module

    return not isinstance(xplane_module(), Unknown)


def test_every_fixture_is_named_for_a_registered_check() -> None:
    strays = {code: [where(p) for p in paths] for code, paths in FIXTURES.items() if code not in CHECKS}
    assert strays == {}, "fixtures named for no registered check (renamed or removed?): rename or delete them"
