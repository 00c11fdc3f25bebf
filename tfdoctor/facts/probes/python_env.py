"""The Python environment TensorFlow will run in: this interpreter, or another one (--python)."""

from __future__ import annotations

import json

from tfdoctor.facts import Unknown, from_jsonable
from tfdoctor.facts.machine import Machine
from tfdoctor.facts.probes import pyenv_snapshot
from tfdoctor.records import value_tuple
from tfdoctor.registry import probe

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import Any

SNAPSHOT_SOURCE: str = pyenv_snapshot.__file__
# The snapshot of an environment with thousands of packages is a few MB of JSON; an interpreter that
# prints more is flooding, and is stopped there.
SNAPSHOT_OUTPUT_LIMIT = 32 * 1024 * 1024


# What the other interpreter runs (`python -B -c BOOTSTRAP SNAPSHOT_SOURCE`). Its first path entry, the current
# folder for `-c` (none under PYTHONSAFEPATH, Python 3.11+: then it is left alone), is replaced before anything
# is imported: a json.py or re.py in the job's folder must not stand
# in for the standard library's. The snapshot's file is then loaded as a module, so an interpreter of tfdoctor's
# own version uses its compiled .pyc (compiling the source costs the pre-job hook ~7 ms); -B writes none for
# another version. Not -I: it would drop PYTHONPATH and the user's site-packages, which the job sees.
BOOTSTRAP = ("import sys\n"
             "if not getattr(sys.flags, 'safe_path', False):\n"
             "    sys.path[0] = '/nonexistent/tfdoctor-snapshot'  # stands for the current folder: environment_path()\n"
             "import importlib.util, json\n"
             "spec = importlib.util.spec_from_file_location('tfdoctor_pyenv_snapshot', sys.argv[1])\n"
             "module = importlib.util.module_from_spec(spec)\n"
             "spec.loader.exec_module(module)\n"
             "sys.stdout.write(json.dumps(module.snapshot(), sort_keys=True))\n")


@value_tuple
class Started:
    """The other interpreter's snapshot, started (`process`) or refused (`error`), at `at` (time.monotonic())."""

    argv: tuple[str, ...]
    environ: tuple[tuple[str, str], ...]  # what it was started with: only a probe of that machine takes it
    at: float
    process: Any  # subprocess.Popen[bytes] | None
    error: OSError | None


# The snapshot prestart() began for the probe, by interpreter: at most one, taken once.
_prestarted: dict[str, Started] = {}


def _argv(python: str) -> tuple[str, ...]:
    return (python, "-B", "-c", BOOTSTRAP, SNAPSHOT_SOURCE)


def _start(python: str, machine: Machine) -> Started:
    import time

    from tfdoctor.facts.bounded import start_bounded

    argv, at = _argv(python), time.monotonic()
    environ = tuple(sorted(machine.environ.items()))
    try:
        return Started(argv, environ, at, start_bounded(argv, env=machine.environ), None)
    except OSError as exc:
        return Started(argv, environ, at, None, exc)


def prestart(machine: Machine) -> None:
    """Start --python's snapshot before the checks and probes are imported, so the other interpreter's start-up
    (~25 ms) runs on another CPU beside them instead of after them; the probe collects it. Its time limit
    counts from here. A child nobody collects (a usage error after this) is ended when tfdoctor leaves, as
    every tracked child is."""
    if machine.python and machine.python not in _prestarted:
        _prestarted[machine.python] = _start(machine.python, machine)


def _take(python: str, machine: Machine) -> Started:
    started = _prestarted.pop(python, None)
    if started is not None and started.environ == tuple(sorted(machine.environ.items())):
        return started
    if started is not None and started.process is not None:
        from tfdoctor.facts.bounded import end_group

        end_group(started.process)  # started for another environment: not this machine's answer
    return _start(python, machine)


def snapshot_other_interpreter(python: str, machine: Machine) -> dict[str, object] | Unknown:
    """Run the standalone snapshot under another interpreter (BOOTSTRAP), or collect the one prestart() began.
    Its site-packages and PYTHONPATH are those the job would see."""
    import subprocess

    from tfdoctor.facts.bounded import finish_bounded
    from tfdoctor.facts.redact import excerpt

    started = _take(python, machine)
    try:
        if started.error is not None:
            raise started.error
        done = finish_bounded(started.process, started.argv, started.at + machine.timeout, machine.timeout,
                              SNAPSHOT_OUTPUT_LIMIT)
    except FileNotFoundError:
        return Unknown(f"interpreter {python} does not exist")
    except PermissionError:
        return Unknown(f"interpreter {python} is not executable")
    except subprocess.TimeoutExpired:
        return Unknown(f"interpreter {python} did not answer within {machine.timeout:g} s")
    except OSError as exc:
        return Unknown(f"interpreter {python} could not run: {exc.strerror or exc}")
    if done.flooded:
        return Unknown(f"interpreter {python} printed more than {SNAPSHOT_OUTPUT_LIMIT // (1024 * 1024)} MB: stopped")
    if done.returncode != 0:
        last = (done.stderr[-4096:].decode(errors="replace").strip().splitlines() or ["no output"])[-1]
        return Unknown(f"interpreter {python} failed the snapshot (exit {done.returncode}): {excerpt(last)}")
    try:
        return from_jsonable(json.loads(done.stdout))
    except ValueError:
        return Unknown(f"interpreter {python} printed something other than the snapshot")


def _runs_another_interpreter(machine: Machine) -> bool:
    return bool(machine.python)


@probe("python", waits_on_child=_runs_another_interpreter)
def probe_python(machine: Machine) -> dict[str, object] | Unknown:
    if machine.python:
        other = snapshot_other_interpreter(machine.python, machine)
        if isinstance(other, dict):
            other["other_interpreter"] = True  # chosen with --python: the user already pointed at the job's
        return other
    return {**from_jsonable(pyenv_snapshot.snapshot(environ=machine.environ)), "other_interpreter": False}
