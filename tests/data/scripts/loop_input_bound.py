"""A custom training loop: a tf.function step, fed by a tf.data pipeline whose map runs Python that
sleeps (tf.py_function, in slow_input.py beside it), without prefetch; no profiler markers. The `for`
waits ~100 ms for each batch."""

import keras
import tensorflow as tf
from slow_input import slow_dataset

images = tf.random.uniform((24 * 32, 16))
labels = tf.random.uniform((24 * 32,), maxval=4, dtype=tf.int32)
dataset = slow_dataset(images, labels)

model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(4)])
optimizer = keras.optimizers.SGD(0.01)
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
    return loss


for x, y in dataset:
    loss = train_step(x, y)
print(f"loss {float(loss):.3f}")
