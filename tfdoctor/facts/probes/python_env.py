"""The Python environment TensorFlow will run in: this interpreter, or another one (--python)."""

from __future__ import annotations

import json
from pathlib import Path

from tfdoctor.facts import Unknown, from_jsonable
from tfdoctor.facts.machine import Machine
from tfdoctor.facts.probes import pyenv_snapshot
from tfdoctor.registry import probe

SNAPSHOT_SOURCE = Path(pyenv_snapshot.__file__)


def snapshot_other_interpreter(python: str, machine: Machine) -> dict[str, object] | Unknown:
    """Run the standalone snapshot under another interpreter: -B writes no .pyc, -I keeps the
    snapshot from importing anything of the user's current directory. Its site-packages are still
    those the job would see."""
    import subprocess

    try:
        source = SNAPSHOT_SOURCE.read_text(encoding="utf-8")
        done = subprocess.run(
            [python, "-B", "-c", source],
            capture_output=True,
            timeout=machine.timeout,
            env=dict(machine.environ),
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except FileNotFoundError:
        return Unknown(f"interpreter {python} does not exist")
    except PermissionError:
        return Unknown(f"interpreter {python} is not executable")
    except subprocess.TimeoutExpired:
        return Unknown(f"interpreter {python} did not answer within {machine.timeout:g} s")
    except OSError as exc:
        return Unknown(f"interpreter {python} could not run: {exc.strerror or exc}")
    if done.returncode != 0:
        last = (done.stderr.decode(errors="replace").strip().splitlines() or ["no output"])[-1]
        return Unknown(f"interpreter {python} failed the snapshot (exit {done.returncode}): {last}")
    try:
        return from_jsonable(json.loads(done.stdout))
    except ValueError:
        return Unknown(f"interpreter {python} printed something other than the snapshot")


@probe("python")
def probe_python(machine: Machine) -> dict[str, object] | Unknown:
    if machine.python:
        other = snapshot_other_interpreter(machine.python, machine)
        if isinstance(other, dict):
            other["other_interpreter"] = True  # chosen with --python: the user already pointed at the job's
        return other
    return {**from_jsonable(pyenv_snapshot.snapshot(environ=machine.environ)), "other_interpreter": False}
