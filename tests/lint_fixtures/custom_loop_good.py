"""Custom training loop with tf.GradientTape under Horovod, following the guides (must stay silent)."""

import time

import horovod.tensorflow as hvd
import keras
import tensorflow as tf
from keras import layers as L

hvd.init()
gpus = tf.config.list_physical_devices("GPU")
for gpu in gpus:
    tf.config.experimental.set_memory_growth(gpu, True)
if gpus:
    tf.config.set_visible_devices(gpus[hvd.local_rank()], "GPU")
keras.config.set_dtype_policy("mixed_bfloat16")

BATCH = 64
STEPS = 200


class ResidualBlock(keras.Model):
    def __init__(self, filters: int) -> None:
        super().__init__()
        self.conv = L.Conv2D(filters, 3, padding="same", use_bias=False)
        self.bn = L.BatchNormalization()
        self.proj = L.Conv2D(filters, 1)

    def call(self, x, training=False):
        y = self.bn(self.conv(x), training=training)
        return tf.nn.relu(y + self.proj(x))

    def train_step(self, data):
        # Keras compiles a train_step override itself: no tf.function needed here.
        x, y = data
        with tf.GradientTape() as tape:
            loss = self.compute_loss(y=y, y_pred=self(x, training=True))
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables, strict=True))
        return {"loss": loss}


def build_model() -> keras.Model:
    inputs = keras.Input(shape=(28, 28, 1))
    x = ResidualBlock(32)(inputs)
    x = L.GlobalAveragePooling2D()(x)
    x = L.Dense(256, activation="relu")(x)
    outputs = L.Dense(10, dtype="float32")(x)
    return keras.Model(inputs, outputs)


model = build_model()
optimizer = keras.optimizers.SGD(0.01 * hvd.size())
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
run_options = tf.compat.v1.RunOptions(report_tensor_allocations_upon_oom=False)


def compute_gradients(images, labels):
    with tf.GradientTape() as tape:
        loss = loss_fn(labels, model(images, training=True))
    tape = hvd.DistributedGradientTape(tape)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
    return loss


@tf.function
def train_step(images, labels):
    # The helper is traced as part of this graph.
    return compute_gradients(images, labels)


def eval_step(images, labels):
    with tf.GradientTape() as tape:
        loss = loss_fn(labels, model(images, training=False))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
    return loss


eval_step = tf.function(eval_step)


@tf.function(jit_compile=True, input_signature=[tf.TensorSpec([BATCH, 28, 28, 1], tf.float32)])
def predict_step(images):
    return tf.argmax(model(images, training=False), axis=-1)


def main() -> None:
    (x, y), _ = keras.datasets.mnist.load_data()
    x = (x[..., None] / 255.0).astype("float32")
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shard(hvd.size(), hvd.rank())
    ds = ds.shuffle(10_000).batch(BATCH, drop_remainder=True).repeat().prefetch(tf.data.AUTOTUNE)
    iterator = iter(ds)
    tf.profiler.experimental.start("logs/profile")
    start = time.time()
    for step in range(STEPS):
        with tf.profiler.experimental.Trace("train", step_num=step, _r=1):
            images, labels = next(iterator)
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
