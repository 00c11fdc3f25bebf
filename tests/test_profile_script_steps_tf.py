"""`tfdoctor profile --script` on scripts written the way people write them (issue 22), with real
TensorFlow: Keras 3 `fit` and a custom `tf.function` loop without markers, each input-bound and
compute-bound, the input-bound loop marked as docs/profile.md shows, and an eager loop with no steps.

Each input-bound script waits ~100 ms per batch in a sleeping tf.py_function for a step of ~1-5 ms (input
share ~0.95); each compute-bound one computes ~60-110 ms per step on prefetched in-memory data (~0.01):
a loaded 2-CPU machine slows the compute, which moves neither verdict towards the 0.5 threshold. The
input-bound scripts import their pipeline from a module beside them (slow_input.py), as scripts do: the
script's folder comes first on the path, as under `python train.py`.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

pytestmark = [
    pytest.mark.tensorflow,
    pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="needs tensorflow-cpu"),
]

SCRIPTS = REPO / "tests" / "data" / "scripts"
SCRIPT_STEPS = 24  # every test script runs 24 steps; --warmup 3 leaves 21 timed


def profile(script: str, tmp_path: Path) -> tuple[int, dict, str]:
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "KERAS_HOME"} | {"HOME": str(home), "TF_CPP_MIN_LOG_LEVEL": "2"}
    done = subprocess.run(
        [sys.executable, "-m", "tfdoctor", "profile", "--script", str(SCRIPTS / script), "--device", "cpu",
         "--warmup", "3", "--logdir", str(tmp_path / "logs"), "--format", "json"],
        env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    return done.returncode, json.loads(done.stdout), done.stderr


@pytest.mark.parametrize(("script", "source", "input_bound"), [
    ("fit_input_bound.py", "keras fit", True),
    ("fit_compute_bound.py", "keras fit", False),
    ("loop_input_bound.py", "tf.function train_step", True),
    ("loop_compute_bound.py", "tf.function train_step", False),
    ("loop_input_bound_marked.py", "step markers", True),
])
def test_steps_are_found_and_the_input_verdict_is_right(tmp_path, script, source, input_bound):
    code, data, _ = profile(script, tmp_path)
    found = data["profile"]
    assert found["step_source"] == source
    assert found["steps"]["excluded_warmup"] == 3
    assert found["steps"]["count"] == SCRIPT_STEPS - 3
    codes = {f["code"] for f in data["findings"]}
    assert codes <= {"PROF001", "PROF003"}  # PROF003: a VM whose hypervisor took CPU time meanwhile
    share = found["input_share"]
    if input_bound:
        assert share > 0.5, found
        assert "PROF001" in codes and code == 1
    else:
        assert share < 0.5, found
        assert "PROF001" not in codes and code == (1 if codes else 0)
    # The breakdown splits the same steps the step time counts.
    per_step = [s["step_ms"] / 1000 for s in found["breakdown"]["per_step"]]
    assert len(per_step) == SCRIPT_STEPS - 3
    assert (min(per_step), max(per_step)) == pytest.approx((found["steps"]["min_seconds"],
                                                            found["steps"]["max_seconds"]), rel=1e-6)


def test_a_script_without_steps_says_so_and_points_at_the_python_function(tmp_path):
    code, data, _ = profile("eager_no_steps.py", tmp_path)
    found = data["profile"]
    assert (found["step_source"], found["steps"]["count"], found["input_share"]) == (None, 0, None)
    assert found["top_ops"][0]["op"] == "EagerPyFunc"
    assert [(f["code"], f["severity"]) for f in data["findings"]] == [("PROF010", "info"), ("PROF011", "warning")]
    assert code == 1
