"""Run the selected lint rules over files; contain every failure; apply `# tfdoctor: noqa`."""

from __future__ import annotations

import ast
import traceback
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tfdoctor.lint.rule import Hit, LintFinding, LintRuleSpec
from tfdoctor.lint.source import SourceError, SourceModule
from tfdoctor.lint.suppression import is_suppressed, suppressions
from tfdoctor.model import Severity

RUNNER_CODES = frozenset({"SRC001", "SRC002"})  # reported by the runner, not by a rule function


@dataclass
class LintReport:
    rules: list[LintRuleSpec]
    findings: list[LintFinding] = field(default_factory=list)
    crashes: list[str] = field(default_factory=list)  # "path: SRC107 crashed: …"
    files: int = 0
    suppressed: int = 0
    plugin_errors: list[str] = field(default_factory=list)

    def codes(self) -> list[str]:
        return [f.code for f in self.findings]

    def worst(self) -> Severity | None:
        return max((f.severity for f in self.findings), default=None)


def _locate(module: SourceModule, node: ast.AST) -> tuple[int, int, int, int]:
    pos = module.position(node)
    if isinstance(node, ast.Attribute):  # point at `.map`, not at the whole chain before it
        return pos.end_line, pos.end_column - len(node.attr), pos.end_line, pos.end_column
    return pos.line, pos.column, pos.end_line, pos.end_column


def lint_module(module: SourceModule, rules: Iterable[LintRuleSpec], report: LintReport) -> None:
    table = suppressions(module.text)
    seen: set[tuple[str, int, int]] = set()
    for spec in rules:
        if spec.code in RUNNER_CODES:
            continue
        try:
            hits: list[Hit] = list(spec.func(module) or ())
        except Exception as exc:  # a rule bug costs that rule on that file, never the run
            where = traceback.extract_tb(exc.__traceback__)[-1]
            report.crashes.append(f"{module.path}: {spec.code} crashed: {type(exc).__name__}: {exc} "
                                  f"(at {where.filename.rsplit('/', 1)[-1]}:{where.lineno})")
            continue
        for hit in hits:
            line, column, end_line, end_column = _locate(module, hit.node)
            key = (spec.code, line, column)
            if key in seen:
                continue
            seen.add(key)
            if is_suppressed(table, line, spec.code):
                report.suppressed += 1
                continue
            report.findings.append(LintFinding(
                module.path, line, column, end_line, end_column, spec.code, spec.name,
                hit.severity or spec.severity, hit.message, dict(hit.evidence), hit.fix))


def _report_source_error(error: SourceError, path: str, rules: list[LintRuleSpec], report: LintReport) -> None:
    spec = next((r for r in rules if r.code == error.code), None)
    if spec is not None:  # unless --ignore'd
        report.findings.append(LintFinding(path, error.line, error.column, error.line, error.column,
                                           spec.code, spec.name, spec.severity, error.message))


def lint_file(path: Path, display: str, rules: list[LintRuleSpec], report: LintReport) -> None:
    report.files += 1
    try:
        module = SourceModule.from_path(path, display)
    except SourceError as error:
        _report_source_error(error, display, rules, report)
        return
    lint_module(module, rules, report)


def lint_paths(files: Iterable[Path], rules: list[LintRuleSpec], plugin_errors: Iterable[str] = ()) -> LintReport:
    report = LintReport(rules, plugin_errors=list(plugin_errors))
    for path in files:
        lint_file(path, display_path(path), rules, report)
    report.findings.sort(key=lambda f: (f.path, f.line, f.column, f.code))
    return report


def lint_text(text: str, rules: list[LintRuleSpec], path: str = "<string>") -> LintReport:
    """Lint source held in memory (tests, editors)."""
    report = LintReport(rules)
    report.files = 1
    try:
        module = SourceModule.from_text(text, path)
    except SourceError as error:
        _report_source_error(error, path, rules, report)
        return report
    lint_module(module, rules, report)
    report.findings.sort(key=lambda f: (f.path, f.line, f.column, f.code))
    return report


def display_path(path: Path) -> str:
    """Relative to the current directory when below it (what editors and SARIF viewers resolve)."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix() if path.is_absolute() else path.as_posix()
    except ValueError:
        return path.as_posix()
