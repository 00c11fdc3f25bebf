"""Healthy machines stay silent (issue 16): every registered check over every machine of tests/healthy/,
through the probes and the facts file `tfdoctor check` uses; any warning, error or crash fails, naming the
machine, the code and the message. Info findings are allowed."""

from __future__ import annotations

import json

import pytest
from healthy import MACHINES, HealthyMachine, family
from healthy.corpus import register

from tfdoctor.cli import main
from tfdoctor.model import Severity, Status
from tfdoctor.registry import load_registry


@pytest.mark.parametrize("machine", [pytest.param(m, id=m.name) for m in MACHINES])
def test_healthy_machine_raises_no_warning(machine: HealthyMachine, examined) -> None:
    report = examined(machine).report
    loud = [f for f in report.findings() if f.severity is not None and f.severity >= Severity.WARNING]
    unexpected = [f"{machine.name}: {f.code} {f.severity.label}: {f.message}"
                  for f in loud if f.code not in machine.false_alarms]
    unexpected += [f"{machine.name}: {r.code} crashed: {r.reason}" for r in report.crashed()]
    unexpected += [f"{machine.name}: plugin error: {e}" for e in report.plugin_errors]
    assert not unexpected, "a healthy machine is not silent:\n" + "\n".join(unexpected)
    # A known false alarm is a strict expected failure: when its fix lands, the mark must go.
    gone = sorted(set(machine.false_alarms) - {f.code for f in loud})
    assert not gone, f"{machine.name}: {gone} no longer warn: remove them from its false_alarms"
    if machine.false_alarms:
        pytest.xfail("; ".join(f"{code}: {why}" for code, why in sorted(machine.false_alarms.items())))


@pytest.mark.parametrize("machine", [pytest.param(m, id=m.name) for m in MACHINES])
def test_healthy_machine_passes_the_pre_job_hook(machine: HealthyMachine, examined, capsys) -> None:
    """What a batch script sees: `tfdoctor check --facts F --format json --fail-on warning` exits 0, and
    no record of the JSON report says more than info (a record is as severe as its worst finding)."""
    with pytest.raises(SystemExit) as leaving:
        main(["check", "--facts", str(examined(machine).recorded), "--format", "json", "--fail-on", "warning"])
    done = capsys.readouterr()
    records = json.loads(done.out)["results"]
    quiet = ("passed", "not-checked", "not-applicable", "info")
    loud = {r["code"]: r["status"] for r in records if r["status"] not in quiet}
    assert set(loud) == set(machine.false_alarms), f"{machine.name}: records louder than info: {loud}"
    assert [r["code"] for r in records if r["status"] == "info" and r["severity"] != "info"] == []
    assert leaving.value.code == (1 if machine.false_alarms else 0), done.err
    if machine.false_alarms:
        pytest.xfail("; ".join(f"{code}: {why}" for code, why in sorted(machine.false_alarms.items())))


@pytest.mark.parametrize("machine", [pytest.param(m, id=m.name) for m in MACHINES])
def test_healthy_machine_is_examined_by_its_families(machine: HealthyMachine, examined) -> None:
    """A twin proves nothing if its family's checks all say "not checked": at least one check of each
    family it is the twin of must have run on it."""
    report = examined(machine).report
    ran = {family(r.code) for r in report.results if r.status in (Status.PASSED, Status.FAILED)}
    unexamined = sorted(set(machine.twin_of) - ran)
    assert not unexamined, f"{machine.name}: no check of {unexamined} ran: " + "; ".join(
        f"{r.code}: {r.reason}" for r in report.results if family(r.code) in unexamined)


def test_corpus_has_twenty_machines() -> None:
    assert len(MACHINES) >= 20, f"only {len(MACHINES)} healthy machines"


def test_corpus_covers_every_family_that_warns() -> None:
    checks = load_registry().checks
    warning_families = {family(c.code) for c in checks if c.severity >= Severity.WARNING}
    twinned = {f for m in MACHINES for f in m.twin_of}
    assert warning_families - twinned == set(), "families that can warn without a healthy twin"


def test_twin_of_names_families_that_exist() -> None:
    families = {family(c.code) for c in load_registry().checks}
    assert {f: m.name for m in MACHINES for f in m.twin_of if f not in families} == {}


def test_register_refuses_a_machine_without_a_tree_or_facts_and_a_duplicate_name() -> None:
    with pytest.raises(ValueError, match=r"built \(build=\) or recorded"):
        register(HealthyMachine("nothing", ("THR",), "neither a tree nor a facts file"))
    with pytest.raises(ValueError, match="two machines of that name"):
        register(MACHINES[0])
