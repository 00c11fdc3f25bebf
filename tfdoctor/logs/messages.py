"""The known log messages (knowledge table `log_messages`) and how a log is matched against them."""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from tfdoctor import knowledge

TABLE = "log_messages"
_FIELDS = {"id": str, "origin": str, "pattern": str, "meaning": str, "harmless": bool, "checks": list,
           "advice": str, "source": str, "examples": list}
_ID = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
_NEWLINE = re.compile("\n")


@dataclass(frozen=True)
class LogMessage:
    id: str
    origin: str
    pattern: re.Pattern[str]
    meaning: str
    harmless: bool
    checks: tuple[str, ...]
    advice: str
    source: str
    examples: tuple[str, ...]


@dataclass(frozen=True)
class Sighting:
    """One known message as it occurs in a log: its first line (1-based) and text, and how often."""

    message: LogMessage
    line: int
    text: str
    count: int


@cache
def known_messages() -> tuple[LogMessage, ...]:
    """The table's rows, compiled. A malformed row is a defect of tfdoctor (KnowledgeError), not of the log."""
    table = knowledge.table(TABLE)
    messages = []
    for position, row in enumerate(table.rows):
        name = row.get("id", f"row {position + 1}")
        for field, kind in _FIELDS.items():
            if not isinstance(row.get(field), kind):
                raise knowledge.KnowledgeError(f"{TABLE}: {name}: {field} must be a {kind.__name__}")
        if not _ID.match(row["id"]):
            raise knowledge.KnowledgeError(f"{TABLE}: {name}: id must be kebab-case")
        try:
            # MULTILINE: the log is scanned as one text, and ^ / $ mean the start and end of a line.
            pattern = re.compile(row["pattern"], re.MULTILINE)
        except re.error as exc:
            raise knowledge.KnowledgeError(f"{TABLE}: {name}: pattern does not compile: {exc}") from None
        messages.append(LogMessage(
            id=row["id"], origin=row["origin"], pattern=pattern, meaning=row["meaning"],
            harmless=row["harmless"], checks=tuple(str(c) for c in row["checks"]), advice=row["advice"],
            source=row["source"], examples=tuple(str(e) for e in row["examples"]),
        ))
    return tuple(messages)


def find_messages(text: str, messages: Sequence[LogMessage] | None = None) -> list[Sighting]:
    """Every known message in `text`, in order of first appearance.

    Each pattern scans the whole text once (in C) rather than every line in Python: a log of 100,000
    lines is matched in about a second on a loaded machine instead of several.
    """
    messages = known_messages() if messages is None else messages
    starts = [0, *(newline.end() for newline in _NEWLINE.finditer(text))]  # where each line begins
    found: list[Sighting] = []
    for message in messages:
        lines = {bisect.bisect_right(starts, match.start()) - 1 for match in message.pattern.finditer(text)}
        if not lines:
            continue
        line = min(lines)
        end = text.find("\n", starts[line])
        found.append(Sighting(message, line + 1, text[starts[line]:end if end >= 0 else len(text)], len(lines)))
    return sorted(found, key=lambda s: (s.line, s.message.id))
