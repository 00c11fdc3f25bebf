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
    """os.walk's order (top-down, names sorted, links to folders not followed) with a stack of its own: a
    tree nested 1,000 deep is no RecursionError (os.walk recurses before Python 3.12), and a folder that
    cannot be read is yielded as a path (reading it then reports SRC002 with the reason) and skipped."""
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError as exc:
            yield Path(exc.filename) if exc.filename else folder
            continue
        dirs: list[str] = []
        files: list[str] = []
        for entry in entries:
            try:
                is_dir = entry.is_dir()
                followed = is_dir and entry.is_symlink()
            except OSError:
                is_dir, followed = False, False
            if followed:
                continue  # as os.walk(followlinks=False): listed, never walked into
            (dirs if is_dir else files).append(entry.name)
        for name in sorted(files):
            if name.endswith(SUFFIXES) and not name.startswith("."):
                yield folder / name
        kept = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS
                      and not os.path.exists(folder / d / "pyvenv.cfg"))  # exists(): False where it cannot look
        stack.extend(folder / d for d in reversed(kept))
