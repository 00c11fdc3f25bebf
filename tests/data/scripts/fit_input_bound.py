"""Keras 3 model.fit fed by a tf.data pipeline whose map runs Python that sleeps (tf.py_function),
sequentially and without prefetch: each batch waits ~100 ms for input, the step computes in ~1 ms."""

import time

import numpy as np
import tensorflow as tf
import keras


def load(images):
    time.sleep(0.1)  # stands for reading and decoding files in Python
    return images


def mapped(images, labels):
    images = tf.py_function(load, [images], tf.float32)
    images.set_shape((None, 16))
    return images, labels


images = np.random.rand(24 * 32, 16).astype("float32")
labels = np.random.randint(0, 4, 24 * 32)
dataset = tf.data.Dataset.from_tensor_slices((images, labels)).batch(32).map(mapped)

model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(4)])
model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(dataset, epochs=1, verbose=0)
