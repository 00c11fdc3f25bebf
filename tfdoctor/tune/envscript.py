"""The winner as the same env script `tfdoctor fix` writes: a FixPlan rendered by tfdoctor.fixes, with
the measured gain in the comments, so the tuned settings live where the rest of tfdoctor's fixes do."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tfdoctor.fixes.plan import FixPlan, PlannedChange, Source
from tfdoctor.fixes.quoting import env_name
from tfdoctor.model import set_env, unset_env
from tfdoctor.tune.search import TuneResult
from tfdoctor.tune.space import Space

TUNE_CODE = "TUNE"


def gain_summary(result: TuneResult) -> str:
    parts = []
    labels = {"current": "the current settings", "rule": "the rule-based defaults"}
    for name in ("current", "rule"):
        gain = result.gains.get(name)
        if gain is not None:
            parts.append(f"{gain.describe()} over {labels[name]} (n={result.baselines[name].n})")
    stats = result.winner_stats
    runs = f"median of {stats.n} runs" if stats else "no runs"
    return f"measured {'; '.join(parts) or 'no baseline measured'}; winner: {runs}"


def winner_plan(space: Space, winner: Mapping[str, Any], summary: str,
                mattered: tuple[str, ...] | None = None) -> FixPlan:
    """The winner's settings as environment fixes; with `mattered` (the tune measured which parameters
    change the result), only those: the others stay as the job has them."""
    plan = FixPlan()
    source = Source(TUNE_CODE, "tuned-setting", f"the winner of tfdoctor tune ({summary})")
    for name, value in space.env_changes(winner).items():
        if mattered is not None and name not in mattered:
            continue
        env_name(name, "tune parameter")  # checked when the space was read; a script is never written without it
        change = unset_env(name) if value is None else set_env(name, value)
        title = f"Unset {name}" if value is None else f"Set {name}={value}"
        plan.env.append(PlannedChange(change, (source,), title))
    return plan


def render_winner(space: Space, result: TuneResult, hostname: str, version: str, objective: str) -> str:
    from tfdoctor.fixes.render_sh import render_sh

    assert result.winner is not None
    summary = gain_summary(result)
    header = [f"tfdoctor {version} tune winner for {hostname}", f"objective: {objective}", summary]
    if result.mattered is not None:
        left = [name for name in space.env_changes(result.winner) if name not in result.mattered]
        if left:
            header.append("left as they are (no measured effect): " + ", ".join(left))
    launcher = space.launcher(result.winner)
    if launcher:
        header.append("also run the job under: " + " ".join(launcher))
    return render_sh(winner_plan(space, result.winner, "measured gain above", result.mattered), "\n".join(header))
