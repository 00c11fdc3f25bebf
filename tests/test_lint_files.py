"""Which files a directory walk gives lint: test files left out by name as the walk goes, decided exactly as
by the path relative to the folder named (the rule docs/lint.md states), unreadable folders included."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tfdoctor.lint import files as lint_files
from tfdoctor.lint.files import python_files

TREE = ("train.py", "test_train.py", "train_test.py", "conftest.py", "tests.py", "notes.ipynb", "test_nb.ipynb",
        "tests/helpers.py", "tests/sub/deep.py", "test/x.py", "pkg/test/y.py", "pkg/tests_data/z.py",
        "test_data/load.py", "data_test/load.py", "pkg/mod.py", "pkg/sub/test_mod.py", "contest/a.py",
        "attest/b.ipynb", "pkg/unread/u.py", "tests/unread/v.py", "test_unread/w.py", "pkg/.hidden/h.py")
UNREADABLE = {"pkg/unread", "tests/unread", "test_unread"}


def _reference(root: Path, skip_tests: bool) -> list[str]:
    """The rule as written before the walk decided it: the path relative to root, its name and its folders."""
    def is_test(rel: Path) -> bool:
        stem = rel.name.rsplit(".", 1)[0]
        return stem.startswith("test_") or stem.endswith("_test") or stem == "conftest" or \
            any(part in {"tests", "test"} for part in rel.parts[:-1])

    found = []
    stack = [root]
    while stack:  # listed with iterdir, which the fixture's unreadable folders do not touch
        here = stack.pop()
        if here.relative_to(root).as_posix() in UNREADABLE:
            candidates = [here]
        else:
            entries = sorted(here.iterdir())
            candidates = [e for e in entries if e.is_file() and e.suffix in (".py", ".ipynb")
                          and not e.name.startswith(".")]
            stack += [e for e in entries if e.is_dir() and not e.name.startswith(".")]
        found += [c for c in candidates if not (skip_tests and is_test(c.relative_to(root)))]
    return sorted(p.relative_to(root).as_posix() for p in found)


@pytest.fixture
def tree(tmp_path, monkeypatch) -> Path:
    for rel in TREE:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n", encoding="utf-8")
    real = os.scandir

    def scandir(path):  # the suite may run as root, which chmod does not stop
        if Path(path).relative_to(tmp_path).as_posix() in UNREADABLE:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(lint_files.os, "scandir", scandir)
    return tmp_path


@pytest.mark.parametrize("include_tests", [False, True])
def test_the_walk_leaves_out_exactly_what_the_relative_path_rule_says(tree, include_tests):
    got = sorted(p.relative_to(tree).as_posix() for p in python_files([str(tree)], include_tests=include_tests))
    assert got == _reference(tree, skip_tests=not include_tests)


def test_what_the_walk_keeps_and_leaves_out(tree):
    got = {p.relative_to(tree).as_posix() for p in python_files([str(tree)])}
    assert got == {"train.py", "tests.py", "notes.ipynb", "pkg/tests_data/z.py", "test_data/load.py",
                   "data_test/load.py", "pkg/mod.py", "contest/a.py", "attest/b.ipynb", "pkg/unread"}
    everything = {p.relative_to(tree).as_posix() for p in python_files([str(tree)], include_tests=True)}
    assert everything - got == {"test_train.py", "train_test.py", "conftest.py", "test_nb.ipynb",
                                "tests/helpers.py", "tests/sub/deep.py", "test/x.py", "pkg/test/y.py",
                                "pkg/sub/test_mod.py", "tests/unread", "test_unread"}


def test_a_folder_named_test_is_walked_when_it_is_the_one_named(tree):
    got = [p.relative_to(tree).as_posix() for p in python_files([str(tree / "tests")])]
    assert got == ["tests/helpers.py", "tests/sub/deep.py", "tests/unread"]  # below it: no test folder
    assert [p.name for p in python_files([str(tree / "test_train.py")])] == ["test_train.py"]  # named: always
