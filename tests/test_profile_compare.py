"""The comparison loop and fix validation, with fake workload sessions (no TensorFlow)."""

from __future__ import annotations

import itertools

import pytest

from tfdoctor.fixes.plan import plan_fixes
from tfdoctor.fixes.render_sh import render_sh
from tfdoctor.model import Applicability, EnvFix, Finding, PythonFix, set_env
from tfdoctor.profile.compare import CHUNK_STEPS, CHUNKS, MIN_ROUNDS, Arm, compare
from tfdoctor.profile.stats import FASTER, NO_EFFECT, SLOWER, UNDECIDED
from tfdoctor.profile.validate import validate_plan


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def fake_sessions(step_time, clock: FakeClock, round_seconds: float = 10.0, fail: str | None = None):
    """A session factory whose processes report step_time(env, snippet, round) for every step."""
    rounds = itertools.count()
    started = []

    class Session:
        def __init__(self, workload, env, **kwargs):
            self.env, self.snippet = env, kwargs.get("snippet")
            self.round = next(rounds) // 2
            self.step_seconds: list[float] = []
            self.error = None
            self.closed = False
            started.append(self)

        @property
        def cpu_steal(self):
            return 0.0

        def run_steps(self, count, timeout, max_seconds=0.0):
            if fail and self.env.get("ARM") == fail:
                self.error = "ImportError: no tensorflow"
                return False
            clock.now += round_seconds / (2 * CHUNKS)
            self.step_seconds += [step_time(self.env, self.snippet, self.round)] * count
            return True

        def close(self):
            self.closed = True

    return Session, started


def test_a_clear_slowdown_is_decided_after_the_minimum_rounds():
    clock = FakeClock()
    factory, started = fake_sessions(lambda env, snippet, r: 0.02 if env["ARM"] == "B" else 0.01, clock)
    result = compare(Arm("A", {"ARM": "A"}), Arm("B", {"ARM": "B"}), session=factory, clock=clock)
    assert result.verdict == SLOWER
    assert result.rounds == MIN_ROUNDS
    assert result.interval.ratio == pytest.approx(2.0)
    assert len(started) == 2 * MIN_ROUNDS and all(s.closed for s in started)
    assert all(len(s.step_seconds) == CHUNKS * CHUNK_STEPS for s in started)


def test_snippets_and_faster_and_no_effect():
    clock = FakeClock()
    factory, _ = fake_sessions(lambda env, snippet, r: 0.005 if snippet else 0.01, clock)
    assert compare(Arm("A", {}), Arm("B", {}, "x = 1"), session=factory, clock=clock).verdict == FASTER
    factory, _ = fake_sessions(lambda env, snippet, r: 0.01, clock)
    assert compare(Arm("A", {}), Arm("B", {}), session=factory, clock=clock).verdict == NO_EFFECT


def test_noise_runs_out_the_budget_undecided():
    clock = FakeClock()
    noisy = [0.01, 0.03, 0.012, 0.025, 0.02, 0.011, 0.03, 0.01]
    factory, _ = fake_sessions(
        lambda env, snippet, r: noisy[r % 8] if env["ARM"] == "B" else noisy[(r + 3) % 8], clock, round_seconds=12)
    result = compare(Arm("A", {"ARM": "A"}), Arm("B", {"ARM": "B"}), session=factory, clock=clock, budget=60)
    assert result.verdict == UNDECIDED
    assert result.seconds <= 60
    assert result.rounds == 5  # a sixth 12 s round would end past 60 s
    assert "undecided" in result.describe()


def test_a_failing_arm_is_an_error_not_a_verdict():
    clock = FakeClock()
    factory, started = fake_sessions(lambda env, snippet, r: 0.01, clock, fail="B")
    result = compare(Arm("A", {"ARM": "A"}), Arm("B", {"ARM": "B"}), session=factory, clock=clock)
    assert result.error == "B: ImportError: no tensorflow"
    assert result.verdict == UNDECIDED
    assert all(s.closed for s in started)


def _finding(code: str, fix) -> Finding:
    return Finding(f"{code} observed", fixes=(fix,), code=code, name=code.lower())


def test_validate_drops_a_fix_measured_slower_and_keeps_the_rest():
    def step_time(env, snippet, r):
        if snippet:
            return 0.07  # mixed precision on a CPU
        if env.get("TF_ENABLE_ONEDNN_OPTS") == "0":
            return 0.02
        return 0.005 if env.get("TF_NUM_INTRAOP_THREADS") == "2" else 0.01

    clock = FakeClock()
    factory, _ = fake_sessions(step_time, clock)
    findings = [
        _finding("CPU101", EnvFix("Turn oneDNN off", (set_env("TF_ENABLE_ONEDNN_OPTS", "0"),))),
        _finding("THR101", EnvFix("Size the pools", (set_env("TF_NUM_INTRAOP_THREADS", "2"),))),
        _finding("MP001", PythonFix("Use mixed precision",
                                    "tf.keras.mixed_precision.set_global_policy('mixed_float16')",
                                    Applicability.UNSAFE)),
    ]
    plan = plan_fixes(findings, unsafe=True)

    def comparer(a, b, workload, **kwargs):
        return compare(a, b, workload, session=factory, clock=clock, budget=kwargs["budget"])

    validated, validations = validate_plan(plan, {"PATH": "/bin"}, comparer=comparer)
    assert [(v.title, v.comparison.verdict, v.dropped) for v in validations] == [
        ("Turn oneDNN off", SLOWER, True), ("Size the pools", FASTER, False), ("Use mixed precision", SLOWER, True)]
    assert validated.env_values() == {"TF_NUM_INTRAOP_THREADS": "2"}
    assert validated.python == []
    reasons = {s.title: s.reason for s in validated.skipped}
    assert reasons["Turn oneDNN off"].startswith("measured slower: step time ×2.00")
    assert reasons["Use mixed precision"].startswith("measured slower: step time ×7.00")
    script = render_sh(validated, "header")
    assert "TF_ENABLE_ONEDNN_OPTS" not in script and "TF_NUM_INTRAOP_THREADS='2'" in script
