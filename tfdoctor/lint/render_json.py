"""The JSON form of a lint report, documented in tfdoctor/schema/lint.schema.json."""

from __future__ import annotations

import json
from typing import Any

from tfdoctor import __version__
from tfdoctor.lint.runner import LintReport

LINT_SCHEMA_VERSION = 1


def report_to_json(report: LintReport) -> dict[str, Any]:
    counts = {s: 0 for s in ("error", "warning", "info")}
    for f in report.findings:
        counts[f.severity.label] += 1
    return {
        "schema_version": LINT_SCHEMA_VERSION,
        "tfdoctor_version": __version__,
        "files": report.files,
        "summary": {**counts, "suppressed": report.suppressed, "crashed": len(report.crashes),
                    "held_back": report.held_back},
        "findings": [f.to_json() for f in report.findings],
        "crashes": list(report.crashes),
        "plugin_errors": list(report.plugin_errors),
    }


def render_json(report: LintReport) -> str:
    return json.dumps(report_to_json(report), indent=2, ensure_ascii=True) + "\n"
