"""The Python environment a shared tune's trials run in, as each worker records it in the study: a node whose
TensorFlow (release or build), numpy, keras or oneDNN setting differs from the others' measures another
program, and its trials must not be mixed into the winner (tfdoctor.tune.shared compares the nodes).

The interpreter is the command's when the command is a Python (`python train.py`, `/venv/bin/python3.11 -m
x`): its snapshot is taken as `check --python` takes it (tfdoctor.facts.probes.python_env, bounded in time
and output); else — the built-in benchmark, a workload, a shell script — tfdoctor's own interpreter, which
runs them. Only what decides the measurement is kept, flat, so the comparison names the fact that differs.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

# The distributions whose release decides what a trial measures: TensorFlow under its build names, and the
# packages its kernels and Keras front end come from.
WATCHED = ("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-intel", "intel-tensorflow",
           "tensorflow-macos", "tf-nightly", "tf-nightly-cpu", "numpy", "keras", "tf-keras")
ONEDNN = "TF_ENABLE_ONEDNN_OPTS"
PYTHON_NAME = re.compile(r"python[0-9.]{0,8}")
SNAPSHOT_SECONDS = 20.0
NOT_COMPARED = frozenset({"interpreter"})  # where it is (a node-local copy of one venv is the same program)


def trial_interpreter(command: Sequence[str], environ: Mapping[str, str]) -> str | None:
    """The command's Python (its path as the trials will find it), or None when the command is not one."""
    if not command or not PYTHON_NAME.fullmatch(Path(command[0]).name):
        return None
    return shutil.which(command[0], path=environ.get("PATH", os.defpath)) or command[0]


def python_environment(command: Sequence[str], environ: Mapping[str, str]) -> dict[str, Any]:
    """{fact: value}: interpreter, python (its version), each WATCHED distribution's version (absent: not
    installed), tensorflow_cuda_build, and TF_ENABLE_ONEDNN_OPTS as the trials inherit it ("unset" when it is
    not). An environment that cannot be read is {"interpreter": …, "unreadable": reason}: a fact of its own,
    which differs from every readable node's."""
    from tfdoctor.facts import Unknown
    from tfdoctor.facts.probes import pyenv_snapshot

    python = trial_interpreter(command, environ)
    if python is None:
        snapshot: Any = pyenv_snapshot.snapshot(environ=dict(environ))
        where = str(snapshot.get("executable", ""))
    else:
        from tfdoctor.facts.machine import Machine
        from tfdoctor.facts.probes.python_env import snapshot_other_interpreter

        snapshot = snapshot_other_interpreter(python, Machine(root=Path("/"), environ=dict(environ),
                                                              timeout=SNAPSHOT_SECONDS))
        where = python
    if isinstance(snapshot, Unknown) or not isinstance(snapshot, Mapping):
        return {"interpreter": where, "unreadable": str(getattr(snapshot, "reason", snapshot))}
    facts: dict[str, Any] = {"interpreter": where, "python": str(snapshot.get("version", "?")),
                             ONEDNN: environ.get(ONEDNN, "unset")}
    distributions = snapshot.get("distributions")
    if isinstance(distributions, Mapping):
        for name in WATCHED:
            found = distributions.get(name)
            if isinstance(found, Mapping) and isinstance(found.get("version"), str):
                facts[name] = found["version"]
    tensorflow = snapshot.get("tensorflow")
    build = tensorflow.get("build_info") if isinstance(tensorflow, Mapping) else None
    if isinstance(build, Mapping) and isinstance(build.get("is_cuda_build"), bool):
        facts["tensorflow_cuda_build"] = build["is_cuda_build"]
    return facts


def compared(facts: Any) -> dict[str, Any]:
    """A node's recorded environment as the comparison flattens it: `python.<fact>`, its location left out."""
    if not isinstance(facts, Mapping):
        return {}
    return {f"python.{k}": v for k, v in facts.items() if isinstance(k, str) and k not in NOT_COMPARED
            and isinstance(v, (str, int, float, bool))}
