"""The registry of healthy machines and the one way they are examined.

A `HealthyMachine` is either a tree built under a FakeRoot (probed as `tfdoctor check --root` probes
it) or a recorded facts file (replayed as `tfdoctor check --facts` replays it). Built machines are
probed by every registered probe, with NVML answered by tfdoctor.testing.fake_nvml and the Python
section taken from the machine's own site-packages (under --root the python probe would describe the
interpreter running the tests); the facts are written to a file and loaded back, so the checks see
exactly what `tfdoctor collect -o f.json && tfdoctor check --facts f.json` would.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tfdoctor.engine import Report, gather_facts, run_checks
from tfdoctor.facts import Facts, from_jsonable
from tfdoctor.registry import load_registry, select_checks
from tfdoctor.testing import FakeRoot
from tfdoctor.testing.fake_nvml import FakeGpu, FakeNvml

from .parts import PythonEnv

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class HealthyMachine:
    """One correctly configured machine. `twin_of`: the check families (code prefixes: "THR", "CUDA")
    whose warnings this machine shows stay silent where they should."""

    name: str
    twin_of: tuple[str, ...]
    about: str  # what the machine is, in one line
    # Writes the tree; returns NVML's answers for the GPUs it installed (FakeGpu, see parts.nvidia_driver),
    # or None when NVML would not answer (no driver).
    build: Callable[[FakeRoot], Sequence[FakeGpu] | None] | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    python: PythonEnv | None = None  # the environment the job runs in (its site-packages are in the tree)
    nvml: Mapping[str, Any] = field(default_factory=dict)  # FakeNvml keyword arguments (driver, cuda)
    facts: str | None = None  # a recorded facts file (relative to the repository) instead of a tree
    sections: Mapping[str, Any] = field(default_factory=dict)  # sections recorded by other commands (profile)
    # Known false alarms whose fix another branch owns: code -> "issue 16 item N, branch X". The machine's
    # test is an expected failure while exactly these codes warn, and fails once one of them no longer does.
    false_alarms: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Examined:
    """One machine as the tests see it (tests/conftest.py's `examined` makes each once a session)."""

    recorded: Path  # the facts file, as `tfdoctor collect -o` writes it
    report: Report  # every check over it


MACHINES: list[HealthyMachine] = []


def register(*machines: HealthyMachine) -> None:
    for machine in machines:
        if machine.build is None and machine.facts is None:
            raise ValueError(f"{machine.name}: a machine is built (build=) or recorded (facts=)")
        if any(m.name == machine.name for m in MACHINES):
            raise ValueError(f"{machine.name}: two machines of that name")
        MACHINES.append(machine)


def family(code: str) -> str:
    """"CUPTI002" -> "CUPTI": the prefix that --select and --ignore take for the whole family."""
    match = re.match(r"[A-Z]+", code)
    return match.group(0) if match else code


def collect(machine: HealthyMachine, tmp: Path) -> Path:
    """The machine's facts written as `tfdoctor collect -o` writes them; returns the file."""
    if machine.facts is not None:
        facts = Facts.load(REPO / machine.facts)
    else:
        assert machine.build is not None
        facts = _probe(machine, FakeRoot(tmp / machine.name))
    if machine.sections:
        facts = Facts({**facts.sections, **from_jsonable(dict(machine.sections))}, facts.meta)
    recorded = tmp / f"{machine.name}.facts.json"
    recorded.write_text(facts.dumps() + "\n")
    return recorded


def check_recorded(recorded: Path) -> Report:
    """Every registered check (no --select, no --ignore) over a facts file, as `check --facts` runs them."""
    registry = load_registry()
    return run_checks(select_checks(registry.checks, (), ()), Facts.load(recorded), registry.errors)


def examine(machine: HealthyMachine, tmp: Path) -> Report:
    return check_recorded(collect(machine, tmp))


def _probe(machine: HealthyMachine, root: FakeRoot) -> Facts:
    from tfdoctor.facts.probes import nvml

    assert machine.build is not None
    gpus = machine.build(root)
    previous = nvml.NVML_OVERRIDE
    fake = FakeNvml(gpus or (), **machine.nvml)
    nvml.NVML_OVERRIDE = None if gpus is None else (lambda: fake)
    try:
        facts = gather_facts(load_registry().probes, root.machine(dict(machine.env), timeout=10.0))
    finally:
        nvml.NVML_OVERRIDE = previous
    sections = dict(facts.sections)
    sections["python"] = python_section(machine, root)
    meta = {**facts.meta, "hostname": machine.name, "root": "/"}
    return Facts(sections, meta)


def python_section(machine: HealthyMachine, root: FakeRoot) -> Any:
    """What the python probe reports when run by the machine's own interpreter: the snapshot of its
    site-packages, with the paths and the interpreter's identity of that machine."""
    from tfdoctor.facts.probes import pyenv_snapshot

    env = machine.python
    if env is None:  # no Python environment described: an interpreter with nothing installed
        env = PythonEnv("/usr", base_prefix="/usr")
    inside = str(root.path)
    environ = dict(machine.env)
    if environ.get("LD_LIBRARY_PATH"):
        environ["LD_LIBRARY_PATH"] = ":".join(inside + d for d in environ["LD_LIBRARY_PATH"].split(":") if d)
    snap = pyenv_snapshot.snapshot(paths=[inside + env.site], environ=environ, prefix=inside + env.prefix)
    snap = _unroot(snap, inside)
    major, minor = env.version.split(".")[:2]
    snap.update(executable=env.executable, version=env.version, prefix=env.prefix, base_prefix=env.base_prefix,
                platform=env.system, machine=env.arch, path=[f"/usr/lib/python{major}{minor}.zip",
                                                             f"/usr/lib/python{major}.{minor}", env.site])
    snap["marker_environment"].update(python_version=f"{major}.{minor}", python_full_version=env.version,
                                      implementation_version=env.version, platform_machine=env.arch,
                                      sys_platform=env.system, platform_system=env.system.capitalize())
    return {**from_jsonable(snap), "other_interpreter": False}


def _unroot(value: Any, inside: str) -> Any:
    if isinstance(value, str):
        return value[len(inside):] if value.startswith(inside + "/") else value
    if isinstance(value, list):
        return [_unroot(v, inside) for v in value]
    if isinstance(value, dict):
        return {k: _unroot(v, inside) for k, v in value.items()}
    return value
