"""What a batch job does to a process (issue 40): signals at any moment, interrupted and shared results
files, full disks, private umasks, planted links, odd trees. Each test runs the real thing: a tfdoctor
process, real signals, a real full file system (a small tmpfs, where this test may mount one)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.command_line import REPO, assert_no_traceback, run_cli

SIM = REPO / "benchmarks" / "simulated_objective.py"
SIM_METRIC = r"throughput: ([0-9.]+)"
SPACE = """
[parameters.TF_NUM_INTRAOP_THREADS]
low = 1
high = 8
[parameters.TF_NUM_INTEROP_THREADS]
low = 1
high = 4
""" + "".join(f"[parameters.{n}]\ndrop = true\n" for n in
              ("OMP_NUM_THREADS", "KMP_BLOCKTIME", "KMP_AFFINITY", "OMP_PROC_BIND", "TF_ENABLE_ONEDNN_OPTS"))


def _running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's zombie waits for init to reap it: it runs nothing)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _wait_for(condition, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def _start(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    """tfdoctor in a session of its own, as a batch step runs it (a signal is sent to it alone)."""
    return subprocess.Popen([sys.executable, "-m", "tfdoctor", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def _trial_command(tmp_path: Path, pids: Path) -> list[str]:
    """A trial that records its pid and a grandchild's (both ignoring SIGTERM) on its first run, then
    runs for a long time: the trial a signal finds running."""
    script = tmp_path / "trial.sh"
    script.write_text(
        "#!/bin/sh\n"
        f"if [ -e {pids} ]; then exec {sys.executable} {SIM}; fi\n"
        "trap '' TERM\n"
        "sleep 300 &\n"
        f"echo $$ $! > {pids}.tmp && mv {pids}.tmp {pids}\n"
        "sleep 300\n")
    script.chmod(0o755)
    return [str(script)]


def _tune_args(tmp_path: Path, results: Path, command: list[str], budget: int = 6) -> list[str]:
    space = tmp_path / "space.toml"
    space.write_text(SPACE)
    return ["tune", "--space", str(space), "--budget", str(budget), "--repeats", "1", "--seed", "3",
            "--trial-timeout", "600", "--results", str(results), "--metric", SIM_METRIC, "--", *command]


def _records(results: Path) -> list[dict]:
    return [json.loads(line) for line in results.read_text().splitlines() if line.strip()]


# -- 1. every child ends with tfdoctor, whatever ends tfdoctor ----------------------------------------

@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGQUIT, 131),
                                           (signal.SIGINT, 130)])
def test_a_signal_to_tune_ends_its_trial_group_and_the_file_says_so(tmp_path, sig, code):
    results, pids = tmp_path / "r.jsonl", tmp_path / "pids"
    process = _start(_tune_args(tmp_path, results, _trial_command(tmp_path, pids)), tmp_path)
    try:
        _wait_for(pids.exists)
        trial, grandchild = (int(pid) for pid in pids.read_text().split())
        os.kill(process.pid, sig)
        _out, err = process.communicate(timeout=10)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == code, err
    assert_no_traceback(subprocess.CompletedProcess([], code, _out, err))
    deadline = time.monotonic() + 3.0  # the bound: nothing left behind within 3 s of the signal
    while (_running(trial) or _running(grandchild)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(trial) and not _running(grandchild)
    last = _records(results)[-1]
    assert last["type"] == "interrupted" and last["signal"] == signal.Signals(sig).name
    assert f"--resume {results}" in err


def test_an_interrupted_tune_resumes_to_its_budget(tmp_path):
    results, pids = tmp_path / "r.jsonl", tmp_path / "pids"
    process = _start(_tune_args(tmp_path, results, _trial_command(tmp_path, pids), budget=4), tmp_path)
    _wait_for(pids.exists)
    os.kill(process.pid, signal.SIGTERM)
    process.communicate(timeout=10)
    assert process.returncode == 143
    done = run_cli(["tune", "--resume", str(results)], cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    trials = [r for r in _records(results) if r["type"] == "trial"]
    assert [r["number"] for r in trials] == list(range(len(trials)))
    assert len([r for r in trials if r["phase"] in ("current", "rule", "screen", "search")]) == 4


def _fake_python(tmp_path: Path, pids: Path) -> Path:
    """An 'interpreter' for `profile --python`: the workload it is asked to run records its pid and a
    grandchild's, both ignoring SIGTERM, and never finishes; anything else it is asked fails at once."""
    script = tmp_path / "python"
    script.write_text(
        "#!/bin/sh\n"
        'case "$1" in *workload_main.py) ;; *) exit 1 ;; esac\n'
        "trap '' TERM\n"
        "sleep 300 &\n"
        f"echo $$ $! > {pids}.tmp && mv {pids}.tmp {pids}\n"
        "sleep 300\n")
    script.chmod(0o755)
    return script


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_to_profile_ends_its_workload_group(tmp_path, sig, code):
    pids = tmp_path / "pids"
    process = _start(["profile", "--python", str(_fake_python(tmp_path, pids)), "--timeout", "600"], tmp_path)
    try:
        _wait_for(pids.exists, 120)
        workload, grandchild = (int(pid) for pid in pids.read_text().split())
        os.kill(process.pid, sig)
        _out, err = process.communicate(timeout=10)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == code, err
    assert "Traceback" not in err
    deadline = time.monotonic() + 3.0
    while (_running(workload) or _running(grandchild)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(workload) and not _running(grandchild)


def test_a_second_sigterm_does_not_cut_the_cleanup_short(tmp_path):
    results, pids = tmp_path / "r.jsonl", tmp_path / "pids"
    process = _start(_tune_args(tmp_path, results, _trial_command(tmp_path, pids)), tmp_path)
    _wait_for(pids.exists)
    trial, grandchild = (int(pid) for pid in pids.read_text().split())
    os.kill(process.pid, signal.SIGTERM)
    time.sleep(0.1)  # inside the grace the trial's group is given
    os.kill(process.pid, signal.SIGTERM)
    process.communicate(timeout=10)
    assert process.returncode == 143
    time.sleep(0.5)
    assert not _running(trial) and not _running(grandchild)
