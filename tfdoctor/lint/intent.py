"""Whose code this is, and whether it is slow on purpose (issue 25, item 5).

Rules about training throughput speak to the user about *their* training code. They stay silent on:

- a framework's internals: files under `keras/src/`, `tensorflow/python/`, `tf_keras/src/`, or any folder
  named `_internal`/`internal` (a data adapter of a Keras trainer builds pipelines for other people's
  fits, which decide themselves how to prefetch);
- code marked as a demonstration of slowness: a function named for it (`naive_pipeline`,
  `slow_input_fn`, `unoptimized_…`, `…_without_prefetch`), or a comment in the function (or the
  module-level lines just above) saying it is done on purpose (`deliberately`, `on purpose`,
  `intentionally`) — a tutorial's "before" half.
"""

from __future__ import annotations

import ast
import re
from pathlib import PurePosixPath

from tfdoctor.lint.source import SourceModule

_INTERNAL_DIRS = frozenset({"_internal", "internal", "internals", "_impl"})
_FRAMEWORK_TREES = (("keras", "src"), ("tf_keras", "src"), ("tensorflow", "python"), ("keras", "engine"),
                    ("tensorflow", "core"))
_SLOW_NAMES = ("naive", "slow", "unoptimized", "unoptimised", "without_prefetch", "no_prefetch", "sequential_map",
               "baseline_pipeline")
_ON_PURPOSE = re.compile(r"\b(deliberately|on purpose|intentionally|purposely)\b", re.IGNORECASE)
_LINES_ABOVE = 3  # module-level code: a comment this close above the line marks it


def framework_internal(module: SourceModule) -> bool:
    """The file is part of a framework's implementation, not a script that uses it."""
    return module.derived(_framework_internal)  # asked by several rules, at every site


def _framework_internal(module: SourceModule) -> bool:
    parts = PurePosixPath(module.path.replace("\\", "/")).parts[:-1]
    if any(part in _INTERNAL_DIRS for part in parts):
        return True
    return any(parts[i:i + 2] == pair for pair in _FRAMEWORK_TREES for i in range(len(parts) - 1))


def slow_on_purpose(module: SourceModule, node: ast.AST) -> bool:
    """`node` sits in a function named or commented as a demonstration of slowness."""
    functions = [a for a in module.ancestors(node) if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if any(any(word in f.name.lower() for word in _SLOW_NAMES) for f in functions):
        return True
    if functions:
        outer = functions[-1]
        first, last = outer.lineno, getattr(outer, "end_lineno", outer.lineno) or outer.lineno
    else:
        last = getattr(node, "lineno", 1)
        first = max(1, last - _LINES_ABOVE)
    return any(_marked(line) for line in module.lines[first - 1: last])


def _marked(line: str) -> bool:
    at = line.find("#")
    return at >= 0 and _ON_PURPOSE.search(line, at) is not None


def not_users_training_code(module: SourceModule, node: ast.AST) -> bool:
    return framework_internal(module) or slow_on_purpose(module, node)
