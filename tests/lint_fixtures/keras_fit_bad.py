"""Train a small image classifier with Keras `fit` (a lint fixture: every problem here is deliberate).

Each line that tfdoctor lint must flag ends with an `expect:` comment naming the codes.
"""

import argparse
import os

import tensorflow as tf
from tensorflow import keras
from tensorflow.keras import layers

os.environ["CUDA_VISIBLE_DEVICES"] = "0"  # expect: SRC113

NUM_CLASSES = 10
HIDDEN = 100
IMAGE_SIZE = 32


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
    x_train = x_train.transpose(0, 3, 1, 2)
    x_test = x_test.transpose(0, 3, 1, 2)
    train = tf.data.Dataset.from_tensor_slices((x_train, y_train))
    train = train.shuffle(10_000).map(augment)  # expect: SRC103
    train = train.batch(batch_size)
    test = tf.data.Dataset.from_tensor_slices((x_test, y_test)).batch(batch_size)
    return train, test  # the caller consumes them: SRC102 is reported there


def build_model() -> keras.Model:
    return keras.Sequential([
        keras.Input(shape=(3, IMAGE_SIZE, IMAGE_SIZE)),
        layers.Conv2D(32, 3, padding="same", data_format="channels_first"),  # expect: SRC101 SRC109
        layers.BatchNormalization(axis=1),
        layers.ReLU(),
        layers.Conv2D(64, 3, padding="same", use_bias=True, data_format="channels_first"),  # expect: SRC101 SRC109
        layers.BatchNormalization(axis=1),
        layers.ReLU(),
        layers.MaxPooling2D(data_format="channels_first"),  # expect: SRC101
        layers.Flatten(),
        layers.Dense(HIDDEN, activation="relu"),  # expect: SRC112
        layers.Dropout(0.3),
        layers.Dense(NUM_CLASSES, activation="softmax"),  # expect: SRC111 (its size is the class count)
    ])


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
    model.fit(train, epochs=args.epochs, validation_data=test)  # expect: SRC102 (test: in memory, no map)
    model.evaluate(test)


if __name__ == "__main__":
    main()
