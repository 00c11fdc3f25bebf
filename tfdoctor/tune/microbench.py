"""The built-in micro-benchmark: a short TensorFlow loop of convolutions and matrix products, run in a
fresh process for each trial, that prints its throughput (steps per second).

Independent branches in one step give the inter-op pool work to overlap; the convolution and the matrix
products keep the intra-op pool (and oneDNN) busy. It is a proxy, not your model: tune your own command
(`tfdoctor tune -- python train.py --metric ...`) for settings you will keep.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

CHUNKS = 9


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tfdoctor.tune.microbench")
    parser.add_argument("--seconds", type=float, default=3.0, help="measured time after the warm-up")
    parser.add_argument("--size", type=int, default=256, help="matrix size")
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    tf.random.set_seed(0)
    size = args.size
    mats = [tf.random.normal((size, size)) for _ in range(4)]
    images = tf.random.normal((8, 32, 32, 16))
    kernel = tf.random.normal((3, 3, 16, 32))

    @tf.function
    def step() -> tf.Tensor:
        # Four independent branches: what the inter-op pool can run side by side.
        products = [tf.reduce_sum(tf.matmul(m, mats[(i + 1) % 4])) for i, m in enumerate(mats)]
        conv = tf.reduce_sum(tf.nn.relu(tf.nn.conv2d(images, kernel, strides=1, padding="SAME")))
        return tf.add_n(products) + conv

    for _ in range(5):  # trace and warm up the pools
        step().numpy()
    # The measured time is cut into chunks and the median chunk rate is printed: a burst of another
    # process on a shared machine spoils one chunk, not the trial.
    chunk = args.seconds / CHUNKS
    rates: list[float] = []
    steps = 0
    start = time.perf_counter()
    while len(rates) < CHUNKS:
        chunk_steps, chunk_start = 0, time.perf_counter()
        while True:
            step().numpy()
            chunk_steps += 1
            elapsed = time.perf_counter() - chunk_start
            if elapsed >= chunk:
                break
        rates.append(chunk_steps / elapsed)
        steps += chunk_steps
    total = time.perf_counter() - start
    print(f"tfdoctor-tune throughput: {statistics.median(rates):.3f} steps/s "
          f"({steps} steps in {total:.2f} s, median of {CHUNKS} chunks)")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
