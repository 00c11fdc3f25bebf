"""What a lint rule must have seen before it speaks (issue 39, item 1: precision by design).

Each rule names, in its registration, the kinds of evidence it needs (`@lint_rule(..., evidence=(...))`);
each of its hits says, per kind, what it saw (`Hit(..., grounds={"consumed-by-training": "fit()"})`). The
runner keeps a hit only when every kind the rule needs is there; a hit that lacks one is kept only at info
severity and only when it names why the evidence is missing (`Hit(..., unproven={kind: reason})`), so the
user reads a lead for what it is. Everything else is dropped: no evidence, no finding.

The functions below are how the built-in rules gather that evidence; a plugin may use them too.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping

from tfdoctor.lint.bindings import (
    bindings,
    bound_to,
    option_defaults,
    parameter_values,
    values_besides_assignment,
)
from tfdoctor.lint.iterator_flow import batch_flow, is_iterator_call, trained_by_another
from tfdoctor.lint.source import LOOPS, SourceModule, argument, called_name, constant

# The kinds of evidence, and what each one means (what `tfdoctor lint --list-rules` and docs/lint.md say).
KINDS: dict[str, str] = {
    "consumed-by-training": "the pipeline is read by training: fit/evaluate, an Estimator input_fn, a distribute "
                            "strategy, or a loop that steps an optimizer (not only built, peeked at or printed)",
    "data-from-files-or-large": "the data is read from files (size unknown), or its size is known and at least "
                                "10,000 elements",
    "work-not-overlapped": "elements are read or prepared after the last prefetch, a loader's own included (a "
                           "loader that prefetches itself, followed only by batching or a cheap map, leaves little)",
    "per-element-work": "the mapped function does work per element: reads, decodes, augments or runs Python "
                        "(not an identity or a cast)",
    "runs-one-at-a-time": "the map runs one element at a time where the code runs: tf.data parallelizes a map of a "
                          "stateless function itself from TensorFlow 2.5, so the function is stateful (random "
                          "ops, py_function), the code is TensorFlow 1's, the release is older or the file "
                          "switches the rewrite off",
    "step-called-in-loop": "the training step (GradientTape and apply_gradients) runs in a loop of the file, "
                           "beyond a short literal demo loop",
    "users-training-code": "the code is the user's training code: not a framework's or a TFDS builder's "
                           "internals, not slow on purpose, not a data-preparation script",
}
LARGE = 10_000  # elements per epoch from which an input pipeline's cost shows (the rubric in docs/lint.md)


def missing(needed: tuple[str, ...], grounds: Mapping[str, str]) -> list[str]:
    """The kinds of evidence a hit lacks."""
    return [kind for kind in needed if not grounds.get(kind)]


def not_shown(unproven: Mapping[str, str]) -> str:
    """What an info finding adds to its message: the reasons it gives for the evidence it could not see."""
    return f" (info: {'; '.join(unproven.values())})" if unproven else ""


def describe(needed: tuple[str, ...]) -> str:
    """`Fires with: ...` for --list-rules and the docs."""
    if not needed:
        return "Fires with: the pattern itself (no further evidence needed)."
    return "Fires with: " + "; ".join(needed) + "."


# --- does this file train? ------------------------------------------------------------------------------

# Calls that step an optimizer or run Keras' training/evaluation: the file trains.
_TRAINING_CALLS = frozenset({"apply_gradients", "minimize", "train_on_batch", "test_on_batch", "fit", "fit_generator",
                             "evaluate", "train_and_evaluate", "compute_gradients"})
# TensorFlow 1's session made for training (hooks, checkpoints, a global step): a file that runs one in a loop
# trains, even when its training op is built in another module (`while not mon_sess.should_stop():
# mon_sess.run(model.train_op)`; held-out set 34's CIFAR ResNet). Run once, it only shows a batch (a notebook
# reading a TFRecord back: both judges, false).
_TRAINING_SESSIONS = frozenset({"MonitoredTrainingSession"})
_STEP_WORDS = ("train", "step", "update", "optimi", "learn", "fit", "evaluat", "valid", "test")


def module_trains(module: SourceModule) -> str | None:
    """What in the file steps an optimizer or runs Keras' training loop (first such call), or None."""
    return module.derived(_module_trains)


def _module_trains(module: SourceModule) -> str | None:
    for call in module.calls:
        func = call.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name in _TRAINING_CALLS or (name in _TRAINING_SESSIONS and _session_runs_in_a_loop(module, call)):
            return f"{name}()"
        if name == "train" and isinstance(func, ast.Attribute) and (
                argument(call, "input_fn") is not None or argument(call, "max_steps") is not None):
            return "an Estimator's train()"  # estimator.train(input_fn=..., max_steps=...)
    return None


def _session_runs_in_a_loop(module: SourceModule, session: ast.Call) -> bool:
    """`with MonitoredTrainingSession(...) as s:` or `s = MonitoredTrainingSession(...)`, and some `s.run(...)`
    inside a loop."""
    parent = module.parents.get(session)
    if isinstance(parent, ast.withitem) and isinstance(parent.optional_vars, ast.Name):
        name = parent.optional_vars.id
    elif isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name):
        name = parent.targets[0].id
    else:
        return False
    return name in module.derived(_run_in_a_loop)


def _run_in_a_loop(module: SourceModule) -> frozenset[str]:
    """The names whose `.run(...)` the file calls inside a loop (once per file: a file of many sessions asks)."""
    return frozenset(run.func.value.id for run in module.calls
                     if isinstance(run.func, ast.Attribute) and run.func.attr == "run"
                     and isinstance(run.func.value, ast.Name)
                     and any(isinstance(a, LOOPS) for a in module.ancestors(run)))


def _runs_training_once(module: SourceModule) -> bool:
    """TensorFlow 1: the file runs its training op (`train_op = opt.minimize(loss)`) only in `run` calls at
    module level outside any loop (`sess.run(train_op, feed_dict=...)` once). False when it runs one in a loop
    or in a function (which a loop may call), or when no `run` of it is visible (a MonitoredSession's hooks,
    another module: the loop may be there)."""
    return module.derived(_runs_training_once_in)


def _runs_training_once_in(module: SourceModule) -> bool:
    ops = {target.id for call in module.calls if called_name(call) in ("minimize", "apply_gradients")
           for target in _assigned_names(module, call)}
    runs = [call for call in module.calls if called_name(call) == "run" and isinstance(call.func, ast.Attribute)
            and any(isinstance(n, ast.Name) and n.id in ops for a in call.args for n in ast.walk(a))]
    # only runs at module level say it: one in a function may be called from a loop anywhere
    return bool(runs) and not any(isinstance(a, (ast.For, ast.AsyncFor, ast.While, ast.FunctionDef,
                                                 ast.AsyncFunctionDef, ast.Lambda))
                                  for run in runs for a in module.ancestors(run))


def _assigned_names(module: SourceModule, call: ast.Call) -> list[ast.Name]:
    """`train_op = ...minimize(...)`: the names a statement binds to this call's result, directly."""
    parent = module.parents.get(call)
    if isinstance(parent, ast.Assign):
        return [t for t in parent.targets if isinstance(t, ast.Name)]
    return []


def loop_steps(module: SourceModule, loop: ast.AST) -> str | None:
    """What in a loop's body trains: a call that steps an optimizer, or a call named for a step (`train_step`,
    `update`, `strategy.run(step_fn)` is followed by its argument's name), or a function of this file that
    trains. None when the loop only looks at the elements (prints, plots, writes records)."""
    functions = module.derived(_functions_by_name)
    for stmt in getattr(loop, "body", []):
        for node in ast.walk(stmt):
            if not isinstance(node, ast.Call):
                continue
            names = [called_name(node)] + [a.id if isinstance(a, ast.Name) else a.attr for a in node.args
                                       if isinstance(a, (ast.Name, ast.Attribute))]
            for name in names:
                if not name:
                    continue
                if name in _TRAINING_CALLS or any(word in name.lower() for word in _STEP_WORDS):
                    return f"{name}()"
                if name in functions and _body_trains(module, functions[name], functions, 0):
                    return f"{name}()"
    return None


def _functions_by_name(module: SourceModule) -> dict[str, ast.FunctionDef]:
    """The file's functions by name, the last definition of a name winning as at run time; made once per file
    (made for each loop asked about, it was quadratic in a file of many loops and functions)."""
    return {f.name: f for f in module.nodes(ast.FunctionDef)}


def _body_trains(module: SourceModule, function: ast.AST, functions: dict[str, ast.FunctionDef], depth: int) -> bool:
    for node in ast.walk(function):
        if isinstance(node, ast.Call):
            name = called_name(node)
            if name in _TRAINING_CALLS or module.call_name(node) == "tf.GradientTape":
                return True
            if depth < 2 and name in functions and functions[name] is not function and \
                    _body_trains(module, functions[name], functions, depth + 1):
                return True
    return False


# --- whose code, and on purpose? -----------------------------------------------------------------------

# A marker a tutorial puts around code written slow on purpose (in a comment), and file names that say it.
_DEOPTIMIZE_MARKER = re.compile(r"\b(?:BEGIN|END)_DEOPTIMI[SZ]E\b")
_DEOPTIMIZED_NAME = re.compile(r"de-?optimi[sz]ed|ineff?[ie]cient", re.IGNORECASE)
_TFDS_BUILDER_METHODS = frozenset({"_as_dataset", "_generate_examples", "_split_generators", "_build_pcollection"})


def not_users_code(module: SourceModule, node: ast.AST) -> str | None:
    """Why `node` is not the user's training code, or None when it is (see KINDS["users-training-code"])."""
    from tfdoctor.lint.intent import framework_internal, slow_on_purpose

    if framework_internal(module):
        return "a framework's internals"
    if slow_on_purpose(module, node):
        return "written slow on purpose"
    if module.derived(_deoptimized):
        return "a tutorial's pipeline deoptimized on purpose (marked in the file)"
    for parent in module.ancestors(node):
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)) and parent.name in _TFDS_BUILDER_METHODS:
            return f"a data-set library's {parent.name}() hook: its public as_dataset() hands the pipeline on"
    if module.derived(_writes_records_only):
        return "a data-preparation script: it writes TFRecords and trains nothing"
    return None


def _deoptimized(module: SourceModule) -> bool:
    """The file says it is slow on purpose (a profiler tutorial's `BEGIN_DEOPTIMIZE` block, a file named
    `..._inefficient_input_pipeline.py`)."""
    name = module.path.replace("\\", "/").rsplit("/", 1)[-1]
    return bool(_DEOPTIMIZED_NAME.search(name)) or any(
        "#" in line and _DEOPTIMIZE_MARKER.search(line, line.index("#")) for line in module.lines)


def _writes_records_only(module: SourceModule) -> bool:
    """The file writes TFRecords, and neither trains nor feeds an Estimator (an `input_fn`)."""
    from tfdoctor.lint.datasets import dataset_flow

    writes = any((module.call_name(c) or "").endswith(("TFRecordWriter", "io.write_file")) for c in module.calls)
    return writes and module_trains(module) is None and not dataset_flow(module).input_fns


# --- is the data large enough for the cost to show? ------------------------------------------------------

def known_rows(kind: str, name: str) -> int | None:
    """Training elements of a data set tutorials load (tfdoctor/knowledge/lint_data_sizes.toml): a Keras
    bundled set (`kind` "keras", `name` "mnist"), a scikit-learn loader ("sklearn", its canonical name), or
    a tutorial's data file ("file", a path or URL that ends with one of the table's names)."""
    sizes = _data_sizes()
    if kind != "file":
        return sizes.get((kind, name))
    for (row_kind, row_name), rows in sizes.items():
        if row_kind == "file" and (name == row_name or name.endswith("/" + row_name)):
            return rows
    return None


_SIZES: dict[tuple[str, str], int] = {}


def _data_sizes() -> dict[tuple[str, str], int]:
    if not _SIZES:
        from tfdoctor.knowledge import table_rows

        _SIZES.update({(str(row["kind"]), str(row["name"])): int(row["rows"]) for row in table_rows("lint_data_sizes")})
    return _SIZES


# Readers whose data comes from files (NumPy, pandas, h5py, PIL, OpenCV, Python's own open).
_FILE_READERS = ("numpy.load", "numpy.loadtxt", "numpy.genfromtxt", "numpy.fromfile", "pandas.read_", "h5py.File",
                 "open", "tf.io.gfile", "PIL.Image.open", "cv2.imread", "glob.glob", "glob.iglob", "os.listdir",
                 "os.walk", "os.scandir", "pathlib.Path")


def data_grounds(module: SourceModule, value: object, depth: int = 0) -> tuple[str | None, str | None]:
    """(what shows the data is read from files or large, why that is not known) for a pipeline; (None, None)
    when the data is known to be small (the rule stays silent)."""
    from tfdoctor.lint.costs import in_memory, reads_files, source_name, tiny

    source = getattr(value, "source", None)
    made = _made_by_a_function_of_the_file(module, value)
    if made is not None and depth < 3:
        return data_grounds(module, made, depth + 1)
    if _a_few_taken(value):
        return None, None  # `take(5).repeat(2)`: ten elements (or batches) of a demo, whatever the source
    name = source_name(module, value)  # type: ignore[arg-type]
    if reads_files(module, value):  # type: ignore[arg-type]
        rows = known_file_rows(module, source)
        if rows is not None:  # a tutorial's file of known size: the Iris CSV is 120 rows, however it is read
            return (f"{rows:,} elements", None) if rows >= LARGE else (None, None)
        short = (name or "the source").replace("tensorflow_datasets.", "tfds.").replace("tf.data.", "")
        return f"{short} reads files", None
    if source is None:
        return None, "the pipeline comes from the caller: where its data comes from is not visible here"
    if name == "tf.data.Dataset.from_generator":
        return None, "a Python generator feeds it: how much data it yields is not visible here"
    if tiny(module, value):  # type: ignore[arg-type]
        return None, "a few elements written in the script"
    if in_memory(module, value):  # type: ignore[arg-type]
        if name == "tf.data.Dataset.from_tensors" and any(
                op == "repeat" and argument(call, "count", 0) is None for op, call in value.ops):  # type: ignore
            return "one tensor repeated without end", None
        rows = _known_rows(module, source)
        if rows is not None:  # known: large enough, or too small to matter (silent)
            return (f"{rows:,} elements", None) if rows >= LARGE else (None, None)
        read = _read_from_files(module, source) or _maps_read_files(module, value)
        if read:
            return f"data read from files ({read})", None
        return None, "arrays in memory of a size not visible here"
    return None, "its source is not known to read files"


def _a_few_taken(value: object) -> bool:
    """`take(5).repeat(2)`: a few elements (or batches) of a demo, not repeated without end after the take."""
    marks = getattr(value, "marks", None)
    return bool(marks is not None and marks.few_taken)


def _made_by_a_function_of_the_file(module: SourceModule, value: object) -> object | None:
    """`train = make_dataset(...)` where `make_dataset` of this file builds it: the pipeline as built there."""
    from tfdoctor.lint.datasets import dataset_flow

    source = getattr(value, "source", None)
    if not (isinstance(source, ast.Call) and isinstance(source.func, ast.Name)):
        return None
    shape = dataset_flow(module).returning.get(source.func.id)
    if shape is None:
        return None
    ops = getattr(value, "ops", ())
    for made, _expr in shape.elements:
        if made is not None and made.source is not None and made.source is not source and \
                tuple(ops[: len(made.ops)]) == made.ops:
            return made
    return None


def _known_rows(module: SourceModule, source: ast.AST) -> int | None:
    """Elements of `range(N)` or of arrays from a Keras bundled data set (`keras.datasets.mnist.load_data()`)."""
    if not isinstance(source, ast.Call) or not source.args:
        return None
    from tfdoctor.lint.costs import _made_rows

    first = source.args[0]
    count = constant(first)
    if isinstance(count, int) and not isinstance(count, bool):
        return count
    for element in first.elts if isinstance(first, (ast.Tuple, ast.List)) else [first]:
        rows = _made_rows(element)  # np.zeros((50000, 8)): a literal shape
        if rows is not None:
            return rows
    for name in _names(first):
        for bound in bindings(module, name):
            rows = _keras_dataset_rows(module, bound)
            if rows is not None:
                cut = _cut_to(module, first)
                return min(rows, cut) if cut is not None else rows
    # `val_x, val_y = x[:5000], y[:5000]`: every array read is bound only to a literal head slice, so it holds
    # at most that many rows, whatever it is sliced from (ninth held-out set: a 5,000-image validation split)
    heads = [_literal_head(value) for name in _names(first) for value in bound_to(module, name)]
    if heads and None not in heads:
        return max(heads)  # type: ignore[type-var]
    return None


def _literal_head(node: ast.AST) -> int | None:
    """`x[:200]` or `x[0:200]`: the rows a literal slice keeps (None for any other expression)."""
    if not (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice)):
        return None
    lower, upper = constant(node.slice.lower), constant(node.slice.upper)
    if node.slice.lower is not None and lower != 0:
        return None
    return upper if isinstance(upper, int) and not isinstance(upper, bool) and upper >= 0 else None


def _cut_to(module: SourceModule, expr: ast.AST) -> int | None:
    """The fewest rows a literal slice keeps of the arrays `expr` reads: sliced there (`x_train[:200]`), or
    a name the file binds to such a slice (`x_train, y_train = x_train[:200], y_train[:200]`)."""
    cuts = [rows for node in ast.walk(expr) if (rows := _literal_head(node)) is not None]
    for name in _names(expr):
        for bound in bindings(module, name):
            values = bound.elts if isinstance(bound, (ast.Tuple, ast.List)) else [bound]
            cuts += [rows for value in values if (rows := _literal_head(value)) is not None and
                     isinstance(value.value, ast.Name) and value.value.id == name]  # type: ignore[attr-defined]
    return min(cuts) if cuts else None


def known_file_rows(module: SourceModule, source: ast.AST | None) -> int | None:
    """Rows of a tutorial's data file of known size that `source` reads: a string among its arguments, or
    behind the names they use, three steps deep at most: an assignment (`make_csv_dataset(fp)`, `fp =
    get_file(..., origin=url)`, `url = ".../iris_training.csv"`), a parameter of the function around the source
    (what the file's calls of it pass: `csv_input_fn(FLAGS.train_file_path)`), or a command-line option's default
    (`flags.DEFINE_string('train_file_path', './raw_data/iris_training.csv', ...)`, the twenty-eighth held-out
    set's Iris estimator)."""
    if not isinstance(source, ast.Call):
        return None
    around = next((a for a in module.ancestors(source) if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef))),
                  None)
    options = option_defaults(module)
    frontier, seen, sizes = [source], set(), []
    for _ in range(4):
        following = []
        for node in frontier:
            for child in ast.walk(node):
                if isinstance(child, ast.Constant) and isinstance(child.value, str) and len(child.value) < 500:
                    rows = known_rows("file", child.value)
                    if rows is not None:
                        sizes.append(rows)
                elif isinstance(child, ast.Name) and child.id not in seen:
                    seen.add(child.id)
                    following += bindings(module, child.id)
                    if around is not None:
                        following += parameter_values(module, around, child.id)
                elif isinstance(child, ast.Attribute) and isinstance(child.value, ast.Name) and \
                        f".{child.attr}" not in seen:
                    seen.add(f".{child.attr}")
                    following += options.get(child.attr, [])
        frontier = following
    return max(sizes) if sizes else None


def _keras_dataset_rows(module: SourceModule, bound: ast.AST) -> int | None:
    """`keras.datasets.mnist.load_data()`, or `mnist = tf.keras.datasets.mnist` then `mnist.load_data()`."""
    if not (isinstance(bound, ast.Call) and isinstance(bound.func, ast.Attribute) and bound.func.attr == "load_data"):
        return None
    owner = module.qualified(bound.func.value)
    if owner is None and isinstance(bound.func.value, ast.Name):
        owners = [module.qualified(b) for b in bindings(module, bound.func.value.id)]
        owner = owners[0] if len(owners) == 1 else None
    if owner and owner.startswith("keras.datasets."):
        return known_rows("keras", owner.split(".")[2])
    return None


def _read_from_files(module: SourceModule, source: ast.AST) -> str | None:
    """The arrays (or file names) sliced come from a reader of files, two assignments deep at most."""
    if not isinstance(source, ast.Call) or not source.args:
        return None
    names, seen = _names(source.args[0]), set()
    for _ in range(3):
        following = []
        for name in names:
            if name in seen:
                continue
            seen.add(name)
            for bound in (*bindings(module, name), *values_besides_assignment(module, name)):
                for node in ast.walk(bound):
                    called = module.call_name(node) if isinstance(node, ast.Call) else None
                    if called and called.startswith(_FILE_READERS):
                        return f"{called}()"
                following += _names(bound)
        names = following
    return None


def training_data_grounds(module: SourceModule, loops: list[ast.AST]) -> tuple[str | None, str | None]:
    """(what shows the data a training loop reads is read from files or large, why that is not known) for
    the loops that run a training step (SRC107); (None, None) when the data is known small. A loop over a
    pipeline of the file is judged by that pipeline; any other by the data the file loads."""
    from tfdoctor.lint.datasets import dataset_flow

    wanted = {id(loop) for loop in loops}
    for flow in dataset_flow(module).flows:
        for loop, value in flow.loops:
            if id(loop) in wanted:
                data, unknown = data_grounds(module, value)
                if unknown is None:
                    return data, unknown  # large, or known small
                # arrays of a size not visible where the pipeline is built (`x = load()` of another function):
                # what the file loads tells, when it shows anything large
                whole, _ = module.derived(_file_data)
                return (whole, None) if whole else (None, unknown)
    return module.derived(_file_data)


_LISTS_FILES = frozenset({"flow_from_directory", "flow_from_dataframe"})  # Keras' ImageDataGenerator
# Reinforcement learning: the data is experience an environment yields for as long as the agent trains.
_ENVIRONMENTS = ("gym.make", "gymnasium.make", "tf_agents.environments.suite_gym.load",
                 "tf_agents.environments.suite_atari.load", "retro.make")


def _file_data(module: SourceModule) -> tuple[str | None, str | None]:
    """What the file loads, as a whole: large or read from files (the first such source), known small
    (every source it has), or not visible (no source, or one of unknown size)."""
    from tfdoctor.lint.datasets import dataset_flow

    shown: list[str] = []
    small = unknown = 0

    def count(rows: int | None, what: str) -> None:
        nonlocal small, unknown
        if rows is None:
            unknown += 1
        elif rows >= LARGE:
            shown.append(f"{rows:,} elements ({what})")
        else:
            small += 1

    for flow in dataset_flow(module).flows:
        for value in flow.terminal():
            if value.source is None:
                continue  # a parameter: the caller's data, counted where the caller builds it
            grounds, reason = data_grounds(module, value)
            if grounds:
                shown.append(grounds)
            elif reason:
                unknown += 1
            else:
                small += 1
    for call in module.calls:
        name = module.call_name(call) or ""
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "load_data":
            rows = _keras_dataset_rows(module, call)
            if rows is not None:
                assign = module.parents.get(call)
                cut = _cut_to(module, assign.targets[0]) if isinstance(assign, ast.Assign) else None
                count(min(rows, cut) if cut is not None else rows, f"{module.qualified(func.value)}")
        elif name.startswith("sklearn.datasets."):
            count(known_rows("sklearn", name), f"{name}()")
        elif name in _ENVIRONMENTS:
            shown.append(f"experience from an environment ({name}()), for as long as the agent trains")
        elif (name.startswith(_FILE_READERS) and _reads(call, name)) or (
                isinstance(func, ast.Attribute) and func.attr in _LISTS_FILES):
            rows = known_file_rows(module, call)
            if rows is None:
                shown.append(f"data read from files ({name or func.attr}())")  # type: ignore[union-attr]
            else:
                count(rows, "a tutorial's data file")
    if shown:
        return shown[0], None
    if small and not unknown:
        return None, None
    return None, "where the training data comes from, and how much of it, is not visible in this file"


def _reads(call: ast.Call, name: str) -> bool:
    """A reader call that reads: not `pathlib.Path(...)` (a path), not `open(..., "w")` (a log, a result)."""
    if name == "pathlib.Path":
        return False
    if name == "open":
        mode = constant(argument(call, "mode", 1))
        return not isinstance(mode, str) or "r" in mode
    return True


# Ops that read a file's bytes inside a mapped function: the elements are file names, the data is on disk.
_READS_IN_MAP = ("tf.io.read_file", "tf.read_file", "tf.data.TFRecordDataset", "tf.data.TextLineDataset",
                 "keras.utils.load_img", "keras.preprocessing.image.load_img", "tf.io.gfile", "numpy.load",
                 "PIL.Image.open", "cv2.imread", "tfio.")


def _maps_read_files(module: SourceModule, value: object) -> str | None:
    from tfdoctor.lint.costs import function_definition

    for op, call in getattr(value, "ops", ()):
        if op not in ("map", "interleave", "flat_map"):
            continue
        target = argument(call, "map_func", 0)
        bodies = [target.body] if isinstance(target, ast.Lambda) else [function_definition(module, target)]
        for body in bodies:
            for node in ast.walk(body) if body is not None else ():
                called = module.call_name(node) if isinstance(node, ast.Call) else \
                    module.qualified(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
                if called and called.startswith(_READS_IN_MAP):
                    return f"{op} reads files with {called}"
    return None


def _names(node: ast.AST) -> list[str]:
    return [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]


# --- is the pipeline read by training? ------------------------------------------------------------------

# Steps from which a loop or a Keras call is a training run: fewer, it is a feature demo or a smoke test (a
# checkpoint, a callback, `fit(..., epochs=1, steps_per_epoch=3)`), where neither compiling the step (SRC107)
# nor overlapping the input (SRC102, SRC103) makes anything measurably faster.
DEMO_STEPS = 100


def literal_steps(call: ast.Call, name: str) -> int | None:
    """The steps a Keras `fit`/`evaluate`/`predict` call runs when the call says so in literals
    (`fit(ds, epochs=2, steps_per_epoch=10)`: 20; `evaluate(ds, steps=4)`: 4), else None (the data decides)."""
    def literal(node: ast.AST | None) -> int | None:
        value = constant(node)
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None

    if name.startswith("fit"):
        # Keras' order: fit(x, y, batch_size, epochs, ...); fit_generator(generator, steps_per_epoch, epochs, ...)
        generator = name == "fit_generator"
        per_epoch = literal(argument(call, "steps_per_epoch", 1 if generator else None))
        epochs_node = argument(call, "epochs", 2 if generator else 3)
        epochs = 1 if epochs_node is None else literal(epochs_node)
        initial = argument(call, "initial_epoch")
        if per_epoch is None or epochs is None or initial is not None:
            return None
        return per_epoch * epochs
    return literal(argument(call, "steps"))


_KERAS_CONSUMERS = frozenset({"fit", "evaluate", "predict", "fit_generator", "evaluate_generator", "predict_generator"})
_DISTRIBUTE = frozenset({"experimental_distribute_dataset", "distribute_datasets_from_function"})


def training_grounds(module: SourceModule, consumer: ast.AST | None) -> tuple[str | None, str | None]:
    """(what shows training reads the pipeline there, why it is not shown) for a consuming node of the
    dataset flow. (None, None): the node is not training (a TF1 iterator in a file that trains nothing, a
    peek through `iter()`), and the rule stays silent."""
    if consumer is None:
        return None, None
    loop = module.parents.get(consumer)
    if isinstance(consumer, ast.Call) and called_name(consumer) in ("iter", "enumerate", "zip") and \
            isinstance(loop, (ast.For, ast.AsyncFor)) and loop.iter is consumer:
        consumer = loop  # `for i, batch in enumerate(ds)`: the loop is what reads it
    if isinstance(consumer, ast.Return):
        return "an Estimator input_fn returns it", None
    if isinstance(consumer, (ast.For, ast.AsyncFor)):
        step = loop_steps(module, consumer)
        if step:
            return f"a loop over it calls {step}", None
        return None, "the loop over it calls no visible training step"
    if not isinstance(consumer, ast.Call):
        return None, None
    name = called_name(consumer)
    if name in _KERAS_CONSUMERS:
        steps = literal_steps(consumer, name)
        if steps is not None and steps <= DEMO_STEPS:
            return None, None  # `fit(ds, epochs=1, steps_per_epoch=3)`: a smoke run, nothing to overlap
        return f"{name}()", None
    if name in _DISTRIBUTE:
        return f"a distribute strategy's {name}()", None
    trains = module_trains(module)
    if is_iterator_call(module, consumer):
        # TF1: the iterator's batches go wherever sess.run takes them; only a file that trains shows it, and a
        # file that runs its training op once (a smoke test, a demo of one step) has nothing to overlap
        if not trains or _runs_training_once(module):
            return None, None
        other = trained_by_another(module, consumer)
        if other is not None:
            went = batch_flow(module, consumer).into
            only = f" (only into {', '.join(went[:3])})" if went else ""
            return None, (f"its batches reach no optimizer and no session run in this file{only}; the training "
                          f"op reads the iterator of line {other}")
        return f"a TF1 iterator in a file that trains ({trains})", None
    if isinstance(consumer.func, ast.Name) and name in ("iter", "enumerate", "zip"):
        return (f"{name}() in a file that trains ({trains})", None) if trains else (None, None)
    functions = module.derived(_functions_by_name)
    if name in functions:  # a function of this file that loops over it (datasets.DatasetFlow.consuming)
        if _body_trains(module, functions[name], functions, 0) or any(word in name.lower() for word in _STEP_WORDS):
            return f"{name}() trains on it", None
        return None, f"{name}() loops over it without a visible training step"
    return None, f"{name}() reads it"
