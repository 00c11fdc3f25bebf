"""The profile section: the step-time breakdown as a stacked bar per step, top ops, A/B verdicts.

Inputs are the JSON documents `tfdoctor profile --format json` (a run) and `tfdoctor profile --compare
… --format json` (a verdict) print; a file may hold either.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tfdoctor.report.html.page import Section, table, text
from tfdoctor.report.html.plots import figure_div, plot_text, require

# The breakdown's categories in the order the guides discuss them, with a colour each (stable across
# reports, so two pages can be compared at a glance).
CATEGORIES = (
    ("input", "Input", "#e8710a"),
    ("launch", "Kernel launch", "#f9ab00"),
    ("host_compute", "Host compute", "#1a73e8"),
    ("device_compute", "Device compute", "#188038"),
    ("copies", "Host↔device copies", "#a142f4"),
    ("communication", "Communication", "#d01884"),
    ("compilation", "Compilation", "#12b5cb"),
    ("other", "Other", "#9aa0a6"),
)


def is_profile(document: Mapping[str, Any]) -> bool:
    return isinstance(document.get("profile"), Mapping)


def is_verdict(document: Mapping[str, Any]) -> bool:
    return "verdict" in document and "baseline" in document


def _number(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def _ms(seconds: Any) -> str:
    x = _number(seconds)
    return f"{x * 1000:.1f} ms" if x is not None else "unknown"


def _pct(share: Any) -> str:
    x = _number(share)
    return f"{x:.0%}" if x is not None else "unknown"


def breakdown_figure(breakdown: Mapping[str, Any]) -> Any | None:
    """One stacked bar per step (milliseconds per category); None when the profile has no per-step data."""
    steps = [s for s in breakdown.get("per_step") or () if isinstance(s, Mapping)]
    if not steps:
        return None
    go = require("plotly.graph_objects")
    figure = go.Figure()
    labels = [plot_text(s.get("step", i)) for i, s in enumerate(steps)]  # from the input file: text, not markup
    for key, label, colour in CATEGORIES:
        values = [_number((s.get("categories_ms") or {}).get(key)) for s in steps]
        if not any(values):
            continue  # a category never measured is left out, not drawn as zero
        figure.add_bar(name=label, x=labels, y=[v or 0.0 for v in values], marker_color=colour)
    figure.update_layout(barmode="stack", title="Step time by category", xaxis_title="step",
                         yaxis_title="milliseconds", legend={"orientation": "h", "y": -0.25})
    return figure


def _run(profile: Mapping[str, Any], index: int) -> tuple[str, int]:
    if not profile.get("ok", True):
        return f"<p>The {text(profile.get('workload'))} workload failed: {text(profile.get('error'))}</p>", 0
    steps = profile.get("steps") if isinstance(profile.get("steps"), Mapping) else {}
    rows = [
        ("workload", f"{profile.get('workload')} (TensorFlow {profile.get('tf_version')})"),
        ("devices", ", ".join(map(str, profile.get("devices") or [])) or "none"),
        ("step time", f"median {_ms(steps.get('median_seconds'))} over {steps.get('count', 0)} steps, "
                      f"spread {_pct(steps.get('spread'))}"),
        ("input wait", f"{_pct(profile.get('input_share'))} of the step"
                       + (" — input-bound" if profile.get("input_bound") else "")),
        ("precision", f"policy {profile.get('policy')}; "
                      f"float16/bfloat16 share {_pct(profile.get('low_precision_share'))}"),
        ("CPU steal", _pct(profile.get("cpu_steal")) + (" — noisy run" if profile.get("noisy") else "")),
    ]
    parts = ['<dl class="summary">' + "".join(f"<dt>{text(k)}</dt><dd>{text(v)}</dd>" for k, v in rows) + "</dl>"]
    plots = 0
    breakdown = profile.get("breakdown")
    if isinstance(breakdown, Mapping):
        totals = breakdown.get("categories_ms") if isinstance(breakdown.get("categories_ms"), Mapping) else {}
        measured = [(label, _number(totals.get(key))) for key, label, _ in CATEGORIES]
        parts.append("<h3>Where a step's time goes</h3>")
        parts.append(table(("category", "per step", "share"), (
            (text(label), f'<span class="num">{ms:.2f} ms</span>',
             text(_pct(ms / step)) if (step := _number(breakdown.get("step_ms"))) else "")
            for label, ms in measured if ms
        )))
        figure = breakdown_figure(breakdown)
        if figure is not None:
            parts.append(figure_div(figure, f"plot-breakdown-{index}"))
            plots += 1
    else:
        parts.append('<p class="muted">This profile carries no step-time breakdown.</p>')
    top = [row for row in profile.get("top_ops") or () if isinstance(row, Mapping)]
    if top:
        parts.append("<h3>Top ops</h3>")
        parts.append(table(("where", "op", "time", "share"), (
            (text(r.get("where")), text(r.get("op")), text(_ms(r.get("seconds"))), text(_pct(r.get("share"))))
            for r in top[:12]
        )))
    return "".join(parts), plots


def _verdicts(verdicts: Sequence[Mapping[str, Any]]) -> str:
    rows = []
    for v in verdicts:
        interval = v.get("interval") if isinstance(v.get("interval"), Mapping) else None
        if interval:
            shown = (f"×{_number(interval.get('ratio')) or 0:.2f} "
                     f"({_pct(interval.get('confidence'))} CI {_number(interval.get('low')) or 0:.2f}–"
                     f"{_number(interval.get('high')) or 0:.2f})")
        else:
            shown = str(v.get("error") or "no interval")
        rows.append((text(v.get("baseline")), text(v.get("candidate")), text(v.get("verdict")), text(shown),
                     text(v.get("rounds"))))
    return "<h3>A/B comparisons</h3>" + table(("baseline", "candidate", "verdict", "step time ratio", "rounds"), rows)


def profile_section(documents: Sequence[Mapping[str, Any]]) -> Section:
    parts: list[str] = []
    plots = 0
    runs = [d["profile"] for d in documents if is_profile(d)]
    for index, run in enumerate(runs):
        if len(runs) > 1:
            parts.append(f"<h3>Run {index + 1}</h3>")
        body, drawn = _run(run, index)
        parts.append(body)
        plots += drawn
    verdicts = [d for d in documents if is_verdict(d)]
    if verdicts:
        parts.append(_verdicts(verdicts))
    return Section("profile", "Profile", "".join(parts), plots)
