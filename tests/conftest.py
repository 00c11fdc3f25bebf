from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import pytest

from tfdoctor.engine import Report, gather_facts, run_checks
from tfdoctor.facts import Facts
from tfdoctor.registry import load_registry, select_checks
from tfdoctor.testing import FakeRoot

REPO = Path(__file__).resolve().parent.parent


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


@pytest.fixture
def tables_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A copy of the packaged knowledge tables, loaded from there with empty caches."""
    import shutil

    from tfdoctor import knowledge

    here = tmp_path / "knowledge"
    shutil.copytree(knowledge.HERE, here, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    monkeypatch.setattr(knowledge, "HERE", here)
    monkeypatch.setattr(knowledge, "COMPILED", here / "compiled")
    knowledge.table.cache_clear()
    knowledge.available.cache_clear()
    yield here
    knowledge.table.cache_clear()
    knowledge.available.cache_clear()
