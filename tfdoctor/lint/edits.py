"""Edits that rules propose, computed from node positions (never by re-printing the tree)."""

from __future__ import annotations

import ast

from tfdoctor.lint.rule import Edit
from tfdoctor.lint.source import SourceModule


def replace_node(module: SourceModule, node: ast.AST, text: str) -> Edit:
    pos = module.position(node)
    return Edit(pos.line, pos.column, pos.end_line, pos.end_column, text)


def add_keyword(module: SourceModule, call: ast.Call, text: str) -> Edit | None:
    """Insert `name=value` as the call's last argument, respecting a trailing comma. None if unsure."""
    pos = module.position(call)
    if pos.end_line > len(module.lines):
        return None
    line = module.lines[pos.end_line - 1]
    close = pos.end_column - 2  # 0-based index of ")"
    if close < 0 or close >= len(line) or line[close] != ")":
        return None
    before = _previous_char(module, pos.end_line, close)
    if before == "(":
        insert = text
    elif before == ",":
        insert = " " + text
    else:
        insert = ", " + text
    return Edit(pos.end_line, close + 1, pos.end_line, close + 1, insert)


def append_call(module: SourceModule, node: ast.AST, text: str) -> Edit:
    """Insert `text` (e.g. `.prefetch(tf.data.AUTOTUNE)`) right after an expression."""
    pos = module.position(node)
    return Edit(pos.end_line, pos.end_column, pos.end_line, pos.end_column, text)


def _previous_char(module: SourceModule, line: int, index: int) -> str:
    while line >= 1:
        text = module.lines[line - 1][:index].rstrip()
        if "#" in text:  # a comment on a continuation line: strip it (no '#' in strings there, in practice)
            text = text.split("#", 1)[0].rstrip()
        if text:
            return text[-1]
        line -= 1
        index = len(module.lines[line - 1]) if line >= 1 else 0
    return ""


def tf_alias(module: SourceModule) -> str | None:
    """How this script names TensorFlow, for fixes written in its own terms (`tf`), if it imports it."""
    return module.imports.alias_for("tf")
