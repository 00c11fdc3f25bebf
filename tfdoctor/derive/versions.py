"""Version strings as tuples of numbers ("12.2.140" -> (12, 2, 140)), for every derivation that compares
releases; an Unknown or None is the empty tuple."""

from __future__ import annotations

import re

from tfdoctor.facts import Unknown

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import Any


def version_tuple(text: Any) -> tuple[int, ...]:
    if text is None or isinstance(text, Unknown):
        return ()
    parts = []
    for piece in str(text).split("."):
        match = re.match(r"^[0-9]+", piece)
        if not match or len(match.group(0)) > 18:
            break  # no release number is that long: a hostile string, and int() refuses 4,300+ digits
        parts.append(int(match.group(0)))
        if match.group(0) != piece:
            break
    return tuple(parts)


def major_minor(text: Any) -> str:
    parts = version_tuple(text)
    return ".".join(str(p) for p in parts[:2]) if parts else str(text)
