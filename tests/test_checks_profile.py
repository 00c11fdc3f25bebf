from __future__ import annotations

import pytest
from conftest import check_facts

from tfdoctor.model import Applicability, PythonFix, Status
from tfdoctor.testing import facts_from


def section(**overrides):
    base = {"workload": "pyfunc", "ok": True, "devices": ["/device:CPU:0"], "gpu_present": False,
            "input_share": 0.85, "input_bound": True, "cpu_steal": 0.0, "noisy": False,
            "device_activity_captured": None, "steps": {"count": 20, "median_seconds": 0.15}}
    return base | overrides


def test_input_bound_profile_raises_the_tf_data_finding():
    report = check_facts(facts_from({"profile": section()}), select=["PROF"])
    assert report.codes() == ["PROF001"]
    finding = report.findings()[0]
    assert finding.evidence == {"profile.input_share": 0.85, "profile.workload": "pyfunc"}
    (fix,) = finding.fixes
    assert isinstance(fix, PythonFix) and fix.applicability is Applicability.MANUAL
    assert "num_parallel_calls=tf.data.AUTOTUNE" in fix.code and "prefetch(tf.data.AUTOTUNE)" in fix.code


def test_a_fast_pipeline_stays_silent():
    report = check_facts(facts_from({"profile": section(workload="cnn", input_share=0.02, input_bound=False)}),
                         select=["PROF"])
    assert report.codes() == []


def test_noisy_run_is_reported():
    report = check_facts(facts_from({"profile": section(input_share=0.0, input_bound=False, cpu_steal=0.12,
                                                         noisy=True)}), select=["PROF"])
    assert report.codes() == ["PROF003"]
    assert report.findings()[0].evidence == {"profile.cpu_steal": 0.12}


def test_without_a_profile_the_checks_are_not_checked():
    report = check_facts(facts_from({}), select=["PROF"])
    assert {r.status for r in report.results} == {Status.NOT_CHECKED}
    assert report.result("PROF001").reason == "profile was not collected"


def test_a_failed_profile_says_why():
    report = check_facts(facts_from({"profile": {"workload": "cnn", "ok": False, "error": "timed out"}}),
                         select=["PROF001"])
    assert report.result("PROF001").reason == "the profile run failed: timed out"


@pytest.mark.parametrize("captured", [True, None])
def test_captured_or_cpu_only_profiles_do_not_raise_prof002(captured):
    report = check_facts(facts_from({"profile": section(input_bound=False, device_activity_captured=captured)}),
                         select=["PROF002"])
    assert report.codes() == []


def test_measured_mixed_precision_slowdown():
    measured = {"verdict": "slower", "ratio": 7.1234, "low": 5.0, "high": 9.9, "confidence": 0.99,
                "summary": "slower: step time ×7.12"}
    report = check_facts(facts_from({"profile": section(input_bound=False, mixed_precision=measured)}),
                         select=["PROF004"])
    assert report.codes() == ["PROF004"]
    assert report.findings()[0].evidence == {"profile.mixed_precision.ratio": 7.123,
                                             "profile.mixed_precision.low": 5.0, "profile.workload": "pyfunc"}
    faster = check_facts(facts_from({"profile": section(mixed_precision=measured | {"verdict": "faster"})}),
                         select=["PROF004"])
    assert faster.codes() == []
    unmeasured = check_facts(facts_from({"profile": section()}), select=["PROF004"])
    assert unmeasured.result("PROF004").status is Status.NOT_CHECKED


@pytest.mark.parametrize(("fixture", "field", "code"), [
    ("prof001-input-bound-profile-raises-the-tf-data-finding", ("input_share",), "PROF001"),
    ("prof003-noisy-run-is-reported", ("cpu_steal",), "PROF003"),
    ("prof004-measured-mixed-precision-slowdown", ("mixed_precision", "ratio"), "PROF004"),
    ("prof005-launch-bound", ("breakdown", "categories_ms"), "PROF005"),
    ("prof009-mixed-precision-falling-back-to-float32-is-visible",
     ("breakdown", "half_precision_device_share"), "PROF009"),
    ("prof010-all-steps-warm-up-says-so", ("steps",), "PROF010"),
    ("prof011-steps-not-found-is-an-info-finding-with-the-marker", ("step_candidates",), "PROF010"),
])
def test_a_damaged_profile_field_is_not_checked_never_a_crash(fixture, field, code):
    """A facts file edited or damaged by hand (a string where `tfdoctor profile` writes a number, a
    mapping or a list): the check says which field, as with any unreadable fact."""
    from support.snapshot_facts import edited_facts

    result = check_facts(edited_facts(f"checks/{fixture}.json", {"profile." + ".".join(field): "damaged"}),
                         select=[code]).result(code)
    assert result.status is Status.NOT_CHECKED
    assert result.reason == f"profile.{'.'.join(field)} is malformed in the facts (str)"
