"""Slurm TaskProlog rendering of a FixPlan.

slurmstepd runs the TaskProlog with the task's environment and reads its standard output line by line:
`export NAME=value` sets NAME in the task to everything after the first `=` up to the end of the line,
taken literally (no shell runs, so no quoting and no `$VAR` expansion); `unset NAME` removes NAME;
`print text` writes text to the task's output. Other lines are ignored, but we write none: the output is
exactly the changes.

Two consequences shape this renderer. A path prepend cannot say "the current value": the prolog
(which is running tfdoctor) sees the task's environment as its own, so the final value is computed here
from that environment. A value with a line break cannot be expressed at all: it is skipped, with a note.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from tfdoctor.fixes.plan import FixPlan, PlannedChange
from tfdoctor.fixes.quoting import env_name
from tfdoctor.model import EnvOp


@dataclass(frozen=True)
class TaskPrologScript:
    """A Slurm TaskProlog's text and what could not be said in it."""

    text: str  # for standard output, read by slurmstepd
    notes: tuple[str, ...] = field(default=())  # for standard error: what could not be expressed


def _prepended(current: str | None, entry: str) -> str | None:
    """The value after prepending entry, or None when entry is already in the list (nothing to do)."""
    if current is None or current == "":
        return entry
    if entry in current.split(":"):
        return None
    return f"{entry}:{current}"


def _line(planned: PlannedChange, environ: Mapping[str, str]) -> tuple[str | None, str | None]:
    change, name = planned.change, env_name(planned.change.name)
    if change.op is EnvOp.UNSET:
        return f"unset {name}", None
    value = change.value or ""
    if change.op is EnvOp.PREPEND:
        final = _prepended(environ.get(name), value)
        if final is None:
            return None, None
        value = final
    if "\n" in value or "\r" in value or "\0" in value:
        codes = ", ".join(s.code for s in planned.sources)
        what = "a NUL character" if "\0" in value else "a line break"
        return None, (f"tfdoctor: {codes} not applied: the value of {name} contains {what}, "
                      "which a TaskProlog cannot express")
    return f"export {name}={value}", None


def render_taskprolog(plan: FixPlan, environ: Mapping[str, str]) -> TaskPrologScript:
    """`environ` is the environment the task will start with (the prolog's own)."""
    lines: list[str] = []
    notes: list[str] = []
    for planned in plan.env:
        line, note = _line(planned, environ)
        if line is not None:
            lines.append(line)
        if note is not None:
            notes.append(note)
    return TaskPrologScript("".join(line + "\n" for line in lines), tuple(notes))
