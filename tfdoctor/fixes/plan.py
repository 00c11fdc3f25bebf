"""Which fixes a script gets: filtered by applicability, merged, conflicts resolved — as data.

Renderers only turn a FixPlan into text; every decision about what goes in is made here, once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from tfdoctor.fixes.quoting import comment_text, is_env_name
from tfdoctor.model import AdminFix, Applicability, EnvChange, EnvFix, EnvOp, Finding, PythonFix, Severity


@dataclass(frozen=True)
class Source:
    """The finding a planned change answers, for the comment above it."""

    code: str
    name: str
    message: str
    severity: Severity | None = None  # the finding's; quiet notes (fix --quiet) leave out info ones


@dataclass(frozen=True)
class PlannedChange:
    """One environment change a fix script makes, and the findings that asked for it."""

    change: EnvChange
    sources: tuple[Source, ...]
    title: str


@dataclass(frozen=True)
class Skipped:
    """A fix left out of the script, and why."""

    title: str
    source: Source
    reason: str


@dataclass
class FixPlan:
    """Everything a fix script does, grouped by kind, and what it leaves out."""

    env: list[PlannedChange] = field(default_factory=list)
    python: list[tuple[PythonFix, Source]] = field(default_factory=list)
    admin: list[tuple[AdminFix, Source]] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    def env_values(self) -> dict[str, str | None]:
        """The SET/UNSET outcome by name (None = unset); tests compare this."""
        return {p.change.name: p.change.value for p in self.env if p.change.op is not EnvOp.PREPEND}

    def is_empty(self) -> bool:
        return not (self.env or self.python or self.admin)

    def notes(self, quiet: bool = False) -> list[str]:
        """What the script does not do, for standard error: steps for an administrator, and fixes left
        out. `quiet` (a batch script's form) keeps only those of warnings and errors: an info finding's fix
        left out on purpose (unsafe or manual) is a suggestion `check` shows, not news at every job start."""
        lines = []
        for fix, source in self.admin:
            if quiet and not _news(source):
                continue
            lines.append(f"tfdoctor: {source.code} {who_does_it(fix)}: {fix.title}")
            if fix.text:
                lines.append(f"    # {comment_text(fix.text)}")
            lines.extend(f"    {step}" for step in fix.steps)
        for skipped in self.skipped:
            if quiet and not _news(skipped.source):
                continue
            lines.append(f"tfdoctor: {skipped.source.code} not applied ({skipped.reason}): {skipped.title}")
        return lines


# What a person does in their own environment, without root: create a venv, install into one, run tfdoctor.
_OWN_ENVIRONMENT_STEPS = (" -m pip ", "pip install ", " -m venv ", "tfdoctor ")


def who_does_it(fix: AdminFix) -> str:
    """The label of a manual step: "do it yourself (in your environment)" when every step is a pip, venv
    or tfdoctor command a user runs in their own environment, "needs an administrator" otherwise."""
    own = fix.steps and all(any(marker in f" {step.lstrip()}" for marker in _OWN_ENVIRONMENT_STEPS)
                            and not step.lstrip().startswith("sudo ") for step in fix.steps)
    return "to do yourself, in your environment" if own else "needs an administrator"


def _news(source: Source) -> bool:
    return source.severity is not None and source.severity >= Severity.WARNING


def _source(finding: Finding) -> Source:
    return Source(finding.code, finding.name, finding.message, finding.severity)


def plan_fixes(findings: Iterable[Finding], unsafe: bool = False) -> FixPlan:
    """Worst findings first, so when two fixes want one variable the more serious problem decides."""
    ordered = sorted(findings, key=lambda f: (-(f.severity or Severity.INFO), f.code))
    plan = FixPlan()
    by_name: dict[str, int] = {}  # variable -> index of its SET/UNSET in plan.env
    prepends: dict[tuple[str, str], int] = {}
    for finding in ordered:
        source = _source(finding)
        for fix in finding.fixes:
            if isinstance(fix, AdminFix) or fix.applicability is Applicability.MANUAL:
                if isinstance(fix, AdminFix):
                    plan.admin.append((fix, source))
                else:
                    plan.skipped.append(Skipped(fix.title, source, "manual fix: shown, never applied"))
                continue
            if fix.applicability is Applicability.UNSAFE and not unsafe:
                # An in-process fix is Python: it goes in the --write-python file, never in the script.
                how = ("unsafe in-process fix: add --unsafe-fixes --write-python FILE to write it"
                       if isinstance(fix, PythonFix) else "unsafe fix: add --unsafe-fixes to apply it")
                plan.skipped.append(Skipped(fix.title, source, how))
                continue
            if isinstance(fix, PythonFix):
                plan.python.append((fix, source))
                continue
            assert isinstance(fix, EnvFix)
            _merge_env(plan, fix, source, by_name, prepends)
    return plan


def _merge_env(plan: FixPlan, fix: EnvFix, source: Source, by_name: dict[str, int],
               prepends: dict[tuple[str, str], int]) -> None:
    for change in fix.changes:
        if not is_env_name(change.name):
            plan.skipped.append(Skipped(fix.title, source, f"{change.name!r} is not a variable name"))
            continue
        if change.op is EnvOp.PREPEND:
            key = (change.name, change.value or "")
            if key in prepends:
                _add_source(plan, prepends[key], source)
            else:
                prepends[key] = len(plan.env)
                plan.env.append(PlannedChange(change, (source,), fix.title))
            continue
        if change.name in by_name:
            index = by_name[change.name]
            if plan.env[index].change == change:
                _add_source(plan, index, source)
            else:
                first = plan.env[index].sources[0]
                plan.skipped.append(Skipped(
                    fix.title, source,
                    f"{change.name} is already changed by {first.code} (a more serious finding)"))
            continue
        by_name[change.name] = len(plan.env)
        plan.env.append(PlannedChange(change, (source,), fix.title))


def _add_source(plan: FixPlan, index: int, source: Source) -> None:
    planned = plan.env[index]
    if source not in planned.sources:
        plan.env[index] = PlannedChange(planned.change, (*planned.sources, source), planned.title)
