"""Custom training loop with tf.GradientTape under Horovod (a lint fixture: the problems are deliberate).

Keras 3 style imports (`import keras`) on purpose: rules must resolve them like tf.keras.
"""

import time

import horovod.tensorflow as hvd
import keras
import tensorflow as tf
from keras import layers as L

hvd.init()  # expect: SRC114
keras.config.set_dtype_policy("mixed_bfloat16")

BATCH = 64
STEPS = 200


class ResidualBlock(keras.Model):
    def __init__(self, filters: int) -> None:
        super().__init__()
        self.conv = L.Conv2D(filters, 3, padding="same")  # expect: SRC109
        self.bn = L.BatchNormalization()
        self.proj = L.Conv2D(filters, 1, use_bias=False)

    def call(self, x, training=False):
        y = self.conv(x)
        y = self.bn(y, training=training)
        return tf.nn.relu(y + self.proj(x))


def build_model() -> keras.Model:
    inputs = keras.Input(shape=(28, 28, 1))
    x = ResidualBlock(30)(inputs)
    x = L.GlobalAveragePooling2D()(x)
    x = L.Dense(250, activation="relu")(x)  # expect: SRC112
    outputs = L.Dense(10, dtype="float32")(x)
    return keras.Model(inputs, outputs)


model = build_model()
optimizer = keras.optimizers.SGD(0.01 * hvd.size())
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
run_options = tf.compat.v1.RunOptions(report_tensor_allocations_upon_oom=True)  # expect: SRC110


def train_step(images, labels):  # expect: SRC107
    with tf.GradientTape() as tape:
        logits = model(images, training=True)
        loss = loss_fn(labels, logits)
    tape = hvd.DistributedGradientTape(tape)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
    return loss


@tf.function(jit_compile=True, input_signature=[tf.TensorSpec([None, 28, 28, 1], tf.float32)])  # expect: SRC115
def predict_step(images):
    return tf.argmax(model(images, training=False), axis=-1)


def main() -> None:
    (x, y), _ = keras.datasets.mnist.load_data()
    x = (x[..., None] / 255.0).astype("float32")
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shard(hvd.size(), hvd.rank())
    ds = ds.shuffle(10_000).batch(BATCH).repeat().prefetch(tf.data.AUTOTUNE)
    tf.profiler.experimental.start("logs/profile")
    start = time.time()
    for step, (images, labels) in enumerate(ds.take(STEPS)):
        with tf.profiler.experimental.Trace("train", step_num=step, _r=1):  # expect: SRC108
            loss = train_step(images, labels)
        if step == 0:
            hvd.broadcast_variables(model.variables, root_rank=0)
            hvd.broadcast_variables(optimizer.variables, root_rank=0)
        if step % 50 == 0 and hvd.rank() == 0:
            print(f"step {step} loss {float(loss):.4f} {time.time() - start:.1f}s")
    tf.profiler.experimental.stop()
    print(predict_step(x[:BATCH]))


if __name__ == "__main__":
    main()
