"""One tune over several workers through optuna's storage (tfdoctor.tune.shared): the budget is the study's,
no configuration is measured twice, every worker contributes, one worker writes the winner, and a node
whose facts are off the majority is named and its trials left out."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import REPO
from support.report_pages import visible_words
from support.tune_fakes import METRIC, FakeJob
from support.tune_setup import FAKE, INTRA, OTHERS, SPACE_TOML, THREADS, TWO_CPUS, thread_space

from tfdoctor.facts import Facts
from tfdoctor.tune.results import load_results, load_summary
from tfdoctor.tune.space import rule_based_settings

optuna = pytest.importorskip("optuna")



def _env(tmp_path: Path, index: int, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in (*THREADS, *OTHERS)}
    env.update(FAKE_JOB_STATE=str(tmp_path / f"runs-{index}"), FAKE_JOB_SEED=str(index), FAKE_JOB_DEPENDS=INTRA,
               PYTHONPATH=str(REPO), **extra)
    return env


def _worker(tmp_path: Path, index: int, budget: int, *options: str, **extra: str) -> subprocess.Popen:
    argv = [sys.executable, "-m", "tfdoctor", "tune", "--storage", "study.journal", "--study", "t", "--budget",
            str(budget), "--space", "space.toml", "--seed", str(index), "--results", f"r{index}.jsonl",
            "--write", "env.sh", "--metric", METRIC, *options, "--", sys.executable, str(FAKE)]
    return subprocess.Popen(argv, cwd=tmp_path, env=_env(tmp_path, index, **extra), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def _study(tmp_path: Path, name: str = "t"):
    journal = optuna.storages.journal.JournalFileBackend(str(tmp_path / "study.journal"))
    return optuna.load_study(storage=optuna.storages.JournalStorage(journal), study_name=name)


def test_two_workers_share_one_journal_file_study(tmp_path):
    (tmp_path / "space.toml").write_text(SPACE_TOML)
    (tmp_path / "barrier").mkdir()
    budget = 16
    # Each worker's first trial waits until both have started one: both contribute, however the loaded
    # machine schedules the two processes.
    workers = [_worker(tmp_path, i, budget, FAKE_JOB_BARRIER=f"{tmp_path / 'barrier'}:2") for i in (1, 2)]
    outputs = [w.communicate(timeout=600) for w in workers]
    assert [w.returncode for w in workers] == [0, 0], outputs
    study = _study(tmp_path)
    trials = study.get_trials()
    measured = [t for t in trials if "worker" in t.user_attrs]
    assert len(measured) == budget  # the budget is the study's, not each worker's
    assert sorted(t.number for t in measured) == list(range(budget))
    keys = [json.dumps(t.user_attrs["params"], sort_keys=True) for t in measured]
    assert len(set(keys)) == budget  # no configuration measured twice
    assert len({t.user_attrs["worker"] for t in measured}) == 2  # both contributed
    assert sum(1 for t in trials if t.user_attrs.get("over_budget")) == 2  # each stopped at the budget
    # the winner written once: by the worker handed trial budget + 1, whose results file has the summary
    writers = [i for i in (1, 2) if load_summary(tmp_path / f"r{i}.jsonl") is not None]
    assert len(writers) == 1, outputs
    assert sum("writes the winner; this one is done" in err for _out, err in outputs) == 1
    other_err = outputs[(3 - writers[0]) - 1][1]  # the worker that did not write says how to finish without it
    assert f"(should that worker die, `tfdoctor tune --resume 'r{3 - writers[0]}.jsonl'` finishes the tune)" \
        in other_err
    shares = [re.search(r"tfdoctor: \S+:\d+ measured (\d+) of the study's 16 trials \(\d worker\(s\) in all\)", err)
              for _out, err in outputs]
    assert all(shares) and sum(int(m.group(1)) for m in shares) == budget  # the lines docs/tune.md shows
    _header, records = load_results(tmp_path / f"r{writers[0]}.jsonl")
    assert sum(1 for r in records if r.phase in ("rule", "search")) == budget
    assert "export TF_NUM_INTRAOP_THREADS" in (tmp_path / "env.sh").read_text()
    assert study.user_attrs["winner-written"]["verdict"] == "apply"
    # The report reads the study: one study, one conclusion. The other worker's file holds no trial of its own,
    # yet its section shows every worker's trials, the study's verdict and the runs it rests on, as the
    # writer's does; what the file's own worker measured is a detail of its first line.
    from tfdoctor.report.html.build import _tune

    other = 3 - writers[0]
    assert [r.phase for r in load_results(tmp_path / f"r{other}.jsonl")[1]] == []
    writer_records = len(load_results(tmp_path / f"r{writers[0]}.jsonl")[1])
    sections = {i: visible_words(_tune(str(tmp_path / f"r{i}.jsonl")).body) for i in (1, 2)}
    measured = {int(m.group(1)) for m in shares}
    for i, shown in sections.items():
        assert re.search(rf"r{i}\.jsonl with study 't' \({budget} trials of every worker; this file's worker "
                         rf"\S+:\d+ measured ({'|'.join(map(str, measured))}) of them\); the study's verdict, "
                         rf"written by worker \S+:\d+: {writer_records} trials recorded", shown), shown[:400]
        assert "Verdict: change TF_NUM_INTRAOP_THREADS=" in shown
    verdicts = [re.search(r"Verdict: [^.]*\.", shown).group(0) for shown in sections.values()]
    assert verdicts[0] == verdicts[1]


def test_the_writer_killed_mid_tune_is_finished_by_resume_with_the_budget_kept(tmp_path):
    """The worker that writes the winner dies during its confirmation runs: the study keeps its trials, and
    `tfdoctor tune --resume ITS-FILE` (any node) measures no search trial again and writes the winner once."""
    (tmp_path / "space.toml").write_text(SPACE_TOML)
    budget = 8
    # run `budget` (0-based) of the single worker is its first confirmation run: it hangs there
    writer = _worker(tmp_path, 1, budget, FAKE_JOB_HANG_AT=str(budget))
    try:
        deadline = time.monotonic() + 300
        while not (tmp_path / "runs-1.hung").exists():
            assert writer.poll() is None and time.monotonic() < deadline, writer.communicate()
            time.sleep(0.1)
    finally:
        os.killpg(writer.pid, signal.SIGKILL)  # the worker and its trial: a node lost mid-tune
        writer.communicate()
    assert load_summary(tmp_path / "r1.jsonl") is None and not (tmp_path / "env.sh").exists()
    study = _study(tmp_path)
    assert "winner-written" not in study.user_attrs
    searched = sorted(t.number for t in study.get_trials() if "worker" in t.user_attrs)
    assert searched == list(range(budget))
    done = subprocess.run([sys.executable, "-m", "tfdoctor", "tune", "--resume", "r1.jsonl", "--write", "env.sh"],
                          cwd=tmp_path, env=_env(tmp_path, 1), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "export TF_NUM_INTRAOP_THREADS" in (tmp_path / "env.sh").read_text()
    study = _study(tmp_path)
    assert sorted(t.number for t in study.get_trials() if "worker" in t.user_attrs) == searched  # budget kept
    assert study.user_attrs["winner-written"]["verdict"] == "apply"
    _header, records = load_results(tmp_path / "r1.jsonl")
    assert sum(1 for r in records if r.phase in ("rule", "search")) == budget  # not appended twice
    assert load_summary(tmp_path / "r1.jsonl")["verdict"] == "apply"


def test_a_report_of_a_shared_tune_whose_journal_is_gone_says_so(tmp_path):
    from tfdoctor.report.html.build import _tune
    from tfdoctor.tune.results import ResultsLog
    from tfdoctor.tune.shared import header_entry

    space = thread_space()
    header = {"space": space.to_json(), "seeds": {}, "maximize": True, "budget": 8,
              "shared": header_entry(str(tmp_path / "gone.journal"), "t")}
    ResultsLog.create(tmp_path / "r.jsonl", header)
    shown = visible_words(_tune(str(tmp_path / "r.jsonl")).body)
    assert (f"its shared study could not be read: the study's journal {tmp_path / 'gone.journal'} is not there; "
            "this file's trials only") in shown
    assert not (tmp_path / "gone.journal").exists()  # reading never creates a journal


def _planted_report(tmp_path, storage):
    from tfdoctor.report.html.build import _tune
    from tfdoctor.tune.results import ResultsLog

    header = {"space": thread_space().to_json(), "seeds": {}, "maximize": True, "budget": 8,
              "shared": {"study": "t", "storage": storage}}
    ResultsLog.create(tmp_path / "r.jsonl", header)
    return visible_words(_tune(str(tmp_path / "r.jsonl")).body)


def test_a_report_never_creates_the_database_a_results_file_names(tmp_path):
    """SQLite makes the file it is pointed at, and RDBStorage its tables: a reader must do neither."""
    shown = _planted_report(tmp_path, f"sqlite:///{tmp_path / 'planted.db'}")
    assert (f"its shared study could not be read: the study's database {tmp_path / 'planted.db'} is not there; "
            "this file's trials only") in shown
    assert not (tmp_path / "planted.db").exists()


def test_a_report_opens_no_storage_named_by_another_users_results_file(tmp_path, monkeypatch):
    """The report is drawn from other people's files: their header must not make it connect to a database
    (or write one) of their choosing."""
    import sqlite3

    sqlite3.connect(tmp_path / "app.db").close()  # an existing database of the user's, not optuna's
    before = (tmp_path / "app.db").read_bytes()
    monkeypatch.setattr(os, "getuid", lambda: os.stat(tmp_path).st_uid + 4242)
    shown = _planted_report(tmp_path, f"sqlite:///{tmp_path / 'app.db'}")
    assert ("the shared study it names is opened only from a results file of your own; this file's trials only"
            in shown)
    assert (tmp_path / "app.db").read_bytes() == before  # no optuna tables added


def test_the_results_file_keeps_no_database_password_and_a_journal_path_absolute(tmp_path, monkeypatch):
    from tfdoctor.tune.shared import header_entry

    assert header_entry("postgresql://tuner:hunter2@db.example:5432/tune", "s") == {
        "study": "s", "storage": "postgresql://tuner@db.example:5432/tune"}
    monkeypatch.chdir(tmp_path)
    assert header_entry("study.journal", "s") == {"study": "s", "storage": str(tmp_path / "study.journal")}


@pytest.mark.parametrize(("url", "kept"), [
    # SQLAlchemy (the driver's parser) takes an unquoted '/' or ':' as part of the password.
    ("postgresql://tuner:pa/ss@db:5432/tune", "postgresql://tuner@db:5432/tune"),
    ("mysql+pymysql://tuner:a:b@db/tune", "mysql+pymysql://tuner@db/tune"),
    ("postgresql://db/tune?sslmode=require&password=pa/ss", "postgresql://db/tune?sslmode=require"),
    ("not a url://", "not a url://…"),
])
def test_no_password_the_driver_would_read_reaches_the_results_file(url, kept):
    from tfdoctor.tune.shared import header_entry

    assert header_entry(url, "s") == {"study": "s", "storage": kept}


@pytest.mark.parametrize(("host", "expected"), [
    ("node07", "tfdoctor-tune-20260102-030405-node07-42.jsonl"),
    ("n%Y%H%%x", "tfdoctor-tune-20260102-030405-n_Y_H__x-42.jsonl"),  # no strftime pattern in a host name
    ("../etc/passwd", "tfdoctor-tune-20260102-030405-_etc_passwd-42.jsonl"),  # nor a folder
])
def test_a_workers_default_results_name_holds_its_host_as_data(host, expected):
    from tfdoctor.tune.results import default_results_name

    when = time.strptime("2026-01-02 03:04:05", "%Y-%m-%d %H:%M:%S")
    assert default_results_name(when, (host, 42)) == expected
    assert default_results_name(when) == "tfdoctor-tune-20260102-030405.jsonl"


def _facts(processors: int) -> dict:
    facts = Facts({"cpu": {"cpuinfo": {"processors": processors, "model_name": "Test CPU"}}}, {"hostname": "x"})
    return json.loads(facts.dumps())


def test_a_node_unlike_the_others_is_named_and_its_trials_left_out(tmp_path):
    from tfdoctor.tune.shared import open_storage, open_study, record_node, run_worker

    space = thread_space(drop=OTHERS)
    study = open_study(open_storage(str(tmp_path / "s.journal")), "odd", True, 1, rule_based_settings(TWO_CPUS, space))
    # three nodes alike, one planted with other facts (fewer CPUs): each measures a share of the trials
    for name, cpus in (("n1", 64), ("n2", 64), ("n3", 64), ("odd", 32)):
        record_node(study, name, _facts(cpus))
    budget = 12
    # one after the other: the odd node and n1 leave after 4 trials each, n2 measures the rest
    for name in ("odd", "n1"):
        left = run_worker(study, space, FakeJob(INTRA, seed=len(name)), budget, name, name + ":1", seed=3, limit=4)
        assert len(left.measured) == 4 and not left.writer
    final = run_worker(study, space, FakeJob(INTRA, seed=5), budget, "n2", "n2:1", seed=3)
    assert final.writer and len(final.measured) == 4
    assert final.excluded == {"odd": {"cpu.cpuinfo.processors": 32}}
    odd_trials = {t.number for t in study.get_trials() if t.user_attrs.get("node") == "odd"}
    assert odd_trials == {0, 1, 2, 3}
    assert len(final.records) == budget - 4
    chosen = {json.dumps(r.params, sort_keys=True) for r in final.records}
    odd_params = {json.dumps(t.user_attrs["params"], sort_keys=True) for t in study.get_trials()
                  if t.user_attrs.get("node") == "odd"}
    assert not chosen & odd_params
    assert [r.phase for r in final.records] == ["search"] * (budget - 4)  # trial 0 (the rule seed) was odd's


@pytest.mark.parametrize(("extra", "message"), [
    (["--storage", "study.journal", "--time", "60"], "give --budget, not --time"),
    (["--storage", ".", "--budget", "4"], "--storage .: not a regular file"),
    (["--storage", "study.journal", "--budget", "4", "--resume", "r.jsonl"], "without --resume"),
    (["--budget", "4", "--stale-after", "5"], "--stale-after applies to a tune shared through --storage"),
])
def test_a_storage_that_cannot_be_used_is_a_usage_error(tmp_path, extra, message):
    (tmp_path / "space.toml").write_text(SPACE_TOML)
    (tmp_path / "r.jsonl").write_text("")
    done = subprocess.run([sys.executable, "-m", "tfdoctor", "tune", *extra, *(
        [] if "--resume" in extra else ["--space", "space.toml", "--metric", METRIC, "--", sys.executable, str(FAKE)])],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr


def test_a_database_url_is_optunas_rdb_storage(tmp_path):
    """`--storage sqlite:///…`: the same study through optuna's RDBStorage (SQLAlchemy)."""
    pytest.importorskip("sqlalchemy")
    from tfdoctor.tune.shared import open_storage, open_study, record_node, run_worker

    space = thread_space()
    from tfdoctor.tune.storage import backend

    storage = open_storage(f"sqlite:///{tmp_path / 'tune.db'}")
    assert isinstance(backend(storage), optuna.storages.RDBStorage)
    study = open_study(storage, "db", True, 2, rule_based_settings(TWO_CPUS, space))
    again = open_study(open_storage(f"sqlite:///{tmp_path / 'tune.db'}"), "db", True, 3, None)  # a second worker
    for name in ("a", "b"):
        record_node(study, name, _facts(8))
    first = run_worker(study, space, FakeJob(INTRA, seed=1), 8, "a", "a:1", seed=1, limit=5)
    second = run_worker(again, space, FakeJob(INTRA, seed=2), 8, "b", "b:1", seed=2)
    assert (len(first.measured), len(second.measured)) == (5, 3) and second.writer and not first.writer
    assert second.excluded == {} and len(second.records) == 8
    assert second.records[0].phase == "rule" and second.records[0].params == rule_based_settings(TWO_CPUS, space)
    with pytest.raises(Exception, match="maximize"):
        open_study(storage, "db", False, 2, None)  # a worker that would minimize the same study


def test_the_writer_names_the_odd_node_in_the_words_docs_tune_shows(tmp_path, capsys):
    from tfdoctor.tune.results import ResultsLog
    from tfdoctor.tune.search import TuneSettings
    from tfdoctor.tune.shared import open_storage, open_study, record_node, run_worker
    from tfdoctor.tune.shared_cli import shared_tune

    space = thread_space()
    seeds = {"rule": rule_based_settings(TWO_CPUS, space)}
    journal = str(tmp_path / "s.journal")
    study = open_study(open_storage(journal), "w", True, 1, seeds["rule"])
    for name, processors in (("n1", 64), ("n3", 64), ("node07", 32)):
        record_node(study, name, _facts(processors))
    run_worker(study, space, FakeJob(INTRA, seed=1), 8, "node07", "node07:1", seed=1, limit=3)
    facts = Facts.from_json({**_facts(64), "meta": {"hostname": "n2"}})
    log = ResultsLog.create(tmp_path / "r.jsonl", {"space": space.to_json()})
    shared = shared_tune(journal, "w", space, FakeJob(INTRA, seed=2), seeds, TuneSettings(budget=8, seed=1), facts, log)
    err = capsys.readouterr().err
    assert ("tfdoctor: node node07 is unlike the others (cpu.cpuinfo.processors=32); its trials are left out of "
            "the winner") in err
    assert shared is not None
    records, settings = shared.records, shared.settings
    assert len(records) == 5 and settings.budget == 5  # the 3 trials of node07 left out
    assert f"tfdoctor: n2:{os.getpid()} measured 5 of the study's 8 trials (2 worker(s) in all)" in err


def test_a_journal_behind_a_symbolic_link_and_a_database_password_are_refused_safely(tmp_path):
    from tfdoctor.tune.shared import StorageError, open_storage

    (tmp_path / "real.journal").write_text("")
    (tmp_path / "link.journal").symlink_to(tmp_path / "real.journal")
    with pytest.raises(StorageError, match="a symbolic link; name the journal file itself"):
        open_storage(str(tmp_path / "link.journal"))
    with pytest.raises(StorageError) as raised:  # no such driver: its message repeats the URL
        open_storage("nosuchdb://tuner:hunter2secret@db.example/tune")
    assert str(raised.value).startswith("--storage nosuchdb://…: cannot open the database: ")
    assert "hunter2secret" not in str(raised.value)


def test_malformed_trials_written_into_the_shared_study_are_left_out(tmp_path):
    from optuna.trial import TrialState

    from tfdoctor.tune.shared import open_storage, open_study, shared_records

    space = thread_space(drop=OTHERS)
    study = open_study(open_storage(str(tmp_path / "s.journal")), "bad", True, 1, None)
    good = {n: 2 for n in THREADS}
    for params, seconds in ((good, 1.5), ("not a dict", 1.0), ({**good, THREADS[0]: [1]}, 1.0), (good, "slow")):
        trial = study.ask()
        trial.set_user_attr("params", params)
        trial.set_user_attr("seconds", seconds)
        study.tell(trial, 10.0, state=TrialState.COMPLETE)
    records = shared_records(study, space, budget=8)
    assert [(r.params, r.seconds) for r in records] == [(good, 1.5), (good, 0.0)]


def test_resuming_a_shared_tune_whose_journal_is_gone_is_refused(tmp_path, monkeypatch, capsys):
    """Opening the missing journal would start an empty study and measure the whole budget again."""
    from tfdoctor.cli import main
    from tfdoctor.tune.results import ResultsLog
    from tfdoctor.tune.shared import header_entry
    from tfdoctor.tune.space import current_settings

    space = thread_space()
    header = {"space": space.to_json(), "maximize": True, "budget": 8, "seed": 1,
              "seeds": {"current": current_settings(space, {}, TWO_CPUS), "rule": rule_based_settings(TWO_CPUS, space)},
              "objective": {"command": [sys.executable, str(FAKE)], "command_args": [sys.executable, str(FAKE)],
                            "user_metric": METRIC},
              "shared": header_entry(str(tmp_path / "gone.journal"), "t")}
    ResultsLog.create(tmp_path / "r.jsonl", header)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        main(["tune", "--resume", "r.jsonl"])
    assert exit_.value.code == 2
    assert (f"r.jsonl: the journal of its study, {tmp_path / 'gone.journal'}, is not there (moved or deleted)"
            in capsys.readouterr().err)
    assert not (tmp_path / "gone.journal").exists()


def test_resuming_a_shared_tune_whose_sqlite_database_is_gone_is_refused(tmp_path, monkeypatch, capsys):
    """As a journal: connecting to the missing SQLite file created it empty, and the resume measured the
    study's whole budget again in a new study."""
    from tfdoctor.tune.shared import header_entry

    database = tmp_path / "gone.db"
    told = _resume_refused(tmp_path, monkeypatch, capsys,
                           _header(budget=8, shared=header_entry(f"sqlite:///{database}", "t")))
    assert (f"r.jsonl: the study's database {database} is not there (moved or deleted); a shared tune is finished "
            "from its study") in told
    assert not database.exists()


def test_a_database_that_is_there_or_not_sqlite_passes_the_check(tmp_path):
    """The healthy twin: an existing SQLite file, or a server's database, is opened as before."""
    import sqlite3

    from tfdoctor.tune.shared import StorageError, check_database_there

    sqlite3.connect(tmp_path / "tune.db").close()
    check_database_there(f"sqlite:///{tmp_path / 'tune.db'}")
    check_database_there("postgresql://tuner@db.example/tunes")
    with pytest.raises(StorageError, match="the study's database :memory: is not there"):
        check_database_there("sqlite:///:memory:")


def _header(**fields):
    """A results file's header of a tune of one node over the thread space, with `fields`."""
    from tfdoctor.tune.space import current_settings

    space = thread_space()
    return {"space": space.to_json(), "maximize": True, "seed": 1,
            "seeds": {"current": current_settings(space, {}, TWO_CPUS), "rule": rule_based_settings(TWO_CPUS, space)},
            "objective": {"command": [sys.executable, str(FAKE)], "command_args": [sys.executable, str(FAKE)],
                          "user_metric": METRIC}, **fields}


def _resume_refused(tmp_path, monkeypatch, capsys, header, *options) -> str:
    """`tune --resume r.jsonl OPTIONS` over a file with `header`: a usage error (exit 2) that runs no trial and
    leaves the file as it was. What it said on stderr."""
    from tfdoctor.cli import main
    from tfdoctor.tune.results import ResultsLog

    ResultsLog.create(tmp_path / "r.jsonl", header)
    before = (tmp_path / "r.jsonl").read_bytes()
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        main(["tune", "--resume", "r.jsonl", *options])
    assert exit_.value.code == 2
    assert (tmp_path / "r.jsonl").read_bytes() == before  # no trial run
    return capsys.readouterr().err


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("budget", ["8", True, 0, -3, 2.5])
def test_resuming_a_header_whose_budget_is_not_a_number_of_trials_is_refused(tmp_path, monkeypatch, capsys,
                                                                             shared, budget):
    """A hand-edited header: a usage error before any trial, not an internal error (a str compared with a
    trial number) nor a tune of True trials."""
    from tfdoctor.tune.shared import header_entry

    header = _header(budget=budget)
    if shared:
        (tmp_path / "s.journal").touch()
        header["shared"] = header_entry(str(tmp_path / "s.journal"), "t")
    told = _resume_refused(tmp_path, monkeypatch, capsys, header)
    assert "r.jsonl: the header's budget is not a whole number of trials (at least 1)" in told
    assert not shared or (tmp_path / "s.journal").stat().st_size == 0  # no study opened


@pytest.mark.parametrize("time_limit", ["60", True, 0, 0.5, -3, [60]])
def test_resuming_a_header_whose_time_limit_is_not_seconds_is_refused(tmp_path, monkeypatch, capsys, time_limit):
    """A killed --time tune resumes with the header's time: a hand-edited one is a usage error before any
    trial, not an internal error, nor a tune that ends at once (0, -3) or runs for True seconds."""
    told = _resume_refused(tmp_path, monkeypatch, capsys, _header(budget=None, time_limit=time_limit))
    assert "r.jsonl: the header's time_limit is not a number of seconds (at least 1)" in told


@pytest.mark.parametrize(("fields", "told"), [
    ({"seed": "7"}, "the header's seed is not a whole number from 0 to 4294967295"),
    ({"seed": -1}, "the header's seed is not a whole number from 0 to 4294967295"),
    ({"seed": 2**32}, "the header's seed is not a whole number from 0 to 4294967295"),
    ({"seed": 1.5}, "the header's seed is not a whole number from 0 to 4294967295"),
    ({"timeout": "600"}, "the header's timeout is not a number of seconds (at least 1)"),
    ({"timeout": -5}, "the header's timeout is not a number of seconds (at least 1)"),
    ({"bench_seconds": "3"}, "the header's bench_seconds is not a number of seconds (at least 0.2)"),
    ({"command_args": [1, 2]}, "the header's command_args is not a list of strings (the command's words)"),
    ({"command_args": "python train.py"}, "the header's command_args is not a list of strings"),
    ({"workload": 5}, "the header's workload is not the name of a workload"),
])
def test_resuming_a_header_with_a_hand_edited_seed_or_objective_is_refused(tmp_path, monkeypatch, capsys, fields,
                                                                         told):
    """Each went to the first trial as it was (numpy's seeding, subprocess's timeout, the command's words) and
    ended in an internal error (exit 3): now a usage error naming the field, before any trial."""
    header = _header(budget=4)
    if "seed" in fields:
        header.update(fields)
    else:
        header["objective"] = {**header["objective"], **fields}
    assert f"r.jsonl: {told}" in _resume_refused(tmp_path, monkeypatch, capsys, header)


@pytest.mark.parametrize("seed", ["-1", "4294967296"])
def test_a_seed_the_sampler_cannot_take_is_a_usage_error_before_any_file(tmp_path, monkeypatch, capsys, seed):
    """numpy's RandomState takes 0 … 2**32 - 1: --seed -1 ended in an internal error after the results file
    was made."""
    from tfdoctor.cli import main

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        main(["tune", "--seed", seed, "--budget", "2", "--results", "r.jsonl", "--metric", METRIC,
              "--", sys.executable, str(FAKE)])
    assert exit_.value.code == 2
    assert f"Invalid value for '--seed': {seed} is not in the range 0<=x<=4294967295" in capsys.readouterr().err
    assert not (tmp_path / "r.jsonl").exists()


def test_stale_after_on_the_resume_of_a_tune_of_one_node_is_refused(tmp_path, monkeypatch, capsys):
    """It would be ignored: a tune of one node has no other workers whose trials could go stale."""
    told = _resume_refused(tmp_path, monkeypatch, capsys, _header(budget=4, time_limit=None), "--stale-after", "30")
    assert ("--stale-after: r.jsonl is a tune of one node (no --storage): it has no other workers' trials to "
            "judge") in told


def _wait_for(path: Path, process: subprocess.Popen, seconds: float = 300) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.1)


def test_a_worker_killed_mid_trial_is_failed_and_its_trial_measured_again_by_the_writer(tmp_path):
    """A node lost mid-trial: its trial's heartbeat goes silent, the writer fails it after the grace period
    (not after an hour), measures its configuration again and writes the winner with the budget kept."""
    from tfdoctor.tune.heartbeat import REPLACES_ATTR, STALE_ATTR

    (tmp_path / "space.toml").write_text(SPACE_TOML)
    (tmp_path / "barrier").mkdir()
    budget = 12
    barrier = {"FAKE_JOB_BARRIER": f"{tmp_path / 'barrier'}:2"}
    # 8 s: a live worker on a loaded 2-CPU box may stall for a second or two between beats (every 2 s).
    grace = ["--stale-after", "8"]
    writer = _worker(tmp_path, 1, budget, *grace, **barrier)
    doomed = _worker(tmp_path, 2, budget, *grace, FAKE_JOB_HANG_AT="1", **barrier)  # its second trial hangs
    try:
        _wait_for(tmp_path / "runs-2.hung", doomed)
    finally:
        os.killpg(doomed.pid, signal.SIGKILL)  # the worker and its trial: a node lost mid-trial
        doomed.communicate()
    killed = time.monotonic()
    _out, err = writer.communicate(timeout=600)
    elapsed = time.monotonic() - killed
    assert writer.returncode == 0, err
    # The grace is max(8 s, 3 × the longest trial): seconds here; the old wait was an hour.
    assert elapsed < 240, (elapsed, err)
    study = _study(tmp_path)
    trials = study.get_trials()
    dead = [t for t in trials if STALE_ATTR in t.user_attrs]
    assert len(dead) == 1 and dead[0].state == optuna.trial.TrialState.FAIL and dead[0].number < budget
    assert re.fullmatch(r"no heartbeat from worker \S+:\d+ for \d+ s \(grace \d+ s\); failed by \S+:\d+, its "
                        r"configuration measured again", dead[0].user_attrs[STALE_ATTR])
    assert dead[0].user_attrs["worker"] != study.user_attrs["winner-written"]["worker"]
    again = [t for t in trials if t.user_attrs.get(REPLACES_ATTR) == dead[0].number]
    assert len(again) == 1 and again[0].user_attrs["params"] == dead[0].user_attrs["params"]
    assert again[0].params == again[0].user_attrs["params"]  # the sampler learns what was measured
    assert sum(1 for t in trials if t.state == optuna.trial.TrialState.COMPLETE) == budget  # the budget kept
    said = (r"tfdoctor: trial {}/{} of worker \S+:\d+ has sent no heartbeat for \d+ s \(its node lost\?\): failed; "
            r"its configuration is measured again\n")
    assert len(re.findall(said.format(dead[0].number + 1, budget), err)) == 1  # said once
    assert re.search(said.format(r"\d+", r"\d+"), (REPO / "docs" / "tune.md").read_text())  # in the words it shows
    assert load_summary(tmp_path / "r1.jsonl")["verdict"] == "apply"  # the winner written once, by the writer
    assert load_summary(tmp_path / "r2.jsonl") is None
    _header, records = load_results(tmp_path / "r1.jsonl")
    assert sum(1 for r in records if r.phase in ("rule", "search")) == budget
    assert "export TF_NUM_INTRAOP_THREADS" in (tmp_path / "env.sh").read_text()


class _SlowJob(FakeJob):
    """A trial that takes `seconds` — longer than the grace period — on a node that is alive."""

    def __init__(self, seconds: float, started: threading.Event) -> None:
        super().__init__(INTRA, seed=9)
        self.seconds, self.started = seconds, started

    def measure(self, env_changes, launcher=()):
        from tfdoctor.tune.objective import Measurement

        self.started.set()
        time.sleep(self.seconds)
        done = super().measure(env_changes, launcher)
        return Measurement(done.status, done.value, self.seconds)


class _FlakyTrial:
    """A trial whose storage refuses the given writes (an exception each), and records the others."""

    def __init__(self, failures):
        self.failures, self.beats, self.calls = list(failures), [], 0

    def set_user_attr(self, key, value):
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        self.beats.append((key, value))


def test_a_heartbeat_goes_on_after_a_write_the_storage_refused():
    """One lost write (an NFS hiccup) must not silence a live trial for good: beat_interval promises four
    beats within the grace, so one lost beat costs nothing."""
    from tfdoctor.tune.heartbeat import HEARTBEAT_ATTR, Heartbeat

    trial = _FlakyTrial([OSError(5, "Input/output error")])
    with Heartbeat(trial, 0.01):
        deadline = time.monotonic() + 30
        while len(trial.beats) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
    assert len(trial.beats) >= 2 and {key for key, _ in trial.beats} == {HEARTBEAT_ATTR}


def test_a_heartbeat_stops_once_its_trial_was_failed_by_another_worker():
    from optuna.exceptions import UpdateFinishedTrialError

    from tfdoctor.tune.heartbeat import Heartbeat

    trial = _FlakyTrial([UpdateFinishedTrialError("finished")])
    with Heartbeat(trial, 0.01) as beat:
        beat._thread.join(30)  # it ends by itself, before the block does
        assert not beat._thread.is_alive()
    assert trial.calls == 1 and trial.beats == []


def test_a_beat_stuck_in_its_write_does_not_hold_the_end_of_the_block(monkeypatch):
    """A storage that never answers (a hung NFS mount) must not hang the worker after its measurement."""
    from tfdoctor.tune import heartbeat

    monkeypatch.setattr(heartbeat, "JOIN_GRACE", 0.2)
    released, writing = threading.Event(), threading.Event()

    class _HungTrial:
        def set_user_attr(self, key, value):
            writing.set()
            released.wait(60)

    try:
        with heartbeat.Heartbeat(_HungTrial(), 0.01) as beat:
            assert writing.wait(30)
            begun = time.monotonic()
        assert time.monotonic() - begun < 5 and beat._thread.is_alive()
    finally:
        released.set()


def test_a_slow_worker_whose_heartbeat_is_fresh_keeps_its_trial(tmp_path):
    from tfdoctor.tune.heartbeat import STALE_ATTR
    from tfdoctor.tune.shared import open_storage, open_study, run_worker

    space = thread_space()
    journal = str(tmp_path / "s.journal")
    study = open_study(open_storage(journal), "slow", True, 1, rule_based_settings(TWO_CPUS, space))
    # The trial lasts three grace periods; 6 s of grace (a beat every 1.5 s) as a loaded machine needs.
    budget, floor, slow_seconds = 6, 6.0, 18.0
    started = threading.Event()
    slow_result = []
    slow = threading.Thread(target=lambda: slow_result.append(run_worker(
        open_study(open_storage(journal), "slow", True, 2, None), space, _SlowJob(slow_seconds, started), budget,
        "n2", "n2:1", seed=2, limit=1, stale_floor=floor)))
    slow.start()
    assert started.wait(60)
    stale: list[int] = []
    begun = time.monotonic()
    writer = run_worker(study, space, FakeJob(INTRA, seed=1), budget, "n1", "n1:1", seed=1, stale_floor=floor,
                        on_stale=lambda number, owner, silent: stale.append(number))
    waited = time.monotonic() - begun
    slow.join(60)
    assert writer.writer and stale == []
    assert waited >= slow_seconds - 1.0  # the writer waited for the slow trial instead of failing it
    assert slow_result[0].measured == [slow_result[0].measured[0]] and not slow_result[0].writer
    trials = study.get_trials()
    assert not [t.number for t in trials if STALE_ATTR in t.user_attrs]
    assert sum(1 for t in trials if t.state == optuna.trial.TrialState.COMPLETE) == budget
    assert len(writer.records) == budget and all(r.status == "ok" for r in writer.records)


@pytest.mark.parametrize("told", ["value", "error"])
def test_a_trial_its_worker_finishes_while_another_fails_it_keeps_its_result(tmp_path, told):
    """fail_stale writes the reason, then the state; the owner's result told in between wins (fail_stale says
    False): the trial is counted as measured, not dropped and measured again."""
    from tfdoctor.tune.heartbeat import STALE_ATTR, fail_stale
    from tfdoctor.tune.search import _distributions
    from tfdoctor.tune.shared import _orphans, open_storage, open_study, shared_records

    space = thread_space()
    study = open_study(open_storage(str(tmp_path / "s.journal")), "race", True, 1, None)
    trial = study.ask(_distributions(space))
    params = rule_based_settings(TWO_CPUS, space)
    for name, value in (("params", params), ("node", "n1"), ("worker", "n1:1"), ("seconds", 1.5)):
        trial.set_user_attr(name, value)
    storage, write = study._storage, study._storage.set_trial_user_attr

    def reason_then_owner_tells(trial_id, key, value):
        write(trial_id, key, value)
        if key == STALE_ATTR:  # the owner's result lands between the reaper's two writes
            if told == "value":
                study.tell(trial, 5.0)
            else:
                trial.set_user_attr("error", "exit 1")
                study.tell(trial, state=optuna.trial.TrialState.FAIL)

    storage.set_trial_user_attr = reason_then_owner_tells
    running = [t for t in study.get_trials() if t.state == optuna.trial.TrialState.RUNNING]
    assert not fail_stale(study, running[0], "no heartbeat (test)")
    storage.set_trial_user_attr = write
    assert STALE_ATTR in study.get_trials()[0].user_attrs  # the reason stays: optuna cannot take it back
    records = shared_records(study, space, 1)
    assert [(r.params, r.status, r.value) for r in records] == [
        (params, "ok", 5.0) if told == "value" else (params, "failed", None)]
    assert _orphans(study.get_trials(), 1, space) == []  # not measured again


def test_a_queued_trial_another_worker_popped_and_finished_first_is_left_to_it(tmp_path):
    """Two workers started at once on a fresh SQLite file can both pop the queued trial 0 (optuna reads it
    WAITING, then marks it RUNNING); the one that finishes it first keeps it, the other asks for the next
    (this ended the other worker with exit 3 on a loaded machine)."""
    from tfdoctor.tune.shared import open_storage, open_study, run_worker

    space = thread_space()
    study = open_study(open_storage(str(tmp_path / "s.journal")), "race", True, 1, {INTRA: 2})
    real_ask, popped = study.ask, []

    def ask(*args, **kwargs):
        trial = real_ask(*args, **kwargs)
        if trial.number == 0 and not popped:  # the other worker measures and tells it meanwhile
            popped.append(trial.number)
            study._storage.set_trial_state_values(trial._trial_id, state=optuna.trial.TrialState.COMPLETE,
                                                  values=[7.0])
        return trial

    study.ask = ask
    result = run_worker(study, space, FakeJob(INTRA, seed=1), 4, "n1", "n1:1", seed=1, limit=3)
    assert popped == [0] and result.measured == [1, 2, 3]
    first = study.get_trials()[0]
    assert first.state == optuna.trial.TrialState.COMPLETE and first.value == 7.0  # the other worker's result


def test_a_worker_whose_trial_was_failed_as_stale_drops_its_measurement(tmp_path):
    """A node that stalled past the grace period and came back: its trial was failed (and is measured again
    elsewhere); its late measurement is dropped without an error and it goes on with the next trial."""
    from tfdoctor.tune.heartbeat import STALE_ATTR, fail_stale
    from tfdoctor.tune.shared import open_storage, open_study, run_worker, shared_records

    space = thread_space()
    study = open_study(open_storage(str(tmp_path / "s.journal")), "late", True, 1, None)

    class Stalled(FakeJob):
        def measure(self, env_changes, launcher=()):
            if self.runs == 0:  # another worker gives up on this trial while it is measured
                running = [t for t in study.get_trials() if t.state == optuna.trial.TrialState.RUNNING]
                assert fail_stale(study, running[0], "no heartbeat (test)")
                assert not fail_stale(study, running[0], "twice")  # failed once only
            return super().measure(env_changes, launcher)

    result = run_worker(study, space, Stalled(INTRA, seed=1), 4, "n1", "n1:1", seed=1, limit=3)
    assert result.measured == [1, 2, 3]
    first = study.get_trials()[0]
    assert first.state == optuna.trial.TrialState.FAIL and first.user_attrs[STALE_ATTR] == "no heartbeat (test)"
    assert [r.params for r in shared_records(study, space, 4)] == [t.user_attrs["params"]
                                                                  for t in study.get_trials()[1:4]]


class _FinishedFirst:
    """A study handle whose every `tell` comes second: another worker's handle finishes the trial just before."""

    def __init__(self, study, other) -> None:
        self.study, self.other = study, other

    def tell(self, trial, *args, **kwargs):
        self.other.tell(trial.number, 1.0)
        return self.study.tell(trial, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.study, name)


def test_a_trial_another_worker_told_first_is_dropped_not_a_crash(tmp_path):
    """Two workers started at once on SQLite can both pop the queued seed trial. When the other tells its result
    between this worker's last write and its own tell, optuna's tell refuses with a plain ValueError ("Cannot
    tell a COMPLETE trial"), not the UpdateFinishedTrialError every other write raises: a worker ended with exit
    3, one run in about five on a loaded 2-CPU machine. The measurement is dropped, the other's result kept."""
    import optuna
    from optuna.exceptions import UpdateFinishedTrialError
    from optuna.trial import TrialState

    from tfdoctor.tune.search import _distributions
    from tfdoctor.tune.shared import _measure, _tell, open_storage, open_study

    space = thread_space()
    journal = str(tmp_path / "s.journal")
    study = open_study(open_storage(journal), "race", True, 1, rule_based_settings(TWO_CPUS, space))
    other = optuna.load_study(storage=open_storage(journal), study_name="race")
    trial = study.ask(_distributions(space))
    measured = _measure(_FinishedFirst(study, other), trial, space, FakeJob(INTRA, seed=1), dict(trial.params),
                        "n1", "n1:1", 60.0)
    assert measured is None
    kept = other.get_trials(deepcopy=False)[trial.number]
    assert kept.state == TrialState.COMPLETE and kept.value == 1.0
    with pytest.raises(UpdateFinishedTrialError):
        _tell(study, trial, 2.0)
    # a refusal of another kind, on a trial still running, stays what it is
    running = study.ask(_distributions(space))
    with pytest.raises(ValueError, match="Cannot tell with state") as refused:
        _tell(study, running, state=TrialState.RUNNING)
    assert not isinstance(refused.value, UpdateFinishedTrialError)
