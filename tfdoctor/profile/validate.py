"""`tfdoctor fix --validate`: measure every fix of a plan against the current environment.

Each environment fix (the changes of one fix title, as the script would apply them) and each
in-process fix (its code run in the workload right after `import tensorflow`) is compared with the
unchanged environment by `compare.compare`, each within its own budget (a wall-clock bound: n fixes
take at most n × budget). A fix measured slower is taken out of the plan, as a skipped fix whose
reason is the measurement, so the written script never carries it; faster, no effect and undecided
fixes stay, and the measurement is reported for each.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from tfdoctor.fixes.plan import FixPlan, PlannedChange, Skipped, Source
from tfdoctor.model import PythonFix
from tfdoctor.profile.compare import DEFAULT_BUDGET, Arm, Comparison, compare
from tfdoctor.profile.envfile import apply_changes
from tfdoctor.profile.stats import SLOWER

Compare = Callable[..., Comparison]


@dataclass(frozen=True)
class Validation:
    """A fix measured: its title, the finding it came from and the comparison that judged it."""

    title: str
    source: Source
    comparison: Comparison

    @property
    def dropped(self) -> bool:
        return self.comparison.verdict == SLOWER and self.comparison.error is None


def env_candidates(plan: FixPlan) -> dict[str, list[PlannedChange]]:
    """The planned environment changes grouped by the fix they came from (its title)."""
    groups: dict[str, list[PlannedChange]] = {}
    for planned in plan.env:
        groups.setdefault(planned.title, []).append(planned)
    return groups


def validate_plan(plan: FixPlan, environ: Mapping[str, str], *, workload: str = "cnn",
                  budget: float = DEFAULT_BUDGET, device: str = "auto",
                  progress: Callable[[str], None] | None = None,
                  comparer: Compare = compare) -> tuple[FixPlan, list[Validation]]:
    """(the plan without the fixes measured slower, every measurement)."""
    baseline = Arm("current environment", dict(environ))
    validations: list[Validation] = []
    dropped_titles: set[str] = set()
    for title, group in env_candidates(plan).items():
        candidate = Arm(title, apply_changes(environ, [p.change for p in group]))
        result = comparer(baseline, candidate, workload, budget=budget, device=device,
                          progress=_prefixed(progress, title))
        validation = Validation(title, group[0].sources[0], result)
        validations.append(validation)
        if validation.dropped:
            dropped_titles.add(title)
    kept_python: list[tuple[PythonFix, Source]] = []
    dropped_python: list[Validation] = []
    for fix, source in plan.python:
        candidate = Arm(fix.title, dict(environ), snippet=fix.code)
        result = comparer(baseline, candidate, workload, budget=budget, device=device,
                          progress=_prefixed(progress, fix.title))
        validation = Validation(fix.title, source, result)
        validations.append(validation)
        if validation.dropped:
            dropped_python.append(validation)
        else:
            kept_python.append((fix, source))
    skipped = list(plan.skipped)
    for validation in validations:
        if validation.dropped:
            skipped.append(Skipped(validation.title, validation.source,
                                   f"measured {validation.comparison.describe()}"))
    validated = replace(plan, env=[p for p in plan.env if p.title not in dropped_titles],
                        python=kept_python, skipped=skipped)
    return validated, validations


def _prefixed(progress: Callable[[str], None] | None, title: str) -> Callable[[str], None] | None:
    if progress is None:
        return None
    return lambda message: progress(f"validating {title!r}: {message}")


def validation_notes(validations: list[Validation]) -> str:
    lines = []
    for v in validations:
        action = "dropped" if v.dropped else "kept"
        lines.append(f"tfdoctor: {v.source.code} {v.title!r}: {v.comparison.describe()} — {action}")
    return "".join(line + "\n" for line in lines)


def validate_fixes(plan: FixPlan, live: bool = True, workload: str = "cnn") -> FixPlan:
    """The CLI's entry (`fix --validate`): validate against this process's environment, with a
    progress display, measurements on stderr."""
    import os

    from tfdoctor.profile.progress import progress_display
    from tfdoctor.usage import UsageError

    if not live:
        raise UsageError("--validate measures this machine; it cannot be combined with --facts or --root")

    with progress_display(True) as progress:
        validated, validations = validate_plan(plan, dict(os.environ), workload=workload, progress=progress)
    from tfdoctor.terminal import write

    write(validation_notes(validations), err=True)
    return validated
