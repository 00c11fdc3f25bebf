"""The verdict as the same env script `tfdoctor fix` writes: a FixPlan rendered by tfdoctor.fixes, with the
measured gain in the comments, so the tuned settings live where the rest of tfdoctor's fixes do.

It sets only the parameters of the verdict's change (tfdoctor.tune.verify): each with a measured effect,
and the change as a whole measured better than the current settings. When the verdict keeps the current
settings, the script changes nothing and says why in its comments, so a batch script that sources it
runs on exactly as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tfdoctor.fixes.plan import FixPlan, PlannedChange, Source
from tfdoctor.fixes.quoting import comment_text, env_name
from tfdoctor.model import set_env, unset_env
from tfdoctor.tune.search import TuneResult
from tfdoctor.tune.space import Space

TUNE_CODE = "TUNE"
KEEP_LINE = "keep your current settings: this script changes nothing"


def gain_summary(result: TuneResult) -> str:
    """The header line with the measured gain: the paired comparison with the current settings, then the
    rule-based defaults as a ratio of medians."""
    verdict = result.verdict
    parts = []
    if verdict is not None and verdict.gain is not None:
        parts.append(f"{verdict.gain.describe()} over the current settings")
    rule = result.gains.get("rule")
    if rule is not None:
        parts.append(f"{rule.describe()} over the rule-based defaults (ratio of medians, "
                     f"n={result.baselines['rule'].n})")
    return f"measured {'; '.join(parts) or 'no baseline measured'}"


def winner_plan(space: Space, changes: Mapping[str, Any], summary: str) -> FixPlan:
    """The verdict's changes as environment fixes (a launcher parameter is not an environment variable:
    the header names its command prefix instead)."""
    plan = FixPlan()
    source = Source(TUNE_CODE, "tuned-setting", f"the winner of tfdoctor tune ({summary})")
    for p in space.parameters:
        if p.name not in changes or p.target != "env":
            continue
        value = p.env_value(changes[p.name])
        env_name(p.name, "tune parameter")  # checked when the space was read; a script is never written without it
        change = unset_env(p.name) if value is None else set_env(p.name, value)
        title = f"Unset {p.name}" if value is None else f"Set {p.name}={value}"
        plan.env.append(PlannedChange(change, (source,), title))
    return plan


def render_winner(space: Space, result: TuneResult, hostname: str, version: str, objective: str) -> str:
    """The env script of a tune's verdict: its change, or (keep the current settings) no change at all."""
    from tfdoctor.fixes.render_sh import render_sh

    verdict = result.verdict
    assert verdict is not None
    if not verdict.apply:
        return render_keep(result, hostname, version, objective)
    header = [f"tfdoctor {version} tune winner for {hostname}", f"objective: {objective}", gain_summary(result)]
    if verdict.left_out:
        header.append("left as they are (no measured effect): " + ", ".join(verdict.left_out))
    tested_out = [n for n, test in verdict.tests.items() if n not in verdict.changes]
    if tested_out:
        header.append("left as they are (no effect measured beyond the noise): " + ", ".join(tested_out))
    changes = verdict.changes
    launcher = [arg for p in space.parameters if p.target == "launcher" and p.name in changes
                for arg in p.launchers.get(str(changes[p.name]), ())]
    if launcher:
        header.append("also run the job under: " + " ".join(launcher))
    return render_sh(winner_plan(space, changes, "measured gain above"), "\n".join(header))


def render_keep(result: TuneResult, hostname: str, version: str, objective: str) -> str:
    """A script that changes nothing: sourcing it is harmless, and its comments give the verdict."""
    verdict = result.verdict
    assert verdict is not None
    lines = [f"tfdoctor {version} tune verdict for {hostname}", f"objective: {objective}", KEEP_LINE,
             f"why: {verdict.reason}"]
    if verdict.left_out:
        lines.append("no measured effect: " + ", ".join(verdict.left_out))
    body = "\n".join(f"# {comment_text(line)}" for line in lines)
    return f"# shellcheck shell=sh\n{body}\n# Source it (. ./env.sh): it sets and unsets nothing.\n"
