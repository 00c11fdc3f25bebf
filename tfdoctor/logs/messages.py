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
_OPTIONAL = {"without_gpu": str}
_ID = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
_NEWLINE = re.compile("\n")


@dataclass(frozen=True)
class LogMessage:
    """One row of the log-message table: its pattern, what it means, whether it is harmless, its checks."""

    id: str
    origin: str
    pattern: re.Pattern[str]
    meaning: str
    harmless: bool
    checks: tuple[str, ...]
    advice: str
    source: str
    examples: tuple[str, ...]
    without_gpu: str = ""  # the advice when the machine has no NVIDIA GPU or driver ("" = `advice`)


@dataclass(frozen=True)
class Sighting:
    """One known message as it occurs in a log: its first line (1-based) and text, and how often."""

    message: LogMessage
    line: int
    text: str
    count: int
    lines: tuple[int, ...] = ()  # every line (1-based) the message occurs on


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
        for field, kind in _OPTIONAL.items():
            if field in row and not isinstance(row[field], kind):
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
            without_gpu=row.get("without_gpu", ""),
        ))
    return tuple(messages)


_META = set(".^$*+?{}[]()|\\")


def literal_prefix(pattern: str) -> str:
    """The fixed characters every match of `pattern` starts with ("" when it starts with a class or group)."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            if i + 1 >= len(pattern) or pattern[i + 1].isalnum():
                break  # \d, \S…: a class, not a character
            literal, step = pattern[i + 1], 2
        elif char in _META:
            break
        else:
            literal, step = char, 1
        following = pattern[i + step:i + step + 1]
        if following and following in "*?{":
            break  # the character is optional or repeated: not part of every match
        out.append(literal)
        if following == "+":
            break
        i += step
    return "".join(out)


# Bounds that keep every pattern linear on hostile text (one 1 MB line of a prefix repeated took 35–74 s):
# a match is tried on at most MATCH_CHARS characters from where its prefix starts (the longest real
# message is ~450), and at most TRIES_PER_LINE times per line (a real line holds a message once).
MATCH_CHARS = 2048
TRIES_PER_LINE = 4


def _starts(message: LogMessage, text: str) -> list[int]:
    """Where the message's matches start, at most one per line: its fixed prefix found with str.find (fast,
    in C), then the pattern tried at that position only, on a bounded window of the line; the plain scan,
    line by line on bounded lines, when it has no prefix."""
    prefix = literal_prefix(message.pattern.pattern)
    positions: list[int] = []
    if not prefix:
        line_start = 0
        while line_start <= len(text):
            line_end = text.find("\n", line_start)
            line_end = len(text) if line_end < 0 else line_end
            found = message.pattern.search(text, line_start, min(line_end, line_start + MATCH_CHARS))
            if found:
                positions.append(found.start())
            line_start = line_end + 1
        return positions
    position = text.find(prefix)
    tries, tried_line = 0, -1
    while position >= 0:
        line_start = text.rfind("\n", 0, position) + 1
        line_end = text.find("\n", position)
        line_end = len(text) if line_end < 0 else line_end
        tries = tries + 1 if line_start == tried_line else 1
        tried_line = line_start
        if message.pattern.match(text, position, min(line_end, position + MATCH_CHARS)):
            positions.append(position)
            position = text.find(prefix, line_end)  # one sighting per line is all that counts
            continue
        # A line past its tries is skipped whole: hostile lines repeat a prefix thousands of times.
        position = text.find(prefix, line_end if tries >= TRIES_PER_LINE else position + 1)
    return positions


def find_messages(text: str, messages: Sequence[LogMessage] | None = None) -> list[Sighting]:
    """Every known message in `text`, in order of first appearance.

    Each row looks for its fixed prefix over the whole text (str.find, in C) and tries its pattern only
    where that prefix is, rather than running every pattern on every line in Python.
    """
    messages = known_messages() if messages is None else messages
    starts = [0, *(newline.end() for newline in _NEWLINE.finditer(text))]  # where each line begins
    found: list[Sighting] = []
    for message in messages:
        lines = {bisect.bisect_right(starts, start) - 1 for start in _starts(message, text)}
        if not lines:
            continue
        line = min(lines)
        end = text.find("\n", starts[line])
        found.append(Sighting(message, line + 1, text[starts[line]:end if end >= 0 else len(text)], len(lines),
                              tuple(sorted(n + 1 for n in lines))))
    return sorted(found, key=lambda s: (s.line, s.message.id))
