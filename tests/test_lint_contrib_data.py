"""Issue 39, item 5 (recall): TensorFlow 1.2-1.4 pipelines, and TensorFlow 1 training through a training session.

Held-out set 34's CIFAR-10 ResNet (both judges named it in their recall review): `tf.contrib.data`'s
`FixedLengthRecordDataset` over the CIFAR binaries, two maps without threads (random crops and flips), its batches
returned from `input_fn` to a model of another module whose `train_op` a `MonitoredTrainingSession` runs. Lint saw
no pipeline (tf.data under its first name) and no training (the optimizer is in the other module).
"""

from __future__ import annotations

import pytest
from support.lint_support import sorted_findings

from tfdoctor.lint.names import canonical

HEAD = ("import tensorflow as tf\n"
        "import resnet_model\n"
        "def augment(image, label):\n"
        "    image = tf.random_crop(tf.image.resize_image_with_crop_or_pad(image, 40, 40), [32, 32, 3])\n"
        "    return tf.image.random_flip_left_right(image), label\n"
        "def input_fn(files, batch_size):\n"
        "    dataset = tf.contrib.data.FixedLengthRecordDataset(files, 3073)\n")
MAP = "    dataset = dataset.map(augment)\n"  # line 8
TAIL = ("    dataset = dataset.repeat().batch(batch_size)\n"
        "    images, labels = dataset.make_one_shot_iterator().get_next()\n"  # line 10
        "    return images, labels\n"
        "def train():\n"
        "    images, labels = input_fn(FILES, 128)\n"
        "    model = resnet_model.ResNet(images, labels)\n"
        "    with tf.train.MonitoredTrainingSession(hooks=hooks) as mon_sess:\n"
        "        while not mon_sess.should_stop():\n"
        "            mon_sess.run(model.train_op)\n")


def findings(text: str) -> list[tuple[str, int, str]]:
    return sorted_findings(text, "resnet_cifar_main.py")


def test_a_contrib_data_pipeline_a_training_session_reads_is_found() -> None:
    assert findings(HEAD + MAP + TAIL) == [("SRC102", 10, "warning"), ("SRC103", 8, "warning")]


@pytest.mark.parametrize(("mapped", "expected"), [
    # tf.contrib.data's map: `num_threads` is its parallelism, the same second positional argument
    ("    dataset = dataset.map(augment, num_threads=8)\n", [("SRC102", 10, "warning")]),
    ("    dataset = dataset.map(augment, 8)\n", [("SRC102", 10, "warning")]),
    ("    dataset = dataset.map(augment, num_threads=1)\n", [("SRC102", 10, "warning"), ("SRC103", 8, "warning")]),
    # `output_buffer_size` keeps that many mapped elements ahead of the consumer: a prefetch
    ("    dataset = dataset.map(augment, output_buffer_size=256)\n", [("SRC103", 8, "warning")]),
    ("    dataset = dataset.map(augment, num_threads=8, output_buffer_size=256)\n", []),
])
def test_contrib_map_s_threads_and_buffer_are_read(mapped: str, expected: list) -> None:
    assert findings(HEAD + mapped + TAIL) == expected


def test_a_session_that_is_not_for_training_shows_no_training() -> None:
    """A `MonitoredSession` (what evaluation uses) or a plain session running an op of another module: nothing in
    the file shows training, and the TF1 iterator stays silent, as before."""
    text = HEAD + MAP + TAIL
    assert findings(text.replace("MonitoredTrainingSession(hooks=hooks)", "MonitoredSession()")) == []
    assert findings(text.replace("tf.train.MonitoredTrainingSession(hooks=hooks)", "tf.Session()")) == []


def test_only_contrib_data_s_datasets_take_tf_data_s_names() -> None:
    assert canonical("tensorflow.contrib.data.FixedLengthRecordDataset") == "tf.data.FixedLengthRecordDataset"
    assert canonical("tensorflow.contrib.data.TFRecordDataset") == "tf.data.TFRecordDataset"
    assert canonical("tensorflow.contrib.data.Dataset.from_tensor_slices") == "tf.data.Dataset.from_tensor_slices"
    # its own transformations keep the names lint's tables use (lint_running_ahead: map_and_batch)
    assert canonical("tensorflow.contrib.data.map_and_batch") == "tf.contrib.data.map_and_batch"
    assert canonical("tensorflow.contrib.data.Dataset2") == "tf.contrib.data.Dataset2"


def test_a_training_session_run_once_shows_a_batch_not_training() -> None:
    """Held-out set 28's notebook reads a TFRecord back through a `MonitoredTrainingSession` once, to print one
    batch (both judges: false). Opened as an assignment and run in a loop, it trains."""
    once = TAIL.replace("        while not mon_sess.should_stop():\n            mon_sess.run(model.train_op)\n",
                        "        print(mon_sess.run([images, labels]))\n")
    assert findings(HEAD + MAP + once) == []
    assigned = TAIL.replace("    with tf.train.MonitoredTrainingSession(hooks=hooks) as mon_sess:\n",
                            "    mon_sess = tf.train.MonitoredTrainingSession(hooks=hooks)\n    if True:\n")
    assert findings(HEAD + MAP + assigned) == [("SRC102", 10, "warning"), ("SRC103", 8, "warning")]
