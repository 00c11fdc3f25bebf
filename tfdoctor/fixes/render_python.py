"""In-process fixes as a Python file to run at the top of a training script (before TensorFlow
builds anything): what no environment variable can set, such as a mixed-precision policy."""

from __future__ import annotations

from tfdoctor.fixes.plan import FixPlan
from tfdoctor.fixes.quoting import comment_text


def render_python(plan: FixPlan, header: str) -> str:
    lines = [f"# {comment_text(line)}" for line in header.splitlines()]
    lines.append("# Use it: import it first thing in your training script, or exec(open(path).read()).")
    for fix, source in plan.python:
        lines.append("")
        lines.append(f"# {source.code} {source.name}: {comment_text(source.message)}")
        lines.append(f"# {comment_text(fix.title)} ({fix.applicability.value})")
        lines.extend(fix.code.rstrip("\n").splitlines())
    if not plan.python:
        lines.append("# Nothing to run: no finding has an in-process fix (unsafe ones need --unsafe-fixes).")
    return "\n".join(lines) + "\n"
