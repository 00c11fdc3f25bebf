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
from dataclasses import dataclass

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
    pass


def notebook_source(data: str) -> tuple[str, list[CellLine]]:
    """(Python text of the code cells, where each of its lines comes from). NotebookError if not a notebook."""
    try:
        document = json.loads(data)
    except json.JSONDecodeError as exc:
        raise NotebookError(f"not a valid notebook: invalid JSON at line {exc.lineno}: {exc.msg}") from None
    except (RecursionError, ValueError) as exc:  # nested too deeply; a number with too many digits
        raise NotebookError(f"not a valid notebook: {type(exc).__name__}: {str(exc)[:200]}") from None
    cells = document.get("cells") if isinstance(document, dict) else None
    if not isinstance(cells, list):
        raise NotebookError("not a valid notebook: no 'cells' list (nbformat 4)")
    transform = ipython_syntax.cell_transformer()
    lines: list[str] = []
    where: list[CellLine] = []
    sources: list[list[str]] = []
    for number, cell in enumerate(cells, 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list):
            source = "".join(s for s in source if isinstance(s, str))
        if not isinstance(source, str):
            raise NotebookError(f"not a valid notebook: cell {number} has a source that is not text")
        cell_lines = source.splitlines()
        sources.append(cell_lines)
        for index, (text, shift) in enumerate(transform(cell_lines), 1):
            lines.append(text)
            where.append(CellLine(number, index, 0, shift))
    _raw_lines(data, sources, where)
    return "\n".join(lines) + ("\n" if lines else ""), where


def _raw_lines(data: str, cells: list[list[str]], where: list[CellLine]) -> None:
    """Find, in order, the .ipynb line that stores each source line (nbformat writes one per line).

    Jupyter writes a cell's keys sorted, so its `outputs` (any length) come before its `source`: the
    search goes forward without a window. A line matches only when it is exactly the JSON string of
    that source line (with its newline, then an optional comma), so an output or a traceback quoting
    the same code does not. When a cell's first line is not found (a source stored as one string), the
    cell keeps 0 and the search does not move; after a few such cells it stops (a notebook written
    with one string per cell), so the search reads the file a bounded number of times.
    """
    raw = [line.strip() for line in data.splitlines()]
    at, index, misses = 0, 0, 0
    for cell_lines in cells:
        for number, text in enumerate(cell_lines):
            found = -1 if misses >= _GIVE_UP else _find(raw, at, text, number == len(cell_lines) - 1)
            if found < 0:  # the rest of this cell keeps 0 (SARIF then points at the file's first line)
                misses += 1
                break
            where[index + number] = CellLine(where[index + number].cell, where[index + number].line, found + 1,
                                             where[index + number].shift)
            at = found + 1
        index += len(cell_lines)


_GIVE_UP = 8


def _find(raw: list[str], at: int, text: str, last: bool) -> int:
    forms = set()
    for ascii_only in (False, True):
        for ending in ("\n", "\r\n", "") if last else ("\n", "\r\n"):
            encoded = json.dumps(text + ending, ensure_ascii=ascii_only)
            forms |= {encoded, encoded + ","}
    for probe in range(at, len(raw)):
        if raw[probe] in forms:
            return probe
    return -1
