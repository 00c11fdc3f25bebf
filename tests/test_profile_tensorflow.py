"""The micro-profile for real, with tensorflow-cpu (slow: about three minutes on two cores).

Measured claims are asserted only when decided, and only those that hold on every x86 CPU with two
cores (issue 22); undecided skips with the figures. benchmarks/profile_claims.py repeats the
CPU-dependent ones (mixed precision, oneDNN) and reports them.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tfdoctor.fixes.plan import plan_fixes
from tfdoctor.model import Applicability, Finding, PythonFix
from tfdoctor.profile.runner import run_workload
from tfdoctor.profile.stats import SLOWER
from tfdoctor.profile.validate import validate_plan

pytestmark = [
    pytest.mark.tensorflow,
    # Located, never imported: the workloads import TensorFlow in their own processes.
    pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="needs tensorflow-cpu"),
]

def tree(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


@pytest.fixture
def fake_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text("# the user's\n")
    return home


def environment(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "KERAS_HOME"}
    return env | {"HOME": str(home), "TF_CPP_MIN_LOG_LEVEL": "2"} | extra


def test_synthetic_pipeline_is_not_input_bound_and_home_is_untouched(fake_home):
    before = tree(fake_home)
    run = run_workload("cnn", environment(fake_home), steps=20, warmup=3, timeout=180, device="cpu")
    assert run.ok, run.error
    assert run.input_share < 0.1
    assert run.policy == "float32"
    assert tree(fake_home) == before


def test_py_function_pipeline_is_input_bound_through_the_cli(fake_home, tmp_path):
    before = tree(fake_home)
    logdir = tmp_path / "logs"
    done = subprocess.run(
        [sys.executable, "-m", "tfdoctor", "profile", "--workload", "pyfunc", "--device", "cpu", "--steps", "10",
         "--logdir", str(logdir), "--format", "json"],
        env=environment(fake_home), capture_output=True, text=True, timeout=240)
    assert done.returncode == 1, done.stderr  # PROF001 is a finding
    data = json.loads(done.stdout)
    profile = data["profile"]
    assert profile["input_share"] > 0.7
    assert profile["input_bound"] is True
    assert profile["steps"]["count"] == 10
    assert profile["devices"] == ["/device:CPU:0"]
    assert profile["top_ops"][0]["op"] == "EagerPyFunc"  # read from the XSpace
    assert profile["xspace_file"].startswith(str(logdir))
    assert [f["code"] for f in data["findings"]] == ["PROF001"]
    assert tree(fake_home) == before


def assert_measured_slower(result: dict) -> None:
    """A measured claim is asserted only when the run decided it (issue 22): undecided skips with the
    figures, and so does a decided "no effect"/"faster" while other processes held the CPUs (a second
    thread is worth only what the neighbours leave). The budget is a promise either way."""
    from tfdoctor.profile.compare import BUSY_MACHINE

    interval = result.get("interval") or {}
    figures = (f"{result['verdict']}: ratio {interval.get('ratio', float('nan')):.2f} "
               f"(CI {interval.get('low', float('nan')):.2f}-{interval.get('high', float('nan')):.2f}), "
               f"{result['metric']} time, {result['rounds']} round(s), {result['pairs']} chunk pairs, "
               f"{result['seconds']:.0f} s of {result['budget']:.0f}, other processes used "
               f"{result['foreign_cpu'] or 0:.0%} of the CPUs, load average {os.getloadavg()[0]:.1f}")
    assert result["error"] is None, result["error"]
    assert result["seconds"] <= result["budget"], figures
    if result["verdict"] == "undecided":
        pytest.skip(f"undecided, the claim is not measured here: {figures}")
    if result["verdict"] != SLOWER and (result["foreign_cpu"] or 0) > BUSY_MACHINE:
        pytest.skip(f"decided under load, the second CPU was taken: {figures}")
    assert result["verdict"] == SLOWER, figures


two_cpus = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="two intra-op threads need two CPUs")


@two_cpus
def test_compare_through_the_cli_applies_each_env_file_and_reports_slower(fake_home, tmp_path):
    # The env files reach the workload, and a change that must hurt on any multi-core x86 CPU (one intra-op
    # thread instead of two, on the matmul loop) is reported slower, timed in wall time (CPU time cannot
    # judge parallelism). TF_ENABLE_ONEDNN_OPTS=0 and mixed precision are not used here: their effect
    # depends on the CPU; benchmarks/profile_claims.py measures them per machine.
    baseline, candidate = tmp_path / "a.sh", tmp_path / "b.sh"
    baseline.write_text("TF_NUM_INTRAOP_THREADS=2\nexport TF_NUM_INTRAOP_THREADS\n")
    candidate.write_text("TF_NUM_INTRAOP_THREADS=1\nexport TF_NUM_INTRAOP_THREADS\n")
    done = subprocess.run(
        [sys.executable, "-m", "tfdoctor", "profile", "--device", "cpu", "--workload", "matmul", "--compare",
         str(baseline), str(candidate), "--format", "json"], env=environment(fake_home), capture_output=True,
        text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["budget"], result["metric"]) == (60.0, "wall")
    assert_measured_slower(result)


@two_cpus
def test_an_in_process_fix_measured_slower_is_dropped(fake_home):
    # fix --validate runs an in-process fix's code after `import tensorflow`: here one that takes the
    # matmul loop from two intra-op threads to one, slower on any multi-core x86 CPU. (A mixed-precision
    # fix is not used: mixed_float16 is not slower on a CPU with avx512_fp16 and AMX.)
    one_thread = "tf.config.threading.set_intra_op_parallelism_threads(1)"
    findings = [Finding("a pool of one", code="THR999", name="x",
                        fixes=(PythonFix("Use one intra-op thread", one_thread, Applicability.UNSAFE),))]
    plan = plan_fixes(findings, unsafe=True)
    validated, (validation,) = validate_plan(plan, environment(fake_home, TF_NUM_INTRAOP_THREADS="2"),
                                             workload="matmul", device="cpu", budget=60)
    assert_measured_slower(validation.comparison.to_json())
    assert validated.python == []
    assert validated.skipped[-1].reason.startswith("measured slower: step wall time")


def test_measure_mixed_precision_measures_the_policy_check_recommends(fake_home, tmp_path):
    # Which policy, and that the measurement lands in the MP checks' contract: true on every CPU. Its
    # direction is not asserted (bfloat16 pays on some CPUs, not on others; benchmarks/profile_claims.py).
    from tfdoctor.engine import gather_facts
    from tfdoctor.facts.machine import Machine
    from tfdoctor.profile.cli import policy_to_measure
    from tfdoctor.registry import load_registry

    env = environment(fake_home)
    expected, why = policy_to_measure(gather_facts(load_registry().probes, Machine(environ=env)), "cpu")
    done = subprocess.run(
        [sys.executable, "-m", "tfdoctor", "profile", "--device", "cpu", "--workload", "matmul", "--steps", "10",
         "--measure-mixed-precision", "--budget", "30", "--logdir", str(tmp_path / "logs"), "--format", "json"],
        env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 1), done.stderr
    profile = json.loads(done.stdout)["profile"]
    measured = profile["mixed_precision"]
    assert (measured["policy"], measured["why"]) == (expected, why)
    if expected is None:
        assert measured["verdict"] == "not-measured"
        return
    # the CNN (a policy changes Keras layers; the matmul loop has none), timed in CPU time (same threads)
    assert (measured["workload"], measured["metric"]) == ("cnn", "cpu")
    assert measured["seconds"] <= 30
    if measured["verdict"] in ("undecided", "error"):
        assert "mixed_precision_speedup" not in profile
        pytest.skip(measured["summary"])
    assert profile["mixed_precision_policy"] == expected
    assert profile["mixed_precision_speedup"] == pytest.approx(1 / measured["ratio"])


def test_a_users_script_is_profiled_with_its_step_markers(fake_home, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "import sys\n"
        "import tensorflow as tf\n"
        "assert sys.argv[0].endswith('train.py')\n"
        "x = tf.random.uniform((128, 128))\n"
        "for step in range(5):\n"
        "    with tf.profiler.experimental.Trace('train', step_num=step, _r=1):\n"
        "        tf.matmul(x, x).numpy()\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "tfdoctor", "profile", "--script", str(script), "--device", "cpu",
         "--logdir", str(tmp_path / "logs"), "--format", "json"],
        env=environment(fake_home), capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    profile = json.loads(done.stdout)["profile"]
    assert profile["workload"] == "script"
    assert profile["step_source"] == "step markers"
    # --warmup (default 3) applies to a script: of its 5 marked steps the first 3 are not timed.
    assert (profile["steps"]["count"], profile["steps"]["excluded_warmup"]) == (2, 3)
    assert profile["input_share"] < 0.1  # between two markers only the loop's own Python runs
    assert profile["input_bound"] is False
