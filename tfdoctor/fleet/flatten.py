"""One node's facts as a flat {fact: value} map, following the selection table (pure)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from fnmatch import fnmatchcase
from typing import Any

from tfdoctor.facts import Facts, Unknown
from tfdoctor.fleet.selection import FACT_RULES, FactRule

_WILDCARDS = frozenset("*?[")


def _children(node: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(node, Mapping):
        yield from ((str(k), v) for k, v in node.items())
    elif isinstance(node, list):
        yield from ((str(i), v) for i, v in enumerate(node))


def _match(node: Any, parts: list[str], prefix: str) -> Iterator[tuple[str, Any]]:
    """(concrete dotted path, value) for every place the pattern parts reach."""
    if not parts:
        yield prefix, node
        return
    part, rest = parts[0], parts[1:]
    if isinstance(node, Unknown):
        yield prefix, node  # the section (or a part of it) that would hold the fact is unknown
        return
    if _WILDCARDS.isdisjoint(part):
        if isinstance(node, Mapping) and part in node:
            yield from _match(node[part], rest, f"{prefix}.{part}" if prefix else part)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            yield from _match(node[int(part)], rest, f"{prefix}.{part}")
        return
    for key, child in _children(node):
        if fnmatchcase(key, part):
            yield from _match(child, rest, f"{prefix}.{key}" if prefix else key)


def _leaves(path: str, value: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(value, Mapping) and value:
        for key, child in value.items():
            yield from _leaves(f"{path}.{key}", child)
    else:
        yield path, comparable(value)


def comparable(value: Any) -> Any:
    """A hashable form: lists become tuples, mappings sorted tuples of pairs."""
    if isinstance(value, list | tuple):
        return tuple(comparable(v) for v in value)
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), comparable(v)) for k, v in value.items()))
    return value


def _apply(rule: FactRule, sections: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    for path, value in _match(sections, rule.pattern.split("."), ""):
        if isinstance(value, Unknown):
            yield path, value
        elif rule.mode == "count":
            yield f"{path}#count", len(value) if isinstance(value, list | Mapping) else comparable(value)
        elif rule.mode == "set" and isinstance(value, list):
            for element in value:
                yield f"{path}[{element}]", "present"
        else:
            yield from _leaves(path, value)


def flatten(facts: Facts, rules: Iterable[FactRule] = FACT_RULES) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for rule in rules:
        for path, value in _apply(rule, facts.sections):
            flat.setdefault(path, value)
    return flat
