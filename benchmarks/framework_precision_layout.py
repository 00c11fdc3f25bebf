"""The figures behind MP103/MP104/MP105 and LAY101, measured on this machine's CPU: training-step time of a
small convolutional model under mixed_float16, mixed_bfloat16 and channels_first, each against float32
channels_last measured in the same run (each variant in its own process: a Keras policy is global).

    python benchmarks/framework_precision_layout.py [--steps 30] [--python PATH]

Needs TensorFlow in the interpreter given by --python (this one by default). Prints the median step time
of each variant and its ratio to the float32/channels_last baseline (> 1: slower).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

WORKLOAD = r"""
import json, os, sys, time
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf
policy, layout, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
tf.keras.mixed_precision.set_global_policy(policy)
tf.keras.backend.set_image_data_format(layout)
shape = (3, 64, 64) if layout == "channels_first" else (64, 64, 3)
model = tf.keras.Sequential([
    tf.keras.Input(shape),
    tf.keras.layers.Conv2D(64, 3, padding="same", activation="relu"),
    tf.keras.layers.Conv2D(64, 3, padding="same", activation="relu"),
    tf.keras.layers.MaxPooling2D(),
    tf.keras.layers.Conv2D(128, 3, padding="same", activation="relu"),
    tf.keras.layers.GlobalAveragePooling2D(),
    tf.keras.layers.Dense(10),
    tf.keras.layers.Activation("linear", dtype="float32"),
])
model.compile(optimizer="sgd", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
x = tf.random.uniform((32, *shape))
y = tf.random.uniform((32,), maxval=10, dtype=tf.int32)
model.train_on_batch(x, y)
model.train_on_batch(x, y)
times = []
for _ in range(steps):
    start = time.perf_counter()
    model.train_on_batch(x, y)
    times.append(time.perf_counter() - start)
times.sort()
print(json.dumps({"median_ms": times[len(times) // 2] * 1000}))
"""

VARIANTS = (("float32", "channels_last"), ("mixed_float16", "channels_last"),
            ("mixed_bfloat16", "channels_last"), ("float32", "channels_first"))


def measure(python: str, policy: str, layout: str, steps: int) -> float | str:
    result = subprocess.run([python, "-c", WORKLOAD, policy, layout, str(steps)], capture_output=True, text=True,
                            timeout=900)
    if result.returncode != 0:
        return f"failed: {(result.stderr.strip().splitlines() or ['?'])[-1]}"
    return float(json.loads(result.stdout.strip().splitlines()[-1])["median_ms"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    cpuinfo = Path("/proc/cpuinfo")
    flags = cpuinfo.read_text().split("flags", 2)[1].splitlines()[0] if cpuinfo.exists() else ""
    bf16 = [f for f in ("avx512_bf16", "amx_bf16") if f" {f}" in flags]
    print(f"CPU bfloat16 units: {', '.join(bf16) or 'none'}")
    baseline = measure(args.python, *VARIANTS[0], args.steps)
    print(f"baseline float32 channels_last: {baseline if isinstance(baseline, str) else f'{baseline:.1f} ms'}")
    for policy, layout in VARIANTS[1:]:
        value = measure(args.python, policy, layout, args.steps)
        if isinstance(value, str) or isinstance(baseline, str):
            print(f"{policy} {layout}: {value}")
        else:
            print(f"{policy} {layout}: {value:.1f} ms, {value / baseline:.2f}× the baseline's step time")


if __name__ == "__main__":
    main()
