"""The fleet section: one row per node, the facts that differ as columns, the odd node first."""

from __future__ import annotations

from pathlib import PurePath

from tfdoctor.fleet.compare import ABSENT, Comparison
from tfdoctor.fleet.render import value_text
from tfdoctor.report.html.page import Section, table, text, value

MAX_CELL = 120  # characters of a value shown in its cell
MAX_COLUMNS = 40  # a fleet that differs in more facts than this shows the first ones and says so


def _cell(fact: str, held: str) -> str:
    """A value in a cell; a long one (a whole flag or package list) cut short, the rest in its tooltip."""
    full = value(fact, held)
    if len(held) <= MAX_CELL:
        return full
    return f'<span title="{full}">{value(fact, held[:MAX_CELL])}…</span>'


def fleet_section(comparison: Comparison) -> Section:
    odd = comparison.odd_nodes()
    names = [n.name for n in comparison.nodes]
    # The nodes off the majority in the most facts first: that is the one to look at.
    names.sort(key=lambda n: (-len(odd.get(n, {})), n))
    differences = comparison.differences[:MAX_COLUMNS]
    parts = [f"<p>{text(len(names))} nodes, {text(len(comparison.differences))} facts differ"
             + (f"; odd node out: <b>{text(names[0])}</b>" if odd else "") + ".</p>"]
    if differences:
        rows = []
        for name in names:
            # Two files from one host are named by their paths: show the file name, keep the path in a tooltip.
            shown_name = text(PurePath(name).name if "/" in name else name)
            cells = [f'<span class="node{" odd" if name in odd else ""}" title="{text(name)}">{shown_name}</span>']
            for difference in differences:
                held = next((v for v, nodes in difference.holders if name in nodes), ABSENT)
                shown = _cell(difference.fact, value_text(held))
                cells.append(f'<span class="differs">{shown}</span>' if name in difference.odd_nodes else shown)
            rows.append(cells)
        # Many differing facts make a wide table: it scrolls inside its box instead of widening the page.
        parts.append('<div class="scroll">' + table(("node", *(d.fact for d in differences)), rows, css="fleet")
                     + "</div>")
        if len(comparison.differences) > MAX_COLUMNS:
            parts.append(f'<p class="muted">{len(comparison.differences) - MAX_COLUMNS} more differing facts: '
                         "tfdoctor compare --format json lists them all.</p>")
    else:
        parts.append("<p>Every node agrees on every fact.</p>")
    for bad in comparison.unreadable:
        parts.append(f"<p>Unreadable: {text(bad.source)}: {text(bad.error)}</p>")
    return Section("fleet", "Fleet", "".join(parts))
