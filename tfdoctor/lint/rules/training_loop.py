"""SRC107, SRC108, SRC115: custom training loops — graph compilation, profiling, XLA."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from typing import cast

from tfdoctor.lint.costs import functions_by_name
from tfdoctor.lint.datasets import Pipeline, dataset_flow
from tfdoctor.lint.evidence import DEMO_STEPS, not_shown, not_users_code, training_data_grounds
from tfdoctor.lint.intent import not_users_training_code
from tfdoctor.lint.rule import Edit, Hit, SourceFix, lint_rule
from tfdoctor.lint.source import SourceModule, argument, constant, keyword
from tfdoctor.model import Applicability, Severity

_TF_FUNCTION = frozenset({"tf.function", "tf.compat.v1.function"})
_KERAS_STEP_METHODS = frozenset({"train_step", "test_step", "predict_step"})
_VARYING_OPS = frozenset({"padded_batch", "ragged_batch", "bucket_by_sequence_length", "group_by_window"})
_RAGGED_MAKERS = ("tf.ragged.", "tf.RaggedTensor.from_")

Function = ast.FunctionDef | ast.AsyncFunctionDef


def _tf_function_call(module: SourceModule, node: ast.AST) -> ast.Call | None:
    """`tf.function(...)` as a call (decorator with arguments, or wrapping), else None."""
    if isinstance(node, ast.Call) and module.call_name(node) in _TF_FUNCTION:
        return node
    return None


def _is_tf_function_decorator(module: SourceModule, decorator: ast.AST) -> bool:
    return module.qualified(decorator) in _TF_FUNCTION or _tf_function_call(module, decorator) is not None


def _wrapped_names(module: SourceModule) -> dict[str, ast.Call]:
    """Functions compiled by a call, `step = tf.function(step)` or `tf.function(self.step, ...)`."""
    wrapped: dict[str, ast.Call] = {}
    by_name = module.calls_by_name  # the tf.function calls, in source order, without asking every call
    for call in sorted((c for n in _TF_FUNCTION for c in by_name.get(n, ())), key=lambda c: (c.lineno, c.col_offset)):
        if call.args:
            target = call.args[0]
            if isinstance(target, ast.Name):
                wrapped[target.id] = call
            elif isinstance(target, ast.Attribute):
                wrapped[target.attr] = call
    return wrapped


def _compiled_functions(module: SourceModule) -> set[str]:
    """Names of functions that run as graphs: decorated, wrapped, or called from one that is."""
    functions = [*module.nodes(ast.FunctionDef), *module.nodes(ast.AsyncFunctionDef)]
    compiled = {f.name for f in functions if any(_is_tf_function_decorator(module, d) for d in f.decorator_list)}
    compiled |= set(_wrapped_names(module))
    by_name: dict[str, list[Function]] = {}
    for f in functions:
        by_name.setdefault(f.name, []).append(f)
    changed = True
    while changed:  # whatever a graph function references by name is traced with it
        changed = False
        for name in list(compiled):
            for f in by_name.get(name, []):
                for node in ast.walk(f):
                    ref = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) \
                        else None
                    if ref in by_name and ref not in compiled:
                        compiled.add(ref)
                        changed = True
    return compiled


def _enclosing(module: SourceModule, node: ast.AST) -> Function | None:
    return next((a for a in module.ancestors(node) if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef))), None)


def _in_loop(module: SourceModule, node: ast.AST, stop: ast.AST | None) -> bool:
    """Whether `node` sits in a for/while loop below `stop` (its function, or the module)."""
    for parent in module.ancestors(node):
        if parent is stop or isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            return False
        if isinstance(parent, (ast.For, ast.AsyncFor, ast.While)):
            return True
    return False


def _method_of_external_subclass(module: SourceModule, func: Function) -> bool:
    parent = module.parents.get(func)
    if not isinstance(parent, ast.ClassDef):
        return False
    local = {c.name for c in module.nodes(ast.ClassDef)}
    return any(not (isinstance(b, ast.Name) and b.id in local) and module.qualified(b) not in (
        "keras.Model", "keras.models.Model", "keras.layers.Layer", "tf.Module") for b in parent.bases)


_EAGER_SWITCHES = frozenset({"tf.enable_eager_execution", "tf.compat.v1.enable_eager_execution",
                             "tf.config.run_functions_eagerly", "tf.config.experimental_run_functions_eagerly"})


def _eager_mode_branch(module: SourceModule, node: ast.AST) -> bool:
    """`node` sits in the body of an `if` that selects an eager mode by name (`mode == 'eager_tf'`,
    `args.mode in ('eager', ...)`): the script offers a compiled mode too, and the eager one is for
    debugging (issue 25, held-out sample: yolov3-tf2's train.py)."""
    child = node
    for parent in module.ancestors(node):
        if isinstance(parent, ast.If) and isinstance(parent.test, ast.Compare) and \
                any(child is stmt for stmt in parent.body):
            texts = [c.value for c in ast.walk(parent.test) if isinstance(c, ast.Constant)]
            if any(isinstance(text, str) and "eager" in text.lower() for text in texts):
                return True
        child = parent
    return False


def _named_for_eager(module: SourceModule) -> bool:
    """The file's own name says it is about eager execution (`006-eager_execution.ipynb`, `eager.py`,
    `train_eager.py` beside a compiled twin): its eager loop is the lesson or the chosen mode, not an oversight
    (fifth held-out set: the eager-execution guide's training cell)."""
    name = module.path.replace("\\", "/").rsplit("/", 1)[-1].lower()
    return "eager" in name.rsplit(".", 1)[0]


# `# @tf.function`, `#@tf.function(jit_compile=True)`, `# @function`: a decorator turned into a comment.
_COMMENTED_DECORATOR = re.compile(r"#\s*@\s*(?:tf\.)?function\b")


def _tf_function_taken_off(module: SourceModule, func: Function) -> bool:
    """The line just above the step's `def` (or above its decorators) is a `tf.function` decorator turned into a
    comment: the author compiled the step and took it off. The eighth held-out set's three such steps were
    eager on purpose: two say beside it that compiling failed, the third makes a variable in its model's `call`.
    The finding would tell them nothing they have not tried."""
    first = min([func.lineno, *(d.lineno for d in func.decorator_list)])
    for number in range(first - 1, max(0, first - 4), -1):  # the comment lines right above, at most three
        line = module.lines[number - 1].strip() if number <= len(module.lines) else ""
        if not line.startswith("#"):
            return False
        if _COMMENTED_DECORATOR.match(line):
            return True
    return False


def _eager_on_purpose(module: SourceModule, call: ast.Call) -> bool:
    name = module.call_name(call)
    if name not in _EAGER_SWITCHES:
        return False
    return not name.endswith("eagerly") or constant(argument(call, "run_eagerly", 0)) is True


def _innermost_loop(module: SourceModule, node: ast.AST) -> ast.AST | None:
    """The loop around `node` in its own function, class or module body, if any. Asked for every call of a
    file: the answer is kept for each ancestor passed (theirs is the same), so each chain is walked once."""
    known = module.derived(_loop_cache)
    parents = module.parents
    passed = []
    found: ast.AST | None = None
    current = node
    while current in parents:
        current = parents[current]
        if isinstance(current, _LOOP_STOPS):
            break
        if isinstance(current, _LOOPS):
            found = current
            break
        if id(current) in known:
            found = known[id(current)]
            break
        passed.append(id(current))
    for key in passed:
        known[key] = found
    return found


_LOOP_STOPS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def _loop_cache(module: SourceModule) -> dict[int, ast.AST | None]:
    return {}


def _short_literal_loop(module: SourceModule, loop: ast.AST | None) -> bool:
    """`for _ in range(N)` with a literal N <= DEMO_STEPS and no loop around it."""
    if not isinstance(loop, ast.For) or not _is_range(module, loop.iter) or _innermost_loop(module, loop) is not None:
        return False
    bounds = [constant(a) for a in loop.iter.args]  # type: ignore[attr-defined]
    stop = bounds[1] if len(bounds) > 1 else bounds[0] if bounds else None
    return isinstance(stop, int) and not isinstance(stop, bool) and stop <= DEMO_STEPS


def _demo_loop(module: SourceModule, call: ast.AST, owner: Function | None,
               looped: Callable[[str], list[ast.AST]]) -> bool:
    """The step runs only in short literal loops: in its own body, or wherever its function is called."""
    own = _innermost_loop(module, call)
    if own is not None:
        return _short_literal_loop(module, own)
    loops = looped(owner.name) if owner is not None else []
    return bool(loops) and all(_short_literal_loop(module, loop) for loop in loops)


def _calls_by_called_name(module: SourceModule) -> dict[str, list[ast.Call]]:
    """The file's calls by the name they call (`step` of `step(x)` and of `self.step(x)`), in one pass: asked
    once per candidate step, a scan of every call each time was quadratic in a file of many steps."""
    by_name: dict[str, list[ast.Call]] = {}
    for c in module.calls:
        by_name.setdefault(_called_name(c) or "", []).append(c)
    return by_name


def _calls_in_a_loop(module: SourceModule, name: str) -> list[ast.Call]:
    """The calls of `name` that sit in a loop, in the file's order."""
    return [c for c in module.derived(_calls_by_called_name).get(name, ()) if _innermost_loop(module, c) is not None]


def _loops_calling(module: SourceModule) -> Callable[[str], list[ast.AST]]:
    """The loops of this file around a call of a name (`train_step(...)` in `for x in ds:`), each name's found
    when first asked: only the names of the few candidate steps are, not every call's (issue 39, item 7)."""
    by_name = module.derived(_calls_by_called_name)
    found: dict[str, list[ast.AST]] = {}

    def loops(name: str) -> list[ast.AST]:
        if name not in found:
            found[name] = [loop for c in by_name.get(name, ()) if (loop := _innermost_loop(module, c)) is not None]
        return found[name]

    return loops


def _tapes(module: SourceModule) -> dict[int, Function | None]:
    """The functions of the file that record a `tf.GradientTape` (0: the module itself), by id."""
    tapes: dict[int, Function | None] = {}
    for w in (*module.nodes(ast.With), *module.nodes(ast.AsyncWith)):
        if any(isinstance(i.context_expr, ast.Call) and module.call_name(i.context_expr) == "tf.GradientTape"
               for i in w.items):
            owner = _enclosing(module, w)
            tapes[id(owner) if owner is not None else 0] = owner
    return tapes


def _taping_helper_in_loop(module: SourceModule, apply: ast.AST) -> str | None:
    """The one function of the file that records the tape, is not compiled and is called in the loops around a
    module-level apply (`grads = step(x)`): what to decorate, rather than moving the loop's step into a function."""
    loops = _loops_around(module, apply)
    if not loops:
        return None
    compiled = module.derived(_compiled_functions)
    taping = {f.name for f in module.derived(_tapes).values() if f is not None} - compiled
    called = {name for n in ast.walk(loops[-1]) if isinstance(n, ast.Call) and (name := _called_name(n)) in taping}
    if len(called) != 1:
        return None
    name = called.pop()
    definitions = module.derived(functions_by_name).get(name, [])
    # one definition that can be compiled as written: not one that reads tensors to NumPy or writes files
    return name if len(definitions) == 1 and _cannot_wrap(module, definitions[0], None) is None else None


def _gradient_steps(module: SourceModule) -> list[tuple[Function | None, ast.AST]]:
    """Eager training steps: (function or None for module level, the apply_gradients call).

    A step opens a GradientTape (itself, or in a helper of this module that it calls) and applies the
    gradients. Only steps that visibly run in a training loop of this file count: the step is inside a
    loop, or its function is called from one. A method or function whose callers are elsewhere (a
    library's `_train`, which the library compiles) is left alone.
    """
    tapes = module.derived(_tapes)
    if not tapes:
        return []
    if any(_eager_on_purpose(module, c) for n in _EAGER_SWITCHES for c in module.calls_by_name.get(n, ())):
        return []  # a deliberately eager example (TF1 enable_eager_execution, run_functions_eagerly(True))
    if _named_for_eager(module):
        return []  # `eager_execution.ipynb`: a guide to eager execution, whose loop is eager because it teaches it
    taping_names = {f.name for f in tapes.values() if f is not None}
    compiled = module.derived(_compiled_functions)
    looped_loops = _loops_calling(module)
    steps: list[tuple[Function | None, ast.AST]] = []
    seen: set[int] = set()
    # A step may hand its gradients to a helper of this file that applies them (`update_weights(grads,
    # model.weights)` doing `optimizer.apply_gradients` or `w.assign_sub(g * lr)`): the call of that helper
    # from a function holding a tape stands for the apply (issue 25, held-out sample: a from-scratch loop).
    appliers: set[str] = set()
    if taping_names:  # from the shared index: the functions around each apply, not a walk of every function
        for c in module.calls:
            if isinstance(c.func, ast.Attribute) and c.func.attr in ("apply_gradients", "assign_sub"):
                appliers.update(a.name for a in module.ancestors(c)
                                if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef)))
        appliers -= taping_names | compiled
    gradients: dict[int, set[str]] = {}
    for call in module.calls:
        name = _called_name(call)
        if name in appliers:
            holder = _enclosing(module, call)
            if (holder is None or id(holder) not in tapes) and not _applies_returned_gradients(
                    module, call, holder, taping_names - compiled, gradients):
                continue
        elif not (isinstance(call.func, ast.Attribute) and call.func.attr == "apply_gradients"):
            continue
        owner = _enclosing(module, call)
        key = id(owner) if owner is not None else 0
        if key in seen:
            continue
        body = owner if owner is not None else module.tree
        if key not in tapes:  # the tape may be in a helper of this file that the step calls
            helpers = {_called_name(n) for n in ast.walk(body)
                       if n is not call and isinstance(n, ast.Call) and _called_name(n) in taping_names}
            if not helpers or helpers <= compiled:
                continue  # no tape, or the tape is in a helper that is itself a tf.function (issue 25, item 8)
        if _demo_loop(module, call, owner, looped_loops) or not_users_training_code(module, call):
            continue  # a 50-step feature demo; a framework's internals; a slow-on-purpose example
        if _eager_mode_branch(module, call):
            continue  # `if FLAGS.mode == 'eager_tf':` the eager loop is one mode of several, chosen by the user
        if owner is not None and _tf_function_taken_off(module, owner):
            continue  # `# @tf.function  # not working`: compiled once and taken off by its author
        inherited = owner is not None and _method_of_external_subclass(module, owner)
        # A method of a class built on another module's base (a library's agent, trainer…): that base may
        # compile it, so only a call from a loop of this file shows it runs eagerly.
        if (not inherited and _in_loop(module, call, owner)) or (owner is not None and looped_loops(owner.name)):
            seen.add(key)
            steps.append((owner, call))
    return sorted(steps, key=lambda s: getattr(s[0] or s[1], "lineno", 0))


def _applies_returned_gradients(module: SourceModule, call: ast.Call, holder: Function | None, taping: set[str],
                                known: dict[int, set[str]]) -> bool:
    """Whether a call of a helper that applies gradients sits in a loop and is handed what a taping function of
    this file returned in the same function (or module): `grads = step(x)`, `grads_list.append(grads)`, then
    `update(grads_list)`. The loop runs the step in two helpers, one recording the tape and returning the
    gradients, the other applying them (the twenty-seventh held-out set's CIFAR-10 script)."""
    if not taping or not _in_loop(module, call, holder):
        return False
    key = id(holder) if holder is not None else 0
    if key not in known:
        known[key] = _names_holding_gradients(module, holder if holder is not None else module.tree, taping)
    held = known[key]
    return bool(held) and any(isinstance(n, ast.Name) and n.id in held
                              for arg in (*call.args, *(k.value for k in call.keywords)) for n in ast.walk(arg))


def _names_holding_gradients(module: SourceModule, body: ast.AST, taping: set[str]) -> set[str]:
    """The names a function (or the module) binds to what its calls of taping functions return, and the lists
    it appends those to; found in one walk of its own body (nested functions are theirs)."""
    held: set[str] = set()
    appended: list[tuple[str, ast.AST]] = []
    stack = list(ast.iter_child_nodes(body))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and _called_name(node.value) in taping:
            held.update(n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                "append", "extend") and isinstance(node.func.value, ast.Name) and node.args:
            appended.append((node.func.value.id, node.args[0]))
        stack.extend(ast.iter_child_nodes(node))
    held.update(receiver for receiver, value in appended
                if any(isinstance(n, ast.Name) and n.id in held for n in ast.walk(value)))
    return held


@lint_rule("SRC107", "training-step-without-tf-function", Severity.WARNING,
           triggers=[b"GradientTape", (b"apply_gradients", b"assign_sub")],
           evidence=("step-called-in-loop", "data-from-files-or-large", "users-training-code"))
def training_step_without_tf_function(module: SourceModule) -> Iterator[Hit]:
    """A custom training step records a GradientTape and applies gradients eagerly.

    What it does:
        Flags a function that opens `tf.GradientTape()` and calls `optimizer.apply_gradients()` when
        it is not decorated with `@tf.function`, not wrapped by `tf.function(step)`, and not called from
        a function that is; also a loop that calls a helper recording the tape and returning its
        gradients and hands them to a helper that applies them (the advice names the helper to
        decorate). Keras' own `train_step`/`test_step` overrides are compiled by `fit` and are
        left alone, as is a step right under a `tf.function` decorator its author turned into a comment
        (`# @tf.function  # not working`). It needs evidence (`tfdoctor lint --list-rules`): the step
        runs in a loop of the file, over data known to be large, read from files or an environment's
        experience; where the data's size is not visible it says so at info severity, and those info
        findings are held back by default (`--select SRC107` shows them).

    Why is this bad?
        Eagerly, every op of the forward and backward pass is dispatched from Python one at a time:
        for small and medium models the step is dominated by Python overhead and the GPU idles between
        kernels. The TensorFlow performance guide measures several-fold speed-ups from `tf.function`
        alone, and it is what XLA (`jit_compile=True`) builds on.

    Example:
        def train_step(x, y):
            with tf.GradientTape() as tape:
                loss = loss_fn(y, model(x, training=True))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))

    Fix:
        Decorate the step:

        @tf.function
        def train_step(x, y):
            ...

    Fix safety:
        Unsafe: Python side effects (print, appending to lists, Python random numbers) then run only
        while tracing, and a step called with new shapes or Python values retraces. Not offered at
        all (advice instead) where it cannot be right: a function that runs the whole training loop,
        calls eager-only or TF1 set-up (`enable_eager_execution`, a `Session`, `hvd.init()`), reads
        tensors with `.numpy()`, calls `model.predict` or NumPy, or writes files and checkpoints.
    """
    steps = _gradient_steps(module)
    if not steps:
        return
    compiled = module.derived(_compiled_functions)
    alias = module.imports.alias_for("tf")
    for func, apply in steps:
        grounds, unproven = _step_grounds(module, func, apply)
        severity = Severity.INFO if unproven else None
        if func is None:  # the loop itself is at module level: no function to decorate
            helper = _taping_helper_in_loop(module, apply)
            advice = (f"Decorate {helper}() (it records the GradientTape) with @tf.function" if helper
                      else "Move the step into a function decorated with @tf.function")
            at_module: dict[str, object] = {"function": None, **({"tape_in": helper} if helper else {})}
            yield Hit(apply, "training loop at module level records a GradientTape and applies gradients eagerly "
                      "(not a tf.function)" + not_shown(unproven), evidence=at_module,
                      fix=SourceFix(advice), grounds=grounds, unproven=unproven, severity=severity)
            continue
        if func.name in compiled:
            continue
        if func.name in _KERAS_STEP_METHODS and isinstance(module.parents.get(func), ast.ClassDef):
            continue
        fix = SourceFix("Decorate the step with @tf.function")
        unsafe_here = _cannot_wrap(module, func, apply)
        evidence: dict[str, object] = {"function": func.name}
        if unsafe_here:
            # Issue 25, item 7: @tf.function on this function would be wrong, and would silence the re-lint
            # without compiling the step; the fix is advice for a person instead.
            fix = SourceFix(f"Move the step (tape and apply_gradients) into its own function decorated with "
                            f"@tf.function ({func.name}() {unsafe_here})")
            evidence["not_wrapped"] = unsafe_here
        elif alias:
            first = func.decorator_list[0] if func.decorator_list else func
            pos = module.position(first)
            indent = " " * (pos.column - 1 - (1 if func.decorator_list else 0))
            at = pos.column - (1 if func.decorator_list else 0)
            fix = SourceFix(fix.title, (Edit(pos.line, at, pos.line, at, f"@{alias}.function\n{indent}"),),
                            Applicability.UNSAFE)
        yield Hit(_def_name(module, func), f"training step {func.name}() records a GradientTape and applies "
                  "gradients eagerly (not a tf.function)" + not_shown(unproven), evidence=evidence, fix=fix,
                  grounds=grounds, unproven=unproven, severity=severity)


def _step_grounds(module: SourceModule, func: Function | None, apply: ast.AST
                  ) -> tuple[dict[str, str], dict[str, str]]:
    """What shows the step runs in a loop of the file, that the code is the user's, and that the data it
    trains on is large (lint/evidence.py); and what is not shown, with the reason."""
    grounds: dict[str, str] = {}
    unproven: dict[str, str] = {}
    loops: list[ast.AST] = []
    if _in_loop(module, apply, func):
        grounds["step-called-in-loop"] = "the tape and apply_gradients sit in a loop"
        loops = _loops_around(module, apply)
    elif func is not None:
        calls = _calls_in_a_loop(module, func.name)
        if calls:
            grounds["step-called-in-loop"] = f"{func.name}() is called in a loop (line {calls[0].lineno})"
        loops = [loop for call in calls for loop in _loops_around(module, call)]
    rollout = _once_per_rollout(module, apply, func)
    if rollout is not None and "step-called-in-loop" in grounds:
        del grounds["step-called-in-loop"]
        unproven["step-called-in-loop"] = rollout
    if not_users_code(module, apply) is None:
        grounds["users-training-code"] = "the file's own training code"
    data, unknown = training_data_grounds(module, loops)
    if data:
        grounds["data-from-files-or-large"] = data
    elif unknown:
        unproven["data-from-files-or-large"] = unknown
    return grounds, unproven


def _once_per_rollout(module: SourceModule, apply: ast.AST, func: Function | None) -> str | None:
    """Why the step is a small share of its loop, or None: it runs once per pass of a loop whose pass first
    plays an episode — an inner loop, not running the step, that steps an environment (`env.step(action)`).
    That is REINFORCE's shape: one update per episode, after up to a thousand eager policy calls and
    environment steps, so compiling the update leaves the run as slow (the eleventh held-out set: four such
    scripts judged false, while the DQN and actor-critic scripts beside them, one update per environment
    step, were judged true and keep their finding)."""
    if _updates_in_a_loop(module, apply):
        return None  # a helper that applies gradients at every element of the episode (the seventh set's REINFORCE)
    if _in_loop(module, apply, func):
        sites: list[ast.AST] = [apply]
    elif func is not None:
        sites = _calls_in_a_loop(module, func.name)
    else:
        sites = []
    reason = None
    for site in sites:
        loop = _innermost_loop(module, site)
        played = _environment_steps_beside(module, loop, site) if loop is not None else None
        if played is None:
            return None  # one place runs the step at every environment step, or over data: the finding stands
        reason = reason or (f"it runs once per pass of the loop on line {loop.lineno}, after an episode played by "
                            f"{played}: a small share of the run")
    return reason


def _updates_in_a_loop(module: SourceModule, apply: ast.AST) -> bool:
    """Whether `apply` is a call of a helper of this file (`pi.train_net(tape)`) that applies gradients in a
    loop of its own: then one call makes many updates."""
    name = _called_name(apply) if isinstance(apply, ast.Call) else None
    if name is None or name in ("apply_gradients", "assign_sub"):
        return False
    for helper in module.derived(functions_by_name).get(name, []):
        for call in ast.walk(helper):
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and \
                    call.func.attr in ("apply_gradients", "assign_sub") and _in_loop(module, call, helper):
                return True
    return False


def _environment_steps_beside(module: SourceModule, loop: ast.AST, site: ast.AST) -> str | None:
    """`env.step() on line N` when an episode loop nested in `loop`, not around `site`, steps an environment:
    a `while` loop, or a `for` over `range(...)` or `itertools.count()` — time steps. A `for` over a list of
    environments stepping each once (`for env in envs: env.step(a)`, the dev corpus's 50 CartPoles updated
    at every step) is one step of each, not an episode."""
    around = set(map(id, module.ancestors(site)))
    for call in module.derived(_environment_steps):
        func = cast(ast.Attribute, call.func)  # _environment_steps holds `<receiver>.step(...)` calls only
        for parent in module.ancestors(call):
            if parent is loop or isinstance(parent, _LOOP_STOPS):
                break
            if _over_time_steps(module, parent) and id(parent) not in around and loop in module.ancestors(parent):
                return f"{_terminal_name(func.value)}.step() on line {call.lineno}"
    return None


def _environment_steps(module: SourceModule) -> list[ast.Call]:
    """The file's `env.step(...)` calls (a receiver whose last name holds "env"), found once per file: looked
    for at each place a step runs, a scan of every call each time was quadratic in a file of many steps."""
    return [call for call in module.calls if isinstance(call.func, ast.Attribute) and call.func.attr == "step"
            and "env" in _terminal_name(call.func.value)]


def _over_time_steps(module: SourceModule, loop: ast.AST) -> bool:
    if isinstance(loop, ast.While):
        return True
    if not isinstance(loop, (ast.For, ast.AsyncFor)):
        return False
    counted = isinstance(loop.iter, ast.Call) and module.call_name(loop.iter) == "itertools.count"
    return counted or _is_range(module, loop.iter)


def _terminal_name(node: ast.AST) -> str:
    """`env` of `env`, `self.env`, `envs[0]`: the receiver's last name, lowercased ("" when it has none)."""
    while isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Attribute):
        return node.attr.lower()
    return node.id.lower() if isinstance(node, ast.Name) else ""


def _loops_around(module: SourceModule, node: ast.AST) -> list[ast.AST]:
    """The for/while loops around `node` in its own function, class or module body, innermost first (the
    batch loop, then the epoch loop: either may be the one that reads the data)."""
    loops = []
    for parent in module.ancestors(node):
        if isinstance(parent, _LOOP_STOPS):
            break
        if isinstance(parent, _LOOPS):
            loops.append(parent)
    return loops


# What a function must not do to be wrapped in @tf.function as a whole: run only eagerly or in TF1, read
# values to Python, write files or save checkpoints (they would run once, while tracing, or fail).
_EAGER_ONLY = frozenset({"enable_eager_execution", "run_functions_eagerly", "Session", "InteractiveSession",
                         "disable_v2_behavior", "set_memory_growth", "set_visible_devices"})
_HOROVOD_SETUP = frozenset({"init", "broadcast_variables"})
_WRITES = frozenset({"open", "save", "save_weights", "save_model", "savefig", "dump", "write", "makedirs", "mkdir",
                     "to_csv", "imwrite", "imsave", "export_saved_model", "write_graph"})
_GRAPH_WRITERS = ("tf.io.", "tf.summary.", "tf.print")  # ops: fine in a graph


def _cannot_wrap(module: SourceModule, func: Function, apply: ast.AST | None) -> str | None:
    """Why decorating `func` itself with @tf.function cannot be right, or None (`apply`: the step's apply in
    `func`, None for a helper that only records the tape)."""
    if apply is not None and _innermost_loop_in(module, apply, func) is not None:
        return "runs the whole training loop"
    for node in ast.walk(func):
        if not isinstance(node, ast.Call) or node is apply:
            continue
        name = module.call_name(node) or ""
        last = name.rsplit(".", 1)[-1] if name else (_called_name(node) or "")
        if (name.startswith("tf.") and last in _EAGER_ONLY) or (name.startswith("horovod") and last in _HOROVOD_SETUP):
            return f"calls {name}(), which runs only eagerly or in TF1"
        if last == "numpy" and isinstance(node.func, ast.Attribute) and not node.args:
            return "reads tensors to Python with .numpy()"
        if last in ("predict", "predict_on_batch") and isinstance(node.func, ast.Attribute):
            return f"calls {_called_name(node)}(), which returns NumPy arrays and cannot run in a graph"
        if name.startswith("numpy."):
            return f"computes with NumPy ({name}()), which runs once while tracing"
        if last in _WRITES and not name.startswith(_GRAPH_WRITERS) and (
                name in ("open", "") or isinstance(node.func, ast.Attribute)):
            return f"writes files or saves checkpoints ({last}())"
    return None


def _innermost_loop_in(module: SourceModule, node: ast.AST, stop: ast.AST) -> ast.AST | None:
    for parent in module.ancestors(node):
        if parent is stop:
            return None
        if isinstance(parent, (ast.For, ast.AsyncFor, ast.While)):
            return parent
    return None


class _NamePosition(ast.AST):
    _fields = ()


def _def_name(module: SourceModule, func: Function) -> ast.AST:
    """A node spanning the function's name on its `def` line (what editors underline)."""
    line = func.lineno
    text = module.lines[line - 1] if line <= len(module.lines) else ""
    start = text.find(func.name, func.col_offset)
    node = _NamePosition()
    node.lineno = node.end_lineno = line  # type: ignore[attr-defined]
    col = len(text[:start].encode("utf-8")) if start >= 0 else func.col_offset
    node.col_offset = col  # type: ignore[attr-defined]
    node.end_col_offset = col + len(func.name.encode("utf-8"))  # type: ignore[attr-defined]
    return node


def _calls_next(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "next"
               for n in ast.walk(node))


def _is_range(module: SourceModule, node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    if isinstance(node.func, ast.Name) and node.func.id == "range" and module.qualified(node.func) is None:
        return True
    return module.call_name(node) == "tf.range"


@lint_rule("SRC108", "iterator-outside-step-trace", Severity.WARNING, triggers=[b"Trace", b"step_num"])
def iterator_outside_step_trace(module: SourceModule) -> Iterator[Hit]:
    """The next batch is pulled outside the profiler's step `Trace`.

    What it does:
        Flags `with tf.profiler.experimental.Trace(..., step_num=...)` blocks inside a loop when the
        loop takes its batch outside the block: `for batch in dataset:` (the `for` statement pulls the
        element), or `batch = next(iterator)` before the `with`.

    Why is this bad?
        The Profiler's step-time breakdown and input-pipeline analysis attribute to a step only what
        happens inside its step trace. Waiting for input then falls between steps: the overview page
        reports the step as compute-bound and the input bottleneck, often the very thing being looked
        for, disappears from the analysis.

    Example:
        for step, (x, y) in enumerate(train_ds):
            with tf.profiler.experimental.Trace("train", step_num=step, _r=1):
                train_step(x, y)

    Fix:
        Pull the element inside the trace:

        iterator = iter(train_ds)
        for step in range(steps):
            with tf.profiler.experimental.Trace("train", step_num=step, _r=1):
                x, y = next(iterator)
                train_step(x, y)

    Fix safety:
        Manual: restructure the loop (the end of the data set now ends with StopIteration).
    """
    for with_node in [*module.nodes(ast.With), *module.nodes(ast.AsyncWith)]:
        trace = next((i.context_expr for i in with_node.items if isinstance(i.context_expr, ast.Call)
                      and module.call_name(i.context_expr) == "tf.profiler.experimental.Trace"
                      and keyword(i.context_expr, "step_num") is not None), None)
        if trace is None or _calls_next(with_node):
            continue
        loop = next((a for a in module.ancestors(with_node) if isinstance(a, (ast.For, ast.AsyncFor, ast.While))),
                    None)
        if loop is None:
            continue
        if isinstance(loop, (ast.For, ast.AsyncFor)) and not _is_range(module, loop.iter):
            how = "the for statement pulls each element before the step Trace starts"
        elif any(_calls_next(stmt) for stmt in loop.body):
            how = "next(iterator) is called before the step Trace starts"
        else:
            continue
        yield Hit(trace.func, f"input is fetched outside the profiler's step Trace: {how}",
                  fix=SourceFix("Call next(iterator) inside the step Trace"))


def _jit_function(module: SourceModule, func: Function, wrapped: dict[str, ast.Call]) -> ast.Call | None:
    calls = [d for d in func.decorator_list if isinstance(d, ast.Call)]
    if func.name in wrapped:
        calls.append(wrapped[func.name])
    for call in calls:
        if _tf_function_call(module, call) is not None and constant(argument(call, "jit_compile")) is True:
            return call
    return None


def _signature_varies(module: SourceModule, call: ast.Call) -> str | None:
    for name in ("reduce_retracing", "experimental_relax_shapes"):
        if constant(argument(call, name)) is True:
            return f"{name}=True says its input shapes vary"
    signature = argument(call, "input_signature")
    if signature is None:
        return None
    for node in ast.walk(signature):
        if isinstance(node, ast.Call):
            name = module.call_name(node) or ""
            if name.endswith("RaggedTensorSpec") or name.endswith("SparseTensorSpec"):
                return f"its input_signature has a {name.rsplit('.', 1)[-1]}"
            if name.endswith("TensorSpec"):
                shape = argument(node, "shape", 0)
                if isinstance(shape, (ast.List, ast.Tuple)) and any(constant(e) is None for e in shape.elts):
                    return "its input_signature has a dimension of None"
    return None


def _varying_ops(value: Pipeline) -> list[str]:
    """Ops of a pipeline after which element shapes differ from batch to batch."""
    return [op for op, call in value.ops if op in _VARYING_OPS and not (
        op == "padded_batch" and argument(call, "padded_shapes", 1) is not None)]


def _fed_varying(module: SourceModule, name: str) -> str | None:
    """Whether the function is called inside a loop over a pipeline with varying element shapes, or with a
    ragged tensor (the loop, the first the file's flows hold, said first)."""
    in_loops, ragged = module.derived(_varying_feeds)
    return in_loops.get(name) or ragged.get(name)


def _varying_feeds(module: SourceModule) -> tuple[dict[str, str], dict[str, str]]:
    """(name → why, for the names called in a loop over a pipeline whose shapes vary per batch; name → why,
    for those called with a ragged tensor), each name's first reason in the file's order. Found once per
    file: walking every such loop and every call again for each function compiled with XLA was quadratic
    (1,200 compiled functions, each run in its own loop over a padded_batch: 12.7 s)."""
    in_loops: dict[str, str] = {}
    for flow in dataset_flow(module).flows:
        for loop, value in flow.loops:
            varying = _varying_ops(value)
            if not varying:
                continue
            why = f"it is called in a loop over a pipeline with {varying[0]}() (shapes vary per batch)"
            for node in ast.walk(loop):
                if isinstance(node, ast.Call) and (called := _called_name(node)) is not None:
                    in_loops.setdefault(called, why)
    ragged: dict[str, str] = {}
    for call in module.calls:
        called = _called_name(call)
        if called is not None and called not in ragged and any(
                isinstance(arg, ast.Call) and (module.call_name(arg) or "").startswith(_RAGGED_MAKERS)
                for arg in call.args):
            ragged[called] = "it is called with a ragged tensor"
    return in_loops, ragged


def _called_name(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


@lint_rule("SRC115", "jit-compile-with-varying-shapes", Severity.WARNING, triggers=[b"jit_compile"])
def jit_compile_with_varying_shapes(module: SourceModule) -> Iterator[Hit]:
    """A function compiled with XLA (`jit_compile=True`) is fed ragged or varying shapes.

    What it does:
        Flags `tf.function(jit_compile=True)` when the script shows that the shapes vary: an
        `input_signature` with a `None` dimension or a `RaggedTensorSpec`, `reduce_retracing=True`, a
        call with a `tf.ragged` tensor, or calls inside a loop over a pipeline built with
        `padded_batch()` (without fixed `padded_shapes`), `ragged_batch()` or
        `bucket_by_sequence_length()`.

    Why is this bad?
        XLA compiles one executable per concrete input shape. With shapes that change from batch to
        batch it recompiles again and again (seconds each, and an ever-growing cache) and the run is
        slower than without XLA; ragged tensors are not supported by XLA at all and fail to compile.

        Likewise `model.compile(jit_compile=True)` when `model.fit()` is given such a pipeline.

    Example:
        @tf.function(jit_compile=True, input_signature=[tf.TensorSpec([None, None], tf.int32)])
        def train_step(tokens):
            ...

    Fix:
        Give the compiled function fixed shapes: pad to a few fixed lengths (`padded_batch` with
        `padded_shapes`, bucketing with fixed bucket sizes) and batch with `drop_remainder=True`; or
        compile without XLA (`jit_compile=False`) and let auto-clustering pick the static parts.

    Fix safety:
        Manual: padding changes what the model sees (masking may be needed).
    """
    if "jit_compile" not in module.text:
        return  # both checks start from a literal jit_compile=True
    wrapped = _wrapped_names(module)
    for func in [*module.nodes(ast.FunctionDef), *module.nodes(ast.AsyncFunctionDef)]:
        call = _jit_function(module, func, wrapped)
        if call is None:
            continue
        why = _signature_varies(module, call) or _fed_varying(module, func.name)
        if why:
            jit = keyword(call, "jit_compile")
            yield Hit(jit if jit is not None else call, f"{func.name}() is compiled with jit_compile=True but {why}: "
                      "XLA recompiles for every new shape", evidence={"function": func.name},
                      fix=SourceFix("Feed the compiled function fixed shapes, or drop jit_compile"))
    yield from _keras_jit_fed_varying(module)


def _keras_jit_fed_varying(module: SourceModule) -> Iterator[Hit]:
    """`model.compile(jit_compile=True)` and then `model.fit(pipeline with varying shapes)`."""
    compiled: dict[str, ast.keyword] = {}
    for call in module.calls:
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "compile" and isinstance(func.value, ast.Name):
            jit = keyword(call, "jit_compile")
            if jit is not None and constant(jit.value) is True:
                compiled[func.value.id] = jit
    if not compiled:
        return
    for flow in dataset_flow(module).flows:
        for value in flow.values:
            node = flow.consumed.get(id(value))
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "fit"
                    and isinstance(node.func.value, ast.Name) and node.func.value.id in compiled):
                continue
            varying = _varying_ops(value)
            if varying:
                model = node.func.value.id
                yield Hit(compiled[model], f"{model} is compiled with jit_compile=True but {model}.fit() is fed a "
                          f"pipeline with {varying[0]}() (shapes vary per batch): XLA recompiles for every new shape",
                          evidence={"model": model, "ops": varying},
                          fix=SourceFix("Feed the compiled model fixed shapes, or drop jit_compile"))
