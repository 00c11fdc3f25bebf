"""benchmarks/lint_outside.py, the kit for re-measuring lint's precision outside the project (issue 39): `list`
lints checkouts as a user would and writes a row per finding to judge; `score` gives the strict and lenient
precision of the judged rows. Run as the docs say, in its own process, on checkouts made here."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "benchmarks" / "lint_outside.py"
sys.path.insert(0, str(REPO / "benchmarks"))

import lint_outside  # noqa: E402

# An eager step called in a loop over files: SRC107 by default (a warning with every kind of evidence shown).
EAGER_STEP = """\
import tensorflow as tf
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
opt = tf.keras.optimizers.Adam()
files = tf.io.gfile.glob("d/*.tfrecord")
ds = tf.data.TFRecordDataset(files).map(tf.io.decode_jpeg, num_parallel_calls=4).batch(8).prefetch(1)
def train_step(x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(model(x))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
for epoch in range(100):
    for x in ds:
        train_step(x)
"""
# A serial map over files that fit trains on, release not known: only the preview rules speak (infos).
SERIAL_MAP = """\
import tensorflow as tf
files = tf.io.gfile.glob("data/*.tfrecord")
spec = {"a": tf.io.FixedLenFeature([], tf.string)}
ds = tf.data.TFRecordDataset(files).map(lambda x: tf.io.parse_single_example(x, spec))
ds = ds.shuffle(1000).batch(32)
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.fit(ds, epochs=10)
"""
# A file the prefilter lets through (it maps a dataset) and ast.parse rejects: SRC001, counted, not judged.
BROKEN = "import tensorflow as tf\nds = tf.data.Dataset.range(3).map(f)\ndef (:\n"
NOTEBOOK = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# training"]},
                      {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                       "source": EAGER_STEP.splitlines(keepends=True)}],
            "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def _git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(folder), "-c", "user.email=t@example.org", "-c", "user.name=t", *args],
                          capture_output=True, text=True, check=True).stdout.strip()


def checkout(folder: Path, files: dict[str, str], remote: str | None = None) -> Path:
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    _git(folder, "init", "-q")
    _git(folder, "add", "-A")
    _git(folder, "commit", "-qm", "the code to judge")
    if remote:
        _git(folder, "remote", "add", "origin", remote)
    return folder


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300,
                          check=False, cwd=cwd)


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def write(path: Path, table: list[dict[str, str]]) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(table[0]))
        writer.writeheader()
        writer.writerows(table)
    return path


@pytest.fixture(scope="module")
def listed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Path], subprocess.CompletedProcess[str]]:
    base = tmp_path_factory.mktemp("outside")
    one = checkout(base / "one", {"train/step.py": EAGER_STEP, "broken.py": BROKEN,
                                  "notebooks/step.ipynb": json.dumps(NOTEBOOK)},
                   remote="git@github.com:someone/eager-steps.git")
    two = checkout(base / "two", {"train.py": SERIAL_MAP})  # no remote: named by its folder
    out = base / "findings.csv"
    done = run("list", str(one), str(two), "--out", str(out), "--preview")
    return out, {"one": one, "two": two}, done


def test_list_writes_a_row_per_finding_of_each_checkout_as_a_user_would_lint_it(listed):
    out, folders, done = listed
    assert done.returncode == 0, done.stderr
    table = rows(out)
    assert list(table[0]) == list(lint_outside.COLUMNS)
    default = [r for r in table if r["run"] == "default"]
    assert sorted((r["repo"], r["path"], r["cell"], r["line"], r["rule"], r["tier"]) for r in default) == [
        ("someone/eager-steps", "notebooks/step.ipynb", "2", "6", "SRC107", "shown"),
        ("someone/eager-steps", "train/step.py", "", "6", "SRC107", "shown")]
    assert {r["commit"] for r in default} == {_git(folders["one"], "rev-parse", "HEAD")}
    assert all(r["label"] == "" and r["reason"] == "" and r["severity"] == "warning" for r in default)
    assert "step-called-in-loop: train_step() is called in a loop" in default[0]["grounds"]
    # What only the preview rules add is listed apart, from the checkout without a remote.
    preview = [r for r in table if r["run"] == "preview"]
    assert {(r["repo"], r["path"], r["rule"], r["tier"]) for r in preview} == {
        ("two", "train.py", "SRC102", "unproven"), ("two", "train.py", "SRC103", "unproven")}
    assert "SRC001" not in {r["rule"] for r in table}  # a file that does not parse is counted, not judged
    assert "2 checkout(s)" in done.stdout
    assert "2 default finding(s) to judge, 2 more with the preview rules" in done.stdout
    assert "1 SRC001/SRC002" in done.stdout


def test_the_readers_folder_configuration_does_not_change_the_default_settings(listed, tmp_path):
    """tfdoctor reads [tool.tfdoctor] from the folder it runs in upward: list lints from an empty folder, so a
    configuration where the reader stands (here one ignoring SRC107) does not thin the rows to judge."""
    _, folders, _ = listed
    (tmp_path / "pyproject.toml").write_text('[tool.tfdoctor]\nignore = ["SRC107"]\n')
    out = tmp_path / "x.csv"
    done = run("list", str(folders["one"]), "--out", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert [r["rule"] for r in rows(out)] == ["SRC107", "SRC107"]


def test_an_existing_out_file_is_not_overwritten_without_force(listed, tmp_path):
    _, folders, _ = listed
    out = tmp_path / "judged.csv"
    out.write_text("my labels\n")
    refused = run("list", str(folders["two"]), "--out", str(out))
    assert refused.returncode == 2 and "exists" in refused.stderr and "--force" in refused.stderr
    assert out.read_text() == "my labels\n"
    forced = run("list", str(folders["two"]), "--out", str(out), "--force")
    assert forced.returncode == 0, forced.stderr
    assert rows(out) == []  # the default settings find nothing in a serial map whose release is not known


def _judged(out: Path, tmp_path: Path, labels: list[str]) -> Path:
    table = rows(out)
    for row, label in zip(table, labels, strict=True):
        row["label"], row["reason"] = label, f"judged {label} from the code"
    return write(tmp_path / "judged.csv", table)


def test_score_gives_strict_and_lenient_precision_with_its_interval_and_the_bar(listed, tmp_path):
    out, _, _ = listed
    order = [r["run"] for r in rows(out)]
    labels = ["true" if run == "default" else "debatable" for run in order]
    labels[order.index("default")] = "TRUE"  # labels are read in any case
    done = run("score", str(_judged(out, tmp_path, labels)))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "default settings: 2 finding(s)" in lines
    assert any(line.split()[:8] == ["all", "2", "2", "0", "0", "100.0", "%", "100.0"] for line in lines), lines
    assert any(line.startswith("SRC102") and line.split()[1:5] == ["1", "0", "1", "0"] for line in lines), lines
    assert "default findings per repository: someone/eager-steps 2" in lines
    assert lines[-1] == "strict default precision 100.0 % (2 of 2) reaches the bar of 80 %; lenient 100.0 %"
    assert "34.2 % – 100.0 %" in done.stdout  # Wilson's 95 % interval of 2 of 2


def test_score_below_the_bar_says_so(listed, tmp_path):
    out, _, _ = listed
    order = [r["run"] for r in rows(out)]
    labels = ["false" if run == "default" else "true" for run in order]
    labels[order.index("default")] = "debatable"
    done = run("score", str(_judged(out, tmp_path, labels)), "--bar", "50")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == ("strict default precision 0.0 % (0 of 2) does not reach the bar of 50 %; "
                                            "lenient 50.0 %")


def test_score_of_rows_still_unjudged_lists_them_and_exits_1(listed):
    out, _, _ = listed
    done = run("score", str(out))
    assert done.returncode == 1
    assert "4 row(s) unjudged" in done.stderr
    assert "line 2: someone/eager-steps" in done.stderr
    assert "strict default precision" not in done.stdout


@pytest.mark.parametrize(("label", "reason", "message"), [
    ("maybe", "unsure", "label 'maybe' is not one of true, debatable, false"),
    ("true", "  ", "a label without its reason"),
])
def test_a_bad_label_is_a_usage_error_naming_its_line(listed, tmp_path, label, reason, message):
    out, _, _ = listed
    table = rows(out)
    table[1]["label"], table[1]["reason"] = label, reason
    done = run("score", str(write(tmp_path / "bad.csv", table)))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"bad.csv:3: {message}" in done.stderr


def test_usage_errors_are_messages_and_exit_2(listed, tmp_path):
    out, folders, _ = listed
    (tmp_path / "other.csv").write_text("a,b\n1,2\n")
    cases = [
        (["list", str(tmp_path / "absent"), "--out", str(tmp_path / "x.csv")], "not a folder"),
        (["list", str(folders["one"]), str(folders["one"]), "--out", str(tmp_path / "x.csv")],
         "two checkouts of someone/eager-steps"),
        (["list", str(folders["two"]), "--out", str(tmp_path / "nowhere" / "x.csv")], "no such folder for --out"),
        (["list", str(folders["two"]), "--out", str(tmp_path / "x.csv"), "--timeout", "0"], "--timeout 0"),
        (["list", str(folders["two"]), "--out", str(tmp_path / "x.csv"), "--tfdoctor", "/bin/false"],
         "did not answer as tfdoctor"),
        (["list", str(folders["two"]), "--out", str(tmp_path / "x.csv"), "--tfdoctor", str(tmp_path / "absent")],
         "cannot run"),
        (["score", str(tmp_path / "absent.csv")], "cannot read it as a CSV"),
        (["score", str(tmp_path / "other.csv")], "no column repo, path, line, rule, label, reason"),
        (["score", str(out), "--bar", "120"], "--bar 120"),
    ]
    for args, message in cases:
        done = run(*args)
        assert (done.returncode, "Traceback" in done.stderr) == (2, False), (args, done.stderr)
        assert message in done.stderr, (args, done.stderr)
    assert not (tmp_path / "x.csv").exists()


def test_a_lint_that_hangs_is_ended_and_what_was_listed_is_kept(listed, tmp_path):
    """A checkout whose lint does not end by --timeout is named, exit 1; the other checkouts' rows are written."""
    _, folders, _ = listed
    slow = tmp_path / "slow-tfdoctor"
    slow.write_text(f"#!{sys.executable}\nimport sys, time, runpy\n"
                    "if 'lint' in sys.argv and 'slow' in sys.argv[-1]:\n    time.sleep(60)\n"
                    "sys.argv[0] = 'tfdoctor'\nrunpy.run_module('tfdoctor', run_name='__main__')\n")
    slow.chmod(0o755)
    hanging = checkout(tmp_path / "slow", {"train.py": EAGER_STEP})
    out = tmp_path / "x.csv"
    done = run("list", str(folders["one"]), str(hanging), "--out", str(out), "--tfdoctor", str(slow), "--timeout", "20")
    assert done.returncode == 1, done.stderr
    assert "not fully linted: slow: still running after 20 s" in done.stderr
    assert {r["repo"] for r in rows(out)} == {"someone/eager-steps"}


def test_control_characters_in_a_folder_name_are_shown_not_obeyed(tmp_path):
    folder = checkout(tmp_path / "evil\x1b]52;c;aGk=\x07", {"train.py": EAGER_STEP})
    done = run("list", str(folder), str(folder), "--out", str(tmp_path / "x.csv"))
    assert done.returncode == 2
    assert "\x1b" not in done.stderr and "\x07" not in done.stderr
    assert "evil\\x1b]52;c;aGk=\\x07" in done.stderr


def test_wilson_interval():
    low, high = lint_outside.wilson(8, 10)
    assert (round(low, 4), round(high, 4)) == (0.4902, 0.9433)
    assert lint_outside.wilson(0, 0) is None
    assert lint_outside.wilson(0, 5)[0] == 0.0 and lint_outside.wilson(5, 5)[1] == 1.0


@pytest.mark.parametrize(("remote", "name"), [
    ("https://github.com/owner/name.git", "owner/name"),
    ("git@github.com:owner/name.git", "owner/name"),
    ("https://gitlab.example.org/group/sub/name/", "sub/name"),
    ("ssh://git@example.org:2222/owner/name.git", "owner/name"),
    # a clone of a local copy: its path names no owner, so the checkout is named by its folder
    ("/srv/mirrors/owner+name/repo", "clone"),
    ("file:///srv/mirrors/name.git", "clone"),
    ("../elsewhere/name", "clone"),
])
def test_a_checkout_is_named_by_its_origin(tmp_path, remote, name):
    folder = checkout(tmp_path / "clone", {"a.py": "x = 1\n"}, remote=remote)
    assert lint_outside.repository_name(folder) == name


def test_the_interval_docs_lint_md_quotes_is_the_one_score_prints():
    doc = (REPO / "docs" / "lint.md").read_text()
    low, high = lint_outside.wilson(24, 30)
    assert f"on 30 findings, 80 % strict is {100 * low:.0f}–{100 * high:.0f} %" in doc


# A tfdoctor that starts a worker (as `lint` with several jobs does) and then hangs: the worker writes its pid.
HANGING_WITH_A_WORKER = """\
import os, subprocess, sys, time, runpy
if "lint" in sys.argv:
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    with open(os.environ["WORKER_PID"] + ".tmp", "w") as f:
        f.write(str(worker.pid))
    os.replace(os.environ["WORKER_PID"] + ".tmp", os.environ["WORKER_PID"])
    time.sleep(120)
sys.argv[0] = "tfdoctor"
runpy.run_module("tfdoctor", run_name="__main__")
"""


def _gone(pid: int, within: float = 10.0) -> bool:
    import time

    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("ending", ["timeout", "SIGTERM", "SIGHUP"])
def test_a_lint_ended_takes_every_process_it_started_with_it(tmp_path, ending):
    """At --timeout, or when lint_outside itself is ended, the lint's whole process group is killed: a worker it
    started does not outlive it (reaped by init, it would keep a CPU busy for the rest of its sleep)."""
    import signal
    import time

    fake = tmp_path / "tfdoctor-with-worker"
    fake.write_text(f"#!{sys.executable}\n" + HANGING_WITH_A_WORKER)
    fake.chmod(0o755)
    pid_file = tmp_path / "worker.pid"
    folder = checkout(tmp_path / "repo", {"train.py": EAGER_STEP})
    args = [sys.executable, str(SCRIPT), "list", str(folder), "--out", str(tmp_path / "x.csv"), "--tfdoctor",
            str(fake), "--timeout", "8" if ending == "timeout" else "100"]
    process = subprocess.Popen(args, env={**os.environ, "WORKER_PID": str(pid_file)}, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    worker = int(pid_file.read_text())
    if ending != "timeout":
        process.send_signal(getattr(signal, ending))
    _, err = process.communicate(timeout=60)
    assert _gone(worker), f"worker {worker} outlived lint_outside"
    if ending == "timeout":
        assert process.returncode == 1 and "still running after 8 s" in err
    else:
        assert process.returncode == 128 + getattr(signal, ending) and "Traceback" not in err


def test_a_report_over_the_bound_is_not_read(tmp_path, monkeypatch, listed):
    _, folders, _ = listed
    monkeypatch.setattr(lint_outside, "REPORT_LIMIT", 100)
    empty = tmp_path / "empty"
    empty.mkdir()
    report, problem = lint_outside.lint([sys.executable, "-m", "tfdoctor"], folders["one"], False, 300, empty)
    assert report is None and problem.startswith("a report of ") and "over the 100 read back" in problem


def test_a_judged_csv_over_the_bound_is_refused(tmp_path, monkeypatch, capsys):
    table = tmp_path / "big.csv"
    table.write_text("repo,path,line,rule,label,reason\n" + "o/r,a.py,1,SRC103,true,why\n" * 10)
    monkeypatch.setattr(lint_outside, "CSV_LIMIT", 64)
    assert lint_outside.main(["score", str(table)]) == 2
    assert "over the 64 a judged CSV may hold" in capsys.readouterr().err


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600)])
def test_the_csv_is_written_with_the_umask(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        lint_outside._write_csv(tmp_path / "x.csv", [], force=False)
    finally:
        os.umask(old)
    assert (tmp_path / "x.csv").stat().st_mode & 0o777 == mode
    assert (tmp_path / "x.csv").read_text().startswith("repo,commit,run,path")


def test_force_never_writes_through_a_link_out_of_its_folder(tmp_path, listed):
    _, folders, _ = listed
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "precious.txt").write_text("keep me\n")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "x.csv").symlink_to(elsewhere / "precious.txt")
    done = run("list", str(folders["two"]), "--out", str(tmp_path / "out" / "x.csv"), "--force")
    assert done.returncode == 2 and "outside its folder" in done.stderr and "Traceback" not in done.stderr
    assert (elsewhere / "precious.txt").read_text() == "keep me\n"


def test_a_closed_standard_output_is_exit_4_not_a_traceback(listed):
    out, _, _ = listed
    done = subprocess.run(["bash", "-c", f'"{sys.executable}" "{SCRIPT}" score "{out}" >&-'], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 4 and "Traceback" not in done.stderr
