"""An inference loop run eagerly (no tf.function, no Keras fit/predict, no markers): tfdoctor finds no
steps. Its input is a tf.py_function map that sleeps, so the trace's op time is mostly EagerPyFunc."""

import time

import keras
import tensorflow as tf


def load(images):
    time.sleep(0.05)  # stands for reading and decoding files in Python
    return images


def mapped(images):
    images = tf.py_function(load, [images], tf.float32)
    images.set_shape((None, 16))
    return images


dataset = tf.data.Dataset.from_tensor_slices(tf.random.uniform((12 * 32, 16))).batch(32).map(mapped)
model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(4)])
for x in dataset:
    model(x)
