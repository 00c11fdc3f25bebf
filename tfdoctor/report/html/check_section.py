"""The check section: the machine in one box, then findings by severity with evidence and fixes."""

from __future__ import annotations

from typing import Any

from tfdoctor.engine import Report
from tfdoctor.facts import Facts, NotChecked, Unknown
from tfdoctor.model import Finding, Severity, Status
from tfdoctor.report.html.page import Section, copyable, table, text, value
from tfdoctor.report.text import fix_lines

ORDER = (Severity.ERROR, Severity.WARNING, Severity.INFO)


def machine_summary(facts: Facts) -> list[tuple[str, str]]:
    """What a reader of a bug report asks first. A fact that cannot be derived says why, never blank."""
    rows: list[tuple[str, str]] = [("host", str(facts.meta.get("hostname") or "unknown"))]
    rows.append(("CPU", _fact(facts, "cpu.cpuinfo.model_name", "unknown")))
    rows.append(("CPU budget", _derived(facts, _budget)))
    rows.append(("GPUs", _derived(facts, _gpus)))
    rows.append(("NVIDIA driver", _derived(facts, _driver)))
    rows.append(("TensorFlow", _derived(facts, _build)))
    return rows


def _fact(facts: Facts, path: str, missing: str) -> str:
    try:
        found = facts.get(path, default=None)
    except NotChecked as exc:
        return f"unknown ({exc})"
    if isinstance(found, Unknown):
        return f"unknown ({found.reason})"
    return missing if found in (None, "") else str(found)


def _derived(facts: Facts, derive: Any) -> str:
    try:
        return str(derive(facts))
    except NotChecked as exc:
        return f"unknown ({exc})"
    except (TypeError, ValueError, KeyError, AttributeError) as exc:  # a replayed file of the wrong shape
        return f"unknown ({type(exc).__name__})"


def _driver(facts: Facts) -> str:
    # NVML's answer when it gave one, else what the kernel module says: a driver NVML cannot talk to is
    # still a driver.
    for path in ("nvml.driver_version", "host.nvidia_driver"):
        try:
            found = facts.get(path, default=None)
        except NotChecked:
            continue
        if found:
            return str(found)
    return "none seen"


def _budget(facts: Facts) -> str:
    from tfdoctor.derive.cpu_budget import cpu_budget

    budget = cpu_budget(facts)
    return f"{budget.cpus} of {budget.host_cpus} logical CPUs ({budget.source})"


def _gpus(facts: Facts) -> str:
    from tfdoctor.derive.gpu_inventory import all_gpus

    gpus = all_gpus(facts)
    return ", ".join(f"{g.index}: {g.name}" for g in gpus) if gpus else "none"


def _build(facts: Facts) -> str:
    from tfdoctor.derive.tf_build import tensorflow_build

    build = tensorflow_build(facts)
    if build is None:
        return "not installed"
    cuda = f", CUDA {build.cuda_version}, cuDNN {build.cudnn_version}" if build.is_cuda_build else ", CPU-only build"
    return f"{build.dist or 'tensorflow'} {build.version}{cuda}"


def _finding(finding: Finding, severity: Severity) -> str:
    evidence = "".join(f"<dt>{text(k)}</dt><dd><code>{value(k, v)}</code></dd>" for k, v in finding.evidence.items())
    fixes = []
    for fix in finding.fixes:
        kind = fix.applicability.value
        fixes.append(f'<p><b>{text(fix.title)}</b> <span class="muted">({text(kind)})</span></p>')
        fixes.append(copyable("\n".join(fix_lines(fix))))
    return (
        f'<div class="finding {severity.label}"><p><span class="badge {severity.label}">{text(severity.label)}</span> '
        f"<b>{text(finding.code)}</b> {text(finding.name)}</p><p>{text(finding.message)}</p>"
        + (f'<dl class="summary">{evidence}</dl>' if evidence else "")
        + "".join(fixes)
        + "</div>"
    )


def check_section(report: Report) -> Section:
    counts = report.counts()
    badges = "".join(
        f'<span><span class="badge {k}">{text(counts.get(k, 0))}</span> {text(k)}</span>'
        for k in ("error", "warning", "info", "passed", "not-applicable", "not-checked", "crashed")
    )
    parts = [
        '<dl class="summary">'
        + "".join(f"<dt>{text(k)}</dt><dd>{text(v)}</dd>" for k, v in machine_summary(report.facts))
        + "</dl>",
        f'<p class="counts">{badges}</p>',
    ]
    for severity in ORDER:
        found = [f for f in report.findings() if (f.severity or Severity.WARNING) == severity]
        if found:
            parts.append(f'<h3 class="group-{severity.label}">{text(severity.label.capitalize())}s ({len(found)})</h3>')
            parts.extend(_finding(f, severity) for f in found)
    if not report.findings():
        parts.append("<p>No findings: nothing tfdoctor checks stands in TensorFlow's way here.</p>")
    skipped = [r for r in report.results if r.status in (Status.NOT_CHECKED, Status.CRASHED)]
    if skipped:
        parts.append("<h3>Not checked</h3>")
        parts.append(table(("check", "why"), ((text(f"{r.code} {r.name}"), text(r.reason)) for r in skipped)))
    return Section("check", "Check", "".join(parts))
