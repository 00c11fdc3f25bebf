"""Fixture: each kind of evidence lint's rules need to fire (issue 39, item 1), present: every case fires.

Its silent twin, case by case, is evidence_good.py. tests/test_lint_evidence.py has the smaller cases.
"""

import tensorflow as tf
import tensorflow_datasets as tfds


def decode(path, label):
    image = tf.io.decode_jpeg(tf.io.read_file(path))
    return tf.image.resize(image, [224, 224]), label


def augment(image, label):
    return tf.image.random_flip_left_right(image), label


# consumed-by-training, data-from-files-or-large (files), per-element-work (decode)
def fit_on_records(model, files):
    records = tf.data.TFRecordDataset(files).map(decode).batch(32)  # expect: SRC103
    model.fit(records, epochs=3)  # expect: SRC102


# data-from-files-or-large (a Keras data set of 50,000 images)
def fit_on_cifar(model):
    (cifar_x, cifar_y), _ = tf.keras.datasets.cifar10.load_data()
    cifar = tf.data.Dataset.from_tensor_slices((cifar_x, cifar_y)).map(augment).batch(64)  # expect: SRC103
    model.fit(cifar, epochs=3)  # expect: SRC102


# step-called-in-loop
def eager_step(model, optimizer, x, y):  # expect: SRC107
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x) - y))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))


def train_loop(model, optimizer, batches):
    for x, y in batches:
        eager_step(model, optimizer, x, y)


# users-training-code: a loader of the user's own (returned to callers in other files: info)
class FlowersLoader(tfds.core.GeneratorBasedBuilder):
    def load_split(self, files):
        split = tf.data.TFRecordDataset(files).map(decode)  # expect: SRC102 SRC103
        return split
