"""The workload process: the only code of tfdoctor that imports TensorFlow.

Run as a script by path (`python workload_main.py SPEC.json`), never imported by tfdoctor, so it can
run under another interpreter that has TensorFlow but not tfdoctor. It reads a JSON spec, imports
TensorFlow, applies an in-process snippet (a mixed-precision policy, jit_compile), builds the workload,
runs warmup steps, then timed steps (optionally under the TensorFlow Profiler) and writes a JSON result.

Each timed step is split into the wait for the next batch (`input_seconds`) and the whole step
(`step_seconds`), measured with perf_counter around a call that ends with the loss read back to the host
(`.numpy()`), so asynchronous device work is inside the step.

Steps of a user's script (`--workload script`), which tfdoctor does not drive: the script's own step
markers (`tf.profiler.experimental.Trace("train", step_num=step, _r=1)`) when it has them, read from the
XSpace by the parent. Without them, this process finds the steps itself while the script runs
(`ScriptSteps`): a callback injected into every Keras `fit`/`evaluate`/`predict` call (batch begin and
end), and a wrapper around `tf.function`'s `__call__` (each top-level call of each function). It writes
the windows of the chosen source into the result (`script_steps`) and, under the profiler, marks each
window in the trace (`tfdoctor_step` events) so the parent can read what happened inside it.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import os
import sys
import threading
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


# -- the steps of a user's script ------------------------------------------------------------------

STEP_EVENT = "tfdoctor_step"  # the trace event marking a window found here (stats: source, n, group); xspace.py
MIN_FUNCTION_CALLS = 5  # a tf.function called this often is a loop's step; fewer calls is set-up or export
MAX_WINDOWS = 20000  # per source: bounds the result file for a script that runs for hours
MAX_FUNCTIONS = 1000  # functions tracked (each kept alive): bounds a script that makes one per step
KERAS_SOURCES = ("keras_fit", "keras_evaluate", "keras_predict")  # in order of preference
KERAS_HOOKS = {"keras_fit": "train", "keras_evaluate": "test", "keras_predict": "predict"}


class ScriptSteps:
    """Step windows found while a script runs, per source: (start, end, group) in seconds since the
    script started. A source is a Keras method (its batch begin/end callbacks) or one tf.function (its
    top-level calls from the script's thread). Each window is also a trace event when profiling."""

    def __init__(self, tf: Any) -> None:
        self.tf = tf
        self.origin = time.perf_counter()
        self.windows: dict[str, list[tuple[float, float, int]]] = {}
        self.names: dict[str, str] = {source: f"keras {source[6:]}" for source in KERAS_SOURCES}
        self.thread = threading.get_ident()
        self.local = threading.local()  # depth of wrapped calls on this thread (nested calls are not steps)
        self.functions: dict[int, tuple[Any, str]] = {}  # id -> (the Function, kept alive so ids stay unique; key)

    def begin(self, source: str, group: int) -> tuple[str, float, int, Any]:
        windows = self.windows.setdefault(source, [])
        trace = self.tf.profiler.experimental.Trace(STEP_EVENT, source=source, n=len(windows), group=group)
        trace.__enter__()
        return source, time.perf_counter(), group, trace

    def end(self, token: tuple[str, float, int, Any] | None) -> None:
        if token is None:
            return
        source, start, group, trace = token
        end = time.perf_counter()
        trace.__exit__(None, None, None)
        windows = self.windows[source]
        if len(windows) < MAX_WINDOWS:
            windows.append((start - self.origin, end - self.origin, group))

    def abandon(self, token: tuple[str, float, int, Any] | None) -> None:
        """A window that never ended (Keras's batch that found the end of the data): marked as such in the
        trace, where it must end somewhere, and not a step."""
        if token is None:
            return
        trace = token[3]
        if hasattr(trace, "set_metadata"):
            trace.set_metadata(abandoned=1)
        trace.__exit__(None, None, None)

    def depth(self) -> int:
        return getattr(self.local, "depth", 0)

    def function_key(self, function: Any) -> str | None:
        known = self.functions.get(id(function))
        if known is None:
            if len(self.functions) >= MAX_FUNCTIONS:
                return None
            key = f"function_{len(self.functions) + 1}"
            name = getattr(function, "__name__", None) or getattr(function, "_name", None) or "?"
            self.names[key] = f"tf.function {name}"
            known = self.functions[id(function)] = (function, key)
        return known[1]

    def chosen(self) -> str | None:
        """Keras fit, else evaluate, else predict; else the tf.function called most often (at least
        MIN_FUNCTION_CALLS times; on a tie the one called first)."""
        for source in KERAS_SOURCES:
            if self.windows.get(source):
                return source
        calls = [(len(w), -w[0][0], key) for key, w in self.windows.items()
                 if key.startswith("function_") and len(w) >= MIN_FUNCTION_CALLS]
        return max(calls)[2] if calls else None

    def to_json(self) -> dict[str, Any]:
        source = self.chosen()
        candidates = sorted(((len(w), key) for key, w in self.windows.items() if w), reverse=True)[:5]
        return {
            "source": source,
            "name": self.names.get(source) if source else None,
            # Keras fetches each batch inside its train function (IteratorGetNext in the graph): the time
            # between its batches is its own bookkeeping. A loop that calls its step fetches between calls.
            "gap_is_input": bool(source and source.startswith("function_")),
            "windows": [[round(a, 6), round(b, 6), g] for a, b, g in self.windows.get(source, [])] if source else [],
            "candidates": [{"source": key, "name": self.names.get(key, key), "calls": n} for n, key in candidates],
        }


def _wrap_functions(tf: Any, steps: ScriptSteps) -> None:
    """Time every top-level call of every tf.function from the script's thread."""
    function_class = type(tf.function(lambda: None))
    original = function_class.__call__

    @functools.wraps(original)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        if steps.depth() or threading.get_ident() != steps.thread or not tf.executing_eagerly():
            return original(self, *args, **kwargs)
        key = steps.function_key(self)
        if key is None:
            return original(self, *args, **kwargs)
        token = steps.begin(key, 0)
        steps.local.depth = 1
        try:
            returned = original(self, *args, **kwargs)
        except BaseException:
            steps.abandon(token)  # e.g. the end of the data, raised inside the step: not a step
            raise
        finally:
            steps.local.depth = 0
        steps.end(token)
        return returned

    function_class.__call__ = call


def _keras_models(tf: Any) -> list[Any]:
    """The Model classes of the Keras packages loaded here: tf.keras (Keras 3, Keras 2 or tf-keras,
    whichever TensorFlow uses) and the standalone keras / tf_keras packages if already imported."""
    models: list[Any] = []
    for get in (lambda: tf.keras.Model, lambda: sys.modules["keras"].Model, lambda: sys.modules["tf_keras"].Model):
        try:
            model = get()
        except (KeyError, AttributeError, ImportError):
            continue
        if model not in models:
            models.append(model)
    return models


def _callback_class(base: Any, steps: ScriptSteps) -> Any:
    class TfdoctorSteps(base):  # type: ignore[misc, valid-type]
        """Marks each batch of one fit/evaluate/predict call as a step window."""

        def __init__(self, source: str, group: int) -> None:
            super().__init__()
            self._source, self._group, self._token = source, group, None

        def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
            self._group += 1  # a window does not run on into the next epoch

        def _abandon(self, *_: Any) -> None:
            # On data of unknown length Keras's last batch of an epoch begins, finds the end of the data
            # and never ends.
            steps.abandon(self._token)
            self._token = None

        on_epoch_end = on_train_end = on_test_end = on_predict_end = _abandon

        def _begin(self, kind: str) -> None:
            if KERAS_HOOKS[self._source] == kind:
                self._abandon()
                self._token = steps.begin(self._source, self._group)

        def _end(self, kind: str) -> None:
            if KERAS_HOOKS[self._source] == kind:
                steps.end(self._token)
                self._token = None

        def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
            self._begin("train")

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            self._end("train")

        def on_test_batch_begin(self, batch: int, logs: Any = None) -> None:
            self._begin("test")

        def on_test_batch_end(self, batch: int, logs: Any = None) -> None:
            self._end("test")

        def on_predict_batch_begin(self, batch: int, logs: Any = None) -> None:
            self._begin("predict")

        def on_predict_batch_end(self, batch: int, logs: Any = None) -> None:
            self._end("predict")

    return TfdoctorSteps


def _wrap_keras(tf: Any, steps: ScriptSteps) -> None:
    """Inject a step callback into every fit/evaluate/predict call (not into the evaluate that fit
    runs for validation: one Keras call at a time)."""
    calls = [0]
    for model in _keras_models(tf):
        package = model.__module__.split(".", 1)[0]
        try:
            callback = _callback_class(importlib.import_module(package + ".callbacks").Callback, steps)
        except (ImportError, AttributeError):
            continue
        for source, method in (("keras_fit", "fit"), ("keras_evaluate", "evaluate"), ("keras_predict", "predict")):
            original = getattr(model, method, None)
            if original is None or getattr(original, "_tfdoctor_wrapped", False):
                continue
            try:
                signature = inspect.signature(original)
            except (TypeError, ValueError):
                continue
            if "callbacks" not in signature.parameters:
                continue
            model_wrapper = _keras_method(original, signature, source, callback, steps, calls)
            setattr(model, method, model_wrapper)


def _keras_method(original: Any, signature: inspect.Signature, source: str, callback: Any,
                  steps: ScriptSteps, calls: list[int]) -> Any:
    @functools.wraps(original)
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(steps.local, "keras", False):
            return original(self, *args, **kwargs)
        try:
            bound = signature.bind(self, *args, **kwargs)
        except TypeError:
            return original(self, *args, **kwargs)  # let Keras report the bad call
        calls[0] += 1
        ours = callback(source, calls[0] * 1_000_000)  # groups of distinct calls never meet
        given = bound.arguments.get("callbacks")
        if given is None or isinstance(given, (list, tuple)):
            bound.arguments["callbacks"] = [*(given or ()), ours]
        elif isinstance(getattr(given, "callbacks", None), list):  # a CallbackList the script built
            given.callbacks.append(ours)
            ours.set_model(self)
        steps.local.keras = True
        try:
            return original(*bound.args, **bound.kwargs)
        finally:
            steps.local.keras = False

    method._tfdoctor_wrapped = True  # type: ignore[attr-defined]
    return method


def run_script(tf: Any, spec: dict[str, Any], result: dict[str, Any]) -> None:
    import runpy

    steps = ScriptSteps(tf)
    _wrap_keras(tf, steps)
    _wrap_functions(tf, steps)
    logdir = spec.get("logdir")
    if logdir:
        tf.profiler.experimental.start(logdir)
    sys.argv = [spec["script"], *spec.get("script_args", [])]
    # As `python train.py` would: the script's folder first on the path (its own modules import), and not
    # this file's folder (tfdoctor's facts.py, stats.py… would shadow a script's modules of those names).
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [os.path.dirname(os.path.abspath(spec["script"])),
                   *(entry for entry in sys.path if os.path.abspath(entry or ".") != here)]
    try:
        runpy.run_path(spec["script"], run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (None, 0):
            raise RuntimeError(f"the script exited with {exc.code}") from None
    finally:
        if logdir:
            tf.profiler.experimental.stop()
        result["script_steps"] = steps.to_json()
    # The parent derives the step and input times from the windows (and the trace): docs/profile.md.
    result["step_seconds"] = []
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
