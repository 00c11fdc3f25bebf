"""The input pipeline the input-bound scripts share (a module beside them, imported as scripts do): a
tf.py_function map that sleeps 100 ms per batch of 32, sequential and without prefetch."""

import time

import tensorflow as tf


def load(features):
    time.sleep(0.1)  # stands for reading and decoding files in Python
    return features


def mapped(features, labels):
    features = tf.py_function(load, [features], tf.float32)
    features.set_shape((None, 16))
    return features, labels


def slow_dataset(features, labels):
    return tf.data.Dataset.from_tensor_slices((features, labels)).batch(32).map(mapped)
