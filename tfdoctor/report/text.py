"""The terminal report: one glyph per finding, its evidence and fixes under it; more with -v.

Verbosity is a rendering rule, not a second code path: the same Report is rendered either way.
`render_quiet` is the pre-job hook's form: nothing when healthy, one plain line per problem.
"""

from __future__ import annotations

import json

from tfdoctor.engine import Report
from tfdoctor.facts.redact import redact_text
from tfdoctor.model import AdminFix, CheckResult, EnvFix, EnvOp, Finding, PythonFix, Severity, Status
from tfdoctor.terminal import fit, fit_command, safe, safe_line

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import Any

GLYPH = {Severity.ERROR: "✗", Severity.WARNING: "!", Severity.INFO: "i"}
STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
COMMAND = "none"  # a fix's command line (rich's null style): fitted to the width as a command to copy


def _value(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def fix_lines(fix: EnvFix | PythonFix | AdminFix) -> list[str]:
    """A fix as the user would type it (shell syntax for env changes)."""
    from tfdoctor.fixes.quoting import sh_quote

    if isinstance(fix, EnvFix):
        out = []
        for change in fix.changes:
            if change.op is EnvOp.SET:
                out.append(f"export {change.name}={sh_quote(change.value or '')}")
            elif change.op is EnvOp.UNSET:
                out.append(f"unset {change.name}")
            else:
                out.append(f'export {change.name}={sh_quote(change.value or "")}"${{{change.name}:+:${change.name}}}"')
        return out
    if isinstance(fix, PythonFix):
        return fix.code.rstrip("\n").splitlines()
    from tfdoctor.fixes.quoting import comment_text

    return ([f"# {comment_text(fix.text)}"] if fix.text else []) + list(fix.steps)


def _finding_block(finding: Finding, verbose: bool) -> list[tuple[str, str]]:
    severity = finding.severity or Severity.INFO
    rows = [(f"{GLYPH[severity]} {finding.code} {finding.name}: {finding.message}", STYLE[severity])]
    for key, value in finding.evidence.items():
        rows.append((f"    evidence: {key} = {_value(value)}", "dim"))
    for fix in finding.fixes:
        rows.append((f"    fix ({fix.applicability.value}): {fix.title}", "green"))
        rows.extend((f"      {line}", COMMAND) for line in fix_lines(fix))
    return rows


def _result_rows(result: CheckResult, verbose: bool) -> list[tuple[str, str]]:
    if result.status is Status.FAILED:
        rows = []
        for finding in result.findings:
            rows.extend(_finding_block(finding, verbose))
        return rows
    if result.status is Status.CRASHED:
        return [(f"‼ {result.code} {result.name}: check crashed: {result.reason}", "bold magenta")]
    if verbose and result.status is Status.NOT_CHECKED:
        return [(f"? {result.code} {result.name}: not checked: {result.reason}", "dim")]
    if verbose and result.status is Status.NOT_APPLICABLE:
        return [(f"- {result.code} {result.name}: not applicable: {result.reason}", "dim")]
    if verbose and result.status is Status.PASSED:
        return [(f"✓ {result.code} {result.name}", "green")]
    return []


def summary_line(report: Report) -> str:
    c = report.counts()
    parts = [f"{c['error']} error(s)", f"{c['warning']} warning(s)", f"{c['info']} info"]
    parts.append(f"{c['passed']} check(s) passed")
    if c["not-applicable"]:
        parts.append(f"{c['not-applicable']} not applicable")
    if c["not-checked"]:
        parts.append(f"{c['not-checked']} not checked")
    if c["crashed"]:
        parts.append(f"{c['crashed']} crashed")
    return "tfdoctor: " + ", ".join(parts)


def text_rows(report: Report, verbose: bool = False) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    order = sorted(report.results, key=lambda r: (-(r.worst or 0), r.code))
    for result in order:
        rows.extend(_result_rows(result, verbose))
    for error in report.plugin_errors:
        rows.append((f"‼ plugin: {error}", "bold magenta"))
    if rows:
        rows.append(("", ""))
    rows.append((summary_line(report), "bold"))
    if report.findings() and not verbose:
        rows.append(("Run `tfdoctor check -v` for every check, `tfdoctor explain CODE` for one.", "dim"))
    return rows


def render_text(report: Report, verbose: bool = False, color: bool | None = None, width: int | None = None) -> str:
    """Plain text when color is False (goldens, pipes); rich styles otherwise (never markup: a value's
    [brackets] stay text). Every row is redacted and its control characters shown as escapes; with a
    width, each row is fitted to it (tfdoctor.terminal.fit)."""
    rows = []
    for text, style in text_rows(report, verbose):
        shown = safe(redact_text(text))
        if style == COMMAND and width is not None and "\n" not in shown:
            rows.extend((line, style) for line in fit_command(shown, width))
        else:
            rows.extend((line, style) for line in fit(shown, width).split("\n"))
    if color is False:
        return "\n".join(text for text, _ in rows) + "\n"
    from rich.console import Console
    from rich.text import Text

    console = Console(force_terminal=color, width=width, highlight=False, soft_wrap=True)
    with console.capture() as capture:
        for text, style in rows:
            console.print(Text(text, style=style))
    return capture.get()


QUIET_LIMIT = 200  # characters of a --quiet line; `tfdoctor check` shows the whole message


def _to_the_point(line: str) -> str:
    """A --quiet line kept short: cut at a word before QUIET_LIMIT, ending in " …"."""
    if len(line) <= QUIET_LIMIT:
        return line
    cut = line[: QUIET_LIMIT - 2]
    space = cut.rfind(" ")
    return (cut[:space] if space > QUIET_LIMIT // 2 else cut).rstrip(" ;,:") + " …"


def render_quiet(report: Report, threshold: Severity | None, host: str | None = None) -> str:
    """One line per finding at or above the threshold, plus crashed checks; empty when healthy. Each line
    is one line (a value's newline shown as \\n), at most QUIET_LIMIT characters; with `host` (a job of
    several nodes, whose outputs land in one file) it says which node after the level."""
    where = f"{safe_line(host)}: " if host else ""
    lines = []
    for finding in report.findings():
        severity = finding.severity or Severity.INFO
        if threshold is not None and severity >= threshold:
            lines.append(f"tfdoctor: {severity.label}: {where}{finding.code} {finding.name}: {finding.message}")
    for result in report.crashed():
        lines.append(f"tfdoctor: crashed: {where}{result.code} {result.name}: {result.reason}")
    return "".join(_to_the_point(safe_line(redact_text(line))) + "\n" for line in lines)
