"""`profile --measure-mixed-precision`: which policy it measures (the one check recommends, from the same
derivation as the MP checks) and the facts contract the MP and PROF checks read back (no TensorFlow)."""

from __future__ import annotations

import json

import pytest
from conftest import check_facts
from support.framework_facts import A100, P100, gpu_devices, make_facts

from tfdoctor.derive.precision import recommended_policy, set_policy_code
from tfdoctor.profile.cli import policy_to_measure
from tfdoctor.profile.compare import Comparison
from tfdoctor.profile.runner import RunResult
from tfdoctor.profile.stats import RatioInterval
from tfdoctor.testing import facts_from

BF16_CPU = ("avx512f", "avx512_bf16")
ON_BF16 = ("mixed_bfloat16", "recommended by check: this CPU has avx512_bf16")


@pytest.mark.parametrize(("facts", "device", "expected"), [
    (make_facts(flags=BF16_CPU), "auto", ON_BF16),
    (make_facts(flags=("amx_bf16", "amx_tile")), "auto",
     ("mixed_bfloat16", "recommended by check: this CPU has amx_bf16")),
    (make_facts(gpus=gpu_devices(A100, A100), flags=BF16_CPU), "auto",
     ("mixed_float16", "recommended by check: tensor cores")),
    # --device cpu on a GPU host: the CPU is where the workload computes
    (make_facts(gpus=gpu_devices(A100), flags=BF16_CPU), "cpu", ON_BF16),
    # the policy the user declares is the one the MP checks judge
    (make_facts(env={"TFDOCTOR_MIXED_PRECISION": "mixed_float16"}, flags=BF16_CPU), "auto",
     ("mixed_float16", "declared (env.TFDOCTOR_MIXED_PRECISION)")),
])
def test_the_measured_policy_is_the_declared_or_recommended_one(facts, device, expected):
    assert policy_to_measure(facts, device) == expected


@pytest.mark.parametrize("facts", [make_facts(flags=("avx2", "fma")), make_facts(gpus=gpu_devices(P100))])
def test_nothing_is_measured_where_check_recommends_float32(facts):
    policy, why = policy_to_measure(facts, "auto")
    assert policy is None and why.startswith("check recommends float32 here")
    assert recommended_policy(facts) is None


def test_unknown_cpu_flags_say_why_nothing_is_measured():
    facts = facts_from({"host": {"arch": "x86_64"}, "cpu": {"cpuinfo": {"flags": "avx2 fma"}}}, env={})
    policy, why = policy_to_measure(facts, "cpu")
    assert policy is None and why.startswith("cannot tell which policy to measure: cpu.cpuinfo.flags holds")
    assert policy_to_measure(facts_from({}, env={"TFDOCTOR_MIXED_PRECISION": "fp16"}), "cpu") == (
        None, "TFDOCTOR_MIXED_PRECISION=fp16 is not a Keras policy")


def run_profile(monkeypatch, capsys, facts, ratio: float | None, verdict: str, fmt: str = "json"):
    """`profile --measure-mixed-precision --format json` with the workload, the probes and the comparison faked."""
    import tfdoctor.engine
    import tfdoctor.profile.compare
    import tfdoctor.profile.runner
    from tfdoctor.cli import main

    seen: dict[str, object] = {}

    def fake_compare(a, b, workload, **kwargs):
        seen.update(baseline=a, candidate=b, workload=workload, metric=kwargs["metric"], budget=kwargs["budget"])
        result = Comparison(a.label, b.label, verdict=verdict, rounds=2, seconds=30.0, metric="cpu")
        if ratio is not None:
            result.interval = RatioInterval(ratio, ratio * 0.9, ratio * 1.1, 0.99, 16, 16, 14.0)
        return result

    run = RunResult(True, step_seconds=(0.02,) * 10, input_seconds=(0.0,) * 10,
                    devices=({"name": "/device:CPU:0", "type": "CPU"},), policy="float32")
    monkeypatch.setattr(tfdoctor.profile.runner, "run_workload", lambda *a, **k: run)
    monkeypatch.setattr(tfdoctor.engine, "gather_facts", lambda *a, **k: facts)
    monkeypatch.setattr(tfdoctor.profile.compare, "compare", fake_compare)
    with pytest.raises(SystemExit) as exited:
        main(["profile", "--workload", "matmul", "--measure-mixed-precision", "--budget", "45", "--format", fmt])
    out = capsys.readouterr().out
    return exited.value.code, json.loads(out) if fmt == "json" else out, seen


def test_mixed_bfloat16_measured_slower_is_recorded_in_the_mp_checks_contract(monkeypatch, capsys):
    code, document, seen = run_profile(monkeypatch, capsys, make_facts(flags=BF16_CPU), 1.25, "slower")
    assert seen["candidate"].label == "mixed_bfloat16"
    assert seen["workload"] == "cnn"  # asked for matmul: a policy changes Keras layers, and it has none
    assert seen["candidate"].snippet == set_policy_code("mixed_bfloat16")
    assert seen["baseline"].snippet is None and (seen["metric"], seen["budget"]) == ("auto", 45.0)
    profile = document["profile"]
    assert profile["mixed_precision"]["policy"] == "mixed_bfloat16"
    assert profile["mixed_precision"]["metric"] == "cpu"
    assert profile["mixed_precision"]["summary"].startswith(
        "mixed_bfloat16 against float32: slower: step CPU time ×1.25")
    assert profile["mixed_precision_policy"] == "mixed_bfloat16"
    assert profile["mixed_precision_speedup"] == pytest.approx(0.8)
    assert [f["code"] for f in document["findings"]] == ["PROF004"]
    assert document["findings"][0]["message"].startswith("mixed_bfloat16 measured slower than float32")
    assert code == 1
    # MP105 (bf16 units, no policy declared) reads the same measurement and stays silent
    facts = make_facts(flags=BF16_CPU, profile=profile)
    assert check_facts(facts, select=["MP105"]).codes() == []


def test_a_measured_bfloat16_gain_reaches_mp105(monkeypatch, capsys):
    code, document, _ = run_profile(monkeypatch, capsys, make_facts(flags=BF16_CPU), 0.5, "faster")
    assert code == 0 and document["findings"] == []
    assert document["profile"]["mixed_precision_speedup"] == pytest.approx(2.0)
    report = check_facts(make_facts(flags=BF16_CPU, profile=document["profile"]), select=["MP105"])
    assert report.codes() == ["MP105"]
    assert "mixed_bfloat16: 2.00× measured on this host" in report.findings()[0].message


def test_an_undecided_measurement_leaves_the_contract_empty(monkeypatch, capsys):
    _, document, _ = run_profile(monkeypatch, capsys, make_facts(flags=BF16_CPU), None, "undecided")
    profile = document["profile"]
    assert profile["mixed_precision"]["verdict"] == "undecided"
    assert "mixed_precision_policy" not in profile and "mixed_precision_speedup" not in profile


def test_no_comparison_where_check_recommends_float32(monkeypatch, capsys):
    _, document, seen = run_profile(monkeypatch, capsys, make_facts(flags=("avx2",)), 1.0, "slower")
    assert seen == {}
    measured = document["profile"]["mixed_precision"]
    assert measured["verdict"] == "not-measured" and measured["policy"] is None
    assert measured["summary"].startswith("not measured: check recommends float32 here")


def test_the_text_report_names_the_measured_policy(monkeypatch, capsys):
    _, text, _ = run_profile(monkeypatch, capsys, make_facts(flags=BF16_CPU), 1.25, "slower", fmt="text")
    assert "\n  mixed precision mixed_bfloat16 against float32: slower: step CPU time ×1.25 (99.0% CI 1.12–1.38" in text
