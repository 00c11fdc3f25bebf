"""A text-classification input pipeline on TFRecords, trained with MultiWorkerMirroredStrategy.

The guides' version of input_pipeline_bad.py: a lint fixture that must stay silent.
"""

import json
import os

import tensorflow as tf

os.environ["TF_CONFIG"] = json.dumps({
    "cluster": {"worker": ["node-1.example:12345", "node-2.example:12345"]},
    "task": {"type": "worker", "index": int(os.environ.get("WORKER_INDEX", "0"))},
})
strategy = tf.distribute.MultiWorkerMirroredStrategy()
AUTOTUNE = tf.data.AUTOTUNE
SEQUENCE_LENGTH = 64

FEATURES = {
    "tokens": tf.io.VarLenFeature(tf.int64),
    "label": tf.io.FixedLenFeature([], tf.int64),
}


def parse(record):
    example = tf.io.parse_single_example(record, FEATURES)
    tokens = tf.sparse.to_dense(example["tokens"])[:SEQUENCE_LENGTH]
    return tf.clip_by_value(tokens, 0, 30_000), example["label"]


def make_dataset(pattern: str, batch_size: int, input_context: tf.distribute.InputContext) -> tf.data.Dataset:
    files = tf.data.Dataset.list_files(pattern, shuffle=False)
    files = files.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    ds = files.interleave(tf.data.TFRecordDataset, cycle_length=4, num_parallel_calls=AUTOTUNE)
    ds = ds.shuffle(10_000).map(parse, num_parallel_calls=AUTOTUNE)
    ds = ds.padded_batch(batch_size, padded_shapes=([SEQUENCE_LENGTH], []), drop_remainder=True)
    return ds.prefetch(AUTOTUNE)


@tf.function(jit_compile=True)
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
    train = strategy.distribute_datasets_from_function(
        lambda ctx: make_dataset("data/train-*.tfrecord", 32, ctx))
    for tokens, labels in train:
        strategy.run(train_step, args=(model, optimizer, tokens, labels))
    val = make_dataset("data/val-*.tfrecord", 32, tf.distribute.InputContext())
    model.evaluate(val)


if __name__ == "__main__":
    main()
