"""A tune shared through a real PostgreSQL server (tests/support/local_postgres.py, the `postgres` fixture):
workers started at the same instant on a fresh database, the server restarted mid-tune, the writer killed and
finished from another worker's results file. The URL is given without a driver (`postgresql://`): tfdoctor
picks the one installed (the test extra's psycopg2-binary). Skipped, with the reason, where the server cannot
be installed or started."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO
from support.tune_fakes import METRIC
from support.tune_setup import FAKE, INTRA, OTHERS, SPACE_TOML, THREADS, open_study_at_once

from tfdoctor.tune.results import load_summary

pytestmark = [pytest.mark.postgres, pytest.mark.slow]
optuna = pytest.importorskip("optuna")
pytest.importorskip("sqlalchemy")


def _env(tmp_path: Path, index: int, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in (*THREADS, *OTHERS)}
    env.update(FAKE_JOB_STATE=str(tmp_path / f"runs-{index}"), FAKE_JOB_SEED=str(index), FAKE_JOB_DEPENDS=INTRA,
               PYTHONPATH=str(REPO), **extra)
    return env


def _worker(tmp_path: Path, storage: str, index: int, budget: int, **extra: str) -> subprocess.Popen:
    argv = [sys.executable, "-m", "tfdoctor", "tune", "--storage", storage, "--study", "t", "--budget", str(budget),
            "--space", "space.toml", "--seed", str(index), "--results", f"r{index}.jsonl", "--write", "env.sh",
            "--repeats", "2", "--leaders", "2", "--metric", METRIC, "--", sys.executable, str(FAKE)]
    return subprocess.Popen(argv, cwd=tmp_path, env=_env(tmp_path, index, **extra), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def _trials(storage: str):
    from tfdoctor.tune.shared import open_storage

    return optuna.load_study(storage=open_storage(storage, read_only=True), study_name="t").get_trials()


def _three_at_once(tmp_path: Path, storage: str, budget: int, **extra: str) -> list[tuple[int, str]]:
    (tmp_path / "space.toml").write_text(SPACE_TOML)
    workers = [_worker(tmp_path, storage, i, budget, **extra) for i in (1, 2, 3)]
    outputs = [w.communicate(timeout=600) for w in workers]
    return [(w.returncode, err) for w, (_out, err) in zip(workers, outputs, strict=True)]


def _one_writer_and_the_whole_budget(tmp_path: Path, storage: str, budget: int, done: list[tuple[int, str]]) -> None:
    assert [code for code, _err in done] == [0, 0, 0], done
    assert all("Traceback" not in err for _code, err in done)
    writers = [i for i in (1, 2, 3) if load_summary(tmp_path / f"r{i}.jsonl") is not None]
    assert len(writers) == 1, done
    assert sum("writes the winner; this one is done" in err for _code, err in done) == 2
    trials = _trials(storage)
    measured = sorted(t.number for t in trials if "worker" in t.user_attrs and t.state.name == "COMPLETE")
    assert measured == list(range(budget))  # no trial lost
    assert "export TF_NUM_INTRAOP_THREADS" in (tmp_path / "env.sh").read_text()


def test_three_workers_started_at_once_on_a_fresh_postgresql_database_all_finish(tmp_path, postgres):
    url = postgres.create_database("fresh_at_once")
    assert url.startswith("postgresql://")  # no driver named: tfdoctor picks the installed one
    done = _three_at_once(tmp_path, url, 9)
    _one_writer_and_the_whole_budget(tmp_path, url, 9, done)


def test_three_workers_started_at_once_on_a_fresh_sqlite_file_all_finish(tmp_path):
    url = f"sqlite:///{tmp_path / 'tune.db'}"
    done = _three_at_once(tmp_path, url, 9)
    _one_writer_and_the_whole_budget(tmp_path, url, 9, done)


def test_workers_creating_the_schema_at_the_same_instant_all_open_it(postgres):
    """Eight threads open one fresh database at the very same instant: optuna's own RDBStorage loses most of
    them to `UniqueViolation … pg_type_typname_nsp_index` (CREATE TYPE studydirection); each opens here."""
    url = postgres.create_database("schema_race")
    studies, errors = open_study_at_once(url)
    assert errors == [] and len(studies) == 8
    assert [s.study_name for s in optuna.get_all_study_summaries(studies[0]._storage)] == ["t"]
    assert len(studies[0].get_trials()) == 1  # the rule seed, queued once


def test_a_database_restarted_mid_tune_loses_no_trial_and_no_worker(tmp_path, postgres):
    url = postgres.create_database("restarted")
    (tmp_path / "space.toml").write_text(SPACE_TOML)
    budget = 9
    workers = [_worker(tmp_path, url, i, budget, FAKE_JOB_SECONDS="1") for i in (1, 2, 3)]
    try:
        deadline = time.monotonic() + 300
        # a few trials told, the others running: then the server goes down for two seconds, every connection cut
        while sum(int((tmp_path / f"runs-{i}").read_text() or 0) for i in (1, 2, 3)
                  if (tmp_path / f"runs-{i}").exists()) < 4:
            assert all(w.poll() is None for w in workers) and time.monotonic() < deadline
            time.sleep(0.1)
        postgres.restart(down_seconds=2.0)
        outputs = [w.communicate(timeout=600) for w in workers]
    finally:
        for w in workers:
            if w.poll() is None:
                os.killpg(w.pid, signal.SIGKILL)
    done = [(w.returncode, err) for w, (_out, err) in zip(workers, outputs, strict=True)]
    _one_writer_and_the_whole_budget(tmp_path, url, budget, done)
    assert any("trying again for up to 60 s (--storage-retry)" in err for _code, err in done), done


def test_the_killed_writer_is_finished_by_the_printed_command_from_another_workers_file(tmp_path, postgres):
    """The writer hangs in its first confirmation run and is killed (process and trial); the other worker's
    output printed the command to finish without it. Run as printed — no --write — it writes the env file the
    tune was started with."""
    url = postgres.create_database("killed_writer")
    (tmp_path / "space.toml").write_text(SPACE_TOML)
    budget = 6
    writer = _worker(tmp_path, url, 1, budget, FAKE_JOB_HANG_AT=str(budget))  # its run 6: the first confirmation
    try:
        deadline = time.monotonic() + 300
        while not (tmp_path / "runs-1.hung").exists():
            assert writer.poll() is None and time.monotonic() < deadline, writer.communicate()
            time.sleep(0.1)
        other = _worker(tmp_path, url, 2, budget)  # arrives late: handed a number past the writer's
        _out, err = other.communicate(timeout=300)
    finally:
        os.killpg(writer.pid, signal.SIGKILL)
        writer.communicate()
    assert other.returncode == 0, err
    printed = re.search(r"should that worker die, `(tfdoctor tune --resume [^`]+)` finishes the tune", err)
    assert printed and printed.group(1) == "tfdoctor tune --resume 'r2.jsonl'", err
    assert not (tmp_path / "env.sh").exists()
    from support.report_pages import visible_words

    from tfdoctor.report.html.build import _tune

    # Before the verdict: neither the killed writer's file (its partial confirmation runs) nor the other's draws one.
    for name in ("r1.jsonl", "r2.jsonl"):
        shown = visible_words(_tune(str(tmp_path / name)).body)
        assert "The study's verdict is not written yet" in shown and "Verdict:" not in shown, shown[:600]
    argv = [sys.executable, "-m", "tfdoctor", *printed.group(1).replace("'", "").split()[1:]]
    done = subprocess.run(argv, cwd=tmp_path, env=_env(tmp_path, 2), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "export TF_NUM_INTRAOP_THREADS" in (tmp_path / "env.sh").read_text()
    trials = _trials(url)
    assert sorted(t.number for t in trials if "worker" in t.user_attrs and t.number < budget) == list(range(budget))
    assert load_summary(tmp_path / "r2.jsonl") is not None
    # One study, one conclusion: the killed writer's file, the finisher's, the same verdict.
    verdicts = {re.search(r"Verdict: [^.]*\.", visible_words(_tune(str(tmp_path / name)).body)).group(0)
                for name in ("r1.jsonl", "r2.jsonl")}
    assert len(verdicts) == 1 and verdicts.pop().startswith("Verdict: change TF_NUM_INTRAOP_THREADS=")


def test_docs_batch_postgresql_array_script_runs_under_slurm(postgres, slurm):
    """docs/batch.md's job array over a PostgreSQL database, literally (the fake job as the command, a budget of
    12, the test server's URL), as a two-task array on the tests' single-node Slurm: one study, both tasks
    measure, one writes env.sh, each results file named by %N."""
    from support.local_slurm import LocalSlurm  # noqa: F401 - the fixture's type

    block = re.search(r"```\n(#!/bin/sh\n#SBATCH --array.*?)```", (REPO / "docs" / "batch.md").read_text(), re.S)
    assert block, "docs/batch.md has no PostgreSQL array script"
    script = block.group(1)
    url = postgres.create_database("slurm_array")
    tfdoctor = str(Path(sys.executable).parent / "tfdoctor")
    for old, new in (("tfdoctor tune ", f"{tfdoctor} tune "), ("postgresql://tuner@db.example.org/tune", url),
                     ("--budget 64", "--budget 12 --space space.toml"),
                     ("-- python train.py --steps 200", f"-- {sys.executable} {FAKE}"),
                     ("'images/sec: ([0-9.]+)'", f"'{METRIC}'")):
        assert old in script, old
        script = script.replace(old, new)
    script = script.replace("#!/bin/sh\n", "#!/bin/sh\nexport FAKE_JOB_STATE=\"runs-$SLURM_ARRAY_TASK_ID\" "
                            "FAKE_JOB_DEPENDS=TF_NUM_INTRAOP_THREADS\n", 1)
    base = slurm.base / "pg-array"  # its own folder: the journal array's env.sh is not this one's
    base.mkdir()
    (base / "space.toml").write_text(SPACE_TOML)
    (base / "tune-pg.sh").write_text(script)
    done = slurm.client(["sbatch", "--wait", "--array=0-1", "--ntasks=1", "--cpus-per-task=1", "--export=ALL",
                         "--job-name", "tune-pg", "--output", str(base / "tune-pg-%a.out"), "--chdir", str(base),
                         str(base / "tune-pg.sh")], timeout=600)
    outputs = [(base / f"tune-pg-{i}.out").read_text() if (base / f"tune-pg-{i}.out").exists() else ""
               for i in (0, 1)]
    assert done.returncode == 0, (done.stderr, outputs, slurm.logs())
    from tfdoctor.tune.shared import open_storage

    storage = open_storage(url, read_only=True)
    names = optuna.get_all_study_names(storage)
    assert len(names) == 1 and names[0].startswith("tune-")
    trials = optuna.load_study(storage=storage, study_name=names[0]).get_trials()
    assert sorted(t.number for t in trials if "worker" in t.user_attrs) == list(range(12))
    assert sum("writes the winner; this one is done" in out for out in outputs) == 1, outputs
    assert sorted(p.name for p in base.glob("tune-localhost-*.jsonl")) == ["tune-localhost-0.jsonl",
                                                                           "tune-localhost-1.jsonl"]
    assert "export TF_NUM_INTRAOP_THREADS" in (base / "env.sh").read_text()
