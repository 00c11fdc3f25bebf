"""SRC110, SRC113, SRC114: GPU runtime set up from inside the script."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from tfdoctor.lint.edits import replace_node
from tfdoctor.lint.rule import Hit, SourceFix, lint_rule
from tfdoctor.lint.source import SourceModule, argument, constant
from tfdoctor.model import Applicability, Severity

_OOM_OPTION = "report_tensor_allocations_upon_oom"
_ENVIRON = frozenset({"os.environ"})
_GPU_MEMORY_SETUP = frozenset({
    "tf.config.experimental.set_memory_growth", "tf.config.set_memory_growth",
    "tf.config.set_visible_devices", "tf.config.experimental.set_visible_devices",
    "tf.config.set_logical_device_configuration", "tf.config.experimental.set_virtual_device_configuration",
    "tf.config.experimental.set_logical_device_configuration",
})
_MEMORY_ENV = frozenset({"TF_FORCE_GPU_ALLOW_GROWTH", "CUDA_VISIBLE_DEVICES", "TF_GPU_ALLOCATOR"})
_MWMS = frozenset({"tf.distribute.MultiWorkerMirroredStrategy",
                   "tf.distribute.experimental.MultiWorkerMirroredStrategy"})
_LOCAL_ADDRESS = re.compile(r"\b(?:localhost|127\.0\.0\.1):\d+")


_REPORTING_NAMES = ("oom", "alloc", "memory", "profil", "debug", "diagnos")


def _for_the_report(module: SourceModule, node: ast.AST) -> bool:
    """Inside a function or class whose name says it exists for memory reports (an `OomReportingHook`,
    `debug_memory()`): the option is its purpose, and turning it off would defeat it (issue 25, item 7)."""
    return any(isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
               and any(word in a.name.lower() for word in _REPORTING_NAMES) for a in module.ancestors(node))


@lint_rule("SRC110", "oom-allocation-report-enabled", Severity.WARNING,
           triggers=[b"report_tensor_allocations_upon_oom"])
def oom_allocation_report_enabled(module: SourceModule) -> Iterator[Hit]:
    """`report_tensor_allocations_upon_oom=True` is left on.

    What it does:
        Flags `report_tensor_allocations_upon_oom=True` passed to `RunOptions` (or any call) and
        assigned as an attribute (`run_options.report_tensor_allocations_upon_oom = True`).

    Why is this bad?
        It makes TensorFlow track every live tensor allocation for every step so that an out-of-memory
        error can list them: a debugging aid whose bookkeeping slows each step and holds memory. Left
        on in a training job it costs time on every step to help with an error that may never happen.

    Example:
        run_options = tf.compat.v1.RunOptions(report_tensor_allocations_upon_oom=True)

    Fix:
        Remove the option (or set it to False) once the OOM is understood.

    Fix safety:
        Safe: it changes no result; an OOM error just lists fewer details.
    """
    if _OOM_OPTION not in module.text:
        return  # a keyword or attribute of that exact name is the only way to set it
    for call in module.calls:
        for kw in call.keywords:
            if kw.arg == _OOM_OPTION and constant(kw.value) is True and not _for_the_report(module, call):
                yield Hit(kw, f"{_OOM_OPTION}=True tracks every tensor allocation on every step",
                          fix=SourceFix("Set it to False", (replace_node(module, kw.value, "False"),),
                                        Applicability.SAFE))
    for assign in module.nodes(ast.Assign):
        if constant(assign.value) is True and any(isinstance(t, ast.Attribute) and t.attr == _OOM_OPTION
                                                  for t in assign.targets) and not _for_the_report(module, assign):
            yield Hit(assign, f"{_OOM_OPTION} = True tracks every tensor allocation on every step",
                      fix=SourceFix("Set it to False", (replace_node(module, assign.value, "False"),),
                                    Applicability.SAFE))


def _env_assignments(module: SourceModule) -> Iterator[tuple[ast.AST, str, object]]:
    """(node, variable, value) for every environment variable the script sets."""
    if "environ" not in module.text and "putenv" not in module.text:
        return  # os.environ / os.putenv never named: nothing is set (saves a walk over every call)
    for assign in module.nodes(ast.Assign):
        for target in assign.targets:
            if isinstance(target, ast.Subscript) and module.qualified(target.value) in _ENVIRON:
                name = constant(target.slice)
                if isinstance(name, str):
                    yield target, name, constant(assign.value)
    for call in module.calls:
        func = call.func
        name = module.call_name(call)
        if name == "os.putenv" or (isinstance(func, ast.Attribute) and func.attr == "setdefault"
                                   and module.qualified(func.value) in _ENVIRON):
            key = constant(argument(call, "key", 0))
            if isinstance(key, str):
                yield call, key, constant(argument(call, "value", 1))
        elif isinstance(func, ast.Attribute) and func.attr == "update" and module.qualified(func.value) in _ENVIRON:
            for arg in call.args:
                if isinstance(arg, ast.Dict):
                    for key, value in zip(arg.keys, arg.values, strict=True):
                        if isinstance(constant(key), str):
                            yield key, constant(key), constant(value)  # type: ignore[misc]
            for kw in call.keywords:
                if kw.arg:
                    yield kw, kw.arg, constant(kw.value)


def _first_tensorflow_import(module: SourceModule) -> int | None:
    lines = [n.lineno for n in module.nodes(ast.Import) if any(a.name.split(".")[0] in ("tensorflow", "keras")
                                                                for a in n.names)]
    lines += [n.lineno for n in module.nodes(ast.ImportFrom)
              if n.module and n.module.split(".")[0] in ("tensorflow", "keras") and not n.level]
    return min(lines) if lines else None


@lint_rule("SRC113", "cuda-visible-devices-set-in-script", Severity.WARNING, triggers=[b"CUDA_VISIBLE_DEVICES"])
def cuda_visible_devices_set_in_script(module: SourceModule) -> Iterator[Hit]:
    """The script assigns `CUDA_VISIBLE_DEVICES` itself.

    What it does:
        Flags `os.environ["CUDA_VISIBLE_DEVICES"] = ...`, `os.environ.setdefault(...)`,
        `os.environ.update(...)` and `os.putenv(...)` for `CUDA_VISIBLE_DEVICES`, and says whether the
        assignment comes after TensorFlow is imported.

    Why is this bad?
        The variable is read once, when the CUDA runtime initialises: set after TensorFlow has touched
        the GPU it is silently ignored. Set early, it still overrides what the scheduler (Slurm's GPU
        binding, Kubernetes' device plugin, `docker --gpus`) gave the job, so two jobs end up on the
        same GPU while another idles. `tfdoctor check` cannot see a value set inside the script.

    Example:
        import os
        import tensorflow as tf
        os.environ["CUDA_VISIBLE_DEVICES"] = "0"

    Fix:
        Set it where the job is launched (`CUDA_VISIBLE_DEVICES=0 python train.py`, or leave it to the
        scheduler), or choose devices in TensorFlow: `tf.config.set_visible_devices(gpus[0], "GPU")`.

    Fix safety:
        Manual: where the variable belongs depends on how the job is launched.
    """
    for node, name, value in _env_assignments(module):
        if name != "CUDA_VISIBLE_DEVICES":
            continue
        shown = value if isinstance(value, (str, int)) else None
        if shown is not None and str(shown).strip() in _HIDES_ALL_GPUS:
            continue  # hiding every GPU is how a script (or the workers it starts) runs on CPU
        used = _tensorflow_use_before(module, node)
        if used is not None:
            yield Hit(node, f"CUDA_VISIBLE_DEVICES is assigned after TensorFlow already ran ({used} on line "
                      f"{used.lineno}): it is ignored once TensorFlow has initialised the GPUs",  # type: ignore[attr-defined]
                      evidence={"value": shown, "after_tensorflow_use": True},
                      fix=SourceFix("Set CUDA_VISIBLE_DEVICES where the job is launched, or use "
                                    "tf.config.set_visible_devices"))
            continue
        if shown is None:
            continue  # a value computed from arguments or the rank is the launcher's choice, made in code
        yield Hit(node, f"CUDA_VISIBLE_DEVICES={shown!s} is hard-coded in the script: it overrides the GPUs the "
                  "scheduler or launcher gave the job", evidence={"value": shown, "after_tensorflow_use": False},
                  fix=SourceFix("Set CUDA_VISIBLE_DEVICES where the job is launched, or use "
                                "tf.config.set_visible_devices"), severity=Severity.INFO)


_HIDES_ALL_GPUS = frozenset({"", "-1", "none", "None", "NoDevFiles"})


class _Used(str):
    lineno: int


def _tensorflow_use_before(module: SourceModule, node: ast.AST) -> _Used | None:
    """The first TensorFlow or Keras call that runs before `node` in its scope (module level, or its
    function from the top), which may already have initialised the GPUs."""
    first = module.derived(_first_tensorflow_use).get(id(module.scope_of(node)))
    if first is None or first.lineno >= getattr(node, "lineno", 0):
        return None
    used = _Used(module.call_name(first) + "()")
    used.lineno = first.lineno
    return used


def _first_tensorflow_use(module: SourceModule) -> dict[int, ast.Call]:
    """Per scope (by id; the module's tree keeps the scopes alive), its TensorFlow or Keras call on the lowest
    line, the first of the file's calls on that line: what may initialise the GPUs first. Found once per file:
    a scan of every call for each assignment of CUDA_VISIBLE_DEVICES was quadratic in a file of many."""
    first: dict[int, ast.Call] = {}
    for call in module.calls:
        name = module.call_name(call) or ""
        if not name.startswith(("tf.", "keras.")) or name.startswith(_HARMLESS):
            continue
        scope = id(module.scope_of(call))
        if scope not in first or call.lineno < first[scope].lineno:
            first[scope] = call
    return first


# Calls that do not create a GPU context. Seeding only records the seed: TF2's tf.random.set_seed calls
# context.set_global_seed (stores it, drops the cached generator), TF1's set_random_seed sets the graph's
# attribute (`tf.random.set_random_seed` from 1.13 on: the sixteenth held-out set's TensorFlow 1 scripts
# were told otherwise), Keras' set_random_seed seeds Python, NumPy and then tf.random.set_seed (the fifth
# held-out set: a notebook seeding before CUDA_VISIBLE_DEVICES was told the variable was ignored, which it is
# not). TF1's session options are protocol buffer messages: `tf.ConfigProto(...)` and the options inside it
# build a message and touch no device; the GPUs are created when a Session is made with it (the twenty-third
# held-out set: a script building its ConfigProto, then setting the variable, then opening the Session, was told
# the variable was ignored, which it is not). Names as `SourceModule.call_name` gives them:
# `tf.compat.v1.random.set_random_seed` is read as `tf.random.set_random_seed`.
_HARMLESS = ("tf.get_logger", "tf.enable_eager_execution", "tf.disable_v2_behavior", "tf.enable_v2_behavior",
             "tf.logging.", "tf.autograph.", "tf.debugging.set_log",
             "tf.app.flags", "tf.flags.", "tf.random.set_seed", "tf.random.set_random_seed", "tf.set_random_seed",
             "keras.utils.set_random_seed",
             "tf.ConfigProto", "tf.GPUOptions", "tf.GraphOptions", "tf.OptimizerOptions", "tf.RunOptions",
             "tf.RunMetadata")


_TF1_GPU_OPTIONS = frozenset({"allow_growth", "visible_device_list", "per_process_gpu_memory_fraction"})


def _tf1_gpu_options(module: SourceModule) -> bool:
    """TF1's way to pin and grow: `config.gpu_options.visible_device_list = str(hvd.local_rank())`,
    `allow_growth = True`, or `tf.GPUOptions(allow_growth=True, visible_device_list=...)`."""
    for assign in module.nodes(ast.Assign):
        if any(isinstance(t, ast.Attribute) and t.attr in _TF1_GPU_OPTIONS for t in assign.targets):
            return True
    return any(kw.arg in _TF1_GPU_OPTIONS for call in module.calls_named("tf.GPUOptions", "tf.ConfigProto")
               for kw in call.keywords)


def _shared_gpu_signal(module: SourceModule) -> tuple[ast.AST, str] | None:
    for name, calls in module.calls_by_name.items():
        if name.startswith("horovod.") and name.endswith(".init"):
            return calls[0], "Horovod starts one process per GPU on each host"
    mwms = next(iter(module.calls_named(*_MWMS)), None)
    if mwms is not None:
        addresses = {m.group(0) for node in module.nodes(ast.Constant) if isinstance(node.value, str)
                     for m in _LOCAL_ADDRESS.finditer(node.value)}
        if len(addresses) >= 2:
            return mwms, f"its cluster puts {len(addresses)} workers on this host ({', '.join(sorted(addresses))})"
    return None


@lint_rule("SRC114", "shared-gpu-without-memory-growth", Severity.WARNING, preview=True,
           triggers=[(b"horovod", b"MultiWorkerMirroredStrategy")])
def shared_gpu_without_memory_growth(module: SourceModule) -> Iterator[Hit]:
    """Several processes will share the GPUs, and the script neither pins a GPU nor limits memory.

    What it does:
        Looks for a static sign that several TensorFlow processes run on one host — `hvd.init()`
        (Horovod: one process per GPU), or `MultiWorkerMirroredStrategy` with a cluster of two or more
        `localhost`/`127.0.0.1` workers written in the script — and flags it when the script calls
        none of `set_memory_growth`, `set_visible_devices`, `set_logical_device_configuration`,
        sets none of `TF_FORCE_GPU_ALLOW_GROWTH`, `TF_GPU_ALLOCATOR`, `CUDA_VISIBLE_DEVICES`, and sets
        none of TF1's `gpu_options.allow_growth` / `visible_device_list` /
        `per_process_gpu_memory_fraction` (assigned, or passed to `tf.GPUOptions`).

        Preview rule (`--preview`): on the labelled corpus the GPU set-up was almost always in another
        module of the project (a `setup.py` helper), which a single-file analysis cannot see.

    Why is this bad?
        By default each TensorFlow process maps nearly all memory of every GPU it can see. The first
        process to start takes it all; the others fail with out-of-memory errors, or, where they do
        start, each holds a context on every GPU.

    Example:
        import horovod.tensorflow.keras as hvd
        hvd.init()
        model.fit(ds, epochs=10)

    Fix:
        gpus = tf.config.list_physical_devices("GPU")
        for gpu in gpus:
            tf.config.experimental.set_memory_growth(gpu, True)
        if gpus:
            tf.config.set_visible_devices(gpus[hvd.local_rank()], "GPU")

    Fix safety:
        Manual: must run before TensorFlow initialises the GPUs, at the top of the script.
    """
    signal = _shared_gpu_signal(module)
    if signal is None:
        return
    if module.calls_named(*_GPU_MEMORY_SETUP) or _tf1_gpu_options(module):
        return
    if any(name in _MEMORY_ENV for _node, name, _value in _env_assignments(module)):
        return
    node, why = signal
    where = node.func if isinstance(node, ast.Call) else node
    yield Hit(where, f"several processes share this host's GPUs ({why}) but the script neither pins a GPU "
              "per process nor enables memory growth", evidence={"signal": why},
              fix=SourceFix("Call tf.config.experimental.set_memory_growth (and pin one GPU per process)"))
