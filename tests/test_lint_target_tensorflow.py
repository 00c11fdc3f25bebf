"""The knowledge table tfdata_automatic against the TensorFlow installed here: for each mapped function below,
lint's verdict on the installed release (silent when tf.data parallelizes the map itself, a warning when it runs
one element at a time) is what tf.data's own graph rewrite does, as its assert_next testing transformation
reports it; and a pipeline that ends in a batch is prefetched by tf.data itself from the table's release."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import pytest
from support.lint_support import lint

from tfdoctor.lint.costs import State, function_state
from tfdoctor.lint.source import SourceModule
from tfdoctor.lint.target import installed, rewrite

pytestmark = [
    pytest.mark.tensorflow,
    pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="needs tensorflow-cpu"),
]

# name: the body of `def work(x):`, given x = an int64 element; every line is valid in a tf.data map.
CASES = {
    "arithmetic": "return x * 2",
    "read and decode": "return tf.io.decode_jpeg(tf.io.read_file(PATH))",
    "resize": "return tf.image.resize(tf.zeros([4, 4, 3]), [8, 8])",
    "stateless random": "return tf.random.stateless_uniform([], seed=[1, 2])",
    "random op": "return tf.cast(x, tf.float32) + tf.random.uniform([])",
    "random flip": "return tf.image.random_flip_left_right(tf.zeros([4, 4, 3]))",
    "py_function": "return tf.py_function(lambda a: a, [x], tf.int64)",
    "numpy_function": "return tf.numpy_function(lambda a: a, [x], tf.int64)",
    "print": "tf.print(x)\n    return x",
}

PROBE = textwrap.dedent("""
    import json, os, sys, tempfile
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import tensorflow as tf
    from tensorflow.python.data.experimental.ops import testing

    PATH = os.path.join(tempfile.mkdtemp(), "x.jpg")
    tf.io.write_file(PATH, tf.io.encode_jpeg(tf.zeros([4, 4, 3], tf.uint8)))

    def follows(ds):  # what tf.data really runs after the probe point, once its rewrites ran
        try:
            next(iter(ds))
        except tf.errors.InvalidArgumentError as error:
            return str(error).split("but encountered ", 1)[1].split(" ", 1)[0]
        return "?"

    maps = {}
    for name, body in json.loads(sys.argv[1]).items():
        scope = {"tf": tf, "PATH": PATH}
        exec("def work(x):\\n    " + body, scope)
        maps[name] = follows(tf.data.Dataset.range(4).apply(testing.assert_next(["__probe__"])).map(scope["work"]))
    after_batch = follows(tf.data.Dataset.range(8).apply(testing.assert_next(["BatchV2", "__probe__"])).batch(2))
    print(json.dumps({"version": tf.__version__, "maps": maps, "after_batch": after_batch}))
""")


@pytest.fixture(scope="module")
def rewritten() -> dict:
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(CASES)], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_installed_release_is_what_lint_reads(rewritten) -> None:
    target = installed()
    assert target is not None and rewritten["version"].startswith(target.name + ".")


@pytest.mark.parametrize("name", sorted(CASES))
def test_lint_is_silent_exactly_where_tf_data_parallelizes_the_map_itself(rewritten, name: str) -> None:
    target = installed()
    assert target is not None and target.release >= rewrite("map_parallelization")["since"]
    parallel = rewritten["maps"][name].startswith("ParallelMap")
    assert parallel or rewritten["maps"][name].startswith("Map"), rewritten["maps"][name]
    body = CASES[name].replace("PATH", "path")
    text = ("import tensorflow as tf\n\n\ndef work(x):\n    " + body + "\n\n\n"
            "ds = tf.data.TFRecordDataset(files).map(work).batch(32)\nmodel.fit(ds)\n")
    module = SourceModule.from_text(text)
    [call] = [c for c in module.calls if isinstance(c.func, ast.Attribute) and c.func.attr == "map"]
    state, _ = function_state(module, call.args[0])
    assert (state is State.STATEFUL) is not parallel, (name, state, rewritten["maps"][name])
    findings = lint(text, select=("SRC103",), target=target).findings
    # a finding is possible only where the map runs one at a time; a cheap one may still be silent (no work)
    assert not (parallel and findings), (name, rewritten["maps"][name], [f.message for f in findings])
    if not parallel and findings:
        assert findings[0].severity.label == "warning"
        assert findings[0].grounds["runs-one-at-a-time"].startswith("the mapped function is stateful")


def test_a_pipeline_ending_in_a_batch_is_prefetched_by_tf_data_itself_from_the_tables_release(rewritten) -> None:
    target = installed()
    assert target is not None
    injected = rewritten["after_batch"] == "Prefetch"
    assert injected is (target.release >= rewrite("inject_prefetch")["since"]), rewritten["after_batch"]
    text = ("import tensorflow as tf\n\n\ndef work(x):\n    return tf.io.decode_jpeg(tf.io.read_file(x))\n\n\n"
            "ds = tf.data.TFRecordDataset(files).map(work, num_parallel_calls=8).batch(32)\nmodel.fit(ds)\n")
    assert (lint(text, select=("SRC102",), target=target).findings == []) is injected
