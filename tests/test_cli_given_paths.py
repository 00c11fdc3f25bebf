"""What a command makes of the folder it runs in and of the paths it is given: a job whose folder was removed
since it started (a cleaned scratch folder), an empty --root or --python (which would mean that folder)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from support.command_line import assert_no_traceback, run_cli


def _in_a_removed_folder(tmp_path, *args: str) -> subprocess.CompletedProcess[str]:
    """tfdoctor ARGS started in a folder that is removed just before (the shell's cd keeps it as cwd)."""
    folder = tmp_path / "scratch"
    folder.mkdir()
    script = 'cd "$1" && rmdir "$1" && shift && exec "$@"'
    return subprocess.run(["sh", "-c", script, "sh", str(folder), sys.executable, "-m", "tfdoctor", *args],
                          capture_output=True, text=True, timeout=120, check=False)


def test_check_in_a_removed_folder_runs_every_check_and_says_why_no_configuration_was_read(tmp_path):
    done = _in_a_removed_folder(tmp_path, "check", "--select", "PKG", "--format", "json")
    assert_no_traceback(done)
    assert done.returncode in (0, 1), done.stderr  # findings or none; never exit 3
    assert ("tfdoctor: warning: the current folder cannot be read (No such file or directory): no "
            "[tool.tfdoctor] configuration is looked for\n") in done.stderr
    results = json.loads(done.stdout)["results"]
    # The python probe still reads the environment (a relative path entry is kept as it is).
    assert [r["code"] for r in results if r["status"] == "not-checked"] == []


def test_a_relative_python_in_a_removed_folder_is_a_usage_error(tmp_path):
    # A path with a folder in it: a bare name (`--python python3`) is looked up on PATH (issue 38).
    done = _in_a_removed_folder(tmp_path, "check", "--python", "venv/bin/python")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert ("tfdoctor: error: --python venv/bin/python: a relative path, and the current folder cannot be read (No "
            "such file or directory): give an absolute one") in " ".join(done.stderr.split())


@pytest.mark.parametrize("option", ["--root", "--python"])
@pytest.mark.parametrize("command", [["check"], ["collect"], ["fix", "--print"]])
def test_an_empty_path_is_refused_not_taken_for_the_current_folder(tmp_path, command, option):
    done = run_cli([*command, f"{option}="], cwd=tmp_path)
    assert_no_traceback(done)
    assert done.returncode == 2
    assert f"{option} was given an empty path" in done.stderr
    assert done.stdout == ""
