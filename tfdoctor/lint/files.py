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


def _is_test_name(name: str) -> bool:
    stem = name.rsplit(".", 1)[0]
    return stem.startswith("test_") or stem.endswith("_test") or stem == "conftest"


def python_files(paths: Iterable[str], include_tests: bool = False) -> Iterator[Path]:
    """Files in a stable order; a named file is linted whatever its suffix (pre-commit passes files)."""
    seen: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        if not path.exists() and not path.is_symlink():
            raise MissingPath(f"{raw}: no such file or directory")
        candidates = _walk(path, skip_tests=not include_tests) if path.is_dir() else iter([path])
        for candidate in candidates:
            if candidate not in seen:
                seen.add(candidate)
                yield candidate


def _walk(root: Path, skip_tests: bool = False) -> Iterator[Path]:
    """os.walk's order (top-down, names sorted, links to folders not followed) with a stack of its own: a
    tree nested 1,000 deep is no RecursionError (os.walk recurses before Python 3.12), and a folder that
    cannot be read is yielded as a path (reading it then reports SRC002 with the reason) and skipped.

    With `skip_tests`, test files are left out: a file (or an unreadable folder) whose name says test
    (`_is_test_name`), and anything under a `tests`/`test` folder below `root`. That is decided from names as
    the walk goes, each folder carrying whether a folder above it is a test folder, rather than by taking
    every path apart again relative to `root`. cProfile put that at a tenth of lint's calls on a repository
    of 343 small files; by instructions it was about 1 % (benchmarks/lint_instructions.py), within the noise."""
    stack: list[tuple[Path, bool]] = [(root, False)]  # (folder, a folder between root and it is a test folder)
    while stack:
        folder, above = stack.pop()
        below_root = folder is not root
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError as exc:
            if not (skip_tests and below_root and (above or _is_test_name(folder.name))):
                yield Path(exc.filename) if exc.filename else folder
            continue
        inside = above or (below_root and folder.name in _TEST_DIRS)
        if skip_tests and inside:
            continue  # nothing below a test folder is given to lint, not even an unreadable folder
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
            if name.endswith(SUFFIXES) and not name.startswith(".") and not (skip_tests and _is_test_name(name)):
                yield folder / name
        kept = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS
                      and not os.path.exists(folder / d / "pyvenv.cfg"))  # exists(): False where it cannot look
        stack.extend((folder / d, inside) for d in reversed(kept))
