"""The JSON report: versioned, documented in tfdoctor/schema/report.schema.json.

Schema 2 (from schema 1): a result's "severity" is that of its worst finding (the check's declared one
moved to "default_severity"), and a result whose findings are all info has "status": "info", not
"failed". Every schema-1 field is still there with the same name and type.

Schema 3 (from schema 2): a check with nothing to look at on this machine (a GPU check on a host with no
NVIDIA GPU or driver) has "status": "not-applicable" and its "reason", where schema 2 said "passed"; the
summary counts them under "not-applicable". Nothing else changed: a reader of "failed" and "info" records
reads schema 3 as it read schema 2.
"""

from __future__ import annotations

import json

from tfdoctor import __version__
from tfdoctor.engine import Report

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import Any

REPORT_SCHEMA_VERSION = 3


def report_to_json(report: Report) -> dict[str, Any]:
    return {
        "schema_version": REPORT_SCHEMA_VERSION,
        "tfdoctor_version": __version__,
        "facts": {k: report.facts.meta.get(k) for k in ("hostname", "collected_at", "root")},
        "summary": report.counts(),
        "results": [r.to_json() for r in report.results],
        "plugin_errors": list(report.plugin_errors),
    }


def render_json(report: Report) -> str:
    from tfdoctor.facts.redact import redact_value

    return json.dumps(redact_value(report_to_json(report)), indent=2, sort_keys=False, ensure_ascii=True) + "\n"
