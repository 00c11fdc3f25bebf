"""`path:line:col: CODE name message` — the form editors, CI logs and pre-commit understand."""

from __future__ import annotations

from tfdoctor.lint.runner import LintReport


def render_text(report: LintReport, show_fixes: bool = False) -> str:
    lines = []
    for f in report.findings:
        lines.append(f"{f.location}: {f.code} {f.name} {f.message}")
        if show_fixes and f.fix is not None:
            lines.append(f"    fix ({f.fix.applicability.value}): {f.fix.title}")
    return "".join(line + "\n" for line in lines)


def render_summary(report: LintReport) -> str:
    """One line for standard error: counts, suppressed, crashes (the findings go to standard output)."""
    by_level: dict[str, int] = {}
    for f in report.findings:
        by_level[f.severity.label] = by_level.get(f.severity.label, 0) + 1
    counts = ", ".join(f"{n} {label}" for label, n in sorted(by_level.items())) or "no findings"
    extra = f"; {report.suppressed} suppressed" if report.suppressed else ""
    if report.held_back:
        codes = ",".join(sorted(report.held_back_by))  # the rules that held something back in this run
        extra += (f"; {report.held_back} held back without the evidence to report them "
                  f"(--select {codes} shows them at info)")
    if report.target is not None:  # what decided SRC102 and SRC103 (tfdoctor/lint/target.py)
        extra += f"; as on {report.target.describe()}"
    if report.own_target:  # files under pins of their own; notebooks that install or select theirs, or Colab's
        extra += (f"; {report.own_target} file(s) as on their own TensorFlow (their folder's pins, what a notebook "
                  "installs, or Colab's)")
    lines = [f"tfdoctor lint: {report.files} file(s): {counts}{extra}"]
    lines += [f"tfdoctor lint: {c}" for c in report.crashes]
    lines += [f"tfdoctor lint: plugin error: {e}" for e in report.plugin_errors]
    return "".join(line + "\n" for line in lines)
