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
