"""Jupyter notebooks as Python: code cells in order, IPython magics and shell lines blanked out.

The code cells are joined into one text (one line per source line, so positions map back exactly);
a line that is not Python (`%timeit`, `!pip install`, `files = !ls`, `x?`, a `%%bash` cell) becomes an
empty line rather than a syntax error. Each line of that text knows its cell (1-based, counting every
cell as Jupyter shows them), its line in the cell, and the line of the .ipynb file that stores it, which
is where a SARIF viewer opening the file as text can put a region.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

_MAGIC = re.compile(r"^\s*(%|!|\?)|^\s*[\w.\[\], ]+\s*=\s*[!%]|\?\??\s*$")


@dataclass(frozen=True)
class CellLine:
    """Where a line of the code extracted from a notebook comes from: its cell, its line there, its line in
    the file."""

    cell: int  # 1-based, among all cells of the notebook
    line: int  # 1-based, in the cell
    raw_line: int  # 1-based line of the .ipynb file holding it; 0 when it could not be told


class NotebookError(ValueError):
    pass


def notebook_source(data: str) -> tuple[str, list[CellLine]]:
    """(Python text of the code cells, where each of its lines comes from). NotebookError if not a notebook."""
    try:
        document = json.loads(data)
    except json.JSONDecodeError as exc:
        raise NotebookError(f"not a valid notebook: invalid JSON at line {exc.lineno}: {exc.msg}") from None
    except RecursionError:
        raise NotebookError("not a valid notebook: JSON nested too deeply") from None
    cells = document.get("cells") if isinstance(document, dict) else None
    if not isinstance(cells, list):
        raise NotebookError("not a valid notebook: no 'cells' list (nbformat 4)")
    lines: list[str] = []
    where: list[CellLine] = []
    for number, cell in enumerate(cells, 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list):
            source = "".join(s for s in source if isinstance(s, str))
        if not isinstance(source, str):
            raise NotebookError(f"not a valid notebook: cell {number} has a source that is not text")
        cell_lines = source.splitlines()
        cell_magic = bool(cell_lines) and cell_lines[0].lstrip().startswith("%%")
        continued = False  # a shell or magic line ending in a backslash goes on to the next line
        for index, text in enumerate(cell_lines, 1):
            if continued:
                continued = text.rstrip().endswith("\\")
                text = ""
            elif cell_magic or _MAGIC.search(text):
                continued = text.rstrip().endswith("\\")
                # `pass` at the line's indentation: the block it may sit in (`if COLAB: !pip …`) stays valid
                text = text[: len(text) - len(text.lstrip())] + "pass" if not cell_magic else ""
            lines.append(text)
            where.append(CellLine(number, index, 0))
    _raw_lines(data, [line for line in _source_lines(cells)], where)
    return "\n".join(lines) + ("\n" if lines else ""), where


def _source_lines(cells: list) -> list[str]:
    out = []
    for cell in cells:
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            source = cell.get("source", "")
            if isinstance(source, list):
                source = "".join(s for s in source if isinstance(s, str))
            out += source.splitlines() if isinstance(source, str) else []
    return out


def _raw_lines(data: str, sources: list[str], where: list[CellLine]) -> None:
    """Find, in order, the .ipynb line that stores each source line (nbformat writes one per line)."""
    raw = data.splitlines()
    at = 0
    for index, text in enumerate(sources):
        encoded = json.dumps(text, ensure_ascii=False)[:-1]  # the opening quote and the escaped text
        for probe in range(at, min(len(raw), at + 200)):
            if encoded in raw[probe]:
                where[index] = CellLine(where[index].cell, where[index].line, probe + 1)
                at = probe + 1
                break
