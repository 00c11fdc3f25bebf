"""Edits that rules propose, computed from node positions (never by re-printing the tree)."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from tfdoctor.lint.rule import Edit
from tfdoctor.lint.source import SourceModule
from tfdoctor.lint.target import autotune_since


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


# What a file shows of the TensorFlow it targets (issue 39, item 6). tf.data.AUTOTUNE is TensorFlow 2.4+
# (RELEASE.md of 2.4.0: "tf.data.experimental.AUTOTUNE is now available in the core API as tf.data.AUTOTUNE");
# tf.data.experimental.AUTOTUNE is 1.13+ and still in 2.21 (and tf.compat.v1.data.experimental); before 1.13 it
# was tf.contrib.data.AUTOTUNE. Plain substrings and bounded classes: linear on any text.
_TF1_ERA = re.compile(r"\b(?:Session|placeholder|make_one_shot_iterator|make_initializable_iterator|"
                      r"enable_eager_execution|compat\.v1|contrib)\b|data\.experimental\.AUTOTUNE|"
                      r"hasattr\([^()\n]{0,80}AUTOTUNE")
_CONTRIB_ONLY = re.compile(r"\bcontrib\.data\b")


def autotune(module: SourceModule, alias: str, line: int) -> tuple[str, bool]:
    """How to write AUTOTUNE at `line` of this file, and whether that is safe for the TensorFlow it targets.

    A name the file already binds to AUTOTUNE before that line (its own guard, an import) is used as it
    is; code whose release is known (`module.target`: the flag, the setting, the project's pins) and may be
    older than tf.data.AUTOTUNE gets tf.data.experimental.AUTOTUNE, safe when every such release has it
    (tfdoctor/knowledge/tfdata_automatic.toml, [[autotune]]); a file of the TensorFlow 1 era (sessions,
    placeholders, tf.compat.v1, contrib, its own hasattr guard) gets tf.data.experimental.AUTOTUNE, which
    every release since 1.13 has; a file that reads its pipelines through tf.contrib.data (1.12 and older)
    gets no safe edit."""
    era = module.derived(_era)
    for end_line, name in era.bindings:
        if end_line < line:
            return name, True
    imported = module.imports.bindings.get("AUTOTUNE", "")
    if imported.endswith(".AUTOTUNE"):
        return "AUTOTUNE", True
    target = module.target  # the release the code runs on, when known (tfdoctor/lint/target.py)
    if target is not None and target.before(autotune_since("data.AUTOTUNE")) is not False:
        # a release older than tf.data.AUTOTUNE may run it: the spelling every release since 1.13 has
        every_one_has_it = target.before(autotune_since("data.experimental.AUTOTUNE")) is False
        return f"{alias}.data.experimental.AUTOTUNE", every_one_has_it
    if era.contrib_only:
        return f"{alias}.data.experimental.AUTOTUNE", False
    if era.tf1:
        return f"{alias}.data.experimental.AUTOTUNE", True
    return f"{alias}.data.AUTOTUNE", True


@dataclass(frozen=True)
class _Era:
    """What a file's text shows of the TensorFlow it targets, read once per file (each finding asks: read
    per finding, a file of many findings was read as many times)."""

    bindings: tuple[tuple[int, str], ...]  # (last line, name) of each module-level `NAME = <AUTOTUNE>`, in order
    contrib_only: bool  # reads its pipelines through tf.contrib.data (1.12 and older)
    tf1: bool  # sessions, placeholders, tf.compat.v1, contrib, its own hasattr guard


def _era(module: SourceModule) -> _Era:
    bindings = []
    # A name bound to AUTOTUNE is written in the text: a file without it has nothing to walk.
    for statement in _module_level(module.tree.body) if "AUTOTUNE" in module.text else ():
        targets = statement.targets if isinstance(statement, ast.Assign) else []
        if (statement.end_lineno is not None and len(targets) == 1 and isinstance(targets[0], ast.Name)
                and _is_autotune(statement.value)):
            bindings.append((statement.end_lineno, targets[0].id))
    return _Era(tuple(bindings), bool(_CONTRIB_ONLY.search(module.text)) and "data.experimental" not in module.text,
                bool(_TF1_ERA.search(module.text)))


def _is_autotune(value: ast.expr) -> bool:
    """Whether a value is AUTOTUNE itself: `tf.data.AUTOTUNE`, a guard choosing between two spellings of it
    (`a if hasattr(...) else b`, `getattr(tf.data, "AUTOTUNE", b)`), or a name imported as AUTOTUNE. A value
    that merely holds it somewhere (`ds = ds.prefetch(tf.data.AUTOTUNE)`) is not: its name is a dataset."""
    if isinstance(value, ast.Attribute):
        return value.attr == "AUTOTUNE"
    if isinstance(value, ast.Name):
        return value.id == "AUTOTUNE"
    if isinstance(value, ast.IfExp):
        return _is_autotune(value.body) and _is_autotune(value.orelse)
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "getattr":
        name = value.args[1] if len(value.args) > 1 else None
        return isinstance(name, ast.Constant) and name.value == "AUTOTUNE" and (
            len(value.args) < 3 or _is_autotune(value.args[2]))
    return False


def _module_level(body: list[ast.stmt]):
    """Statements run at import, including those of module-level if/try blocks (a version guard)."""
    for statement in body:
        yield statement
        if isinstance(statement, ast.If | ast.Try):
            for block in (statement.body, statement.orelse, getattr(statement, "finalbody", []),
                          *(h.body for h in getattr(statement, "handlers", []))):
                yield from _module_level(block)
