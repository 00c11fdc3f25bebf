"""The lines of a log that no known message matched, and which of them look like errors.

`explain --log` says how much of the log it understood: a log whose one fatal line is unknown must not
read as "nothing wrong". A line "looks like an error" by its log level (TensorFlow's `E`/`F` lines, absl's
`E0000`) or by a word only errors use; plain substring tests, linear in the line.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

# Words only an error, a crash or a fatal message prints (case-sensitive).
ERROR_WORDS = ("Error", "ERROR", "Exception", "Traceback", "FATAL", "Fatal", "Segmentation fault", "core dumped",
               "Killed", "Aborted", "failed", "Failed")
# TensorFlow's "<timestamp>: E file.cc:12] …" and absl's "E0000 00:00:… file.cc:12] …" (also F: fatal).
LEVEL_MARKS = (": E ", ": F ")
SHOWN = 20  # error-looking lines listed; the rest are counted


class Unrecognised(NamedTuple):
    """How many non-blank lines no known message matched, and the error-looking ones (line, text)."""

    lines: int
    error_looking: tuple[tuple[int, str], ...]
    error_looking_total: int


def looks_like_error(line: str) -> bool:
    if len(line) > 5 and line[0] in "EF" and line[1:5].isdigit() and line[5] == " ":
        return True
    return any(mark in line for mark in LEVEL_MARKS) or any(word in line for word in ERROR_WORDS)


def unrecognised(text: str, recognised: Iterable[int]) -> Unrecognised:
    known = set(recognised)
    count, shown, total = 0, [], 0
    for number, line in enumerate(text.split("\n"), start=1):
        if number in known or not line.strip():
            continue
        count += 1
        if looks_like_error(line):
            total += 1
            if len(shown) < SHOWN:
                shown.append((number, line))
    return Unrecognised(count, tuple(shown), total)
