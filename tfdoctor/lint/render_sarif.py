"""SARIF 2.1.0 for code-scanning tools (GitHub code scanning, VS Code's SARIF viewer).

Every selected rule is listed with its documentation as help text, results refer to rules by id and
index, columns count Unicode code points (`columnKind`), paths are relative URIs against `%SRCROOT%`
(the current directory) when they can be, and edits become SARIF fixes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

from tfdoctor import __version__
from tfdoctor.lint.rule import LintFinding, LintRuleSpec, SourceFix
from tfdoctor.lint.runner import LintReport
from tfdoctor.model import Severity

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def _uri(path: str) -> tuple[str, bool]:
    """(uri, relative?) for a finding's path."""
    p = Path(path)
    if p.is_absolute():
        return p.as_uri(), False
    return quote(p.as_posix()), True


def _artifact(path: str) -> dict[str, Any]:
    uri, relative = _uri(path)
    return {"uri": uri, "uriBaseId": "%SRCROOT%"} if relative else {"uri": uri}


def _rule(spec: LintRuleSpec) -> dict[str, Any]:
    return {
        "id": spec.code,
        "name": spec.name,
        "shortDescription": {"text": spec.summary or spec.name},
        "fullDescription": {"text": spec.doc or spec.name},
        "help": {"text": spec.doc or spec.name, "markdown": _markdown(spec)},
        "defaultConfiguration": {"level": _LEVEL[spec.severity]},
        "properties": {"tags": ["tensorflow", "performance"]},
    }


def _markdown(spec: LintRuleSpec) -> str:
    return f"**{spec.code} {spec.name}**\n\n```text\n{spec.doc}\n```\n\nSee `tfdoctor explain {spec.code}`."


def _fix(path: str, fix: SourceFix) -> dict[str, Any]:
    return {
        "description": {"text": f"{fix.title} ({fix.applicability.value})"},
        "artifactChanges": [{
            "artifactLocation": _artifact(path),
            "replacements": [{
                "deletedRegion": {"startLine": e.line, "startColumn": e.column,
                                  "endLine": e.end_line, "endColumn": e.end_column},
                "insertedContent": {"text": e.text},
            } for e in fix.edits],
        }],
    }


def _region(finding: LintFinding) -> dict[str, Any]:
    if finding.cell is None:
        return {"startLine": finding.line, "startColumn": finding.column,
                "endLine": finding.end_line, "endColumn": max(finding.end_column, finding.column)}
    # A notebook: viewers open the .ipynb as text, so the region is the JSON line that stores the source
    # line (columns there are shifted by the JSON quoting); the cell and its line are in the properties.
    region: dict[str, Any] = {"startLine": max(finding.raw_line, 1)}
    region["snippet"] = {"text": f"cell {finding.cell}, line {finding.line}, column {finding.column}"}
    return region


def _result(finding: LintFinding, index: dict[str, int]) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ruleId": finding.code,
        "level": _LEVEL[finding.severity],
        "message": {"text": finding.message},
        "locations": [{"physicalLocation": {
            "artifactLocation": _artifact(finding.path),
            "region": _region(finding),
        }}],
    }
    if finding.code in index:
        result["ruleIndex"] = index[finding.code]
    if finding.fix is not None and finding.fix.edits:
        result["fixes"] = [_fix(finding.path, finding.fix)]
    properties: dict[str, Any] = {}
    if finding.evidence:
        properties["evidence"] = dict(finding.evidence)
    if finding.cell is not None:
        properties.update({"cell": finding.cell, "cellLine": finding.line, "cellColumn": finding.column})
    if properties:
        result["properties"] = properties
    return result


def report_to_sarif(report: LintReport) -> dict[str, Any]:
    rules = sorted(report.rules, key=lambda r: r.code)
    index = {spec.code: i for i, spec in enumerate(rules)}
    notifications = [{"level": "error", "message": {"text": text}} for text in report.crashes]
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "tfdoctor",
                "semanticVersion": __version__,
                "rules": [_rule(spec) for spec in rules],
            }},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().as_uri() + "/"}},
            "columnKind": "unicodeCodePoints",
            "invocations": [{"executionSuccessful": not report.crashes,
                             "toolExecutionNotifications": notifications}],
            "results": [_result(f, index) for f in report.findings],
        }],
    }


def render_sarif(report: LintReport) -> str:
    return json.dumps(report_to_sarif(report), indent=2, ensure_ascii=True) + "\n"
