"""Helpers shared by the lint tests: run the linter, read `expect:` annotations, apply edits."""

from __future__ import annotations

import re
from pathlib import Path

from tfdoctor.lint.prefilter import prefilter_for
from tfdoctor.lint.rule import RUNNER_CODES, LintFinding, load_lint_rules
from tfdoctor.lint.runner import LintReport, lint_paths, lint_text
from tfdoctor.lint.target import Target

FIXTURES = Path(__file__).resolve().parents[1] / "lint_fixtures"
_EXPECT = re.compile(r"expect: ((?:SRC\d{3}\s*)+)")


def rules(select: tuple[str, ...] = ()):
    """The selected rules, preview ones included: the fixtures exercise every rule."""
    from tfdoctor.lint.rule import select_lint_rules

    return select_lint_rules(load_lint_rules().rules, select, preview=True)


# A release before tf.data's default rewrites (tfdoctor/knowledge/tfdata_automatic.toml): there a map runs one
# element at a time and nothing prefetches unless the code asks, so the other evidence is what decides.
BEFORE_REWRITES = Target((2, 4), "--target-tensorflow")


def lint(text: str, select: tuple[str, ...] = (), target: Target | None = None) -> LintReport:
    report = lint_text(text, rules(select), "script.py", target)
    assert_prefilter_keeps(text.encode("utf-8"), report)
    return report


def sorted_findings(text: str, path: str, select: tuple[str, ...] = ("SRC102", "SRC103")) -> list[tuple[str, int, str]]:
    """(code, line, severity) of each finding of the rules `select` on `text` linted as `path`, sorted; no crash."""
    report = lint_text(text, rules(select), path)
    assert report.crashes == []
    return sorted((f.code, f.line, f.severity.label) for f in report.findings)


def lint_fixture(name: str) -> LintReport:
    """A fixture linted as if found by walking a directory: through the prefilter (issue 39, item 7)."""
    path = FIXTURES / name
    report = lint_paths([path], rules(), walked=[path])
    assert_prefilter_keeps(path.read_bytes(), report, notebook=path.suffix == ".ipynb")
    return report


def assert_prefilter_keeps(data: bytes, report: LintReport, notebook: bool = False) -> None:
    """Every snippet a lint test writes holds each rule to its triggers: a rule that fires on a file must
    have its triggers in the file's bytes (a notebook: in its code cells), or the prefilter would skip that
    file when walked."""
    for finding in report.findings:
        if finding.code in RUNNER_CODES:
            continue
        spec = next(r for r in report.rules if r.code == finding.code)
        prefilter = prefilter_for([spec])
        assert prefilter is not None, spec.code
        fires = prefilter.may_fire_notebook(data)[0] if notebook else prefilter.may_fire(data)
        assert fires, (
            f"{finding.code} fired at line {finding.line} on a file the prefilter skips: its triggers "
            f"{spec.triggers} miss what it matched (tfdoctor/lint/rules/)")


def expected(name: str) -> list[tuple[int, str]]:
    found = []
    for number, line in enumerate((FIXTURES / name).read_text(encoding="utf-8").splitlines(), 1):
        match = _EXPECT.search(line)
        if match:
            found += [(number, code) for code in match.group(1).split()]
    return sorted(found)


def apply_fixes(text: str, findings: list[LintFinding]) -> str:
    """Apply every edit of every finding (last first, so earlier positions stay valid)."""
    lines = text.splitlines(keepends=True)
    edits = sorted((e for f in findings if f.fix for e in f.fix.edits),
                   key=lambda e: (e.line, e.column), reverse=True)
    for e in edits:
        start = sum(len(x) for x in lines[: e.line - 1]) + e.column - 1
        end = sum(len(x) for x in lines[: e.end_line - 1]) + e.end_column - 1
        joined = "".join(lines)
        lines = (joined[:start] + e.text + joined[end:]).splitlines(keepends=True)
    return "".join(lines)
