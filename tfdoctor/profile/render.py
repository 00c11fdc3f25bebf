"""The readable summary of a profile (plain text; the findings below it use the report renderer)."""

from __future__ import annotations

from typing import Any

from tfdoctor.facts import Unknown
from tfdoctor.fixes.quoting import sh_word


def _ms(seconds: Any) -> str:
    return f"{seconds * 1000:.1f} ms" if isinstance(seconds, (int, float)) else "unknown"


def _pct(share: Any) -> str:
    return f"{share:.0%}" if isinstance(share, (int, float)) else "unknown"


# A step spread ((p90-p10)/median) above this says the steps differ too much for one figure to stand for them.
SPREAD_NOTE = 0.5


def viewer_line(logdir: str, tensorboard: str | None, plugin: bool) -> str:
    """How to look at the trace with what is installed: tensorboard and its profile plugin (TensorFlow 2.21
    no longer brings tensorboard), else what to install first (docs/profile.md)."""
    where = sh_word(logdir)
    if tensorboard and plugin:
        return f"  view it         tensorboard --logdir {where}  (Profile tab)"
    return ("  view it         python -m pip install tensorboard tensorboard-plugin-profile  (not installed here), "
            f"then: tensorboard --logdir {where}  (Profile tab; docs/profile.md)")


def _viewer_installed() -> tuple[str | None, bool]:
    import importlib.util
    import shutil

    return shutil.which("tensorboard"), importlib.util.find_spec("tensorboard_plugin_profile") is not None


def render_profile(section: dict[str, Any], report: Any) -> str:
    if not section.get("ok"):
        return f"tfdoctor: the {section.get('workload')} workload failed: {section.get('error')}\n"
    lines = [f"tfdoctor profile: {section['workload']} workload, TensorFlow {section.get('tf_version')}"]
    lines.append(f"  devices         {', '.join(section.get('devices') or []) or 'none'}")
    captured = section.get("device_activity_captured")
    if isinstance(captured, Unknown):
        lines.append(f"  device activity unknown ({captured.reason})")
    elif captured is False:
        lines.append("  device activity NOT captured: a GPU is present but the profile holds no device events "
                     "(CUPTI is not working; see the CUPTI findings of tfdoctor check)")
    elif captured:
        lines.append("  device activity captured")
    steps = section.get("steps") or {}
    lines.append(f"  step time       median {_ms(steps.get('median_seconds'))} over {steps.get('count', 0)} steps, "
                 f"spread (p90-p10)/median {_pct(steps.get('spread'))}")
    spread = steps.get("spread")
    if isinstance(spread, (int, float)) and spread > SPREAD_NOTE:
        lines.append(f"  note            the steps vary widely (spread above {SPREAD_NOTE:.0%}): one figure stands for "
                     "them poorly; more --steps, or a quieter node, give a steadier one")
    if section.get("workload") == "script":
        lines.append(f"  steps           {_step_origin(section)}")
    bound = " — input-bound" if section.get("input_bound") else ""
    lines.append(f"  input wait      {_pct(section.get('input_share'))} of the step{bound}")
    lines.extend(_breakdown_lines(section.get("breakdown")))
    host, device = section.get("host_op_seconds"), section.get("device_seconds")
    if not isinstance(host, Unknown):
        over = "the timed steps" if steps.get("count") else "the whole trace"
        lines.append(f"  op time         host {_ms(host)}, device {_ms(device)} (over {over})")
    precision = section.get("low_precision_share")
    lines.append(f"  dtype policy    {section.get('policy')}; float16/bfloat16 kernel share "
                 f"{_pct(precision) if precision is not None else 'n/a (no device kernels)'}")
    mixed = section.get("mixed_precision")
    if isinstance(mixed, dict):
        lines.append(f"  mixed precision {mixed.get('summary')}")
    clusters = section.get("xla_clusters")
    if isinstance(clusters, list):
        lines.append(f"  XLA clusters    {len(clusters)}{': ' + ', '.join(clusters[:5]) if clusters else ''}")
    steal = section.get("cpu_steal")
    noisy = " — noisy run: other tenants took CPU time, timings are suspect" if section.get("noisy") else ""
    lines.append(f"  CPU steal       {_pct(steal)}{noisy}")
    top = section.get("top_ops")
    if isinstance(top, list) and top:
        lines.append("  top ops")
        shown = top[:8]
        width = min(60, max(len(str(row["op"])) for row in shown))  # a short table keeps to 80 columns
        lines.extend(f"    {row['where']:<6} {str(row['op'])[:width]:<{width}} {_ms(row['seconds']):>10} "
                     f"{_pct(row['share']):>5}" for row in shown)
    if section.get("logdir"):
        lines.append(viewer_line(str(section["logdir"]), *_viewer_installed()))
    text = "\n".join(lines) + "\n"
    if report.findings():
        from tfdoctor.report.text import render_text

        text += "\n" + render_text(report, verbose=False, color=False)
    return text


def _breakdown_lines(breakdown: Any) -> list[str]:
    """The mean step split into its categories, largest first (zero categories left out)."""
    if isinstance(breakdown, Unknown):
        return [f"  step breakdown  unknown ({breakdown.reason})"]
    if not isinstance(breakdown, dict) or not breakdown.get("step_ms"):
        return []
    step = breakdown["step_ms"]
    parts = sorted(((ms, name) for name, ms in breakdown["categories_ms"].items() if ms > 0), reverse=True)
    lines = [f"  step breakdown  mean step {step:.2f} ms = "
             + ", ".join(f"{name.replace('_', ' ')} {ms:.2f} ({ms / step:.0%})" for ms, name in parts)]
    share, tensor_core = breakdown.get("half_precision_device_share"), breakdown.get("tensor_core_kernels")
    if isinstance(share, float):
        cores = "tensor-core kernels ran" if tensor_core else "no tensor-core kernels"
        lines.append(f"  GPU kernels     {share:.0%} of kernel time in float16/bfloat16; {cores}")
    return lines


def _step_origin(section: dict[str, Any]) -> str:
    """Where a script's steps came from, and how many warm-up steps were left out of the timing."""
    source = section.get("step_source")
    excluded = (section.get("steps") or {}).get("excluded_warmup") or 0
    if not source:
        tried = ", ".join(f"{c.get('name')} ×{c.get('calls')}" for c in section.get("step_candidates") or [])
        return "none found" + (f" (seen: {tried})" if tried else "") + "; see the finding below"
    if not excluded:
        return f"from {source}; all timed (--warmup 0: the first steps, tracing included, are in the figures)"
    return f"from {source}; the first {excluded} (warm-up, tracing) not timed"
