"""The page's first section: what to do next — the fixes in the order to apply them, each with its copy
button. The order is the fix plan's (`tfdoctor fix`): the worst finding first."""

from __future__ import annotations

from tfdoctor.engine import Report
from tfdoctor.model import Applicability, Finding, Severity
from tfdoctor.report.html.page import Section, copyable, text
from tfdoctor.report.text import fix_lines

KIND = {Applicability.SAFE: "safe: tfdoctor fix applies it",
        Applicability.UNSAFE: "unsafe: may change numerics or speed; tfdoctor fix --unsafe-fixes applies it",
        Applicability.MANUAL: "manual: run it yourself"}


def _order(finding: Finding) -> tuple[int, str]:
    return (-(finding.severity or Severity.INFO), finding.code)


def next_section(report: Report) -> Section:
    findings = sorted((f for f in report.findings() if f.fixes), key=_order)
    if not findings:
        body = ("<p>Nothing to do: no check found anything to fix on this machine.</p>" if not report.findings()
                else "<p>No finding comes with a fix: the Check section says what each one means.</p>")
        return Section("next", "What to do next", body)
    items, seen = [], set()
    for finding in findings:
        severity = finding.severity or Severity.INFO
        for fix in finding.fixes:
            lines = "\n".join(fix_lines(fix))
            if (fix.title, lines) in seen:  # two findings asking for one change: listed once, at the worst
                continue
            seen.add((fix.title, lines))
            items.append(
                f'<li><p><span class="badge {severity.label}">{text(severity.label)}</span> <b>{text(fix.title)}</b>'
                f' <span class="muted">({text(KIND.get(fix.applicability, fix.applicability.value))}; for '
                f"{text(finding.code)}: {text(finding.message)})</span></p>{copyable(lines)}</li>")
    safe = any(fix.applicability is Applicability.SAFE for f in findings for fix in f.fixes)
    every = ("<p>Or every safe environment fix at once:</p>" + copyable("tfdoctor fix --write env.sh && . ./env.sh")
             if safe else "")
    return Section("next", "What to do next", f'<ol class="next">{"".join(items)}</ol>{every}')
