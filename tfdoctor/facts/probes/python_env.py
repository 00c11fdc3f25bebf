"""The Python environment TensorFlow will run in: this interpreter, or another one (--python)."""

from __future__ import annotations

import json

from tfdoctor.facts import Unknown, from_jsonable
from tfdoctor.facts.machine import Machine
from tfdoctor.facts.probes import pyenv_snapshot
from tfdoctor.registry import probe

SNAPSHOT_SOURCE: str = pyenv_snapshot.__file__
# The snapshot of an environment with thousands of packages is a few MB of JSON; an interpreter that
# prints more is flooding, and is stopped there.
SNAPSHOT_OUTPUT_LIMIT = 32 * 1024 * 1024


# What the other interpreter runs (`python -B -c BOOTSTRAP SNAPSHOT_SOURCE`). Its first path entry, the current
# folder for `-c`, is replaced before anything is imported: a json.py or re.py in the job's folder must not stand
# in for the standard library's. The snapshot's file is then loaded as a module, so an interpreter of tfdoctor's
# own version uses its compiled .pyc (compiling the source costs the pre-job hook ~7 ms); -B writes none for
# another version. Not -I: it would drop PYTHONPATH and the user's site-packages, which the job sees.
BOOTSTRAP = ("import sys\n"
             "sys.path[0] = '/nonexistent/tfdoctor-snapshot'  # stands for the current folder: environment_path()\n"
             "import importlib.util, json\n"
             "spec = importlib.util.spec_from_file_location('tfdoctor_pyenv_snapshot', sys.argv[1])\n"
             "module = importlib.util.module_from_spec(spec)\n"
             "spec.loader.exec_module(module)\n"
             "sys.stdout.write(json.dumps(module.snapshot(), sort_keys=True))\n")


def snapshot_other_interpreter(python: str, machine: Machine) -> dict[str, object] | Unknown:
    """Run the standalone snapshot under another interpreter (BOOTSTRAP). Its site-packages and PYTHONPATH
    are those the job would see."""
    import subprocess

    from tfdoctor.facts.bounded import run_bounded
    from tfdoctor.facts.redact import excerpt

    try:
        done = run_bounded([python, "-B", "-c", BOOTSTRAP, SNAPSHOT_SOURCE], timeout=machine.timeout,
                           limit=SNAPSHOT_OUTPUT_LIMIT, env=machine.environ)
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
