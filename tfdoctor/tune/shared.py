"""One tune over many nodes, through optuna's own storages: no coordinator of our own.

Every `tfdoctor tune --storage S --study NAME` process is a worker. The study (optuna) lives in S: a journal
file on a shared filesystem (optuna's JournalStorage with its file backend and lock: no server, the HPC
default) or a database URL (sqlite:///…, postgresql://…: optuna's RDBStorage). The storage gives every
`ask` a trial number once, whoever asks, so:

- the budget is the study's: trial numbers 0 … budget-1 are measured, and a worker that is handed a number
  past them stops (its trial is told failed, marked over-budget);
- the worker handed trial number `budget` exactly — one worker, whatever the timing — writes the winner:
  it waits for the others' last trials, then confirms the leaders and measures the verdict on its own node
  (tfdoctor.tune.search.Tuner, the same as a single-node tune), and writes the env script once;
- a trial whose worker died (its heartbeat silent for the grace period: tfdoctor.tune.heartbeat) is
  failed by the next worker that looks, and the writer measures its configuration again in its place;
- a configuration another trial already measures is not measured again: the worker measures the nearest
  point not yet tried instead (the trial records what it measured in its user attribute "params");
- each worker records its node's facts (redacted, as `tfdoctor collect` writes them) in the study; the
  fleet comparison (tfdoctor.fleet.compare) names a node off the majority, and its trials are left out of
  the winner.

A single-node tune (no --storage) uses none of this.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tfdoctor.tune.objective import Objective
from tfdoctor.tune.results import TrialRecord
from tfdoctor.tune.space import Space
from tfdoctor.tune.storage import DEFAULT_RETRY_SECONDS, StorageError

__all__ = ["StorageError", "open_storage", "open_study", "run_worker"]

NODE_ATTR = "node-facts:"  # study user attribute: NODE_ATTR + node name -> the node's redacted facts
PYTHON_ATTR = "node-python:"  # PYTHON_ATTR + node name -> the Python environment its trials run in (node_python)
WINNER_ATTR = "winner-written"  # study user attribute: who wrote the winner, and its verdict
POLL_SECONDS = 0.2
READER_RETRY_SECONDS = 5.0  # a report or a resume reading the study


def open_storage(spec: str, read_only: bool = False, retry_seconds: float = DEFAULT_RETRY_SECONDS,
                 on_wait: Callable[[str, float], None] | None = None) -> Any:
    """A database URL (it has ://) as optuna's RDBStorage; anything else is a journal file path. `read_only`
    (a reader, not a worker): a database's tables are never created. Every call to the storage returned is
    tried again on a transient failure for up to `retry_seconds` (tfdoctor.tune.storage); `on_wait(reason,
    seconds)` is told once per outage."""
    from tfdoctor.tune.storage import Retry, StorageLost, open_database, retrying

    retry = Retry(retry_seconds, "the study's storage", on_wait)
    if "://" in spec:
        try:
            return retrying(open_database(spec, read_only, retry), retry)
        except StorageError:
            raise
        except (StorageLost, Exception) as exc:  # a driver missing, a server unreachable: optuna raises many kinds
            from tfdoctor.facts.redact import excerpt

            # The driver's message can repeat the whole URL, password included.
            raise StorageError(f"--storage {spec.split('://')[0]}://…: cannot open the database: "
                               f"{excerpt(str(exc), 300)}") from None
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend, JournalFileOpenLock

    path = Path(spec)
    if path.is_symlink():  # optuna would append through it: a link planted on a shared file system redirects it
        raise StorageError(f"--storage {spec}: a symbolic link; name the journal file itself")
    if path.exists() and not path.is_file():
        raise StorageError(f"--storage {spec}: not a regular file")
    try:
        # The open(O_EXCL) lock works on NFS and Lustre, where a symlink lock may not.
        return retrying(JournalStorage(JournalFileBackend(str(path), lock_obj=JournalFileOpenLock(str(path)))),
                        retry)
    except OSError as exc:
        raise StorageError(f"--storage {spec}: {exc.strerror or exc}") from None


def open_study(storage: Any, name: str, maximize: bool, seed: int | None, first: Mapping[str, Any] | None) -> Any:
    """The shared study, created by the first worker (which queues `first`, the rule seed, as trial 0)."""
    import optuna

    direction = "maximize" if maximize else "minimize"
    sampler = optuna.samplers.TPESampler(seed=seed, multivariate=True, group=False)
    try:
        study = optuna.create_study(storage=storage, study_name=name, direction=direction, sampler=sampler)
    except optuna.exceptions.DuplicatedStudyError:
        study = optuna.load_study(storage=storage, study_name=name, sampler=sampler)
        if study.direction.name.lower() != direction:
            raise StorageError(f"study {name!r} is set to {study.direction.name.lower()}; "
                               f"this worker would {direction}") from None
        return study
    if first is not None:
        study.enqueue_trial(dict(first))
    return study


def record_node(study: Any, node: str, facts_json: Mapping[str, Any],
                python_env: Mapping[str, Any] | None = None) -> None:
    study.set_user_attr(NODE_ATTR + node, dict(facts_json))
    if python_env is not None:
        study.set_user_attr(PYTHON_ATTR + node, dict(python_env))


def node_comparison(study: Any) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, list[str]]]]:
    """(odd, undecided): node -> {fact: its value} for every node whose facts — its machine's, as `tfdoctor
    compare` selects them, and the Python environment its trials run in — are off the majority; and
    fact -> {value: nodes} for every fact the nodes disagree on with no majority (two nodes, or a tie): no node
    can be called the odd one there, and the caller says so."""
    from tfdoctor.facts import Facts, FactsFileError
    from tfdoctor.fleet.compare import Comparison, Node, compare_flat
    from tfdoctor.fleet.flatten import flatten
    from tfdoctor.tune.node_python import compared

    nodes = []
    attrs = study.user_attrs
    for key, data in attrs.items():
        if key.startswith(NODE_ATTR):
            try:
                nodes.append(Node(key[len(NODE_ATTR):], "study", Facts.from_json(data)))
            except FactsFileError:
                continue
    flat = {node.name: {**flatten(node.facts), **compared(attrs.get(PYTHON_ATTR + node.name))} for node in nodes}
    differences = compare_flat(flat)
    undecided = {d.fact: {repr(value): list(names) for value, names in d.holders}
                 for d in differences if not d.has_majority}
    return Comparison(nodes, [], differences).odd_nodes(), undecided


def odd_nodes(study: Any) -> dict[str, dict[str, Any]]:
    """node -> {fact: its value} for every node whose facts are off the majority (node_comparison)."""
    return node_comparison(study)[0]


@dataclass
class WorkerResult:
    """What one worker did: its trials, whether it writes the winner, and the shared records it used."""

    measured: list[int] = field(default_factory=list)  # trial numbers this worker measured
    writer: bool = False
    records: list[TrialRecord] = field(default_factory=list)  # the study's trials the winner is chosen from
    excluded: dict[str, dict[str, Any]] = field(default_factory=dict)  # odd node -> its differing facts
    undecided: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # fact -> {value: nodes}, no majority


def _key(space: Space, params: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(params.get(name) for name in space.names())


def _well_formed(space: Space, params: Any) -> bool:
    """A trial's recorded configuration as this worker's space would write it: another worker (or a hand)
    may have written anything into the shared study."""
    return isinstance(params, dict) and all(p.contains(params.get(p.name)) for p in space.parameters)


def _taken(study: Any, space: Space, number: int) -> set[tuple[Any, ...]]:
    """The configurations of the other trials, measured or being measured. Each worker records its
    configuration before it looks: of two workers that chose the same one at once, the second to look
    sees the first's (both may move; neither measures it twice)."""
    from optuna.trial import TrialState

    keys = set()
    for trial in study.get_trials(deepcopy=False):
        params = trial.user_attrs.get("params")
        if trial.number != number and _well_formed(space, params) and trial.state in (TrialState.COMPLETE,
                                                                                        TrialState.RUNNING):
            keys.add(_key(space, params))
    return keys


def _unmeasured(space: Space, taken: set[tuple[Any, ...]], near: Mapping[str, Any], rng: Any) -> dict[str, Any] | None:
    from tfdoctor.tune.search import _neighbours, _random_point

    ring = [p for p in _neighbours(space, dict(near)) if _key(space, p) not in taken]
    if ring:
        return rng.choice(ring)
    for _ in range(10_000):
        point = _random_point(space, rng)
        if _key(space, point) not in taken:
            return point
    return None


def _tell(study: Any, trial: Any, *args: Any, **kwargs: Any) -> None:
    """`study.tell`, with a trial another worker finished meanwhile raised as optuna raises any other write to a
    finished trial (UpdateFinishedTrialError), which the callers handle. Two workers started at once on SQLite
    can both pop the queued seed trial; the one that tells second is refused by a check of tell's own, which
    raises a plain ValueError ("Cannot tell a COMPLETE trial"): that ended a worker with exit 3 on a loaded
    2-CPU machine, one run in about five."""
    from optuna.exceptions import UpdateFinishedTrialError

    try:
        study.tell(trial, *args, **kwargs)
    except ValueError as error:
        if _finished(study, trial):
            raise UpdateFinishedTrialError(f"trial {trial.number} was finished by another worker: {error}") from error
        raise


def _finished(study: Any, trial: Any) -> bool:
    try:  # optuna has no public call to read one trial of a study by its id
        return bool(study._storage.get_trial(trial._trial_id).state.is_finished())
    except (AttributeError, KeyError):
        return False


def _measure(study: Any, trial: Any, space: Space, objective: Objective, params: dict[str, Any], node: str,
             worker: str, interval: float) -> Any:
    """Measure `params` in `trial` (its heartbeat beating meanwhile) and tell the study; None when another
    worker failed the trial as stale meanwhile (this node stalled): its configuration is measured again
    there, this measurement is dropped."""
    from optuna.exceptions import UpdateFinishedTrialError
    from optuna.trial import TrialState

    from tfdoctor.tune.heartbeat import Heartbeat

    try:
        for name, value in (("node", node), ("worker", worker)):
            trial.set_user_attr(name, value)
        with Heartbeat(trial, interval):
            measurement = objective.measure(space.env_changes(params), space.launcher(params))
        trial.set_user_attr("seconds", round(measurement.seconds, 3))
        if measurement.status == "ok" and measurement.value is not None:
            _tell(study, trial, measurement.value)
        else:
            from tfdoctor.facts.redact import excerpt

            trial.set_user_attr("error", excerpt(measurement.error, 500))  # every worker and reader sees it
            _tell(study, trial, state=TrialState.FAIL)
    except UpdateFinishedTrialError:
        return None
    return measurement


def _durations(trials: list[Any]) -> list[float]:
    seconds = (t.user_attrs.get("seconds") for t in trials if t.state.is_finished())
    return [float(s) for s in seconds if isinstance(s, (int, float)) and not isinstance(s, bool)]


def _reap(study: Any, watch: Any, budget: int, floor: float, worker: str,
          on_stale: Callable[[int, str, float], None] | None) -> list[Any]:
    """Fail the study's RUNNING trials (of the budget, or measuring a stale one again) whose heartbeat has
    not changed for the grace period; the study's trials, as read, back."""
    from optuna.trial import TrialState

    from tfdoctor.tune.heartbeat import REPLACES_ATTR, fail_stale, grace_seconds

    trials = study.get_trials(deepcopy=False)
    grace = grace_seconds(_durations(trials), floor)
    now = time.monotonic()
    for trial in trials:
        if trial.state != TrialState.RUNNING or not (trial.number < budget or REPLACES_ATTR in trial.user_attrs):
            continue
        silent = watch.silent_for(trial, now)
        if silent <= grace:
            continue
        owner = str(trial.user_attrs.get("worker", "?"))
        reason = (f"no heartbeat from worker {owner} for {silent:.0f} s (grace {grace:.0f} s); "
                  f"failed by {worker}, its configuration measured again")
        if fail_stale(study, trial, reason) and on_stale is not None:
            on_stale(trial.number, owner, silent)
    return trials


def _stale(trial: Any) -> bool:
    """Failed as stale by another worker, its own worker not having finished it first. fail_stale writes its
    reason, then the state (two writes: optuna takes no attribute on a finished trial): a worker that tells
    its result in between — a value, or its measurement's error — keeps its trial, the reason notwithstanding."""
    from optuna.trial import TrialState

    from tfdoctor.tune.heartbeat import STALE_ATTR

    return STALE_ATTR in trial.user_attrs and trial.state == TrialState.FAIL and "error" not in trial.user_attrs


def _orphans(trials: list[Any], budget: int, space: Space) -> list[Any]:
    """The stale trials of the budget whose configuration no live or finished trial measures again (one
    that died before it recorded a configuration has none to measure)."""
    from optuna.trial import TrialState

    from tfdoctor.tune.heartbeat import REPLACES_ATTR

    covered = {t.user_attrs.get(REPLACES_ATTR) for t in trials
               if not _stale(t) and t.state in (TrialState.RUNNING, TrialState.COMPLETE, TrialState.FAIL)}
    orphans = []
    for trial in trials:
        origin = trial.user_attrs.get(REPLACES_ATTR, trial.number)
        if (_stale(trial) and isinstance(origin, int) and origin < budget and origin not in covered
                and _well_formed(space, trial.user_attrs.get("params"))):
            orphans.append(trial)
            covered.add(origin)
    return orphans


def _set_params(study: Any, trial: Any, distributions: Mapping[str, Any], params: Mapping[str, Any]) -> None:
    """Record `params` as the trial's own (what suggest would record), so the sampler learns from what was
    measured and its search space (the intersection of the trials' parameters) stays whole."""
    for name, distribution in distributions.items():
        try:  # optuna has no public call to give a trial chosen values
            study._storage.set_trial_param(trial._trial_id, name, distribution.to_internal_repr(params[name]),
                                           distribution)
        except (KeyError, ValueError):  # a value the distribution cannot hold: the sampler does without it
            continue


def run_worker(study: Any, space: Space, objective: Objective, budget: int, node: str, worker: str,
               seed: int | None = None, on_trial: Callable[[int, dict[str, Any], Any], None] | None = None,
               wait_seconds: float = 3600.0, limit: int | None = None, finish: bool = False,
               stale_floor: float | None = None,
               on_stale: Callable[[int, str, float], None] | None = None) -> WorkerResult:
    """Measure the study's trials until its budget is handed out (or this worker has measured `limit`:
    it then leaves the rest to the others); the writer then waits for the last ones and gathers the
    records the winner is chosen from (the odd nodes' trials left out). With `finish` (a resumed worker:
    the writer died, or never came) this worker writes the winner whatever number it is handed.

    A trial whose worker died (its heartbeat silent for the grace period, tfdoctor.tune.heartbeat) is
    failed by the next worker that looks, and the writer measures its configuration again: the budget is
    kept and nobody waits for a dead node. `stale_floor`: the smallest grace period (default 60 s)."""
    import random

    from optuna.exceptions import UpdateFinishedTrialError
    from optuna.trial import TrialState

    from tfdoctor.tune.heartbeat import GRACE_FLOOR, REPLACES_ATTR, Watch, beat_interval
    from tfdoctor.tune.search import _distributions

    floor = GRACE_FLOOR if stale_floor is None else stale_floor
    interval = beat_interval(floor)
    watch = Watch()
    rng = random.Random(f"{seed}-{worker}")
    distributions = _distributions(space)
    out = WorkerResult()
    while limit is None or len(out.measured) < limit:
        _reap(study, watch, budget, floor, worker, on_stale)
        try:
            trial = study.ask(distributions)
            if trial.number >= budget:
                trial.set_user_attr("over_budget", True)
                _tell(study, trial, state=TrialState.FAIL)
                out.writer = trial.number == budget or finish
                break
            params: dict[str, Any] | None = dict(trial.params)
            trial.set_user_attr("params", params)
            for _attempt in range(100):
                taken = _taken(study, space, trial.number)
                if _key(space, params) not in taken:  # type: ignore[arg-type]
                    break
                params = _unmeasured(space, taken, params, rng)  # type: ignore[arg-type]
                if params is None:
                    break
                trial.set_user_attr("params", params)
            if params is None:  # every configuration is taken: nothing measured, nothing recorded
                trial.set_user_attr("params", None)
                _tell(study, trial, state=TrialState.FAIL)
                continue
        except UpdateFinishedTrialError:
            # Another worker popped the same queued trial (the rule seed, trial 0: optuna reads it WAITING and
            # then marks it RUNNING, and on SQLite two workers started at once can both do so) and finished it
            # first. It is measured; this worker asks for the next one (a loaded 2-CPU machine, exit 3 before;
            # `_tell` raises this too when tell's own check is the one that sees it).
            continue
        measurement = _measure(study, trial, space, objective, params, node, worker, interval)
        if measurement is None:
            continue
        out.measured.append(trial.number)
        if on_trial is not None:
            on_trial(trial.number, params, measurement)
    if not out.writer:
        return out
    deadline = time.monotonic() + wait_seconds
    while True:
        trials = _reap(study, watch, budget, floor, worker, on_stale)
        for stale in _orphans(trials, budget, space):
            # A number past the budget (this worker already holds `budget`): no other worker takes it for
            # its own, and no sampler choice: the configuration is the stale trial's.
            again = study.ask()
            params = dict(stale.user_attrs["params"])
            _set_params(study, again, distributions, params)
            for name, value in (("params", params), (REPLACES_ATTR, stale.user_attrs.get(REPLACES_ATTR, stale.number))):
                again.set_user_attr(name, value)
            measurement = _measure(study, again, space, objective, params, node, worker, interval)
            if measurement is not None:
                out.measured.append(again.number)
        trials = study.get_trials(deepcopy=False)
        if not _orphans(trials, budget, space) and not any(
                t.state == TrialState.RUNNING and (t.number < budget or REPLACES_ATTR in t.user_attrs) for t in trials):
            break
        if time.monotonic() > deadline:
            break  # a safety bound only: a dead worker's trial is failed and measured again long before
        time.sleep(POLL_SECONDS)
    out.excluded, out.undecided = node_comparison(study)
    out.records = shared_records(study, space, budget, set(out.excluded))
    return out


def shared_records(study: Any, space: Space, budget: int, excluded: set[str] = frozenset()) -> list[TrialRecord]:  # type: ignore[assignment]
    """The study's measured trials as the tuner's records: the rule seed (the trial queued for it, trial 0 but
    for a race of workers starting at once) as "rule", the others as "search"; the trials of `excluded` nodes
    left out."""
    from optuna.trial import TrialState

    from tfdoctor.tune.heartbeat import REPLACES_ATTR

    records: list[TrialRecord] = []
    replaced: set[Any] = set()
    trials = study.get_trials(deepcopy=False)
    # The rule seed is the trial the creating worker queued (optuna marks it "fixed_params"): trial 0 unless
    # another worker, started at the same instant, asked before it was queued.
    rule = next((t.number for t in trials if "fixed_params" in t.system_attrs), 0)

    def origin_of(trial: Any) -> Any:  # a stale trial measured again counts as it, in its place
        return trial.user_attrs.get(REPLACES_ATTR, trial.number)

    for trial in sorted(trials, key=lambda t: (o if isinstance(o := origin_of(t), int) else t.number, t.number)):
        params = trial.user_attrs.get("params")
        origin = origin_of(trial)
        if (not isinstance(origin, int) or origin >= budget or origin in replaced or _stale(trial)
                or not _well_formed(space, params) or trial.user_attrs.get("node") in excluded):
            continue
        if trial.state not in (TrialState.COMPLETE, TrialState.FAIL):
            continue
        replaced.add(origin)
        seconds = trial.user_attrs.get("seconds", 0.0)
        ok = trial.state == TrialState.COMPLETE
        records.append(TrialRecord(len(records), "rule" if origin == rule else "search", dict(params),
                                   "ok" if ok else "failed", trial.value if ok else None,
                                   float(seconds) if isinstance(seconds, (int, float)) else 0.0,
                                   space.env_changes(params),
                                   str(trial.user_attrs.get("error", ""))))
    return records


def header_entry(storage_spec: str, study_name: str) -> dict[str, str]:
    """What a worker's results file records of its study, so `--resume` and the report read it again: the
    journal's absolute path, or the database URL without its password (a password stays in the driver's
    own configuration, e.g. ~/.pgpass, never in a results file)."""
    if "://" in storage_spec:
        return {"study": study_name, "storage": _without_password(storage_spec)}
    return {"study": study_name, "storage": str(Path(storage_spec).resolve())}


def _without_password(url: str) -> str:
    """The URL as RDBStorage's driver layer (SQLAlchemy) parses it, its password dropped: the same parser, so a
    password holding '/' or ':' (which SQLAlchemy accepts unquoted) is found where the driver finds it."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        return url.split("://")[0] + "://…"  # not a URL the driver reads either: nothing of it is kept
    from tfdoctor.facts.redact import is_secret_name

    # A password can also ride in the query (?password=…, which the driver reads): dropped as well.
    parsed = parsed.difference_update_query([k for k in parsed.query if is_secret_name(k)])
    return parsed._replace(password=None).render_as_string(hide_password=False)  # set() skips a None


def recorded_study(header: Mapping[str, Any]) -> tuple[str, str] | None:
    """(storage, study name) of a shared tune's results file header; None for a single-node tune."""
    shared = header.get("shared")
    if isinstance(shared, Mapping) and isinstance(shared.get("storage"), str) and isinstance(shared.get("study"), str):
        return shared["storage"], shared["study"]
    return None


def load_shared(header: Mapping[str, Any], space: Space) -> tuple[list[TrialRecord], dict[str, dict[str, Any]]]:
    """The study's measured trials (the odd nodes' left out) and the odd nodes (load_shared_study)."""
    study = load_shared_study(header, space)
    return study.records, study.excluded


def load_shared_study(header: Mapping[str, Any], space: Space) -> SharedStudy:
    """The study's measured trials (the odd nodes' left out), the odd nodes and its written verdict, for the
    report and `--resume`. StorageError when the study cannot be read: a journal that is not there (never created
    here: reading must not start an empty study), a database that cannot be opened, no such study."""
    import optuna

    found = recorded_study(header)
    if found is None:
        raise StorageError("not a shared tune")
    spec, name = found
    if "://" not in spec and not Path(spec).is_file():
        raise StorageError(f"the study's journal {spec} is not there")
    if "://" in spec:
        check_database_there(spec)
    from tfdoctor.tune.results import ResultsError, recorded_budget

    try:
        budget = recorded_budget(header)
    except ResultsError as exc:
        raise StorageError(str(exc)) from None
    if budget is None:
        raise StorageError("the results file's header has no budget")
    try:
        # A reader waits briefly for a database that is restarting, not a worker's minute.
        study = optuna.load_study(storage=open_storage(spec, read_only=True, retry_seconds=READER_RETRY_SECONDS),
                                  study_name=name)
    except StorageError:
        raise
    except Exception as exc:  # no such study, a damaged journal: optuna raises many kinds
        from tfdoctor.facts.redact import excerpt

        raise StorageError(f"cannot read study {name!r}: {type(exc).__name__}: {excerpt(str(exc), 200)}") from None
    excluded = odd_nodes(study)
    summary, runs, writer = written_verdict(study)
    measured_by: dict[str, int] = {}
    for trial in study.get_trials(deepcopy=False):
        if trial.number < budget and isinstance(trial.user_attrs.get("worker"), str):
            measured_by[trial.user_attrs["worker"]] = measured_by.get(trial.user_attrs["worker"], 0) + 1
    return SharedStudy(shared_records(study, space, budget, set(excluded)), excluded, summary, runs, writer,
                       measured_by)


def check_database_there(url: str) -> None:
    """A reader, or the --resume of a worker's file, never creates a database: SQLite makes the file it is
    pointed at on connecting (an empty study, whose whole budget a resume would measure again)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        raise StorageError("the study's database URL cannot be parsed") from None
    if parsed.get_backend_name() == "sqlite" and not (parsed.database and Path(parsed.database).is_file()):
        raise StorageError(f"the study's database {parsed.database or '(in memory)'} is not there")


MAX_SHARED_RUNS = 1000  # the writer's confirmation and verification runs kept in the study (a few dozen in practice)


def mark_written(study: Any, worker: str, verdict: str, summary: Mapping[str, Any] | None = None,
                 runs: list[TrialRecord] | None = None, results: str | None = None) -> None:
    """The study remembers that its winner is written (a worker arriving later says so), and how: the verdict
    line of the writer's results file (`summary`) and the confirmation and verification runs it rests on, so
    the report of any worker's file shows the study's one conclusion."""
    written: dict[str, Any] = {"worker": worker, "verdict": verdict}
    if summary is not None:
        written["summary"] = dict(summary)
    if runs is not None:
        written["runs"] = [r.to_json() for r in runs[:MAX_SHARED_RUNS]]
    if results is not None:
        written["results"] = results
    study.set_user_attr(WINNER_ATTR, written)


@dataclass
class SharedStudy:
    """What a reader (the report, --resume) gets of a shared study."""

    records: list[TrialRecord]  # the study's measured trials, the odd nodes' left out
    excluded: dict[str, dict[str, Any]]  # odd node -> its differing facts
    summary: dict[str, Any] | None = None  # the verdict its writer wrote; None: not written yet
    runs: list[TrialRecord] = field(default_factory=list)  # the writer's confirmation and verification runs
    writer: str = ""  # the worker that wrote it
    measured_by: dict[str, int] = field(default_factory=dict)  # worker -> trials of the budget it measured


def written_verdict(study: Any) -> tuple[dict[str, Any] | None, list[TrialRecord], str]:
    """(the verdict's summary, the writer's runs, the writer) the study recorded; (None, [], "") before its
    winner is written, or for what another hand wrote there in another shape."""
    written = study.user_attrs.get(WINNER_ATTR)
    if not isinstance(written, Mapping) or not isinstance(written.get("summary"), Mapping):
        return None, [], ""
    runs = []
    listed = written.get("runs")
    for data in listed if isinstance(listed, list) else []:  # another shape (a number, a string): no runs
        try:
            record = TrialRecord.from_json(data)
        except (KeyError, TypeError, ValueError, OverflowError, AttributeError):
            continue
        if record.phase in ("confirm", "verify"):
            runs.append(record)
    return dict(written["summary"]), runs, str(written.get("worker", ""))


def study_summary(study: Any) -> dict[str, Any]:
    """Who measured what: trials per worker and node (for the output and the tests)."""
    workers: dict[str, int] = {}
    for trial in study.get_trials(deepcopy=False):
        if "worker" in trial.user_attrs:
            workers[trial.user_attrs["worker"]] = workers.get(trial.user_attrs["worker"], 0) + 1
    return {"workers": workers}


def dumps_facts(facts: Any) -> dict[str, Any]:
    """A node's facts as `tfdoctor collect` writes them (redacted)."""
    return json.loads(facts.dumps())
