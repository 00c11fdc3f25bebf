"""`tfdoctor compare` output: a rich table for people, JSON for programs."""

from __future__ import annotations

import json
from typing import Any

from tfdoctor.facts import Unknown, to_jsonable
from tfdoctor.facts.redact import redact_text, redact_value
from tfdoctor.fleet.checks_summary import ChecksSummary
from tfdoctor.fleet.compare import ABSENT, Comparison
from tfdoctor.fleet.hostlist import compress
from tfdoctor.terminal import markup_safe, safe_line


def value_text(value: Any, fact: str = "") -> str:
    """A fact's value as shown in the table, redacted (a hand-made facts file may hold anything); `fact`
    is its dotted path, whose last part may name a secret (env.variables.GITHUB_TOKEN)."""
    if value is ABSENT:
        return "(absent)"
    if isinstance(value, Unknown):
        return safe_line(redact_text(f"unknown: {value.reason}"))
    if isinstance(value, str):
        return safe_line(str(redact_value(value, fact)))
    return safe_line(json.dumps(redact_value(to_jsonable(value), fact), ensure_ascii=False))


def _json_value(value: Any) -> dict[str, Any]:
    if value is ABSENT:
        return {"absent": True}
    return {"value": to_jsonable(value)}


def render_json(comparison: Comparison, checks: ChecksSummary | None = None) -> str:
    data: dict[str, Any] = {
        "nodes": [{"name": n.name, "file": n.source} for n in comparison.nodes],
        "unreadable": [{"file": u.source, "error": u.error} for u in comparison.unreadable],
        "differences": [
            {
                "fact": d.fact,
                "majority": _json_value(d.majority) if d.has_majority else None,
                "odd_nodes": list(d.odd_nodes),
                "values": [{**_json_value(v), "nodes": list(nodes)} for v, nodes in d.holders],
            }
            for d in comparison.differences
        ],
        "odd_nodes": {
            node: {fact: _json_value(value) for fact, value in facts.items()}
            for node, facts in comparison.odd_nodes().items()
        },
    }
    if checks is not None:
        data["checks"] = {
            "findings": [{"code": r.code, "name": r.name, "severity": r.severity.label, "message": r.message,
                          "nodes": r.nodes} for r in checks.rows],
            "crashed": [{"check": what, "nodes": nodes} for what, nodes in checks.crashed.items()],
        }
    return json.dumps(redact_value(data), indent=2, ensure_ascii=False) + "\n"


def render_table(comparison: Comparison, checks: ChecksSummary | None = None, color: bool | None = None,
                 width: int | None = None) -> str:
    """The comparison at `width` columns (default: the terminal's, see tfdoctor.terminal)."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from tfdoctor.terminal import terminal_width

    console = Console(force_terminal=color, no_color=color is False, width=width or terminal_width(),
                      highlight=False)
    with console.capture() as capture:
        for bad in comparison.unreadable:
            shown = escape(safe_line(redact_text(f"{bad.source}: {bad.error}")))
            console.print(f"[red]unreadable:[/] {shown}", markup=True)
        total = len(comparison.nodes)
        if comparison.differences:
            table = Table(title=f"Facts that differ across {total} node(s)", show_lines=False, expand=False)
            # A fact's dotted path has no space to wrap at: it keeps its line up to half the width, and
            # the values (which have spaces) wrap in what is left.
            fact_width = min(max(len(d.fact) for d in comparison.differences), console.width // 2)
            value_width = max(8, (console.width - fact_width - 10) // 2)  # 10: the rules and padding
            table.add_column("fact", overflow="fold", width=fact_width)
            table.add_column("majority", overflow="fold", max_width=value_width)
            table.add_column("differing: value (nodes)", overflow="fold", max_width=value_width)
            for d in comparison.differences:
                if d.has_majority:
                    majority_nodes = dict(d.holders)[d.majority]
                    majority = f"{value_text(d.majority, d.fact)} ({len(majority_nodes)}/{total})"
                    others = [(v, n) for v, n in d.holders if v != d.majority]
                else:
                    majority, others = "(no majority)", list(d.holders)
                differing = "\n".join(f"{value_text(v, d.fact)} ({safe_line(compress(n))})" for v, n in others)
                table.add_row(escape(safe_line(d.fact)), escape(majority), escape(differing))
            console.print(table)
            odd = comparison.odd_nodes()
            if odd:
                console.print(f"Nodes off the majority ({len(odd)}/{total}):", style="bold")
                for node, facts in odd.items():
                    shown = ", ".join(f"{fact}={value_text(value, fact)}" for fact, value in list(facts.items())[:6])
                    more = f" (+{len(facts) - 6} more)" if len(facts) > 6 else ""
                    console.print(f"  {safe_line(node)}: {shown}{more}", markup=False)
        elif comparison.nodes:
            console.print(f"All {total} node(s) agree on every compared fact.")
        if checks is not None:
            _print_checks(console, checks)
    return capture.get()


def _print_checks(console: Any, checks: ChecksSummary) -> None:
    from rich.table import Table

    total = len(checks.nodes)
    if not checks.rows and not checks.crashed:
        console.print(f"Checks: no finding on any of {total} node(s).")
        return
    table = Table(title=f"Check findings across {total} node(s)")
    table.add_column("code", overflow="fold")
    table.add_column("severity")
    table.add_column("nodes", overflow="fold")
    table.add_column("message (first node)", overflow="fold")
    for row in checks.rows:
        table.add_row(markup_safe(f"{row.code} {row.name}"), row.severity.label,
                      markup_safe(f"{compress(row.nodes)} ({len(row.nodes)})"), markup_safe(redact_text(row.message)))
    for what, nodes in checks.crashed.items():
        table.add_row("crashed", "", markup_safe(f"{compress(nodes)} ({len(nodes)})"), markup_safe(redact_text(what)))
    console.print(table)
