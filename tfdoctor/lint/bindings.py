"""The file's assignments, indexed once per module: what a name is bound to (lint's evidence and its cost
and statefulness estimates ask for the bindings of hundreds of names per notebook; walking every assignment
each time cost more than parsing the file)."""

from __future__ import annotations

import ast

from tfdoctor.lint.source import SourceModule


def bound_to(module: SourceModule, name: str) -> list[ast.AST]:
    """What each assignment of the file binds to `name` itself: the whole value for `name = value`, the
    matching element for `a, name = x, y`; the whole value where the two sides do not pair up."""
    return module.derived(binding_index)[1].get(name, [])


def bindings(module: SourceModule, name: str) -> list[ast.AST]:
    """The values a name is assigned in the file (`x = ...`, `(x, y), _ = ...`)."""
    return module.derived(binding_index)[0].get(name, [])


def binding_index(module: SourceModule) -> tuple[dict[str, list[ast.AST]], dict[str, list[ast.AST]]]:
    """Every assignment of the file, indexed once by the names it binds (a rule asks for the bindings of
    hundreds of names per notebook: walking every assignment each time cost more than parsing it). First:
    name → the whole values of the assignments that bind it. Second: name → what each binds to it itself
    (the matching element of `a, name = x, y`; the whole value where the two sides do not pair up)."""
    whole: dict[str, list[ast.AST]] = {}
    own: dict[str, list[ast.AST]] = {}
    for assign in module.nodes(ast.Assign):
        value = assign.value
        for target in assign.targets:
            for node in ast.walk(target):
                if isinstance(node, ast.Name):
                    whole.setdefault(node.id, []).append(value)
            if isinstance(target, ast.Name):
                own.setdefault(target.id, []).append(value)
            elif isinstance(target, (ast.Tuple, ast.List)):
                paired = isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts)
                for i, element in enumerate(target.elts):
                    if paired and isinstance(element, ast.Name):
                        own.setdefault(element.id, []).append(value.elts[i])  # type: ignore[attr-defined]
                if not paired:
                    for node in ast.walk(target):
                        if isinstance(node, ast.Name):
                            own.setdefault(node.id, []).append(value)
    for values in whole.values():  # one entry per assignment, however often the name occurs in its targets
        values[:] = list({id(v): v for v in values}.values())
    return whole, own


def option_defaults(module: SourceModule) -> dict[str, list[ast.AST]]:
    """Command-line options the file defines, by the attribute they are read as, with their default values:
    `flags.DEFINE_string('train_file', './data/iris_training.csv', ...)` (TensorFlow 1's and absl's flags, read
    `FLAGS.train_file`) and `parser.add_argument('--train-file', default=...)` (read `args.train_file`, or its
    `dest`). Found once per file."""
    return module.derived(_option_index)


def _option_index(module: SourceModule) -> dict[str, list[ast.AST]]:
    found: dict[str, list[ast.AST]] = {}
    for call in module.calls:
        func = call.func
        called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        first = call.args[0] if call.args else None
        name = first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None
        if called.startswith("DEFINE_") and name:
            default = call.args[1] if len(call.args) > 1 else next(
                (k.value for k in call.keywords if k.arg == "default"), None)
        elif called == "add_argument" and name and name.startswith("-"):
            default = next((k.value for k in call.keywords if k.arg == "default"), None)
            dest = next((k.value.value for k in call.keywords if k.arg == "dest" and isinstance(k.value, ast.Constant)
                         and isinstance(k.value.value, str)), None)
            longest = max((a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)),
                          key=len)
            name = dest or longest.lstrip("-").replace("-", "_")
        else:
            continue
        if default is not None:
            found.setdefault(name, []).append(default)
    return found


def parameter_values(module: SourceModule, function: ast.FunctionDef | ast.AsyncFunctionDef, name: str
                     ) -> list[ast.AST]:
    """What the file passes for the parameter `name` of a function of the file: the arguments of its calls by
    plain name (`csv_input_fn(FLAGS.train_file, 32)`, positionally or by keyword) and its default value."""
    params = [*function.args.posonlyargs, *function.args.args]
    position = next((i for i, a in enumerate(params) if a.arg == name), None)
    keyword_only = [a.arg for a in function.args.kwonlyargs]
    if position is None and name not in keyword_only:
        return []
    values: list[ast.AST] = []
    defaults = function.args.defaults
    if position is not None and position >= len(params) - len(defaults):
        values.append(defaults[position - (len(params) - len(defaults))])
    elif position is None:
        default = function.args.kw_defaults[keyword_only.index(name)]
        if default is not None:
            values.append(default)
    for call in module.derived(calls_by_plain_name).get(function.name, ()):
        if position is not None and position < len(call.args) and not any(
                isinstance(a, ast.Starred) for a in call.args[:position + 1]):
            values.append(call.args[position])
        values += [k.value for k in call.keywords if k.arg == name]
    return values


def calls_by_plain_name(module: SourceModule) -> dict[str, list[ast.Call]]:
    """The file's calls of a plain name (`f(x)`, not `obj.f(x)`), by that name, found once per file."""
    found: dict[str, list[ast.Call]] = {}
    for call in module.calls:
        if isinstance(call.func, ast.Name):
            found.setdefault(call.func.id, []).append(call)
    return found


# Methods that put values into a list or set in place: `paths.append(p)`, `paths.extend(more)`.
_GROWING_METHODS = frozenset({"append", "extend", "insert", "add", "update"})


def values_besides_assignment(module: SourceModule, name: str) -> list[ast.AST]:
    """What reaches a name other than by `name = value`: the value of `name += more`, what a loop `for name in
    walk(...)` takes its items from, what `name.append(x)` or `name.extend(xs)` puts in. A name with any of
    these is not the literal it was first bound to (`paths = []`, then filled from `os.walk`)."""
    return module.derived(_besides_index).get(name, [])


def _besides_index(module: SourceModule) -> dict[str, list[ast.AST]]:
    found: dict[str, list[ast.AST]] = {}

    def bind(target: ast.AST, value: ast.AST) -> None:
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                found.setdefault(node.id, []).append(value)

    for node in module.nodes(ast.AugAssign):
        bind(node.target, node.value)
    for node in module.nodes(ast.AnnAssign):
        if node.value is not None:
            bind(node.target, node.value)
    for node in (*module.nodes(ast.For), *module.nodes(ast.AsyncFor), *module.nodes(ast.comprehension)):
        bind(node.target, node.iter)
    for call in module.calls:
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in _GROWING_METHODS and isinstance(func.value, ast.Name):
            for value in (*call.args, *(k.value for k in call.keywords)):
                found.setdefault(func.value.id, []).append(value)
    return found
