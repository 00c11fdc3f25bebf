"""`compare --check`: every node's facts through the registered checks, summed up as one table (pure)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from tfdoctor.engine import run_checks
from tfdoctor.fleet.compare import Node
from tfdoctor.model import Severity
from tfdoctor.registry import CheckSpec


@dataclass
class CheckRow:
    """One finding across a fleet: the check, an example message and the nodes that have it."""

    code: str
    name: str
    severity: Severity
    message: str  # from the first node, as an example
    nodes: list[str] = field(default_factory=list)


@dataclass
class ChecksSummary:
    """The findings of a fleet, check by check, and the checks that crashed where."""

    rows: list[CheckRow]
    crashed: dict[str, list[str]]  # "CODE name: reason" -> nodes
    nodes: list[str]

    def failing_nodes(self, threshold: Severity | None) -> list[str]:
        if threshold is None:
            return []
        failing = {n for row in self.rows if row.severity >= threshold for n in row.nodes}
        failing.update(n for nodes in self.crashed.values() for n in nodes)
        return sorted(failing)


def summarize_checks(nodes: Sequence[Node], checks: Iterable[CheckSpec]) -> ChecksSummary:
    checks = list(checks)
    rows: dict[tuple[str, Severity], CheckRow] = {}
    crashed: dict[str, list[str]] = {}
    for node in nodes:
        report = run_checks(checks, node.facts)
        for finding in report.findings():
            severity = finding.severity or Severity.INFO
            row = rows.setdefault((finding.code, severity),
                                  CheckRow(finding.code, finding.name, severity, finding.message))
            if node.name not in row.nodes:
                row.nodes.append(node.name)
        for result in report.crashed():
            crashed.setdefault(f"{result.code} {result.name}: {result.reason}", []).append(node.name)
    ordered = sorted(rows.values(), key=lambda r: (-r.severity, r.code))
    return ChecksSummary(ordered, crashed, [n.name for n in nodes])
