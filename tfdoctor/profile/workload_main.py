"""The workload process: the only code of tfdoctor that imports TensorFlow.

Run as a script by path (`python workload_main.py SPEC.json`), never imported by tfdoctor, so it can
run under another interpreter that has TensorFlow but not tfdoctor. It reads a JSON spec, imports
TensorFlow, applies an in-process snippet (a mixed-precision policy, jit_compile), builds the workload,
runs warmup steps, then timed steps (optionally under the TensorFlow Profiler) and writes a JSON result.

Each timed step is split into the wait for the next batch (`input_seconds`) and the whole step
(`step_seconds`), measured with perf_counter around a call that ends with the loss read back to the host
(`.numpy()`), so asynchronous device work is inside the step.

Step markers for a user's script (`--workload script`): wrap each training step in
`tf.profiler.experimental.Trace("train", step_num=step, _r=1)`; the profile's step times come from
these markers.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from typing import Any

MIN_TIMED_STEPS = 10
PROTOCOL = "TFDOCTOR "
JIT_SNIPPET_FLAG = "TFDOCTOR_JIT_COMPILE"  # a snippet sets this global to request jit_compile=True


def _devices(tf: Any) -> list[dict[str, str]]:
    return [{"name": d.name, "type": d.device_type} for d in tf.config.list_logical_devices()]


def _choose_device(tf: Any, device: str) -> None:
    if device == "cpu":
        tf.config.set_visible_devices([], "GPU")
    elif device == "gpu" and not tf.config.list_physical_devices("GPU"):
        raise RuntimeError("--device gpu: TensorFlow sees no GPU")


def _cnn_model(tf: Any) -> Any:
    layers = tf.keras.layers
    return tf.keras.Sequential([
        tf.keras.Input((32, 32, 3)),
        layers.Conv2D(32, 3, padding="same", activation="relu"),
        layers.Conv2D(32, 3, padding="same", activation="relu"),
        layers.MaxPooling2D(),
        layers.Conv2D(64, 3, padding="same", activation="relu"),
        layers.MaxPooling2D(),
        layers.Flatten(),
        layers.Dense(64, activation="relu"),
        layers.Dense(10),
        # The output in float32 whatever the policy: the loss must not be computed in float16.
        layers.Activation("linear", dtype="float32"),
    ])


def _train_step(tf: Any, model: Any, jit: bool) -> Any:
    optimizer = tf.keras.optimizers.SGD(0.01)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function(jit_compile=jit)
    def step(images: Any, labels: Any) -> Any:
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(images, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss

    return step


def _batches(tf: Any, batch: int) -> Any:
    images = tf.random.uniform((batch * 4, 32, 32, 3))
    labels = tf.random.uniform((batch * 4,), maxval=10, dtype=tf.int32)
    return tf.data.Dataset.from_tensor_slices((images, labels)).repeat().batch(batch)


def _synthetic_dataset(tf: Any, batch: int) -> Any:
    return _batches(tf, batch).prefetch(tf.data.AUTOTUNE)


def _slow_py_function_dataset(tf: Any, batch: int, delay: float) -> Any:
    """A pipeline whose map runs Python per batch (tf.py_function), sequentially and without
    prefetch: the classic input-bound pipeline (the GIL, no parallel calls, no overlap)."""

    def slow(images: Any) -> Any:
        time.sleep(delay)
        return images

    def mapped(images: Any, labels: Any) -> Any:
        out = tf.py_function(slow, [images], tf.float32)
        out.set_shape(images.shape)
        return out, labels

    return _batches(tf, batch).map(mapped)


def build(tf: Any, spec: dict[str, Any], jit: bool) -> tuple[Any, Any]:
    """(step function taking a batch and returning a tensor, iterator or None)."""
    workload = spec["workload"]
    # pyfunc must wait for input on any machine: batches of 8 keep its CNN step a fraction of the 300 ms
    # map (at 32 a slow or busy 2-CPU node spent ~40 % of the step computing, near the 50 % threshold).
    batch = int(spec.get("batch") or (8 if workload == "pyfunc" else 32))
    if workload in ("cnn", "pyfunc"):
        model = _cnn_model(tf)
        step = _train_step(tf, model, jit)
        if workload == "cnn":
            dataset = _synthetic_dataset(tf, batch)
        else:
            dataset = _slow_py_function_dataset(tf, batch, float(spec.get("input_delay") or 0.3))
        return (lambda b: step(*b)), iter(dataset)
    if workload == "matmul":
        size = int(spec.get("size") or 1024)
        a = tf.Variable(tf.random.uniform((size, size)))
        b = tf.random.uniform((size, size))

        @tf.function(jit_compile=jit)
        def matmul_step() -> Any:
            x = b
            for _ in range(4):
                x = tf.tanh(tf.matmul(a, x) * 0.01)
            return tf.reduce_sum(x)

        return (lambda _b: matmul_step()), None
    raise ValueError(f"unknown workload {workload!r}")


def run_builtin(tf: Any, spec: dict[str, Any], result: dict[str, Any], jit: bool) -> None:
    step_fn, iterator = build(tf, spec, jit)
    for _ in range(int(spec.get("warmup", 3))):
        batch = next(iterator) if iterator is not None else None
        step_fn(batch).numpy()
    logdir = spec.get("logdir")
    if logdir:
        tf.profiler.experimental.start(logdir)
    result["phase"] = "timed steps"
    steps, inputs = _timed(tf, step_fn, iterator, int(spec.get("steps", 10)), 0,
                           float(spec.get("step_budget") or 0.0), min_steps=MIN_TIMED_STEPS)
    if logdir:
        stop = time.perf_counter()
        tf.profiler.experimental.stop()
        result["profiler_stop_seconds"] = time.perf_counter() - stop
    result["step_seconds"] = steps
    result["input_seconds"] = inputs


def _timed(tf: Any, step_fn: Any, iterator: Any, count: int, first: int,
           max_seconds: float = 0.0, min_steps: int = 2) -> tuple[list[float], list[float]]:
    """Step and input-wait times of `count` steps, each inside the profiler's step Trace; with
    `max_seconds`, stops early once `min_steps` are timed and the time is spent."""
    steps: list[float] = []
    inputs: list[float] = []
    started = time.perf_counter()
    for number in range(first, first + count):
        if max_seconds and len(steps) >= min_steps and time.perf_counter() - started > max_seconds:
            break
        with tf.profiler.experimental.Trace("train", step_num=number, _r=1):
            start = time.perf_counter()
            batch = next(iterator) if iterator is not None else None
            got = time.perf_counter()
            step_fn(batch).numpy()
            end = time.perf_counter()
        steps.append(end - start)
        inputs.append(got - start)
    return steps, inputs


def serve(tf: Any, spec: dict[str, Any], result: dict[str, Any], jit: bool) -> None:
    """Comparison mode: set up and warm up, then run timed chunks on request, so the parent can
    interleave two live processes chunk by chunk (A B B A ...) and both see the same machine.

    Protocol on stdout: lines starting with PROTOCOL; stdin: "STEPS MAX_SECONDS" per line, EOF ends.
    Each reply gives, per step, its wall time, its input wait and the CPU time of the whole process
    (time.process_time: every thread, TensorFlow's pools included; the Python thread's own CPU time
    would miss the work, which runs in the pools)."""
    step_fn, iterator = build(tf, spec, jit)
    for _ in range(int(spec.get("warmup", 3))):
        batch = next(iterator) if iterator is not None else None
        step_fn(batch).numpy()
    result["phase"] = "serving"
    print(PROTOCOL + json.dumps({"ready": True, **result}), flush=True)
    for line in sys.stdin:
        words = line.split()
        count = int(words[0]) if words else 0
        max_seconds = float(words[1]) if len(words) > 1 else 0.0
        print(PROTOCOL + json.dumps(_served_chunk(step_fn, iterator, count, max_seconds)), flush=True)


def _served_chunk(step_fn: Any, iterator: Any, count: int, max_seconds: float) -> dict[str, list[float]]:
    """`count` steps (fewer, but at least two, once `max_seconds` have passed): wall, input, CPU."""
    steps: list[float] = []
    inputs: list[float] = []
    cpu: list[float] = []
    started = time.perf_counter()
    for _ in range(count):
        if max_seconds and len(steps) >= 2 and time.perf_counter() - started > max_seconds:
            break
        cpu_start, start = time.process_time(), time.perf_counter()
        batch = next(iterator) if iterator is not None else None
        got = time.perf_counter()
        step_fn(batch).numpy()
        end, cpu_end = time.perf_counter(), time.process_time()
        steps.append(end - start)
        inputs.append(got - start)
        cpu.append(cpu_end - cpu_start)
    return {"step_seconds": steps, "input_seconds": inputs, "cpu_seconds": cpu}


def run_script(tf: Any, spec: dict[str, Any], result: dict[str, Any]) -> None:
    import runpy

    logdir = spec.get("logdir")
    if logdir:
        tf.profiler.experimental.start(logdir)
    sys.argv = [spec["script"], *spec.get("script_args", [])]
    try:
        runpy.run_path(spec["script"], run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (None, 0):
            raise RuntimeError(f"the script exited with {exc.code}") from None
    finally:
        if logdir:
            tf.profiler.experimental.stop()
    result["step_seconds"] = []  # taken from the profile's step markers
    result["input_seconds"] = []


def main(argv: list[str]) -> int:
    with open(argv[1], encoding="utf-8") as handle:
        spec = json.load(handle)
    result: dict[str, Any] = {"ok": False, "phase": "import"}
    started = time.perf_counter()
    try:
        import tensorflow as tf

        result["import_seconds"] = time.perf_counter() - started
        result["tf_version"] = tf.__version__
        result["phase"] = "setup"
        _choose_device(tf, spec.get("device", "auto"))
        namespace: dict[str, Any] = {"tf": tf, "tensorflow": tf}
        if spec.get("snippet"):
            exec(compile(spec["snippet"], "<tfdoctor fix>", "exec"), namespace)
        jit = bool(namespace.get(JIT_SNIPPET_FLAG) or spec.get("jit_compile"))
        result["jit_compile"] = jit
        result["policy"] = tf.keras.mixed_precision.global_policy().name
        result["devices"] = _devices(tf)
        result["phase"] = "workload"
        if spec.get("serve"):
            serve(tf, spec, result, jit)
        elif spec["workload"] == "script":
            run_script(tf, spec, result)
        else:
            run_builtin(tf, spec, result, jit)
        result["intra_op_threads"] = tf.config.threading.get_intra_op_parallelism_threads()
        result["ok"] = True
    except BaseException as exc:  # reported to the parent, which turns it into one line
        result["error"] = f"{type(exc).__name__}: {exc}"
        result["traceback"] = traceback.format_exc(limit=8)
    result["total_seconds"] = time.perf_counter() - started
    with open(spec["result"], "w", encoding="utf-8") as handle:
        json.dump(result, handle)
    sys.stdout.flush()
    # Skip interpreter teardown (TensorFlow's can take a second); the result is already on disk.
    os._exit(0 if result["ok"] else 1)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
