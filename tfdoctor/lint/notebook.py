"""Jupyter notebooks as Python, read the way IPython reads their cells (issue 25, item 6).

The code cells are joined into one text, one line per source line, so positions map back exactly.
Each cell goes through IPython's own input transformations (`IPython.core.inputtransformer2`, when
IPython is installed; else `tfdoctor.lint.ipython_syntax`, which the tests hold to the same answers on
the same cells): the common indentation of a pasted cell and `>>>`/`In [1]:` prompts are stripped,
`%magic`, `!shell`, `x = !ls`, `x = %who`, `obj?` at the start of a logical line become `pass` at
their indentation (so `if COLAB: !pip …` stays a valid block) and their backslash continuation lines
become empty — while a `%` continuing an expression inside brackets, or a `?` in a comment, stay
Python. A cell magic's cell is blanked, except the magics that run their body as Python (`%%time`,
`%%timeit`, `%%capture`…): their body is a cell of its own.

Each line of the joined text knows its cell (1-based, counting every cell as Jupyter shows them), its
line in the cell, the column shift a stripped indentation or prompt introduced, and the line of the
.ipynb file that stores it — where a SARIF viewer opening the file as text can put a region.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring, encode_basestring_ascii  # type: ignore[attr-defined]
from typing import overload

from tfdoctor.facts.parse import flag_tokens
from tfdoctor.lint import ipython_syntax


@dataclass(frozen=True)
class CellLine:
    """Where a line of the code extracted from a notebook comes from: its cell, its line there, its line in
    the file, and how many characters IPython stripped from the start of the line (a pasted indentation)."""

    cell: int  # 1-based, among all cells of the notebook
    line: int  # 1-based, in the cell
    raw_line: int  # 1-based line of the .ipynb file holding it; 0 when it could not be told
    shift: int = 0  # characters stripped from the start of the line: add to columns


class NotebookError(ValueError):
    def __init__(self, message: str, cell: int | None = None) -> None:
        super().__init__(message)
        self.cell = cell  # the cell it is about, when it is about one


class CellLines(Sequence[CellLine]):
    """Where each line of the joined text comes from, one `CellLine` per line.

    The .ipynb line of each source line is searched for on first use, for the whole notebook at once: only
    SARIF regions need it, so only a notebook with a finding pays for the search (issue 39, item 7: it was
    a sixth of lint's CPU on notebook repositories, every notebook paying it)."""

    def __init__(self, data: str, sources: list[list[str]], lines: list[tuple[int, int, int]]) -> None:
        self._data: str | None = data
        self._sources = sources
        self._lines = lines  # (cell, line in the cell, shift) per line of the joined text
        self._raw: list[int] | None = None

    def __len__(self) -> int:
        return len(self._lines)

    @overload
    def __getitem__(self, index: int) -> CellLine: ...

    @overload
    def __getitem__(self, index: slice) -> list[CellLine]: ...

    def __getitem__(self, index: int | slice) -> CellLine | list[CellLine]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        cell, line, shift = self._lines[index]
        if self._raw is None:
            self._raw = _raw_lines(self._data or "", self._sources)
            self._data, self._sources = None, []
        return CellLine(cell, line, self._raw[index], shift)


@dataclass(frozen=True)
class Notebook:
    """A notebook's JSON as text, and its code cells: (number among all cells, 1-based; source)."""

    text: str
    cells: list[tuple[int, str]]
    colab: bool = False  # its metadata has Colab's key: it was last saved by Colab, and ran there

    @property
    def code(self) -> str:
        """The code cells' sources as written, one after the other (what lint can find anything in)."""
        return "\n".join(source for _, source in self.cells)


def read_notebook(data: str) -> Notebook:
    """The code cells of a notebook; NotebookError if it is not one."""
    try:
        document = json.loads(data)
    except json.JSONDecodeError as exc:
        raise NotebookError(f"not a valid notebook: invalid JSON at line {exc.lineno}: {exc.msg}") from None
    except (RecursionError, ValueError) as exc:  # nested too deeply; a number with too many digits
        raise NotebookError(f"not a valid notebook: {type(exc).__name__}: {str(exc)[:200]}") from None
    cells = document.get("cells") if isinstance(document, dict) else None
    if not isinstance(cells, list):
        raise NotebookError("not a valid notebook: no 'cells' list (nbformat 4)")
    code = []
    for number, cell in enumerate(cells, 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list):
            source = "".join(s for s in source if isinstance(s, str))
        if not isinstance(source, str):
            raise NotebookError(f"not a valid notebook: cell {number} has a source that is not text")
        code.append((number, source))
    metadata = document.get("metadata")
    return Notebook(data, code, isinstance(metadata, dict) and "colab" in metadata)


@dataclass(frozen=True)
class Environment:
    """What a notebook's own cells say of the TensorFlow it runs on (tfdoctor/lint/target.py, for_notebook)."""

    colab: bool  # saved by Colab (its metadata), where it runs on Colab's TensorFlow of the day
    installs: tuple[tuple[int, str], ...]  # (cell, requirement as written) its shell lines install
    magic: tuple[int, str] | None  # (cell, value) of Colab's `%tensorflow_version VALUE`, the first one
    requirement_files: bool  # it installs from a requirement file (`pip install -r requirements.txt`)


# `!pip install …`, `%pip install …`, `!python -m pip install …`, `!conda install …`: what follows the verb.
# Bounded and anchored (matched at the start of a line of at most 500 characters): linear on any text.
_INSTALL = re.compile(r"[!%]\s{0,8}(?:pip3?|python3?(?:\.\d{1,2})?\s{1,8}-m\s{1,8}pip|conda|mamba|micromamba|"
                      r"uv\s{1,8}pip)\s{1,8}install\s(.{1,400})")
_MAGIC = re.compile(r"%\s{0,8}tensorflow_version\s{1,8}(\S{1,20})")
# pip's and conda's options whose value is the next word (`-c` is pip's constraint file, conda's channel)
_TAKES_VALUE = frozenset({"-r", "--requirement", "-c", "--constraint", "-e", "--editable", "-f", "--find-links",
                          "-i", "--index-url", "--extra-index-url", "-t", "--target", "--prefix", "--root",
                          "-n", "--name", "-p", "--channel", "--platform", "--python-version"})
_REQUIREMENT_FILE = frozenset({"-r", "--requirement"})
_WORDS = 40  # requirements read from one install command (a real one names a few)
_SHELL_CELLS = ("%%bash", "%%sh", "%%shell", "%%script bash", "%%script sh")


def environment(notebook: Notebook) -> Environment:
    """The TensorFlow a notebook installs or selects in its own cells, and whether Colab saved it."""
    installs: list[tuple[int, str]] = []
    magic: tuple[int, str] | None = None
    requirement_files = False
    for number, source in notebook.cells:
        if "install" not in source and "tensorflow_version" not in source:
            continue  # the common cell: nothing to read
        shell = source.lstrip().startswith(_SHELL_CELLS)  # a cell run by the shell: every line is a command
        for line in source.splitlines():
            line = line.strip()[:500]
            if shell and line[:1] not in "!%":
                line = "!" + line
            found = _MAGIC.match(line)
            if found is not None and magic is None:
                magic = number, found.group(1)
            found = _INSTALL.match(line)
            if found is None:
                continue
            words, from_file = _install_words(found.group(1))
            requirement_files = requirement_files or from_file
            installs += [(number, word) for word in words[:_WORDS]]
    return Environment(notebook.colab, tuple(installs), magic, requirement_files)


def _install_words(text: str) -> tuple[list[str], bool]:
    """The requirements an install command names (its options and their values dropped, shell quoting
    undone), and whether it installs from a requirement file."""
    command = re.split(r"&&|\|\||[;|#]", text, maxsplit=1)[0]  # the install itself, not what follows it
    words = flag_tokens(command)  # quotes undone as a shell would; with a stray quote, split on whitespace
    found, from_file, skip = [], False, False
    for word in words:
        if skip:
            skip = False
            continue
        option = word.split("=", 1)[0] if word.startswith("--") else word
        if option in _REQUIREMENT_FILE:
            from_file = True
        if word in _TAKES_VALUE:
            skip = True
        elif not word.startswith("-") and word[:1] not in "{$":  # `{version}`, `$TF`: a value not written here
            found.append(word)
    return found, from_file


def notebook_source(data: str | Notebook) -> tuple[str, CellLines]:
    """(Python text of the code cells, where each of its lines comes from). NotebookError if not a notebook."""
    notebook = read_notebook(data) if isinstance(data, str) else data
    transform = ipython_syntax.cell_transformer()
    lines: list[str] = []
    where: list[tuple[int, int, int]] = []
    sources: list[list[str]] = []
    for number, source in notebook.cells:
        cell_lines = source.splitlines()
        sources.append(cell_lines)
        try:
            transformed = transform(cell_lines)
        except ipython_syntax.CellError as exc:
            raise NotebookError(str(exc), number) from None
        for index, (text, shift) in enumerate(transformed, 1):
            lines.append(text)
            where.append((number, index, shift))
    return "\n".join(lines) + ("\n" if lines else ""), CellLines(notebook.text, sources, where)


def _raw_lines(data: str, cells: list[list[str]]) -> list[int]:
    """The .ipynb line (1-based; 0: not found) that stores each source line, found in order (nbformat
    writes one per line).

    Jupyter writes a cell's keys sorted, so its `outputs` (any length) come before its `source`: the
    search goes forward without a window. A line matches only when it is exactly the JSON string of
    that source line (with its newline, then an optional comma), so an output or a traceback quoting
    the same code does not. When a cell's first line is not found (a source stored as one string), the
    cell keeps 0 and the search does not move; after a few such cells it stops (a notebook written
    with one string per cell), so the search reads the file a bounded number of times.
    """
    found_at: list[int] = [0] * sum(map(len, cells))
    raw = data.splitlines()
    at, index, misses = 0, 0, 0
    for cell_lines in cells:
        last = len(cell_lines) - 1
        for number, text in enumerate(cell_lines):
            found = -1 if misses >= _GIVE_UP else _find(raw, at, text, number == last)
            if found < 0:  # the rest of this cell keeps 0 (SARIF then points at the file's first line)
                misses += 1
                break
            found_at[index + number] = found + 1
            at = found + 1
        index += len(cell_lines)
    return found_at


def _openings(text: str) -> set[str]:
    """`text` as a JSON string (json.dumps either way) without its closing quote: a line's ending comes next."""
    return {encode_basestring(text)[:-1], encode_basestring_ascii(text)[:-1]}


def _forms(openings: set[str], last: bool) -> set[str]:
    """The stripped lines of the file that store a source line: its opening, its ending, maybe a comma."""
    return {opened + ending + comma for opened in openings for comma in ("", ",")
            for ending in (('\\n"', '\\r\\n"', '"') if last else ('\\n"', '\\r\\n"'))}


_GIVE_UP = 8


def _find(raw: list[str], at: int, text: str, last: bool) -> int:
    """The first line from `at` on that is, stripped, `text` as the JSON string of a source line, or -1."""
    if at < len(raw):  # the usual case first: the next line, as Jupyter writes it (UTF-8, \n, a comma)
        here = raw[at].strip()
        likely = encode_basestring(text if last else text + "\n")
        if here == likely or here == likely + ",":
            return at
    wanted = _forms(_openings(text), last)
    for probe in range(at, len(raw)):
        if raw[probe].strip() in wanted:
            return probe
    return -1
