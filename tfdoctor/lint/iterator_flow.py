"""Where a TensorFlow 1 iterator's batches go in its file (issue 39, item 1: a pipeline consumed by training).

In TensorFlow 1 a pipeline ends in `ds.make_initializable_iterator()` and its batches (`iterator.get_next()`) go
wherever the graph takes them; "the file trains" does not say that *this* pipeline feeds the training op. A file
that builds a training and a validation pipeline and uses the second only for an image summary every few hundred
steps trains on the first; prefetching the second makes nothing measurably faster (held-out set 12: all five false
SRC102 and five false SRC103 findings it shows were such pipelines).

`batch_flow` follows the batches forward by name, in source order, within the file: into the names an assignment,
a `for` target or an augmented assignment binds from them, into a call's result, and into the object whose method
is handed them (`model.build(batches)` may keep them in `model`). It stops where they reach an optimizer (the
pipeline trains), a session run or `eval` (the graph runs them: a training or an evaluation loop), or code it
cannot follow: a `return`, a `yield`, an attribute, a `with`, a lambda or a comprehension, a function of this file
(which may train on them), any other use of the iterator than `get_next()` and `initializer` (a feedable
iterator's `string_handle()`). Only batches that end in calls whose results nothing runs are "nowhere". Names are
matched across the file: two pipelines in two functions with one name merge, which can only make a pipeline look
more used, never less.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass
from enum import Enum

from tfdoctor.lint.costs import functions_by_name
from tfdoctor.lint.source import LOOPS, SourceModule, called_name

# Calls that turn a loss into an optimizer step: batches that reach one are what the file trains on.
# Keras' training calls take tensors in TensorFlow 1 too (`model.fit(images, labels, steps_per_epoch=...)`).
_OPTIMIZER_CALLS = frozenset({"minimize", "compute_gradients", "apply_gradients", "gradients", "fit",
                              "fit_generator", "train_on_batch"})
# Calls that evaluate graph tensors: a session's `run`, a tensor's `eval`, Keras' evaluation (a training or an
# evaluation loop).
_RUN_CALLS = frozenset({"run", "eval", "evaluate", "predict", "test_on_batch", "predict_on_batch"})
# Uses of the iterator itself that are not its batches and hand nothing on.
_ITERATOR_OWN = frozenset({"get_next", "initializer"})
_TF1_ITERATORS = frozenset({"make_one_shot_iterator", "make_initializable_iterator"})
_TF1_ITERATOR_SUFFIXES = tuple(f".{name}" for name in _TF1_ITERATORS)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


class Reach(Enum):
    """How far an iterator's batches visibly go."""

    TRAINS = "trains"  # the batches reach an optimizer
    RUNS = "runs"  # they reach a session run or eval, not visibly an optimizer
    UNSEEN = "unseen"  # they leave what this file shows (returned, stored in an attribute, a string handle)
    NOWHERE = "nowhere"  # they end in calls whose results nothing here runs (an image summary, an unused graph)


@dataclass(frozen=True)
class BatchFlow:
    """Where one iterator's batches go: how far they reach, and for NOWHERE the calls they went into."""

    reach: Reach
    into: tuple[str, ...] = ()  # for NOWHERE: the calls the batches went into, in source order


def batch_flow(module: SourceModule, iterator_call: ast.Call) -> BatchFlow:
    """Where the batches of the iterator `iterator_call` makes (`ds.make_initializable_iterator()`,
    `tf.data.make_one_shot_iterator(ds)`) go in this file."""
    known = module.derived(_flow_cache)
    if id(iterator_call) not in known:
        known[id(iterator_call)] = _Follower(module).follow(iterator_call)
    return known[id(iterator_call)]


def trained_by_another(module: SourceModule, iterator_call: ast.Call) -> int | None:
    """The line of another TF1 iterator of this file whose batches visibly reach an optimizer, when this one's
    reach nothing that runs; else None."""
    if batch_flow(module, iterator_call).reach is not Reach.NOWHERE:
        return None
    return module.derived(_first_trained)  # a NOWHERE iterator is never the one that trains


def _first_trained(module: SourceModule) -> int | None:
    return next((call.lineno for call in module.derived(_iterator_calls)
                 if batch_flow(module, call).reach is Reach.TRAINS), None)


def is_iterator_call(module: SourceModule, call: ast.Call) -> bool:
    """`ds.make_initializable_iterator()`, `ds.make_one_shot_iterator()`, `tf.data.make_one_shot_iterator(ds)`."""
    return called_name(call) in _TF1_ITERATORS or (module.call_name(call) or "").endswith(_TF1_ITERATOR_SUFFIXES)


def _iterator_calls(module: SourceModule) -> list[ast.Call]:
    return [call for call in module.calls if is_iterator_call(module, call)]


def _flow_cache(module: SourceModule) -> dict[int, BatchFlow]:
    return {}


# Steps (expressions followed, loads scanned) all of a file's iterators may take together. Each follows its own
# batches, so n iterators handing theirs to one object's methods would each walk that object's n uses: quadratic on
# a hostile file. The corpora's 243 files with TF1 iterators take at most 12,408 (an Object Detection API test);
# past the budget an iterator is UNSEEN, and lint says what it said before it followed batches at all.
BUDGET = 50_000


@dataclass
class _Budget:
    """The steps a file's iterator flows have left (shared by all of them: one per file, `module.derived`)."""

    left: int


def _budget(module: SourceModule) -> _Budget:
    return _Budget(BUDGET)


def _loads_by_name(module: SourceModule) -> dict[str, list[ast.Name]]:
    found: dict[str, list[ast.Name]] = defaultdict(list)
    for name in module.nodes(ast.Name):
        if isinstance(name.ctx, ast.Load):
            found[name.id].append(name)
    return found


class _Follower:
    def __init__(self, module: SourceModule) -> None:
        self.module = module
        self.loads = module.derived(_loads_by_name)
        self.own_functions = module.derived(functions_by_name)
        self.since: dict[str, tuple[int, int]] = {}  # name → the earliest position from which it holds batches
        self.pending: list[ast.AST] = []
        self.into: list[ast.Call] = []
        self.runs = False
        self.unseen = False

    def follow(self, iterator_call: ast.Call) -> BatchFlow:
        parent = self.module.parents.get(iterator_call)
        if isinstance(parent, ast.Attribute):
            self._iterator_used(parent)
        else:
            statement = self._statement(iterator_call)
            targets = _bound_names(statement, iterator_call) if statement is not None else None
            if not targets:
                return BatchFlow(Reach.UNSEEN)
            for target in targets:
                for use in self._uses_after(target.id, self._effective(statement)):
                    self._iterator_used(self.module.parents.get(use))
        budget = self.module.derived(_budget)
        while self.pending:
            budget.left -= 1
            if budget.left < 0:
                return BatchFlow(Reach.UNSEEN)
            outcome = self._taint(self.pending.pop())
            if outcome is not None:
                return BatchFlow(outcome)
        if self.unseen:
            return BatchFlow(Reach.UNSEEN)
        if self.runs:
            return BatchFlow(Reach.RUNS)
        into = sorted(self.into, key=lambda c: (c.lineno, c.col_offset))
        return BatchFlow(Reach.NOWHERE, tuple(dict.fromkeys(f"{called_name(c)}()" for c in into)))

    def _iterator_used(self, parent: ast.AST | None) -> None:
        """One use of the iterator: `.get_next()` yields batches, `.initializer` hands nothing on, and anything
        else (a string handle, the iterator passed to a function) is out of sight."""
        if isinstance(parent, ast.Attribute) and parent.attr in _ITERATOR_OWN:
            call = self.module.parents.get(parent)
            if parent.attr == "get_next" and isinstance(call, ast.Call) and call.func is parent:
                self.pending.append(call)
            return
        self.unseen = True

    def _taint(self, node: ast.AST) -> Reach | None:
        """Follow one expression that holds batches up to its statement; TRAINS ends the search at once."""
        parents = self.module.parents
        child, current = node, parents.get(node)
        while current is not None and not isinstance(current, ast.stmt):
            if isinstance(current, ast.Call):
                name = called_name(current)
                if child is not current.func:  # the batches are an argument
                    if name in _OPTIMIZER_CALLS:
                        return Reach.TRAINS
                    if name in _RUN_CALLS:
                        self.runs = True
                        return None
                    if name in self.own_functions:
                        self.unseen = True  # a function of this file may train on them: not followed into
                        return None
                    self.into.append(current)
                    self._mutates(current)
                elif name in _RUN_CALLS:  # `batches.eval()`
                    self.runs = True
                    return None
            elif isinstance(current, (ast.Yield, ast.YieldFrom, ast.Lambda, ast.NamedExpr, ast.comprehension)):
                self.unseen = True  # a lambda, a walrus or a comprehension binds where this does not follow
                return None
            child, current = current, parents.get(current)
        if current is None:
            return None
        self._statement_reached(current, child)
        return None

    def _statement_reached(self, statement: ast.stmt, value: ast.AST) -> None:
        if isinstance(statement, (ast.Return, ast.With, ast.AsyncWith, ast.Global, ast.Nonlocal)):
            self.unseen = True
            return
        if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
            if isinstance(statement, (ast.For, ast.AsyncFor)) and value is not statement.iter:
                return  # a use in the loop's body is its own statement
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            for target in targets:
                if value is target:
                    continue
                for bound in ast.walk(target):
                    if isinstance(bound, ast.Name):
                        self._holds(bound.id, statement)
                    elif isinstance(bound, (ast.Attribute, ast.Subscript)) and isinstance(bound.ctx, ast.Store):
                        base = bound.value
                        if isinstance(base, ast.Name) and isinstance(bound, ast.Subscript):
                            self._holds(base.id, statement)  # `feeds["x"] = batches`
                        else:
                            self.unseen = True  # `self.images = batches`: read wherever `self` goes
            return
        # an expression statement, an `if` test, an assert: what the calls in it took was recorded on the way

    def _mutates(self, call: ast.Call) -> None:
        """`model.build(batches)`: the method may keep them in `model`, so later uses of `model` hold them (not
        `tf.reshape(batches)`: a module's function keeps nothing in the module)."""
        func = call.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
                self.module.call_name(call) is None:
            statement = self._statement(call)
            if statement is not None:
                self._holds(func.value.id, statement)

    def _holds(self, name: str, statement: ast.stmt) -> None:
        start = self._effective(statement)
        known = self.since.get(name)
        if known is not None and known <= start:
            return
        self.since[name] = start
        self.pending.extend(self._uses_after(name, start))

    def _uses_after(self, name: str, start: tuple[int, int]) -> list[ast.AST]:
        """Loads of `name` that run after `start`: later in the file, or in a function (called any time)."""
        uses = self.loads.get(name, ())
        self.module.derived(_budget).left -= len(uses)
        return [use for use in uses
                if (use.lineno, use.col_offset) > start or self._in_function(use)]

    def _effective(self, statement: ast.stmt) -> tuple[int, int]:
        """Where a binding starts to hold: the statement, or the start of the outermost loop around it (the
        loop's next turn runs the lines above it again)."""
        start = (statement.lineno, statement.col_offset)
        for ancestor in self.module.ancestors(statement):
            if isinstance(ancestor, _FUNCTIONS):
                break
            if isinstance(ancestor, LOOPS):
                start = (ancestor.lineno, ancestor.col_offset)
        return start

    def _in_function(self, node: ast.AST) -> bool:
        return any(isinstance(a, _FUNCTIONS) for a in self.module.ancestors(node))

    def _statement(self, node: ast.AST) -> ast.stmt | None:
        for ancestor in self.module.ancestors(node):
            if isinstance(ancestor, ast.stmt):
                return ancestor
        return None


def _bound_names(statement: ast.stmt, value: ast.AST) -> list[ast.Name]:
    """`it = ds.make_initializable_iterator()`: the plain names the statement binds to `value` itself."""
    if isinstance(statement, ast.Assign) and statement.value is value:
        return [t for t in statement.targets if isinstance(t, ast.Name)]
    if isinstance(statement, ast.AnnAssign) and statement.value is value and isinstance(statement.target, ast.Name):
        return [statement.target]
    return []
