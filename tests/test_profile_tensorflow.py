"""The micro-profile for real, with tensorflow-cpu (slow: about three minutes on two cores).

Each claim of issue 6 once; benchmarks/profile_claims.py repeats them to count how often they hold.
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
from tfdoctor.model import Applicability, EnvFix, Finding, PythonFix, set_env
from tfdoctor.profile.compare import Arm, compare
from tfdoctor.profile.runner import run_workload
from tfdoctor.profile.stats import SLOWER
from tfdoctor.profile.validate import validate_plan

pytestmark = [
    pytest.mark.tensorflow,
    # Located, never imported: the workloads import TensorFlow in their own processes.
    pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="needs tensorflow-cpu"),
]

MIXED = "tf.keras.mixed_precision.set_global_policy('mixed_float16')"


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


def skip_if_busy(verdict: str, foreign_cpu: float | None) -> None:
    """An undecided verdict while other processes held the CPUs is the right answer, not a failed claim:
    the claim is tested where the machine lets it be measured (CI runs alone)."""
    from tfdoctor.profile.compare import BUSY_MACHINE

    if verdict == "undecided" and foreign_cpu is not None and foreign_cpu > BUSY_MACHINE:
        pytest.skip(f"undecided while other processes used {foreign_cpu:.0%} of the CPUs")


def test_compare_through_the_cli_applies_each_env_file_and_reports_slower(fake_home, tmp_path):
    # The env files reach the workload, and a change that must hurt on any multi-core CPU (one intra-op
    # thread instead of two, on the matmul loop) is reported slower. TF_ENABLE_ONEDNN_OPTS=0 is not used
    # here: its effect depends on the CPU (x1.6-2.0 where it was first measured, x0.99 with a 95 % CI of
    # 0.88-1.10 on a 2-CPU AMD EPYC with AVX2); benchmarks/profile_claims.py measures it per machine.
    baseline, candidate = tmp_path / "a.sh", tmp_path / "b.sh"
    baseline.write_text("TF_NUM_INTRAOP_THREADS=2\nexport TF_NUM_INTRAOP_THREADS\n")
    candidate.write_text("TF_NUM_INTRAOP_THREADS=1\nexport TF_NUM_INTRAOP_THREADS\n")
    done = subprocess.run(
        [sys.executable, "-m", "tfdoctor", "profile", "--device", "cpu", "--workload", "matmul", "--compare",
         str(baseline), str(candidate), "--format", "json"], env=environment(fake_home), capture_output=True,
        text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    skip_if_busy(result["verdict"], result["foreign_cpu"])
    assert result["verdict"] == SLOWER, result
    assert result["seconds"] <= 60


def test_one_intra_op_thread_is_slower_than_two(fake_home):
    # The matmul chain: in the CNN's backward pass, inter-op parallelism keeps two cores busy even with
    # one intra-op thread (measured 1.1-1.2x there), so the matmul loop is where intra-op threads show.
    result = compare(Arm("intra=2", environment(fake_home, TF_NUM_INTRAOP_THREADS="2")),
                     Arm("intra=1", environment(fake_home, TF_NUM_INTRAOP_THREADS="1")), "matmul", device="cpu")
    skip_if_busy(result.verdict, result.foreign_cpu)
    assert result.verdict == SLOWER, result.describe()
    assert result.seconds <= 60


def test_mixed_precision_fix_is_measured_slower_on_cpu_and_dropped(fake_home):
    findings = [Finding("float32 on a CPU with AVX512_BF16", code="MP999", name="x",
                        fixes=(PythonFix("Use mixed precision", MIXED, Applicability.UNSAFE),)),
                Finding("threads", code="THR999", name="y",
                        fixes=(EnvFix("Size the pools", (set_env("TF_NUM_INTEROP_THREADS", "2"),)),))]
    plan = plan_fixes(findings, unsafe=True)
    plan.env.clear()  # only the in-process fix is measured here
    validated, (validation,) = validate_plan(plan, environment(fake_home), device="cpu")
    assert validation.comparison.verdict == SLOWER, validation.comparison.describe()
    assert validation.comparison.seconds <= 60
    assert validated.python == []
    assert validated.skipped[-1].reason.startswith("measured slower")


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
