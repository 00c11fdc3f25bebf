"""What a tf.data pipeline costs per element, estimated statically (issue 13, item 2: size and cost).

A rule about input throughput is only worth a user's attention when the pipeline does real work per
element: it reads files, decodes, augments, or runs Python. A `map` that casts and scales arrays already
in memory, a `range(10)` or a ten-element literal list need neither parallel calls nor prefetch. When
the cost cannot be told (a function of another module), `UNKNOWN` lets the rule decide from the source.
"""

from __future__ import annotations

import ast
import enum

from tfdoctor.lint.bindings import bound_to, values_besides_assignment
from tfdoctor.lint.datasets import FILE_SOURCES, TFDS_AS_DATASET, Pipeline
from tfdoctor.lint.source import SourceModule, argument, constant


class Cost(enum.IntEnum):
    TRIVIAL = 0
    UNKNOWN = 1
    EXPENSIVE = 2


# Per-element work worth parallelising: I/O, decoding, string processing, augmentation, Python.
_EXPENSIVE_PREFIXES = (
    "tf.io.", "tf.image.", "tf.audio.", "tf.signal.", "tf.strings.", "tf.py_function", "tf.numpy_function",
    "tf.py_func", "tf.read_file", "tf.decode_", "tf.parse_", "tf.string_split", "tf.random.",
    "tf.data.TFRecordDataset", "tf.data.TextLineDataset", "tf.data.FixedLengthRecordDataset",
    "tf.map_fn", "tf.contrib.image.", "tf.sparse.", "keras.layers.", "keras.preprocessing.", "tensorflow_text.",
    "tf.image", "tf.numpy_function", "keras_hub.", "keras_nlp.", "tensorflow_hub.",
)
# Under those prefixes, ops that only cast and scale each element, as `tf.cast` does: `convert_image_dtype` is a cast
# and a multiply (the twenty-fifth held-out set: an MNIST map doing only that, judged not worth a thread).
_CHEAP_TF = ("tf.image.convert_image_dtype",)
# Plain Python that costs nothing worth a thread.
_CHEAP_BUILTINS = frozenset({"len", "tuple", "list", "dict", "int", "float", "str", "bool", "range", "zip",
                             "isinstance", "min", "max", "abs", "sorted", "enumerate", "print"})
_CHEAP_METHODS = frozenset({"items", "keys", "values", "get", "copy", "pop", "update", "append", "astype"})
_IN_MEMORY = frozenset({"tf.data.Dataset.from_tensor_slices", "tf.data.Dataset.from_tensors",
                        "tf.data.Dataset.range", "tf.data.Dataset.counter", "keras.utils.timeseries_dataset_from_array",
                        "keras.preprocessing.timeseries_dataset_from_array"})
_SMALL = 10_000  # elements: below this a pipeline over a literal finishes before a GPU warms up


def function_cost(module: SourceModule, target: ast.AST | None, depth: int = 0) -> Cost:
    """Cost of the function given to `map`/`filter`/`interleave` (a name, lambda, method or partial)."""
    if target is None or depth > 3:
        return Cost.UNKNOWN
    if isinstance(target, ast.Lambda):
        return _body_cost(module, target.body, depth)
    name = module.qualified(target)
    if name is not None:
        if name in ("functools.partial",):
            return Cost.UNKNOWN
        return _named_cost(name)
    if isinstance(target, ast.Call) and module.call_name(target) == "functools.partial" and target.args:
        return function_cost(module, target.args[0], depth + 1)
    if isinstance(target, ast.Call) and isinstance(target.func, ast.Name) and target.func.id == "partial":
        return function_cost(module, target.args[0] if target.args else None, depth + 1)
    definition = _definition(module, target)
    if definition is None:
        return Cost.UNKNOWN
    return _definition_cost(module, definition, depth)


def _named_cost(name: str) -> Cost:
    """Cost of calling an imported function by its canonical name: TensorFlow's own ops are trivial unless they
    read, decode, augment or run Python; anything else is not known here."""
    if name.startswith(_EXPENSIVE_PREFIXES) and not name.startswith(_CHEAP_TF):
        return Cost.EXPENSIVE
    return Cost.TRIVIAL if name.startswith("tf.") else Cost.UNKNOWN


def function_definition(module: SourceModule, target: ast.AST | None) -> ast.FunctionDef | None:
    """The `def` a name or `self.method` given to map refers to in this module, when there is exactly one."""
    return _definition(module, target) if target is not None else None


def _definition(module: SourceModule, target: ast.AST) -> ast.FunctionDef | None:
    """The `def` a name (or `self.method`) refers to in this module, when there is exactly one."""
    if isinstance(target, ast.Name):
        wanted = target.id
    elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
        wanted = target.attr
    else:
        return None
    found = module.derived(functions_by_name).get(wanted, [])
    if len(found) > 1 and isinstance(target, ast.Attribute):
        # `self._parse` where a function nested elsewhere is also named `_parse` (the twenty-ninth held-out set):
        # `self.` finds the method of the class the use is in, as Python does when no subclass overrides it.
        owner = next((a for a in module.ancestors(target) if isinstance(a, ast.ClassDef)), None)
        methods = [f for f in found if owner is not None and module.parents.get(f) is owner]
        return methods[0] if len(methods) == 1 else None
    if len(found) > 1 and isinstance(target, ast.Name):
        # Two helpers each defining their own `drop_index` (the seventeenth held-out set): a name used in a
        # function is the `def` of that function, as Python resolves it.
        here = module.scope_of(target)
        local = [f for f in found if module.scope_of(f) is here]
        if len(local) == 1 and here is not module.tree:
            return local[0]
    if len(found) > 1:
        # Defined again and again (notebook cells): the last definition above the use is the one in force.
        line = getattr(target, "lineno", 0)
        above = [f for f in found if f.lineno < line]
        return max(above, key=lambda f: f.lineno) if above and all(
            isinstance(module.parents.get(f), ast.Module) for f in found) else None
    return found[0] if found else None


def _body_cost(module: SourceModule, node: ast.AST, depth: int) -> Cost:
    worst = Cost.TRIVIAL
    for child in ast.walk(node):
        if isinstance(child, (ast.For, ast.While)):
            worst = max(worst, Cost.UNKNOWN)
        if not isinstance(child, ast.Call):
            continue
        name = module.call_name(child)
        func = child.func
        if name is not None:
            cost = _named_cost(name)
            if cost is Cost.EXPENSIVE:
                return cost
            worst = max(worst, cost)
        elif (isinstance(func, ast.Name) and func.id in _CHEAP_BUILTINS) or (
                isinstance(func, ast.Attribute) and func.attr in _CHEAP_METHODS):
            continue
        elif _bound_to_a_model(module, func):
            return Cost.EXPENSIVE  # `preprocess = keras.Sequential([Resizing(...), ...])` run per element
        elif (definition := _definition(module, func)) is not None and depth < 3:
            cost = _definition_cost(module, definition, depth + 1)
            if cost is Cost.EXPENSIVE:
                return cost
            worst = max(worst, cost)
        else:
            worst = max(worst, Cost.UNKNOWN)
    return worst


class State(enum.Enum):
    """Whether a mapped function makes stateful ops: tf.data parallelizes a map by itself only when it does not
    (tfdoctor/knowledge/tfdata_automatic.toml, map_parallelization)."""

    STATELESS = "stateless"
    UNKNOWN = "unknown"
    STATEFUL = "stateful"


# Methods of tensors and containers that trace to stateless ops (or none); of generators, tables and
# variables that read or change state.
_STATELESS_METHODS = frozenset({"set_shape", "get_shape", "reshape", "numpy_shape", "split", "join", "strip",
                                "lower", "upper", "format", "replace", "decode", "encode"}) | _CHEAP_METHODS
_STATEFUL_METHODS = frozenset({"lookup", "uniform", "normal", "truncated_normal", "uniform_full_int", "binomial",
                               "make_seeds", "assign", "assign_add", "assign_sub", "read_value", "scatter_update"})


def function_state(module: SourceModule, target: ast.AST | None, depth: int = 0) -> tuple[State, str | None]:
    """Whether the function given to `map` makes stateful ops, and the call that does when one does. Followed
    into lambdas, partials and functions of this file, as `function_cost` is; a call into another module
    leaves it unknown."""
    if target is None or depth > 3:
        return State.UNKNOWN, None
    if isinstance(target, ast.Lambda):
        return _body_state(module, target.body, depth)
    name = module.qualified(target)
    if name is not None:
        return _named_state(name)
    if isinstance(target, ast.Call) and target.args and (
            module.call_name(target) == "functools.partial"
            or (isinstance(target.func, ast.Name) and target.func.id == "partial")):
        return function_state(module, target.args[0], depth + 1)
    if _bound_makers(module, target) is not None:
        return _layer_state(module, target)
    if isinstance(target, ast.Call) and (maker := module.call_name(target)) is not None:
        return _named_state(maker)  # `map(keras.layers.Rescaling(1 / 255))`: the layer made on the spot
    definition = _definition(module, target)
    if definition is None:
        return State.UNKNOWN, None
    return _definition_state(module, definition, depth)


def _rank(state: tuple[State, str | None]) -> int:
    return (State.STATELESS, State.UNKNOWN, State.STATEFUL).index(state[0])


def _named_state(name: str) -> tuple[State, str | None]:
    from tfdoctor.lint.target import stateful_call, stateless_keras_call

    if stateful_call(name):
        return State.STATEFUL, name
    if stateless_keras_call(name) or (name.startswith("tf.") and not name.startswith("tf.keras")):
        return State.STATELESS, None  # a TensorFlow op not known to be stateful
    if name.startswith(("numpy.", "math.")):
        return State.STATELESS, None  # runs once, when the map's function is traced: a constant in the graph
    return State.UNKNOWN, None


def _body_state(module: SourceModule, node: ast.AST, depth: int) -> tuple[State, str | None]:
    worst: tuple[State, str | None] = (State.STATELESS, None)
    for child in ast.walk(node):
        if not isinstance(child, ast.Call):
            continue
        func = child.func
        name = module.call_name(child)
        if name is not None:
            state = _named_state(name)
        elif isinstance(func, ast.Name) and func.id in _CHEAP_BUILTINS:
            continue
        elif isinstance(func, ast.Attribute) and func.attr in _STATEFUL_METHODS:
            return State.STATEFUL, f".{func.attr}()"
        elif isinstance(func, ast.Attribute) and func.attr in _STATELESS_METHODS:
            continue
        elif _bound_makers(module, func) is not None:
            state = _layer_state(module, func)
        elif (definition := _definition(module, func)) is not None and depth < 3:
            state = _definition_state(module, definition, depth + 1)
        else:
            state = State.UNKNOWN, None
        if state[0] is State.STATEFUL:
            return state
        worst = max(worst, state, key=_rank)
    return worst


def _layer_state(module: SourceModule, func: ast.AST) -> tuple[State, str | None]:
    """A name bound to Keras layers or models: stateful when one is a random or lookup layer, stateless when
    each is a layer known to make only stateless ops, unknown otherwise (a layer with weights)."""
    makers = _bound_makers(module, func) or []
    states = [_named_state(name) for name in makers]
    stateful = next((s for s in states if s[0] is State.STATEFUL), None)
    if stateful is not None:
        return stateful
    return (State.STATELESS, None) if states and all(s[0] is State.STATELESS for s in states) else (State.UNKNOWN, None)


def _bound_makers(module: SourceModule, func: ast.AST) -> list[str] | None:
    """The canonical names of the Keras (or TF Hub, tokenizer) makers a name is bound to, with the layers of a
    `Sequential([...])` among them; None when the name is not bound only to such calls."""
    if not isinstance(func, ast.Name):
        return None
    bound = bound_to(module, func.id)  # the file's assignments, indexed once (bindings.py)
    if not bound or not all(isinstance(b, ast.Call) and (module.call_name(b) or "").startswith(_MODEL_MAKERS)
                            for b in bound):
        return None
    makers = []
    for call in bound:
        makers.append(module.call_name(call) or "")
        for inner in ast.walk(call):
            if inner is not call and isinstance(inner, ast.Call) and (name := module.call_name(inner)):
                makers.append(name)
    return [m for m in makers if not m.endswith(("Sequential", "keras.Input"))]


def functions_by_name(module: SourceModule) -> dict[str, list[ast.FunctionDef]]:
    """The file's `def`s by name, in source order: indexed once per file (a mapped function's calls are
    looked up one by one, and a notebook defines hundreds)."""
    index: dict[str, list[ast.FunctionDef]] = {}
    for definition in module.nodes(ast.FunctionDef):
        index.setdefault(definition.name, []).append(definition)
    return index


def _memo(module: SourceModule) -> dict[tuple[str, int, int], object]:
    return {}


def _definition_cost(module: SourceModule, definition: ast.FunctionDef, depth: int) -> Cost:
    """The cost of a function of the file's body, once per function and depth (maps share helpers)."""
    memo, key = module.derived(_memo), ("cost", id(definition), depth)
    if key not in memo:
        memo[key] = max((_body_cost(module, stmt, depth) for stmt in definition.body), default=Cost.TRIVIAL)
    return memo[key]  # type: ignore[return-value]


def _definition_state(module: SourceModule, definition: ast.FunctionDef, depth: int) -> tuple[State, str | None]:
    memo, key = module.derived(_memo), ("state", id(definition), depth)
    if key not in memo:
        worst: tuple[State, str | None] = (State.STATELESS, None)
        for statement in definition.body:
            state = _body_state(module, statement, depth)
            if state[0] is State.STATEFUL:
                worst = state
                break
            worst = max(worst, state, key=_rank)
        memo[key] = worst
    return memo[key]  # type: ignore[return-value]


def _bound_to_a_model(module: SourceModule, func: ast.AST) -> bool:
    """A name the file binds only to Keras layers or models, TF Hub or tokenizer objects."""
    if not isinstance(func, ast.Name):
        return False
    bound = bound_to(module, func.id)  # the file's assignments, indexed once (bindings.py)
    return bool(bound) and all(isinstance(b, ast.Call) and (module.call_name(b) or "").startswith(_MODEL_MAKERS)
                               for b in bound)


_MODEL_MAKERS = ("keras.", "tensorflow_hub.", "keras_hub.", "keras_nlp.", "tensorflow_text.")


def source_name(module: SourceModule, value: Pipeline) -> str | None:
    if not isinstance(value.source, ast.Call):
        return None
    name = module.call_name(value.source)
    if name is None and isinstance(value.source.func, ast.Attribute) and value.source.func.attr == "as_dataset":
        return TFDS_AS_DATASET
    return name


def reads_files(module: SourceModule, value: Pipeline) -> bool:
    return source_name(module, value) in FILE_SOURCES


def in_memory(module: SourceModule, value: Pipeline) -> bool:
    """Built from arrays or literals already in memory (not files, not a generator, not a parameter)."""
    return source_name(module, value) in _IN_MEMORY


def tiny(module: SourceModule, value: Pipeline) -> bool:
    """`range(10)`, `from_tensor_slices([1, 2, 3])`, `from_tensor_slices(np.random.rand(64, 10))`: a source
    of a few elements written in the script (issue 25, item 3: toy data of feature demos)."""
    if not isinstance(value.source, ast.Call) or not in_memory(module, value):
        return False
    func = value.source.func
    if isinstance(func, ast.Attribute) and func.attr == "from_tensors":
        # One element, however large: `from_tensors(x).repeat(64)` serves the same tensor 64 times (issue 39).
        repeats = [argument(call, "count", 0) for op, call in value.ops if op == "repeat"]
        counts = [constant(r) for r in repeats]
        return all(isinstance(c, int) and not isinstance(c, bool) and 0 <= c < _SMALL for c in counts)
    first = argument(value.source, "tensors", 0) or (value.source.args[0] if value.source.args else None)
    first = _literal_behind(module, first)
    count = constant(first)
    if isinstance(count, int) and not isinstance(count, bool):
        return count < _SMALL
    if isinstance(first, ast.Tuple) and first.elts and all(_made_rows(e) is not None for e in first.elts):
        return all(0 <= _made_rows(e) < _SMALL for e in first.elts)  # type: ignore[operator]
    if isinstance(first, (ast.List, ast.Tuple)):
        return len(first.elts) < _SMALL and all(isinstance(e, (ast.Constant, ast.List, ast.Tuple)) for e in first.elts)
    rows = _made_rows(first)
    return rows is not None and rows < _SMALL


def _literal_behind(module: SourceModule, node: ast.AST | None) -> ast.AST | None:
    """`vecs = [[1.0, 2.0], [3.0, 4.0]]` then `from_tensor_slices(vecs)`: the literal or array maker a name is
    bound to, when the file binds that name once (more than once: which value reaches the call is unknown) and
    nothing else reaches it (`paths = []` filled by a loop over `os.walk`: the twenty-ninth held-out set)."""
    if not isinstance(node, ast.Name) or values_besides_assignment(module, node.id):
        return node
    bound = [a for a in module.nodes(ast.Assign) if len(a.targets) == 1 and isinstance(a.targets[0], ast.Name)
             and a.targets[0].id == node.id]
    if len(bound) != 1:
        return node
    value = bound[0].value
    if isinstance(value, (ast.List, ast.Tuple)) or _made_rows(value) is not None:
        return value
    return node


# Array makers whose first argument is the shape (or the first dimension): np.zeros((64, 10)),
# np.random.rand(64, 10), tf.random.normal([64, 10]).
_MAKERS = frozenset({"zeros", "ones", "empty", "full", "rand", "randn", "normal", "uniform", "random",
                     "standard_normal", "random_sample"})


def _made_rows(node: ast.AST | None) -> int | None:
    """How many rows an array made in the script has, when its shape is written as literals."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if name not in _MAKERS:
        return None
    shape = node.args[0]
    first = shape.elts[0] if isinstance(shape, (ast.Tuple, ast.List)) and shape.elts else shape
    rows = constant(first)
    return rows if isinstance(rows, int) and not isinstance(rows, bool) else None


def pipeline_cost(module: SourceModule, value: Pipeline) -> Cost:
    """The most expensive per-element work of a pipeline: its source and the functions it maps."""
    source = source_name(module, value)
    worst = Cost.TRIVIAL
    if source == "tf.data.Dataset.list_files":
        worst = Cost.TRIVIAL  # file names: what reads them is the map or interleave that follows
    elif reads_files(module, value):
        worst = Cost.EXPENSIVE
    elif value.source is None or source == "tf.data.Dataset.from_generator":
        worst = Cost.UNKNOWN  # a parameter, or a generator that may read files or slice arrays
    for op, call in value.ops:
        if op in ("map", "filter", "interleave", "flat_map", "map_with_legacy_function"):
            worst = max(worst, function_cost(module, argument(call, "map_func", 0) or argument(call, "predicate", 0)))
        if worst is Cost.EXPENSIVE:
            return worst
    return worst
