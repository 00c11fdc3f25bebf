"""A custom training loop: a tf.function step, fed by a tf.data pipeline whose map runs Python that
sleeps (tf.py_function), without prefetch; each step marked as docs/profile.md shows (the marker holds
the step, not the fetch). The `for` waits ~100 ms for each batch."""

import time

import tensorflow as tf
import keras


def load(images):
    time.sleep(0.1)  # stands for reading and decoding files in Python
    return images


def mapped(images, labels):
    images = tf.py_function(load, [images], tf.float32)
    images.set_shape((None, 16))
    return images, labels


images = tf.random.uniform((24 * 32, 16))
labels = tf.random.uniform((24 * 32,), maxval=4, dtype=tf.int32)
dataset = tf.data.Dataset.from_tensor_slices((images, labels)).batch(32).map(mapped)

model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(4)])
optimizer = keras.optimizers.SGD(0.01)
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


for step, (x, y) in enumerate(dataset):
    with tf.profiler.experimental.Trace("train", step_num=step, _r=1):
        train_step(x, y)
