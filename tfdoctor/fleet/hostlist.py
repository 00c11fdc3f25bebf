"""Node lists written compactly, the way Slurm writes them: node[01-03,07],gpu5 (pure)."""

from __future__ import annotations

import re
from collections.abc import Iterable

_NUMBERED = re.compile(r"^(.*?)(\d+)$")


def _ranges(numbers: list[str]) -> str:
    """Consecutive numbers of one width collapse into a range; widths are kept (01 stays 01)."""
    parts: list[str] = []
    ordered = sorted(numbers, key=lambda n: (len(n), int(n)))
    start = previous = ordered[0]
    for number in [*ordered[1:], None]:
        same_width = len(number or "") == len(previous) or not (number or "0").startswith("0")
        if number is not None and same_width and int(number) == int(previous) + 1:
            previous = number
            continue
        parts.append(start if start == previous else f"{start}-{previous}")
        if number is not None:
            start = previous = number
    return ",".join(parts)


def compress(names: Iterable[str]) -> str:
    groups: dict[str, list[str]] = {}
    plain: list[str] = []
    for name in sorted(set(names)):
        match = _NUMBERED.match(name)
        if match and "/" not in name:
            groups.setdefault(match.group(1), []).append(match.group(2))
        else:
            plain.append(name)
    parts = []
    for prefix, numbers in sorted(groups.items()):
        parts.append(f"{prefix}{numbers[0]}" if len(numbers) == 1 else f"{prefix}[{_ranges(numbers)}]")
    return ",".join([*parts, *plain])
