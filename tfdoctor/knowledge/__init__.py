"""Knowledge that changes with releases, kept as data: one TOML file per table, beside this module.

Every table names where it was taken from and when (`[meta] source`, `taken`), so a reader can tell how
old a verdict's ground is, and `tfdoctor explain` can show the row a check used. This module only loads
and validates tables; what a row means is for the derivation or check that reads it.

A table file looks like::

    [meta]
    title = "TensorFlow tested build configurations"
    source = ["https://www.tensorflow.org/install/source#gpu"]
    taken = 2026-11-23

    [[rows]]
    ...
"""

from __future__ import annotations

import datetime
import functools
from pathlib import Path
from typing import Any, NamedTuple


def _tomllib() -> Any:
    """tomllib, imported on first use: a check path that never consults a table (a host without an
    NVIDIA GPU) does not pay for the TOML parser."""
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    return tomllib


# The tables are package data installed beside this module (never zipped): a plain path, not
# importlib.resources, which costs the pre-job hook ~10 ms of imports (zipfile, typing, ...).
HERE = Path(__file__).resolve().parent


class KnowledgeError(Exception):
    """A packaged table is missing or malformed: a defect of tfdoctor itself, never of the user's input."""


class Table(NamedTuple):
    """A knowledge table: its rows, its title, its sources and the date it was taken."""

    name: str
    title: str
    sources: tuple[str, ...]
    taken: datetime.date
    rows: tuple[dict[str, Any], ...]
    data: dict[str, Any]  # the whole document, for tables that are not a list of rows

    def cite(self) -> str:
        """One line naming the table, its sources and its date: what `explain` prints under a verdict."""
        return f"{self.title} (taken {self.taken.isoformat()}; {', '.join(self.sources)})"


@functools.cache
def available() -> list[str]:
    return sorted(
        entry.name.removesuffix(".toml")
        for entry in HERE.iterdir()
        if entry.name.endswith(".toml")
    )


@functools.cache
def table(name: str) -> Table:
    """Load the packaged table `name` (cached: tables are read once per process)."""
    tomllib = _tomllib()
    try:
        document = tomllib.loads((HERE / f"{name}.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise KnowledgeError(f"knowledge table {name!r}: {exc}") from exc
    meta = document.get("meta")
    if not isinstance(meta, dict):
        raise KnowledgeError(f"knowledge table {name!r} has no [meta] table")
    sources = meta.get("source")
    if isinstance(sources, str):
        sources = [sources]
    if not isinstance(sources, list) or not sources or not all(isinstance(s, str) and s for s in sources):
        raise KnowledgeError(f"knowledge table {name!r}: [meta] source must name where it was taken from")
    taken = meta.get("taken")
    if not isinstance(taken, datetime.date) or isinstance(taken, datetime.datetime):
        raise KnowledgeError(f"knowledge table {name!r}: [meta] taken must be a date (YYYY-MM-DD)")
    rows = document.get("rows", [])
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise KnowledgeError(f"knowledge table {name!r}: rows must be an array of tables")
    return Table(
        name=name,
        title=str(meta.get("title", name)),
        sources=tuple(sources),
        taken=taken,
        rows=tuple(rows),
        data=document,
    )


def referenced(text: str) -> list[Table]:
    """The packaged tables a check's documentation names (as tfdoctor/knowledge/<name>.toml), so that
    `tfdoctor explain` and docs/checks.md can cite them."""
    import re

    names = dict.fromkeys(re.findall(r"knowledge/([a-z0-9_]+)\.toml", text))
    return [table(name) for name in names if name in available()]
