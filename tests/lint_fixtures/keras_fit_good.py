"""Train a small image classifier with Keras `fit`, the way the performance guides recommend.

A lint fixture that must stay silent: the same script as keras_fit_bad.py with every problem fixed.
"""

import argparse

import tensorflow as tf
from tensorflow import keras
from tensorflow.keras import layers

NUM_CLASSES = 10
HIDDEN = 128
IMAGE_SIZE = 32
AUTOTUNE = tf.data.AUTOTUNE


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=128)
    return parser.parse_args()


def augment(image, label):
    image = tf.image.random_flip_left_right(image)
    image = tf.image.random_brightness(image, 0.1)
    return tf.cast(image, tf.float32) / 255.0, label


def make_datasets(batch_size: int):
    (x_train, y_train), (x_test, y_test) = keras.datasets.cifar10.load_data()
    train = tf.data.Dataset.from_tensor_slices((x_train, y_train))
    train = train.shuffle(10_000).map(augment, num_parallel_calls=AUTOTUNE)
    train = train.batch(batch_size, drop_remainder=True).prefetch(AUTOTUNE)
    test = tf.data.Dataset.from_tensor_slices((x_test, y_test)).batch(batch_size).prefetch(AUTOTUNE)
    return train, test


def conv_block(x, filters: int):
    x = layers.Conv2D(filters, 3, padding="same", use_bias=False)(x)
    x = layers.BatchNormalization()(x)
    x = layers.ReLU()(x)
    # A bias is fine where no batch normalization follows.
    return layers.Conv2D(filters, 1, padding="same", data_format="channels_last")(x)


def build_model() -> keras.Model:
    inputs = keras.Input(shape=(IMAGE_SIZE, IMAGE_SIZE, 3))
    x = conv_block(inputs, 32)
    x = conv_block(x, 64)
    x = layers.MaxPooling2D()(x)
    x = layers.Flatten()(x)
    x = layers.Dense(HIDDEN, activation="relu")(x)
    x = layers.Dropout(0.3)(x)
    # The output layer runs in float32: no float16 softmax, and its size does not need tensor cores.
    outputs = layers.Dense(NUM_CLASSES, activation="softmax", dtype="float32")(x)
    return keras.Model(inputs, outputs)


def main() -> None:
    args = parse_args()
    keras.mixed_precision.set_global_policy("mixed_float16")
    train, test = make_datasets(args.batch_size)
    model = build_model()
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(),
        metrics=["accuracy"],
    )
    model.fit(train, epochs=args.epochs, validation_data=test)
    model.evaluate(test)


if __name__ == "__main__":
    main()
