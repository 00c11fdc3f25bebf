"""What `fix` leaves undone, as data and as the lines that say so: the findings at or above `--fail-on`
that nothing written or printed answers, and in-process fixes planned without a file to go in.

A finding counts as fixed when one of its changes is in the environment script, or when its Python fix
is written (`--write-python`). Everything else — an administrator's step, a manual or unsafe fix left out,
a finding with no fix — is left, and `fix --fail-on LEVEL` exits 1 on it.

`eval "$(tfdoctor fix --print)"` cannot see tfdoctor's exit status (eval runs what the substitution
printed, and returns that status), so a script that leaves a finding at or above --fail-on ends with
`false`: under `set -e` the eval itself fails, with the reason on standard error.
"""

from __future__ import annotations

from collections.abc import Iterable

from tfdoctor.fixes.plan import FixPlan
from tfdoctor.model import Finding, Severity


def unfixed(findings: Iterable[Finding], plan: FixPlan, fail_on: str | None, wrote_python: bool) -> list[Finding]:
    """The findings at or above `fail_on` (None or "never": none) that the plan, as delivered, leaves."""
    if fail_on is None or fail_on == "never":
        return []
    level = Severity.parse(fail_on)
    answered = {(s.code, s.message) for planned in plan.env for s in planned.sources}
    if wrote_python:
        answered |= {(source.code, source.message) for _, source in plan.python}
    return [f for f in findings if (f.severity or Severity.INFO) >= level and (f.code, f.message) not in answered]


def failing_line(left: list[Finding], fail_on: str) -> str:
    """The script's last lines when findings are left: a comment naming them, and `false` (sh and fish)."""
    codes = ", ".join(sorted({f.code for f in left}))
    return (f"# tfdoctor: left unfixed at or above --fail-on {fail_on}: {codes} (tfdoctor check says why)\n"
            "false\n")


def python_notes(plan: FixPlan, wrote_python: bool, quiet: bool = False) -> str:
    """In-process fixes planned (--unsafe-fixes) but with no --write-python file: say where they go (with
    `quiet`, only for warnings and errors, as FixPlan.notes)."""
    if wrote_python:
        return ""
    return "".join(f"tfdoctor: {source.code} not applied (an in-process fix, Python: add --write-python FILE and "
                   f"run that file at the top of your script): {fix.title}\n" for fix, source in plan.python
                   if not quiet or (source.severity is not None and source.severity >= Severity.WARNING))
