"""The GPU step-time breakdown (tfdoctor/profile/breakdown.py) on XSpaces shaped like real GPU traces
(tests/support/gpu_xspace.py), and the PROF checks that read it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import check_facts
from support.gpu_xspace import SCENARIOS, build
from support.xspace_builder import MS

from tfdoctor.facts import Unknown, to_jsonable
from tfdoctor.fixes.plan import plan_fixes
from tfdoctor.profile.breakdown import CATEGORIES, attribute, step_breakdown
from tfdoctor.profile.facts import profile_section
from tfdoctor.profile.runner import RunResult
from tfdoctor.profile.xspace import summarize_xspace
from tfdoctor.testing import facts_from

SCHEMA = Path(__file__).resolve().parents[1] / "tfdoctor" / "schema" / "breakdown.schema.json"


def test_every_instant_goes_to_exactly_one_category():
    # Overlaps resolve by priority: kernel > nccl > memcpy > input > compile > launch > host op; gaps → other.
    spans = [(0, 4, "device_compute"), (2, 6, "copies"), (5, 9, "input"), (8, 12, "launch"),
             (11, 13, "host_compute"), (3, 14, "communication")]
    ps = attribute((0, 20), spans)
    assert ps == {"device_compute": 4, "communication": 10, "copies": 0, "input": 0, "launch": 0,
                  "host_compute": 0, "compilation": 0, "other": 6}
    assert sum(ps.values()) == 20
    assert attribute((0, 10), []) == dict.fromkeys(CATEGORIES, 0) | {"other": 10}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_breakdown_adds_up_to_the_step_on_each_fixture(pb, name):
    scenario = SCENARIOS[name]
    breakdown = step_breakdown(build(pb, scenario))
    assert [s["step"] for s in breakdown["per_step"]] == list(range(scenario.steps))
    expected = scenario.expected_ms()
    for step in breakdown["per_step"]:
        assert step["step_ms"] == pytest.approx(scenario.step_ms(), abs=1e-12)
        # whole picoseconds: each category exactly as the fixture laid it out, and they sum to the step
        assert {k: round(v * MS) for k, v in step["categories_ms"].items()} == {
            k: round(v * MS) for k, v in expected.items()}
        assert sum(round(v * MS) for v in step["categories_ms"].values()) == round(step["step_ms"] * MS)
    assert breakdown["step_ms"] == pytest.approx(10.0, abs=1e-12)
    assert breakdown["categories_ms"] == pytest.approx(expected, abs=1e-9)


def test_breakdown_json_has_the_documented_shape(pb):
    import jsonschema

    schema = json.loads(SCHEMA.read_text())
    for scenario in SCENARIOS.values():
        jsonschema.validate(to_jsonable(step_breakdown(build(pb, scenario))), schema)
    cpu = pb.XSpace()
    host = cpu.planes.add()
    host.name = "/host:CPU"
    assert isinstance(step_breakdown(cpu), Unknown)  # no step markers: nothing to break down


def test_precision_facts_from_kernel_names(pb):
    healthy = step_breakdown(build(pb, SCENARIOS["healthy"]))
    assert healthy["half_precision_device_share"] == pytest.approx(8.0 / 8.5)  # Adam's float kernel is 0.5 of 8.5
    assert healthy["tensor_core_kernels"] is True
    assert healthy["tensor_core_kernel_names"] == [
        "ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn",
        "sm80_xmma_fprop_implicit_gemm_f16f16_f16f32_nhwckrsc_nhwc_tilesize128x128x32_stage4"]
    fallback = step_breakdown(build(pb, SCENARIOS["mixed_precision_fallback"]))
    assert fallback["half_precision_device_share"] == 0.0
    assert fallback["tensor_core_kernels"] is False
    half = step_breakdown(build(pb, SCENARIOS["half_without_tensor_cores"]))
    assert (half["half_precision_device_share"], half["tensor_core_kernels"]) == (1.0, False)


def _section(pb, name: str) -> dict:
    scenario = SCENARIOS[name]
    run = RunResult(True, step_seconds=(0.01,) * scenario.steps, input_seconds=(0.0,) * scenario.steps,
                    tf_version="2.17.0", policy=scenario.policy,
                    devices=({"name": "/device:CPU:0", "type": "CPU"}, {"name": "/device:GPU:0", "type": "GPU"}))
    return profile_section(run, "cnn", summarize_xspace(build(pb, scenario)))


def _report(pb, name: str):
    return check_facts(facts_from({"profile": _section(pb, name)}), select=["PROF"])


def test_healthy_gpu_profile_is_silent(pb):
    report = _report(pb, "healthy")
    assert report.codes() == []
    assert _section(pb, "healthy")["breakdown"]["categories_ms"]["device_compute"] == pytest.approx(8.5)


@pytest.mark.parametrize(("name", "code", "category", "share"), [
    ("launch_bound", "PROF005", "launch", 0.64),
    ("copy_bound", "PROF006", "copies", 0.45),
    ("communication_bound", "PROF007", "communication", 0.40),
    ("compilation_bound", "PROF008", "compilation", 0.50),
])
def test_dominant_category_is_reported_with_its_fix(pb, name, code, category, share):
    report = _report(pb, name)
    assert report.codes() == [code]
    finding = report.findings()[0]
    assert finding.evidence == {f"profile.breakdown.categories_ms.{category}": round(share * 10, 3),
                                "profile.breakdown.step_ms": 10.0, "share": share}
    assert f"{share:.0%} of each" in finding.message


def test_launch_bound_fixes(pb):
    finding = _report(pb, "launch_bound").findings()[0]
    assert finding.message == ("the GPU waited for kernel launches 64% of each step (6.40 of 10.00 ms): "
                               "the steps are launch-bound")
    assert "jit_compile=True" in finding.fixes[0].code and "batch size" in finding.fixes[0].code
    assert plan_fixes([finding], unsafe=True).env_values() == {"TF_GPU_THREAD_MODE": "gpu_private"}
    assert plan_fixes([finding], unsafe=False).env_values() == {}  # it takes threads from the rest: opt-in


def test_fix_texts_name_the_guides_remedies(pb):
    copies = _report(pb, "copy_bound").findings()[0]
    assert "prefetch_to_device" in copies.fixes[0].code
    communication = _report(pb, "communication_bound").findings()[0]
    assert "bytes_per_pack" in communication.fixes[0].code and "--select DIST" in communication.fixes[0].code
    compilation = _report(pb, "compilation_bound").findings()[0]
    assert "drop_remainder=True" in compilation.fixes[0].code


def test_mixed_precision_falling_back_to_float32_is_visible(pb):
    report = _report(pb, "mixed_precision_fallback")
    assert report.codes() == ["PROF009"]
    finding = report.findings()[0]
    assert finding.message == ("the policy is mixed_float16 but only 0% of the GPU kernel time ran in "
                               "float16/bfloat16 kernels: mixed precision fell back to float32")
    assert finding.evidence == {"profile.policy": "mixed_float16",
                                "profile.breakdown.half_precision_device_share": 0.0,
                                "profile.breakdown.tensor_core_kernels": False}


def test_half_precision_without_tensor_cores_is_visible(pb):
    report = _report(pb, "half_without_tensor_cores")
    assert report.codes() == ["PROF009"]
    assert report.findings()[0].message == (
        "the policy is mixed_float16 and 100% of the GPU kernel time ran in float16/bfloat16 kernels, "
        "but none of them on tensor cores")


def test_float32_policy_with_float32_kernels_is_silent(pb):
    section = _section(pb, "mixed_precision_fallback")
    section["policy"] = "float32"
    assert check_facts(facts_from({"profile": section}), select=["PROF009"]).codes() == []


def test_breakdown_checks_without_a_breakdown_are_not_checked(pb):
    section = _section(pb, "launch_bound")
    section["breakdown"] = Unknown("the profile has no step markers")
    report = check_facts(facts_from({"profile": section}), select=["PROF005", "PROF009"])
    assert report.codes() == []
    assert {r.status.value for r in report.results} == {"not-checked"}
