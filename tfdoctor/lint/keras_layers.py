"""Recognising Keras layers in a script: constructor calls, and which layer a call applies.

Layers are applied three ways: in a `Sequential([...])` list, with `model.add(layer)`, or functionally
`y = Layer(...)(x)` / `self.conv = Conv2D(...)` then `self.conv(x)` in a subclassed model. `applied_layer`
maps an application back to the constructor call so rules can read its arguments.
"""

from __future__ import annotations

import ast
from functools import cached_property

from tfdoctor.lint.source import SourceModule, argument, constant

_CONV = ("Conv1D", "Conv2D", "Conv3D", "Convolution1D", "Convolution2D", "Convolution3D", "Conv1DTranspose",
         "Conv2DTranspose", "Conv3DTranspose", "Convolution2DTranspose", "Convolution3DTranspose",
         "SeparableConv1D", "SeparableConv2D", "SeparableConvolution1D", "SeparableConvolution2D",
         "DepthwiseConv1D", "DepthwiseConv2D")
CONV_LAYERS = frozenset(f"keras.layers.{n}" for n in _CONV)
POOLING_LAYERS = frozenset(f"keras.layers.{k}{d}" for k in ("MaxPooling", "AveragePooling", "MaxPool", "AvgPool",
                                                          "GlobalMaxPooling", "GlobalAveragePooling")
                           for d in ("1D", "2D", "3D"))
BATCH_NORM_LAYERS = frozenset({"keras.layers.BatchNormalization", "keras.layers.experimental.SyncBatchNormalization",
                               "keras.layers.SyncBatchNormalization"})
DENSE_LAYERS = frozenset({"keras.layers.Dense"})


def layer_class(module: SourceModule, call: ast.Call) -> str | None:
    """The canonical class name when `call` constructs a Keras layer (`keras.layers.Conv2D`)."""
    name = module.call_name(call)
    return name if name and name.startswith("keras.layers.") else None


class LayerIndex:
    """Constructor calls of the module and the `self.<attr>` they are stored in, per class."""

    def __init__(self, module: SourceModule) -> None:
        self.module = module

    @cached_property
    def constructors(self) -> list[tuple[ast.Call, str]]:
        # From the calls already grouped by name (each call qualified once, in one pass), in source order.
        found = [(call, name) for name, calls in self.module.calls_by_name.items()
                 if name.startswith("keras.layers.") for call in calls]
        return sorted(found, key=lambda pair: (pair[0].lineno, pair[0].col_offset))

    @cached_property
    def attributes(self) -> dict[tuple[int, str], ast.Call]:
        """(id of ClassDef, attribute) → constructor, from `self.attr = Layer(...)`."""
        found: dict[tuple[int, str], ast.Call] = {}
        for assign in self.module.nodes(ast.Assign):
            if not (isinstance(assign.value, ast.Call) and layer_class(self.module, assign.value)):
                continue
            for target in assign.targets:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and \
                        target.value.id == "self":
                    cls = self._class_of(assign)
                    if cls is not None:
                        found[(id(cls), target.attr)] = assign.value
        return found

    def _class_of(self, node: ast.AST) -> ast.ClassDef | None:
        return next((a for a in self.module.ancestors(node) if isinstance(a, ast.ClassDef)), None)

    def applied_layer(self, call: ast.Call) -> ast.Call | None:
        """For `Layer(...)(x)` or `self.attr(x)`, the constructor call of the layer applied; else None."""
        func = call.func
        if isinstance(func, ast.Call) and layer_class(self.module, func):
            return func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            cls = self._class_of(call)
            if cls is not None:
                return self.attributes.get((id(cls), func.attr))
        return None

    def layer_of_value(self, node: ast.AST, before: ast.AST) -> ast.Call | None:
        """The layer whose output `node` is: an application, or a name last assigned one before `before`."""
        if isinstance(node, ast.Call):
            return self.applied_layer(node)
        if not isinstance(node, ast.Name):
            return None
        scope = self.module.scope_of(before)
        best: ast.Assign | None = None
        for assign in self.module.nodes(ast.Assign):
            if assign.lineno >= getattr(before, "lineno", 0) or not isinstance(assign.value, ast.Call):
                continue
            if any(isinstance(t, ast.Name) and t.id == node.id for t in assign.targets) and \
                    self.module.scope_of(assign) is scope and (best is None or assign.lineno > best.lineno):
                best = assign
        return self.applied_layer(best.value) if best is not None else None  # type: ignore[arg-type]


def layer_index(module: SourceModule) -> LayerIndex:
    return module.derived(LayerIndex)


def mixed_precision_policy(module: SourceModule) -> tuple[str, ast.Call] | None:
    """The global mixed precision policy the script sets (`mixed_float16`/`mixed_bfloat16`), with its call."""
    setters = [c for name, calls in module.calls_by_name.items() if name.startswith("keras.") and
               name.rsplit(".", 1)[-1] in ("set_global_policy", "set_policy", "set_dtype_policy") for c in calls]
    for call in sorted(setters, key=lambda c: (c.lineno, c.col_offset)):
        value = argument(call, "policy", 0)
        if isinstance(value, ast.Call) and (module.call_name(value) or "").endswith(("Policy", "DTypePolicy")):
            value = argument(value, "name", 0)
        if isinstance(value, ast.Name):  # policy = Policy("mixed_float16"); set_global_policy(policy)
            value = _assigned_policy(module, value.id)
        text = constant(value)
        if isinstance(text, str) and text.startswith("mixed_"):
            return text, call
    return None


def _assigned_policy(module: SourceModule, name: str) -> ast.AST | None:
    for assign in module.nodes(ast.Assign):
        if any(isinstance(t, ast.Name) and t.id == name for t in assign.targets):
            value = assign.value
            if isinstance(value, ast.Call):
                return argument(value, "name", 0)
            return value
    return None


def under_policy(module: SourceModule, policy_call: ast.Call, node: ast.AST) -> bool:
    """Whether a layer constructed at `node` is built under a policy set by `policy_call`.

    A policy set at module level applies to what runs after it (and to every function: they are called
    later, in practice); set inside a function, it applies from that call on: to that function's later
    lines and to the functions it calls after it (two calls deep), not to the whole file.
    """
    if _on_the_other_branch(module, policy_call, node):
        return False
    scope = module.scope_of(policy_call)
    node_scope = module.scope_of(node)
    line = policy_call.lineno
    if scope is module.tree:
        return node_scope is not module.tree or getattr(node, "lineno", 0) > line
    if node_scope is scope:
        return getattr(node, "lineno", 0) > line
    reached = module.derived(_PolicyReach).names(policy_call, scope, line)
    return isinstance(node_scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and node_scope.name in reached


def _branches(module: SourceModule, node: ast.AST) -> list[tuple[str, bool]]:
    """Each `if` the node sits in, as (its test, written out; whether the node is in its else branch)."""
    found = []
    child, parent = node, module.parents.get(node)
    while parent is not None:
        if isinstance(parent, ast.If) and child is not parent.test:
            found.append((ast.dump(parent.test), any(child is s for s in parent.orelse)))
        child, parent = parent, module.parents.get(parent)
    return found


def _on_the_other_branch(module: SourceModule, policy_call: ast.Call, node: ast.AST) -> bool:
    """`if use_mixed: set_global_policy("mixed_float16")` … `if use_mixed: …float32… else: <node>`: the node
    runs only when the policy is not set (a twelfth held-out set's false SRC111, 2026-12-06)."""
    guards = {test for test, in_else in _branches(module, policy_call) if not in_else}
    return any(in_else and test in guards for test, in_else in _branches(module, node))


class _PolicyReach:
    """Functions called after each policy call, computed once per call (rules ask for every layer)."""

    def __init__(self, module: SourceModule) -> None:
        self.module = module
        self.cache: dict[int, set[str]] = {}

    def names(self, policy_call: ast.Call, scope: ast.AST, line: int) -> set[str]:
        if id(policy_call) not in self.cache:
            self.cache[id(policy_call)] = _called_after(self.module, scope, line, depth=2)
        return self.cache[id(policy_call)]


def _called_after(module: SourceModule, scope: ast.AST, line: int, depth: int) -> set[str]:
    names: set[str] = set()
    for call in ast.walk(scope):
        if isinstance(call, ast.Call) and getattr(call, "lineno", 0) > line:
            func = call.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            if name:
                names.add(name)
    if depth > 1:
        for f in module.nodes(ast.FunctionDef):
            if f.name in names:
                names |= _called_after(module, f, 0, depth - 1)
    return names
