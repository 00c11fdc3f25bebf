"""The comparison loop, its budget and fix validation, with fake workload sessions (no TensorFlow)."""

from __future__ import annotations

import itertools
import math
import sys
import time
from pathlib import Path

import pytest

from tfdoctor.fixes.plan import plan_fixes
from tfdoctor.fixes.render_sh import render_sh
from tfdoctor.model import Applicability, EnvFix, Finding, PythonFix, set_env
from tfdoctor.profile.compare import (
    CHUNK_STEPS,
    CPU,
    FIRST_LOOK_ALPHA,
    PAIRS,
    RESERVE,
    WALL,
    Arm,
    choose_metric,
    compare,
)
from tfdoctor.profile.runner import Chunk, CpuTimes
from tfdoctor.profile.stats import FASTER, NO_EFFECT, SLOWER, UNDECIDED
from tfdoctor.profile.validate import validate_plan


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(autouse=True)
def quiet_machine(monkeypatch):
    """The fake-clock comparisons must not read the real machine's load: on a busy box the real
    /proc/stat made describe() add "other processes used 100 % of the CPUs" to an exact expected text."""
    monkeypatch.setattr("tfdoctor.profile.compare.read_cpu_times", lambda: None)


def fake_sessions(step_time, clock: FakeClock, *, setup: float = 4.0, chunk: float = 0.5, cpu_time=None,
                  hang: tuple[str, int] | None = None, fail: str | None = None, devices=("CPU",)):
    """A session factory whose processes report step_time(env, snippet, round, chunk) for every step (and
    cpu_time(...) as its CPU time, default the same). hang=(ARM, n): that arm's process stops answering at
    its n-th request (0: while starting), holding the caller until its timeout. fail=ARM: it exits at once."""
    rounds = itertools.count()
    log: list[tuple[str, str]] = []
    started: list = []

    class Session:
        def __init__(self, workload, env, **kwargs):
            self.env, self.snippet = env, kwargs.get("snippet")
            self.round = next(rounds) // 2
            self.step_seconds: list[float] = []
            self.cpu_seconds: list[float] = []
            self.chunks: list[Chunk] = []
            self.error = None
            self.timed_out = False
            self.closed_with: float | None = None
            self.requests = 0
            self.devices = list(devices)
            started.append(self)

        @property
        def cpu_steal(self):
            return 0.0

        def _answer(self, timeout: float, seconds: float) -> bool:
            if hang and self.env.get("ARM") == hang[0] and self.requests == hang[1]:
                clock.now += timeout
                self.error, self.timed_out = "the workload process did not answer in time", True
                return False
            if fail and self.env.get("ARM") == fail:
                self.error = "ImportError: no tensorflow"
                return False
            self.requests += 1
            clock.now += seconds
            return True

        def wait_ready(self, timeout):
            return self.requests > 0 or self._answer(timeout, setup / 2)

        def run_steps(self, count, timeout, max_seconds=0.0):
            if not self.wait_ready(timeout) or not self._answer(timeout, chunk):
                return False
            log.append((self.env.get("ARM", "?"), self.snippet or ""))
            number = len(self.chunks)
            wall = [step_time(self.env, self.snippet, self.round, number)] * count
            cpu = [(cpu_time or step_time)(self.env, self.snippet, self.round, number)] * count
            self.chunks.append(Chunk(tuple(wall), tuple(cpu)))
            self.step_seconds += wall
            self.cpu_seconds += cpu
            return True

        def close(self, grace=2.0):
            self.closed_with = grace

    Session.log, Session.started = log, started
    return Session


def by_arm(a: float, b: float):
    return lambda env, snippet, r, c: b if env.get("ARM") == "B" else a


A, B = Arm("A", {"ARM": "A"}), Arm("B", {"ARM": "B"})


def test_a_clear_slowdown_is_decided_after_one_round_of_alternating_chunk_pairs():
    clock = FakeClock()
    factory = fake_sessions(by_arm(0.01, 0.02), clock)
    result = compare(A, B, session=factory, clock=clock)
    assert result.verdict == SLOWER
    assert result.rounds == 1 and result.pairs == PAIRS
    assert result.interval.ratio == pytest.approx(2.0)
    assert result.interval.confidence == pytest.approx(1 - FIRST_LOOK_ALPHA)
    # A B, then B A: a steady drift of the load falls on both arms
    assert [arm for arm, _ in factory.log[:4]] == ["A", "B", "B", "A"]
    assert len(factory.started) == 2 and all(s.closed_with == 2.0 for s in factory.started)
    assert all(len(s.step_seconds) == PAIRS * CHUNK_STEPS for s in factory.started)
    assert result.a_steps == [pytest.approx(0.01)] and result.b_steps == [pytest.approx(0.02)]
    data = result.to_json()
    assert data["verdict"] == "slower" and data["pairs"] == PAIRS and data["budget"] == 60.0
    assert data["log_ratios"] == [[pytest.approx(math.log(2))] * PAIRS]
    assert result.describe().startswith("slower: step CPU time ×2.00 (99.0% CI ")


def test_snippets_and_faster_and_no_effect():
    clock = FakeClock()
    factory = fake_sessions(lambda env, snippet, r, c: 0.005 if snippet else 0.01, clock)
    assert compare(Arm("A", {}), Arm("B", {}, "x = 1"), session=factory, clock=clock).verdict == FASTER
    factory = fake_sessions(lambda env, snippet, r, c: 0.01 * (1.001 if c % 2 else 0.999), clock)
    assert compare(Arm("A", {}), Arm("B", {}), session=factory, clock=clock).verdict == NO_EFFECT


NOISY = [0.01, 0.03, 0.012, 0.025, 0.02, 0.011, 0.03, 0.01]


def noise(env, snippet, r, c):
    return NOISY[(c + (3 if env["ARM"] == "A" else 0) + r) % 8]


def test_noise_stops_at_the_budget_undecided():
    clock = FakeClock()
    factory = fake_sessions(noise, clock, setup=16.0, chunk=0.25)  # 24 s rounds
    result = compare(A, B, session=factory, clock=clock, budget=60)
    assert result.verdict == UNDECIDED
    assert result.seconds <= 60 - RESERVE
    assert result.rounds == 2  # a third would not fit: 11 s left, the setup alone takes 16
    assert result.stopped == "another round would not fit in the 60 s budget"
    assert result.describe().startswith("undecided: step CPU time ×")
    assert result.describe().endswith("2 round(s), 32 chunk pairs, 48 s of 60) — another round would not fit in the "
                                      "60 s budget")


def test_the_last_round_is_cut_at_the_budget_and_its_pairs_count():
    clock = FakeClock()
    factory = fake_sessions(noise, clock, setup=12.0, chunk=0.25)  # 20 s rounds: the third is cut at 59 s
    result = compare(A, B, session=factory, clock=clock, budget=60)
    assert result.verdict == UNDECIDED
    assert result.seconds <= 60 - RESERVE
    assert result.rounds == 3 and len(result.log_ratios[-1]) < PAIRS
    assert result.stopped == "the 60 s budget ran out"


def test_a_child_that_hangs_while_starting_costs_the_budget_not_more():
    clock = FakeClock()
    factory = fake_sessions(by_arm(0.01, 0.02), clock, hang=("B", 0))
    result = compare(A, B, session=factory, clock=clock, budget=30)
    assert result.error is None and result.verdict == UNDECIDED
    assert result.seconds == pytest.approx(30 - RESERVE)
    assert result.stopped == "the 30 s budget ran out while starting B"
    assert result.describe() == "undecided after 0 round(s) in 29 s — the 30 s budget ran out while starting B"
    assert all(s.closed_with == 0.0 for s in factory.started)  # killed at once: no grace past the budget


def test_a_round_cut_short_by_the_budget_still_decides_from_its_finished_pairs():
    clock = FakeClock()
    factory = fake_sessions(by_arm(0.01, 0.03), clock, hang=("B", 1 + 4))  # hangs at its fifth chunk
    result = compare(A, B, session=factory, clock=clock, budget=40)
    assert result.verdict == SLOWER
    assert result.pairs == 4 and result.rounds == 1
    assert result.seconds <= 40


def test_a_failing_arm_is_an_error_not_a_verdict():
    clock = FakeClock()
    factory = fake_sessions(by_arm(0.01, 0.01), clock, fail="B")
    result = compare(A, B, session=factory, clock=clock)
    assert result.error == "B: ImportError: no tensorflow"
    assert result.verdict == UNDECIDED
    assert result.describe() == "not measured: B: ImportError: no tensorflow"
    assert all(s.closed_with is not None for s in factory.started)


def test_metric_is_cpu_time_only_where_it_is_honest():
    two, one = Arm("2", {"TF_NUM_INTRAOP_THREADS": "2"}), Arm("1", {"TF_NUM_INTRAOP_THREADS": "1"})
    assert choose_metric(two, one, "matmul", "cpu") == (WALL, "the arms differ in parallelism (TF_NUM_INTRAOP_THREADS)")
    assert choose_metric(Arm("a", {"OMP_PROC_BIND": "close"}), Arm("b", {}), "cnn", "cpu")[0] == WALL
    snippet = Arm("b", {}, "tf.config.threading.set_intra_op_parallelism_threads(1)")
    assert choose_metric(Arm("a", {}), snippet, "cnn", "auto") == (WALL, "a snippet changes threading")
    assert choose_metric(Arm("a", {}), Arm("b", {}, "x"), "pyfunc", "cpu")[0] == WALL
    assert choose_metric(Arm("a", {}), Arm("b", {}, "x"), "cnn", "gpu")[0] == WALL
    onednn = Arm("b", {"TF_ENABLE_ONEDNN_OPTS": "0"})
    assert choose_metric(Arm("a", {}), onednn, "cnn", "auto")[0] == CPU


def test_the_cpu_metric_reads_cpu_time_and_a_gpu_switches_to_wall_time():
    # Same CPU work, B waits twice as long on the wall clock (e.g. it was descheduled): CPU time says no effect.
    clock = FakeClock()
    factory = fake_sessions(by_arm(0.01, 0.02), clock, cpu_time=lambda env, snippet, r, c: 0.01)
    result = compare(A, B, session=factory, clock=clock)
    assert (result.metric, result.verdict) == (CPU, NO_EFFECT)
    assert compare(A, B, session=factory, clock=clock, metric=WALL).verdict == SLOWER
    factory = fake_sessions(by_arm(0.01, 0.02), clock, cpu_time=lambda env, snippet, r, c: 0.01,
                            devices=("CPU", "GPU"))
    result = compare(A, B, session=factory, clock=clock)
    assert (result.metric, result.metric_reason, result.verdict) == (WALL, "steps run on a GPU", SLOWER)
    assert result.to_json()["metric"] == "wall"
    with pytest.raises(ValueError):
        compare(A, B, session=factory, clock=clock, metric="gpu")


FAKE_CHILD = """\
import sys, time
mode = sys.argv[-1]
if mode == "hang-start":
    time.sleep(600)
if mode == "half-a-line":  # stops in the middle of its ready line
    sys.stdout.write('TFDOCTOR {"ready": tr')
    sys.stdout.flush()
    time.sleep(600)
print("a library's own chatter on stdout", flush=True)
print('TFDOCTOR {"ready": true, "devices": [{"name": "cpu", "type": "CPU"}]}', flush=True)
for line in sys.stdin:
    if mode == "hang-steps":
        time.sleep(600)
    print('TFDOCTOR {"step_seconds": [0.01, 0.01], "input_seconds": [0, 0], "cpu_seconds": [0.01, 0.01]}',
          flush=True)
"""


@pytest.mark.parametrize("mode", ["hang-start", "half-a-line", "hang-steps"])
def test_a_real_hung_child_is_killed_at_the_budget(tmp_path: Path, mode: str):
    child = tmp_path / "child.py"
    child.write_text(FAKE_CHILD)
    python = tmp_path / "python"
    # The session runs PYTHON workload_main.py SPEC: this interpreter runs the fake child instead.
    python.write_text(f"#!/bin/sh\nexec {sys.executable} {child} \"$@\" {mode}\n")
    python.chmod(0o755)
    started = time.monotonic()
    result = compare(Arm("A", {"PATH": "/bin"}), Arm("B", {"PATH": "/bin"}), "matmul", budget=4, python=str(python))
    assert time.monotonic() - started < 4 + 3  # the budget, and the kill (its 0.5 s grace; a loaded machine)
    assert result.verdict == UNDECIDED and result.error is None
    assert result.stopped == ("the 4 s budget ran out while timing A" if mode == "hang-steps"
                              else "the 4 s budget ran out while starting A")


def test_a_real_child_that_answers_is_measured(tmp_path: Path):
    child = tmp_path / "child.py"
    child.write_text(FAKE_CHILD)
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\nexec {sys.executable} {child} \"$@\" answer\n")
    python.chmod(0o755)
    result = compare(Arm("A", {"PATH": "/bin"}), Arm("B", {"PATH": "/bin"}), "cnn", budget=30, python=str(python))
    assert result.error is None and result.metric == CPU
    assert result.pairs >= PAIRS and result.log_ratios[0] == [0.0] * PAIRS  # the same 0.01 s from both


def _finding(code: str, fix) -> Finding:
    return Finding(f"{code} observed", fixes=(fix,), code=code, name=code.lower())


def test_validate_drops_a_fix_measured_slower_and_keeps_the_rest():
    def step_time(env, snippet, r, c):
        if snippet:
            return 0.07  # mixed precision on a CPU
        if env.get("TF_ENABLE_ONEDNN_OPTS") == "0":
            return 0.02
        return 0.005 if env.get("TF_NUM_INTRAOP_THREADS") == "2" else 0.01

    clock = FakeClock()
    factory = fake_sessions(step_time, clock)
    findings = [
        _finding("CPU101", EnvFix("Turn oneDNN off", (set_env("TF_ENABLE_ONEDNN_OPTS", "0"),))),
        _finding("THR101", EnvFix("Size the pools", (set_env("TF_NUM_INTRAOP_THREADS", "2"),))),
        _finding("MP001", PythonFix("Use mixed precision",
                                    "tf.keras.mixed_precision.set_global_policy('mixed_float16')",
                                    Applicability.UNSAFE)),
    ]
    plan = plan_fixes(findings, unsafe=True)
    budgets = []

    def comparer(a, b, workload, **kwargs):
        budgets.append(kwargs["budget"])
        return compare(a, b, workload, session=factory, clock=clock, budget=kwargs["budget"])

    validated, validations = validate_plan(plan, {"PATH": "/bin"}, comparer=comparer, budget=45)
    assert budgets == [45, 45, 45]  # each comparison bounded by its own budget
    assert [(v.title, v.comparison.verdict, v.dropped) for v in validations] == [
        ("Turn oneDNN off", SLOWER, True), ("Size the pools", FASTER, False), ("Use mixed precision", SLOWER, True)]
    assert validated.env_values() == {"TF_NUM_INTRAOP_THREADS": "2"}
    assert validated.python == []
    reasons = {s.title: s.reason for s in validated.skipped}
    assert reasons["Turn oneDNN off"].startswith("measured slower: step CPU time ×2.00")
    assert reasons["Use mixed precision"].startswith("measured slower: step CPU time ×7.00")
    script = render_sh(validated, "header")
    assert "TF_ENABLE_ONEDNN_OPTS" not in script and "TF_NUM_INTRAOP_THREADS='2'" in script


def test_a_busy_machine_is_named_in_the_verdict(monkeypatch):
    # busy, total jiffies: others used 90 of every 100 ticks while the comparison ran (our children none)
    ticks = iter([CpuTimes(0, 0, 0), CpuTimes(0, 90, 100)])
    monkeypatch.setattr("tfdoctor.profile.compare.read_cpu_times", lambda: next(ticks))
    monkeypatch.setattr("tfdoctor.profile.compare._children_cpu", lambda: 0.0)
    clock = FakeClock()
    result = compare(A, B, session=fake_sessions(noise, clock, setup=16.0, chunk=0.25), clock=clock, budget=60)
    assert result.foreign_cpu == pytest.approx(0.9)
    assert "; other processes used 90% of the CPUs meanwhile)" in result.describe()
