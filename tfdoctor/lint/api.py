"""Lint a directory the way `tfdoctor lint DIR` does by default (benchmarks, editors, other tools)."""

from __future__ import annotations

from pathlib import Path

from tfdoctor.lint.files import python_files
from tfdoctor.lint.pins import ProjectPins
from tfdoctor.lint.rule import LintRuleSpec, load_lint_rules, select_lint_rules
from tfdoctor.lint.runner import LintReport, lint_paths


def lint_directory(root: Path, include_tests: bool = False, preview: bool = False,
                   jobs: int | None = None, rules: list[LintRuleSpec] | None = None) -> LintReport:
    """`rules`: a selection (select_lint_rules) instead of the default rules (or the preview ones too). The
    release the code runs on is what the project pins, as without --target-tensorflow (tfdoctor/lint/pins.py)."""
    if rules is None:
        rules = select_lint_rules(load_lint_rules().rules, preview=preview)
    files = list(python_files([str(root)], include_tests=include_tests))
    # every file found by the walk: prefiltered
    return lint_paths(files, rules, jobs=jobs, walked=files, target=ProjectPins([root]))
