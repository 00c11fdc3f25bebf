"""The JSON form of a lint report, documented in tfdoctor/schema/lint.schema.json."""

from __future__ import annotations

import json
from typing import Any

from tfdoctor import __version__
from tfdoctor.lint.runner import LintReport
from tfdoctor.lint.target import OPEN, Target

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
                    "held_back": report.held_back, "own_target": report.own_target},
        "findings": [f.to_json() for f in report.findings],
        "crashes": list(report.crashes),
        "plugin_errors": list(report.plugin_errors),
        # what the text summary says after the counts: a tool reading JSON learns the same
        "target": _target(report.target),
        "held_back_by": dict(sorted(report.held_back_by.items())),
    }


def _release(release: tuple[int, int]) -> str:
    return f"{release[0]}.{release[1]}"


def _target(target: Target | None) -> dict[str, Any] | None:
    if target is None:
        return None
    newest = target.newest or target.release
    return {"name": target.name, "release": _release(target.release),
            "newest": None if newest == OPEN else _release(newest), "origin": target.origin}


def render_json(report: LintReport) -> str:
    return json.dumps(report_to_json(report), indent=2, ensure_ascii=True) + "\n"
