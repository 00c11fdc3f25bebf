"""Where tf.data pipelines are in a script, followed through names within each function.

A pipeline is a chain `source → transformation → …`: a source is a Dataset constructor (or a function
of the same module that returns one, or a parameter annotated or named as a dataset); each
transformation (`.map`, `.batch`, `.prefetch`…) makes a new value that remembers the ops before it.
Names are followed in statement order inside one scope (`ds = ds.map(f)`), which is how input pipelines
are written; anything cleverer (attributes, containers, other modules) is left alone, so rules built
on this stay silent rather than guess.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import ClassVar

from tfdoctor.lint.source import SourceModule, child_fields, constant


def keyword_value(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


# A loop whose body only calls these looks at the elements (prints, plots, collects), it does not train.
_INSPECTING_CALLS = frozenset({"print", "display", "pprint", "imshow", "show", "plot", "subplot", "title", "axis",
                               "append", "extend", "update", "add", "numpy", "tolist", "format", "list", "len",
                               "str", "repr", "decode", "write", "set_title", "figure", "savefig", "zip", "range",
                               "enumerate", "isinstance", "int", "float", "Image", "HTML", "Markdown", "Audio"})


def _inspects_only(module: SourceModule, loop: ast.For | ast.AsyncFor) -> bool:
    for stmt in (*loop.body, *loop.orelse):
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
                qualified = module.call_name(node) or ""
                if name not in _INSPECTING_CALLS and not qualified.startswith(("tf.io.parse", "matplotlib.")):
                    return False
    return True


def _is_next_call(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "next"

SOURCES = frozenset({
    "tf.data.Dataset.from_tensor_slices", "tf.data.Dataset.from_tensors", "tf.data.Dataset.from_generator",
    "tf.data.Dataset.range", "tf.data.Dataset.list_files", "tf.data.Dataset.zip", "tf.data.Dataset.load",
    "tf.data.Dataset.sample_from_datasets", "tf.data.Dataset.choose_from_datasets",
    "tf.data.Dataset.counter", "tf.data.TFRecordDataset", "tf.data.TextLineDataset",
    "tf.data.FixedLengthRecordDataset", "tf.data.experimental.make_csv_dataset",
    "tf.data.experimental.make_batched_features_dataset", "tf.data.experimental.sample_from_datasets",
    "keras.utils.image_dataset_from_directory", "keras.preprocessing.image_dataset_from_directory",
    "keras.utils.text_dataset_from_directory", "keras.preprocessing.text_dataset_from_directory",
    "keras.utils.audio_dataset_from_directory", "keras.utils.timeseries_dataset_from_array",
    "keras.preprocessing.timeseries_dataset_from_array", "tensorflow_datasets.load",
    "petastorm.tf_utils.make_petastorm_dataset", "petastorm.make_petastorm_dataset",
})
# `builder.as_dataset(split=...)` of a TFDS builder (the builder is a variable: matched by method name in
# files that import tensorflow_datasets).
TFDS_AS_DATASET = "tensorflow_datasets.builder.as_dataset"
# Sources that read files: what they produce costs I/O and decoding per element.
FILE_SOURCES = frozenset({
    "tf.data.Dataset.list_files", "tf.data.TFRecordDataset", "tf.data.TextLineDataset",
    "tf.data.FixedLengthRecordDataset", "tf.data.experimental.make_csv_dataset",
    "tf.data.experimental.make_batched_features_dataset", "tf.data.Dataset.load", "tensorflow_datasets.load",
    "keras.utils.image_dataset_from_directory", "keras.preprocessing.image_dataset_from_directory",
    "keras.utils.text_dataset_from_directory", "keras.preprocessing.text_dataset_from_directory",
    "keras.utils.audio_dataset_from_directory", "petastorm.tf_utils.make_petastorm_dataset",
    "petastorm.make_petastorm_dataset", TFDS_AS_DATASET,
})
# Prefilter triggers (tfdoctor/lint/prefilter.py): every source above has one of these in its name past the
# package (`Dataset.range`, `TFRecordDataset`, `make_csv_dataset`, `tensorflow_datasets`), which a file that
# calls it writes under any import style (tests/test_lint_prefilter.py holds it).
SOURCE_TRIGGERS = (b"Dataset", b"_dataset")
# ... or a parameter that the flow takes for a pipeline (annotated `tf.data.Dataset`, or named as
# _DATASET_PARAM says); in a notebook's JSON a name at the start of a line follows an escaped `\n`. The
# literal comes first and the look-behinds after it, so the search skips ahead to each `d` (a pattern that
# starts with a look-behind is tried at every byte: 40 times slower on notebooks of several MB).
PIPELINE_TRIGGERS = (*SOURCE_TRIGGERS, re.compile(
    rb"d(?:s|ataset)\b(?:(?<=[^A-Za-z0-9]ds)|(?<=\\[nrt]ds)|(?<=[^A-Za-z0-9]dataset)|(?<=\\[nrt]dataset))"))
TRANSFORMS = frozenset({
    "map", "batch", "padded_batch", "ragged_batch", "sparse_batch", "prefetch", "shuffle", "repeat",
    "cache", "filter", "interleave", "flat_map", "shard", "take", "skip", "unbatch", "apply",
    "with_options", "concatenate", "enumerate", "rebatch", "bucket_by_sequence_length", "group_by_window",
    "window", "scan", "take_while", "ignore_errors", "snapshot", "unique", "rejection_resample",
    "map_with_legacy_function", "distribute",
})
# Calls that pull elements from a dataset: the pipeline ends here as it was built.
# Training or evaluation: `take(n)` for a plot, `next(iter(ds))` or `list(ds)` to look at it are not.
CONSUMER_METHODS = frozenset({
    "fit", "evaluate", "predict", "fit_generator", "evaluate_generator", "predict_generator",
    "experimental_distribute_dataset", "distribute_datasets_from_function",
    "make_one_shot_iterator", "make_initializable_iterator",  # TF1: the iterator feeds the session
})
TF1_ITERATORS = frozenset({"tf.data.make_one_shot_iterator", "tf.data.make_initializable_iterator"})
CONSUMER_BUILTINS = frozenset({"iter", "enumerate", "zip"})
_DATASET_PARAM = re.compile(r"(^|_)(ds|dataset)$")


@dataclass(frozen=True)
class OpMarks:
    """Where in a pipeline's ops the things rules ask of every value are: kept up to date as each op is added, so
    that a chain of n maps is not scanned once per map (2,400 chained maps: three such scans took half of 2.2 s)."""

    last_cache: int = -1  # index of the last `cache`
    last_peek: int = -1  # index of the last `take` of a few elements (a peek at the data)
    few_taken: bool = False  # a few elements or batches taken, not repeated without end after: a demo's data
    # a map of tf.contrib.data (TensorFlow 1.2-1.4) given `output_buffer_size`: its output runs ahead as a prefetch's
    buffered_map: bool = False

    def after(self, index: int, op: str, call: ast.Call) -> OpMarks:
        if op == "cache":
            return replace(self, last_cache=index)
        if op == "take":
            peek = index if _few(call) else self.last_peek
            count = constant(call.args[0] if call.args else next(
                (k.value for k in call.keywords if k.arg == "count"), None))
            few = self.few_taken or (isinstance(count, int) and not isinstance(count, bool) and 0 <= count <= _FEW)
            return replace(self, last_peek=peek, few_taken=few)
        if op == "repeat" and not call.args and not any(k.arg == "count" for k in call.keywords):
            return replace(self, few_taken=False)  # a stream, however small its cycle
        if op == "map" and not self.buffered_map and any(k.arg == "output_buffer_size" for k in call.keywords):
            return replace(self, buffered_map=True)
        return self

    @staticmethod
    def of(ops: tuple[tuple[str, ast.Call], ...]) -> OpMarks:
        marks = OpMarks()
        for index, (op, call) in enumerate(ops):
            marks = marks.after(index, op, call)
        return marks


_FEW = 100  # take(n) of at most this many elements or batches: a demo's data, not a training set


@dataclass(frozen=True, eq=False)
class Pipeline:
    """One dataset value: the ops that made it, oldest first, each with the call that applied it."""

    source: ast.AST | None  # the constructor call; None when it came in as a parameter
    ops: tuple[tuple[str, ast.Call], ...] = ()
    node: ast.AST | None = None  # the expression that produced this value
    given_marks: OpMarks | None = field(default=None, repr=False)

    def then(self, op: str, call: ast.Call) -> Pipeline:
        return Pipeline(self.source, (*self.ops, (op, call)), call, self.marks.after(len(self.ops), op, call))

    @cached_property
    def marks(self) -> OpMarks:
        return self.given_marks if self.given_marks is not None else OpMarks.of(self.ops)

    def has(self, op: str) -> bool:
        return any(name == op for name, _ in self.ops)


@dataclass(frozen=True)
class ReturnShape:
    """What a function returns: how many elements, and whether as a tuple."""

    elements: tuple[tuple[Pipeline | None, ast.AST], ...]
    is_tuple: bool


# How many helpers deep a pipeline returned from helper to helper of one file is followed (see `returning`).
_RETURN_DEPTH = 3


def _same_shape(one: ReturnShape | None, other: ReturnShape | None) -> bool:
    """Two return shapes carry the same pipelines: the same sources and ops, element by element."""
    if one is None or other is None:
        return one is other
    if one.is_tuple != other.is_tuple or len(one.elements) != len(other.elements):
        return False
    for (a, _), (b, _) in zip(one.elements, other.elements, strict=True):
        if (a is None) != (b is None) or (a is not None and b is not None and
                                          (a.source is not b.source or a.ops != b.ops)):
            return False
    return True


@dataclass
class ScopeFlow:
    """The data flow of one scope: the dataset values built there and where each is consumed."""

    scope: ast.AST
    values: list[Pipeline] = field(default_factory=list)
    extended: set[int] = field(default_factory=set)  # ids of values something was built on
    consumed: dict[int, ast.AST] = field(default_factory=dict)  # id → the consuming node
    consumed_expr: dict[int, ast.AST] = field(default_factory=dict)  # id → the expression consumed there
    returned: list[Pipeline] = field(default_factory=list)
    # Each return statement's shape: one (value, expression) per returned element; a tuple when is_tuple.
    return_shapes: list[ReturnShape] = field(default_factory=list)
    of_node: dict[int, Pipeline] = field(default_factory=dict)  # id(expression) → its value
    loops: list[tuple[ast.For | ast.AsyncFor, Pipeline]] = field(default_factory=list)
    # Every expression that evaluates to a pipeline (names read, chains built), for `used` below.
    appearances: list[tuple[ast.AST, Pipeline]] = field(default_factory=list)
    used: set[int] = field(default_factory=set)  # ids of values handed on: to a call, an attribute, a return
    merged_into: dict[int, Pipeline] = field(default_factory=dict)  # concatenate(v), zip((a, v)): id(v) → result

    def consume(self, value: Pipeline, consumer: ast.AST, expr: ast.AST) -> None:
        if id(value) not in self.consumed:
            self.consumed[id(value)] = consumer
            self.consumed_expr[id(value)] = expr

    def terminal(self) -> list[Pipeline]:
        return [v for v in self.values if id(v) not in self.extended]


class _ScopeWalker(ast.NodeVisitor):
    def __init__(self, module: SourceModule, flow: ScopeFlow, returning: dict[str, ReturnShape],
                 input_fns: frozenset[str] = frozenset(),
                 consuming: Mapping[str, tuple[tuple[str, ...], frozenset[str]]] | None = None) -> None:
        self.module, self.flow, self.returning = module, flow, returning
        self.consuming = consuming or {}
        self.env: dict[str, Pipeline] = {}
        self.input_fn = isinstance(flow.scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
            flow.scope.name in input_fns

    # ast.NodeVisitor's dispatch and generic_visit, made cheaper: a method per node type looked up once,
    # and only the fields that can hold nodes (the shared index's table) are walked.
    _methods: ClassVar[dict[type, Callable[..., None] | None]] = {}

    def visit(self, node: ast.AST) -> None:
        kind = type(node)
        try:
            method = self._methods[kind]
        except KeyError:
            method = self._methods[kind] = getattr(type(self), "visit_" + kind.__name__, None)
        if method is None:
            self.generic_visit(node)
        else:
            method(self, node)

    def generic_visit(self, node: ast.AST) -> None:
        # `visit` inlined for each child (issue 25: this walk is the flow analysis' cost): a literal has
        # nothing to walk below it and no method here, a name read is `visit_Name` in two lines.
        methods, env, node_type = self._methods, self.env, ast.AST
        for name in child_fields(type(node)):
            value = getattr(node, name, None)
            for item in value if type(value) is list else (value,):
                kind = type(item)
                if kind is ast.Name:
                    if item.id in env and type(item.ctx) is ast.Load:  # type: ignore[union-attr]
                        self.flow.appearances.append((item, env[item.id]))  # type: ignore[union-attr]
                    continue
                if kind is ast.Constant or not isinstance(item, node_type):
                    continue
                try:
                    method = methods[kind]
                except KeyError:
                    method = methods[kind] = getattr(type(self), "visit_" + kind.__name__, None)
                if method is None:
                    self.generic_visit(item)  # type: ignore[arg-type]
                else:
                    method(self, item)

    def start(self, scope: ast.AST) -> None:
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = scope.args
            for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
                annotation = self.module.qualified(arg.annotation) if arg.annotation is not None else None
                if annotation == "tf.data.Dataset" or _DATASET_PARAM.search(arg.arg):
                    self.env[arg.arg] = Pipeline(None, (), arg)
        body = scope.body if isinstance(scope.body, list) else [scope.body]
        for stmt in body:
            self.visit(stmt)

    # Nested scopes are walked on their own.
    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        for decorator in node.decorator_list:
            self.visit(decorator)

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        return

    def visit_Lambda(self, node: ast.Lambda) -> None:
        return

    def value(self, node: ast.AST | None) -> Pipeline | None:
        if node is None:
            return None
        if isinstance(node, ast.Name):
            return self.env.get(node.id)
        return self.flow.of_node.get(id(node))

    def _bind(self, target: ast.AST, value: Pipeline | None) -> None:
        if isinstance(target, ast.Name):
            if value is None:
                self.env.pop(target.id, None)
            else:
                self.env[target.id] = value

    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        value = self.value(node.value)
        for target in node.targets:
            self._bind(target, value)
            splits = _tfds_splits(self.module, node.value, value)
            if splits is not None and isinstance(target, (ast.Tuple, ast.List)):
                self._bind_splits(target, splits, direct=node.value is splits)
            shape = self._tuple_call(node.value)
            if shape is not None and isinstance(target, (ast.Tuple, ast.List)) and \
                    len(target.elts) == len(shape.elements):
                for element, (made, expr) in zip(target.elts, shape.elements, strict=True):
                    if made is not None and made.source is not None:
                        # Positioned at the returned expression: `.prefetch()` can be appended there.
                        unpacked = Pipeline(node.value, made.ops, expr)
                        self.flow.values.append(unpacked)
                        self._bind(element, unpacked)

    def _bind_splits(self, target: ast.Tuple | ast.List, call: ast.Call, direct: bool = True) -> None:
        """`(train, test), info = tfds.load(..., split=[...], with_info=True)`: each name is a split; and
        `(train, val, test) = splits` after `splits, info = tfds.load(...)` (not direct: no info to drop)."""
        elements = target.elts
        if direct and constant(keyword_value(call, "with_info")) is True:
            elements = elements[:1]
        for element in elements:
            names = element.elts if isinstance(element, (ast.Tuple, ast.List)) else [element]
            for name in names:
                if isinstance(name, ast.Name):
                    split = Pipeline(call, (), name)
                    self.flow.values.append(split)
                    self._bind(name, split)

    def _tuple_call(self, node: ast.AST) -> ReturnShape | None:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in self.returning:
            shape = self.returning[node.func.id]
            if shape.is_tuple and self.module.call_name(node) is None:
                return shape
        return None

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)
            self._bind(node.target, self.value(node.value))

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.visit(node.value)
        value = self.value(node.value)
        self._bind(node.target, value)
        if value is not None:
            self.flow.of_node[id(node)] = value

    def visit_Return(self, node: ast.Return) -> None:
        if node.value is None:
            return
        self.visit(node.value)
        is_tuple = isinstance(node.value, ast.Tuple)
        exprs = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
        elements = tuple((self.value(e), e) for e in exprs)
        if any(v is not None for v, _ in elements):
            self.flow.returned.extend(v for v, _ in elements if v is not None)
            self.flow.return_shapes.append(ReturnShape(elements, is_tuple))
            if self.input_fn:  # Estimator/TF1: what an input_fn returns is what training reads
                for value, expr in elements:
                    if value is not None:
                        self.flow.consume(value, node, expr)

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self.visit(node.iter)
        value = self.value(node.iter)
        if value is None and isinstance(node.iter, ast.Call) and node.iter.args and \
                isinstance(node.iter.func, ast.Name) and node.iter.func.id == "enumerate":
            value = self.value(node.iter.args[0])
        if value is not None:
            expr = node.iter.args[0] if self.value(node.iter) is None else node.iter
            if not _inspects_only(self.module, node):
                self.flow.consume(value, node, expr)
            self.flow.loops.append((node, value))
        self._bind(node.target, None)
        for stmt in (*node.body, *node.orelse):
            self.visit(stmt)

    visit_AsyncFor = visit_For  # type: ignore[assignment]

    def _new(self, value: Pipeline, node: ast.AST) -> None:
        self.flow.values.append(value)
        self.flow.of_node[id(node)] = value
        self.flow.appearances.append((node, value))

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load) and node.id in self.env:
            self.flow.appearances.append((node, self.env[node.id]))

    def visit_Call(self, node: ast.Call) -> None:
        self.generic_visit(node)
        func = node.func
        arg_values = [v for v in (self.value(a) for a in (*node.args, *(k.value for k in node.keywords))) if v]
        receiver = self.value(func.value) if isinstance(func, ast.Attribute) else None
        if receiver is not None and func.attr in TRANSFORMS:  # type: ignore[union-attr]
            self.flow.extended.add(id(receiver))
            made = receiver.then(func.attr, node)  # type: ignore[union-attr]
            for merged in arg_values:  # concatenate(other), zip: folded into this pipeline
                self.flow.extended.add(id(merged))
                self.flow.merged_into[id(merged)] = made
            self._new(made, node)
            return
        name = self.module.call_name(node)
        if name is None and isinstance(func, ast.Attribute) and func.attr == "as_dataset" and \
                self.module.imports.imports_module("tensorflow_datasets"):
            name = TFDS_AS_DATASET
        if (name in SOURCES or name == TFDS_AS_DATASET) and not _whole_tensors(name, node):
            made = Pipeline(node, (), node)
            for merged in [*arg_values, *self._tuple_values(node)]:
                self.flow.extended.add(id(merged))
                self.flow.merged_into[id(merged)] = made
            self._new(made, node)
            return
        if isinstance(func, ast.Name) and func.id in self.returning and name is None and \
                not self.returning[func.id].is_tuple:
            made = self.returning[func.id].elements[0][0]
            if made is None:
                return
            if made.source is None:  # a function that transforms the dataset it is given
                base = arg_values[0] if arg_values else Pipeline(None, (), None)
                self.flow.extended.update(id(v) for v in arg_values)
                self._new(Pipeline(base.source, (*base.ops, *made.ops), node), node)
            else:
                self._new(Pipeline(node, made.ops, node), node)
            return
        if receiver is not None and func.attr in CONSUMER_METHODS:  # type: ignore[union-attr]
            self.flow.consume(receiver, node, func.value)  # type: ignore[union-attr]
            return
        if arg_values and name is None and self._consumed_by_a_function_of_the_file(node):
            return
        consumer = (isinstance(func, ast.Attribute) and func.attr in CONSUMER_METHODS) or (
            isinstance(func, ast.Name) and func.id in CONSUMER_BUILTINS and name is None) or name in TF1_ITERATORS
        peek = isinstance(func, ast.Name) and func.id == "iter" and _is_next_call(self.module.parents.get(node))
        if consumer and not peek:
            args = [*node.args, *(k.value for k in node.keywords)]
            if isinstance(func, ast.Attribute) and func.attr in ("fit", "fit_generator"):
                # fit(x, ..., validation_data=v): both are read every epoch; other arguments are not data
                first = node.args[0] if node.args else keyword_value(node, "x")
                args = [a for a in (first, keyword_value(node, "validation_data")) if a is not None]
            for arg in args:
                value = self.value(arg)
                if value is not None:
                    self.flow.consume(value, node, arg)
            if isinstance(func, ast.Name) and func.id in ("iter", "enumerate") and arg_values:
                self.flow.of_node[id(node)] = arg_values[0]

    def _consumed_by_a_function_of_the_file(self, node: ast.Call) -> bool:
        """`train(model, ds)` where `def train(model, data): for batch in data: ...` is in this file: the
        pipeline is consumed by that loop (issue 39, item 5), as if the loop were here."""
        func = node.func
        callee = func.id if isinstance(func, ast.Name) else \
            func.attr if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
            func.value.id in ("self", "cls") else None
        if callee not in self.consuming:
            return False
        params, consumed = self.consuming[callee]
        if isinstance(func, ast.Attribute) and params[:1] in (("self",), ("cls",)):
            params = params[1:]
        given = [(params[i] if i < len(params) else None, a) for i, a in enumerate(node.args)]
        given += [(k.arg, k.value) for k in node.keywords]
        found = False
        for param, arg in given:
            value = self.value(arg) if param in consumed else None
            if value is not None:
                self.flow.consume(value, node, arg)
                found = True
        return found

    def _tuple_values(self, call: ast.Call) -> list[Pipeline]:
        """Pipelines in a tuple or list argument: `Dataset.zip((images, labels))`."""
        found = []
        for arg in call.args:
            if isinstance(arg, (ast.Tuple, ast.List)):
                found += [v for v in (self.value(e) for e in arg.elts) if v is not None]
        return found

    def visit_Subscript(self, node: ast.Subscript) -> None:
        self.generic_visit(node)
        value = self.value(node.value)  # tfds.load(...)["train"]: one split of the dict
        if value is not None and value.source is not None and \
                self.module.call_name(value.source) == "tensorflow_datasets.load":  # type: ignore[arg-type]
            self._new(Pipeline(value.source, value.ops, node), node)


# Calls that look at a pipeline without training on it: printing, plotting, counting, listing.
_LOOKING = ("print", "display", "plot", "show", "visual", "imshow", "draw", "render", "len", "list", "next",
            "summar", "describe", "inspect", "preview", "sample", "peek", "tolist", "numpy")
# Calls that score candidates with a trained model (a retrieval metric, a top-k index), not training input.
_SCORING = ("metric", "topk", "index")
# Methods of a dataset that read its metadata or a few elements, not its stream.
_PEEK_METHODS = frozenset({"take", "as_numpy_iterator", "cardinality", "element_spec", "reduce", "get_single_element",
                           "numpy", "class_names", "save", "snapshot"})


_PEEK_SIZE = 100  # take(n) of at most this many elements (batches) shows data, it does not train


def _few(call: ast.Call) -> bool:
    count = constant(call.args[0]) if call.args else None
    return isinstance(count, int) and not isinstance(count, bool) and 0 <= count <= _PEEK_SIZE


def _hands_on(module: SourceModule, node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """Whether this appearance of a pipeline gives it to something that may train on it (see trained_on)."""
    parent = parents.get(node)
    if isinstance(parent, ast.Attribute):
        call = parents.get(parent)
        if isinstance(call, ast.Call) and call.func is parent:
            return parent.attr not in TRANSFORMS and parent.attr not in _PEEK_METHODS and \
                parent.attr not in CONSUMER_METHODS  # transforms and consumers are followed by the flow
        return False  # ds.element_spec, ds.class_names
    if isinstance(parent, (ast.Tuple, ast.List)):
        holder = parents.get(parent)
        if isinstance(holder, ast.Call) and parent in holder.args and module.call_name(holder) in SOURCES:
            return False  # merged into another pipeline, which the flow follows: `Dataset.zip((src, trg))`
    if isinstance(parent, ast.keyword):
        if parent.arg == "candidates":
            return False  # retrieval candidates scored by a metric or an index, not training input
        parent = parents.get(parent)
    if isinstance(parent, ast.Call):
        func = parent.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        lowered = name.lower()
        if name in CONSUMER_METHODS or name in CONSUMER_BUILTINS or name in TRANSFORMS:
            return False  # consumed (the flow knows), or built on
        if module.call_name(parent) in SOURCES:
            return False  # merged into another pipeline (zip, sample_from_datasets)
        return not any(word in lowered for word in _LOOKING + _SCORING)
    if isinstance(parent, (ast.Assign, ast.AnnAssign, ast.NamedExpr)):
        targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
        return not all(isinstance(t, (ast.Name, ast.Tuple, ast.List)) for t in targets)  # self.ds = ds
    # Loops and returns are judged by the flow; a bare expression or a test uses nothing. Anything else
    # (yielded, put in a container, subscripted) goes where lint cannot follow it.
    return not isinstance(parent, (ast.For, ast.AsyncFor, ast.Expr, ast.Compare, ast.If, ast.While, ast.BoolOp,
                                   ast.UnaryOp, ast.Assert, ast.Delete, ast.JoinedStr, ast.FormattedValue,
                                   ast.Return))


def _whole_tensors(name: str | None, call: ast.Call) -> bool:
    """`tfds.load(..., batch_size=-1)` returns the whole split as tensors, not a dataset."""
    return name == "tensorflow_datasets.load" and isinstance(batch := keyword_value(call, "batch_size"), ast.UnaryOp) \
        and isinstance(batch.op, ast.USub) and constant(batch.operand) == 1


def _tfds_splits(module: SourceModule, expr: ast.AST, value: Pipeline | None) -> ast.Call | None:
    """The `tfds.load(..., split=[...])` call whose splits `expr` holds: the call itself, or a name bound
    to it (`splits = tfds.load(...)`, then `(train, val) = splits`). Not one element of it (`[0]`)."""
    if value is None or value.ops or not isinstance(value.source, ast.Call):
        return None
    if value.node is not value.source and not isinstance(value.node, ast.Name):
        return None  # one element of it (`[0]`), not the splits; a Name: `splits, info = tfds.load(...)`
    if module.call_name(value.source) == "tensorflow_datasets.load":
        return value.source
    # `train, test = builder.as_dataset(split=("train", "test"))`: a TFDS builder's splits (issue 39)
    func = value.source.func
    if isinstance(func, ast.Attribute) and func.attr == "as_dataset" and \
            isinstance(keyword_value(value.source, "split"), (ast.Tuple, ast.List)) and \
            module.imports.imports_module("tensorflow_datasets"):
        return value.source
    return None


class DatasetFlow:
    """Every scope's pipelines, computed once per module on first use."""

    def __init__(self, module: SourceModule) -> None:
        self.module = module

    @cached_property
    def scopes(self) -> list[ast.AST]:
        scopes: list[ast.AST] = [self.module.tree]
        scopes += self.module.nodes(ast.FunctionDef) + self.module.nodes(ast.AsyncFunctionDef)
        return scopes

    @cached_property
    def referenced_names(self) -> set[str]:
        """Names read in this file, and attributes (`self.make_dataset()` calls a method of the file)."""
        names = {n.id for n in self.module.nodes(ast.Name) if isinstance(n.ctx, ast.Load)}
        return names | {n.attr for n in self.module.nodes(ast.Attribute) if isinstance(n.ctx, ast.Load)}

    @cached_property
    def _builders(self) -> set[int]:
        """ids of the scopes that build or transform a dataset themselves.

        Walking only the scopes that can hold a pipeline keeps lint time close to parse time; only the
        calls that can build one are placed in their scope (scope_of), not every call of the file.
        """
        module, found = self.module, set()
        by_name = module.calls_by_name
        for call in [c for name in SOURCES.intersection(by_name) for c in by_name[name]]:
            found.add(id(module.scope_of(call)))
        for call in module.calls:
            func = call.func
            if isinstance(func, ast.Attribute) and func.attr in TRANSFORMS:
                found.add(id(module.scope_of(call)))
        return found

    @cached_property
    def _calling_returning(self) -> set[int]:
        """ids of the scopes that call, by name, a function of this file that returns a pipeline."""
        names = self.returning.keys()
        if not names:
            return set()
        return {id(self.module.scope_of(call)) for call in self.module.calls
                if isinstance(call.func, ast.Name) and call.func.id in names}

    def _builds(self, scope: ast.AST) -> bool:
        return id(scope) in self._builders

    @cached_property
    def _plain_flows(self) -> dict[int, ScopeFlow]:
        """Functions that build pipelines, walked without knowing what other functions return."""
        return {id(s): self._walk(s, {}) for s in self.scopes[1:] if self._builds(s)}

    @cached_property
    def returning(self) -> dict[str, ReturnShape]:
        """Module functions that return pipelines (alone or in a tuple), as their first return shows.

        A helper may return what another helper of the file returns, built on (`MakeSrcTrgDataset` zips two
        `MakeDataset` pipelines and batches them; the twenty-fourth held-out set): the functions that call a
        returning function are walked again knowing what it returns, up to `_RETURN_DEPTH` helpers deep, so
        the caller that trains on the result is seen to read the maps made at the bottom."""
        found = self._returns_of(self._plain_flows)
        for _ in range(_RETURN_DEPTH - 1):
            names = found.keys()
            # One pass over the file's calls, not one per function: which names each scope calls.
            called_in: dict[int, set[str]] = {}
            for call in self.module.calls:
                if isinstance(call.func, ast.Name) and call.func.id in names:
                    called_in.setdefault(id(self.module.scope_of(call)), set()).add(call.func.id)
            calling = [scope for scope in self.scopes[1:] if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef))
                       and id(scope) in self._plain_flows and called_in.get(id(scope), set()) - {scope.name}]
            if not calling:
                break
            deeper = self._returns_of({**self._plain_flows, **{id(s): self._walk(s, found) for s in calling}})
            if all(_same_shape(deeper.get(name), shape) for name, shape in found.items()) and deeper.keys() == names:
                break
            found = deeper
        return found

    def _returns_of(self, flows: dict[int, ScopeFlow]) -> dict[str, ReturnShape]:
        found: dict[str, ReturnShape] = {}
        for scope in self.scopes[1:]:
            flow = flows.get(id(scope))
            if flow is not None and flow.return_shapes and isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.setdefault(scope.name, flow.return_shapes[0])
        return found

    @cached_property
    def flows(self) -> list[ScopeFlow]:
        if not self.module.imports.imports_module("tf") and not self.module.imports.imports_module("keras"):
            return []
        flows = []
        returning = self.returning
        calling = self._calling_returning
        for scope in self.scopes:
            if id(scope) in calling:
                flows.append(self._walk(scope, returning))
            elif id(scope) in self._plain_flows:
                flows.append(self._plain_flows[id(scope)])
            elif id(scope) in self._builders:
                flows.append(self._walk(scope, {}))
        return flows

    @cached_property
    def input_fns(self) -> frozenset[str]:
        """Functions that feed an Estimator (TF1/TF2): named `input_fn`/`*_input_fn` or passed as `input_fn=`."""
        if "input_fn" not in self.module.text:  # both ways write it: no call of the file need be asked
            return frozenset()
        names = {f.name for f in self.scopes[1:] if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and (f.name == "input_fn" or f.name.endswith("_input_fn"))}
        for call in self.module.calls:
            given = keyword_value(call, "input_fn")
            if isinstance(given, ast.Lambda):
                given = given.body.func if isinstance(given.body, ast.Call) else None
            if isinstance(given, ast.Name):
                names.add(given.id)
            elif isinstance(given, ast.Attribute):
                names.add(given.attr)
        return frozenset(names)

    @cached_property
    def consuming(self) -> dict[str, tuple[tuple[str, ...], frozenset[str]]]:
        """Functions of this file that train on a parameter: name → (its parameters, those it consumes).

        A parameter is consumed when the function loops over it (`for x in data`, `enumerate(data)`, not
        a loop that only prints or plots), or gives it to fit/evaluate/predict or a distribute strategy.
        A name defined twice in the file is left out: which definition a call reaches is not known."""
        defined = [f for f in self.scopes[1:] if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
        counts: dict[str, int] = {}
        for function in defined:
            counts[function.name] = counts.get(function.name, 0) + 1
        params_of: dict[int, tuple[tuple[str, ...], set[str]]] = {}
        for function in defined:
            if counts[function.name] == 1:
                args = function.args
                params_of[id(function)] = (tuple(a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)),
                                           set())
        if not params_of:
            return {}
        # Each consuming node once, its name given to every function around it that has such a parameter
        # (the functions' subtrees nest: one walk per function was a third of lint's CPU past the parse).
        module, parents = self.module, self.module.parents
        for node, name in _consumptions(module):
            inspects: bool | None = None
            current = node
            while current in parents:
                current = parents[current]
                entry = params_of.get(id(current))
                if entry is None or name not in entry[0] or name in entry[1]:
                    continue
                if isinstance(node, (ast.For, ast.AsyncFor)):
                    if inspects is None:
                        inspects = _inspects_only(module, node)
                    if inspects:
                        continue
                entry[1].add(name)
        return {f.name: (params_of[id(f)][0], frozenset(params_of[id(f)][1])) for f in defined
                if id(f) in params_of and params_of[id(f)][1]}

    def _walk(self, scope: ast.AST, returning: dict[str, ReturnShape]) -> ScopeFlow:
        flow = ScopeFlow(scope)
        try:
            _ScopeWalker(self.module, flow, returning, self.input_fns, self.consuming).start(scope)
        except RecursionError:  # an expression nested thousands deep (generated code): no pipeline claims
            return ScopeFlow(scope)
        parents = self.module.parents
        flow.used = {id(value) for node, value in flow.appearances if _hands_on(self.module, node, parents)}
        return flow

    def _called_here(self, scope: ast.AST) -> bool:
        """A function this file calls by name: what it returns is judged in its callers' flows."""
        return isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and scope.name in self.returning and \
            scope.name in self._called_names

    @cached_property
    def _called_names(self) -> set[str]:
        return {c.func.id for c in self.module.calls if isinstance(c.func, ast.Name)}

    def trained_on(self, flow: ScopeFlow, value: Pipeline, depth: int = 0) -> bool:
        """Whether the pipeline, or one built on it, is read by training or handed on (issue 25, items 1-2).

        A pipeline only built (six maps in a tutorial cell, none used later), peeked at (`take(1)`,
        `next(iter(ds))`, a loop that prints or plots) or given to a plotting helper is not; one consumed
        (fit, a training loop, iter, a distribute strategy, an Estimator input_fn), returned, stored in an
        attribute or given to a function lint cannot see is.
        """
        return next(self.uses(flow, value, depth), None) is not None

    def uses(self, flow: ScopeFlow, value: Pipeline, depth: int = 0) -> Iterator[tuple[str, ast.AST | None]]:
        """How the pipeline, or one built on it, is used (see trained_on): ("consumed", the consuming node),
        ("used", None) for handed to code lint cannot follow, ("returned", None) for returned to callers
        in other files. Consumptions first, so a rule can take the strongest evidence."""
        found = self._uses(flow, value, depth, {})
        yield from (use for use in found if use[0] == "consumed")
        yield from (use for use in found if use[0] != "consumed")

    @cached_property
    def _followed(self) -> dict[tuple[int, int, int], tuple[tuple[str, ast.AST | None], ...]]:
        """What `_uses` found from (flow, value, depth), for the flows of the file (kept alive by `flows`, so
        their ids are not reused): every map of a merge asks again what is built on the merge, and following
        that anew for each map was quadratic (three rounds of 1,000 maps of one zip, zipped again: 4.8 s)."""
        return {}

    def _uses(self, flow: ScopeFlow, value: Pipeline, depth: int,
              apart: dict[tuple[int, int, int], tuple[tuple[str, ast.AST | None], ...]]
              ) -> tuple[tuple[str, ast.AST | None], ...]:
        """Every use of the pipeline and of those built on it, in the order a depth-first walk meets them, each
        once. Following goes deeper with each step and stops at depth 5, so it ends; what is found from one
        place at one depth is kept (`_followed`; `apart` for a flow walked apart from the file's, for this
        query only): merges fan out and in, and each path tried anew was exponential in the merges."""
        key = (id(flow), id(value), depth)
        memo = self._followed if id(flow) in self._flow_ids else apart
        if key in memo:
            return memo[key]
        memo[key] = ()  # not reached again on the way down (each step is one deeper), but never unbound
        found: dict[tuple[str, int], tuple[str, ast.AST | None]] = {}

        def add(uses: Iterable[tuple[str, ast.AST | None]]) -> None:
            for use in uses:
                found.setdefault((use[0], id(use[1])), use)

        ops = value.ops
        # The same ops, by call: pipelines built on this one here, and in the callers of this function
        # (a function of the file that returns it carries its ops into the caller's flow). Only values that
        # start with the same call can be (an index, not a scan of every value of every flow: 4,000
        # pipelines at module level took 10 s, quadratic). Ops compare by their calls (AST nodes: identity).
        if ops:
            first = ops[0][1]
            if len(ops) > 1:  # narrowed by the second call too: many callers' `make().batch(8)` share the first
                candidates = self._by_first_two_calls.get((id(first), id(ops[1][1])), [])
            else:
                candidates = self._by_first_call.get(id(first), [])
            if id(flow) not in self._flow_ids:  # a flow walked apart from the file's (not indexed)
                candidates = [*candidates, *((flow, v) for v in flow.values if v.ops and v.ops[0][1] is first)]
        else:
            candidates = [(flow, value)]
            if depth < 5:
                # A pipeline made by merging others (`Dataset.zip((src, trg))`) has no ops of its own: what is
                # built on it in this flow is found through each first op built on it (in this flow, and in
                # the callers' flows of a function of the file that returns it), and where it is returned as
                # it is, through the values its callers make of the call.
                if id(flow) in self._flow_ids:
                    built_on = self._one_op_by_source.get((id(flow), id(value.source)), [])
                else:  # a flow walked apart from the file's (not indexed)
                    built_on = [v for v in flow.values if v.source is value.source and len(v.ops) == 1]
                for built in built_on:
                    if built is not value:
                        add(self._uses(flow, built, depth + 1, apart))
                if flow.returned and value in flow.returned and self._called_here(flow.scope):
                    name = flow.scope.name  # type: ignore[attr-defined]
                    for caller, made in self._made_by_calling.get(name, ()):
                        add(self._uses(caller, made, depth + 1, apart))
        for owner, other in candidates:
            merged = owner.merged_into.get(id(other))
            returned = bool(owner.returned and other in owner.returned and not self._called_here(owner.scope))
            counted = id(other) in owner.consumed or id(other) in owner.used or returned
            if merged is None and not counted:
                continue  # cheap tests first: a chain of 4,000 `ds = ds.map(f)` compares no prefixes
            if other.ops[: len(ops)] != ops:
                continue
            if merged is not None and depth < 5:
                add(self._uses(owner, merged, depth + 1, apart))
            if not counted:
                continue
            if other.marks.last_peek >= len(ops):
                continue  # a peek at a few elements
            if id(other) in owner.consumed:
                add([("consumed", owner.consumed[id(other)])])
            elif id(other) in owner.used:
                add([("used", None)])
            else:
                add([("returned", None)])
        memo[key] = result = tuple(found.values())
        return result

    @cached_property
    def _flow_ids(self) -> set[int]:
        return {id(flow) for flow in self.flows}

    def _leads_somewhere(self, flow: ScopeFlow, value: Pipeline) -> bool:
        """Whether `_uses` can find anything at this value as a candidate: it is merged, consumed, handed on
        or returned to callers elsewhere. The other values of a chain (`ds = ds.map(f)`, n times) cannot."""
        key = id(value)
        return (key in flow.merged_into or key in flow.consumed or key in flow.used
                or bool(flow.returned and value in flow.returned and not self._called_here(flow.scope)))

    @cached_property
    def _by_first_call(self) -> dict[int, list[tuple[ScopeFlow, Pipeline]]]:
        """Every value of every flow that leads somewhere, by the id of its first op's call. Values that lead
        nowhere are left out: each map of a chain of n was otherwise compared with the n values after it
        (2,400 chained maps: 1.9 s of SRC103 alone, 0.55 s now)."""
        index: dict[int, list[tuple[ScopeFlow, Pipeline]]] = {}
        for flow in self.flows:
            for value in flow.values:
                if value.ops and self._leads_somewhere(flow, value):
                    index.setdefault(id(value.ops[0][1]), []).append((flow, value))
        return index

    @cached_property
    def _by_first_two_calls(self) -> dict[tuple[int, int], list[tuple[ScopeFlow, Pipeline]]]:
        """As _by_first_call, values of two ops or more by the ids of their first two ops' calls: the values a
        pipeline of two ops or more can be a prefix of. By the first call alone, 1,200 functions each fitting on
        `make().batch(8).map(g)` were each compared with all 1,200 (quadratic)."""
        index: dict[tuple[int, int], list[tuple[ScopeFlow, Pipeline]]] = {}
        for flow in self.flows:
            for value in flow.values:
                if len(value.ops) > 1 and self._leads_somewhere(flow, value):
                    index.setdefault((id(value.ops[0][1]), id(value.ops[1][1])), []).append((flow, value))
        return index

    @cached_property
    def _one_op_by_source(self) -> dict[tuple[int, int], list[Pipeline]]:
        """The values of every flow made by one op on their source, by the ids of that flow and that source."""
        index: dict[tuple[int, int], list[Pipeline]] = {}
        for flow in self.flows:
            for value in flow.values:
                if len(value.ops) == 1:
                    index.setdefault((id(flow), id(value.source)), []).append(value)
        return index

    @cached_property
    def _made_by_calling(self) -> dict[str, list[tuple[ScopeFlow, Pipeline]]]:
        """The values of every flow made from a call of a function by its plain name (`ds = make()`, or one op
        on it: `make().batch(8)`), by that name."""
        index: dict[str, list[tuple[ScopeFlow, Pipeline]]] = {}
        for flow in self.flows:
            for value in flow.values:
                for node in (value.node, value.source if len(value.ops) <= 1 else None):
                    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                        entries = index.setdefault(node.func.id, [])
                        if not entries or entries[-1][1] is not value:
                            entries.append((flow, value))
        return index

    def values(self):
        for flow in self.flows:
            for value in flow.values:
                yield flow, value


def _consumptions(module: SourceModule) -> Iterator[tuple[ast.AST, str]]:
    """(node, name) for each plain name a function may consume there: looped over (`for x in data`,
    `enumerate(data)`, `iter(data)`) or given to fit/evaluate/predict or a distribute strategy as its data
    or `validation_data=`; `consuming` keeps the names that are parameters of a function around the node."""
    def name_of(node: ast.AST | None) -> str | None:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("enumerate", "iter") \
                and node.args:
            node = node.args[0]
        return node.id if isinstance(node, ast.Name) else None

    for loop in (*module.nodes(ast.For), *module.nodes(ast.AsyncFor)):
        name = name_of(loop.iter)
        if name is not None:
            yield loop, name
    for call in module.calls:
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in CONSUMER_METHODS:
            first = call.args[0] if call.args else keyword_value(call, "x")
            for arg in (first, keyword_value(call, "validation_data")):
                name = name_of(arg)
                if name is not None:
                    yield call, name


def dataset_flow(module: SourceModule) -> DatasetFlow:
    return module.derived(DatasetFlow)
