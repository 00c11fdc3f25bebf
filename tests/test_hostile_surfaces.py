"""Hostile inputs against the newer surfaces (issue 24): the HTML report, explain --log, profile facts,
the writers and the children tfdoctor starts. One test (or more) per class; the class number is issue 24's.
The HTML pages are opened in a real browser in tests/test_report_browser.py; the redactor's classes are in
tests/test_facts_redact.py."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.command_line import assert_no_traceback, run_cli

SNAPSHOT = Path(__file__).parent / "snapshots" / "core" / "slurm-node-bad-threads.json"


# -- 7. outputs are regular files or standard output; --force replaces nothing else ----------------

WRITERS = {
    "collect -o": ["collect", "-o", "{target}", "--force"],
    "fix --write": ["fix", "--facts", str(SNAPSHOT), "--write", "{target}", "--force"],
    "fix --write-python": ["fix", "--facts", str(SNAPSHOT), "--write-python", "{target}", "--force", "--unsafe-fixes"],
    "fix --write-launcher": ["fix", "--write-launcher", "{target}", "--force"],
    "report -o": ["report", "--facts", str(SNAPSHOT), "-o", "{target}", "--force"],
}


@pytest.mark.parametrize("kind", ["fifo", "link to /dev/null", "link to a fifo"])
@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_force_never_replaces_a_fifo_or_a_device(tmp_path, writer, kind):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    target = tmp_path / "out"
    if kind == "fifo":
        target = fifo
    else:
        os.symlink("/dev/null" if "null" in kind else fifo, target)
    done = run_cli([a.format(target=target) for a in WRITERS[writer]], cwd=tmp_path)
    assert_no_traceback(done)
    assert done.returncode == 2, done.stderr
    assert "tfdoctor writes only regular files" in done.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    if kind != "fifo":
        assert os.path.islink(target)
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_force_still_replaces_a_regular_file_and_a_link_to_one(tmp_path):
    from tfdoctor.fixes.write import write_file

    (tmp_path / "old").write_text("old\n")
    os.symlink(tmp_path / "old", tmp_path / "link")
    write_file(tmp_path / "old", "new\n", force=True)
    write_file(tmp_path / "link", "via link\n", force=True)  # the link itself is replaced, not its target
    assert (tmp_path / "old").read_text() == "new\n"
    assert not os.path.islink(tmp_path / "link") and (tmp_path / "link").read_text() == "via link\n"


# -- 9. children end with their whole process group, SIGKILL after a short grace ---------------------

def _running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's zombie waits for init to reap it: it runs nothing)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _stubborn(tmp_path: Path, tail: str = "") -> Path:
    """An 'interpreter' that ignores SIGTERM, leaves a grandchild that ignores it too, records both pids."""
    script = tmp_path / "python"
    script.write_text(f"#!/bin/sh\ntrap '' TERM\nsleep 300 &\necho $$ $! > {tmp_path}/pids\n{tail}")
    script.chmod(0o755)
    return script


def _pids(tmp_path: Path) -> list[int]:
    return [int(pid) for pid in (tmp_path / "pids").read_text().split()]


def _all_ended(pids: list[int]) -> bool:
    """True once none of `pids` runs; a SIGKILL is delivered asynchronously, so allow it a moment."""
    import time

    deadline = time.monotonic() + 2.0
    while any(_running(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_python_that_ignores_sigterm_does_not_outlive_tfdoctor(tmp_path):
    python = _stubborn(tmp_path, "sleep 300\n")
    done = run_cli(["check", "--python", str(python), "--timeout", "1.5", "-q", "--select", "PKG"], cwd=tmp_path)
    assert_no_traceback(done)
    assert "did not finish within the --timeout budget" in done.stderr
    assert _all_ended(_pids(tmp_path))


def test_run_bounded_ends_what_the_child_left_in_its_group(tmp_path):
    from tfdoctor.facts.bounded import run_bounded

    done = run_bounded([str(_stubborn(tmp_path, "exit 0\n"))], timeout=10, limit=1024)
    assert done.returncode == 0
    assert _all_ended(_pids(tmp_path))


def test_run_bounded_ends_a_stubborn_child_at_its_timeout(tmp_path):
    from tfdoctor.facts.bounded import run_bounded

    started = __import__("time").monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        run_bounded([str(_stubborn(tmp_path, "sleep 300\n"))], timeout=1, limit=1024)
    assert __import__("time").monotonic() - started < 5  # the grace is half a second, then SIGKILL
    assert _all_ended(_pids(tmp_path))


# -- 8 and 10. knowledge files: special files refused, a damaged twin falls back to the TOML ------------

def _toml(here: Path, name: str) -> dict:
    from tfdoctor import knowledge

    return knowledge._tomllib().loads((here / f"{name}.toml").read_text(encoding="utf-8"))


def test_a_hand_edited_twin_with_its_crc_kept_falls_back_to_the_toml(tables_in):
    import json

    from tfdoctor import knowledge

    twin = tables_in / "compiled" / "cuda_drivers.json"
    data = json.loads(twin.read_text(encoding="utf-8"))
    del data["document"]["rows"][0]["cuda"]  # crc32 of the TOML still matches
    twin.write_text(json.dumps(data), encoding="utf-8")
    assert knowledge.table("cuda_drivers").data == _toml(tables_in, "cuda_drivers")


@pytest.mark.parametrize("damage", ["nested", "fifo", "dev-zero"])
def test_a_special_or_deeply_nested_twin_falls_back_to_the_toml(tables_in, damage):
    from tfdoctor import knowledge

    twin = tables_in / "compiled" / "openmp_runtimes.json"
    twin.unlink()
    if damage == "nested":
        twin.write_text('{"crc32": ' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    elif damage == "fifo":
        os.mkfifo(twin)
    else:
        os.symlink("/dev/zero", twin)
    assert knowledge.table("openmp_runtimes").data == _toml(tables_in, "openmp_runtimes")


@pytest.mark.parametrize("damage", ["fifo", "dev-zero"])
def test_a_table_replaced_by_a_special_file_is_refused_not_read(tables_in, damage):
    from tfdoctor import knowledge

    toml = tables_in / "openmp_runtimes.toml"
    toml.unlink()
    os.mkfifo(toml) if damage == "fifo" else os.symlink("/dev/zero", toml)
    with pytest.raises(knowledge.KnowledgeError, match="not a regular file"):
        knowledge.table("openmp_runtimes")


# -- 4. explain --log: every known message's pattern is linear on adversarial lines ----------------------

def _adversarial_logs(message) -> dict[str, str]:
    """1 MB each: the message's fixed prefix repeated on one line, with a space, one per line, and the first
    two thirds of its documented example repeated (a near-miss that makes a pattern scan and back off)."""
    from tfdoctor.logs.messages import literal_prefix

    prefix = literal_prefix(message.pattern.pattern)
    near = message.examples[0][: len(message.examples[0]) * 2 // 3]
    size = 1_000_000
    return {"one line": prefix * (size // len(prefix)), "spaced": (prefix + " x") * (size // (len(prefix) + 2)),
            "lines": (prefix + "\n") * (size // (len(prefix) + 1)), "near miss": (near + " ") * (size // len(near))}


def _message_ids() -> list[str]:
    from tfdoctor.logs.messages import known_messages

    return [message.id for message in known_messages()]


@pytest.mark.parametrize("message_id", _message_ids())
def test_every_log_pattern_is_linear_on_adversarial_lines(message_id):
    import time

    from tfdoctor.logs.messages import find_messages, known_messages

    (message,) = [m for m in known_messages() if m.id == message_id]
    for name, text in _adversarial_logs(message).items():
        started = time.process_time()
        find_messages(text, [message])
        spent = time.process_time() - started
        assert spent < 2.0, f"{message_id} on '{name}': {spent:.1f} s of CPU for 1 MB"


def test_a_real_message_after_a_hostile_line_is_still_found():
    from tfdoctor.logs.messages import find_messages

    hostile = "Ignoring visible gpu device (" * 30_000
    real = ("Ignoring visible gpu device (device: 0, name: Tesla K80, pci bus id: 0000:00:04.0, compute capability: "
            "3.7) with Cuda compute capability 3.7. The minimum required Cuda capability is 5.0.")
    found = find_messages(f"{hostile}\n{real}\n")
    assert [(s.message.id, s.line) for s in found] == [("gpu-below-minimum-capability", 2)]


def test_explain_log_of_a_one_megabyte_hostile_line_is_quick(tmp_path):
    log = tmp_path / "hostile.log"
    log.write_text("Ignoring visible gpu device (" * (1_000_000 // 29) + "\n")
    done = run_cli(["explain", "--log", str(log), "--facts", str(SNAPSHOT)], cwd=tmp_path)  # 60 s timeout
    assert_no_traceback(done)
    assert done.returncode == 0, done.stderr
    assert "1 line(s) read, 0 known message(s)" in done.stdout


# -- 8. explain --log reads nothing that is not a regular file's content --------------------------------

@pytest.mark.skipif(not os.path.exists("/proc/kmsg"), reason="no /proc/kmsg here")
def test_explain_log_of_proc_kmsg_is_refused_not_waited_on(tmp_path):
    done = run_cli(["explain", "--log", "/proc/kmsg"], cwd=tmp_path)  # run_cli's timeout is 60 s
    assert_no_traceback(done)
    assert done.returncode == 2
    assert done.stderr.startswith("tfdoctor: error: cannot read --log /proc/kmsg: ")


@pytest.mark.skipif(not os.path.exists("/proc/kmsg"), reason="no /proc/kmsg here")
def test_a_facts_file_that_would_block_is_refused(tmp_path):
    done = run_cli(["check", "--facts", "/proc/kmsg"], cwd=tmp_path)
    assert_no_traceback(done)
    assert done.returncode == 2 and "cannot read facts file /proc/kmsg" in done.stderr


# -- 10 and 11. explain --log - with standard input closed, or open and quiet ---------------------------

def test_explain_log_with_standard_input_closed_is_a_usage_error(tmp_path):
    done = subprocess.run(["sh", "-c", f"'{sys.executable}' -m tfdoctor explain --log - <&-"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert_no_traceback(done)
    assert done.returncode == 2
    assert done.stderr == ("tfdoctor: error: --log -: standard input is closed; pipe a log into it "
                           "(tfdoctor explain --log - < train.log)\n")


def test_a_pipe_that_stays_open_is_announced_once_while_waiting():
    from tfdoctor.logs.read import read_log_stdin

    told: list[str] = []
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, b"Illegal instruction\n")
        with os.fdopen(os.dup(read_end), "rb") as stream:
            log = read_log_stdin(stream, seconds=0.6, notice=told.append, notice_after=0.2)
    finally:
        os.close(read_end)
        os.close(write_end)
    assert log.text == "Illegal instruction\n" and log.stopped == "stopped waiting for more input after 0.6 s"
    assert told == ["tfdoctor: standard input is still open after 0.2 s; reading it until it ends, at most 0.6 s "
                    "in all (a log still being written is explained as far as it goes)\n"]


def test_a_pipe_that_ends_is_not_announced():
    import io

    from tfdoctor.logs.read import read_log_stdin

    told: list[str] = []
    read_log_stdin(io.BytesIO(b"Illegal instruction\n"), notice=told.append, notice_after=0.0)
    assert told == []


def test_explain_log_says_so_while_it_waits_on_an_open_pipe(tmp_path):
    done = subprocess.run(["sh", "-c", f"(echo 'Illegal instruction'; sleep 3) | '{sys.executable}' -m tfdoctor "
                           f"explain --log - --facts '{SNAPSHOT}'"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)
    assert_no_traceback(done)
    assert done.returncode == 0, done.stderr
    assert "standard input is still open after 2 s" in done.stderr
    assert "Illegal instruction" in done.stdout


# -- 3. text from input files reaches plotly as text (the browser proof: test_report_browser_hostile.py) ---

@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_plot_text_carries_no_markup_and_decodes_to_the_redacted_text(value):
    from tfdoctor.facts.redact import redact_text
    from tfdoctor.report.html.plots import plot_text

    shown = plot_text(value)
    assert "<" not in shown and ">" not in shown
    # what plotly draws: its entities decoded back (&amp; last, as the decoder sees each entity once)
    assert shown.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&") == redact_text(value)


def test_tune_choices_reach_the_study_as_text_and_stay_distinct():
    pytest.importorskip("optuna")
    from tfdoctor.report.html.tune_section import replay_study
    from tfdoctor.tune.results import TrialRecord
    from tfdoctor.tune.space import Space, choice_param

    space = Space((choice_param("KMP_AFFINITY", ("<b>x</b>", "&lt;b&gt;x&lt;/b&gt;", "none")),))
    records = [TrialRecord(i, "search", {"KMP_AFFINITY": c}, "ok", float(i), 1.0)
               for i, c in enumerate(("<b>x</b>", "&lt;b&gt;x&lt;/b&gt;", "none"))]
    study = replay_study(space, records, maximize=True)
    shown = [t.params["KMP_AFFINITY"] for t in study.trials]
    assert shown == ["&lt;b&gt;x&lt;/b&gt;", "&amp;lt;b&amp;gt;x&amp;lt;/b&amp;gt;", "none"]


# -- 10. exit 3 where the input is at fault --------------------------------------------------------------

NUMBER_VARIABLES = ["OMP_NUM_THREADS", "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "MKL_NUM_THREADS",
                    "KMP_BLOCKTIME", "SLURM_NTASKS_PER_NODE", "TFDOCTOR_PARAMS", "TFDOCTOR_PROCESSES_PER_NODE",
                    "OMPI_COMM_WORLD_LOCAL_SIZE", "TF_GPU_THREAD_COUNT", "TF_CPP_MIN_LOG_LEVEL", "CUDA_CACHE_MAXSIZE",
                    "SLURM_JOB_NUM_NODES", "WORLD_SIZE", "SLURM_STEP_GPUS", "SLURM_CPUS_PER_TASK", "LOCAL_RANK"]


@pytest.fixture(scope="module")
def registry():
    from tfdoctor.registry import load_registry

    return load_registry()


def _facts_with_env(env: dict[str, str]):
    from support.snapshot_facts import edited_facts

    return edited_facts(SNAPSHOT, {("env", "variables", name): value for name, value in env.items()})


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(NUMBER_VARIABLES),
       value=st.one_of(st.sampled_from(["9" * 120_000, "0" * 100_000 + "4", "²", "٣", "1e400", "9" * 400 + "M"]),
                       st.from_regex(r"[0-9]{19,60}", fullmatch=True),
                       st.text(alphabet=st.characters(categories=("Nd", "No")), min_size=1, max_size=8)))
def test_absurd_numbers_in_the_environment_crash_no_check(registry, name, value):
    from tfdoctor.engine import run_checks
    from tfdoctor.model import Status

    report = run_checks(registry.checks, _facts_with_env({name: value}))
    crashed = [(r.code, r.reason) for r in report.results if r.status is Status.CRASHED]
    assert not crashed, crashed


def test_a_120000_digit_thread_count_is_judged_not_crashed(tmp_path):
    done = run_cli(["check", "--select", "THR"], cwd=tmp_path, env={"OMP_NUM_THREADS": "9" * 120_000})
    assert_no_traceback(done)
    assert done.returncode in (0, 1), done.stdout[-2000:]
    assert "crashed" not in done.stdout


def test_count_reads_ascii_digits_only_and_caps_them():
    from tfdoctor.facts.parse import COUNT_LIMIT, count

    assert [count(t) for t in (" 8 ", "0008", "0", "²", "٣", "-1", "+2", "", "9" * 19)] == \
        [8, 8, 0, None, None, None, None, None, COUNT_LIMIT]
    assert count("0" * 100_000 + "4") == 4


@pytest.mark.parametrize("args", [["compare", "{deep}", str(SNAPSHOT)], ["check", "--facts", "{deep}"],
                                  ["check", "--facts", "{deep}", "--format", "json"],
                                  ["report", "--facts", "{deep}", "-o", "-"],
                                  ["report", "--profile", "{deep}", "-o", "-"]])
def test_facts_nested_900_deep_are_refused_not_a_recursion_error(tmp_path, args):
    import json

    from support.snapshot_facts import edited_file

    deep = edited_file(SNAPSHOT, {"cpu.deep": json.loads("[" * 900 + "]" * 900)}, tmp_path / "deep.json")
    done = run_cli([a.format(deep=deep) for a in args], cwd=tmp_path)
    assert_no_traceback(done)
    assert "RecursionError" not in done.stderr + done.stdout
    assert done.returncode == (1 if args[0] == "compare" else 2), done.stderr
    told = " ".join((done.stderr + done.stdout).split())  # the long path before it makes rich wrap the line
    assert "nest" in told and "64 levels deep" in told


# -- 11. messages that say what happened ------------------------------------------------------------------

@pytest.mark.parametrize("option", ["--env", "--script"])
def test_profile_inputs_name_a_fifo_as_a_fifo(tmp_path, option):
    fifo = tmp_path / "input"
    os.mkfifo(fifo)
    done = run_cli(["profile", option, str(fifo)], cwd=tmp_path)  # sourcing or running it would wait on it
    assert done.returncode == 2
    assert done.stderr == f"tfdoctor: error: {option} {fifo} is a FIFO (named pipe), not a regular file\n"


@pytest.mark.parametrize(("args", "message"), [
    (["--html", ""], "--html needs a file name (- for standard output)"),
    (["--plot", " "], "--plot needs a file name (- for standard output)"),
    (["--write", ""], "--write needs a file name (- for standard output)"),
    (["--html", "h.svg"], "--html h.svg: the file must end in .html"),
    (["--plot", "h.svg"], "--plot h.svg: the file must end in .html"),
    (["--html", "h.png"], "--html h.png: PNG heatmaps were replaced"),
    (["--html", "a.html", "--plot", "b.html"], "give --html FILE or --plot FILE, not both"),
])
def test_tune_output_errors_name_the_option_given(tmp_path, args, message):
    done = run_cli(["tune", *args, "--budget", "2", "--metric", "v: ([0-9]+)", "--", "true"], cwd=tmp_path)
    assert_no_traceback(done)
    assert done.returncode == 2
    assert done.stderr.startswith(f"tfdoctor: error: {message}")
    assert list(tmp_path.iterdir()) == []  # refused before any trial: no results file either


# -- 8. a FIFO planted in site-packages holds no probe ----------------------------------------------------

def test_fifos_in_site_packages_hold_neither_scan_nor_snapshot(tmp_path):
    import time

    from tfdoctor.facts.probes import openmp, pyenv_snapshot

    dist = tmp_path / "site-packages" / "evil-1.0.dist-info"
    dist.mkdir(parents=True)
    for name in ("RECORD", "WHEEL", "METADATA"):
        os.mkfifo(dist / name)
    started = time.monotonic()
    assert openmp._read_bounded(str(dist / "WHEEL"), 4096) is None
    from tfdoctor.facts.machine import Machine

    scan = openmp._Scan(Machine())
    assert openmp._record_hits(scan, str(dist / "RECORD"), "evil-1.0.dist-info") == []
    result = pyenv_snapshot.verify_record(str(dist), str(tmp_path / "site-packages"))
    assert result == {"$unknown": f"RECORD unreadable: {dist / 'RECORD'} is not a regular file"}
    assert time.monotonic() - started < 5


# -- 4. the redactor on the command line: the review's cases (collect 15–44 s, compare 107 s before) ------

def test_collect_of_120_kb_and_compare_of_240_kb_dash_runs_are_quick(tmp_path):
    import json

    from support.snapshot_facts import snapshot_tree

    run = "a-" * 60_000  # 120 KB: about the most one environment variable can hold (MAX_ARG_STRLEN, 128 KiB)
    done = run_cli(["collect"], cwd=tmp_path, env={"XLA_FLAGS": run})  # run_cli gives up after 60 s
    assert done.returncode == 0 and run in done.stdout
    data = snapshot_tree(SNAPSHOT)
    data["sections"]["env"]["variables"]["XLA_FLAGS"] = run * 2
    (tmp_path / "a.json").write_text(json.dumps(data))
    data["meta"]["hostname"] = "other-node"
    data["sections"]["env"]["variables"]["XLA_FLAGS"] = "b-" * 120_000
    (tmp_path / "b.json").write_text(json.dumps(data))
    done = run_cli(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json")], cwd=tmp_path)
    assert_no_traceback(done)
    assert done.returncode == 1 and "XLA_FLAGS" in done.stdout
