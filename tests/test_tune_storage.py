"""The shared tune's storage as a worker uses it (tfdoctor.tune.storage): the driver of a database URL, the
schema-creation race of workers opening a fresh database at once, a lost connection tried again for a
bounded time, and what a worker leaves behind when it cannot start or stops. Without a server: SQLite files
and journal files; the PostgreSQL server's own cases are in tests/test_tune_postgres.py."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from support.tune_fakes import METRIC
from support.tune_setup import FAKE, INTRA, OTHERS, SPACE_TOML, THREADS, open_study_at_once

from tfdoctor.tune.storage import Retry, StorageError, StorageLost, database_url, schema_race, transient

optuna = pytest.importorskip("optuna")
sqlalchemy = pytest.importorskip("sqlalchemy")


@pytest.mark.parametrize(("url", "modules", "expected"), [
    ("postgresql://u@db/tune", {"psycopg", "psycopg2"}, "postgresql+psycopg://u@db/tune"),
    ("postgresql://u@db/tune", {"psycopg2"}, "postgresql+psycopg2://u@db/tune"),
    ("postgres://u@db/tune", {"psycopg2"}, "postgresql+psycopg2://u@db/tune"),
    ("postgresql+psycopg2://u@db/tune", set(), "postgresql+psycopg2://u@db/tune"),  # named: used as it is
    ("mysql://u@db/tune", {"pymysql"}, "mysql+pymysql://u@db/tune"),
    ("sqlite:///tune.db", set(), "sqlite:///tune.db"),  # the standard library's
])
def test_a_database_url_gets_the_driver_that_is_installed(url, modules, expected):
    assert database_url(url, installed=modules.__contains__) == expected


def test_a_database_url_without_any_driver_names_the_packages_to_install():
    with pytest.raises(StorageError) as raised:
        database_url("postgresql://u:secret@db/tune", installed=lambda module: False)
    assert str(raised.value) == ("--storage postgresql://…: no postgresql driver is installed here: "
                                 "pip install 'psycopg[binary]' or pip install 'psycopg2-binary' "
                                 "(into the Python that runs tfdoctor)")


def _operational(text: str) -> Exception:
    return sqlalchemy.exc.OperationalError("SELECT 1", {}, Exception(text))


def test_a_lost_connection_is_transient_a_refusal_for_good_is_not():
    assert transient(_operational("server closed the connection unexpectedly"))
    assert transient(_operational("connection to server at 127.0.0.1 failed: Connection refused"))
    assert transient(_operational("database is locked"))
    # optuna wraps what fails in a commit: the cause is followed
    wrapped = optuna.exceptions.StorageInternalError("commit failed")
    wrapped.__cause__ = _operational("terminating connection due to administrator command")
    assert transient(wrapped)
    assert not transient(_operational('password authentication failed for user "tune"'))
    assert not transient(_operational('database "tune" does not exist'))
    assert not transient(ValueError("connection reset"))  # not the database's error


def test_the_schema_race_losers_messages_are_recognised():
    assert schema_race(sqlalchemy.exc.IntegrityError(
        "CREATE TYPE studydirection", {}, Exception('duplicate key value violates unique constraint '
                                                    '"pg_type_typname_nsp_index"')))
    assert schema_race(sqlalchemy.exc.OperationalError(
        "CREATE TABLE trial_user_attributes", {}, Exception("table trial_user_attributes already exists")))
    assert not schema_race(_operational("no such host"))


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.waits: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


def test_a_call_is_tried_again_with_bounded_growing_waits_until_it_succeeds():
    clock, told = _Clock(), []
    failures = iter([_operational("server closed the connection unexpectedly")] * 6)

    def call():
        error = next(failures, None)
        if error is not None:
            raise error
        return "told"

    retry = Retry(60, "the study's storage", lambda reason, seconds: told.append((reason, seconds)),
                  sleep=clock.sleep, clock=lambda: clock.now)
    assert retry.call(call, transient) == "told"
    assert len(clock.waits) == 6 and all(0 < w <= 7.5 for w in clock.waits) and clock.waits[-1] > clock.waits[0]
    assert len(told) == 1 and told[0][1] == 60  # said once per outage


def test_past_the_retry_time_the_storage_is_lost_with_the_reason():
    clock = _Clock()

    def call():
        raise _operational("connection to server at 127.0.0.1 failed: Connection refused")

    retry = Retry(20, "the study's storage", sleep=clock.sleep, clock=lambda: clock.now)
    with pytest.raises(StorageLost, match=r"the study.s storage: still failing after 20 s "
                                          r"\(Exception: connection to server at 127.0.0.1 failed"):
        retry.call(call, transient)
    assert 20 <= clock.now <= 20.001


def test_a_refusal_for_good_is_not_waited_for():
    clock = _Clock()

    def call():
        raise _operational('password authentication failed for user "tune"')

    with pytest.raises(sqlalchemy.exc.OperationalError):
        Retry(60, "storage", sleep=clock.sleep, clock=lambda: clock.now).call(call, transient)
    assert clock.waits == []


def test_a_tell_that_reached_the_database_before_its_connection_dropped_counts_as_done(tmp_path):
    """The retried tell finds its trial finished with the state it was told: done, not an error."""
    from optuna.trial import TrialState

    from tfdoctor.tune.shared import open_storage

    storage = open_storage(f"sqlite:///{tmp_path / 'tune.db'}")
    study = optuna.create_study(storage=storage, study_name="s")
    trial = study.ask()
    inner = storage._inner
    real = inner.set_trial_state_values
    calls = []

    def dropped_after_commit(trial_id, state, values=None):
        calls.append(state)
        result = real(trial_id, state, values)
        if len(calls) == 1:
            raise _operational("server closed the connection unexpectedly")
        return result

    inner.set_trial_state_values = dropped_after_commit
    study.tell(trial, 3.0)
    assert len(calls) == 2 and study.trials[0].state == TrialState.COMPLETE and study.trials[0].value == 3.0


@pytest.mark.parametrize("kind", ["sqlite", "journal"])
def test_workers_opening_a_fresh_storage_at_the_same_instant_all_open_one_study(tmp_path, kind):
    """Eight threads open the same fresh storage and its study at once (optuna's own RDBStorage loses some
    of them to `table … already exists` / `database is locked`): every one opens, one study, one rule seed."""
    spec = f"sqlite:///{tmp_path / 'tune.db'}" if kind == "sqlite" else str(tmp_path / "tune.journal")
    studies, errors = open_study_at_once(spec)
    assert errors == [] and len(studies) == 8
    study = studies[0]
    assert [s.study_name for s in optuna.get_all_study_summaries(study._storage)] == ["t"]
    waiting = [t for t in study.get_trials() if t.state == optuna.trial.TrialState.WAITING]
    assert [t.params for t in waiting] == [{}] or len(waiting) == 1  # the rule seed queued once


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in (*THREADS, *OTHERS)}
    env.update(FAKE_JOB_STATE=str(tmp_path / "runs"), FAKE_JOB_SEED="1", FAKE_JOB_DEPENDS=INTRA,
               PYTHONPATH=str(REPO))
    return env


def _tune(tmp_path: Path, *options: str, timeout: float = 300) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "tfdoctor", "tune", *options]
    if "--resume" not in options:
        argv += ["--space", "space.toml", "--metric", METRIC, "--", sys.executable, str(FAKE)]
    return subprocess.run(argv, cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True, timeout=timeout)


def test_a_worker_that_could_not_start_leaves_nothing_that_stops_the_same_command(tmp_path):
    """The storage refuses (a folder where the journal should be): exit 2, and no header-only results file
    that would make the very same command, run again once the storage is fixed, refuse to start."""
    (tmp_path / "space.toml").write_text(SPACE_TOML)
    (tmp_path / "study.journal").mkdir()
    command = ("--storage", "study.journal", "--study", "t", "--budget", "3", "--results", "w.jsonl")
    failed = _tune(tmp_path, *command)
    assert failed.returncode == 2 and "study.journal: not a regular file" in failed.stderr, failed.stderr
    assert not (tmp_path / "w.jsonl").exists()
    (tmp_path / "study.journal").rmdir()
    again = _tune(tmp_path, *command)
    assert again.returncode == 0, again.stderr
    assert "exists" not in again.stderr


def _locked(database: Path):
    """Another process's exclusive transaction on the SQLite file: every other connection gets "database is
    locked" (a storage lost, as a worker sees it)."""
    import sqlite3

    holder = sqlite3.connect(database, timeout=0.1)
    holder.execute("BEGIN EXCLUSIVE")
    return holder


def test_a_worker_whose_storage_is_lost_at_its_start_stops_with_exit_2_and_leaves_no_file(tmp_path):
    (tmp_path / "space.toml").write_text(SPACE_TOML)
    from tfdoctor.tune.shared import open_storage

    database = tmp_path / "tune.db"
    open_storage(f"sqlite:///{database}")
    holder = _locked(database)
    try:
        done = _tune(tmp_path, "--storage", f"sqlite:///{database}", "--study", "t", "--budget", "3",
                     "--results", "w.jsonl", "--storage-retry", "2")
    finally:
        holder.close()
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    assert "trying again for up to 2 s (--storage-retry)" in done.stderr
    assert "still failing after 2 s (OperationalError: database is locked)" in done.stderr
    assert not (tmp_path / "w.jsonl").exists()


def test_a_worker_whose_storage_is_lost_mid_tune_stops_with_exit_2_and_its_file_says_how_to_resume(tmp_path):
    """The database stays locked past --storage-retry while a trial runs: the tell cannot be written, the worker
    stops with exit 2 (never an internal error), and its results file's last line is the command to resume."""
    import time

    (tmp_path / "space.toml").write_text(SPACE_TOML)
    database = tmp_path / "tune.db"
    argv = [sys.executable, "-m", "tfdoctor", "tune", "--storage", f"sqlite:///{database}", "--study", "t",
            "--budget", "4", "--results", "w.jsonl", "--storage-retry", "3", "--space", "space.toml",
            "--metric", METRIC, "--", sys.executable, str(FAKE)]
    worker = subprocess.Popen(argv, cwd=tmp_path, env={**_env(tmp_path), "FAKE_JOB_SECONDS": "3"},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (tmp_path / "runs").exists():  # its first trial runs: the study is open
        assert worker.poll() is None and time.monotonic() < deadline, worker.communicate()
        time.sleep(0.05)
    holder = _locked(database)
    try:
        _out, err = worker.communicate(timeout=120)
    finally:
        holder.close()
    assert worker.returncode == 2, err
    assert "Traceback" not in err and "internal error" not in err
    assert "still failing after 3 s (OperationalError: database is locked)" in err
    assert "`tfdoctor tune --resume 'w.jsonl'` continues the study" in err
    last = json.loads((tmp_path / "w.jsonl").read_text().splitlines()[-1])
    assert last["type"] == "stopped" and last["resume"] == "tfdoctor tune --resume 'w.jsonl'"
    assert "still failing after 3 s" in last["reason"]


@pytest.mark.parametrize(("pattern", "expected"), [("tune-%N.jsonl", "tune-node7.jsonl"),
                                                   ("tune-%h-%j.jsonl", "tune-node7.cluster.example-4242.jsonl"),
                                                   ("100%%.jsonl", "100%.jsonl")])
def test_results_expands_the_patterns_of_collect_o(tmp_path, monkeypatch, pattern, expected):
    from tfdoctor.tune import cli

    monkeypatch.setattr(cli.socket, "gethostname", lambda: "node7.cluster.example")
    monkeypatch.delenv("SLURMD_NODENAME", raising=False)
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    assert cli._results_name(pattern) == expected


def test_results_with_an_unknown_pattern_is_a_usage_error(tmp_path):
    (tmp_path / "space.toml").write_text(SPACE_TOML)
    done = _tune(tmp_path, "--budget", "2", "--results", "tune-%q.jsonl")
    assert done.returncode == 2 and "--results: unknown pattern %q" in done.stderr, done.stderr
    assert list(tmp_path.glob("tune-*")) == []


def test_the_header_keeps_the_outputs_and_resume_writes_them(tmp_path):
    """A tune killed before its verdict is resumed with the bare command it printed: the env script and the
    plots are written where the first command said (absolute paths, so from another folder too)."""
    from tfdoctor.tune.results import load_results

    (tmp_path / "space.toml").write_text(SPACE_TOML)
    first = _tune(tmp_path, "--budget", "3", "--results", "r.jsonl", "--write", "env.sh", "--html", "plots.html",
                  "--repeats", "1", "--leaders", "1")
    assert first.returncode == 0, first.stderr
    header, _records = load_results(tmp_path / "r.jsonl")
    assert header["outputs"] == {"write": str(tmp_path / "env.sh"), "html": str(tmp_path / "plots.html"),
                                 "force": False}
    # the same tune as if killed after its search: the header and the search trials, no summary
    lines = (tmp_path / "r.jsonl").read_text().splitlines()
    kept = [line for line in lines if json.loads(line)["type"] == "header"
            or json.loads(line).get("phase") in ("current", "rule", "search", "screen")]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "r.jsonl").write_text("\n".join(kept) + "\n")
    (tmp_path / "env.sh").unlink()
    (tmp_path / "plots.html").unlink()
    resumed = subprocess.run([sys.executable, "-m", "tfdoctor", "tune", "--resume", "r.jsonl"], cwd=elsewhere,
                             env=_env(tmp_path), capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert "export TF_NUM_INTRAOP_THREADS" in (tmp_path / "env.sh").read_text()
    assert (tmp_path / "plots.html").read_text().startswith("<!doctype html>")
    assert not (elsewhere / "env.sh").exists()


def test_resume_refuses_a_recorded_output_that_exists_unless_forced(tmp_path):
    from tfdoctor.tune.cli import recorded_outputs

    header = {"outputs": {"write": "/shared/env.sh", "html": None, "force": False}}
    assert recorded_outputs(header, None, None, False) == ("/shared/env.sh", None, False)
    assert recorded_outputs(header, "mine.sh", None, False) == ("mine.sh", None, False)  # given now: it wins
    assert recorded_outputs({"outputs": {"write": "/e.sh", "force": True}}, None, None, False) == ("/e.sh", None, True)
    assert recorded_outputs({}, None, None, False) == (None, None, False)  # a file from before
    (tmp_path / "space.toml").write_text(SPACE_TOML)
    lines = [json.dumps({"type": "header", "format": "tfdoctor-tune-results/1", "outputs": {
        "write": str(tmp_path / "env.sh"), "html": None, "force": False}})]
    (tmp_path / "env.sh").write_text("# last week's\n")
    first = _tune(tmp_path, "--budget", "2", "--results", "r.jsonl", "--repeats", "1", "--leaders", "1",
                  "--write", "new.sh")
    assert first.returncode == 0, first.stderr
    header = json.loads((tmp_path / "r.jsonl").read_text().splitlines()[0])
    header["outputs"] = json.loads(lines[0])["outputs"]
    search = [line for line in (tmp_path / "r.jsonl").read_text().splitlines()[1:]
              if json.loads(line).get("phase") in ("current", "rule", "search", "screen")]
    (tmp_path / "r.jsonl").write_text("\n".join([json.dumps(header), *search]) + "\n")
    resumed = _tune(tmp_path, "--resume", "r.jsonl")
    assert resumed.returncode == 2 and f"{tmp_path / 'env.sh'} exists; add --force" in resumed.stderr
    assert (tmp_path / "env.sh").read_text() == "# last week's\n"


@pytest.mark.parametrize("missing", ["plotly", "optuna"])
def test_a_tune_report_without_its_optional_dependencies_is_a_usage_error_naming_the_install(tmp_path, missing):
    """optuna's plots import plotly only when they draw: without it the report was an internal error (exit 3)."""
    (tmp_path / "space.toml").write_text(SPACE_TOML)
    assert _tune(tmp_path, "--budget", "2", "--results", "r.jsonl", "--repeats", "1", "--leaders", "1").returncode == 0
    code = (f"import sys; sys.modules[{missing!r}] = None; from tfdoctor.console import main; "
            "sys.argv = ['tfdoctor', 'report', '--tune', 'r.jsonl', '-o', 'page.html']; main()")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=_env(tmp_path), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    from tfdoctor.installed import install_extra_command

    # The command that installs the extra from where this tfdoctor came from (the checkout, for a clone).
    assert done.stderr == (f"tfdoctor: error: this report section needs {missing}: "
                           f"{install_extra_command('report')}\n")
    assert not (tmp_path / "page.html").exists()


def test_a_finished_shared_tune_names_its_studys_budget_not_this_files_trials(tmp_path):
    """The resume of a finished shared tune's file: the budget is the study's (12 here, of which this writer's
    file holds 9 once an odd node's trials were left out), so "give --budget above 9" was wrong."""
    (tmp_path / "space.toml").write_text(SPACE_TOML)
    first = _tune(tmp_path, "--budget", "3", "--results", "r.jsonl", "--repeats", "1", "--leaders", "1")
    assert first.returncode == 0, first.stderr
    lines = (tmp_path / "r.jsonl").read_text().splitlines()
    header = json.loads(lines[0])
    header.update(budget=12, shared={"study": "s", "storage": str(tmp_path / "gone.journal")})
    (tmp_path / "r.jsonl").write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    more = _tune(tmp_path, "--resume", "r.jsonl", "--budget", "20")
    assert more.returncode == 2
    assert ("r.jsonl is a finished shared tune (study 's', budget 12): to search more, start a new study with a "
            "higher --budget (another --study NAME)") in more.stderr
    again = _tune(tmp_path, "--resume", "r.jsonl")
    assert again.returncode == 0, again.stderr
    assert ("tfdoctor: r.jsonl is a finished shared tune (study 's', budget 12); nothing new was run. To search "
            "more, start a new study (another --study NAME) with a higher --budget.") in again.stderr
    assert "give --budget above" not in again.stderr


def test_the_rule_seed_is_the_queued_trial_when_another_worker_asked_first(tmp_path):
    """Workers started at once: one asks (trial 0, the sampler's choice) before the creator queued the rule
    seed (trial 1). The rule seed's record is the queued trial's, not trial 0's."""
    from support.tune_fakes import FakeJob
    from support.tune_setup import TWO_CPUS, thread_space

    from tfdoctor.tune.search import _distributions
    from tfdoctor.tune.shared import open_storage, open_study, run_worker
    from tfdoctor.tune.space import rule_based_settings

    space = thread_space()
    rule = rule_based_settings(TWO_CPUS, space)
    study = open_study(open_storage(str(tmp_path / "s.journal")), "r", True, 1, None)
    early = study.ask(_distributions(space))  # the other worker, before the creator queued the seed
    study.enqueue_trial(dict(rule))
    early_params = dict(early.params)
    early.set_user_attr("params", early_params)
    early.set_user_attr("worker", "b:1")
    study.tell(early, 100.0)
    final = run_worker(study, space, FakeJob(INTRA, seed=1), 5, "a", "a:1", seed=2)
    assert final.writer
    rules = [r for r in final.records if r.phase == "rule"]
    assert len(rules) == 1 and rules[0].params == rule
    assert next(r for r in final.records if r.params == early_params).phase == "search" or early_params == rule


def test_the_header_only_file_of_a_worker_killed_at_its_start_does_not_stop_the_same_command(tmp_path):
    """A worker killed before it got past its start (its node lost) leaves a header-only file: the same
    command replaces it when that worker's process is gone (same host), or when the file is older than any
    start takes (another host); a worker that may still be starting keeps its file."""
    import socket
    import time

    (tmp_path / "space.toml").write_text(SPACE_TOML)
    command = ("--storage", "study.journal", "--study", "t", "--budget", "2", "--results", "w.jsonl",
               "--repeats", "1", "--leaders", "1")
    first = _tune(tmp_path, *command)
    assert first.returncode == 0, first.stderr
    lines = (tmp_path / "w.jsonl").read_text().splitlines()
    assert json.loads(lines[1])["type"] == "started"
    header = json.loads(lines[0])
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    host = header["shared"]["worker"].rpartition(":")[0]
    assert host == socket.gethostname()

    def planted(worker: str, age: float = 0.0) -> None:
        (tmp_path / "study.journal").unlink(missing_ok=True)
        (tmp_path / "w.jsonl").write_text(json.dumps({**header, "shared": {**header["shared"], "worker": worker}})
                                          + "\n")
        if age:
            then = time.time() - age
            os.utime(tmp_path / "w.jsonl", (then, then))

    planted(f"{host}:{dead.stdout.strip()}")  # its process gone
    again = _tune(tmp_path, *command)
    assert again.returncode == 0, again.stderr
    assert "tfdoctor: w.jsonl held only the header of a worker that never started; replaced" in again.stderr
    planted(f"{host}:{os.getpid()}")  # alive: a worker at its start now
    alive = _tune(tmp_path, *command)
    assert alive.returncode == 2 and "w.jsonl exists: continue it with --resume" in alive.stderr
    planted("node7:4242")  # another host, a fresh file: it may still be starting
    assert _tune(tmp_path, *command).returncode == 2
    planted("node7:4242", age=600)  # another host, older than any start
    assert _tune(tmp_path, *command).returncode == 0
    other = {**header, "shared": {**header["shared"], "study": "another", "worker": "node7:1"}}
    (tmp_path / "w.jsonl").write_text(json.dumps(other) + "\n")
    os.utime(tmp_path / "w.jsonl", (time.time() - 600, time.time() - 600))
    assert _tune(tmp_path, *command).returncode == 2  # another study's file: never replaced


@pytest.mark.parametrize(("error", "expected"), [
    (OSError(errno.ESTALE, "Stale file handle"), True),  # NFS after a server failover
    (OSError(errno.ENOLCK, "No locks available"), True),  # the lock manager away
    (OSError(errno.EIO, "Input/output error"), True),  # a soft mount's timeout
    (TimeoutError("timed out"), True),
    (OSError(errno.ENOSPC, "No space left on device"), False),
    (PermissionError(errno.EACCES, "Permission denied"), False),
    (OSError(errno.EROFS, "Read-only file system"), False),
    (FileNotFoundError(errno.ENOENT, "No such file or directory"), False),
    (ValueError("invalid journal line"), False),
])
def test_a_journal_files_blip_is_transient_an_answer_for_good_is_not(error, expected):
    assert transient(error) is expected


def test_a_journal_whose_file_system_blips_mid_tune_loses_no_call(tmp_path):
    """optuna's journal file backend on a file system that answers ESTALE to two opens, then recovers: the
    storage's calls go on through the retry (waits, no sleep here) and the study holds what was written."""
    from tfdoctor.tune.shared import open_storage

    storage = open_storage(str(tmp_path / "tune.journal"), retry_seconds=60)
    study = optuna.create_study(storage=storage, study_name="s")
    backend_ = storage._inner._backend
    real_append, blips = backend_.append_logs, iter([OSError(errno.ESTALE, "Stale file handle")] * 2)

    def flaky_append(logs):
        blip = next(blips, None)
        if blip is not None:
            raise blip
        return real_append(logs)

    backend_.append_logs = flaky_append
    storage._retry.sleep = lambda seconds: None
    study.enqueue_trial({"x": 1})
    trials = optuna.load_study(study_name="s", storage=storage).get_trials()
    assert [t.system_attrs.get("fixed_params") for t in trials] == [{"x": 1}]
    assert next(blips, None) is None  # both blips were met and ridden out


def test_a_journal_on_a_full_file_system_is_not_waited_for(tmp_path):
    from tfdoctor.tune.shared import open_storage

    storage = open_storage(str(tmp_path / "tune.journal"), retry_seconds=60)
    waits = []
    storage._retry.sleep = waits.append

    def full(logs):
        raise OSError(errno.ENOSPC, "No space left on device")

    storage._inner._backend.append_logs = full
    with pytest.raises(OSError, match="No space left"):
        optuna.create_study(storage=storage, study_name="s")
    assert waits == []
