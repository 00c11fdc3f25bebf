"""Issue 13: what made findings wrong on real code (items 1–4) and what was missed (item 6).

Each case is a shape seen in the labelled corpus (benchmarks/lint_corpus/labels.csv); the silent twin
of each reported shape is next to it.
"""

from __future__ import annotations

import pytest
from support.lint_support import lint

FILES = "import tensorflow as tf\nds = tf.data.TFRecordDataset(files).map(tf.io.parse_single_example)\n"

# --- item 1: consumption, not construction --------------------------------------------------------


def test_pipeline_is_reported_where_fit_consumes_it_not_where_it_is_built():
    report = lint(FILES + "model.fit(ds, epochs=2)\n", select=("SRC102",))
    assert [(f.line, f.column, f.evidence["consumer"]) for f in report.findings] == [(3, 11, "fit()")]


@pytest.mark.parametrize("peek", [
    "for x in ds.take(3):\n    print(x)\n",
    "first = next(iter(ds))\n",
    "for record in ds:\n    print(record)\n",
    "items = list(ds.as_numpy_iterator())\n",
])
def test_peeking_at_a_few_elements_is_not_a_consumption(peek):
    assert lint(FILES + peek, select=("SRC102",)).findings == []


def test_a_function_returning_a_dataset_is_not_a_consumption_when_this_file_calls_it():
    text = ("import tensorflow as tf\ndef make(files):\n"
            "    return tf.data.TFRecordDataset(files).map(tf.io.parse_single_example)\n"
            "train = make(files).prefetch(2)\nmodel.fit(train)\n")
    assert lint(text, select=("SRC102",)).findings == []
    # Called nowhere in this file: said once, as info, at the return (the callers are elsewhere).
    library = text.split("train =")[0]
    (finding,) = lint(library, select=("SRC102",)).findings
    assert (finding.line, finding.severity.label) == (3, "info")


# --- item 2: size and cost -------------------------------------------------------------------------


@pytest.mark.parametrize("source", [
    "tf.data.Dataset.range(10)",
    "tf.data.Dataset.from_tensor_slices([1, 2, 3])",
    "tf.data.Dataset.from_tensor_slices((x_train, y_train)).map(lambda x, y: (tf.cast(x, tf.float32) / 255., y))",
])
def test_small_or_in_memory_sources_with_cheap_maps_need_no_prefetch_or_parallel_map(source):
    text = (f"import tensorflow as tf\nds = {source}.map(lambda x, *y: tf.cast(x, tf.float32)).batch(32)\n"
            "model.fit(ds)\n")
    assert lint(text, select=("SRC102", "SRC103")).findings == []


def test_in_memory_paths_read_in_the_map_are_expensive():
    text = ("import tensorflow as tf\ndef load(path, label):\n    image = tf.io.decode_jpeg(tf.io.read_file(path))\n"
            "    return tf.image.resize(image, [224, 224]), label\n"
            "ds = tf.data.Dataset.from_tensor_slices((paths, labels)).map(load).batch(32)\nmodel.fit(ds)\n")
    assert lint(text, select=("SRC102", "SRC103")).codes() == ["SRC103", "SRC102"]


def test_a_map_before_cache_runs_once():
    text = ("import tensorflow as tf\nds = tf.data.TFRecordDataset(files)\n"
            "ds = ds.map(tf.io.parse_single_example).cache().repeat().prefetch(2)\nmodel.fit(ds)\n")
    assert lint(text, select=("SRC103",)).findings == []


# --- item 3: framework and era ---------------------------------------------------------------------


def test_a_file_without_tensorflow_gets_no_tensorflow_rule():
    text = ("import torch\nds = Dataset.from_tensor_slices(paths).map(load)\nfor step in range(10):\n"
            "    with GradientTape() as tape:\n        loss = model(x)\n    optimizer.apply_gradients(grads)\n"
            "model.fit(ds)\n")
    assert lint(text).findings == []


def test_tf1_estimator_input_fn_without_prefetch_is_found():
    text = ("import tensorflow as tf\ndef input_fn(params):\n    d = tf.data.TFRecordDataset(files)\n"
            "    d = d.map(lambda r: tf.io.parse_single_example(r, spec), num_parallel_calls=8).batch(32)\n"
            "    return d\nestimator.train(input_fn=input_fn, max_steps=10)\n")
    (finding,) = lint(text, select=("SRC102",)).findings
    assert (finding.line, finding.evidence["consumer"]) == (5, "an Estimator input_fn")


def test_tf1_one_shot_iterator_is_a_consumption_in_a_file_that_trains():
    text = FILES + ("it = tf.compat.v1.data.make_one_shot_iterator(ds)\nbatch = it.get_next()\n"
                    "train_op = tf.train.AdamOptimizer().minimize(model_loss(batch))\n")
    (finding,) = lint(text, select=("SRC102",)).findings
    assert finding.evidence["consumer"] == "make_one_shot_iterator()"
    assert finding.grounds["consumed-by-training"] == "a TF1 iterator in a file that trains (minimize())"


def test_tf1_iterator_only_printed_through_a_session_is_not_training():
    # issue 39's held-out judging: a Titanic pipeline whose batches a TF1 session only prints
    text = FILES + ("it = tf.compat.v1.data.make_one_shot_iterator(ds)\nbatch = it.get_next()\n"
                    "sess = tf.Session()\nfor i in range(3):\n    print(sess.run(batch))\n")
    report = lint(text, select=("SRC102",))
    assert report.findings == [] and report.unproven == 1


def test_tf1_gpu_options_count_as_pinning_and_growth():
    text = ("import tensorflow as tf\nimport horovod.tensorflow as hvd\nhvd.init()\nconfig = tf.ConfigProto()\n"
            "config.gpu_options.visible_device_list = str(hvd.local_rank())\n")
    assert lint(text, select=("SRC114",)).findings == []
    assert lint(text.replace("visible_device_list", "other"), select=("SRC114",)).codes() == ["SRC114"]


# --- item 4: scope ---------------------------------------------------------------------------------

POLICY_IN_FUNCTION = """\
from tensorflow import keras

def probe():
    return keras.layers.Dense(100)

def build():
    keras.mixed_precision.set_global_policy("mixed_float16")
    return make_head()

def make_head():
    return keras.layers.Dense(100)
"""


def test_a_policy_set_inside_a_function_applies_from_its_call_on():
    report = lint(POLICY_IN_FUNCTION, select=("SRC112",))
    assert [f.line for f in report.findings] == [11]  # make_head(), called after the policy; not probe()


@pytest.mark.parametrize("layer", ["Dense(NUM_CLASSES)", "Dense(10, activation='softmax')", "Dense(vocab_size)"])
def test_output_layers_sized_by_the_data_are_not_tensor_core_problems(layer):
    text = ("from tensorflow import keras\nNUM_CLASSES = 10\nvocab_size = 30001\n"
            f"keras.mixed_precision.set_global_policy('mixed_float16')\nx = keras.layers.{layer}(x)\n")
    assert lint(text, select=("SRC112",)).findings == []


def test_named_conv_layers_keep_their_bias_for_pretrained_weights():
    text = ("from tensorflow.keras import layers\ny = layers.Conv2D(8, 3, name='res2a_branch2a')(x)\n"
            "y = layers.BatchNormalization()(y)\n")
    assert lint(text, select=("SRC109",)).findings == []
    assert lint(text.replace(", name='res2a_branch2a'", ""), select=("SRC109",)).codes() == ["SRC109"]


def test_conv_with_an_activation_before_batch_norm_keeps_a_useful_bias():
    text = ("from tensorflow import keras\nm = keras.Sequential([keras.layers.Conv1D(32, 5, activation='relu'),"
            " keras.layers.BatchNormalization()])\n")
    assert lint(text, select=("SRC109",)).findings == []


# --- item 6: what was missed -----------------------------------------------------------------------


def test_py_function_through_a_decorator_a_wrapper_and_an_attribute():
    text = """\
import numpy as np
import tensorflow as tf

@tf.numpy_function(Tout=tf.float32)
def load_npy(path):
    return np.load(path)

def _read(path):
    return tf.py_function(lambda p: np.load(p.numpy()), [path], tf.float32)

def wrapper(path):
    return _read(path) * 2

class Loader:
    def __init__(self, paths):
        self.ds = tf.data.Dataset.from_tensor_slices(paths)
        self.ds = self.ds.map(self.decode)

    def decode(self, p):
        return tf.numpy_function(np.load, [p], tf.float32)

ds = tf.data.Dataset.from_tensor_slices(paths).map(load_npy).map(wrapper)
"""
    report = lint(text, select=("SRC105",))
    assert [(f.line, f.evidence["function"]) for f in report.findings] == [
        (4, "tf.numpy_function"), (9, "tf.py_function"), (20, "tf.numpy_function")]


def test_eager_loop_at_module_level_and_tape_inside_a_helper():
    module_level = ("import tensorflow as tf\nfor x, y in data:\n    with tf.GradientTape() as tape:\n"
                    "        loss = model(x)\n    grads = tape.gradient(loss, model.trainable_variables)\n"
                    "    optimizer.apply_gradients(zip(grads, model.trainable_variables))\n")
    (finding,) = lint(module_level, select=("SRC107",)).findings
    assert (finding.line, finding.evidence) == (6, {"function": None})
    helper = ("import tensorflow as tf\ndef grads_of(x):\n    with tf.GradientTape() as tape:\n"
              "        loss = model(x)\n    return tape.gradient(loss, model.trainable_variables)\n"
              "def train(data):\n    for x in data:\n"
              "        optimizer.apply_gradients(zip(grads_of(x), model.trainable_variables))\n")
    assert [f.evidence["function"] for f in lint(helper, select=("SRC107",)).findings] == ["train"]


def test_pipelines_taken_from_a_tfds_load_dict_and_split_tuple():
    text = ("import tensorflow as tf\nimport tensorflow_datasets as tfds\n"
            "data = tfds.load('mnist')\ntrain = data['train'].map(augment)\nmodel.fit(train)\n"
            "(a, b), info = tfds.load('mnist', split=['train', 'test'], with_info=True)\nmodel.fit(a.map(augment))\n")
    # (a bare TFDS split is prefetched by TFDS itself: the map after it is what needs the prefetch)
    assert [(f.code, f.line) for f in lint(text, select=("SRC102",)).findings] == [("SRC102", 5), ("SRC102", 7)]
