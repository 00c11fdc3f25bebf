"""`tfdoctor tune`: search thread and affinity settings by measurement, within a trial or time budget.

Options go before `--`; everything after it is the command to measure (default: the built-in
micro-benchmark). Exit codes: 0 a verdict was reached (a change measured better than the current settings,
or "keep your current settings"); 1 no trial succeeded; 2 usage error.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from tfdoctor import __version__
from tfdoctor.tune.results import SEED_MAX
from tfdoctor.usage import EXIT_FINDINGS, UsageError

DEFAULT_BUDGET = 40
# The Python-environment probes import packages and are slow; nothing here needs them.
SKIPPED_SECTIONS = frozenset({"python", "keras"})


def _facts_budget() -> tuple[Any, dict[str, tuple[str, ...]]]:
    """The job's CPU budget and the NUMA bindings to try, from the same probes `check` runs."""
    budget, launchers, _facts = _node_facts()
    return budget, launchers


def _node_facts() -> tuple[Any, dict[str, tuple[str, ...]], Any]:
    """The CPU budget, the NUMA bindings and the facts they were read from (a shared tune records them)."""
    from tfdoctor.derive.cpu_budget import cpu_budget
    from tfdoctor.engine import gather_facts
    from tfdoctor.facts import NotChecked
    from tfdoctor.facts.machine import Machine
    from tfdoctor.registry import load_registry

    probes = [p for p in load_registry().probes if p.section not in SKIPPED_SECTIONS]
    machine = Machine(root=Path("/"), environ=dict(os.environ), timeout=5.0)
    facts = gather_facts(probes, machine, deadline=time.monotonic() + 5.0)
    try:
        budget = cpu_budget(facts)
    except NotChecked as exc:
        raise UsageError(f"cannot size the search space: the CPU budget is unknown ({exc.reason})") from None
    from tfdoctor.tune.numa_binding import numa_launchers

    return budget, numa_launchers(facts), facts


def _objective(command: tuple[str, ...], metric: str | None, trial_timeout: float | None,
               bench_seconds: float, workload: str | None = None) -> Any:
    from tfdoctor.tune.objective import CommandObjective, builtin_benchmark

    if workload:
        from tfdoctor.tune.profile_objective import ProfileObjective, ProfileUnavailable

        if command or metric:
            raise UsageError("--workload measures a micro-profile workload: it takes no command or --metric")
        try:
            return ProfileObjective(workload, timeout=trial_timeout or 120.0)
        except ProfileUnavailable as exc:
            raise UsageError(str(exc)) from None
    if not command:
        if metric:
            raise UsageError("--metric reads the output of your command: give it after -- (e.g. -- python train.py)")
        return builtin_benchmark(bench_seconds, trial_timeout or 120.0)
    if not metric:
        raise UsageError("a command needs --metric REGEX whose first group is the number, e.g. "
                         "--metric 'images/sec: ([0-9.]+)'")
    try:
        return CommandObjective(tuple(command), metric, trial_timeout or 600.0)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    except Exception as exc:  # re.error
        raise UsageError(f"--metric {metric!r} is not a regular expression: {exc}") from None


@click.command(context_settings={"ignore_unknown_options": False})
@click.option("--budget", type=click.IntRange(min=1), metavar="TRIALS",
              help=f"Search trials, the two seeds included (default {DEFAULT_BUDGET}; unlimited with --time).")
@click.option("--time", "time_limit", type=click.FloatRange(min=1), metavar="SECONDS",
              help="Stop searching in time to confirm the leaders within this many seconds in all.")
@click.option("--space", "space_file", metavar="FILE",
              help="TOML/JSON file that narrows, fixes, drops or adds parameters.")
@click.option("--write", "write_path", metavar="FILE",
              help="Write the verdict as an env script (like `fix --write`; - for standard output): the measured "
                   "change, or a script that changes nothing.")
@click.option("--force", is_flag=True, help="Overwrite the --write and --html files.")
@click.option("--resume", metavar="FILE",
              help="Continue the tune recorded in this results file (a finished one only with a higher --budget or "
                   "a --time; a worker's file of a shared tune finishes its study). It RUNS THE COMMAND RECORDED IN "
                   "THE FILE: only a file you own is accepted (docs/security.md).")
@click.option("--results", metavar="FILE", help="Results file (JSON lines; default tfdoctor-tune-TIME.jsonl).")
@click.option("--metric", metavar="REGEX", help="Where the number is in your command's output (first group).")
@click.option("--maximize/--minimize", default=None, help="Whether a larger metric is better (default: maximize).")
@click.option("--trial-timeout", type=click.FloatRange(min=1), metavar="S",
              help="Seconds before a trial is killed and recorded as timed out (default 600; 120 built-in).")
@click.option("--repeats", type=click.IntRange(min=1), default=3, show_default=True,
              help="Measurements of each leader and the rule-based seed before the verdict.")
@click.option("--leaders", type=click.IntRange(min=1), default=3, show_default=True,
              help="Leading candidates re-measured.")
@click.option("--html", "plot_path", metavar="FILE",
              help="Write optuna's plots of the search (history, importances, surface) as a self-contained HTML "
                   "page: the tune section of tfdoctor report.")
@click.option("--plot", "plot_alias", metavar="FILE", hidden=True, help="Same as --html (its former name).")
@click.option("--plot-params", metavar="X,Y",
              help="The two parameters of the surface plot (default: the two that mattered most).")
@click.option("--seed", type=click.IntRange(0, SEED_MAX), help="Seed of the sampler (a resumed tune keeps its own).")
@click.option("--workload", metavar="NAME",
              help="Measure a micro-profile workload (cnn, matmul, pyfunc) instead of the built-in benchmark.")
@click.option("--bench-seconds", type=click.FloatRange(min=0.2), default=3.0, show_default=True,
              help="Measured seconds per trial of the built-in micro-benchmark.")
@click.option("--screening", type=click.Choice(["two-level", "one-at-a-time"]), default=None,
              help="How the tune finds the parameters that matter: a two-level design that moves them together "
                   "(the default: 7 runs for the default space; docs/tune.md), or each moved alone.")
@click.option("--storage", metavar="FILE|URL",
              help="Share one tune among several workers (nodes) through optuna's storage: a journal file on a "
                   "shared filesystem, or a database URL (sqlite:///…, postgresql://…). docs/tune.md.")
@click.option("--study", "study_name", metavar="NAME", default="tfdoctor-tune", show_default=True,
              help="The study's name in --storage (every worker of one tune gives the same).")
@click.option("--stale-after", type=click.FloatRange(min=1), metavar="S",
              help="A shared tune's trial whose worker has sent no heartbeat for max(S, 3 × the longest trial) "
                   "seconds (its node lost) is failed and measured again by a live worker (default 60).")
@click.option("--storage-retry", type=click.FloatRange(min=0), metavar="SECONDS",
              help="How long a worker of a shared tune keeps trying a storage it lost (a database restarting, a "
                   "connection reset) before it stops with exit 2, its results file saying how to resume "
                   "(default 60).")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def tune(budget: int | None, time_limit: float | None, space_file: str | None, write_path: str | None,
         force: bool, resume: str | None, results: str | None, metric: str | None, maximize: bool | None,
         trial_timeout: float | None, repeats: int, leaders: int, plot_path: str | None, plot_params: str | None,
         seed: int | None, workload: str | None, bench_seconds: float, command: tuple[str, ...],
         plot_alias: str | None = None, screening: str | None = None, storage: str | None = None,
         study_name: str = "tfdoctor-tune", stale_after: float | None = None,
         storage_retry: float | None = None) -> None:
    """Search TensorFlow/OpenMP thread and affinity settings by measuring them; write only what beat the
    current settings beyond the noise, else say "keep your current settings" (exit 0 either way).

    \b
    tfdoctor tune --time 180 --write env.sh
    tfdoctor tune --budget 30 --metric 'images/sec: ([0-9.]+)' -- python train.py --steps 200
    tfdoctor tune --resume tfdoctor-tune-20260101-120000.jsonl

    --resume runs the command recorded in the results file, so it refuses a file another user owns; a
    space, resume or results file naming a parameter that is not an environment variable name is refused.
    """
    from tfdoctor.tune.results import (
        ResultsError,
        ResultsLog,
        check_owner,
        check_recorded_objective,
        load_results,
        load_summary,
        recorded_budget,
        recorded_seed,
        recorded_time_limit,
    )
    from tfdoctor.tune.search import SEARCH_PHASES, Tuner, TuneSettings
    from tfdoctor.tune.space import (
        Space,
        SpaceError,
        apply_space_file,
        current_settings,
        default_space,
        load_space_file,
        rule_based_settings,
    )
    from tfdoctor.tune.storage import StorageLost as StorageLostError

    plot_option = "--html"  # errors name the option the user gave (--plot is the former name of --html)
    if plot_alias is not None:
        if plot_path is not None:
            raise UsageError("give --html FILE or --plot FILE, not both (they are the same option)")
        plot_path, plot_option = plot_alias, "--plot"
    _check_output_paths(write_path, plot_path, force, plot_option)
    if storage is not None:
        if resume:
            raise UsageError("--storage continues the study it names: run the same command again, without --resume")
        if time_limit is not None:
            raise UsageError("--storage shares a budget of trials among the workers: give --budget, not --time")
        if not storage.strip():
            raise UsageError("--storage needs a journal file or a database URL")
    elif not resume:
        for option, given in (("--stale-after", stale_after), ("--storage-retry", storage_retry)):
            if given is not None:
                raise UsageError(f"{option} applies to a tune shared through --storage (or the --resume of one)")
    try:
        import optuna  # noqa: F401
    except ImportError:
        from tfdoctor.installed import install_extra_command

        raise UsageError(f"tfdoctor tune needs optuna: {install_extra_command('tune')}") from None

    previous: list[Any] = []
    finished_note = ""  # a finished tune resumed without more budget or time: nothing is run
    if resume:
        if space_file or command or metric or maximize is not None or results or workload:
            raise UsageError("--resume continues a recorded tune: it takes its space, command, metric and "
                             "direction from the file (only --budget/--time/--write/--html may change)")
        try:
            check_owner(resume)
            log = ResultsLog.open(resume)  # locked first: what is loaded is what this process continues
            header, previous = load_results(resume, repair=True)
            finished = load_summary(resume) is not None
        except ResultsError as exc:
            raise UsageError(str(exc)) from None
        try:
            space = Space.from_json(header["space"])
            seeds = header["seeds"]
            maximize = header["maximize"]
            recorded = dict(header["objective"])
            header_budget = recorded_budget(header)
            header_time_limit = recorded_time_limit(header)
            seed = recorded_seed(header)
            check_recorded_objective(recorded)
        except ResultsError as exc:
            raise UsageError(f"{resume}: {exc}") from None
        except SpaceError as exc:
            raise UsageError(f"{resume}: the header line is incomplete or invalid: {exc}") from None
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError):
            raise UsageError(f"{resume}: the header line is incomplete: not a tfdoctor tune results file") from None
        _check_recorded(resume, space, seeds, previous)
        axes = _plot_axes(space, plot_params) if plot_path else None
        objective = _objective(tuple(recorded.get("command_args", ())), recorded.get("user_metric"),
                               recorded.get("timeout"), recorded.get("bench_seconds", 3.0),
                               recorded.get("workload"))
        done = sum(1 for r in previous if r.phase in SEARCH_PHASES)
        if finished:
            # A finished tune continues only when asked for more: a --budget above the trials it ran, or a
            # --time for this continuation (then the budget is unlimited unless given).
            from tfdoctor.tune.shared import recorded_study as _recorded_study

            if _recorded_study(header) is not None:
                # A shared study's budget is the study's, fixed when it was created: it is not continued here.
                if budget is not None or time_limit is not None:
                    raise UsageError(f"{resume} is a finished shared tune (study {_recorded_study(header)[1]!r}, "
                                     f"budget {header_budget}): to search more, start a new study with a higher "
                                     "--budget (another --study NAME)")
                finished_note = (f"tfdoctor: {resume} is a finished shared tune (study "
                                 f"{_recorded_study(header)[1]!r}, budget {header_budget}); nothing new was run. "
                                 "To search more, start a new study (another --study NAME) with a higher --budget.\n")
            elif time_limit is None and (budget is None or budget <= done):
                finished_note = (f"tfdoctor: {resume} is a finished tune ({done} search trials); nothing new was "
                                 + (f"run: --budget {budget} is not above them" if budget is not None else "run")
                                 + f". To continue it, give --budget above {done} or --time SECONDS.\n")
        else:
            budget = budget if budget is not None else header_budget
            if budget is None and time_limit is None:
                time_limit = header_time_limit  # a killed --time tune resumes with its full time again
            # The outputs the tune was started to write, unless this continuation names its own.
            write_path, plot_path, force = recorded_outputs(header, write_path, plot_path, force)
            _check_output_paths(write_path, plot_path, force, plot_option)
        # The design the tune screened with (a results file from before the choice: one-at-a-time).
        screening = header.get("screening") if header.get("screening") in ("one-at-a-time", "two-level") else (
            "one-at-a-time")
        current_env = header.get("current_env")
        if not isinstance(current_env, dict):
            current_env = None  # a results file from before it was recorded: the current seed stands in
        from tfdoctor.tune.shared import recorded_study

        recorded_shared = recorded_study(header)
        if stale_after is not None and (recorded_shared is None or finished):
            raise UsageError(f"--stale-after: {resume} is " + ("a finished tune" if recorded_shared is not None else
                             "a tune of one node (no --storage)") + ": it has no other workers' trials to judge")
        if recorded_shared is not None and not finished:
            # One worker's file of a shared tune: this process finishes the study it names (the budget is
            # the study's), measuring on this node.
            if header_budget is None:
                raise UsageError(f"{resume}: the header of a shared tune has no budget")
            if budget not in (None, header_budget):
                raise UsageError(f"--budget: a shared tune's budget is its study's ({header_budget})")
            storage, study_name = recorded_shared
            if "://" not in storage and not Path(storage).is_file():
                # Opening it would start an empty study and measure the whole budget again.
                raise UsageError(f"{resume}: the journal of its study, {storage}, is not there (moved or deleted); "
                                 "a shared tune is finished from its study")
            if "://" in storage:
                from tfdoctor.tune.shared import StorageError, check_database_there

                try:
                    check_database_there(storage)  # a SQLite file, likewise: connecting would create it empty
                except StorageError as exc:
                    raise UsageError(f"{resume}: {exc} (moved or deleted); a shared tune is finished from its "
                                     "study") from None
            budget = header_budget
            _cpu, _launchers, node_facts = _node_facts()
    else:
        maximize = True if maximize is None else maximize
        objective = _objective(command, metric, trial_timeout, bench_seconds, workload)
        cpu, launchers, node_facts = _node_facts()
        space = default_space(cpu, launchers)
        if space_file:
            try:
                space = apply_space_file(space, load_space_file(space_file), f"--space {space_file}")
            except SpaceError as exc:
                raise UsageError(str(exc)) from None
        from tfdoctor.tune.screening import MAX_FACTORS

        if screening == "two-level" and len(space.parameters) > MAX_FACTORS:
            raise UsageError(f"--screening two-level screens at most {MAX_FACTORS} parameters; the space has "
                             f"{len(space.parameters)} (drop some in --space, or use --screening one-at-a-time)")
        if screening is None:  # the default design, where the space fits it
            screening = "two-level" if len(space.parameters) <= MAX_FACTORS else "one-at-a-time"
        seeds = {"current": current_settings(space, os.environ, cpu), "rule": rule_based_settings(cpu, space)}
        current_env = {p.name: os.environ.get(p.name) for p in space.parameters if p.target == "env"}
        axes = _plot_axes(space, plot_params) if plot_path else None  # checked before any file is created
        if budget is None and time_limit is None:
            budget = DEFAULT_BUDGET
        seed = seed if seed is not None else int.from_bytes(os.urandom(2), "little")
        from tfdoctor.tune.results import default_results_name

        # Workers on one shared folder: one results file each.
        worker = (socket.gethostname(), os.getpid()) if storage else None
        path = _results_name(results) if results else default_results_name(time.localtime(), worker)
        header = {"space": space.to_json(), "seeds": seeds, "current_env": current_env, "maximize": maximize,
                  "budget": budget,
                  "time_limit": time_limit, "seed": seed, "screening": screening,
                  "objective": {**objective.describe(), "command_args": list(command), "user_metric": metric,
                                "bench_seconds": bench_seconds},
                  "cpu_budget": cpu.cpus, "hostname": socket.gethostname(), "tfdoctor_version": __version__,
                  "outputs": outputs_entry(write_path, plot_path, force)}
        if storage:
            from tfdoctor.tune.shared import header_entry

            # Which worker this file is (as the study's trials name it): the report tells its trials apart.
            header["shared"] = {**header_entry(storage, study_name),
                                "worker": f"{node_facts.meta.get('hostname') or socket.gethostname()}:{os.getpid()}"}
        try:
            try:
                log = ResultsLog.create(path, header)
            except ResultsError:
                if not (storage and _abandoned_start(Path(path), header, storage_retry)):
                    raise
                # The same command again after a worker that never got past its start (killed, its node lost):
                # its header-only file holds nothing to resume, and must not stop the command.
                _out(f"tfdoctor: {path} held only the header of a worker that never started; replaced\n", err=True)
                Path(path).unlink()
                log = ResultsLog.create(path, header)
        except ResultsError as exc:
            raise UsageError(str(exc)) from None
        created_size = log.path.stat().st_size

    settings = TuneSettings(budget=budget, time_limit=time_limit, leaders=leaders, repeats=repeats,
                            maximize=bool(maximize), seed=seed, screening=screening)
    from tfdoctor.tune.progress import TuneProgress

    done = sum(1 for r in previous if r.phase in SEARCH_PHASES)
    shared = None
    if storage:
        from tfdoctor.tune.shared_cli import shared_tune

        with _guarded(log):
            try:
                from tfdoctor.tune.node_python import python_environment

                # The Python the trials run in: what the other nodes' must match for their trials to be mixed.
                trial_command = tuple(header["objective"].get("command_args") or ())
                shared = shared_tune(storage, study_name, space, objective, seeds, settings, node_facts, log,
                                     resumed=previous if resume else None, stale_after=stale_after,
                                     storage_retry=storage_retry,
                                     python_env=python_environment(trial_command, os.environ))
            except UsageError:
                if not resume:
                    _forget_failed_start(log.path, created_size)
                raise
        if shared is None:
            log.close()
            return  # another worker writes the winner
        previous, settings = shared.records, shared.settings
        done = len(previous)
    if finished_note:
        _out(finished_note, err=True)
        result = Tuner(space, objective, None, settings, seeds, previous, current_env=current_env).replay(
            "finished earlier; nothing new was run")
    else:
        try:
            with _guarded(log), TuneProgress(budget, time_limit, done, bool(maximize)) as progress:
                tuner = Tuner(space, objective, log, settings, seeds, previous, on_trial=progress.update,
                              current_env=current_env, pool=shared.pool if shared is not None else None)
                try:
                    result = tuner.run()
                except StorageLostError as exc:  # the helpers' storage, lost past --storage-retry
                    from tfdoctor.tune.shared_cli import storage_lost

                    raise storage_lost(exc, log) from None
                log.append_summary(result.summary_json())
        finally:
            log.close()  # the lock and its note go before the report and the scripts are written
        if shared is not None:
            from tfdoctor.tune.shared import mark_written
            from tfdoctor.tune.storage import StorageLost

            try:
                mark_written(shared.study, shared.worker, result.summary_json().get("verdict", "none"),
                             result.summary_json(), [r for r in result.records if r.phase not in SEARCH_PHASES],
                             str(log.path.resolve()))
            except StorageLost as exc:  # the verdict is in the results file; the env script is written below
                _out(f"tfdoctor: the study could not be told that its winner is written ({exc})\n", err=True)

    from tfdoctor.tune.progress import render_summary

    _out(render_summary(space, result, bool(maximize), str(log.path)))
    if plot_path:
        _write_plot(header, result.records, axes, plot_path, force, str(log.path), result.summary_json())
    if result.verdict is None:
        _out("tfdoctor: no trial succeeded; the errors are in the results file\n", err=True)
        raise SystemExit(EXIT_FINDINGS)
    if write_path:
        from tfdoctor.fixes.write import WriteError, write_file
        from tfdoctor.tune.envscript import render_winner

        recorded = header["objective"]
        described = (f"micro-profile workload {recorded['workload']}" if recorded.get("workload")
                     else " ".join(recorded.get("command", [])))
        script = render_winner(space, result, socket.gethostname(), __version__, described)
        try:
            write_file(write_path, script, force=force)
        except WriteError as exc:
            raise UsageError(str(exc)) from None
        if result.verdict.apply:
            _out(f"tfdoctor: the measured change written to {write_path}\n", err=True)
        else:
            _out(f"tfdoctor: keep your current settings; {write_path} changes nothing (it says why)\n", err=True)


@contextlib.contextmanager
def _guarded(log: Any) -> Iterator[None]:
    """While trials run: a results file that cannot be written (a full disk) is a usage error, said as
    such (exit 2), the file kept resumable; a tune ended by ^C or a signal says so in its results file
    (the trial that was running is not recorded: `--resume` runs it again)."""
    from tfdoctor.facts.bounded import Interrupted
    from tfdoctor.tune.results import ResultsError

    try:
        yield
    except ResultsError as exc:
        raise UsageError(str(exc)) from None
    except (KeyboardInterrupt, Interrupted) as exc:
        with contextlib.suppress(ResultsError):
            log.append_interrupted("SIGINT" if isinstance(exc, KeyboardInterrupt) else exc.name)
        from tfdoctor.fixes.quoting import sh_word

        _out(f"tfdoctor: interrupted; continue with: tfdoctor tune --resume {sh_word(str(log.path))}\n", err=True)
        raise


def _check_recorded(path: str, space: Any, seeds: Any, records: list[Any]) -> None:
    """Every recorded assignment names only parameters of the recorded space, with values inside it: a
    record outside the space (an unknown parameter, a hand-edited value) is refused, not half-used."""
    assignments = [("a seed", s) for s in (seeds.values() if isinstance(seeds, dict) else [None])]
    assignments += [(f"trial {r.number}", r.params) for r in records]
    names = set(space.names())
    for where, params in assignments:
        if not isinstance(params, dict):
            raise UsageError(f"{path}: {where} is not a set of parameters: not a tfdoctor tune results file")
        unknown = sorted(set(params) - names)
        if unknown:
            raise UsageError(f"{path}: {where} names parameter(s) not in the recorded space: "
                             f"{', '.join(repr(n)[:60] for n in unknown[:5])}")
        outside = [n for n, v in params.items() if not space.by_name(n).contains(v)]
        if outside:
            raise UsageError(f"{path}: {where} has a value outside the space for {', '.join(outside[:5])}")


def _out(text: str, err: bool = False) -> None:
    from tfdoctor.usage import emit

    emit(text, err)


def _check_output_paths(write_path: str | None, plot_path: str | None, force: bool,
                        plot_option: str = "--html") -> None:
    """Refuse before an hour of trials, not after."""
    for option, given in (("--write", write_path), (plot_option, plot_path)):
        if given is not None and not given.strip():
            raise UsageError(f"{option} needs a file name (- for standard output)")
    for path in (write_path, plot_path):
        if path and path != "-" and Path(path).exists() and not force:
            raise UsageError(f"{path} exists; add --force to overwrite it")
    if plot_path and Path(plot_path).suffix.lower() == ".png":
        raise UsageError(f"{plot_option} {plot_path}: PNG heatmaps were replaced by optuna's interactive plots; write "
                         "--html FILE.html (or tfdoctor report --tune RESULTS) and save a picture from the browser")
    if plot_path and plot_path != "-" and Path(plot_path).suffix.lower() not in (".html", ".htm"):
        raise UsageError(f"{plot_option} {plot_path}: the file must end in .html")


def _plot_axes(space: Any, plot_params: str | None) -> tuple[str, str] | None:
    """The two parameters of the surface plot, when the user chose them (else the two that mattered most)."""
    if not plot_params:
        return None
    names = [n.strip() for n in plot_params.split(",") if n.strip()]
    if len(names) != 2:
        raise UsageError("--plot-params takes two parameter names: X,Y")
    unknown = [n for n in names if n not in space.names()]
    if unknown:
        raise UsageError(f"--plot-params: {', '.join(unknown)} not in the space ({', '.join(space.names())})")
    return names[0], names[1]


def _write_plot(header: dict[str, Any], records: Any, axes: tuple[str, str] | None, path: str, force: bool,
                source: str, summary: dict[str, Any] | None = None) -> None:
    """The tune section of `tfdoctor report` alone: optuna's history, importances and surface."""
    from tfdoctor.usage import write_section_page

    write_section_page(path, force, "tune", header, records, source, surface=axes, summary=summary)


def outputs_entry(write_path: str | None, plot_path: str | None, force: bool) -> dict[str, Any]:
    """What the header keeps of the outputs the tune was asked to write, so `--resume` writes them too: a file
    as an absolute path (a resume may run in another folder, on another node of the shared file system), -
    as it is."""
    def where(path: str | None) -> str | None:
        return None if path is None else path if path == "-" else os.path.abspath(path)

    return {"write": where(write_path), "html": where(plot_path), "force": bool(force)}


def recorded_outputs(header: dict[str, Any], write_path: str | None, plot_path: str | None,
                     force: bool) -> tuple[str | None, str | None, bool]:
    """The --write/--html files of a resumed tune: those given now, else those its header recorded (with the
    --force it was given); a results file from before they were recorded keeps what is given now."""
    outputs = header.get("outputs")
    if not isinstance(outputs, dict):
        return write_path, plot_path, force
    recorded = {k: v for k, v in outputs.items() if k in ("write", "html") and isinstance(v, str) and v.strip()}
    if write_path is None and "write" in recorded:
        write_path, force = recorded["write"], force or outputs.get("force") is True
    if plot_path is None and "html" in recorded:
        plot_path, force = recorded["html"], force or outputs.get("force") is True
    return write_path, plot_path, force


def _results_name(pattern: str) -> str:
    """--results with collect -o's patterns expanded (%h host, %N node, %j job, %%): one file per worker of a
    job step from one command line."""
    from tfdoctor.fleet.output_name import OutputNameError, expand_output

    try:
        return expand_output(pattern, socket.gethostname(), os.environ)
    except OutputNameError as exc:
        raise UsageError(f"--results: {exc}") from None


def _abandoned_start(path: Path, header: dict[str, Any], storage_retry: float | None) -> bool:
    """Whether `path` is the header-only results file of a worker of the same study that never got past its
    start (a worker that did writes a "started" line): its process is gone (same host), or the file is older
    than any start can take (another host: the storage's retry time and a minute more). Only a file of this
    user's own."""
    from tfdoctor.facts.bounded import InputFileError, read_input_file
    from tfdoctor.tune.results import ResultsError, check_owner
    from tfdoctor.tune.storage import DEFAULT_RETRY_SECONDS

    try:
        check_owner(path)
        raw = read_input_file(path, 1024 * 1024, "results file")
        lines = [line for line in raw.split(b"\n") if line.strip()]
        if len(lines) != 1:
            return False
        import json

        old = json.loads(lines[0])
        age = time.time() - path.stat().st_mtime
    except (ResultsError, InputFileError, OSError, ValueError, RecursionError):
        return False
    shared = old.get("shared") if isinstance(old, dict) and old.get("type") == "header" else None
    if not isinstance(shared, dict) or any(shared.get(k) != header["shared"].get(k) for k in ("study", "storage")):
        return False
    host, _, pid = str(shared.get("worker", "")).rpartition(":")
    if host == header["shared"]["worker"].rpartition(":")[0] and pid.isascii() and pid.isdigit():
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return True
        except (OSError, OverflowError):  # alive, another user's (not ours to judge); no pid tfdoctor wrote
            return False
        return False  # alive: a worker at its start now
    limit = (DEFAULT_RETRY_SECONDS if storage_retry is None else storage_retry) + 60.0
    return age > limit


def _forget_failed_start(path: Path, created_size: int) -> None:
    """A shared worker that could not start (its storage refused) leaves no results file behind: a file holding
    only the header it wrote would make the very same command, run again, refuse to start ("exists")."""
    import contextlib

    with contextlib.suppress(OSError):
        if path.stat().st_size == created_size:
            path.unlink()
