"""`tfdoctor tune --storage S`: this process as one worker of a tune shared through optuna's storage
(tfdoctor.tune.shared). It measures its share of the study's trials; the one worker handed the trial past
the budget gets back the study's records (the odd nodes' trials left out) and goes on as a single-node tune
would: confirmation, the verdict on its node, the env script."""

from __future__ import annotations

import contextlib
import os
import socket
from dataclasses import dataclass, replace
from typing import Any

from tfdoctor.usage import UsageError


def _say(text: str) -> None:
    from tfdoctor.terminal import write

    write(text, err=True)


@dataclass
class SharedRun:
    """What the writer goes on with: the records to choose the winner from, the settings (their budget:
    those records, so the tuner searches no more), and the study to mark written."""

    records: list[Any]
    settings: Any
    study: Any
    worker: str
    pool: Any = None  # tfdoctor.tune.shared_pool.SharedPool: the confirmation and verification runs shared out


def shared_tune(storage_spec: str, study_name: str, space: Any, objective: Any, seeds: dict[str, Any],
                settings: Any, node_facts: Any, log: Any, resumed: list[Any] | None = None,
                stale_after: float | None = None, storage_retry: float | None = None,
                python_env: dict[str, Any] | None = None) -> SharedRun | None:
    """None when another worker writes the winner; else what the writer goes on with. `resumed`: the
    records of this worker's results file when it is resumed (`--resume`): it then finishes the tune —
    measures what is left of the study's budget and writes the winner, its own confirmation and
    verification runs reused. A storage that stays unreachable past `storage_retry` seconds (default 60)
    ends this worker with exit 2, its results file saying how to resume it (StorageLost)."""
    from tfdoctor.tune.shared import (
        StorageError,
        dumps_facts,
        open_storage,
        open_study,
        record_node,
        run_worker,
        study_summary,
    )
    from tfdoctor.tune.storage import DEFAULT_RETRY_SECONDS, StorageLost

    node = str(node_facts.meta.get("hostname") or socket.gethostname())
    worker = f"{node}:{os.getpid()}"
    retry = DEFAULT_RETRY_SECONDS if storage_retry is None else storage_retry

    def waiting(reason: str, seconds: float) -> None:
        from tfdoctor.facts.redact import excerpt
        from tfdoctor.fixes.quoting import comment_text

        _say(f"tfdoctor: {worker}: the study's storage failed ({comment_text(excerpt(reason, 160))}); trying "
             f"again for up to {seconds:g} s (--storage-retry)\n")

    try:
        study = open_study(open_storage(storage_spec, retry_seconds=retry, on_wait=waiting), study_name,
                           settings.maximize, settings.seed, seeds.get("rule"))
        record_node(study, node, dumps_facts(node_facts), python_env)
        if resumed is None:  # past its start: the file is no longer a failed start's (tune/cli.py)
            log.append_line({"type": "started", "worker": worker})
    except StorageError as exc:
        raise UsageError(str(exc)) from None
    except StorageLost as exc:
        raise UsageError(f"--storage: {exc}") from None
    except Exception as exc:  # a damaged journal or database: optuna and SQLAlchemy raise many kinds
        from tfdoctor.facts.redact import excerpt

        raise UsageError(f"--storage: cannot use study {study_name!r}: {type(exc).__name__}: "
                         f"{excerpt(str(exc), 300)}") from None

    def progress(number: int, params: dict[str, Any], measurement: Any) -> None:
        value = f"{measurement.value:.4g}" if measurement.value is not None else measurement.status
        _say(f"tfdoctor: {worker} trial {number + 1}/{settings.budget}: {value}\n")

    def stale(number: int, owner: str, silent: float) -> None:
        from tfdoctor.fixes.quoting import comment_text

        # The owner's name is what another worker wrote into the shared study: one printable, redacted line.
        _say(f"tfdoctor: trial {number + 1}/{settings.budget} of worker {comment_text(owner)} has sent no "
             f"heartbeat for {silent:.0f} s (its node lost?): failed; its configuration is measured again\n")

    finish = resumed is not None
    try:
        result = run_worker(study, space, objective, settings.budget, node, worker, settings.seed, progress,
                            finish=finish, stale_floor=stale_after, on_stale=stale)
    except StorageLost as exc:
        raise storage_lost(exc, log) from None
    workers = study_summary(study)["workers"]
    _say(f"tfdoctor: {worker} measured {len(result.measured)} of the study's {settings.budget} trials "
         f"({len(workers)} worker(s) in all)\n")
    from tfdoctor.tune.heartbeat import GRACE_FLOOR, beat_interval, grace_seconds
    from tfdoctor.tune.shared import _durations

    floor = GRACE_FLOOR if stale_after is None else stale_after
    if not result.writer:
        from tfdoctor.tune.shared_pool import help_writer

        # Stay for the writer's confirmation and verification runs, as long as it hands out work.
        _say(f"tfdoctor: {worker} waits to measure the writer's confirmation and verification runs\n")
        try:
            helped = help_writer(study, objective, worker, node, beat_interval(floor),
                                 grace_seconds(_durations(study.get_trials(deepcopy=False)), floor), space=space)
        except StorageLost as exc:
            raise storage_lost(exc, log) from None
        _say(f"tfdoctor: {worker} measured {helped} confirmation and verification run(s) for the writer\n")
        resume = resume_command(log.path)  # a command to copy
        _say(f"tfdoctor: the worker handed trial {settings.budget + 1} writes the winner; this one is done "
             f"(should that worker die, `{resume}` finishes the tune)\n")
        return None
    for name, facts in result.excluded.items():
        from tfdoctor.fixes.quoting import comment_text

        # Names and facts another worker wrote into the shared study: one printable, redacted line.
        shown = ", ".join(f"{k}={v!r}" for k, v in sorted(facts.items(), key=_python_first)[:3])
        _say(f"tfdoctor: node {comment_text(str(name))} is unlike the others ({comment_text(shown)}); "
             "its trials are left out of the winner\n")
    if result.undecided:
        from tfdoctor.fixes.quoting import comment_text

        # Two nodes (or a tie) that differ: neither can be called the odd one, so nothing is left out, and the
        # user is told rather than getting a winner that silently mixes two environments.
        fact, holders = min(result.undecided.items(), key=_python_first)
        shown = "; ".join(f"{value} on {', '.join(names)}" for value, names in list(holders.items())[:4])
        more = f" (and {len(result.undecided) - 1} more fact(s))" if len(result.undecided) > 1 else ""
        _say(f"tfdoctor: the nodes differ in {comment_text(fact)} ({comment_text(shown)}){more} and no majority "
             "can be formed: no node is left out, and the winner mixes their trials. Tune on nodes alike, or on "
             "three or more so the odd one is named\n")
    from tfdoctor.tune.search import SEARCH_PHASES

    own = [r for r in resumed or () if r.phase not in SEARCH_PHASES]  # confirmation and verification runs
    if not any(r.phase in SEARCH_PHASES for r in resumed or ()):
        for record in result.records:  # the file of a worker that did not write (or died before it wrote)
            log.append(record)
    records = [*result.records, *own]
    from tfdoctor.tune.shared_pool import SharedPool

    pool = SharedPool(study, objective, lambda: grace_seconds(_durations(study.get_trials(deepcopy=False)), floor),
                      frozenset(result.excluded))
    return SharedRun(records, replace(settings, budget=len(result.records), strategy="tpe"), study, worker, pool)


def resume_command(path: Any) -> str:
    """The command that continues a worker's results file: one printable line, the path quoted for the shell.
    The header keeps the outputs the tune was asked to write (--write, --html), so nothing else is needed."""
    from tfdoctor.fixes.quoting import comment_text, sh_quote

    return comment_text(f"tfdoctor tune --resume {sh_quote(str(path))}")


def storage_lost(exc: Exception, log: Any) -> UsageError:
    """A worker whose storage stayed unreachable: its results file records why it stopped and how to go on
    (a line of type "stopped", which loading skips), and the command ends with exit 2."""
    from tfdoctor.facts.redact import redact_text
    from tfdoctor.tune.results import ResultsError

    resume = resume_command(log.path)
    # The file system went with the database (append_line says so as ResultsError): the message still says it.
    with contextlib.suppress(OSError, ResultsError):
        # The reason quotes the driver's message, which may repeat a connection string: redacted, as errors are.
        log.append_line({"type": "stopped", "reason": redact_text(str(exc)), "resume": resume})
    return UsageError(f"--storage: {exc}; this worker stopped. Once the storage is back, `{resume}` continues "
                      "the study from here and finishes it")


def _python_first(item: tuple[str, Any]) -> tuple[bool, str]:
    """The trials' Python environment first among the facts a message shows: it says what the program was."""
    return (not item[0].startswith("python."), item[0])
