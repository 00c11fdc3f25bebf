"""The tune section: optuna's own plots of the recorded trials, and the winner against both baselines.

The results file (`tfdoctor tune`'s JSON lines) is replayed into an in-memory optuna study, so the
pictures are the ones tune users know from optuna: history with best-so-far, parameter importances,
and the surface of the two most important parameters.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from tfdoctor.report.html.page import Section, table, text
from tfdoctor.report.html.plots import figure_div, plot_text, require
from tfdoctor.tune.results import TrialRecord
from tfdoctor.tune.space import Space

# Importances (optuna's fANOVA: a random forest fitted to the trials) and the contour (interpolated between
# trials) say little from a handful of points: below this many replayed trials they are left out, and the
# page says why. Ten is also where optuna's TPE sampler stops sampling at random (n_startup_trials).
MIN_TRIALS_FOR_SHAPE = 10


def replay_study(space: Space, records: Sequence[TrialRecord], maximize: bool) -> Any:
    """An in-memory optuna study holding every successful trial of the results file but the confirmation
    re-runs (seeds, screening steps and search trials: each a point the search chose)."""
    optuna = require("optuna")
    from tfdoctor.tune.search import _distributions  # the one mapping of a tune space to optuna's

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    distributions, shown = _shown_distributions(optuna, _distributions(space))
    study = optuna.create_study(direction="maximize" if maximize else "minimize")
    for record in records:
        if record.phase == "confirm" or not record.ok or record.value is None:
            continue
        params = {n: shown[n].get(_hashable(record.params[n]), record.params[n])
                  for n in distributions if n in record.params}
        if len(params) != len(distributions):
            continue
        try:
            trial = optuna.trial.create_trial(params=params, distributions=distributions, value=record.value)
        except ValueError:
            continue  # a value outside the recorded space (a resumed tune that narrowed it) cannot be replayed
        study.add_trial(trial)
    return study


def _hashable(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)


def _shown_distributions(optuna: Any, distributions: dict[str, Any]) -> tuple[dict[str, Any], dict[str, dict]]:
    """The space's distributions with every text choice as plotly must get it to draw it as text (choices come
    from a --space or results file: `<a href=…>` must not become a link in the plots), and per parameter the
    map from a recorded value to the value shown."""
    shown: dict[str, dict[Any, Any]] = {name: {} for name in distributions}
    out = dict(distributions)
    for name, distribution in distributions.items():
        if not isinstance(distribution, optuna.distributions.CategoricalDistribution):
            continue
        mapping = {}
        for index, choice in enumerate(distribution.choices):
            if isinstance(choice, str):
                label = plot_text(choice)
                mapping[choice] = label if label not in mapping.values() else f"{label} ({index + 1})"
        if mapping:
            shown[name] = mapping
            out[name] = optuna.distributions.CategoricalDistribution(
                [mapping.get(c, c) if isinstance(c, str) else c for c in distribution.choices])
    return out, shown


def importances(study: Any) -> dict[str, float]:
    """optuna's parameter importances; empty when the trials cannot separate them (too few, all alike)."""
    optuna = require("optuna")
    try:
        return dict(optuna.importance.get_param_importances(study))
    except (RuntimeError, ValueError, ZeroDivisionError):
        return {}


def _key(params: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(params.items()))


def _measured(records: Sequence[TrialRecord], maximize: bool) -> dict[str, list[float]]:
    """Every measurement of the winner, the rules of thumb and the current settings, counted as the tuner
    counts them: a configuration's values are all its successful runs (search and confirmation); the
    current settings are the runs with nothing changed."""
    ok = [r for r in records if r.ok and r.value is not None]
    current = [r.value for r in ok if r.phase == "current" or r.role == "current"]
    by_key: dict[tuple[tuple[str, Any], ...], list[float]] = {}
    for r in ok:
        if r.phase != "current" and r.role != "current":
            by_key.setdefault(_key(r.params), []).append(r.value)  # type: ignore[arg-type]
    groups: dict[str, list[float]] = {"current": current} if current else {}
    rule = next((r for r in records if r.phase == "rule"), None)
    if rule is not None and by_key.get(_key(rule.params)):
        groups["rule"] = by_key[_key(rule.params)]
    leaders = [k for k in {_key(r.params) for r in records if r.phase == "confirm" and r.role == "leader"}
               if by_key.get(k)]
    if leaders:
        pick = max if maximize else min
        groups["winner"] = by_key[pick(leaders, key=lambda k: statistics.median(by_key[k]))]
    return groups


def _comparison_table(records: Sequence[TrialRecord], maximize: bool,
                      summary: Mapping[str, Any] | None = None) -> str:
    if summary and summary.get("verdict") in ("apply", "keep-current"):
        return _verdict(records, maximize, summary)
    measured = _measured(records, maximize)
    if "winner" not in measured:
        return '<p class="muted">The leaders were never re-measured (the tune stopped before confirming).</p>'
    best = statistics.median(measured["winner"])
    current = measured.get("current")
    if current and (best < statistics.median(current) if maximize else best > statistics.median(current)):
        # A tune from before the verdict could call a configuration measured slower than the current
        # settings its winner: it is not one.
        median = statistics.median(current)
        loss = (1 - best / median) if maximize else (best / median - 1)
        return (f'<p><b>Verdict: keep your current settings</b> (the best configuration searched measured '
                f'{loss:.1%} slower than them).</p>' + _rows_table(measured, ("current", "rule"), maximize, None))
    rows = []
    for role, label in (("winner", "winner"), ("current", "current settings"), ("rule", "rules of thumb")):
        values = measured.get(role)
        if not values:
            continue
        median = statistics.median(values)
        gain = (best / median - 1) if maximize else (median / best - 1)
        rows.append((text(label), f'<span class="num">{median:.4g}</span>',
                     text(f"{min(values):.4g} – {max(values):.4g} ({len(values)} runs)"),
                     text("—" if role == "winner" else f"{gain:+.1%}")))
    return table(("settings", "median", "spread", "winner's gain"), rows)


LABELS = {"winner": "the change written", "current": "current settings", "rule": "rules of thumb"}


def _rows_table(measured: Mapping[str, list[float]], roles: Sequence[str], maximize: bool,
                gain: str | None) -> str:
    """Median and spread of each role's runs; `gain` (the verdict's, with its interval) on the winner's row."""
    rows = []
    for role in roles:
        values = measured.get(role)
        if not values:
            continue
        rows.append((text(LABELS[role]), f'<span class="num">{statistics.median(values):.4g}</span>',
                     text(f"{min(values):.4g} – {max(values):.4g} ({len(values)} runs)"),
                     text(gain if role == "winner" and gain else "—")))
    return table(("settings", "median", "spread", "against the current settings"), rows)


def _verdict(records: Sequence[TrialRecord], maximize: bool, summary: Mapping[str, Any]) -> str:
    """The tune's verdict (its summary line): the change written and its measured gain against the current
    settings in the paired verification runs, or "keep your current settings" — then no winner is shown,
    only what was measured."""
    reason = str(summary.get("reason") or "")
    changes = summary.get("changes") if isinstance(summary.get("changes"), Mapping) else {}
    measured: dict[str, list[float]] = {}
    ok = [r for r in records if r.ok and r.value is not None]
    current = [r.value for r in ok if r.phase == "verify" and r.role == "current"]
    if current:
        measured["current"] = current  # type: ignore[assignment]
    rule = next((r for r in records if r.phase == "rule"), None)
    if rule is not None:
        values = [r.value for r in ok if r.phase in ("rule", "confirm") and r.params == rule.params
                  and r.role != "current"]
        if values:
            measured["rule"] = values  # type: ignore[assignment]
    applied = summary.get("verdict") == "apply" and summary.get("winner") is not None and changes
    if not applied:
        return (f"<p><b>Verdict: keep your current settings</b> ({text(reason)}).</p>"
                + _rows_table(measured, ("current", "rule"), maximize, None))
    measured["winner"] = [r.value for r in ok if r.phase == "verify" and r.params == dict(changes)]  # type: ignore[misc]
    gain = summary.get("gain") if isinstance(summary.get("gain"), Mapping) else {}
    shown = (f"{_float(gain, 'gain'):+.1%} (interval {_float(gain, 'low'):+.1%} … {_float(gain, 'high'):+.1%}, "
             f"{_float(gain, 'confidence'):.1%})" if gain else None)
    setting = " ".join(f"{name}={value}" for name, value in changes.items())
    return (f"<p><b>Verdict: change {text(setting)}</b> (everything else as it is now): {text(reason)}.</p>"
            + _rows_table(measured, ("winner", "current", "rule"), maximize, shown))


def _effects(summary: Mapping[str, Any]) -> str:
    """What each parameter did in the tune's own screening (from the rule-based seed)."""
    effects = summary.get("effects")
    if not isinstance(effects, Mapping) or not effects:
        return ""
    mattered = summary.get("mattered")
    rows = []
    for name, effect in sorted(effects.items(), key=lambda kv: -abs(_float(kv[1], "effect"))):
        if not isinstance(effect, Mapping):
            continue
        matters = effect.get("matters")
        rows.append((text(name), f'<span class="num">{_float(effect, "effect"):.1%}</span>',
                     text(effect.get("best_value", "")), text("yes" if matters else "no")))
    # Since the verdict, the env script sets only what won its own comparison (the verdict above).
    sets = ("the env script sets only those the verdict kept" if "verdict" in summary
            else "the env script sets only these")
    named = (f"<p>What mattered: <b>{text(', '.join(map(str, mattered)))}</b>; {sets}.</p>"
             if isinstance(mattered, list) and mattered else "")
    return ("<h3>What each parameter did, moved alone from the rules of thumb</h3>" + named
            + table(("parameter", "largest change one step made", "value kept", "mattered"), rows))


def _float(mapping: Any, key: str) -> float:
    value = mapping.get(key) if isinstance(mapping, Mapping) else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def tune_section(header: Mapping[str, Any], records: Sequence[TrialRecord], source: str,
                 surface: tuple[str, str] | None = None, summary: Mapping[str, Any] | None = None,
                 pending: str | None = None) -> Section:
    """`pending`: why no verdict is shown (a shared study whose writer has not written it), in place of one."""
    space = Space.from_json(header["space"])
    maximize = bool(header.get("maximize", True))
    require("plotly")  # optuna's plots import it only when they draw: a missing one is a usage error here
    vis = require("optuna.visualization")
    study = replay_study(space, records, maximize)
    ok = sum(1 for r in records if r.ok)
    parts = [f"<p>{text(source)}: {text(len(records))} trials recorded, {text(ok)} succeeded; "
             f"{'larger' if maximize else 'smaller'} is better.</p>",
             f'<p class="muted">{text(pending)}</p>' if pending else _comparison_table(records, maximize, summary)]
    if summary:
        parts.append(_effects(summary))
    plots = 0
    if len(study.trials) >= 1:
        parts.append(figure_div(vis.plot_optimization_history(study), "plot-tune-history"))
        plots += 1
    if len(study.trials) < MIN_TRIALS_FOR_SHAPE:
        parts.append(f'<p class="muted">No parameter importances or surface: {text(len(study.trials))} trial(s) '
                     f"to replay, and these plots need at least {MIN_TRIALS_FOR_SHAPE} (a forest fitted to fewer "
                     "points, or a surface interpolated between them, shows the noise more than the parameters). "
                     "A longer tune (--budget, or --resume with a larger one) draws them.</p>")
        return Section("tune", "Tune", "".join(parts), plots)
    ranked = importances(study)
    if ranked:
        parts.append("<h3>Which parameters mattered</h3>")
        parts.append(figure_div(vis.plot_param_importances(study), "plot-tune-importances"))
        plots += 1
    if surface:
        pair = list(surface)
    elif len(ranked) >= 2:
        pair = list(ranked)[:2]
    else:
        pair = [p for p in ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS") if p in space.names()]
    if len(pair) == 2:
        parts.append(f"<h3>{text(pair[0])} × {text(pair[1])}</h3>")
        parts.append(figure_div(vis.plot_contour(study, params=pair), "plot-tune-surface", height=460))
        plots += 1
    return Section("tune", "Tune", "".join(parts), plots)
