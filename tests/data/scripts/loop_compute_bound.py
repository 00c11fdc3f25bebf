"""A custom training loop: a tf.function step that computes for tens of milliseconds, fed by an
in-memory tf.data pipeline with prefetch; no profiler markers."""

import keras
import tensorflow as tf

images = tf.random.uniform((24 * 128, 512))
labels = tf.random.uniform((24 * 128,), maxval=10, dtype=tf.int32)
dataset = tf.data.Dataset.from_tensor_slices((images, labels)).batch(128).prefetch(tf.data.AUTOTUNE)

model = keras.Sequential([
    keras.Input((512,)),
    keras.layers.Dense(2048, activation="relu"),
    keras.layers.Dense(2048, activation="relu"),
    keras.layers.Dense(10),
])
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
