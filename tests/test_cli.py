"""The command line: exit codes, messages, and no traceback on any bad input."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import REPO
from support.command_line import assert_no_traceback, run_cli
from support.snapshot_facts import edited_file

from tfdoctor.cli import main

SNAPSHOT = REPO / "tests" / "snapshots" / "core" / "slurm-node-bad-threads.json"


def test_findings_at_error_exit_1(tmp_path):
    done = run_cli(["check", "--facts", str(SNAPSHOT)], cwd=tmp_path)
    assert done.returncode == 1
    assert "THR001 thread-count-not-a-number" in done.stdout


def test_fail_on_never_exits_0(tmp_path):
    assert run_cli(["check", "--facts", str(SNAPSHOT), "--fail-on", "never"], cwd=tmp_path).returncode == 0


def test_fail_on_warning_counts_warnings(tmp_path):
    args = ["check", "--facts", str(SNAPSHOT), "--select", "THR101"]
    assert run_cli(args, cwd=tmp_path).returncode == 0
    assert run_cli([*args, "--fail-on", "warning"], cwd=tmp_path).returncode == 1


def test_select_and_ignore_by_prefix(tmp_path):
    done = run_cli(["check", "--facts", str(SNAPSHOT), "--format", "json", "--select", "THR",
                    "--ignore", "THR0,THR105"], cwd=tmp_path)
    codes = [r["code"] for r in json.loads(done.stdout)["results"] if r["status"] == "failed"]
    assert codes == ["THR101", "THR107"]
    assert done.returncode == 0


def test_quiet_prints_one_line_per_problem(tmp_path):
    done = run_cli(["check", "--facts", str(SNAPSHOT), "--quiet"], cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        "tfdoctor: error: THR001 thread-count-not-a-number: OMP_NUM_THREADS='abc' is not a positive whole "
        "number; the runtime ignores it",
        "tfdoctor: error: THR105 affinity-pins-all-threads-to-one-cpu: KMP_AFFINITY='granularity=fine,"
        "proclist=[0],explicit' binds all 4 threads to one CPU (an explicit proclist with the single CPU 0)",
    ]


def test_quiet_prints_nothing_when_healthy(tmp_path):
    done = run_cli(["check", "--facts", str(SNAPSHOT), "--quiet", "--select", "THR104"], cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


@pytest.mark.parametrize(("content", "message"), [
    ("not json at all", "is not JSON"),
    ('{"schema_version": 99, "sections": {}}', "facts schema version 99 is not supported"),
    ('[1, 2]', "a facts file holds a JSON object at the top"),
    ('{"schema_version": 1, "sections": 5}', "a facts file needs a 'sections' object"),
    (b"\xff\xfe\x00garbage", "is not JSON"),
    ("[" * 100_000, "is not JSON"),  # deeper than the parser recurses
    ('{"schema_version": ' + "9" * 5000 + "}", "is not JSON"),  # an integer too long to convert
])
def test_bad_facts_file_is_a_usage_error(tmp_path, content, message):
    path = tmp_path / "facts.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    done = run_cli(["check", "--facts", str(path)], cwd=tmp_path)
    assert done.returncode == 2
    assert message in done.stderr
    assert done.stderr.startswith("tfdoctor: error: ")
    assert_no_traceback(done)


def test_missing_facts_file(tmp_path):
    done = run_cli(["check", "--facts", str(tmp_path / "nope.json")], cwd=tmp_path)
    assert done.returncode == 2
    assert "cannot read facts file" in done.stderr
    assert_no_traceback(done)


def test_python_that_does_not_exist(tmp_path):
    done = run_cli(["check", "--python", str(tmp_path / "no-python")], cwd=tmp_path)
    assert done.returncode == 2
    assert "no such file" in done.stderr
    assert_no_traceback(done)


def test_python_that_is_not_executable(tmp_path):
    fake = tmp_path / "python"
    fake.write_text("not a program")
    done = run_cli(["check", "--python", str(fake)], cwd=tmp_path)
    assert done.returncode == 2
    assert "not an executable interpreter" in done.stderr


def test_python_that_is_not_python_is_an_unknown_fact(tmp_path):
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho boom >&2\nexit 3\n")
    fake.chmod(0o755)
    done = run_cli(["check", "--python", str(fake), "--format", "json", "--select", "THR"], cwd=tmp_path)
    assert done.returncode in (0, 1)
    assert_no_traceback(done)
    facts = run_cli(["collect", "--python", str(fake)], cwd=tmp_path)
    python = json.loads(facts.stdout)["sections"]["python"]
    assert python == {"$unknown": f"interpreter {fake} failed the snapshot (exit 3): boom"}


def test_python_named_bare_is_looked_up_on_path_as_the_shell_would(tmp_path):
    """`--python python3` is the python3 the shell would run (PATH), as a user typing it expects (issue 38);
    `--python ./python` is the file in the current folder; a bare name on no PATH folder is a usage error."""
    here = tmp_path / "python"
    here.write_text("#!/bin/sh\necho here >&2\nexit 3\n")
    here.chmod(0o755)
    elsewhere = tmp_path / "bin"
    elsewhere.mkdir()
    (elsewhere / "python").write_text("#!/bin/sh\necho on-path >&2\nexit 4\n")
    (elsewhere / "python").chmod(0o755)
    path = {"PATH": f"{elsewhere}:{os.environ.get('PATH', '')}"}
    done = run_cli(["collect", "--python", "python"], cwd=tmp_path, env=path)
    python = json.loads(done.stdout)["sections"]["python"]
    assert python == {"$unknown": f"interpreter {elsewhere / 'python'} failed the snapshot (exit 4): on-path"}
    done = run_cli(["collect", "--python", "./python"], cwd=tmp_path, env=path)
    python = json.loads(done.stdout)["sections"]["python"]
    assert python == {"$unknown": f"interpreter {here} failed the snapshot (exit 3): here"}
    missing = run_cli(["check", "--python", "no-such-python-here"], cwd=tmp_path, env=path)
    assert (missing.returncode, missing.stderr) == (
        2, "tfdoctor: error: --python no-such-python-here: not found on PATH (./no-such-python-here for the one "
           "in this folder)\n")


def test_root_that_does_not_exist(tmp_path):
    done = run_cli(["check", "--root", str(tmp_path / "nope")], cwd=tmp_path)
    assert done.returncode == 2
    assert "no such directory" in done.stderr


def test_facts_with_root_is_refused(tmp_path):
    done = run_cli(["check", "--facts", str(SNAPSHOT), "--root", str(tmp_path)], cwd=tmp_path)
    assert done.returncode == 2
    assert "cannot be combined" in done.stderr


def test_unknown_select_code(tmp_path):
    done = run_cli(["check", "--facts", str(SNAPSHOT), "--select", "ZZZ"], cwd=tmp_path)
    assert done.returncode == 2
    assert "no check code starts with ZZZ" in done.stderr


def test_bad_option_is_exit_2(tmp_path):
    done = run_cli(["check", "--format", "yaml"], cwd=tmp_path)
    assert done.returncode == 2
    assert_no_traceback(done)


@pytest.mark.parametrize(("name", "text", "message"), [
    ("pyproject.toml", "[tool.tfdoctor\nselect = [", "is not valid TOML"),
    ("pyproject.toml", "[tool.tfdoctor]\nfail-on = 'sometimes'\n", "fail-on must be one of"),
    ("pyproject.toml", "[tool.tfdoctor]\nselect = 3\n", "'select' must be a list of check codes"),
    ("pyproject.toml", "[tool.tfdoctor]\nslect = ['THR']\n", "unknown key(s) slect"),
    ("tfdoctor.toml", "timeout = -1\n", "timeout must be a positive number"),
    ("tfdoctor.toml", "tool = 5\n", "'tool' must be a table"),
    ("pyproject.toml", "[tool.tfdoctor]\nselect = " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply"),
])
def test_malformed_config_is_exit_2(tmp_path, name, text, message):
    (tmp_path / name).write_text(text)
    done = run_cli(["check", "--facts", str(SNAPSHOT)], cwd=tmp_path)
    assert done.returncode == 2
    assert message in done.stderr
    assert_no_traceback(done)


def test_config_select_and_fail_on_are_used_and_flags_override(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.tfdoctor]\nselect = ["THR101"]\nfail-on = "warning"\n')
    sub = tmp_path / "sub"
    sub.mkdir()  # found from a subfolder too
    done = run_cli(["check", "--facts", str(SNAPSHOT), "--quiet"], cwd=sub)
    assert done.returncode == 1
    assert [line.split(":")[2].split()[0] for line in done.stdout.splitlines()] == ["THR101"]
    assert run_cli(["check", "--facts", str(SNAPSHOT), "--fail-on", "error"], cwd=sub).returncode == 0


def test_check_in_a_deleted_folder_runs_without_a_configuration_and_says_so(tmp_path):
    """A job whose folder was removed under it (a cleaned scratch directory): the search for a configuration
    cannot start, which ended the hook in an internal error (exit 3); the check itself needs no folder."""
    import sys

    gone = tmp_path / "gone"
    gone.mkdir()
    done = subprocess.run(["sh", "-c", 'cd "$1" && rmdir "$1" && shift && exec "$@"', "sh", str(gone),
                           sys.executable, "-m", "tfdoctor", "check", "--facts", str(SNAPSHOT)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1, done.stderr  # THR001's error, as from any folder
    assert "THR001 thread-count-not-a-number" in done.stdout
    assert ("tfdoctor: warning: the current folder cannot be read (No such file or directory): no "
            "[tool.tfdoctor] configuration is looked for") in done.stderr
    assert_no_traceback(done)


def test_explain_prints_the_doc():
    done = run_cli(["explain", "thr101"])
    assert done.returncode == 0
    assert done.stdout.startswith("THR101 thread-pools-unsized-in-cpu-limit (warning)\n")
    for section in ("What it does:", "Why is this bad?", "Example:", "Fix:", "Fix safety:"):
        assert section in done.stdout


def test_explain_unknown_code():
    done = run_cli(["explain", "NOPE123"])
    assert done.returncode == 2
    assert "no check has the code 'NOPE123'" in done.stderr


def test_list_checks():
    done = run_cli(["check", "--list-checks"])
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert any(line.startswith("THR101   warning  thread-pools-unsized-in-cpu-limit") for line in lines)


def test_internal_error_is_exit_3_without_traceback(monkeypatch, capsys):
    import tfdoctor.gather as gather

    def explode(*args, **kwargs):
        raise RuntimeError("simulated bug")

    monkeypatch.setattr(gather, "build_report", explode)  # what `check` calls (tfdoctor/check_command.py)
    monkeypatch.delenv("TFDOCTOR_DEBUG", raising=False)
    with pytest.raises(SystemExit) as exit_info:
        main(["check", "--facts", str(SNAPSHOT)])
    assert exit_info.value.code == 3
    err = capsys.readouterr().err
    assert "tfdoctor: internal error: RuntimeError: simulated bug" in err
    assert "Traceback" not in err


def test_help_and_version_exit_0(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert "tfdoctor, version" in capsys.readouterr().out


def _replay_with(tmp_path: Path, base: Path, path: str, value: object) -> subprocess.CompletedProcess[str]:
    """Replay `base` with the fact at the dotted `path` replaced by `value` (a wrong shape), as JSON."""
    facts = edited_file(base, {path: value}, tmp_path / "facts.json")
    return run_cli(["check", "--facts", str(facts), "--format", "json"], cwd=tmp_path)


@pytest.mark.parametrize("value", [[], "x", 5, None])
def test_env_variables_of_the_wrong_shape_is_not_checked_not_a_crash(tmp_path, value):
    done = _replay_with(tmp_path, SNAPSHOT, "env.variables", value)
    assert_no_traceback(done)
    results = {r["code"]: r for r in json.loads(done.stdout)["results"]}
    assert [c for c, r in results.items() if r["status"] == "crashed"] == []
    assert results["THR101"]["status"] == "not-checked"
    assert "env.variables" in results["THR101"]["reason"]
    assert done.returncode == 0


def test_taskprolog_replay_ignores_a_recorded_variable_that_is_not_a_string(tmp_path):
    facts = edited_file("gpu/cuda001-library-not-on-loader-path.json", {"env.variables.LD_LIBRARY_PATH": 5},
                        tmp_path / "facts.json")
    done = run_cli(["fix", "--facts", str(facts), "--format", "taskprolog"], cwd=tmp_path)
    assert_no_traceback(done)
    assert done.returncode == 0, done.stderr
    assert "export LD_LIBRARY_PATH=/usr/local/cuda/extras/CUPTI/lib64\n" in done.stdout
