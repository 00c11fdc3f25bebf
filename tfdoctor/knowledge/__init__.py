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

import functools
import os

from tfdoctor.records import value_tuple

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    import datetime  # imported where a date is made: the pre-job hook reads rows only (table_rows), no date
    from collections.abc import Callable
    from typing import Any


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
# importlib.resources, which costs the pre-job hook ~10 ms of imports (zipfile, typing, ...). A string, not a
# pathlib.Path: pathlib costs it ~2 ms more.
HERE = os.path.dirname(os.path.realpath(__file__))


class KnowledgeError(Exception):
    """A packaged table is missing or malformed: a defect of tfdoctor itself, never of the user's input."""


@value_tuple
class Table:
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
        entry.removesuffix(".toml")
        for entry in os.listdir(HERE)
        if entry.endswith(".toml")
    )


# Each table also ships parsed, as compiled/<name>.json with the CRC-32 of the TOML it came from: the
# pre-job hook reads two tables on every run, and tomllib (pure Python) costs it ~6 ms where json.loads
# costs a tenth of one. The TOML stays the one source: a compiled file whose CRC does not match the
# TOML beside it is ignored. `python -m tfdoctor.knowledge` rewrites them (tests/test_knowledge.py
# fails while one is stale).
COMPILED = os.path.join(HERE, "compiled")
_TAG = "$toml"  # how a TOML date, time or datetime is written in JSON: {"$toml": ["date", "2026-11-23"]}


# A table is a few tens of KB: a file far larger (or /dev/zero, or a FIFO, in its place) is refused unread.
TABLE_LIMIT = 4 * 1024 * 1024


def _read(path: str) -> bytes:
    """A table's bytes: a regular file of at most TABLE_LIMIT (OSError otherwise, never a hang)."""
    from tfdoctor.facts.bounded import InputFileError, read_input_file

    try:
        return read_input_file(path, TABLE_LIMIT, "knowledge file", timeout=5.0)
    except InputFileError as exc:
        raise OSError(str(exc)) from None


def _document_crc(document: Any) -> int:
    """The CRC-32 of a compiled document as compact JSON: a twin edited by hand (its TOML CRC kept) fails it."""
    import json
    import zlib

    return zlib.crc32(json.dumps(document, default=_tag, ensure_ascii=False, separators=(",", ":")).encode())


def _document(name: str, untag: Callable[[dict[str, Any]], Any] | None = None) -> dict[str, Any]:
    """Table `name` parsed; `untag` reads the tags of its compiled twin (_untag by default)."""
    source = _read(os.path.join(HERE, f"{name}.toml"))
    compiled = _compiled(name, source, untag or _untag)
    if compiled is not None:
        return compiled
    tomllib = _tomllib()
    try:
        return tomllib.loads(source.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise KnowledgeError(f"knowledge table {name!r}: {exc}") from exc


def _compiled(name: str, source: bytes, untag: Callable[[dict[str, Any]], Any] | None = None) -> dict[str, Any] | None:
    """The compiled twin of a table, when it was compiled from exactly `source`; None otherwise. Its tags
    parsed by `untag`: _untag makes dates, times and datetimes of them, _checked_tag leaves them as they are
    (the CRC of the document is the same either way: a parsed value is written back as the tag it was)."""
    import json
    import zlib

    try:
        data = json.loads(_read(os.path.join(COMPILED, f"{name}.json")), object_hook=untag or _untag)
    except (OSError, ValueError, KeyError, TypeError, RecursionError):  # missing, special, or not what
        return None                                                      # compile_table writes
    if not isinstance(data, dict) or data.get("crc32") != zlib.crc32(source):
        return None
    document = data.get("document")
    try:
        if not isinstance(document, dict) or data.get("document_crc32") != _document_crc(document):
            return None  # hand-edited after compiling: the TOML is the source
    except (TypeError, ValueError, RecursionError):
        return None
    return document


def _untag(value: dict[str, Any]) -> Any:
    if len(value) == 1 and _TAG in value:
        import datetime

        kind, text = value[_TAG]
        parse = {"date": datetime.date, "time": datetime.time, "datetime": datetime.datetime}[kind]
        return parse.fromisoformat(text)
    return value


_TAG_KINDS = ("date", "time", "datetime")


def _checked_tag(value: dict[str, Any]) -> Any:
    """A tag left as it is, once its shape is what _untag parses (the same errors otherwise)."""
    if len(value) == 1 and _TAG in value:
        kind, text = value[_TAG]
        if kind not in _TAG_KINDS:
            raise KeyError(kind)
        if not isinstance(text, str):
            raise TypeError(f"fromisoformat: argument must be str, not {type(text).__name__}")
    return value


def _is_tag(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and _TAG in value


def _tag(value: Any) -> Any:
    import datetime

    for kind, cls in (("datetime", datetime.datetime), ("date", datetime.date), ("time", datetime.time)):
        if isinstance(value, cls):
            return {_TAG: [kind, value.isoformat()]}
    raise TypeError(f"{type(value).__name__} is not a TOML value")


def compile_table(name: str) -> str:
    """The compiled twin of table `name`, as the JSON text `python -m tfdoctor.knowledge` writes."""
    import json
    import zlib

    with open(os.path.join(HERE, f"{name}.toml"), "rb") as handle:
        source = handle.read()
    document = _tomllib().loads(source.decode("utf-8"))
    return json.dumps({"source": f"{name}.toml", "crc32": zlib.crc32(source),
                       "document_crc32": _document_crc(document), "document": document},
                      default=_tag, indent=1, ensure_ascii=False) + "\n"  # the TOML's key order


def _is_date(value: Any) -> bool:
    import datetime

    return isinstance(value, datetime.date) and not isinstance(value, datetime.datetime)


def _validated(name: str, document: dict[str, Any], is_date: Callable[[Any], bool] = _is_date,
               ) -> tuple[dict[str, Any], list[str], list[dict[str, Any]]]:
    """A table's [meta], sources and rows, once they are what a table must have (KnowledgeError otherwise)."""
    meta = document.get("meta")
    if not isinstance(meta, dict):
        raise KnowledgeError(f"knowledge table {name!r} has no [meta] table")
    sources = meta.get("source")
    if isinstance(sources, str):
        sources = [sources]
    if not isinstance(sources, list) or not sources or not all(isinstance(s, str) and s for s in sources):
        raise KnowledgeError(f"knowledge table {name!r}: [meta] source must name where it was taken from")
    if not is_date(meta.get("taken")):
        raise KnowledgeError(f"knowledge table {name!r}: [meta] taken must be a date (YYYY-MM-DD)")
    rows = document.get("rows", [])
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise KnowledgeError(f"knowledge table {name!r}: rows must be an array of tables")
    return meta, sources, rows


def _load(name: str, untag: Callable[[dict[str, Any]], Any] | None = None) -> dict[str, Any]:
    try:
        return _document(name, untag)
    except OSError as exc:
        raise KnowledgeError(f"knowledge table {name!r}: {exc}") from exc


@functools.cache
def table(name: str) -> Table:
    """Load the packaged table `name` (cached: tables are read once per process)."""
    document = _load(name)
    meta, sources, rows = _validated(name, document)
    return Table(
        name=name,
        title=str(meta.get("title", name)),
        sources=tuple(sources),
        taken=meta["taken"],
        rows=tuple(rows),
        data=document,
    )


@functools.cache
def table_rows(name: str) -> tuple[dict[str, Any], ...]:
    """table(name).rows, validated as table() validates them, without parsing the table's date: what the
    pre-job hook reads (it never imports datetime). A compiled twin's tags are checked as _untag would
    parse them, not parsed; a table with a date, time or datetime beyond [meta] taken is read by table()."""
    tags: list[dict[str, Any]] = []

    def kept(value: dict[str, Any]) -> Any:
        if _is_tag(value):
            tags.append(value)
        return _checked_tag(value)

    def is_date(value: Any) -> bool:
        if any(value is tag for tag in tags):  # the twin's own tag (not a TOML table that looks like one)
            return bool(value[_TAG][0] == "date")
        return _is_date(value)  # from the TOML: tomllib has imported datetime

    meta, _, rows = _validated(name, _load(name, kept), is_date)
    if any(tag is not meta["taken"] for tag in tags):
        return table(name).rows
    return tuple(rows)


def referenced(text: str) -> list[Table]:
    """The packaged tables a check's documentation names (as tfdoctor/knowledge/<name>.toml), so that
    `tfdoctor explain` and docs/checks.md can cite them."""
    import re

    names = dict.fromkeys(re.findall(r"knowledge/([a-z0-9_]+)\.toml", text))
    return [table(name) for name in names if name in available()]
