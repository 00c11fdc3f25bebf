"""The fleet section: the facts that differ, grouped by the section they belong to (nvml, python, env…),
the odd node first.

A few nodes (up to FEW_NODES) read best as columns, with one row per differing fact: two nodes that differ
in 142 facts make 142 short rows, not one table 142 columns wide. More nodes are rows, with the facts of
one group as columns. Each group is a collapsible block, open when it is short.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePath

from tfdoctor.fleet.compare import ABSENT, Comparison, Difference
from tfdoctor.fleet.render import value_text
from tfdoctor.report.html.page import Section, table, text, value

MAX_CELL = 120  # characters of a value shown in its cell
FEW_NODES = 6  # up to this many nodes are columns (facts are rows)
MAX_COLUMNS = 40  # with more nodes (nodes are rows), a group shows this many facts as columns and says so
OPEN_GROUP = 12  # a group of at most this many differing facts is shown open


def _cell(fact: str, held: str) -> str:
    """A value in a cell; a long one (a whole flag or package list) cut short, the rest in its tooltip."""
    full = value(fact, held)
    if len(held) <= MAX_CELL:
        return full
    return f'<span title="{full}">{value(fact, held[:MAX_CELL])}…</span>'


def _node(name: str, odd: bool) -> str:
    # Two files from one host are named by their paths: show the file name, keep the path in a tooltip.
    shown = text(PurePath(name).name if "/" in name else name)
    return f'<span class="node{" odd" if odd else ""}" title="{text(name)}">{shown}</span>'


def _value_cell(difference: Difference, name: str) -> str:
    held = next((v for v, nodes in difference.holders if name in nodes), ABSENT)
    shown = _cell(difference.fact, value_text(held))
    return f'<span class="differs">{shown}</span>' if name in difference.odd_nodes else shown


def _groups(differences: Sequence[Difference]) -> dict[str, list[Difference]]:
    groups: dict[str, list[Difference]] = {}
    for difference in differences:
        groups.setdefault(difference.fact.split(".", 1)[0].split("#", 1)[0], []).append(difference)
    return groups


def _facts_as_rows(group: list[Difference], names: list[str], odd: set[str]) -> str:
    rows = [[text(d.fact), *(_value_cell(d, name) for name in names)] for d in group]
    header = "".join(f"<th>{_node(name, name in odd)}</th>" for name in names)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return (f'<table class="fleet facts-as-rows"><thead><tr><th>fact</th>{header}</tr></thead>'
            f"<tbody>{body}</tbody></table>")


def _nodes_as_rows(group: list[Difference], names: list[str], odd: set[str]) -> str:
    shown = group[:MAX_COLUMNS]
    rows = [[_node(name, name in odd), *(_value_cell(d, name) for d in shown)] for name in names]
    more = (f'<p class="muted">{len(group) - MAX_COLUMNS} more differing facts in this group: '
            "tfdoctor compare --format json lists them all.</p>" if len(group) > MAX_COLUMNS else "")
    # Many facts make a wide table: it scrolls inside its box instead of widening the page.
    return '<div class="scroll">' + table(("node", *(d.fact for d in shown)), rows, css="fleet") + "</div>" + more


def fleet_section(comparison: Comparison) -> Section:
    odd = comparison.odd_nodes()
    names = [n.name for n in comparison.nodes]
    # The nodes off the majority in the most facts first: that is the one to look at.
    names.sort(key=lambda n: (-len(odd.get(n, {})), n))
    groups = _groups(comparison.differences)
    parts = [f"<p>{text(len(names))} nodes, {text(len(comparison.differences))} facts differ"
             + (f" in {text(len(groups))} group(s)" if groups else "")
             + (f"; odd node out: <b>{text(names[0])}</b>" if odd else "") + ".</p>"]
    layout = _facts_as_rows if len(names) <= FEW_NODES else _nodes_as_rows
    for group, differences in groups.items():
        opened = " open" if len(differences) <= OPEN_GROUP else ""
        parts.append(f'<details class="group"{opened}><summary>{text(group)} — {text(len(differences))} '
                     f"fact(s) differ</summary>{layout(differences, names, set(odd))}</details>")
    if not groups:
        parts.append("<p>Every node agrees on every fact.</p>")
    for bad in comparison.unreadable:
        parts.append(f"<p>Unreadable: {text(bad.source)}: {text(bad.error)}</p>")
    return Section("fleet", "Fleet", "".join(parts))
