"""One node's facts as a flat {fact: value} map, following the selection table (pure).

The table's patterns are compiled once into a tree of path parts, so one walk over a node's facts serves
every rule (a thousand nodes are flattened in well under a second).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from fnmatch import translate
from functools import lru_cache
from typing import Any

from tfdoctor.facts import Facts, Unknown
from tfdoctor.fleet.selection import FACT_RULES, FactRule

_WILDCARDS = frozenset("*?[")


@dataclass
class _Part:
    """One level of the compiled patterns: literal children, wildcard children, and rules ending here."""

    literal: dict[str, _Part] = field(default_factory=dict)
    wildcard: list[tuple[re.Pattern[str], _Part]] = field(default_factory=list)
    modes: list[str] = field(default_factory=list)
    plain: bool = False  # a leaf taking the value as it is: a scalar needs no further walk

    def seal(self) -> None:
        self.plain = not self.literal and not self.wildcard and self.modes == ["value"]
        for child in (*self.literal.values(), *(c for _, c in self.wildcard)):
            child.seal()


def _compile(rules: tuple[FactRule, ...]) -> _Part:
    root = _Part()
    for rule in rules:
        node = root
        for part in rule.pattern.split("."):
            if _WILDCARDS.isdisjoint(part):
                node = node.literal.setdefault(part, _Part())
            else:
                regex = re.compile(translate(part))
                found = next((child for pattern, child in node.wildcard if pattern == regex), None)
                if found is None:
                    found = _Part()
                    node.wildcard.append((regex, found))
                node = found
        node.modes.append(rule.mode)
    root.seal()
    return root


@lru_cache(maxsize=8)
def compiled(rules: tuple[FactRule, ...]) -> _Part:
    return _compile(rules)


def comparable(value: Any) -> Any:
    """A hashable form: lists become tuples, mappings sorted tuples of pairs."""
    if isinstance(value, list | tuple):
        return tuple(comparable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((str(k), comparable(v)) for k, v in value.items()))
    return value


def _leaves(path: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, dict) and value:
        for key, child in value.items():
            _leaves(f"{path}.{key}", child, out)
    elif path not in out:
        out[path] = comparable(value)


def _emit(path: str, value: Any, mode: str, out: dict[str, Any]) -> None:
    if isinstance(value, Unknown):
        out.setdefault(path, value)
    elif mode == "count":
        out.setdefault(f"{path}#count", len(value) if isinstance(value, list | dict) else comparable(value))
    elif mode == "set" and isinstance(value, list):
        for element in value:
            out.setdefault(f"{path}[{element}]", "present")
    elif mode.startswith("by:") and isinstance(value, list):
        field = mode[3:]
        for position, record in enumerate(value):
            key = record.get(field, position) if isinstance(record, dict) else position
            _leaves(f"{path}[{key}]", {k: v for k, v in record.items() if k != field}
                    if isinstance(record, dict) else record, out)
    else:
        _leaves(path, value, out)


def _walk(value: Any, part: _Part, path: str, out: dict[str, Any]) -> None:
    for mode in part.modes:
        _emit(path, value, mode, out)
    if not (part.literal or part.wildcard):
        return
    if isinstance(value, Unknown):
        out.setdefault(path, value)  # the section (or part of it) that would hold the facts is unknown
        return
    if isinstance(value, dict):
        items: Iterable[tuple[str, Any]] = value.items()
        get = value.get
    elif isinstance(value, list):
        items = ((str(i), v) for i, v in enumerate(value))
        get = None
    else:
        return
    prefix = f"{path}." if path else ""
    for key, child in part.literal.items():
        if get is not None:
            if key in value:
                _step(get(key), child, prefix + key, out)
        elif key.isdigit() and int(key) < len(value):
            _step(value[int(key)], child, prefix + key, out)
    if part.wildcard:
        for key, child_value in items:
            for regex, child in part.wildcard:
                if regex.match(key):
                    _step(child_value, child, prefix + key, out)


def _step(value: Any, part: _Part, path: str, out: dict[str, Any]) -> None:
    # Most facts end in a plain scalar (a package version, a variable): store it without the full walk.
    if part.plain and isinstance(value, str | int | float | bool | None):
        if path not in out:
            out[path] = value
    else:
        _walk(value, part, path, out)


def flatten(facts: Facts, rules: Iterable[FactRule] = FACT_RULES) -> dict[str, Any]:
    out: dict[str, Any] = {}
    _walk(facts.sections, compiled(tuple(rules)), "", out)
    return out
