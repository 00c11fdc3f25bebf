"""A text-classification input pipeline on TFRecords, trained with MultiWorkerMirroredStrategy.

A lint fixture: the problems are deliberate; flagged lines carry `expect:` comments.
"""

import json
import os

import numpy as np
import tensorflow as tf

os.environ["TF_CONFIG"] = json.dumps({
    "cluster": {"worker": ["localhost:12345", "localhost:12346"]},
    "task": {"type": "worker", "index": int(os.environ.get("WORKER_INDEX", "0"))},
})
strategy = tf.distribute.MultiWorkerMirroredStrategy()  # expect: SRC114

FEATURES = {
    "tokens": tf.io.VarLenFeature(tf.int64),
    "label": tf.io.FixedLenFeature([], tf.int64),
}


def parse(record):
    example = tf.io.parse_single_example(record, FEATURES)
    return tf.sparse.to_dense(example["tokens"]), example["label"]


def normalise_with_numpy(tokens, label):
    def clip(t):
        return np.clip(t.numpy(), 0, 30_000)

    tokens = tf.py_function(clip, [tokens], tf.int64)  # expect: SRC105
    return tokens, label


def make_dataset(pattern: str, batch_size: int) -> tf.data.Dataset:
    files = tf.data.Dataset.list_files(pattern, shuffle=True)
    ds = files.interleave(tf.data.TFRecordDataset, cycle_length=4, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.map(parse)  # expect: SRC103
    ds = ds.map(normalise_with_numpy, num_parallel_calls=tf.data.AUTOTUNE)
    ctx = tf.distribute.get_replica_context()
    ds = ds.shard(strategy.num_replicas_in_sync, ctx.replica_id_in_sync_group if ctx else 0)  # expect: SRC106
    return ds.padded_batch(batch_size)


def synthetic_examples():
    rng = np.random.default_rng(0)
    while True:
        length = rng.integers(5, 50)
        yield rng.integers(0, 30_000, size=length), rng.integers(0, 2)


@tf.function(jit_compile=True)  # expect: SRC115
def train_step(model, optimizer, tokens, labels):
    with tf.GradientTape() as tape:
        logits = model(tokens, training=True)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
    return loss


def main() -> None:
    with strategy.scope():
        model = tf.keras.Sequential([
            tf.keras.layers.Embedding(30_000, 128),
            tf.keras.layers.GlobalAveragePooling1D(),
            tf.keras.layers.Dense(2),
        ])
        optimizer = tf.keras.optimizers.Adam()
    train = make_dataset("data/train-*.tfrecord", 32)
    for tokens, labels in train:  # expect: SRC102
        train_step(model, optimizer, tokens, labels)
    extra = tf.data.Dataset.from_generator(  # expect: SRC104
        synthetic_examples,
        output_signature=(tf.TensorSpec([None], tf.int64), tf.TensorSpec([], tf.int64)),
    )
    extra = extra.padded_batch(32, padded_shapes=([64], [])).take(100).prefetch(2)
    model.evaluate(extra)


if __name__ == "__main__":
    main()
