"""Keras 3 model.fit on in-memory arrays (Keras batches and prefetches them) with a model that computes
for tens of milliseconds per batch: the input is always ready."""

import keras
import numpy as np

images = np.random.rand(24 * 128, 512).astype("float32")
labels = np.random.randint(0, 10, 24 * 128)

model = keras.Sequential([
    keras.Input((512,)),
    keras.layers.Dense(2048, activation="relu"),
    keras.layers.Dense(2048, activation="relu"),
    keras.layers.Dense(10),
])
model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(images, labels, batch_size=128, epochs=1, verbose=0)
