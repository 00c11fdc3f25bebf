"""What `tfdoctor tune` shows: a progress bar with the best value so far (stderr), then a results table
and the verdict (stdout)."""

from __future__ import annotations

import io
import statistics
import sys
from types import TracebackType
from typing import Any

from tfdoctor.terminal import markup_safe, safe_line
from tfdoctor.tune.results import TrialRecord
from tfdoctor.tune.search import TuneResult
from tfdoctor.tune.space import Space

TABLE_ROWS = 10


class TuneProgress:
    def __init__(self, budget: int | None, time_limit: float | None, done: int, maximize: bool) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.console = Console(stderr=True)
        self.progress = Progress(TextColumn("[bold]tune[/]"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), TextColumn("{task.description}"),
                                 console=self.console, transient=False, disable=not sys.stderr.isatty())
        self.task = self.progress.add_task("", total=budget if budget is not None else None, completed=done)
        self.maximize = maximize
        self.plain = not sys.stderr.isatty()

    def __enter__(self) -> TuneProgress:
        self.progress.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.progress.stop()

    def update(self, record: TrialRecord, best: TrialRecord | None) -> None:
        from rich.markup import escape

        best_text = f"best {best.value:.4g} (trial {best.number})" if best is not None else "no success yet"
        # A failed trial's error is the child's own words: shown, never obeyed (escapes, rich markup).
        outcome = f"{record.value:.4g}" if record.ok else safe_line(f"{record.status}: {record.error}")
        if record.phase not in ("confirm", "verify"):  # the budget counts search trials only
            self.progress.advance(self.task)
        self.progress.update(self.task, description=escape(f"{best_text}; last {record.phase} {outcome}"))
        if self.plain:
            # Not a terminal (a log file, CI): one line per trial instead of a redrawn bar.
            self.console.print(f"trial {record.number} [{record.phase}{'/' + record.role if record.role else ''}] "
                               f"{outcome} in {record.seconds:.1f} s; {best_text}", highlight=False, markup=False)


def _settings_text(space: Space, params: dict[str, Any]) -> str:
    return " ".join(f"{p.name}={params.get(p.name)}" for p in space.parameters)


def render_summary(space: Space, result: TuneResult, maximize: bool, results_path: str,
                   width: int | None = None) -> str:
    """The ranked trials and the verdict, at `width` columns (default: the terminal's). When the parameters
    cannot each have a column at that width, they fold into one "settings" column (NAME=value, one per
    line) rather than being broken mid-word."""
    from rich.console import Console

    from tfdoctor.terminal import fits, terminal_width

    buffer = io.StringIO()
    console = Console(file=buffer, width=width or terminal_width(), no_color=True, highlight=False)
    groups: dict[tuple[Any, ...], list[TrialRecord]] = {}
    for record in result.records:
        if record.ok and record.phase != "verify":  # a verify run changes a subset: no point of the table
            key = ("current",) if record.phase == "current" or record.role == "current" else tuple(
                record.params.get(n) for n in space.names())
            groups.setdefault(key, []).append(record)
    sign = 1 if maximize else -1
    ranked = sorted(groups.items(), key=lambda kv: -sign * statistics.median([r.value for r in kv[1]]))  # type: ignore[misc]
    table = _summary_table(space, result, ranked, folded=False)
    if not fits(console, table):
        table = _summary_table(space, result, ranked, folded=True)
    console.print(table)
    lines = [f"search stopped: {result.stopped}; results in {results_path}"]
    lines.extend(verdict_lines(space, result))
    lines.extend(effect_lines(result))
    console.print("\n".join(lines), markup=False)
    return buffer.getvalue()


def verdict_lines(space: Space, result: TuneResult) -> list[str]:
    """The verdict first: the change to make and what it measured against the current settings, or
    "keep your current settings" and why. The best configuration found is named, never as a winner,
    when it is not applied."""
    verdict = result.verdict
    if verdict is None:
        return []
    lines: list[str] = []
    if verdict.apply and result.winner_stats is not None:
        changes = " ".join(f"{n}={v}" for n, v in verdict.changes.items())
        lines.append(f"verdict: change {changes} (everything else as it is now)")
        lines.append(f"  {verdict.reason}")
        lines.append(f"  median {result.winner_stats.median:.4g} over {result.winner_stats.n} runs "
                     f"(spread {result.winner_stats.spread * 100:.1f} %)")
        rule = result.gains.get("rule")
        if rule is not None:
            lines.append(f"  vs rule-based defaults: {rule.describe()} (ratio of medians; baseline median "
                         f"{result.baselines['rule'].median:.4g}, {result.baselines['rule'].n} runs)")
    else:
        lines.append(f"verdict: keep your current settings ({verdict.reason})")
        if result.candidate is not None and result.candidate_stats is not None:
            lines.append(f"  best configuration searched (not applied): {_settings_text(space, result.candidate)}, "
                         f"median {result.candidate_stats.median:.4g} over {result.candidate_stats.n} runs")
    if verdict.left_out:
        lines.append("  left as they are (no measured effect): " + ", ".join(verdict.left_out))
    for name, test in verdict.tests.items():
        outcome = "kept" if name in verdict.changes else "left as it is"
        lines.append(f"  {name}: the change with it against without it: {test.describe()}: {outcome}")
    return lines


def _short(name: str) -> str:
    return name.replace("TF_NUM_", "").replace("_THREADS", "")


def _summary_table(space: Space, result: TuneResult, ranked: list[Any], folded: bool) -> Any:
    from rich import box
    from rich.table import Table

    # Folded: no vertical rules either, so that a long preset (KMP_AFFINITY=granularity=fine,compact,1,0)
    # keeps its line in 80 columns.
    table = Table(title=f"tfdoctor tune: {len(result.records)} trials ({sum(not r.ok for r in result.records)} failed)",
                  box=box.SIMPLE_HEAD if folded else box.HEAVY_HEAD, show_edge=not folded, pad_edge=not folded,
                  collapse_padding=folded)
    table.add_column("rank", justify="right")
    table.add_column("median", justify="right")
    table.add_column("runs", justify="right")
    table.add_column("spread", justify="right")
    table.add_column("seed")
    if folded:
        table.add_column("settings", overflow="fold")
    else:
        for name in space.names():
            table.add_column(_short(name), overflow="fold")
    for rank, (key, records) in enumerate(ranked[:TABLE_ROWS], start=1):
        values = [r.value for r in records]
        spread = statistics.stdev(values) / statistics.fmean(values) if len(values) > 1 else 0.0  # type: ignore[arg-type]
        role = "current" if key == ("current",) else ",".join(sorted({r.phase for r in records} & {"rule"}))
        params = records[0].params
        # A value of the user's space file is shown as written: never read as rich markup ([bold]).
        settings = [markup_safe(str(params.get(n))) for n in space.names()]
        if folded:
            settings = ["\n".join(f"{_short(n)}={v}" for n, v in zip(space.names(), settings, strict=True))]
        table.add_row(str(rank), f"{statistics.median(values):.4g}", str(len(values)),  # type: ignore[arg-type]
                      f"{spread * 100:.1f} %", role, *settings)
    return table


def effect_lines(result: TuneResult) -> list[str]:
    """Which parameters mattered, by how much: each one's largest measured change when moved alone from
    the rule seed, and the value the tune kept for it."""
    if not result.effects:
        return []
    lines = ["what each parameter did in the screening (from the rule-based seed):"]
    for name, effect in sorted(result.effects.items(), key=lambda kv: -kv[1].effect):
        verdict = "mattered" if result.mattered and name in result.mattered else "no measured effect"
        if verdict == "mattered" and not effect.matters:
            verdict = "searched (it interacts with the other thread pool)"
        lines.append(f"  {name:<24} up to {effect.effect * 100:5.1f} % over {effect.steps} step(s): {verdict}")
    return lines
