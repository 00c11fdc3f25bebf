"""The JSON record of a check says no more than its findings (issue 16 item 4): its severity is its worst
finding's, and a check whose findings are all info has status "info", not "failed"."""

from __future__ import annotations

import json
import types

from conftest import REPO

from tfdoctor.engine import run_checks
from tfdoctor.facts import Facts
from tfdoctor.model import Finding, Severity
from tfdoctor.registry import check, load_registry
from tfdoctor.report.json_report import report_to_json


def _module() -> types.ModuleType:
    module = types.ModuleType("fake_checks")

    @check("TST001", "warns-but-only-informs", Severity.WARNING)
    def only_info(facts):
        """What it does: x"""
        yield Finding("a hint", severity=Severity.INFO)

    @check("TST002", "warns-and-errs", Severity.WARNING)
    def mixed(facts):
        """What it does: x"""
        yield Finding("a hint", severity=Severity.INFO)
        yield Finding("broken", severity=Severity.ERROR)

    @check("TST003", "warns-by-default", Severity.WARNING)
    def default(facts):
        """What it does: x"""
        yield Finding("slow")

    @check("TST004", "passes", Severity.ERROR)
    def passes(facts):
        """What it does: x"""
        return iter(())

    module.only_info, module.mixed, module.default, module.passes = only_info, mixed, default, passes
    return module


def _records() -> dict[str, dict]:
    registry = load_registry(check_modules=[_module()], probe_modules=[])
    report = report_to_json(run_checks(registry.checks, Facts({}, {})))
    return {r["code"]: r for r in report["results"]}


def test_an_info_only_record_says_info_in_status_and_severity():
    record = _records()["TST001"]
    assert (record["status"], record["severity"], record["default_severity"]) == ("info", "info", "warning")
    assert record["findings"][0]["severity"] == "info"


def test_a_record_takes_the_severity_of_its_worst_finding():
    records = _records()
    assert (records["TST002"]["status"], records["TST002"]["severity"]) == ("failed", "error")
    assert (records["TST003"]["status"], records["TST003"]["severity"]) == ("failed", "warning")
    assert (records["TST004"]["status"], records["TST004"]["severity"], records["TST004"]["default_severity"]) == (
        "passed", "error", "error")


def test_schema_2_accepts_the_info_status_and_requires_default_severity():
    import jsonschema
    import pytest

    schema = json.loads((REPO / "tfdoctor" / "schema" / "report.schema.json").read_text())
    registry = load_registry(check_modules=[_module()], probe_modules=[])
    document = report_to_json(run_checks(registry.checks, Facts({}, {})))
    assert document["schema_version"] == 3
    jsonschema.validate(document, schema)
    del document["results"][0]["default_severity"]
    with pytest.raises(jsonschema.ValidationError, match="default_severity"):
        jsonschema.validate(document, schema)
