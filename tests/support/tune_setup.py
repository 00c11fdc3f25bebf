"""What the tune tests share: a two-CPU budget, the space file that fixes the thread counts to 1..4 whatever
the machine, and the `tfdoctor tune` command over the fake job (tune_fakes.py) in a process per trial.

Kept apart from tune_fakes.py, which runs as the fake job itself once per trial and so imports nothing of
tfdoctor at its top."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

import pytest

from support.tune_fakes import METRIC
from tfdoctor.derive.cpu_budget import CpuBudget
from tfdoctor.tune.space import Space, apply_space_file, default_space

INTRA, INTER = "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS"
THREADS = (INTRA, INTER, "OMP_NUM_THREADS")
# The default space's other parameters: a job that reads one of them from the caller's environment would
# start from a setting the test did not choose.
OTHERS = ("KMP_BLOCKTIME", "KMP_AFFINITY", "OMP_PROC_BIND", "TF_ENABLE_ONEDNN_OPTS")
# The default space with the thread counts fixed to 1..4 whatever the machine: the seven parameters.
SPACE_TOML = "".join(f"[parameters.{name}]\nlow = 1\nhigh = 4\n" for name in THREADS)
TWO_CPUS = CpuBudget(cpus=2, source="test", host_cpus=2, allowed=(0, 1), physical_cores=2, sockets=1)
FAKE = Path(__file__).resolve().with_name("tune_fakes.py")


def thread_space(budget: CpuBudget = TWO_CPUS, high: int = 4, drop: Iterable[str] = ()) -> Space:
    """`budget`'s default space with the thread counts 1..`high` whatever the machine (with 4, the space of
    SPACE_TOML) and the parameters of `drop` left out."""
    return apply_space_file(default_space(budget), {"parameters": {**{n: {"low": 1, "high": high} for n in THREADS},
                                                                   **{n: {"drop": True} for n in drop}}})


def tune_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, depends: str | None, *extra: str) -> list[str]:
    """`tfdoctor tune`'s arguments (for `main`), run in `tmp_path` with SPACE_TOML, over the fake job whose
    metric depends on the variable `depends` (None: pure noise), seeded, none of the space's variables set."""
    for name in (*THREADS, *OTHERS):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FAKE_JOB_STATE", str(tmp_path / "runs"))
    monkeypatch.setenv("FAKE_JOB_SEED", "7")
    monkeypatch.setenv("FAKE_JOB_DEPENDS", depends or "")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "space.toml").write_text(SPACE_TOML)
    return ["tune", "--space", "space.toml", "--seed", "2", "--results", "r.jsonl", *extra,
            "--metric", METRIC, "--", sys.executable, str(FAKE)]


def open_study_at_once(spec: str, count: int = 8) -> tuple[list, list[str]]:
    """`count` threads open the same fresh storage and its study "t" at the very same instant (a barrier),
    as the workers of a job array do: (the studies opened, the errors raised), for the schema-race tests of
    SQLite, journal files and PostgreSQL alike."""
    import threading

    from tfdoctor.tune.shared import open_storage, open_study

    barrier, errors, studies = threading.Barrier(count), [], []

    def worker(index: int) -> None:
        barrier.wait()
        try:
            studies.append(open_study(open_storage(spec), "t", True, index, {INTRA: 2}))
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return studies, errors
