"""Each SRC rule on real-shaped training scripts (tests/lint_fixtures), plus the edge cases of each."""

from __future__ import annotations

import ast

import pytest
from support.lint_support import FIXTURES, apply_fixes, expected, lint, lint_fixture, rules

from tfdoctor.model import Applicability

# Every script of tests/lint_fixtures: a new pair is linted whole without being listed here.
BAD = sorted(p.name for p in FIXTURES.glob("*_bad.py"))
GOOD = sorted(p.name for p in FIXTURES.glob("*_good.py"))

# Every rule: the fixture that must trigger it and its fixed twin that must stay silent.
RULE_FIXTURES = {
    "SRC101": ("keras_fit_bad.py", "keras_fit_good.py"),
    "SRC102": ("keras_fit_bad.py", "keras_fit_good.py"),
    "SRC103": ("input_pipeline_bad.py", "input_pipeline_good.py"),
    "SRC104": ("input_pipeline_bad.py", "input_pipeline_good.py"),
    "SRC105": ("input_pipeline_bad.py", "input_pipeline_good.py"),
    "SRC106": ("input_pipeline_bad.py", "input_pipeline_good.py"),
    "SRC107": ("custom_loop_bad.py", "custom_loop_good.py"),
    "SRC108": ("custom_loop_bad.py", "custom_loop_good.py"),
    "SRC109": ("custom_loop_bad.py", "custom_loop_good.py"),
    "SRC110": ("custom_loop_bad.py", "custom_loop_good.py"),
    "SRC111": ("keras_fit_bad.py", "keras_fit_good.py"),
    "SRC112": ("keras_fit_bad.py", "keras_fit_good.py"),
    "SRC113": ("keras_fit_bad.py", "keras_fit_good.py"),
    "SRC114": ("custom_loop_bad.py", "custom_loop_good.py"),
    "SRC115": ("input_pipeline_bad.py", "input_pipeline_good.py"),
}


# Issue 39, item 1: the evidence the input-pipeline and step rules need, a case per kind, and each case's twin.
EVIDENCE_FIXTURES = ("evidence_bad.py", "evidence_good.py")


def test_every_rule_has_a_triggering_and_a_silent_fixture():
    codes = {r.code for r in rules() if r.code >= "SRC100"}
    assert not codes - set(RULE_FIXTURES), (f"{sorted(codes - set(RULE_FIXTURES))} have no fixture pair: add "
                                            "tests/lint_fixtures/<script>_bad.py and _good.py to RULE_FIXTURES")
    assert codes == set(RULE_FIXTURES)
    assert {name for pair in RULE_FIXTURES.values() for name in pair} | set(EVIDENCE_FIXTURES) == set(BAD + GOOD)


@pytest.mark.parametrize("name", BAD + GOOD)
def test_fixture_findings_are_exactly_the_annotated_lines(name):
    report = lint_fixture(name)
    assert report.crashes == []
    assert sorted((f.line, f.code) for f in report.findings) == expected(name)


@pytest.mark.parametrize("code", sorted(RULE_FIXTURES))
def test_rule_triggers_on_bad_and_stays_silent_on_good(code):
    bad, good = RULE_FIXTURES[code]
    assert code in lint_fixture(bad).codes()
    assert code not in lint_fixture(good).codes()


def test_applying_the_proposed_edits_gives_valid_python_without_those_findings():
    text = (FIXTURES / "keras_fit_bad.py").read_text(encoding="utf-8")
    before = lint(text)
    fixed = apply_fixes(text, before.findings)
    ast.parse(fixed)
    after = lint(fixed)
    edited = {f.code for f in before.findings if f.fix and f.fix.edits}
    assert edited == {"SRC101", "SRC102", "SRC103", "SRC109", "SRC111"}
    assert not edited & set(after.codes())
    assert "train = train.shuffle(10_000).map(augment, num_parallel_calls=tf.data.AUTOTUNE)" in fixed
    # Prefetch is added where the pipeline is consumed, not where a function returns it.
    assert "model.fit(train.prefetch(tf.data.AUTOTUNE), epochs=args.epochs, validation_data=test)" in fixed
    assert 'layers.Conv2D(64, 3, padding="same", use_bias=False, data_format="channels_last")' in fixed
    assert 'layers.Dense(NUM_CLASSES, activation="softmax", dtype="float32")' in fixed


# --- import aliases -------------------------------------------------------------------------------

@pytest.mark.parametrize("imports, layer", [
    ("import tensorflow as tf", "tf.keras.layers.Conv2D"),
    ("from tensorflow import keras", "keras.layers.Conv2D"),
    ("from tensorflow.keras import layers", "layers.Conv2D"),
    ("import keras", "keras.layers.Conv2D"),
    ("from keras import layers as L", "L.Conv2D"),
    ("from tensorflow.keras.layers import Conv2D as C", "C"),
    ("import tf_keras", "tf_keras.layers.Conv2D"),
    ("import tensorflow.compat.v1 as tf1", "tf1.keras.layers.Conv2D"),
])
def test_layer_names_resolve_through_every_import_style(imports, layer):
    report = lint(f'{imports}\n\nx = {layer}(32, 3, data_format="channels_first")\n', select=("SRC101",))
    assert [(f.code, f.line) for f in report.findings] == [("SRC101", 3)]


def test_a_local_class_with_a_layer_name_is_not_a_keras_layer():
    text = 'class Conv2D:\n    def __init__(self, *a, **k): ...\n\nx = Conv2D(32, data_format="channels_first")\n'
    assert lint(text, select=("SRC101",)).findings == []


# --- SRC101 ---------------------------------------------------------------------------------------

def test_channels_first_default_format_is_flagged_with_its_edit():
    report = lint('from tensorflow import keras\nkeras.backend.set_image_data_format("channels_first")\n')
    (finding,) = report.findings
    assert finding.code == "SRC101"
    assert finding.fix.applicability is Applicability.MANUAL  # shown, never applied: the layout changes the outputs
    assert [(e.line, e.column, e.end_column, e.text) for e in finding.fix.edits] == [(2, 37, 53, '"channels_last"')]


# --- SRC102 / SRC103 ------------------------------------------------------------------------------

PIPELINE = """\
import tensorflow as tf

def parse(x):
    return tf.io.parse_single_example(x, FEATURES)

def train(model, files):
    ds = tf.data.TFRecordDataset(files)
    ds = ds.map(parse{map_args})
    ds = ds.batch(32){tail}
    model.fit(ds, epochs=3)
"""


def test_prefetch_missing_is_reported_where_the_pipeline_is_consumed_with_a_safe_edit():
    report = lint(PIPELINE.format(map_args=", num_parallel_calls=tf.data.AUTOTUNE", tail=""))
    (finding,) = report.findings
    assert (finding.code, finding.line, finding.column) == ("SRC102", 10, 15)
    assert finding.evidence == {"ops": ["map", "batch"], "consumer": "fit()"}
    assert finding.fix.applicability is Applicability.SAFE
    assert [e.text for e in finding.fix.edits] == [".prefetch(tf.data.AUTOTUNE)"]


def test_prefetched_pipeline_and_unconsumed_one_are_silent():
    text = PIPELINE.format(map_args=", num_parallel_calls=8", tail=".prefetch(1)")
    assert lint(text).findings == []
    # Handed to an unknown function: the callee may prefetch, so nothing is claimed.
    handed_on = text.replace("    model.fit(ds, epochs=3)\n", "    run(ds)\n").replace(".prefetch(1)", "")
    assert lint(handed_on).findings == []


@pytest.mark.parametrize("map_args, expected_evidence", [("", None), (", num_parallel_calls=1", 1),
                                                        (", 1", 1)])
def test_sequential_map_is_flagged(map_args, expected_evidence):
    report = lint(PIPELINE.format(map_args=map_args, tail=".prefetch(2)"))
    (finding,) = report.findings
    assert (finding.code, finding.line, finding.column) == ("SRC103", 8, 13)
    assert finding.evidence == {"num_parallel_calls": expected_evidence}


def test_map_on_a_dataset_parameter_is_followed_but_a_builtin_map_is_not():
    text = ("import tensorflow as tf\n\ndef prepare(ds: tf.data.Dataset):\n    return ds.map(str)\n\n"
            "names = list(map(str, range(3)))\nseries = frame.map(str)\n")
    assert [(f.code, f.line) for f in lint(text).findings] == [("SRC103", 4)]


# --- SRC105 ---------------------------------------------------------------------------------------

def test_py_function_in_a_lambda_passed_to_map():
    text = ("import tensorflow as tf\nds = tf.data.Dataset.range(10)\n"
            "ds = ds.map(lambda x: tf.numpy_function(f, [x], tf.int64), num_parallel_calls=tf.data.AUTOTUNE)\n")
    report = lint(text, select=("SRC105",))
    assert [(f.line, f.evidence["function"]) for f in report.findings] == [(3, "tf.numpy_function")]


def test_py_function_outside_the_input_pipeline_is_silent():
    text = "import tensorflow as tf\n\ndef debug(x):\n    return tf.py_function(print, [x], [])\n"
    assert lint(text, select=("SRC105",)).findings == []


# --- SRC106 ---------------------------------------------------------------------------------------

def test_shard_right_after_the_file_list_is_silent_and_after_shuffle_is_not():
    ok = "import tensorflow as tf\nds = tf.data.Dataset.list_files('*.rec').shard(2, 0).shuffle(10)\n"
    bad = "import tensorflow as tf\nds = tf.data.Dataset.list_files('*.rec').shuffle(10).shard(2, 0)\n"
    assert lint(ok, select=("SRC106",)).findings == []
    (finding,) = lint(bad, select=("SRC106",)).findings
    assert finding.evidence == {"before_shard": ["shuffle"]}


# --- SRC107 ---------------------------------------------------------------------------------------

STEP = """\
import tensorflow as tf
{prefix}
def step(x):
    with tf.GradientTape() as tape:
        loss = model(x)
    optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
{suffix}"""


LOOP = "for x in data:\n    step(x)\n"


def test_eager_step_called_in_a_loop_gets_a_decorator_edit():
    report = lint(STEP.format(prefix="", suffix=LOOP))
    (finding,) = report.findings
    assert (finding.code, finding.line, finding.column, finding.end_column) == ("SRC107", 3, 5, 9)
    fixed = apply_fixes(STEP.format(prefix="", suffix=LOOP), report.findings)
    assert "@tf.function\ndef step(x):" in fixed
    assert lint(fixed).findings == []


def test_step_nobody_here_calls_is_left_to_its_callers():
    # A library's step (its callers, which may compile it, are in other files) is not claimed.
    assert lint(STEP.format(prefix="", suffix="")).findings == []


@pytest.mark.parametrize("prefix, suffix", [
    ("@tf.function(reduce_retracing=True)", ""),
    ("", "step = tf.function(step)\n"),
    ("", "@tf.function\ndef outer(x):\n    return strategy.run(step, args=(x,))\n"),
])
def test_compiled_steps_are_silent(prefix, suffix):
    assert lint(STEP.format(prefix=prefix, suffix=suffix + LOOP)).findings == []


# --- SRC108 ---------------------------------------------------------------------------------------

def test_next_before_the_trace_is_flagged():
    text = ("import tensorflow as tf\nit = iter(ds)\nfor step in range(10):\n    x = next(it)\n"
            "    with tf.profiler.experimental.Trace('train', step_num=step, _r=1):\n        train_step(x)\n")
    (finding,) = lint(text, select=("SRC108",)).findings
    assert finding.line == 5 and "next(iterator) is called before" in finding.message


def test_trace_without_step_num_is_not_a_step_trace():
    text = ("import tensorflow as tf\nfor x in ds:\n    with tf.profiler.experimental.Trace('load'):\n"
            "        train_step(x)\n")
    assert lint(text, select=("SRC108",)).findings == []


# --- SRC109 ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("body, line", [
    ("m = keras.Sequential()\nm.add(layers.Conv2D(8, 3))\nm.add(layers.BatchNormalization())\n", 5),
    ("y = layers.BatchNormalization()(layers.Conv2D(8, 3)(x))\n", 4),
    ("y = layers.Conv2D(8, 3, use_bias=True)(x)\ny = layers.BatchNormalization()(y)\n", 4),
])
def test_conv_then_batch_norm_in_every_style(body, line):
    text = f"from tensorflow import keras\nfrom tensorflow.keras import layers\n\n{body}"
    assert [(f.code, f.line) for f in lint(text, select=("SRC109",)).findings] == [("SRC109", line)]


def test_conv_followed_by_activation_then_batch_norm_is_silent():
    text = ("from tensorflow.keras import layers\ny = layers.Conv2D(8, 3)(x)\ny = layers.ReLU()(y)\n"
            "y = layers.BatchNormalization()(y)\n")
    assert lint(text, select=("SRC109",)).findings == []


# --- SRC110 ---------------------------------------------------------------------------------------

def test_oom_report_attribute_assignment_is_flagged_with_a_safe_edit():
    text = ("import tensorflow as tf\nopts = tf.compat.v1.RunOptions()\n"
            "opts.report_tensor_allocations_upon_oom = True\n")
    (finding,) = lint(text).findings
    assert (finding.code, finding.line) == ("SRC110", 3)
    assert apply_fixes(text, [finding]).endswith("= False\n")


# --- SRC111 / SRC112 ------------------------------------------------------------------------------

@pytest.mark.parametrize("policy", [
    'keras.mixed_precision.set_global_policy("mixed_float16")',
    'keras.mixed_precision.set_global_policy(keras.mixed_precision.Policy("mixed_float16"))',
    'policy = keras.mixed_precision.Policy("mixed_float16")\nkeras.mixed_precision.set_global_policy(policy)',
])
def test_softmax_under_every_spelling_of_the_policy(policy):
    text = f"from tensorflow import keras\n{policy}\nout = keras.layers.Activation('softmax')(x)\n"
    assert lint(text, select=("SRC111",)).codes() == ["SRC111"]


def test_softmax_without_mixed_float16_and_bfloat16_are_silent():
    text = "from tensorflow import keras\nout = keras.layers.Dense(10, activation='softmax')(x)\n"
    assert lint(text, select=("SRC111",)).findings == []
    bf16 = "from tensorflow import keras\nkeras.mixed_precision.set_global_policy('mixed_bfloat16')\n" + text[29:]
    assert lint(bf16, select=("SRC111",)).findings == []


def test_a_softmax_on_the_branch_that_sets_no_policy_is_silent():
    """jcisarano/tensorflow_practice (twelfth held-out set): the policy is set under `if use_mixed:`, and the
    model's float32 softmax under the same test; the `else` branch's softmax runs without the policy."""
    head = ("from tensorflow import keras\n\n\ndef create(x, use_mixed=False):\n    if use_mixed:\n"
            "        keras.mixed_precision.set_global_policy('mixed_float16')\n")
    branches = ("    if use_mixed:\n        out = keras.layers.Dense(10, activation='softmax', dtype='float32')(x)\n"
                "    else:\n        out = keras.layers.Dense(10, activation='softmax')(x)\n    return out\n")
    assert lint(head + branches, select=("SRC111",)).findings == []
    # the twins that still warn: the else branch of another test, and no branch at all
    other = branches.replace("    if use_mixed:\n        out", "    if small:\n        out")
    assert lint(head + other, select=("SRC111",)).codes() == ["SRC111"]
    plain = "    out = keras.layers.Dense(10, activation='softmax')(x)\n    return out\n"
    assert lint(head + plain, select=("SRC111",)).codes() == ["SRC111"]


def test_sizes_without_mixed_precision_are_silent():
    text = "from tensorflow import keras\nx = keras.layers.Dense(100)(x)\n"
    assert lint(text, select=("SRC112",)).findings == []


def test_size_from_a_reassigned_name_is_not_guessed():
    text = ("from tensorflow import keras\nkeras.mixed_precision.set_global_policy('mixed_float16')\nN = 100\n"
            "N = 128\nx = keras.layers.Dense(N)(x)\ny = keras.layers.Conv2D(filters=12, kernel_size=3)(x)\n")
    report = lint(text, select=("SRC112",))
    assert [(f.line, f.evidence) for f in report.findings] == [(6, {"filters": 12, "policy": "mixed_float16"})]


# --- SRC113 ---------------------------------------------------------------------------------------

def test_cuda_visible_devices_hard_coded_before_use_and_assigned_after_use():
    text = ("import os\nos.environ.setdefault('CUDA_VISIBLE_DEVICES', '1')\nimport tensorflow as tf\n"
            "gpus = tf.config.list_physical_devices('GPU')\n"
            "os.environ.update({'CUDA_VISIBLE_DEVICES': '0'})\nos.environ['OMP_NUM_THREADS'] = '4'\n")
    report = lint(text, select=("SRC113",))
    assert [(f.line, f.severity.label, f.evidence) for f in report.findings] == [
        (2, "info", {"value": "1", "after_tensorflow_use": False}),
        (5, "warning", {"value": "0", "after_tensorflow_use": True}),
    ]
    assert "after TensorFlow already ran (tf.config.list_physical_devices() on line 4)" in report.findings[1].message


@pytest.mark.parametrize("seed", ["tf.random.set_seed(1)", "tf.compat.v1.set_random_seed(1)",
                                  "tf.keras.utils.set_random_seed(1)", "tf.random.set_random_seed(1)",
                                  "tf.set_random_seed(1)", "tf.compat.v1.random.set_random_seed(1)",
                                  "tf.compat.v2.random.set_seed(1)", "tf.compat.v1.random.set_seed(1)"])
def test_seeding_before_the_assignment_does_not_initialise_the_gpus(seed):
    """Seeding records the seed and creates no GPU context: the variable still takes effect (the fifth
    held-out set had a notebook told otherwise; the sixteenth, TensorFlow 1.13's tf.random.set_random_seed).
    A device listing before it still makes it a warning (above)."""
    text = f"import os\nimport tensorflow as tf\n{seed}\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'\n"
    [finding] = lint(text, select=("SRC113",)).findings
    assert (finding.severity.label, finding.evidence["after_tensorflow_use"]) == ("info", False)


@pytest.mark.parametrize("options", ["config = tf.ConfigProto(allow_soft_placement=True)",
                                     "config = tf.compat.v1.ConfigProto()",
                                     "config = tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True))",
                                     "options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)"])
def test_session_options_built_before_the_assignment_do_not_initialise_the_gpus(options):
    """TF1's session options are protocol buffer messages: the GPUs are created by the Session made with
    them, after the variable is set, so it takes effect (the twenty-third held-out set's false finding).
    A Session opened before the assignment still makes it a warning."""
    text = f"import os\nimport tensorflow as tf\n{options}\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'\n"
    [finding] = lint(text, select=("SRC113",)).findings
    assert (finding.severity.label, finding.evidence["after_tensorflow_use"]) == ("info", False)
    late = (f"import os\nimport tensorflow as tf\n{options}\nsess = tf.Session(config=config)\n"
            "os.environ['CUDA_VISIBLE_DEVICES'] = '1'\n")
    [finding] = lint(late, select=("SRC113",)).findings
    assert (finding.severity.label, finding.evidence["after_tensorflow_use"]) == ("warning", True)
    assert "(tf.Session() on line 4)" in finding.message


@pytest.mark.parametrize("value", ["'-1'", "''", "str(args.gpu)"])
def test_hiding_gpus_or_a_computed_value_is_not_flagged(value):
    # Issue 13, item 4: hiding the GPUs before any use is how a script runs on CPU; a computed value is
    # the launcher's choice made in code.
    text = (f"import os\nimport tensorflow as tf\nos.environ['CUDA_VISIBLE_DEVICES'] = {value}\n"
            "model = tf.keras.Sequential()\n")
    assert lint(text, select=("SRC113",)).findings == []


# --- SRC114 ---------------------------------------------------------------------------------------

def test_horovod_with_allow_growth_in_the_environment_is_silent():
    text = ("import os\nos.environ['TF_FORCE_GPU_ALLOW_GROWTH'] = 'true'\nimport horovod.tensorflow.keras as hvd\n"
            "hvd.init()\n")
    assert lint(text, select=("SRC114",)).findings == []
    assert lint(text.replace("TF_FORCE_GPU_ALLOW_GROWTH", "OTHER"), select=("SRC114",)).codes() == ["SRC114"]


def test_multi_worker_strategy_across_hosts_is_silent():
    text = ("import tensorflow as tf\ncluster = {'worker': ['localhost:2222']}\n"
            "strategy = tf.distribute.MultiWorkerMirroredStrategy()\n")
    assert lint(text, select=("SRC114",)).findings == []


# --- SRC115 ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("decorator, call", [
    ("@tf.function(jit_compile=True, input_signature=[tf.RaggedTensorSpec([None, None], tf.int32)])", ""),
    ("@tf.function(jit_compile=True, reduce_retracing=True)", ""),
    ("@tf.function(jit_compile=True)", "step(tf.ragged.constant([[1], [2, 3]]))\n"),
])
def test_jit_compile_fed_varying_shapes(decorator, call):
    text = f"import tensorflow as tf\n{decorator}\ndef step(x):\n    return x\n{call}"
    assert lint(text, select=("SRC115",)).codes() == ["SRC115"]


def test_jit_compile_with_fixed_shapes_is_silent():
    text = ("import tensorflow as tf\n@tf.function(jit_compile=True, input_signature=[tf.TensorSpec([8, 4])])\n"
            "def step(x):\n    return x\nstep(tf.zeros([8, 4]))\n")
    assert lint(text, select=("SRC115",)).findings == []


def test_keras_model_compiled_with_xla_and_fit_on_bucketed_data():
    text = ("import tensorflow as tf\nds = tf.data.Dataset.from_tensor_slices(x)\n"
            "ds = ds.bucket_by_sequence_length(len_fn, [10, 20], [32, 32, 32]).prefetch(2)\n"
            "model.compile(optimizer='adam', loss='mse', jit_compile=True)\nmodel.fit(ds)\n")
    (finding,) = lint(text, select=("SRC115",)).findings
    assert (finding.line, finding.evidence) == (4, {"model": "model", "ops": ["bucket_by_sequence_length"]})
    assert lint(text.replace("jit_compile=True", "jit_compile=False"), select=("SRC115",)).findings == []
