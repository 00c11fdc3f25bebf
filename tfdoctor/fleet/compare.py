"""Compare many nodes' facts: which facts differ, who holds which value, who is off the majority (pure)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tfdoctor.facts import Facts, FactsFileError
from tfdoctor.fleet.flatten import flatten


class Absent:
    """A fact some nodes have and this one does not (a missing GPU, an uninstalled package)."""

    _instance: Absent | None = None

    def __new__(cls) -> Absent:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT = Absent()


@dataclass(frozen=True)
class Node:
    """One node of a fleet: its name and the facts read from its file."""

    name: str
    source: str  # the file it was read from
    facts: Facts


@dataclass(frozen=True)
class Unreadable:
    """A facts file that could not be read, and why."""

    source: str
    error: str


@dataclass(frozen=True)
class Difference:
    """A fact the nodes disagree on: each value with the nodes holding it, and the majority."""

    fact: str
    holders: tuple[tuple[Any, tuple[str, ...]], ...]  # (value, nodes holding it), most common first
    majority: Any  # the most common value (ABSENT counts as one); None when two values tie for first
    has_majority: bool

    @property
    def odd_nodes(self) -> tuple[str, ...]:
        if not self.has_majority:
            return ()
        return tuple(sorted(n for value, nodes in self.holders if value != self.majority for n in nodes))


@dataclass
class Comparison:
    """A fleet compared: its nodes, the files that could not be read and the facts that differ."""

    nodes: list[Node]
    unreadable: list[Unreadable] = field(default_factory=list)
    differences: list[Difference] = field(default_factory=list)

    def odd_nodes(self) -> dict[str, dict[str, Any]]:
        """node -> {fact: its value} for every fact where it is off the majority."""
        odd: dict[str, dict[str, Any]] = {}
        for difference in self.differences:
            values = {n: v for v, nodes in difference.holders for n in nodes}
            for node in difference.odd_nodes:
                odd.setdefault(node, {})[difference.fact] = values[node]
        return dict(sorted(odd.items()))


def load_nodes(paths: Iterable[str | Path]) -> tuple[list[Node], list[Unreadable]]:
    """Every readable facts file becomes a Node named by its host; a bad file is reported, not raised."""
    loaded: list[tuple[str, Facts]] = []
    unreadable: list[Unreadable] = []
    for path in paths:
        try:
            loaded.append((str(path), Facts.load(path)))
        except FactsFileError as exc:
            unreadable.append(Unreadable(str(path), str(exc)))
    names = [str(facts.meta.get("hostname") or Path(source).stem) for source, facts in loaded]
    repeated = {name for name, count in Counter(names).items() if count > 1}
    nodes = [Node(source if name in repeated else name, source, facts)
             for name, (source, facts) in zip(names, loaded, strict=True)]
    return nodes, unreadable


def _sort_key(value: Any) -> tuple[int, str]:
    return (1, "") if value is ABSENT else (0, repr(value))


def compare_flat(flat_by_node: Mapping[str, Mapping[str, Any]]) -> list[Difference]:
    """Differences between nodes given each node's flattened facts."""
    names = list(flat_by_node)
    # Most facts are the same everywhere: find the candidates with set operations on the items (in C),
    # then look node by node only at those.
    keys: set[str] = set()
    if names:
        reference = flat_by_node[names[0]].items()
        for flat in flat_by_node.values():
            keys.update(key for key, _ in flat.items() ^ reference)
    differences = []
    for key in sorted(keys):
        by_value: dict[Any, list[str]] = {}
        for name in names:
            by_value.setdefault(flat_by_node[name].get(key, ABSENT), []).append(name)
        if len(by_value) < 2:
            continue
        holders = sorted(by_value.items(), key=lambda item: (-len(item[1]), _sort_key(item[0])))
        top = len(holders[0][1])
        has_majority = len(holders[1][1]) < top
        differences.append(Difference(
            key, tuple((value, tuple(sorted(nodes))) for value, nodes in holders),
            holders[0][0] if has_majority else None, has_majority))
    return differences


def compare(nodes: Sequence[Node], unreadable: Sequence[Unreadable] = ()) -> Comparison:
    flat_by_node = {node.name: flatten(node.facts) for node in nodes}
    return Comparison(list(nodes), list(unreadable), compare_flat(flat_by_node))
