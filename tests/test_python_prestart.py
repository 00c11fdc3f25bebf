"""`--python`'s snapshot is started before the checks are imported (python_env.prestart) and collected by the
probe: the other interpreter's start-up runs beside tfdoctor's imports instead of after them."""

from __future__ import annotations

import os
import shlex
import sys
import time

import pytest
from support.command_line import run_cli

from tfdoctor.facts import Unknown
from tfdoctor.facts.machine import Machine
from tfdoctor.facts.probes import python_env


@pytest.fixture(autouse=True)
def _nothing_left_started():
    yield
    for started in python_env._prestarted.values():
        if started.process is not None:
            from tfdoctor.facts.bounded import end_group

            end_group(started.process)
    python_env._prestarted.clear()


def _machine(python: str = sys.executable, **environ: str) -> Machine:
    return Machine(environ={**os.environ, **environ}, python=python, timeout=60)


def test_the_interpreter_is_started_before_the_registry_is_loaded(monkeypatch):
    """build_report starts the snapshot, then imports the checks and probes; the probe collects that child."""
    from tfdoctor import gather
    from tfdoctor.config import Config
    from tfdoctor.registry import load_registry

    seen = {}

    def loading():
        started = python_env._prestarted.get(sys.executable)
        seen["running"] = started is not None and started.process.poll() is None
        seen["pid"] = started.process.pid if started else None
        return load_registry()

    monkeypatch.setattr("tfdoctor.registry.load_registry", loading)
    taken = []
    real_take = python_env._take
    monkeypatch.setattr(python_env, "_take", lambda python, machine: taken.append(real_take(python, machine)) or
                        taken[-1])
    report = gather.build_report(gather.GatherOptions(None, None, sys.executable, 60.0, ("PKG",), ()), Config())
    assert seen["running"] is True
    assert [started.process.pid for started in taken] == [seen["pid"]]  # the probe used it: no second child
    assert report.facts.peek("python.executable") == sys.executable
    assert report.facts.peek("python.other_interpreter") is True
    assert python_env._prestarted == {}


def test_a_prestarted_snapshot_is_taken_once_by_the_probe_of_its_machine():
    machine = _machine()
    python_env.prestart(machine)
    first = python_env._prestarted[sys.executable]
    python_env.prestart(machine)  # a second call starts nothing more
    assert python_env._prestarted[sys.executable] is first
    snapshot = python_env.snapshot_other_interpreter(sys.executable, machine)
    assert isinstance(snapshot, dict) and snapshot["executable"] == sys.executable
    assert first.process.returncode == 0 and python_env._prestarted == {}


def test_a_snapshot_started_for_another_environment_is_ended_not_used(tmp_path):
    """The stale child is one that would not end by itself (started for /elsewhere, it hangs, as a snapshot
    whose output fills its pipe does): only tfdoctor ending it ends it."""
    python = _interpreter(tmp_path, f'#!/bin/sh\n[ "$PYTHONPATH" = /elsewhere ] && exec sleep 60\n'
                                    f'exec {shlex.quote(sys.executable)} "$@"\n')
    python_env.prestart(_machine(PYTHONPATH="/elsewhere", python=str(python)))
    stale = python_env._prestarted[str(python)]
    snapshot = python_env.snapshot_other_interpreter(str(python), _machine(PYTHONPATH="/job/lib", python=str(python)))
    assert isinstance(snapshot, dict) and "/job/lib" in snapshot["path"] and "/elsewhere" not in snapshot["path"]
    assert stale.process.poll() is not None  # ended, not left running


def _interpreter(tmp_path, text: str, mode: int = 0o755):
    """A file named python that stands for the job's interpreter."""
    python = tmp_path / "python"
    python.write_text(text)
    python.chmod(mode)
    return python


def test_the_time_limit_counts_from_the_prestart(tmp_path):
    """A child that hangs is abandoned at its start plus the machine's timeout, however late the probe comes."""
    hang = _interpreter(tmp_path, "#!/bin/sh\nexec sleep 60\n")
    machine = Machine(environ=dict(os.environ), python=str(hang), timeout=1.0)
    python_env.prestart(machine)
    time.sleep(1.2)
    begun = time.monotonic()
    snapshot = python_env.snapshot_other_interpreter(str(hang), machine)
    assert snapshot == Unknown(f"interpreter {hang} did not answer within 1 s")
    assert time.monotonic() - begun < 1.0


def test_an_interpreter_that_cannot_start_is_unknown_with_the_reason(tmp_path):
    text = _interpreter(tmp_path, "not a program\n", 0o644)
    machine = Machine(environ=dict(os.environ), python=str(text), timeout=5.0)
    python_env.prestart(machine)
    assert python_env.snapshot_other_interpreter(str(text), machine) == Unknown(
        f"interpreter {text} is not executable")


def test_a_usage_error_after_the_prestart_leaves_no_child_running(tmp_path):
    """`--select NOPE` is refused once the checks are loaded, after the interpreter started: tfdoctor ends it."""
    pid_file = tmp_path / "pid"
    # The pid is renamed into place, so it is never read half-written.
    slow = _interpreter(tmp_path, f"#!/bin/sh\necho $$ > {shlex.quote(f'{pid_file}.new')}\n"
                                  f"mv {shlex.quote(f'{pid_file}.new')} {shlex.quote(str(pid_file))}\n"
                                  "exec sleep 60\n")
    begun = time.monotonic()
    done = run_cli(["check", "--python", str(slow), "--select", "NOPE"], cwd=tmp_path)
    assert done.returncode == 2 and "no check code starts with NOPE" in done.stderr
    assert time.monotonic() - begun < 30
    # A child left running writes its pid moments later, even if a loaded machine had not yet run its first line
    # when tfdoctor left: waited for, so that such a child is not taken for one ended early.
    waited = time.monotonic() + 3
    while not pid_file.exists() and time.monotonic() < waited:
        time.sleep(0.05)
    if pid_file.exists():  # else it was ended before its first lines ran
        with pytest.raises(ProcessLookupError):
            os.kill(int(pid_file.read_text()), 0)
