"""Edits that rules propose, computed from node positions (never by re-printing the tree)."""

from __future__ import annotations

import ast

from tfdoctor.lint.rule import Edit
from tfdoctor.lint.source import SourceModule


def replace_node(module: SourceModule, node: ast.AST, text: str) -> Edit:
    pos = module.position(node)
    return Edit(pos.line, pos.column, pos.end_line, pos.end_column, text)


def add_keyword(module: SourceModule, call: ast.Call, text: str) -> Edit | None:
    """Insert `name=value` as the call's last argument. None if unsure.

    Placed right after the last argument the tree knows (`f(a, b)` → `f(a, b, name=value)`), so a
    closing parenthesis on a line of its own, a trailing comma or a comment before it never produce a
    line that starts with a comma (issue 25, item 7); a trailing comma stays after the new argument.
    """
    pos = module.position(call)
    if pos.end_line > len(module.lines):
        return None
    line = module.lines[pos.end_line - 1]
    close = pos.end_column - 2  # 0-based index of ")"
    if close < 0 or close >= len(line) or line[close] != ")":
        return None
    arguments = [*call.args, *(k.value for k in call.keywords)]
    if not arguments:
        return Edit(pos.end_line, close + 1, pos.end_line, close + 1, text)
    last = module.position(max(arguments, key=lambda a: (a.end_lineno or 0, a.end_col_offset or 0)))
    if not _only_comma_between(module, (last.end_line, last.end_column), (pos.end_line, close + 1)):
        return None  # a parenthesised last argument `(x)`: its end is inside those parentheses
    return Edit(last.end_line, last.end_column, last.end_line, last.end_column, ", " + text)


def _only_comma_between(module: SourceModule, start: tuple[int, int], end: tuple[int, int]) -> bool:
    """Between two positions (1-based line, column; end exclusive) only blanks, comments, one comma."""
    line, column = start
    commas = 0
    while (line, column) < end:
        text = module.lines[line - 1]
        stop = end[1] - 1 if line == end[0] else len(text)
        for char in text[column - 1: stop]:
            if char == "#":
                break
            if char == ",":
                commas += 1
            elif not char.isspace():
                return False
        line, column = line + 1, 1
    return commas <= 1


def append_call(module: SourceModule, node: ast.AST, text: str) -> Edit:
    """Insert `text` (e.g. `.prefetch(tf.data.AUTOTUNE)`) right after an expression."""
    pos = module.position(node)
    return Edit(pos.end_line, pos.end_column, pos.end_line, pos.end_column, text)


def tf_alias(module: SourceModule) -> str | None:
    """How this script names TensorFlow, for fixes written in its own terms (`tf`), if it imports it."""
    return module.imports.alias_for("tf")
