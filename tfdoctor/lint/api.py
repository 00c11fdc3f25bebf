"""Lint a directory the way `tfdoctor lint DIR` does by default (benchmarks, editors, other tools)."""

from __future__ import annotations

from pathlib import Path

from tfdoctor.lint.files import python_files
from tfdoctor.lint.rule import load_lint_rules, select_lint_rules
from tfdoctor.lint.runner import LintReport, lint_paths


def lint_directory(root: Path, include_tests: bool = False, preview: bool = False,
                   jobs: int | None = None) -> LintReport:
    registry = load_lint_rules()
    rules = select_lint_rules(registry.rules, preview=preview)
    files = list(python_files([str(root)], include_tests=include_tests))
    return lint_paths(files, rules, jobs=jobs, walked=files)  # every file found by the walk: prefiltered
