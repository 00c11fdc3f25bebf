"""What reaches the person (issue 38): tfdoctor/terminal.py and every command that prints through it.

Hostile values (OSC 52 writes the clipboard, OSC 0 the window title, CSI 2J clears the screen, C1 CSI,
a bidi override, rich markup, a lone surrogate) in every printed field; real terminals where it matters
(a pseudo-terminal 80 columns wide, a real ISO-8859-1 locale made with localedef, a closed stdout, a full
device); and the hints tfdoctor prints, run.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.command_line import REPO, assert_no_traceback, run_cli
from support.terminals import LocaleUnavailable, iso_8859_1_locale, long_lines, obeyed, run_in_pty

from tfdoctor import terminal

SLURM_NODE = REPO / "tests" / "snapshots" / "core" / "slurm-node-bad-threads.json"  # THR001, THR105: errors
BF16_VM = REPO / "tests" / "snapshots" / "cpu-only-vm-tensorflow-2.21.json"  # MP105 (info): a Python fix
LINT_BAD = REPO / "tests" / "lint_fixtures" / "keras_fit_bad.py"

HOSTILE = ("4\x1b]52;c;aGVsbG8=\x07\x1b]0;owned\x07\x1b[2J\x9b31m\u202egnp.exe"
           "[bold red]not markup[/] [link=https://x.example]y[/link]\udcff")
RAW = ("\x1b", "\x07", "\x9b", "\u202e", "\udcff")


def hostile_facts(tmp_path: Path, source: Path = SLURM_NODE, name: str = "hostile.json") -> Path:
    """`source` with a hostile OMP_NUM_THREADS (THR001 quotes it in its message and evidence), a hostile
    KMP_AFFINITY and host name."""
    data = json.loads(source.read_text())
    data["sections"]["env"]["variables"]["OMP_NUM_THREADS"] = HOSTILE
    data["sections"]["env"]["variables"]["KMP_AFFINITY"] = "granularity=fine,proclist=[0],explicit\x1b[8m"
    data["meta"]["hostname"] = "node\x1b]0;title\x07017"
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")  # json.dumps escapes the surrogate: a valid file
    return path


def assert_shown_not_obeyed(text: str) -> None:
    assert not [raw for raw in RAW if raw in text], repr(text[:300])
    assert not [ch for ch in text if ch < " " and ch not in "\n\t"]


# -- 1. control characters are shown, never obeyed -----------------------------------------------------

def test_safe_shows_every_control_character_as_an_escape():
    assert terminal.safe("a\x1b]52;c;eA==\x07b") == "a\\x1b]52;c;eA==\\x07b"
    assert terminal.safe("\x9b2J\x7f\u202e\u2066\udcff") == "\\x9b2J\\x7f\\u202e\\u2066\\udcff"
    assert terminal.safe("line\n\tindented é ✗") == "line\n\tindented é ✗"  # newline, tab, letters, glyphs kept
    assert terminal.safe_line("a\nb\tc\r") == "a\\nb\\tc\\x0d"
    assert terminal.safe(terminal.safe(HOSTILE)) == terminal.safe(HOSTILE)  # once is enough, twice the same
    assert terminal.markup_safe("[bold]x") == "\\[bold]x"


def test_json_keeps_exact_values_with_c1_escaped():
    text = terminal.json_safe(json.dumps({"v": "a\x9bb\x7fc\x1b"}, ensure_ascii=False))
    assert "\x9b" not in text and "\x7f" not in text and "\x1b" not in text
    assert json.loads(text) == {"v": "a\x9bb\x7fc\x1b"}


def test_linear_on_a_long_hostile_value():
    from support.growth import growth_ratio

    value = "\x1b[" * 500_000 + "\x9b" * 500_000
    shown = terminal.safe(value)
    assert "\x1b" not in shown and len(shown) == 4_500_000
    # Growth, not a wall-clock bound (which a busy machine flips): about 4 when linear, 16 when quadratic.
    assert growth_ratio(lambda n: "\x1b[" * n + "\x9b" * n, terminal.safe, 50_000) < 8


@pytest.mark.parametrize("args", [["check"], ["check", "-v"], ["check", "--quiet"]], ids=" ".join)
def test_check_shows_hostile_values_in_a_pipe(tmp_path, args):
    done = run_cli([*args, "--facts", str(hostile_facts(tmp_path))])
    assert done.returncode == 1
    assert_shown_not_obeyed(done.stdout + done.stderr)
    assert "OMP_NUM_THREADS='4\\x1b]52;c;aGVsbG8=\\x07" in done.stdout
    assert "[bold red]not markup[/]" in done.stdout


def test_quiet_lines_stay_one_line_each(tmp_path):
    data = json.loads(SLURM_NODE.read_text())
    data["sections"]["env"]["variables"]["OMP_NUM_THREADS"] = "x\ntfdoctor: error: FAKE001 forged line"
    path = tmp_path / "newline.json"
    path.write_text(json.dumps(data))
    done = run_cli(["check", "--quiet", "--facts", str(path)])
    lines = done.stdout.splitlines()
    assert len(lines) == 2 and not any(line.startswith("tfdoctor: error: FAKE001") for line in lines)
    assert "x\\ntfdoctor: error: FAKE001 forged line" in lines[0]


def test_a_python_childs_stderr_is_shown_not_obeyed(tmp_path):
    child = tmp_path / "python"
    child.write_text("#!/bin/sh\nprintf 'boom \\033]52;c;aGk=\\007\\033[2J [bold]x' >&2\nexit 3\n")
    child.chmod(0o755)
    done = run_cli(["check", "-v", "--python", str(child), "--select", "PKG"], cwd=tmp_path)
    assert_shown_not_obeyed(done.stdout + done.stderr)
    assert "failed the snapshot (exit 3): boom \\x1b]52;c;aGk=\\x07\\x1b[2J [bold]x" in done.stdout


def test_check_json_keeps_the_exact_value(tmp_path):
    done = run_cli(["check", "--format", "json", "--facts", str(hostile_facts(tmp_path))])
    assert not [raw for raw in ("\x1b", "\x07", "\x9b") if raw in done.stdout]
    document = json.loads(done.stdout)
    thr001 = next(r for r in document["results"] if r["code"] == "THR001")
    assert thr001["findings"][0]["evidence"]["env.OMP_NUM_THREADS"] == HOSTILE


def test_compare_shows_hostile_values_and_names(tmp_path):
    done = run_cli(["compare", "--check", str(SLURM_NODE), str(hostile_facts(tmp_path))], env={"COLUMNS": "300"})
    assert_no_traceback(done)
    assert done.returncode == 1
    assert_shown_not_obeyed(done.stdout + done.stderr)
    assert "node\\x1b]0;title\\x07017" in done.stdout
    assert "[bold red]not markup[/]" in done.stdout


def test_compare_of_a_facts_file_holding_a_lone_surrogate(tmp_path):
    path = tmp_path / "surrogate.json"
    path.write_text(SLURM_NODE.read_text().replace('"abc"', '"4\\udcff"'), encoding="utf-8")
    for args in (["compare", "--check", str(SLURM_NODE), str(path)], ["check", "--facts", str(path)],
                 ["check", "--facts", str(path), "-v", "--format", "json"]):
        done = run_cli(args)
        assert_no_traceback(done)
        assert done.returncode == 1, (args, done.stderr)
        assert "internal error" not in done.stderr
    assert json.loads(done.stdout)  # the surrogate written as a JSON escape: still JSON


def test_explain_log_shows_hostile_lines(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("W dso_loader.cc:60] Could not load dynamic library 'libcudart.so.11.0'; dlerror: "
                   "\x1b]52;c;aGk=\x07\x1b[2J\x9b1m\n"
                   "ERROR: worker died \x1b]0;x\x07 Error: boom\x1b[31m\n", encoding="utf-8")
    done = run_cli(["explain", "--log", str(log), "--facts", str(SLURM_NODE)])
    assert_no_traceback(done)
    assert_shown_not_obeyed(done.stdout + done.stderr)
    assert "\\x1b]52;c;aGk=\\x07" in done.stdout


def test_explain_log_does_not_call_a_quoting_thread_the_source_of_the_wording(tmp_path):
    from tfdoctor.logs.render import source_line

    assert source_line("https://github.com/bmaltais/kohya_ss/issues/3320") == (
        "quoted as printed in: https://github.com/bmaltais/kohya_ss/issues/3320")
    assert source_line("https://github.com/tensorflow/tensorflow/blob/v2.9.0/x.cc").startswith(
        "wording from the code that prints it: ")
    log = tmp_path / "train.log"
    log.write_text("E0000 00:00:1730000000.000000 12345 cuda_dnn.cc:8310] Unable to register cuDNN factory: "
                   "Attempting to register factory for plugin cuDNN when one has already been registered\n")
    done = run_cli(["explain", "--log", str(log), "--facts", str(SLURM_NODE)])
    assert "source of this wording" not in done.stdout
    assert "quoted as printed in: https://github.com/tensorflow/tensorflow/issues/62075" in done.stdout


def test_lint_shows_a_hostile_file_name(tmp_path):
    hostile = tmp_path / "train\x1b]0;owned\x07\x1b[2J.py"
    hostile.write_text(LINT_BAD.read_text())
    done = run_cli(["lint", "--select", "SRC113", str(tmp_path)])  # SRC113 is a preview rule
    assert done.returncode in (0, 1)
    assert_shown_not_obeyed(done.stdout + done.stderr)
    assert "train\\x1b]0;owned\\x07\\x1b[2J.py:13:1: SRC113" in done.stdout


def test_the_html_page_shows_hostile_values_as_text():
    from tfdoctor.report.html.page import copyable, text, value

    for html in (text(HOSTILE), value("env.OMP_NUM_THREADS", HOSTILE), copyable(f"export X={HOSTILE}")):
        assert_shown_not_obeyed(html)
        assert "\\x1b]52;c;" in html


def test_tune_progress_shows_a_failed_trials_error_without_markup(capsys):
    from tfdoctor.tune.progress import TuneProgress
    from tfdoctor.tune.results import TrialRecord

    fields = TrialRecord.__dataclass_fields__ if hasattr(TrialRecord, "__dataclass_fields__") else {}
    if "error" not in fields:
        pytest.skip("TrialRecord has no error field to carry")
    record = TrialRecord(**{**{name: None for name in fields}, "number": 3, "phase": "search", "role": "",
                            "status": "failed", "error": "boom [bold]x\x1b]52;c;aGk=\x07", "params": {},
                            "seconds": 1.0, "value": None})
    with TuneProgress(budget=5, time_limit=None, done=0, maximize=False) as progress:
        progress.update(record, None)
    err = capsys.readouterr().err
    assert "boom [bold]x\\x1b]52;c;aGk=\\x07" in err
    assert_shown_not_obeyed(err)


# -- 2. output fits the terminal -----------------------------------------------------------------------

def test_fit_breaks_at_spaces_under_the_indent():
    line = "    evidence: " + " ".join(["word"] * 40)
    fitted = terminal.fit(line, 40).split("\n")
    assert all(len(part) <= 40 for part in fitted) and len(fitted) > 3
    assert fitted[1].startswith("      word")  # the line's indent plus two
    assert terminal.fit("x" * 100, 40).split("\n") == ["x" * 40, "  " + "x" * 38, "  " + "x" * 22]
    assert terminal.fit("\x1b[1m" + "y " * 60, 40) == "\x1b[1m" + "y " * 60  # laid out by rich already
    assert terminal.fit("a b", None) == "a b"


PTY_COMMANDS = {
    "check": (["check", "--facts", "HOSTILE"], (1,)),
    "check -v": (["check", "-v", "--facts", "HOSTILE"], (1,)),
    "check --quiet": (["check", "--quiet", "--facts", "HOSTILE"], (1,)),
    "check --list-checks": (["check", "--list-checks"], (0,)),
    "compare": (["compare", "--check", str(SLURM_NODE), "HOSTILE"], (1,)),
    "lint": (["lint", "--show-fixes", str(LINT_BAD)], (0, 1)),
    "lint --list-rules": (["lint", "--list-rules"], (0,)),
    "explain": (["explain", "THR101"], (0,)),
    "explain --log": (["explain", "--log", "LOG", "--facts", str(SLURM_NODE)], (0, 1)),
    "fix": (["fix", "--print", "--facts", "HOSTILE"], (0,)),
}


@pytest.mark.parametrize("name", list(PTY_COMMANDS))
def test_no_line_is_wider_than_an_80_column_terminal(tmp_path, name):
    args, codes = PTY_COMMANDS[name]
    log = tmp_path / "train.log"
    log.write_text("2024-06-19 16:06:44.996032: W tensorflow/stream_executor/platform/default/dso_loader.cc:60] "
                   "Could not load dynamic library 'libcusolver.so.11'; dlerror: libnvJitLink.so.12: cannot open "
                   "shared object file: No such file or directory\n")
    facts = hostile_facts(tmp_path)
    args = [str(facts) if a == "HOSTILE" else str(log) if a == "LOG" else a for a in args]
    if name == "lint" and "--show-fixes" not in run_cli(["lint", "--help"]).stdout:
        args.remove("--show-fixes")
    code, shown = run_in_pty(args, columns=80)
    assert code in codes, shown[-2000:]
    # The script is for eval and the --quiet lines for grep: each kept whole, one line (at most 200 characters).
    if name not in ("fix", "check --quiet"):
        assert long_lines(shown, 80) == []
    assert obeyed(shown) == []
    assert "Traceback" not in shown


def test_the_quiet_lines_keep_to_the_point():
    from tfdoctor.report.text import QUIET_LIMIT, _to_the_point

    line = "tfdoctor: warning: THR101 thread-pools: " + "a long explanation " * 30
    short = _to_the_point(line)
    assert len(short) <= QUIET_LIMIT and short.endswith(" …") and short.startswith("tfdoctor: warning: THR101 ")


# -- 3. no internal error from the process's own situation ----------------------------------------------

def _shell(command: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=120, cwd=REPO,
                          env={**os.environ, "PY": sys.executable, **(env or {})}, check=False)


@pytest.mark.parametrize("args", [["check", "--facts", str(SLURM_NODE)], ["check", "--list-checks"],
                                  ["explain", "THR101"], ["collect", "--timeout", "2"]], ids=" ".join)
def test_a_closed_stdout_exits_4_with_a_message_on_stderr(args):
    done = _shell(f'"$PY" -m tfdoctor {" ".join(args)} >&-')
    assert (done.returncode, done.stderr) == (4, "tfdoctor: cannot write to standard output: it is closed\n")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
def test_a_full_device_exits_4_with_a_message_on_stderr():
    done = _shell(f'"$PY" -m tfdoctor check --facts {SLURM_NODE} -v >/dev/full')
    assert (done.returncode, done.stderr) == (4, "tfdoctor: cannot write to standard output: No space left on "
                                                 "device\n")
    both = _shell(f'"$PY" -m tfdoctor check --facts {SLURM_NODE} >/dev/full 2>&-')
    assert (both.returncode, both.stdout, both.stderr) == (4, "", "")


def test_a_closed_stderr_costs_nothing_when_nothing_goes_there():
    done = _shell(f'"$PY" -m tfdoctor check --quiet --facts {SLURM_NODE} 2>&-')
    assert done.returncode == 1 and done.stdout.startswith("tfdoctor: error: THR001 ")


def test_an_iso_8859_1_locale(tmp_path):
    try:
        env = iso_8859_1_locale(tmp_path)
    except LocaleUnavailable as exc:
        pytest.skip(str(exc))
    for args in (["check", "-v", "--facts", str(BF16_VM)], ["check", "--facts", str(hostile_facts(tmp_path))],
                 ["explain", "MP105"], ["check", "--list-checks"]):
        done = subprocess.run([sys.executable, "-m", "tfdoctor", *args], capture_output=True, cwd=REPO, timeout=120,
                              env={**os.environ, **env}, check=False)
        out = done.stdout.decode("iso-8859-1")
        assert done.returncode in (0, 1), (args, done.stderr)
        assert "internal error" not in done.stderr.decode("iso-8859-1")
        assert "\x1b" not in out
    verbose = subprocess.run([sys.executable, "-m", "tfdoctor", "check", "-v", "--facts", str(BF16_VM)],
                             capture_output=True, cwd=REPO, timeout=120, env={**os.environ, **env}, check=False)
    assert "\n+ THR101 " in verbose.stdout.decode("iso-8859-1")  # ✓ in ASCII


def test_encodable_falls_back_to_ascii_glyphs():
    assert terminal.encodable("✗ ✓ ‼ … é", "iso-8859-1") == "x + !! ... é"
    assert terminal.encodable("✗ 日本", "ascii") == "x \\u65e5\\u672c"
    assert terminal.encodable("plain", "ascii") == "plain"


# -- 4. hints that work as printed -----------------------------------------------------------------------

def test_an_unsafe_python_fix_says_where_it_goes(tmp_path):
    plain = run_cli(["fix", "--print", "--facts", str(BF16_VM)])
    assert "MP105 not applied (unsafe in-process fix: add --unsafe-fixes --write-python FILE to write it)" in \
        plain.stderr
    unsafe = run_cli(["fix", "--print", "--unsafe-fixes", "--facts", str(BF16_VM)])
    assert "MP105 not applied (an in-process fix, Python: add --write-python FILE" in unsafe.stderr
    written = run_cli(["fix", "--unsafe-fixes", "--write-python", str(tmp_path / "fixes.py"), "--facts",
                       str(BF16_VM)])
    assert written.returncode == 0 and "MP105 not applied" not in written.stderr
    assert "mixed_bfloat16" in (tmp_path / "fixes.py").read_text()
    compile((tmp_path / "fixes.py").read_text(), "fixes.py", "exec")


def test_a_script_written_under_another_name_says_how_to_source_it(tmp_path):
    done = run_cli(["fix", "--write", "env2.sh", "--facts", str(SLURM_NODE)], cwd=tmp_path)
    assert done.returncode == 0
    assert "# Source it (. ./env2.sh); sourcing it again changes nothing." in (tmp_path / "env2.sh").read_text()
    hint = done.stderr.split("apply it: ", 1)[1].split("\n", 1)[0]
    assert hint == ". ./env2.sh"
    sourced = subprocess.run(["sh", "-c", f"{hint} && echo \"$OMP_NUM_THREADS\""], cwd=tmp_path, capture_output=True,
                             text=True, timeout=30, check=False)
    assert (sourced.returncode, sourced.stdout) == (0, "4\n")
    fish = run_cli(["fix", "--write", "sub dir.fish", "--shell", "fish", "--facts", str(SLURM_NODE)], cwd=tmp_path)
    assert "apply it: source 'sub dir.fish'" in fish.stderr


def test_install_hints_name_where_tfdoctor_came_from():
    from tfdoctor.installed import install_extra_command, requirement

    assert requirement("tune", {"url": "file:///src/tf%20doctor", "dir_info": {"editable": True}}) == (
        ["-e"], "/src/tf doctor[tune]")
    assert requirement("report", {"url": "file:///src/tfdoctor", "dir_info": {}}) == ([], "/src/tfdoctor[report]")
    from_git = {"url": "https://github.com/o/tfdoctor", "vcs_info": {"vcs": "git", "commit_id": "ab"}}
    assert requirement("tune", from_git) == ([], "tfdoctor[tune] @ git+https://github.com/o/tfdoctor@ab")
    assert requirement("tune", None) == ([], "tfdoctor[tune]")  # from an index: the name
    command = install_extra_command("tune")
    assert "pip install 'tfdoctor[tune]'" not in command and command.startswith(f"{sys.executable} -m pip install ")
    # This test environment is the checkout installed editable: the hint names the checkout, whose pyproject
    # declares the extra.
    assert f"-e '{REPO}[tune]'" in command
    import tomllib

    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert {"tune", "report"} <= set(extras)


def test_profile_says_how_to_view_the_trace_with_what_is_installed():
    from tfdoctor.profile.render import viewer_line

    assert viewer_line("/tmp/p", "/usr/bin/tensorboard", True) == (
        "  view it         tensorboard --logdir /tmp/p  (Profile tab)")
    missing = viewer_line("/tmp/p q", None, False)
    assert "python -m pip install tensorboard tensorboard-plugin-profile" in missing
    assert "tensorboard --logdir '/tmp/p q'" in missing
    assert "tensorboard-plugin-profile" in (REPO / "docs" / "profile.md").read_text()


def test_manual_steps_are_labelled_by_who_can_do_them():
    from tfdoctor.fixes.plan import who_does_it
    from tfdoctor.model import AdminFix

    assert who_does_it(AdminFix("Install TensorFlow", ("/venv/bin/python -m pip install tensorflow",))) == (
        "to do yourself, in your environment")
    assert who_does_it(AdminFix("Load the driver", ("modprobe nvidia",))) == "needs an administrator"
    assert who_does_it(AdminFix("x", ("sudo python3 -m pip install tensorflow",))) == "needs an administrator"


def test_the_commands_check_prints_run(tmp_path):
    """The footer's commands and every shell fix line `check -v` shows, run as printed."""
    shown = run_cli(["check", "-v", "--facts", str(SLURM_NODE)]).stdout
    lines = shown.splitlines()
    fixes = [line.strip() for i, line in enumerate(lines) if line.startswith("      ")
             and lines[i - 1].startswith("    fix (safe)")]
    assert "export OMP_NUM_THREADS='4'" in fixes
    done = subprocess.run(["sh", "-euc", "\n".join(fixes) + '\necho "$OMP_NUM_THREADS"'], capture_output=True,
                          text=True, timeout=30, check=False)
    assert (done.returncode, done.stdout) == (0, "4\n")
    footer = run_cli(["check", "--facts", str(SLURM_NODE)]).stdout.splitlines()[-1]
    assert footer == "Run `tfdoctor check -v` for every check, `tfdoctor explain CODE` for one."
    for command in (["check", "-v", "--facts", str(SLURM_NODE)], ["explain", "THR001"]):
        assert run_cli(command).returncode in (0, 1)


def test_python_bare_name_is_found_on_path(tmp_path):
    done = run_cli(["check", "--python", "python3", "--select", "PKG001", "--format", "json"], cwd=tmp_path)
    assert done.returncode in (0, 1), done.stderr
    assert "no such file" not in done.stderr


# -- 5. counts and figures that say what was checked ------------------------------------------------------

def test_without_tensorflow_its_install_checks_are_not_applicable(tmp_path):
    venv = tmp_path / "venv"
    made = subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], capture_output=True,
                          timeout=120, check=False)
    if made.returncode:
        pytest.skip(f"python -m venv failed: {made.stderr.decode()[-200:]}")
    done = run_cli(["check", "--python", str(venv / "bin" / "python"), "--format", "json", "--select", "PKG,CPU001"],
                   cwd=tmp_path)
    results = {r["code"]: r for r in json.loads(done.stdout)["results"]}
    assert results["PKG001"]["status"] == "failed"
    assert results["PKG005"]["status"] == "not-applicable"
    assert results["PKG005"]["reason"].startswith("TensorFlow is not installed")
    assert results["CPU001"]["status"] == "not-applicable"
    assert not [code for code, r in results.items() if r["status"] == "passed" and code != "PKG013"]


def test_profile_labels_median_and_mean_and_notes_a_wide_spread():
    from tfdoctor.profile.render import render_profile

    class NoFindings:
        def findings(self):
            return []

    section = {"ok": True, "workload": "cnn", "tf_version": "2.21.0", "devices": ["CPU:0"],
               "steps": {"median_seconds": 0.01, "count": 20, "spread": 1.48},
               "breakdown": {"step_ms": 12.0, "categories_ms": {"compute": 10.0, "input": 2.0}},
               "input_share": 0.1, "host_op_seconds": 0.1, "device_seconds": 0.0, "policy": "float32"}
    text = render_profile(section, NoFindings())
    assert "step time       median 10.0 ms" in text
    assert "step breakdown  mean step 12.00 ms = " in text
    assert "the steps vary widely (spread above 50%)" in text
    section["steps"]["spread"] = 0.2
    assert "vary widely" not in render_profile(section, NoFindings())


def test_profile_progress_without_a_terminal_prints_lines_at_a_slow_rate(capsys):
    import time

    from tfdoctor.profile.progress import progress_display

    with progress_display(True, interval=0.2) as progress:
        progress("running the cnn workload")
        time.sleep(0.5)
        progress("reading the profile")
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "tfdoctor profile: running the cnn workload"
    assert lines[1].startswith("tfdoctor profile: still running the cnn workload (")
    assert lines[-1] == "tfdoctor profile: reading the profile"
    assert 3 <= len(lines) <= 5


def test_explain_mp105_does_not_claim_a_figure_measured_here():
    done = run_cli(["explain", "MP105"])
    assert "measured here" not in done.stdout
    assert "reference CPU" in done.stdout


# -- 7. fix --fail-on, and a hook form that fails loudly ---------------------------------------------------

def test_fix_fail_on_exits_1_when_a_finding_is_left_unfixed(tmp_path):
    left = run_cli(["fix", "--print", "--quiet", "--fail-on", "info", "--facts", str(BF16_VM)])
    assert left.returncode == 1
    assert left.stdout.endswith("# tfdoctor: left unfixed at or above --fail-on info: MP105 (tfdoctor check says "
                                "why)\nfalse\n")
    assert "tfdoctor: 1 finding(s) at or above --fail-on info left unfixed: MP105" in left.stderr
    fixed = run_cli(["fix", "--unsafe-fixes", "--write-python", str(tmp_path / "f.py"), "--print", "--fail-on",
                     "info", "--facts", str(BF16_VM)])
    assert fixed.returncode == 0 and "false" not in fixed.stdout.splitlines()
    errors = run_cli(["fix", "--print", "--fail-on", "error", "--facts", str(SLURM_NODE)])
    assert errors.returncode == 0  # THR001 and THR105 have safe environment fixes: both in the script
    assert run_cli(["fix", "--print", "--facts", str(BF16_VM)]).returncode == 0  # without --fail-on: as before


def test_the_documented_hook_form_fails_under_set_e():
    hook = f'set -euo pipefail; eval "$("$PY" -m tfdoctor fix --print --quiet --fail-on info --facts {BF16_VM})"; ' \
           'echo reached'
    done = _shell(hook)
    assert done.returncode == 1 and "reached" not in done.stdout
    assert "left unfixed: MP105" in done.stderr
    passing = _shell(hook.replace("--fail-on info", "--fail-on error"))
    assert (passing.returncode, passing.stdout) == (0, "reached\n")
    applied = _shell(f'set -euo pipefail; eval "$("$PY" -m tfdoctor fix --print --quiet --fail-on error --facts '
                     f'{SLURM_NODE})"; echo "$OMP_NUM_THREADS"')
    assert (applied.returncode, applied.stdout) == (0, "4\n")


# -- 8. the hook's lines carry the host name in a job of several nodes (issue 37 item 9) ------------------

def test_nodes_of_a_job():
    from tfdoctor.derive.nodes import spans_several_nodes

    def env(values):
        return values.get

    assert not spans_several_nodes(env({}))
    assert not spans_several_nodes(env({"SLURM_NNODES": "1", "SLURM_JOB_NUM_NODES": "1"}))
    assert spans_several_nodes(env({"SLURM_NNODES": "2"}))
    assert spans_several_nodes(env({"SLURM_JOB_NUM_NODES": "16"}))
    assert spans_several_nodes(env({"OMPI_COMM_WORLD_SIZE": "8", "OMPI_COMM_WORLD_LOCAL_SIZE": "4"}))
    assert not spans_several_nodes(env({"OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_SIZE": "4"}))
    assert spans_several_nodes(env({"PMI_SIZE": "4", "MPI_LOCALNRANKS": "2"}))
    assert not spans_several_nodes(env({"SLURM_NNODES": "two", "PMI_SIZE": "4"}))


@pytest.mark.parametrize(("variables", "with_host"), [
    ({"SLURM_JOB_NUM_NODES": "2"}, True), ({"SLURM_NNODES": "4"}, True),
    ({"OMPI_COMM_WORLD_SIZE": "8", "OMPI_COMM_WORLD_LOCAL_SIZE": "4"}, True),
    ({"SLURM_NNODES": "1"}, False), ({}, False)])
def test_quiet_lines_name_the_node_in_a_multi_node_job(tmp_path, variables, with_host):
    data = json.loads(SLURM_NODE.read_text())
    data["sections"]["env"]["variables"].update(variables)
    path = tmp_path / "job.json"
    path.write_text(json.dumps(data))
    lines = run_cli(["check", "--quiet", "--facts", str(path)]).stdout.splitlines()
    prefix = "tfdoctor: error: node017: THR001 " if with_host else "tfdoctor: error: THR001 "
    assert lines[0].startswith(prefix)
    assert len(lines) == 2


def test_a_live_multi_node_job_names_this_host():
    import socket

    done = run_cli(["check", "--quiet", "--select", "THR001"], env={"OMP_NUM_THREADS": "abc", "SLURM_NNODES": "3"})
    host = socket.gethostname()
    assert done.stdout.startswith(f"tfdoctor: error: {terminal.safe_line(host)}: THR001 "), done.stdout
    single = run_cli(["check", "--quiet", "--select", "THR001"], env={"OMP_NUM_THREADS": "abc", "SLURM_NNODES": "1"})
    assert single.stdout.startswith("tfdoctor: error: THR001 ")


# -- 6. tests end every process they start ----------------------------------------------------------------

def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_the_hanging_fake_trial_ends_with_the_worker_that_started_it(tmp_path):
    """tests/test_tune_shared.py kills a tune worker whose trial hangs (FAKE_JOB_HANG_AT); the trial runs in
    a session of its own, so it must end by itself when its worker is gone, not sleep on for 600 s."""
    state = tmp_path / "runs"
    env = {**os.environ, "FAKE_JOB_STATE": str(state), "FAKE_JOB_HANG_AT": "0"}
    worker = subprocess.Popen(["sh", "-c", f'"{sys.executable}" {REPO / "tests" / "support" / "tune_fakes.py"} & '
                               "wait"], env=env, start_new_session=True)
    try:
        hung = Path(f"{state}.hung")
        deadline = time.monotonic() + 60
        while not (hung.exists() and hung.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        trial = int(hung.read_text())
        assert _alive(trial)
    finally:
        worker.kill()  # the worker only: the trial is not in its process group's reach here either
        worker.wait()
    deadline = time.monotonic() + 10
    while _alive(trial) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(trial)


# -- 7. every option the README and docs name exists on the command they name it for ---------------------

DOC_FILES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


@functools.cache
def _command_options() -> dict[str, set[str]]:
    import click

    from tfdoctor.cli import cli

    context = click.Context(cli)
    options = {}
    for name in cli.list_commands(context):
        command = cli.get_command(context, name)
        options[name] = {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)
                         if opt.startswith("--")} | {"--help"}
    return options


def _named_options(files: list[Path] | None = None) -> list[tuple[str, str, str]]:
    """(file:line, command, option) for every `tfdoctor COMMAND … --option` written in the docs (or
    `files`), in code spans and code blocks; the words after a shell separator belong to another command."""
    import re

    found = []
    for path in files if files is not None else DOC_FILES:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for match in re.finditer(r"tfdoctor ([a-z]+)((?: +[^ `|;&#)>]+)*)", line):
                words = match.group(2).split()
                for word in words:
                    if word.startswith("--") and len(word) > 2:
                        option = word.split("=", 1)[0].rstrip(".,:'\"")
                        found.append((f"{path.name}:{number}", match.group(1), option))
    return found


# Options a how-to's worked example adds (tests/test_contributor_path.py walks it in a copy).
ADDED_BY_A_WORKED_EXAMPLE = {("adding-a-report-section.md", "report", "--lint")}


def test_every_option_the_docs_name_exists_on_its_command():
    options = _command_options()
    named = _named_options()
    assert len(named) > 100  # the reader works: the docs name options on nearly every page
    missing = [(where, command, option) for where, command, option in named
               if command in options and option not in options[command]
               and (where.split(":")[0], command, option) not in ADDED_BY_A_WORKED_EXAMPLE]
    assert missing == []


def test_every_option_tfdoctor_itself_names_exists_on_its_command():
    # What tfdoctor prints — messages, fix titles and steps, notes, check docs (explain), knowledge tables'
    # advice — names commands and options too: each must exist on the command it is named for.
    package = REPO / "tfdoctor"
    sources = [*sorted(package.rglob("*.py")), *sorted(package.glob("knowledge/*.toml"))]
    options = _command_options()
    named = _named_options(sources)
    assert len(named) > 30
    missing = [(where, command, option) for where, command, option in named
               if command in options and option not in options[command]]
    assert missing == []


def test_the_readme_common_options_exist_on_check_and_fix():
    import re

    readme = (REPO / "README.md").read_text()
    paragraph = readme.split("Common options of `check` and `fix`:", 1)[1].split("\n\n", 1)[0]
    named = set(re.findall(r"`(--[a-z-]+)", paragraph))
    assert {"--select", "--ignore", "--fail-on", "--facts", "--root", "--python", "--timeout"} <= named
    options = _command_options()
    assert named - options["check"] == set() and named - options["fix"] == set()


def test_the_option_reader_catches_a_missing_option(tmp_path, monkeypatch):
    page = tmp_path / "page.md"
    page.write_text("Run `tfdoctor fix --print --no-such-option` then `tfdoctor check -v | grep --count x`.\n")
    monkeypatch.setattr(sys.modules[__name__], "DOC_FILES", [page])
    assert _named_options() == [("page.md:1", "fix", "--print"), ("page.md:1", "fix", "--no-such-option")]


# -- what rich draws on a terminal itself: a progress bar, a spinner ---------------------------------------

def _redrawn_lines(shown: str) -> list[str]:
    """What a terminal shows of a redrawn bar: every line and every carriage-return-separated redraw, with
    rich's cursor and erase sequences (CSI …) left out."""
    import re

    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown)
    return [part for line in plain.replace("\r\n", "\n").split("\n") for part in line.split("\r")]


def test_tune_progress_and_summary_fit_an_80_column_terminal(tmp_path):
    from support.tune_fakes import METRIC
    from support.tune_setup import FAKE, OTHERS, SPACE_TOML, THREADS

    (tmp_path / "space.toml").write_text(SPACE_TOML)
    env = {"FAKE_JOB_STATE": str(tmp_path / "runs"), "FAKE_JOB_SEED": "7", "FAKE_JOB_DEPENDS": THREADS[0]}
    keep = {k: v for k, v in os.environ.items() if k not in (*THREADS, *OTHERS)}
    code, shown = run_in_pty(["tune", "--space", "space.toml", "--seed", "2", "--results", "r.jsonl", "--budget",
                              "6", "--metric", METRIC, "--", sys.executable, str(FAKE)], columns=80,
                             env={**keep, **env}, cwd=tmp_path, timeout=300)
    assert code == 0, shown[-3000:]
    assert "verdict: " in shown
    assert [line for line in _redrawn_lines(shown) if len(line) > 80] == []


@pytest.mark.tensorflow
def test_profile_fits_an_80_column_terminal(tmp_path):
    code, shown = run_in_pty(["profile", "--workload", "matmul", "--steps", "3", "--warmup", "1", "--device", "cpu",
                              "--logdir", str(tmp_path / "a folder with a long name" / ("x" * 60))],
                             columns=80, timeout=600)
    assert code in (0, 1), shown[-3000:]
    assert "step time       median " in shown
    assert [line for line in _redrawn_lines(shown) if len(line) > 80] == []


def test_a_long_fix_command_is_broken_where_sh_joins_it_again(tmp_path):
    line = ("      export LD_LIBRARY_PATH='/opt/cuda 12/lib64'\"${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\"; "
            "echo \"$LD_LIBRARY_PATH\" 'a b c d e f g'")
    fitted = terminal.fit_command(line, 40)
    assert len(fitted) > 1 and all(part.endswith(" \\") for part in fitted[:-1])
    joined = "\n".join(part.strip() for part in fitted)
    done = subprocess.run(["sh", "-c", joined], capture_output=True, text=True, timeout=30, check=False,
                          env={"PATH": os.environ["PATH"]})
    assert (done.returncode, done.stdout) == (0, "/opt/cuda 12/lib64 a b c d e f g\n")
    prose = "      Ask the node's administrator to load the driver " + "and more " * 8
    assert all(len(part) <= 40 for part in terminal.fit_command(prose, 40))


def test_a_diff_is_exact_in_a_pipe_and_shown_safely_on_a_terminal(tmp_path):
    hostile = tmp_path / "train\x1b]0;owned\x07.py"
    hostile.write_text(LINT_BAD.read_text())
    piped = run_cli(["lint", "--diff", str(hostile)])
    if "\x1b]0;owned\x07" not in piped.stdout:
        pytest.skip("lint --diff has nothing to show for this fixture")
    _code, shown = run_in_pty(["lint", "--diff", str(hostile)], columns=200)
    assert obeyed(shown) == [] and "train\\x1b]0;owned\\x07.py" in shown


def test_install_hints_look_past_a_build_record_in_the_current_folder(tmp_path, monkeypatch):
    """Run from inside a clone, setuptools' tfdoctor.egg-info there comes first on sys.path and has no
    direct_url.json: the hint named `tfdoctor[tune]` (no index serves it) in CI's clean clone."""
    from tfdoctor.installed import install_extra_command

    before = install_extra_command("tune")
    record = tmp_path / "tfdoctor.egg-info"
    record.mkdir()
    (record / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: tfdoctor\nVersion: 0.1.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert install_extra_command("tune") == before
    assert f"'{REPO}[tune]'" in before
