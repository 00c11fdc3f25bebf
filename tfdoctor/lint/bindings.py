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
