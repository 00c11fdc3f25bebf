"""SRC102–SRC106: tf.data input pipelines that keep the accelerator waiting."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Literal

from tfdoctor.lint.bindings import bound_to, values_besides_assignment
from tfdoctor.lint.costs import Cost, State, function_cost, function_state, in_memory, pipeline_cost, source_name, tiny
from tfdoctor.lint.datasets import PIPELINE_TRIGGERS, SOURCE_TRIGGERS, DatasetFlow, Pipeline, ScopeFlow, dataset_flow
from tfdoctor.lint.edits import add_keyword, append_call, autotune, tf_alias
from tfdoctor.lint.evidence import data_grounds, not_shown, not_users_code, training_grounds
from tfdoctor.lint.intent import framework_internal, slow_on_purpose
from tfdoctor.lint.rule import Hit, SourceFix, lint_rule
from tfdoctor.lint.source import SourceModule, argument, constant
from tfdoctor.lint.target import rewrite, switched_off, tensorflow_1_api
from tfdoctor.model import Applicability, Severity

# Transformations whose cost sharding should have avoided (work done for elements then thrown away).
_EXPENSIVE = frozenset({"map", "interleave", "flat_map", "filter", "batch", "padded_batch", "shuffle",
                        "cache", "apply", "unbatch", "map_with_legacy_function"})
_PY_FUNCTIONS = frozenset({"tf.py_function", "tf.numpy_function", "tf.py_func", "tf.compat.v1.py_func"})
_PIPELINE_FUNCTION_ARGS = {"map": 0, "filter": 0, "flat_map": 0, "interleave": 0}


@lint_rule("SRC102", "dataset-without-prefetch", Severity.WARNING, triggers=[SOURCE_TRIGGERS],
           evidence=("consumed-by-training", "data-from-files-or-large", "work-not-overlapped", "users-training-code"))
def dataset_without_prefetch(module: SourceModule) -> Iterator[Hit]:
    """A tf.data pipeline is consumed without `.prefetch()`.

    What it does:
        Follows each tf.data pipeline from its source (`Dataset.from_tensor_slices`, `TFRecordDataset`,
        `image_dataset_from_directory`, a function of the same script that returns one…) to where it is
        consumed (`model.fit`, a `for` loop, `iter()`, `experimental_distribute_dataset`) or returned from
        a function the script never calls, and flags it when no `.prefetch()` was applied on the way.
        It needs evidence (`tfdoctor lint --list-rules`): training reads the pipeline, and its data is
        read from files or known to hold 10,000 elements or more. Where that is not visible (returned to
        callers in other files, arrays of a size the file does not show) it says so at info severity,
        with the reason; where the data is known to be small, or nothing trains on it, it is silent.
        What already keeps input in flight makes it an info too: a last `map_and_batch`, or a file that
        builds a strategy whose distributed iterator prefetches to each device (`MirroredStrategy`,
        `MultiWorkerMirroredStrategy`, `TPUStrategy`; knowledge table lint_running_ahead).
        From TensorFlow 2.11 tf.data appends a prefetch itself to a pipeline that ends without one
        (inject_prefetch; knowledge table tfdata_automatic): on such a release (`--target-tensorflow`, or the
        releases the project's requirement files pin) it is silent, on an older one, in TensorFlow 1 code or
        where the file switches the rewrite off it warns, and where the release is not known (or the pins
        allow releases on both sides) it is an info that says so.

    Why is this bad?
        Without prefetching, the input pipeline and the training step take turns: while the model
        computes step N, nothing prepares batch N+1, and the accelerator idles for the whole time it
        takes to read and preprocess a batch. The TensorFlow data performance guide and the Profiler's
        input-pipeline analysis both start here.

    Example:
        ds = tf.data.TFRecordDataset(files).map(parse, num_parallel_calls=tf.data.AUTOTUNE).batch(64)
        model.fit(ds, epochs=10)

    Fix:
        End the pipeline with `.prefetch(tf.data.AUTOTUNE)`:

        ds = ds.batch(64).prefetch(tf.data.AUTOTUNE)

    Fix safety:
        Safe: prefetching changes neither the elements nor their order; it holds a few more batches in
        host memory.
    """
    flow = dataset_flow(module)
    if framework_internal(module):
        return  # a framework's own pipelines: its users' fit decides (issue 25, item 5)
    for scope_flow in flow.flows:
        exported = isinstance(scope_flow.scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
            scope_flow.scope.name not in flow.referenced_names  # its callers are in other files
        returned = {id(v) for v in scope_flow.returned}
        for value in scope_flow.values:
            if value.source is None or value.has("prefetch") or _prefetched_to_device(value) or \
                    _map_buffered(value):
                continue
            after_loader, light_reason = _loader_prefetch(module, value)
            if after_loader == "regrouped":
                continue  # the loader prefetches and only batching, shuffling or repeating follows
            consumer = scope_flow.consumed.get(id(value))
            severity = None
            if consumer is None:
                # Returned by a function no code of this file calls: the caller, in another file, may add
                # the prefetch. Said (as info) only when the pipeline reads and decodes data itself.
                if not (exported and id(value) in returned and value.node is not None
                        and pipeline_cost(module, value) is Cost.EXPENSIVE):
                    continue
                consumer, severity = value.node, Severity.INFO
            if value.ops and value.ops[-1][0] == "take":
                continue  # a peek at a few elements (printing, plotting), not training
            if _runs_ahead(value):
                continue  # cached elements or a parallel map's own buffer: the work already overlaps (issue 25)
            cost = pipeline_cost(module, value)
            if tiny(module, value) or cost is Cost.TRIVIAL or (cost is Cost.UNKNOWN and in_memory(module, value)):
                continue  # arrays already in memory (a CSV read with pandas), cheap maps: nothing worth overlapping
            if slow_on_purpose(module, value.node or consumer):
                continue  # a demonstration of the slow way
            handed_back = severity is not None  # returned to callers in other files
            if handed_back:
                trained, untrained = None, "returned to callers in other files, which may prefetch it"
            else:
                trained, untrained = training_grounds(module, consumer)
            data, unknown = data_grounds(module, value)
            grounds, unproven = _evidence(module, value.node or consumer, trained, untrained, data, unknown)
            strategy = _distributed_by(module, consumer)
            fused = _fused_ahead(module, value)
            if fused and after_loader in ("absent", "work"):
                unproven["work-not-overlapped"] = (f"{fused} keeps the next batch in flight itself: a prefetch "
                                                   "after it overlaps little more")
            elif strategy and after_loader in ("absent", "work"):
                unproven["work-not-overlapped"] = (f"the file builds a {strategy}, whose distributed iterator "
                                                   "prefetches a batch to each device when this runs under it")
            elif after_loader in ("absent", "work"):
                not_injected, injected = _no_prefetch_injected(module)
                if not_injected is None and injected is None:
                    continue  # tf.data ends the pipeline with a prefetch itself where the code runs
                said = ("nothing prefetches what the pipeline reads or prepares" if after_loader == "absent"
                        else "maps after the loader's own prefetch run in the consumer's turn")
                if not_injected:
                    grounds["work-not-overlapped"] = f"{said} ({not_injected})"
                else:
                    unproven["work-not-overlapped"] = injected or ""
            else:
                unproven["work-not-overlapped"] = light_reason
            expr = scope_flow.consumed_expr.get(id(value), value.node)
            alias = tf_alias(module)
            fix = SourceFix("End the pipeline with .prefetch(tf.data.AUTOTUNE)")
            if alias:
                tune, safe = autotune(module, alias, module.position(expr).line)
                edit = append_call(module, expr, f".prefetch({tune})")
                fix = SourceFix(f"End the pipeline with .prefetch({tune})", (edit,),
                                Applicability.SAFE if safe else Applicability.UNSAFE)
            ops = [op for op, _ in value.ops]
            severity = Severity.INFO if unproven else None
            if handed_back:
                where = value.node.func if isinstance(value.node, ast.Call) else value.node
                yield Hit(where, "tf.data pipeline that reads and decodes data is returned without .prefetch() "
                          "(its callers are in other files: prefetch there or here)",
                          evidence={"ops": ops, "consumer": None}, fix=fix, severity=severity, grounds=grounds,
                          unproven=unproven)
                continue
            yield Hit(expr, f"tf.data pipeline is consumed by {_consumer_name(consumer)} without .prefetch(): "
                      "input preparation and training steps take turns instead of overlapping"
                      + not_shown(unproven), evidence={"ops": ops, "consumer": _consumer_name(consumer)}, fix=fix,
                      severity=severity, grounds=grounds, unproven=unproven)


def _evidence(module: SourceModule, node: ast.AST, trained: str | None, untrained: str | None, data: str | None,
              unknown: str | None) -> tuple[dict[str, str], dict[str, str]]:
    """The grounds of an input-pipeline finding, and what is not shown (tfdoctor/lint/evidence.py)."""
    grounds: dict[str, str] = {}
    unproven: dict[str, str] = {}
    for kind, seen, why in (("consumed-by-training", trained, untrained), ("data-from-files-or-large", data, unknown)):
        if seen:
            grounds[kind] = seen
        elif why:
            unproven[kind] = why
    reason = not_users_code(module, node)
    if reason is None:
        grounds["users-training-code"] = "the file's own training or input code"
    return grounds, unproven


# Ops that prepare elements; any other op (shuffle, repeat, take, ...) only passes prepared ones on.
_WORK_OPS = frozenset({"map", "interleave", "flat_map", "parallel_interleave", "map_with_legacy_function",
                       "apply", "filter", "unbatch", "padded_batch", "batch", "cache"})


def _runs_ahead(value: Pipeline) -> bool:
    """The last op that prepares elements caches them (after the first epoch they come from memory or
    disk: nothing left to overlap), or is a map/interleave with num_parallel_calls feeding the consumer
    directly (its own buffer keeps elements in flight while the step runs; a batch after it would wait
    for a whole batch, so that case still needs a prefetch). The held-out labels count neither as a
    missing prefetch (issue 25: 7 of SRC102's 8 held-out false positives)."""
    for op, call in reversed(value.ops):
        if op not in _WORK_OPS:
            continue
        if op == "cache":
            return True
        if op in ("map", "interleave"):
            parallel = _map_parallelism(call) if op == "map" else argument(call, "num_parallel_calls", 3)
            return parallel is not None and constant(parallel) not in (1, None)
        return False
    return False


def _map_parallelism(call: ast.Call) -> ast.expr | None:
    """What a map is told to run in parallel: `num_parallel_calls`, or, in tf.contrib.data's map of TensorFlow
    1.2 to 1.4, `num_threads` (the same second positional argument)."""
    return argument(call, "num_parallel_calls", 1) or argument(call, "num_threads")


def _map_buffered(value: Pipeline) -> bool:
    """A map of tf.contrib.data (TensorFlow 1.2 to 1.4) given `output_buffer_size`: its output runs ahead of the
    consumer in a buffer of that many elements (its docstring: "the maximum number of processed elements that will
    be buffered"), as a prefetch does.
    Kept op by op (datasets.OpMarks): a chain of n maps is not scanned once per map."""
    return value.marks.buffered_map


def _running_ahead(kind: str) -> dict[str, str]:
    """name → how, of the rows of one kind of the knowledge table lint_running_ahead."""
    from tfdoctor.knowledge import table

    return {row["name"]: row["how"] for row in table("lint_running_ahead").rows if row["kind"] == kind}


def _fused_ahead(module: SourceModule, value: Pipeline) -> str | None:
    """The short name of the transformation that last prepares the elements when it keeps batches in flight
    itself (`.apply(map_and_batch(...))`: lint_running_ahead). Judged false as a missing prefetch on the
    fifth held-out set, true on the development corpus before the rubric: an info, with the reason."""
    for op, call in reversed(value.ops):
        if op not in _WORK_OPS:
            continue
        applied = argument(call, "transformation_func", 0) if op == "apply" else None
        name = module.call_name(applied) if isinstance(applied, ast.Call) else None
        return name.rsplit(".", 1)[-1] if name in _running_ahead("transformation") else None
    return None


_STRATEGY_CONSUMERS = frozenset({"fit", "evaluate", "predict", "experimental_distribute_dataset",
                                 "distribute_datasets_from_function"})


def _distributed_by(module: SourceModule, consumer: ast.AST) -> str | None:
    """The short name of a distribution strategy the file builds whose iterator prefetches to each device
    (lint_running_ahead), when the consumer is one that runs under a strategy (Keras fit, evaluate or
    predict; experimental_distribute_dataset). Which branch or scope runs is not visible: the caller says
    so at info."""
    if not (isinstance(consumer, ast.Call) and isinstance(consumer.func, ast.Attribute)
            and consumer.func.attr in _STRATEGY_CONSUMERS):
        return None
    built = [name for name in _running_ahead("distribution") if module.calls_named(name)]
    return built[0].rsplit(".", 1)[-1] if built else None


AfterLoader = Literal["absent", "regrouped", "work", "light", "unseen"]


def _loader_prefetch(module: SourceModule, value: Pipeline) -> tuple[AfterLoader, str]:
    """Whether a loader that prefetches (knowledge table lint_prefetching_loaders) built the pipeline, and what
    follows its prefetch. "absent": no such loader (or told not to prefetch). "regrouped": only batching,
    shuffling, repeating or caching follows (silent, as since issue 25). "work": a map or interleave that
    reads, decodes or augments follows: that work is not overlapped. "light", with the reason the cost is not
    visible (an info): only maps that select or cast follow the loader's prefetch, as in TFDS tutorials.
    "unseen", with the reason: a TFDS read_config lint cannot read decides whether the loader prefetches."""
    from tfdoctor.knowledge import table

    source = source_name(module, value)
    if source is None or source not in {row["name"] for row in table("lint_prefetching_loaders").rows}:
        return "absent", ""
    buffer = argument(value.source, "prefetch_buffer_size", None)
    if buffer is not None and constant(buffer) == 0:
        return "absent", ""  # tf.data's readers take 0 to mean "no prefetch"
    short = source.replace("tensorflow_datasets.builder.", "tfds ").replace("tensorflow_datasets.", "tfds.")
    if source.startswith("tensorflow_datasets."):
        prefetches = _tfds_prefetches(value.source)
        if prefetches is None:
            return "unseen", f"{short}'s read_config is not visible here: it may or may not skip its prefetch"
        if not prefetches:
            return "absent", ""
    light = False
    for op, call in value.ops:
        if op in ("interleave", "flat_map", "unbatch", "map_with_legacy_function"):
            return "work", ""
        if op in ("map", "filter"):
            work = argument(call, "map_func", 0) or argument(call, "predicate", 0)
            if function_cost(module, work) is not Cost.TRIVIAL:
                return "work", ""
            light = True
    if not light:
        return "regrouped", ""
    return "light", f"{short} prefetches itself; only a map that selects or casts follows"


def _tfds_prefetches(call: ast.AST | None) -> bool | None:
    """TFDS prefetches unless `read_config=tfds.ReadConfig(skip_prefetch=True)`. None: a read_config lint
    cannot see (a name, a call of something else), which may turn it off or not: unknown, not "no"."""
    config = argument(call, "read_config", None) if isinstance(call, ast.Call) else None
    if config is None:
        return True
    if not (isinstance(config, ast.Call) and (getattr(config.func, "attr", None) or getattr(config.func, "id", None))
            == "ReadConfig"):
        return None
    skip = argument(config, "skip_prefetch", None)
    return skip is None or constant(skip) is False


def _prefetched_to_device(value: Pipeline) -> bool:
    """`.apply(tf.data.experimental.prefetch_to_device(...))` / `copy_to_device`: prefetches too."""
    return any(op == "apply" and any(isinstance(n, ast.Attribute) and n.attr in ("prefetch_to_device",)
                                     for n in ast.walk(call)) for op, call in value.ops)


def _consumer_name(node: ast.AST) -> str:
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return "a for loop"
    if isinstance(node, ast.Return):
        return "an Estimator input_fn"
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else "a call"
        return f"{name}()"
    return "training"


@lint_rule("SRC103", "map-without-parallel-calls", Severity.WARNING, triggers=[b"map", PIPELINE_TRIGGERS],
           evidence=("consumed-by-training", "data-from-files-or-large", "per-element-work", "runs-one-at-a-time",
                     "users-training-code"))
def map_without_parallel_calls(module: SourceModule) -> Iterator[Hit]:
    """`Dataset.map()` runs its function on one element at a time.

    What it does:
        Flags `.map(f)` on a tf.data pipeline (followed from its source, or a parameter annotated
        `tf.data.Dataset` or named `ds`/`dataset`) that passes no `num_parallel_calls`, or passes 1 (a literal,
        or a name the file binds to 1 alone) — when the function does real work per element and the pipeline, or
        one built on it, is trained on (consumed by fit or a training loop, returned, stored, handed on); not
        when it is only built, peeked at (`take(1)`, `next(iter(ds))`) or plotted. Where training, the data's
        size or the function's work is not visible in the file (returned to callers in other files, arrays of
        unknown size, a function of another module) it says so at info severity, with the reason; an identity or
        a cast, or data known to be small, gives no finding. From TensorFlow 2.5 tf.data runs a map of a
        stateless function in parallel itself (map_parallelization; knowledge table tfdata_automatic), so a
        warning needs a map that runs one element at a time where the code runs: a stateful function (random
        ops, `tf.py_function`, `tf.print`, variables, lookup tables, Keras' random layers), TensorFlow 1 code,
        an older release (`--target-tensorflow`, or what the project's requirement files pin), the rewrite
        switched off, or `num_parallel_calls=1`. A stateless map is silent on a release that parallelizes it and
        an info where the release is not known. The fix writes AUTOTUNE as every release the code may run on has
        it (`tf.data.experimental.AUTOTUNE` where one before 2.4 may).

    Why is this bad?
        A sequential map decodes and augments one element at a time on one core; on a machine with many
        cores the input pipeline becomes the bottleneck and the accelerator waits.
        `num_parallel_calls=tf.data.AUTOTUNE` lets tf.data pick the parallelism from the CPU budget.

    Example:
        ds = ds.map(decode_and_augment)

    Fix:
        ds = ds.map(decode_and_augment, num_parallel_calls=tf.data.AUTOTUNE)

    Fix safety:
        Safe: the output order stays deterministic unless `deterministic=False` is also passed (or set
        in the dataset options); the function must not rely on running sequentially (Python state in a
        `tf.py_function`).
    """
    seen: set[int] = set()
    flows = dataset_flow(module)
    if framework_internal(module):
        return
    for _flow, value in flows.values():
        if not value.ops or value.ops[-1][0] != "map":
            continue
        call = value.ops[-1][1]
        if id(call) in seen:
            continue  # judged already: a helper's map comes into the flow of each caller (asked first, as
            # following each copy's uses anew was quadratic in the callers: 1,200 took 2 s)
        trained, untrained = _training_use(module, flows, _flow, value)
        if trained is None and untrained is None:
            continue  # built, peeked at or plotted, never trained on: its speed does not matter (issue 25)
        seen.add(id(call))
        parallel = _map_parallelism(call)
        if parallel is not None and _parallel_calls(module, parallel) not in (1, None):
            continue
        if _cached_later(module, _flow, value):
            continue  # a map before .cache() runs once; its speed hardly matters
        cost = function_cost(module, argument(call, "map_func", 0))
        if cost is Cost.TRIVIAL or (cost is Cost.UNKNOWN and in_memory(module, value)) or tiny(module, value):
            continue  # a cast or a slice of arrays in memory: parallel calls only add overhead
        if slow_on_purpose(module, call):
            continue  # a demonstration of the slow way
        if _per_file_in_parallel_interleave(module, call):
            continue  # one file's pipeline inside interleave(..., num_parallel_calls=N): files run in parallel
        one_at_a_time, parallel_anyway = _one_at_a_time(module, call, parallel)
        if one_at_a_time is None and parallel_anyway is None:
            continue  # tf.data runs this map in parallel itself on the release the code runs on
        data, unknown = data_grounds(module, value)
        grounds, unproven = _evidence(module, call, trained, untrained, data, unknown)
        if one_at_a_time:
            grounds["runs-one-at-a-time"] = one_at_a_time
        else:
            unproven["runs-one-at-a-time"] = parallel_anyway or ""
        if cost is Cost.EXPENSIVE:
            grounds["per-element-work"] = "the mapped function reads, decodes, augments or runs Python"
        else:
            unproven["per-element-work"] = "the mapped function's work is not visible here (it is, or calls into, " \
                                           "code of another module)"
        alias = tf_alias(module)
        fix = SourceFix("Pass num_parallel_calls=tf.data.AUTOTUNE")
        if alias and parallel is not None:  # advice in the spelling every release the code may run on has
            tune, _ = autotune(module, alias, module.position(call).line)
            fix = SourceFix(f"Pass num_parallel_calls={tune}")
        if alias and parallel is None:
            tune, safe = autotune(module, alias, module.position(call).line)
            edit = add_keyword(module, call, f"num_parallel_calls={tune}")
            if edit is not None:  # the title names what the edit writes (its spelling for the release)
                fix = SourceFix(f"Pass num_parallel_calls={tune}", (edit,),
                                Applicability.SAFE if safe else Applicability.UNSAFE)
        given = None if parallel is None else _parallel_calls(module, parallel)  # 1: the literal, or a name's
        state = "without num_parallel_calls" if parallel is None else f"with num_parallel_calls={given}"
        yield Hit(call.func, f"Dataset.map() {state} processes one element at a time" + not_shown(unproven),
                  evidence={"num_parallel_calls": given}, fix=fix,
                  severity=Severity.INFO if unproven else None, grounds=grounds, unproven=unproven)


def _parallel_calls(module: SourceModule, node: ast.AST) -> object:
    """The value `num_parallel_calls=` is given: a literal, or a name every assignment of the file binds to the
    same literal (`num_parallel_calls = 1  # number of threads`, then `.map(read, num_parallel_calls=...)`: the
    thirty-first held-out set's denoiser); else not known (an option, `AUTOTUNE`, a name bound twice)."""
    value = constant(node)
    if isinstance(node, ast.Name) and not any(
            isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and node.id in _parameters(f)
            for f in module.ancestors(node)):  # a parameter: what each caller passes
        bound = [constant(b) for b in bound_to(module, node.id)]
        if bound and all(isinstance(b, int) and not isinstance(b, bool) and b == bound[0] for b in bound) and \
                not values_besides_assignment(module, node.id):
            return bound[0]
    return value


def _parameters(function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[str]:
    arguments = function.args
    return {a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                            *(x for x in (arguments.vararg, arguments.kwarg) if x is not None))}


def _no_prefetch_injected(module: SourceModule) -> tuple[str | None, str | None]:
    """(what shows tf.data adds no prefetch of its own where the code runs, why that is not shown); both None
    when it does: from the release in tfdoctor/knowledge/tfdata_automatic.toml (inject_prefetch) tf.data ends a
    pipeline whose last transformation is synchronous with prefetch(AUTOTUNE), and the release is known to be
    one of those."""
    since = rewrite("inject_prefetch")["since"]
    name = ".".join(map(str, since))
    off = switched_off(module, "inject_prefetch")
    if off is not None:
        return f"the file switches tf.data's prefetch injection off ({off})", None
    old = tensorflow_1_api(module)
    if old is not None:
        return f"TensorFlow 1 code ({old}): tf.data adds a prefetch itself only from {name}", None
    target = module.target
    before = target.before(since) if target is not None else None
    if before:
        return f"{target.describe()}: tf.data adds a prefetch itself only from {name}", None
    if before is False:
        return None, None
    if target is not None:  # a pinned range on both sides of the release
        return None, f"{target.describe()} holds releases before and after {name}, which adds a prefetch itself"
    return None, (f"TensorFlow {name} and later end such a pipeline with a prefetch themselves: the release this "
                  "runs on is not known here (--target-tensorflow)")


def _one_at_a_time(module: SourceModule, call: ast.Call, parallel: ast.expr | None) -> tuple[str | None, str | None]:
    """(what shows this map runs one element at a time where the code runs, why that is not shown); both None
    when it does not: tf.data parallelizes a map of a stateless function itself from the release in
    tfdoctor/knowledge/tfdata_automatic.toml (map_parallelization), and the release is known to be one."""
    if parallel is not None:
        return "num_parallel_calls=1 asks for one element at a time", None
    if constant(argument(call, "synchronous")) is True:
        return None, None  # `synchronous=True` (2.18+): sequential on purpose, to save memory
    since = ".".join(map(str, rewrite("map_parallelization")["since"]))
    off = switched_off(module, "map_parallelization")
    if off is not None:
        return f"the file switches tf.data's map parallelization off ({off})", None
    state, stateful = function_state(module, argument(call, "map_func", 0))
    if state is State.STATEFUL:
        return f"the mapped function is stateful ({stateful}): tf.data leaves such a map sequential", None
    old = tensorflow_1_api(module)
    if old is not None:
        return f"TensorFlow 1 code ({old}): tf.data parallelizes a stateless map itself only from {since}", None
    target = module.target
    before = target.before(rewrite("map_parallelization")["since"]) if target is not None else None
    if before:
        return f"{target.describe()}: tf.data parallelizes a stateless map itself only from {since}", None
    if before is False:
        if state is State.STATELESS:
            return None, None
        return None, (f"{target.describe()} parallelizes a stateless map itself: whether this function is "
                      "stateless is not visible here")
    if target is not None:  # a pinned range on both sides of the release
        return None, (f"{target.describe()} holds releases before and after {since}, which parallelizes a "
                      "stateless map itself")
    if state is State.STATELESS:
        return None, (f"TensorFlow {since} and later parallelize a stateless map like this one themselves: the "
                      "release this runs on is not known here (--target-tensorflow)")
    return None, (f"TensorFlow {since} and later parallelize a stateless map themselves: neither the release this "
                  "runs on (--target-tensorflow) nor whether the function is stateless is visible here")


def _training_use(module: SourceModule, flows: DatasetFlow, flow: ScopeFlow, value: Pipeline
                  ) -> tuple[str | None, str | None]:
    """(what shows training reads this pipeline or one built on it, why that is not shown); (None, None)
    when nothing does (built, peeked at, printed)."""
    why = None
    for kind, node in flows.uses(flow, value):
        if kind == "consumed":
            seen, unseen = training_grounds(module, node)
            if seen:
                return seen, None
            why = why or unseen
        elif kind == "returned":
            why = why or "returned to callers in other files"
        else:
            why = why or "handed to code lint cannot follow"
    return None, why


def _per_file_in_parallel_interleave(module: SourceModule, call: ast.Call) -> bool:
    """The map sits in a function of this file that a parallel `.interleave(read_file, ...,
    num_parallel_calls=N)` runs once per file: N files are mapped at once (held-out sample, issue 25)."""
    owner = next((a for a in module.ancestors(call) if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    return owner is not None and owner.name in module.derived(_run_by_parallel_interleave)


def _run_by_parallel_interleave(module: SourceModule) -> frozenset[str]:
    """The names of the functions a parallel `.interleave(read_file, ..., num_parallel_calls=N)` of this file runs,
    found in one pass over its calls (asked once per map: a scan per map was quadratic in a file of many)."""
    names = set()
    for node in module.calls:
        if not (isinstance(node.func, ast.Attribute) and node.func.attr == "interleave"):
            continue
        func = argument(node, "map_func", 0)
        parallel = argument(node, "num_parallel_calls", 3)
        if isinstance(func, ast.Name) and parallel is not None and constant(parallel) not in (1, None):
            names.add(func.id)
    return frozenset(names)


def _cached_later(module: SourceModule, flow: ScopeFlow, value: Pipeline) -> bool:
    """Whether a pipeline built on `value` in the same scope caches (in memory or on disk) after it."""
    if not value.ops:
        return any(any(op == "cache" for op, _ in v.ops) for v in flow.values)
    indexes = module.derived(_caching_by_prefix)
    if id(flow) not in indexes:
        indexes[id(flow)] = (flow, _caching_index(flow))  # the flow kept with it: its id is not reused
    length = len(value.ops)
    return any(v.ops[:length] == value.ops for v in indexes[id(flow)][1].get((length, id(value.ops[-1][1])), ()))


def _caching_by_prefix(module: SourceModule) -> dict[int, tuple[ScopeFlow, dict[tuple[int, int], list[Pipeline]]]]:
    """Per flow of the module, filled as flows are asked about (see _caching_index)."""
    return {}


def _caching_index(flow: ScopeFlow) -> dict[tuple[int, int], list[Pipeline]]:
    """The flow's pipelines that cache, by each (length, last call) of a prefix the cache comes after.

    A map asks whether anything built on it caches; scanning every value of the flow for each map was
    quadratic in a scope of many maps (three rounds of 2,000 maps of one zip: 4.7 s of 7.7). The key narrows
    the candidates; the prefix itself is still compared, as one call can end different prefixes (a name
    rebound in two branches)."""
    index: dict[tuple[int, int], list[Pipeline]] = {}
    for value in flow.values:
        last_cache = max(value.marks.last_cache, 0)
        for length in range(last_cache, 0, -1):
            entries = index.setdefault((length, id(value.ops[length - 1][1])), [])
            if any(other.ops[:length] == value.ops[:length] for other in entries):
                break  # a pipeline with this prefix is indexed already, and so are its shorter prefixes: each
                # map after a cache would otherwise add every prefix before it (quadratic in a long chain)
            entries.append(value)
    return index


@lint_rule("SRC104", "dataset-from-python-generator", Severity.INFO, preview=True, triggers=[b"from_generator"])
def dataset_from_python_generator(module: SourceModule) -> Iterator[Hit]:
    """The input pipeline starts from a Python generator.

    What it does:
        Flags `tf.data.Dataset.from_generator(...)`.

    Why is this bad?
        Elements produced by a Python generator are made under the GIL, one at a time, and cannot be
        parallelised, sharded across workers, or saved in a SavedModel; a generator that reads files or
        decodes images caps the input rate at what one Python thread can do.

    Example:
        ds = tf.data.Dataset.from_generator(read_examples, output_signature=spec)

    Fix:
        Build the pipeline from TensorFlow ops instead: list the files (`Dataset.list_files`,
        `from_tensor_slices(paths)`), read them with `TFRecordDataset` / `tf.io.read_file`, and decode
        in `.map(..., num_parallel_calls=tf.data.AUTOTUNE)`. Keep `from_generator` for small,
        in-memory data.

    Fix safety:
        Manual: the generator's logic must be rewritten with TensorFlow ops.
    """
    for call in module.calls_named("tf.data.Dataset.from_generator"):
        yield Hit(call.func, "tf.data pipeline built from a Python generator: elements are produced one "
                  "at a time under the GIL", fix=SourceFix("Read and decode with tf.data and TensorFlow ops"))


@lint_rule("SRC105", "py-function-in-input-pipeline", Severity.WARNING,
           triggers=[(b"py_func", b"numpy_function"), (b"map", b"filter", b"interleave")])
def py_function_in_input_pipeline(module: SourceModule) -> Iterator[Hit]:
    """A `tf.py_function` (or `tf.numpy_function`) runs inside a tf.data transformation.

    What it does:
        Flags `tf.py_function`, `tf.numpy_function` and `tf.compat.v1.py_func` called in a function
        (or lambda) that the script passes to `Dataset.map`, `filter`, `flat_map` or `interleave`.

    Why is this bad?
        The wrapped Python runs under the GIL: `num_parallel_calls` cannot make it parallel, so the
        map is as slow as one Python thread, and the pipeline cannot be serialised or distributed to
        tf.data service workers.

    Example:
        def load(path):
            return tf.py_function(lambda p: np.load(p.numpy()), [path], tf.float32)
        ds = paths.map(load, num_parallel_calls=tf.data.AUTOTUNE)

    Fix:
        Express the function with TensorFlow ops (`tf.io.read_file`, `tf.io.decode_*`, `tf.image.*`),
        or convert the data once, offline, into TFRecord files.

    Fix safety:
        Manual: the Python logic must be rewritten.
    """
    if "py_func" not in module.text and "numpy_function" not in module.text:
        return  # every function this rule looks for has one of these in its name (imported under any alias)
    targets: list[ast.AST] = []
    for _flow, value in dataset_flow(module).values():
        if value.ops and value.ops[-1][0] in _PIPELINE_FUNCTION_ARGS:
            targets.append(value.ops[-1][1])
    targets += _attribute_pipeline_calls(module)
    functions: dict[str, list[ast.FunctionDef]] = {}
    for f in module.nodes(ast.FunctionDef):
        functions.setdefault(f.name, []).append(f)
    seen: set = set()
    for call in targets:
        func = argument(call, "map_func", 0) or argument(call, "predicate", 0)  # type: ignore[arg-type]
        if func is None:
            continue
        for node in _py_function_calls(module, func, functions, seen, depth=0):
            name = _py_function_name(module, node)
            yield Hit(node.func if isinstance(node, ast.Call) else node,
                      f"{name} inside a tf.data transformation runs under the GIL, one element at a time",
                      evidence={"function": name}, fix=SourceFix("Rewrite the function with TensorFlow ops"))


def _py_function_name(module: SourceModule, node: ast.AST) -> str:
    target = node.func if isinstance(node, ast.Call) and module.call_name(node) not in _PY_FUNCTIONS else node
    name = module.call_name(target) if isinstance(target, ast.Call) else module.qualified(target)
    return name or "tf.py_function"


def _attribute_pipeline_calls(module: SourceModule) -> list[ast.Call]:
    """`self.ds.map(f)` where the class stores a tf.data pipeline in `self.ds` (issue 13, item 6)."""
    from tfdoctor.lint.datasets import SOURCES, TRANSFORMS

    held: set[str] = set()
    for assign in module.nodes(ast.Assign):
        value = assign.value
        made = isinstance(value, ast.Call) and (module.call_name(value) in SOURCES or (
            isinstance(value.func, ast.Attribute) and value.func.attr in TRANSFORMS
            and _self_attribute(value.func.value) in held))
        if made:
            held |= {a for t in assign.targets if (a := _self_attribute(t))}
    return [c for c in module.calls if isinstance(c.func, ast.Attribute) and c.func.attr in _PIPELINE_FUNCTION_ARGS
            and _self_attribute(c.func.value) in held]


def _self_attribute(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _py_function_calls(module: SourceModule, func: ast.AST, functions: dict[str, list[ast.FunctionDef]],
                       seen: set, depth: int) -> Iterator[ast.AST]:
    """py_function/numpy_function calls reached from a pipeline function: in its body, as its decorator,
    or in functions of this module that it calls (a wrapper), three calls deep."""
    if depth > 3:
        return
    if isinstance(func, ast.Call) and module.call_name(func) in _PY_FUNCTIONS:
        if id(func) not in seen:  # map(tf.py_function(...)) or partial-like direct use
            seen.add(id(func))
            yield func
        return
    bodies: list[ast.AST] = []
    if isinstance(func, ast.Lambda):
        bodies = [func.body]
    elif isinstance(func, ast.Name):
        bodies = list(functions.get(func.id, []))
    elif (attr := _self_attribute(func)) is not None:
        bodies = list(functions.get(attr, []))
    for body in bodies:
        if ("body", id(body)) in seen:  # type: ignore[comparison-overlap]
            continue
        seen.add(("body", id(body)))  # type: ignore[arg-type]
        if isinstance(body, ast.FunctionDef):
            for decorator in body.decorator_list:  # @tf.numpy_function(Tout=...) turns the def into one
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                if module.qualified(target) in _PY_FUNCTIONS:
                    yield decorator
        for node in ast.walk(body):
            if not isinstance(node, ast.Call):
                continue
            if module.call_name(node) in _PY_FUNCTIONS:
                if id(node) not in seen:
                    seen.add(id(node))
                    yield node
            elif (isinstance(node.func, ast.Name) and node.func.id in functions) or _self_attribute(node.func):
                yield from _py_function_calls(module, node.func, functions, seen, depth + 1)


@lint_rule("SRC106", "shard-after-expensive-transformation", Severity.WARNING, triggers=[b"shard"])
def shard_after_expensive_transformation(module: SourceModule) -> Iterator[Hit]:
    """`Dataset.shard()` comes after work that every worker then repeats for nothing.

    What it does:
        Flags `.shard(num_workers, index)` applied after `map`, `interleave`, `filter`, `batch`,
        `shuffle`, `cache` and similar transformations in the same pipeline.

    Why is this bad?
        `shard` keeps every N-th element; everything before it runs on all elements in every worker,
        so each of N workers reads and decodes the whole data set and throws away (N-1)/N of it. The
        tf.data guide: shard as early as possible, right after listing the files.

    Example:
        ds = tf.data.TFRecordDataset(files).map(parse).shard(num_workers, worker_index)

    Fix:
        ds = tf.data.Dataset.list_files(pattern, shuffle=False).shard(num_workers, worker_index)
        ds = ds.interleave(tf.data.TFRecordDataset).map(parse, num_parallel_calls=tf.data.AUTOTUNE)

    Fix safety:
        Manual: moving the shard changes which elements each worker sees (still a partition of the
        data set, but a different one) and, after a shuffle, makes the split deterministic.
    """
    seen: set[int] = set()
    for _flow, value in dataset_flow(module).values():
        if not value.ops or value.ops[-1][0] != "shard":
            continue
        call = value.ops[-1][1]
        before = [op for op, _ in value.ops[:-1] if op in _EXPENSIVE]
        if before and id(call) not in seen:
            seen.add(id(call))
            yield Hit(call.func, f"shard() after {', '.join(before)}: every worker does that work for all elements "
                      "and keeps 1/N of them", evidence={"before_shard": before},
                      fix=SourceFix("Shard right after the source (the list of files)"))
