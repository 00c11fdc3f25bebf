from __future__ import annotations

import builtins
import importlib
import os
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import pytest

from tfdoctor.engine import Report, gather_facts, run_checks
from tfdoctor.facts import Facts
from tfdoctor.registry import load_registry, select_checks
from tfdoctor.testing import FakeRoot

REPO = Path(__file__).resolve().parent.parent

# The commands the tests start print through rich, which wraps at the terminal's width: COLUMNS, else 80 when
# the output is not a terminal. A CI runner or a wide terminal sets another; the tests' expected output is the
# 80 columns of a batch job's log. (A test about width sets its own.)
os.environ["COLUMNS"] = "80"
# A CI runner may ask every program for colour; the expected output is plain text (a test about colour sets it).
for _name in ("FORCE_COLOR", "PY_COLORS", "CLICOLOR_FORCE", "TTY_COMPATIBLE"):
    os.environ.pop(_name, None)


@pytest.fixture
def make_root(tmp_path: Path) -> Callable[..., FakeRoot]:
    counter = iter(range(1000))

    def make(name: str | None = None) -> FakeRoot:
        return FakeRoot(tmp_path / (name or f"root{next(counter)}"))

    return make


def probe_root(root: FakeRoot, env: Mapping[str, str] | None = None, **machine_kwargs) -> Facts:
    registry = load_registry()
    return gather_facts(registry.probes, root.machine(env, **machine_kwargs))


def check_facts(facts: Facts, select: Iterable[str] = (), ignore: Iterable[str] = ()) -> Report:
    registry = load_registry()
    return run_checks(select_checks(registry.checks, tuple(select), tuple(ignore)), facts, registry.errors)


def check_root(root: FakeRoot, env: Mapping[str, str] | None = None, select: Iterable[str] = (),
               ignore: Iterable[str] = (), **machine_kwargs) -> Report:
    return check_facts(probe_root(root, env, **machine_kwargs), select, ignore)


def env_fixes(report: Report) -> dict[str, str | None]:
    from tfdoctor.fixes.plan import plan_fixes

    return plan_fixes(report.findings(), unsafe=True).env_values()


@pytest.fixture(scope="session")
def examined(tmp_path_factory: pytest.TempPathFactory):
    """Each machine of the healthy corpus (tests/healthy/) collected and checked once for the whole session:
    `examined(machine)` is its Examined (the facts file, the report of every check over it)."""
    from healthy import Examined, check_recorded, collect

    done: dict[str, Examined] = {}

    def get(machine) -> Examined:
        if machine.name not in done:
            recorded = collect(machine, tmp_path_factory.mktemp(machine.name))
            done[machine.name] = Examined(recorded, check_recorded(recorded))
        return done[machine.name]

    return get


@pytest.fixture(scope="session")
def examined_corpus(examined) -> dict[str, Report]:
    """Machine name -> the report of every check over it, for every machine of the healthy corpus."""
    from healthy import MACHINES

    return {machine.name: examined(machine).report for machine in MACHINES}


@pytest.fixture(scope="session")
def slurm(tmp_path_factory: pytest.TempPathFactory):
    """A single-node Slurm cluster on loopback (tests/support/local_slurm.py), started once for the session
    (tests/test_slurm_hook.py, tests/test_tune_slurm.py), with a site-wide TaskProlog as an administrator
    would install it: it acts only for jobs that opt in (TFDOCTOR_TEST_PROLOG set), so every other job sees
    its environment exactly as submitted. Skipped, with the reason, where Slurm cannot be installed or
    started (no root, no apt, no network)."""
    import shutil
    import sys

    from support.local_slurm import SlurmUnavailable, install, start

    tfdoctor = Path(sys.executable).parent / "tfdoctor"  # a job's node has a bare PATH: this venv's script
    if not tfdoctor.exists():
        pytest.skip(f"no tfdoctor script beside {sys.executable}")
    base = tmp_path_factory.mktemp("slurm")
    prolog = base / "taskprolog.sh"
    prolog.write_text(f'#!/bin/sh\n[ -n "$TFDOCTOR_TEST_PROLOG" ] || exit 0\n'
                      f"exec {tfdoctor} fix --format taskprolog --timeout 3\n")
    prolog.chmod(0o755)
    try:
        install()
        cluster = start(base / "cluster", task_prolog=prolog)
    except SlurmUnavailable as exc:
        pytest.skip(f"Slurm unavailable: {str(exc).splitlines()[0]}")
    try:
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(base / "cluster" / "state", ignore_errors=True)


@pytest.fixture(scope="session")
def postgres():
    """A PostgreSQL server on loopback (tests/support/local_postgres.py), started once for the session from the
    server binaries (Debian's package, installed when absent); each test makes its own fresh database with
    `postgres.create_database(name)`. Skipped, with the reason, where it cannot be installed or started."""
    from support.local_postgres import PostgresUnavailable, start

    try:
        server = start()
    except PostgresUnavailable as exc:
        pytest.skip(f"PostgreSQL unavailable: {str(exc).splitlines()[0]}")
    try:
        yield server
    finally:
        server.cleanup()


@pytest.fixture
def pb():
    """The XSpace protobuf module of the installed TensorFlow wheel (tfdoctor.profile.xspace.xplane_module),
    loaded by path without importing TensorFlow; the test is skipped, with the reason, where it cannot be."""
    from tfdoctor.facts import Unknown
    from tfdoctor.profile.xspace import xplane_module

    module = xplane_module()
    if isinstance(module, Unknown):
        pytest.skip(module.reason)
    return module


@pytest.fixture
def tables_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A copy of the packaged knowledge tables, loaded from there with empty caches."""
    import shutil

    from tfdoctor import knowledge

    here = tmp_path / "knowledge"
    shutil.copytree(knowledge.HERE, here, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    monkeypatch.setattr(knowledge, "HERE", str(here))
    monkeypatch.setattr(knowledge, "COMPILED", str(here / "compiled"))
    knowledge.table.cache_clear()
    knowledge.table_rows.cache_clear()
    knowledge.available.cache_clear()
    yield here
    knowledge.table.cache_clear()
    knowledge.table_rows.cache_clear()
    knowledge.available.cache_clear()


@pytest.fixture(autouse=True, scope="session")
def _hash_cache_of_the_tests(tmp_path_factory: pytest.TempPathFactory):
    """The snapshot keeps RECORD sums between runs (pyenv_snapshot.HashCache): the tests' own, in a
    temporary folder that the child processes they start inherit, never the user's ~/.cache."""
    import os

    before = os.environ.get("TFDOCTOR_CACHE_DIR")
    os.environ["TFDOCTOR_CACHE_DIR"] = str(tmp_path_factory.mktemp("tfdoctor-cache"))
    yield
    if before is None:
        os.environ.pop("TFDOCTOR_CACHE_DIR", None)
    else:
        os.environ["TFDOCTOR_CACHE_DIR"] = before


# -- the slow parts carry their markers ----------------------------------------------------------------------
# README, "Development": `pytest -m "not tensorflow and not browser and not slurm and not postgres"` is the fast
# subset. A test that runs one of those parts without its marker would silently make it slow, so each test is
# watched: the programs it starts (Slurm's, PostgreSQL's, Chromium) and the modules it imports (tensorflow,
# playwright). An import is seen whether or not an earlier test already loaded the module (the import
# statement and importlib.import_module are watched, not only what is new in sys.modules), so the verdict does
# not depend on the tests' order. What runs in a grandchild (`python -m tfdoctor profile` starting TensorFlow)
# is not seen: such tests are marked by hand.

SLOW_PARTS = ("tensorflow", "browser", "slurm", "postgres")
SLOW_PROGRAMS = {"postgres": "postgres", "initdb": "postgres", "createdb": "postgres", "pg_isready": "postgres",
                 "srun": "slurm", "sbatch": "slurm", "salloc": "slurm", "scontrol": "slurm", "slurmctld": "slurm",
                 "slurmd": "slurm", "chromium": "browser", "chromium-browser": "browser", "chrome": "browser",
                 "headless_shell": "browser"}
SLOW_MODULES = {"tensorflow": "tensorflow", "playwright": "browser"}
WORKLOAD = "tfdoctor/profile/workload_main.py"  # the micro-profile's child: it imports TensorFlow


def slow_parts_used(started: Iterable[object], imported: Iterable[str]) -> set[str]:
    """The markers that programs started (Popen's first argument) and modules imported (top-level names)
    call for."""
    used = {SLOW_MODULES[name] for name in imported if name in SLOW_MODULES}
    for args in started:
        argv = [os.fspath(args)] if isinstance(args, (str, bytes, os.PathLike)) else [os.fspath(a) for a in args]
        argv = [a.decode() if isinstance(a, bytes) else a for a in argv]
        if not argv:
            continue
        words = argv[0].split() if len(argv) == 1 else argv  # a shell string: its first word
        program = os.path.basename(words[0])
        if program in SLOW_PROGRAMS:
            used.add(SLOW_PROGRAMS[program])
        if program.startswith("python") and any(a.endswith(WORKLOAD) for a in words[1:2]) and _binary(words[0]):
            used.add("tensorflow")
    return used


def _binary(program: str) -> bool:
    """A real interpreter, not a stand-in script named `python` that runs a fake child (#! first)."""
    import shutil

    found = shutil.which(program)
    try:
        with open(found or program, "rb") as handle:
            return handle.read(4) == b"\x7fELF"
    except OSError:
        return False


def pytest_collection_modifyitems(items: Sequence[pytest.Item]) -> None:
    """A test on the shared Slurm cluster is a Slurm test, marked or not."""
    for item in items:
        for part in ("slurm", "postgres"):
            if part in getattr(item, "fixturenames", ()):
                item.add_marker(getattr(pytest.mark, part))


def watch_slow_imports(monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """Until `monkeypatch` is undone, the top-level name of each module of SLOW_MODULES imported is added to
    the set returned, at every import, also of a module already in sys.modules. Only an import that succeeds
    counts: code that tries TensorFlow where it is not installed runs nothing slow. Other imports pay one
    call and a dictionary look-up."""
    seen: set[str] = set()
    import_statement, import_module = builtins.__import__, importlib.import_module

    def watched_import(name, globals=None, locals=None, fromlist=(), level=0):
        module = import_statement(name, globals, locals, fromlist, level)
        if level == 0 and name.partition(".")[0] in SLOW_MODULES:
            seen.add(name.partition(".")[0])
        return module

    def watched_import_module(name, package=None):
        module = import_module(name, package)
        if module.__name__.partition(".")[0] in SLOW_MODULES:  # its name resolved, for a relative one
            seen.add(module.__name__.partition(".")[0])
        return module

    monkeypatch.setattr(builtins, "__import__", watched_import)
    monkeypatch.setattr(importlib, "import_module", watched_import_module)
    return seen


@pytest.fixture(autouse=True)
def _slow_parts_carry_their_markers(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    marked = {mark.name for mark in request.node.iter_markers()} & set(SLOW_PARTS)
    if marked == set(SLOW_PARTS):
        yield
        return
    started: list[object] = []
    original = subprocess.Popen.__init__

    def watched(self, args, *more, **options):
        started.append(args)
        original(self, args, *more, **options)

    monkeypatch.setattr(subprocess.Popen, "__init__", watched)
    imported = watch_slow_imports(monkeypatch)
    before = set(sys.modules)  # and any other way a module is first loaded (a C extension's import)
    yield
    imported |= {name.split(".")[0] for name in set(sys.modules) - before}
    missing = slow_parts_used(started, imported) - marked
    if missing:
        pytest.fail(f"this test runs {', '.join(sorted(missing))} without the marker: add "
                    + " and ".join(f"@pytest.mark.{m}" for m in sorted(missing))
                    + " (the fast subset, README \"Development\", leaves marked tests out)", pytrace=False)
