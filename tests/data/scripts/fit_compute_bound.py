"""Keras 3 model.fit on in-memory arrays (Keras batches and prefetches them) with a model that computes
for tens of milliseconds per batch: the input is always ready. Two epochs of 12 batches, validation data
and a callback of its own, as training scripts have."""

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
batches = []
count = keras.callbacks.LambdaCallback(on_train_batch_end=lambda batch, logs: batches.append(batch))
history = model.fit(images[:12 * 128], labels[:12 * 128], batch_size=128, epochs=2, verbose=0,
                    validation_data=(images[12 * 128:13 * 128], labels[12 * 128:13 * 128]), callbacks=[count])
assert len(batches) == 24 and len(history.history["val_loss"]) == 2, (len(batches), history.history)
