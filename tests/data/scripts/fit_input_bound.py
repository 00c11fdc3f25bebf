"""Keras 3 model.fit fed by a tf.data pipeline whose map runs Python that sleeps (tf.py_function, in
slow_input.py beside it), sequentially and without prefetch: each batch waits ~100 ms for input, the step
computes in ~1 ms."""

import keras
import numpy as np
from slow_input import slow_dataset

images = np.random.rand(24 * 32, 16).astype("float32")
labels = np.random.randint(0, 4, 24 * 32)
dataset = slow_dataset(images, labels)

model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(4)])
model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(dataset, epochs=1, verbose=0)
