"""fish rendering of a FixPlan. fish treats variables whose names end in PATH as lists, so a prepend
is a list operation guarded by `contains`."""

from __future__ import annotations

from tfdoctor.fixes.plan import FixPlan, PlannedChange
from tfdoctor.fixes.quoting import comment_text, env_name, fish_quote
from tfdoctor.model import EnvOp


def _change_lines(planned: PlannedChange) -> list[str]:
    change, name = planned.change, env_name(planned.change.name)
    if change.op is EnvOp.SET:
        return [f"set -gx {name} {fish_quote(change.value or '')}"]
    if change.op is EnvOp.UNSET:
        return [f"set -e {name}"]
    entry = fish_quote(change.value or "")
    return [f"if not contains -- {entry} ${name}", f"    set -gx --path --prepend {name} {entry}", "end"]


def render_fish(plan: FixPlan, header: str, target: str | None = None) -> str:
    from tfdoctor.fixes.render_sh import source_command

    lines = [f"# {comment_text(line)}" for line in header.splitlines()]
    how = comment_text(source_command(target, "fish")) if target else "source env.fish"
    lines.append(f"# Source it ({how}); sourcing it again changes nothing.")
    for planned in plan.env:
        lines.append("")
        lines.extend(f"# {s.code} {s.name}: {comment_text(s.message)}" for s in planned.sources)
        lines.extend(_change_lines(planned))
    if not plan.env:
        lines.append("# Nothing to change: no finding has a safe environment fix.")
    return "\n".join(lines) + "\n"
