"""A parsed script and the indexes every rule shares, built in one walk of the tree.

Positions: `ast` counts columns in UTF-8 bytes; findings count characters (1-based), which is what
editors and SARIF's `unicodeCodePoints` column kind expect, so `position()` converts.
"""

from __future__ import annotations

import ast
import functools
import io
import re
import tokenize
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from tfdoctor.lint.names import ImportMap

if TYPE_CHECKING:
    from tfdoctor.lint.notebook import Notebook

T = TypeVar("T")
Scope = ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef
_SCOPES = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
LOOPS = (ast.For, ast.AsyncFor, ast.While)  # statements whose body may run again


FRAMEWORK_MARKERS = ("tensorflow", "keras", "horovod")  # a file without them gets no rule
# Larger files are generated code or data (notebooks with embedded outputs can be a few MB).
SOURCE_LIMIT = 32 * 1024 * 1024
# Python text lint parses from one file (a notebook: its code cells). `ast.parse` alone needs ~240 bytes
# of memory per character (a 10 MB script: 2.4 GB, 46 s); hand-written scripts stay far below this.
CODE_LIMIT = 2_000_000
# Tokens of it (runs of letters, digits and _, and punctuation characters, counted at C speed before
# parsing): the tree's size follows them, not the characters. 2 MB of nested lists ([1, 2, 3], …) is 1.5
# million tokens, a million syntax nodes, 0.8-1.2 GB; lint's own sources run ~0.26 tokens per character,
# 0.57 nodes per token, so a hand-written file at CODE_LIMIT stays under this and a file at it parses in
# about 350 MB.
TOKEN_LIMIT = 800_000
_PUNCTUATION = b"!\"#$%&'()*+,-./:;<=>?@[\\]^`{|}~"
_WORD = re.compile(r"[A-Za-z0-9_]+")


class SourceError(Exception):
    """The file cannot be turned into a tree: `code` says which runner-emitted rule reports it."""

    def __init__(self, code: str, message: str, line: int = 1, column: int = 1) -> None:
        super().__init__(message)
        self.code, self.message, self.line, self.column = code, message, line, column
        self.cell: int | None = None  # a notebook's syntax error: its cell, line in the cell and .ipynb line
        self.raw_line = 0


def decode_source(data: bytes) -> str:
    """Bytes → text the way Python itself reads a script: BOM, then a PEP 263 coding cookie, else UTF-8."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise _undecodable(data, exc) from None
    except (SyntaxError, LookupError) as exc:  # no valid cookie, or one naming an unknown encoding
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as utf8_error:  # invalid UTF-8 in the first two lines
            raise _undecodable(data, utf8_error) from None
        raise SourceError("SRC002", f"cannot decode: {exc}") from None
    return text[1:] if text.startswith("\ufeff") else text


def _undecodable(data: bytes, exc: UnicodeDecodeError) -> SourceError:
    line = data[: exc.start].count(b"\n") + 1
    return SourceError("SRC002", f"cannot decode as {exc.encoding}: byte 0x{data[exc.start]:02x} is not valid "
                                 "(save the file as UTF-8 or declare its encoding, PEP 263)", line)


def count_tokens(text: str) -> int:
    """About how many tokens `text` holds: punctuation characters plus runs of word characters (linear,
    no token list built)."""
    data = text.encode("utf-8", "surrogateescape")
    return len(data) - len(data.translate(None, _PUNCTUATION)) + _WORD.subn("", text)[1]


def read_source(path: Path) -> bytes:
    """A source file's bytes, bounded in size and time; SRC002 when it cannot be read."""
    from tfdoctor.facts.bounded import InputFileError, read_input_file

    try:
        return read_input_file(path, SOURCE_LIMIT, "source file", timeout=10.0)
    except InputFileError as exc:
        raise SourceError("SRC002", str(exc)) from None


def parse_source(text: str, filename: str) -> ast.Module:
    if len(text) > CODE_LIMIT:  # issue 24, item 5: bounded work per file
        raise SourceError("SRC002", f"not linted: {len(text):,} characters of Python, over the {CODE_LIMIT:,} "
                                    "lint parses from one file (generated code? exclude it or split it)")
    # Bounded memory: the tree, not the text, is what costs it. Each token counted is at least one ASCII
    # character of the text, so a text of at most TOKEN_LIMIT characters need not be counted.
    if len(text) > TOKEN_LIMIT and (tokens := count_tokens(text)) > TOKEN_LIMIT:
        raise SourceError("SRC002", f"not linted: about {tokens:,} tokens of Python, over the {TOKEN_LIMIT:,} "
                                    "lint parses from one file (generated code or data? exclude it or split it)")
    try:
        return ast.parse(text, filename=filename)
    except SyntaxError as exc:
        line = exc.lineno or 1
        column = exc.offset or 1
        raise SourceError("SRC001", f"cannot parse: {exc.msg}", line, max(column, 1)) from None
    except (ValueError, MemoryError, RecursionError) as exc:  # null bytes, absurd nesting
        raise SourceError("SRC001", f"cannot parse: {type(exc).__name__}: {exc}") from None


@dataclass(frozen=True)
class Position:
    """A span of source text, 1-based lines and columns, end exclusive."""

    line: int
    column: int  # 1-based, in characters
    end_line: int
    end_column: int  # 1-based, exclusive, in characters


class SourceModule:
    """One script: its text, tree, imports, and nodes grouped by type (walked once)."""

    def __init__(self, path: str, text: str, tree: ast.Module) -> None:
        self.path = path
        self.text = text
        self.tree = tree
        self.parents: dict[ast.AST, ast.AST] = {}
        self.by_type: dict[type, list[ast.AST]] = defaultdict(list)
        # Issue 13, item 3: a file that never names TensorFlow, Keras or Horovod gets no rule (PyTorch,
        # MXNet, plain Python); it is parsed (syntax errors count) but not indexed, which is most of the cost.
        self.uses_tensorflow = any(marker in text for marker in FRAMEWORK_MARKERS)
        if self.uses_tensorflow:
            self._index(tree)
        imports: list = [*self.by_type[ast.Import], *self.by_type[ast.ImportFrom]]
        self.imports = ImportMap.from_imports(imports)
        self._qualified: dict[int, str | None] = {}
        self._derived: dict[object, object] = {}
        self._scopes: dict[ast.AST, ast.AST] = {}  # node → its scope, filled by scope_of
        self.cells: list | None = None  # for a notebook: tfdoctor.lint.notebook.CellLine per line
        # The TensorFlow release the code runs on (tfdoctor.lint.target.Target), set by the runner; None: unknown
        self.target: Any = None
        # For a notebook, what its own cells say of the TensorFlow it runs on (tfdoctor.lint.notebook.Environment)
        self.environment: Any = None

    def _index(self, tree: ast.AST) -> None:
        """One pre-order pass for node types and parents: the one walk all rules share.

        This is the linter's hot loop: iter_child_nodes is inlined, fields that never hold a node worth
        visiting (names, `ctx`, operators) are skipped by a per-type table, children are pushed straight
        onto the stack in reverse (no list per node) so they pop in source order, and a child with no
        children of its own (a Name, a Constant: about half the nodes) is indexed where it is found,
        never pushed — so the lists of those leaf types are not in source order (rules use them as sets).
        """
        parents, by_type, node_type, list_type = self.parents, self.by_type, ast.AST, list
        table = _CHILD_FIELDS_REVERSED
        stack = [tree]
        pop, push = stack.pop, stack.append
        if type(tree) not in table:
            table[type(tree)] = _child_fields(type(tree))
        while stack:
            node = pop()
            kind = type(node)
            by_type[kind].append(node)
            for name in table[kind]:
                value = getattr(node, name, None)
                if value is None:
                    continue
                if type(value) is list_type:
                    for item in reversed(value):
                        if isinstance(item, node_type):
                            parents[item] = node
                            leaf_kind = type(item)
                            fields = table.get(leaf_kind)
                            if fields is None:
                                fields = table[leaf_kind] = _child_fields(leaf_kind)
                            if fields:
                                push(item)
                            else:
                                by_type[leaf_kind].append(item)
                elif isinstance(value, node_type):
                    parents[value] = node
                    leaf_kind = type(value)
                    fields = table.get(leaf_kind)
                    if fields is None:
                        fields = table[leaf_kind] = _child_fields(leaf_kind)
                    if fields:
                        push(value)
                    else:
                        by_type[leaf_kind].append(value)

    @classmethod
    def from_text(cls, text: str, path: str = "<string>") -> SourceModule:
        return cls(path, text, parse_source(text, path))

    @classmethod
    def from_path(cls, path: Path, display: str | None = None) -> SourceModule:
        return cls.from_bytes(read_source(path), path, display)

    @classmethod
    def from_bytes(cls, data: bytes, path: Path, display: str | None = None,
                   notebook: Notebook | None = None) -> SourceModule:
        """A file's bytes as read by `read_source` (the runner looks at them before deciding to parse); for a
        notebook, its cells when the runner has read them already."""
        if path.suffix == ".ipynb":
            return cls.from_notebook(data, display or str(path), notebook)
        return cls.from_text(decode_source(data), display or str(path))

    @classmethod
    def from_notebook(cls, data: bytes, path: str, notebook: Notebook | None = None) -> SourceModule:
        """A notebook's code cells as one module; `cells[i]` says where line i+1 comes from."""
        from tfdoctor.lint.notebook import NotebookError, environment, notebook_source, read_notebook

        try:
            notebook = notebook if notebook is not None else read_notebook(data.decode("utf-8-sig"))
            text, cells = notebook_source(notebook)
        except UnicodeDecodeError as exc:
            raise _undecodable(data, exc) from None
        except NotebookError as exc:
            error = SourceError("SRC002", str(exc))
            error.cell = exc.cell
            raise error from None
        try:
            module = cls(path, text, parse_source(text, path))
        except SourceError as error:  # report the syntax error at its cell and line
            if error.code == "SRC001" and 1 <= error.line <= len(cells):
                where = cells[error.line - 1]
                error.cell, error.line, error.raw_line = where.cell, where.line, where.raw_line
            raise
        module.cells = cells
        module.environment = environment(notebook)
        return module

    def derived(self, factory: Callable[[SourceModule], T]) -> T:
        """`factory(self)`, computed once per module: analyses that several rules share."""
        if factory not in self._derived:
            self._derived[factory] = factory(self)
        return self._derived[factory]  # type: ignore[return-value]

    def release(self) -> None:
        """Drop the derived analyses once every rule has run. They refer back to the module, and that cycle
        kept each file's tree alive until a garbage collection walked all of it (issue 25: a third of
        lint's time over `ast.parse`); without it the tree is freed the moment the runner lets go of it."""
        self._derived.clear()

    @cached_property
    def lines(self) -> list[str]:
        return self.text.splitlines()

    def nodes(self, kind: type) -> list:
        return self.by_type.get(kind, [])

    @property
    def calls(self) -> list[ast.Call]:
        return self.nodes(ast.Call)

    def qualified(self, node: ast.AST) -> str | None:
        """Canonical name of what `node` refers to (`tf.data.Dataset.from_tensor_slices`), memoised."""
        key = id(node)
        try:
            return self._qualified[key]
        except KeyError:
            name = self._qualified[key] = self.imports.qualified(node)
            return name

    def call_name(self, call: ast.Call) -> str | None:
        # qualified(call.func) inlined: rules ask this hundreds of thousands of times per corpus
        func = call.func
        try:
            return self._qualified[id(func)]
        except KeyError:
            name = self._qualified[id(func)] = self.imports.qualified(func)
            return name

    @cached_property
    def calls_by_name(self) -> dict[str, list[ast.Call]]:
        """Calls of imported names, by canonical name: rules look up what they need instead of scanning."""
        found: dict[str, list[ast.Call]] = defaultdict(list)
        memo, qualified = self._qualified, self.imports.qualified
        for call in self.calls:  # call_name inlined: every call of every file passes here once
            func = call.func
            key = id(func)
            if key in memo:
                name = memo[key]
            else:
                name = memo[key] = qualified(func)
            if name is not None:
                found[name].append(call)
        return found

    def calls_named(self, *names: str) -> list[ast.Call]:
        found = [c for n in names for c in self.calls_by_name.get(n, ())]
        return sorted(found, key=lambda c: (c.lineno, c.col_offset)) if len(names) > 1 else found

    def ancestors(self, node: ast.AST):
        while node in self.parents:
            node = self.parents[node]
            yield node

    def scope_of(self, node: ast.AST) -> Scope:
        """The innermost function, lambda, class or module around `node`; memoised along the path, so asking
        for every call of a file walks each ancestor chain once."""
        cache, parents = self._scopes, self.parents
        walked = []
        current = node
        scope: ast.AST = self.tree
        while current in parents:
            current = parents[current]
            if isinstance(current, _SCOPES):
                scope = current
                break
            known = cache.get(current)
            if known is not None:
                scope = known
                break
            walked.append(current)
        for passed in walked:
            cache[passed] = scope
        return scope  # type: ignore[return-value]

    def _char_column(self, line: int, byte_col: int) -> int:
        if 1 <= line <= len(self.lines):
            text = self.lines[line - 1]
            if not text.isascii():
                return len(text.encode("utf-8")[:byte_col].decode("utf-8", "replace")) + 1
        return byte_col + 1

    def position(self, node: ast.AST) -> Position:
        line = getattr(node, "lineno", 1)
        end_line = getattr(node, "end_lineno", None) or line
        col = getattr(node, "col_offset", 0)
        end_col = getattr(node, "end_col_offset", None)
        end_col = col if end_col is None else end_col
        return Position(line, self._char_column(line, col), end_line, self._char_column(end_line, end_col))

    def segment(self, node: ast.AST) -> str:
        return ast.get_source_segment(self.text, node) or ""


_CHILD_FIELDS_REVERSED: dict[type, tuple[str, ...]] = {ast.Constant: (), ast.Name: ()}


@functools.cache
def child_fields(kind: type) -> tuple[str, ...]:
    """The fields of a node type that may hold child nodes worth visiting, in source order (walkers share
    the index's table instead of ast's generic iteration over every field)."""
    return tuple(f for f in kind._fields if f not in _LEAF_FIELDS)


def _child_fields(kind: type) -> tuple[str, ...]:
    """The fields of a node type that may hold child nodes, last first (the index pushes them)."""
    return tuple(reversed([f for f in kind._fields if f not in _LEAF_FIELDS]))
# Fields holding identifiers, flags or shared singletons (Load/Store, operators): nothing to lint below.
_LEAF_FIELDS = frozenset({"ctx", "op", "ops", "id", "attr", "arg", "name", "kind", "type_comment", "level",
                          "is_async", "conversion", "module"})


def keyword(call: ast.Call, name: str) -> ast.keyword | None:
    return next((k for k in call.keywords if k.arg == name), None)


def argument(call: ast.Call, name: str, position: int | None = None) -> ast.expr | None:
    """The expression passed for parameter `name`, by keyword or at `position` (0-based)."""
    found = keyword(call, name)
    if found is not None:
        return found.value
    if position is not None and len(call.args) > position and not any(
        isinstance(a, ast.Starred) for a in call.args[: position + 1]
    ):
        return call.args[position]
    return None


def called_name(call: ast.Call) -> str:
    """The last part of what a call names (`opt.minimize(...)`: "minimize", `make(...)`: "make"), "" for anything
    else (`fns[0](x)`): for matching methods on objects no import resolves."""
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def constant(node: ast.AST | None) -> object:
    """A literal's value, or the `_MISSING` marker when `node` is not a plain literal."""
    if isinstance(node, ast.Constant):
        return node.value
    return _MISSING


_MISSING = object()
