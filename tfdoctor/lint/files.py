"""Which files `tfdoctor lint PATH...` reads: named files as given, directories walked for *.py and *.ipynb.

Test files (`test_*.py`, `*_test.py`, anything under a `tests`/`test` folder) exercise unusual settings on
purpose; a directory walk skips them unless `include_tests` (`--include-tests`, or `include-tests = true`
in `[tool.tfdoctor.lint]`). A file named on the command line is always linted, as in ruff.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

# Directories that hold other people's code or tools' state, never the user's training scripts.
SKIPPED_DIRS = frozenset({"site-packages", "dist-packages", "__pycache__", "node_modules", "venv", ".venv",
                          "build", "dist"})


class MissingPath(Exception):
    pass


SUFFIXES = (".py", ".ipynb")
_TEST_DIRS = frozenset({"tests", "test"})


def is_test_file(path: Path) -> bool:
    name = path.name
    stem = name.rsplit(".", 1)[0]
    return stem.startswith("test_") or stem.endswith("_test") or stem == "conftest" or \
        any(part in _TEST_DIRS for part in path.parts[:-1])


def python_files(paths: Iterable[str], include_tests: bool = False) -> Iterator[Path]:
    """Files in a stable order; a named file is linted whatever its suffix (pre-commit passes files)."""
    seen: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        if not path.exists() and not path.is_symlink():
            raise MissingPath(f"{raw}: no such file or directory")
        candidates = _walk(path) if path.is_dir() else iter([path])
        for candidate in candidates:
            if path.is_dir() and not include_tests and is_test_file(candidate.relative_to(path)):
                continue
            if candidate not in seen:
                seen.add(candidate)
                yield candidate


def _walk(root: Path) -> Iterator[Path]:
    unreadable: list[OSError] = []
    for folder, dirs, files in os.walk(root, onerror=unreadable.append):
        while unreadable:  # yielded as paths: reading them then reports SRC002 with the reason
            error = unreadable.pop()
            if error.filename:
                yield Path(error.filename)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS
                         and not (Path(folder) / d / "pyvenv.cfg").exists())
        for name in sorted(files):
            if name.endswith(SUFFIXES) and not name.startswith("."):
                yield Path(folder) / name
