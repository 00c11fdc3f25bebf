"""Fixture: the silent twins of evidence_bad.py, case by case: the evidence each rule needs is missing.

tests/test_lint_evidence.py has the smaller cases.
"""

import tensorflow as tf
import tensorflow_datasets as tfds


def decode(path, label):
    image = tf.io.decode_jpeg(tf.io.read_file(path))
    return tf.image.resize(image, [224, 224]), label


def augment(image, label):
    return tf.image.random_flip_left_right(image), label


# not consumed by training: a peek at three batches
def peek_at_records(files):
    records = tf.data.TFRecordDataset(files).map(decode).batch(32)
    for images, labels in records.take(3):
        print(images.shape, labels)


# small data: Boston housing's 404 rows
def fit_on_boston(model):
    (boston_x, boston_y), _ = tf.keras.datasets.boston_housing.load_data()
    boston = tf.data.Dataset.from_tensor_slices((boston_x, boston_y)).map(augment).batch(64)
    model.fit(boston, epochs=3)


# no per-element work: a cast and a scale (and the prefetch is there)
def fit_on_scaled_records(model, files):
    scaled = tf.data.TFRecordDataset(files).map(lambda x, y: (tf.cast(x, tf.float32) / 255.0, y))
    model.fit(scaled.batch(32).prefetch(tf.data.AUTOTUNE), epochs=3)


# a step called once (a warm-up), not in a loop
def warm_up_step(model, optimizer, x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x) - y))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))


def warm_up(model, optimizer, x, y):
    warm_up_step(model, optimizer, x, y)


# not the user's training code: a data-set library's _as_dataset hook (its as_dataset hands the pipeline on)
class FlowersBuilder(tfds.core.GeneratorBasedBuilder):
    def _as_dataset(self, files):
        split = tf.data.TFRecordDataset(files).map(decode)
        return split
