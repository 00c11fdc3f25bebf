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
from support.growth import growth_ratio

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


def _signal_and_expect_no_child_left(process, pids: Path, sig: int, code: int, start_seconds: float) -> str:
    """Once the child (and its grandchild, both ignoring SIGTERM) wrote their pids, signal tfdoctor: it exits
    with `code`, without a traceback, and neither is left running 3 s later (the issue's bound). Returns
    tfdoctor's standard error."""
    try:
        _wait_for(pids.exists, start_seconds)
        child, grandchild = (int(pid) for pid in pids.read_text().split())
        os.kill(process.pid, sig)
        out, err = process.communicate(timeout=10)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == code, err
    assert_no_traceback(subprocess.CompletedProcess([], code, out, err))
    deadline = time.monotonic() + 3.0
    while (_running(child) or _running(grandchild)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(child) and not _running(grandchild)
    return err


def _wait_for(condition, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


# The signals the tests send, each started at its default disposition in the child (see _start).
_SENT = (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM)


def _start(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    """tfdoctor in a session of its own, as a batch step runs it (a signal is sent to it alone).

    The child starts with the signals the tests send at their default disposition, as a batch step has them.
    Under `nohup` the test runner's SIGHUP is ignored, and a test run started in the background of a script
    (`cmd &` without job control) has SIGINT and SIGQUIT ignored; the child would inherit that, and tfdoctor
    rightly keeps ignoring a signal it was told to ignore: those cases would then test how the suite was
    started, not tfdoctor (the README's test command run as `nohup sh -c '...' &` failed three of them)."""
    # Set in this process around the start (the child inherits dispositions at exec): no preexec_fn, which is
    # not safe beside the threads a test may have running.
    previous = {sig: signal.signal(sig, signal.SIG_DFL) for sig in _SENT}
    try:
        return subprocess.Popen([sys.executable, "-m", "tfdoctor", *args], cwd=cwd, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


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
    err = _signal_and_expect_no_child_left(process, pids, sig, code, 60)
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
    _signal_and_expect_no_child_left(process, pids, sig, code, 120)


def test_sigterm_to_check_ends_its_python_child(tmp_path):
    pids = tmp_path / "pids"
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\ntrap '' TERM\nsleep 300 &\necho $$ $! > {pids}.tmp && mv {pids}.tmp {pids}\n"
                      "sleep 300\n")
    python.chmod(0o755)
    process = _start(["check", "--python", str(python), "--timeout", "600", "-q"], tmp_path)
    try:
        _wait_for(pids.exists)
        interpreter, grandchild = (int(pid) for pid in pids.read_text().split())
        os.kill(process.pid, signal.SIGTERM)
        _out, err = process.communicate(timeout=10)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 143, err
    deadline = time.monotonic() + 3.0
    while (_running(interpreter) or _running(grandchild)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(interpreter) and not _running(grandchild)


def test_lint_workers_inherit_no_leaving_signal_handler(tmp_path):
    """lint's forked pool workers are ended by Pool.terminate with SIGTERM: they die by it, as before the
    command line installed its handler, with no traceback from each worker."""
    for i in range(120):
        (tmp_path / f"train_{i}.py").write_text(f"import tensorflow as tf\nds = tf.data.Dataset.range({i})\n")
    done = run_cli(["lint", str(tmp_path)], cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert_no_traceback(done)
    assert "Interrupted" not in done.stderr


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


# -- 2. results files: torn lines, two writers, full disks --------------------------------------------

def _finished_tune(tmp_path: Path, budget: int = 3) -> Path:
    results = tmp_path / "r.jsonl"
    done = run_cli(_tune_args(tmp_path, results, [sys.executable, str(SIM)], budget=budget), cwd=tmp_path,
                   timeout=300)
    assert done.returncode == 0, done.stderr
    return results


def _unfinished(results: Path) -> None:
    """The file as a tune killed after its last trial leaves it: no summary line."""
    lines = [line for line in results.read_text().splitlines() if '"type": "summary"' not in line]
    results.write_text("\n".join(lines) + "\n")


def test_a_last_line_without_its_newline_is_ended_not_glued_onto_the_next(tmp_path):
    results = _finished_tune(tmp_path)
    _unfinished(results)
    results.write_text(results.read_text().rstrip("\n"))  # the node died between the record and its newline
    for budget in ("4", "5"):  # resumed twice: the second resume reads what the first one appended
        done = run_cli(["tune", "--resume", str(results), "--budget", budget], cwd=tmp_path, timeout=300)
        assert done.returncode == 0, done.stderr
        _unfinished(results)
    trials = [r for r in _records(results) if r["type"] == "trial"]
    assert [r["number"] for r in trials] == list(range(len(trials)))


def test_a_torn_last_line_is_cut_off_and_resumed(tmp_path):
    results = _finished_tune(tmp_path)
    _unfinished(results)
    before = [r for r in _records(results) if r["type"] == "trial"]
    with open(results, "a") as handle:
        handle.write('{"type": "trial", "number": 9')
    done = run_cli(["tune", "--resume", str(results), "--budget", "4"], cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    after = [r for r in _records(results) if r["type"] == "trial"]
    assert after[: len(before)] == before and [r["number"] for r in after] == list(range(len(after)))


def test_a_second_resume_of_one_file_is_refused_with_the_holder_named(tmp_path):
    results, pids = tmp_path / "r.jsonl", tmp_path / "pids"
    first = _start(_tune_args(tmp_path, results, _trial_command(tmp_path, pids)), tmp_path)
    try:
        _wait_for(pids.exists)
        second = run_cli(["tune", "--resume", str(results)], cwd=tmp_path, timeout=60)
    finally:
        os.kill(first.pid, signal.SIGTERM)
        first.communicate(timeout=10)
    assert second.returncode == 2, second.stderr
    assert f"pid {first.pid}" in second.stderr and "one tfdoctor at a time" in second.stderr
    assert_no_traceback(second)
    trials = [r for r in _records(results) if r["type"] == "trial"]
    assert [r["number"] for r in trials] == list(range(len(trials)))
    assert not (tmp_path / "r.jsonl.lock").exists()  # the holder's note leaves with it


def test_two_resumes_at_once_never_record_a_trial_twice(tmp_path):
    results = _finished_tune(tmp_path, budget=3)
    _unfinished(results)
    resumes = [_start(["tune", "--resume", str(results), "--budget", "6"], tmp_path) for _ in range(2)]
    codes = sorted(process.wait(timeout=300) for process in resumes)
    assert codes in ([0, 0], [0, 2])  # the second one waits its turn only if the first had already finished
    trials = [r for r in _records(results) if r["type"] == "trial"]
    assert [r["number"] for r in trials] == list(range(len(trials)))


@pytest.fixture
def small_disk(tmp_path):
    """A real file system of 64 KiB (tmpfs): root only, else skipped with the reason."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0777", "tmpfs", str(mount)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(folder: Path, leave: int = 0) -> None:
    """Fill the file system of `folder`, leaving about `leave` bytes."""
    with open(folder / "filler", "wb", buffering=0) as handle:
        try:
            while True:
                handle.write(b"\0" * 4096)
        except OSError:
            pass
    if leave:
        size = (folder / "filler").stat().st_size
        os.truncate(folder / "filler", max(0, size - leave))


def test_a_tune_on_a_full_disk_creates_nothing_and_says_so(tmp_path, small_disk):
    _fill(small_disk)
    results = small_disk / "r.jsonl"
    done = run_cli(_tune_args(tmp_path, results, [sys.executable, str(SIM)], budget=3), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "No space left on device" in done.stderr and "internal error" not in done.stderr
    assert not results.exists()  # no 0-byte results file


def test_a_disk_that_fills_mid_tune_keeps_the_file_resumable(tmp_path, small_disk):
    results = small_disk / "r.jsonl"
    _fill(small_disk, leave=8192)
    done = run_cli(_tune_args(tmp_path, results, [sys.executable, str(SIM)], budget=40), cwd=tmp_path, timeout=300)
    assert done.returncode == 2, done.stderr
    assert "No space left on device" in done.stderr and "internal error" not in done.stderr
    assert f"--resume {results}" in done.stderr
    trials = [r for r in _records(results) if r["type"] == "trial"]  # every line whole
    assert trials and [r["number"] for r in trials] == list(range(len(trials)))
    (small_disk / "filler").unlink()
    resumed = run_cli(["tune", "--resume", str(results)], cwd=tmp_path, timeout=300)
    assert resumed.returncode == 0, resumed.stderr


# -- 3. one writer: the umask, the replaced file's mode, links out and the kernel's names -------------

def _umask_077() -> None:
    os.umask(0o077)


def test_a_file_written_under_umask_077_is_private(tmp_path):
    facts = tmp_path / "facts.json"
    done = subprocess.run([sys.executable, "-m", "tfdoctor", "collect", "-o", str(facts), "--timeout", "30"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, preexec_fn=_umask_077,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert facts.stat().st_mode & 0o777 == 0o600


def test_force_keeps_the_mode_of_the_file_it_replaces(tmp_path):
    from tfdoctor.fixes.write import write_file

    private = tmp_path / "report.txt"
    private.write_text("old\n")
    private.chmod(0o600)
    write_file(private, "new\n", force=True)
    assert private.read_text() == "new\n" and private.stat().st_mode & 0o777 == 0o600
    launcher = tmp_path / "run.sh"
    launcher.write_text("old\n")
    launcher.chmod(0o640)
    write_file(launcher, "#!/bin/sh\n", force=True, mode=0o755)
    assert launcher.stat().st_mode & 0o777 == 0o750  # kept private, still runnable


def test_force_refuses_a_link_to_a_file_outside_its_folder(tmp_path):
    from tfdoctor.fixes.write import WriteError, write_file

    (tmp_path / "elsewhere").mkdir()
    victim = tmp_path / "elsewhere" / "crontab"
    victim.write_text("kept\n")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "env.sh").symlink_to(victim)
    with pytest.raises(WriteError, match="outside its folder"):
        write_file(tmp_path / "out" / "env.sh", "x\n", force=True)
    assert victim.read_text() == "kept\n" and (tmp_path / "out" / "env.sh").is_symlink()


PRIVATE_DEV = """
set -e
mount --make-rprivate /
mount -t tmpfs tfdoctor-dev /dev
ln -s /proc/self/fd/1 /dev/stdout
mknod -m 666 /dev/null c 1 3
set +e
"$@" > "$OUT" 2> "$ERR"
echo $? > "$CODE"
if [ -L /dev/stdout ]; then echo link > "$KIND"; else echo replaced > "$KIND"; fi
"""


def test_force_onto_dev_stdout_while_stdout_is_a_file_keeps_the_link(tmp_path):
    """As root, in a mount namespace with a /dev of its own (the machine's /dev/stdout is never at stake)."""
    import shutil

    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("only root may replace /dev/stdout; the test gives it a /dev of its own (unshare -m)")
    if subprocess.run(["unshare", "-m", "true"], capture_output=True, check=False).returncode != 0:
        pytest.skip("this container does not allow a new mount namespace")
    files = {name: tmp_path / name for name in ("OUT", "ERR", "CODE", "KIND")}
    subprocess.run(["unshare", "-m", "sh", "-c", PRIVATE_DEV, "sh", sys.executable, "-m", "tfdoctor", "collect",
                    "-o", "/dev/stdout", "--force", "--timeout", "30"], cwd=tmp_path, timeout=120, check=True,
                   env={**os.environ, **{name: str(path) for name, path in files.items()}})
    assert files["CODE"].read_text().strip() == "2", files["ERR"].read_text()
    assert "under /dev" in files["ERR"].read_text()
    assert files["KIND"].read_text().strip() == "link"


@pytest.mark.skipif(os.geteuid() != 0, reason="planting another user's link needs root (lchown)")
def test_a_cache_link_planted_in_a_shared_sticky_cache_home_is_not_followed(tmp_path, monkeypatch):
    from tfdoctor.facts.probes import pyenv_snapshot

    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    victim = tmp_path / "victim"
    victim.mkdir(mode=0o700)
    (shared / "tfdoctor").symlink_to(victim)
    os.lchown(shared / "tfdoctor", 65534, 65534)  # planted by nobody
    monkeypatch.setenv("XDG_CACHE_HOME", str(shared))
    monkeypatch.delenv("TFDOCTOR_CACHE_DIR", raising=False)
    path = pyenv_snapshot.hash_cache_path()
    cache = pyenv_snapshot.HashCache(path)
    cache.put("/lib/x.so", [1, 2, 3, 4], b"sha256=abc")
    cache.save()
    assert list(victim.iterdir()) == []
    # the user's own link is followed as before
    os.lchown(shared / "tfdoctor", 0, 0)
    cache = pyenv_snapshot.HashCache(path)
    cache.put("/lib/x.so", [1, 2, 3, 4], b"sha256=abc")
    cache.save()
    assert [p.name for p in victim.iterdir()] == [pyenv_snapshot.HASH_CACHE_NAME]


# -- 4. trees and sizes --------------------------------------------------------------------------------

def _without_root_reads() -> list[str]:
    """The command prefix that makes a folder of mode 000 unreadable to this test's process: none for a
    user; for root, setpriv dropping the capabilities that read past permissions (skipped without it)."""
    if os.geteuid() != 0:
        return []
    import shutil

    if shutil.which("setpriv") is None:
        pytest.skip("root reads any folder; setpriv (util-linux) is needed to drop that")
    return ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--inh-caps=-all"]


def test_lint_reports_and_skips_a_folder_it_cannot_read(tmp_path):
    (tmp_path / "ok").mkdir()
    (tmp_path / "ok" / "train.py").write_text("x = 1\n")
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "inner").mkdir()
    (tmp_path / "locked" / "x.py").write_text("x = 1\n")
    (tmp_path / "locked").chmod(0o000)
    try:
        done = subprocess.run([*_without_root_reads(), sys.executable, "-m", "tfdoctor", "lint", str(tmp_path)],
                              capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path)
    finally:
        (tmp_path / "locked").chmod(0o755)
    assert done.returncode == 1, done.stderr  # a finding (SRC002 is an error), not "tfdoctor failed" (3)
    assert_no_traceback(done)
    lines = done.stdout.splitlines()
    assert any(line.startswith("locked:") and "SRC002" in line and "Permission denied" in line
               for line in lines), done.stdout
    assert "2 file(s)" in done.stderr + done.stdout  # the readable file was linted too


def test_lint_walks_a_tree_nested_a_thousand_deep(tmp_path):
    folder = tmp_path
    for _ in range(1000):
        folder = folder / "d"
        folder.mkdir()
    (folder / "train.py").write_text("x = 1\n")
    try:
        done = run_cli(["lint", str(tmp_path)], cwd=tmp_path)
    finally:  # pytest's own clean-up of old temporary folders recurses (shutil.rmtree before 3.12)
        subprocess.run(["rm", "-rf", str(tmp_path / "d")], check=False)
    assert done.returncode == 0, done.stderr[-500:]
    assert "1 file(s)" in done.stderr + done.stdout


def test_lint_refuses_two_megabytes_of_nested_lists_before_parsing_them(tmp_path):
    row = "[" + ",".join(["[1, 2, 3]"] * 20) + "]"
    data = tmp_path / "data.py"
    data.write_text("data = [\n" + "".join(f"    {row},\n" for _ in range(1_900_000 // (len(row) + 6))) + "]\n")
    done = subprocess.run(["sh", "-c", f"ulimit -v 600000; exec {sys.executable} -m tfdoctor lint {data}"],
                          capture_output=True, text=True, timeout=120, check=False)  # 600 MB of address space
    assert done.returncode == 1, done.stderr
    assert "SRC002" in done.stdout and "tokens of Python" in done.stdout


def test_the_redactor_is_linear_in_credential_bearing_path_entries():
    from tfdoctor.facts.redact import REDACTED, redact_value

    def make(n):
        return [part for i in range(n) for part in f"https://user:pw{i}@host{i}/lib".split(":")]

    entries = make(5000)
    redacted = redact_value(entries, "LD_LIBRARY_PATH")
    # Growth, not a wall-clock bound (which a busy machine flips): about 4 when linear, 16 when each entry
    # looked at every secret span (11-21 s at 5000 entries).
    assert growth_ratio(make, lambda e: redact_value(e, "LD_LIBRARY_PATH"), 1000) < 8
    assert redacted[:4] == ["https", REDACTED, REDACTED, "https"] and not any("pw1@" in e for e in redacted)


def test_collect_with_5000_credential_bearing_library_paths_keeps_its_timeout(tmp_path):
    library_path = ":".join(f"https://u:p{i}@h{i}" for i in range(5000))  # one string under ARG_MAX's 128 KiB
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "tfdoctor", "collect", "-o", "facts.json", "--timeout", "5"],
                          cwd=tmp_path, env={**os.environ, "LD_LIBRARY_PATH": library_path}, capture_output=True,
                          text=True, timeout=120, check=False)
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    # The --timeout plus room for starting Python and writing on a busy machine (the probes alone may use
    # all 5 s there); 12.6 s when the redaction of the split list was quadratic.
    assert elapsed < 5.0 + 4.0
    written = (tmp_path / "facts.json").read_text()
    assert "@h1" in written and ":p1@" not in written and "u:p" not in written


BLOCKING_CPU_ONLINE = """
import os, pty, subprocess, sys
master, slave = pty.openpty()  # a terminal no one writes to: a read of it waits for ever
os.set_inheritable(master, True)  # kept open in tfdoctor (a closed master makes the read fail at once)
subprocess.run(["mount", "--bind", os.ttyname(slave), "/sys/devices/system/cpu/online"], check=True)
os.execv(sys.executable, [sys.executable, *sys.argv[1:]])
"""


@pytest.mark.parametrize("command", [["check", "-q"], ["collect", "-o", "facts.json"]])
def test_a_cpu_online_file_that_blocks_does_not_hang_check_or_collect(tmp_path, command):
    import shutil

    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare: the blocking file is bind-mounted in a mount namespace of its own")
    if subprocess.run(["unshare", "-m", "true"], capture_output=True, check=False).returncode != 0:
        pytest.skip("this container does not allow a new mount namespace")
    (tmp_path / "blocking.py").write_text(BLOCKING_CPU_ONLINE)
    done = subprocess.run(["unshare", "-m", sys.executable, str(tmp_path / "blocking.py"), "-m", "tfdoctor",
                           *command, "--timeout", "30"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode in (0, 1), done.stderr
    assert_no_traceback(done)
    if command[0] == "collect":
        online = json.loads((tmp_path / "facts.json").read_text())["sections"]["cpu"]["online"]
        with open("/proc/stat") as stat:
            listed = [int(line.split()[0][3:]) for line in stat if line[:3] == "cpu" and line[3].isdigit()]
        assert online == sorted(listed)  # read from /proc/stat, not through the blocking file


# -- 5. helpers by absolute path; explanations without docstrings ------------------------------------

def test_sourcing_an_env_file_never_runs_a_planted_sh_or_env(tmp_path):
    from tfdoctor.profile.envfile import environment_from_file

    marker = tmp_path / "planted-ran"
    for name in ("sh", "env"):
        (tmp_path / name).write_text(f"#!/bin/sh\ntouch {marker}\nexit 0\n")
        (tmp_path / name).chmod(0o755)
    env_file = tmp_path / "env.sh"
    env_file.write_text("export OMP_NUM_THREADS=4\n")
    base = {"PATH": f".:{os.environ['PATH']}", "HOME": str(tmp_path)}
    before = os.getcwd()
    os.chdir(tmp_path)  # `.` is this folder (and the env file's)
    try:
        result = environment_from_file(env_file, base)
    finally:
        os.chdir(before)
    assert result["OMP_NUM_THREADS"] == "4"
    assert not marker.exists()


DOCS = """
import json
from tfdoctor.lint.rule import load_lint_rules
from tfdoctor.registry import load_registry
docs = {spec.code: spec.doc for spec in load_registry().checks}
docs.update({spec.code: spec.doc for spec in load_lint_rules().rules})
print(json.dumps(docs))
"""


def test_explanations_survive_python_minus_oo():
    """`python -OO` strips docstrings: every check's and lint rule's documentation is the same there."""
    def docs(*flags: str) -> dict[str, str]:
        done = subprocess.run([sys.executable, *flags, "-c", DOCS], capture_output=True, text=True, timeout=120,
                              check=True)
        return json.loads(done.stdout)

    plain, stripped = docs(), docs("-OO")
    assert len(plain) > 100 and all(plain.values())
    assert stripped == plain
    done = subprocess.run([sys.executable, "-OO", "-m", "tfdoctor", "explain", "THR101"], capture_output=True,
                          text=True, timeout=60, check=False)
    assert "What it does:" in done.stdout and "Fix safety" in done.stdout
