"""The README's first set-up command, run verbatim as a newcomer runs it: in a fresh copy of the project
(the files git tracks, nothing else), it makes a venv, installs tfdoctor with a regular `pip install .`
and runs `tfdoctor check` on this machine; then the install hint `tfdoctor tune` prints without optuna is
run as printed, and installs it. The second set-up command is what .ci/run runs, so CI runs it.

It needs the package index (or pip's cache) like the command itself; it is skipped, saying so, only when
pip could not reach an index at all, so a broken install or a crashing `check` fails here.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest
from conftest import REPO
from support.hook_imports import HOOK_NEVER_IMPORTS, NEEDED_BY_SUBPROCESS, REPORT_IMPORTS

pytestmark = pytest.mark.slow  # a venv and an install from the package index: README "Development"

INSTALL_TIMEOUT = 600  # seconds: a fresh venv and six small dependencies on a loaded 2-CPU machine


def _first_setup_command() -> str:
    readme = (REPO / "README.md").read_text()
    setup = readme[readme.index("## Set up"):readme.index("## Use")]
    lines = [line for line in setup.splitlines() if line.startswith("python3 -m venv .venv ")]
    assert len(lines) == 1, lines
    return lines[0]


def _tracked_copy(dest):
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = REPO / name
        if not source.is_file():  # deleted in the work tree but not yet in the index
            continue
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)


def test_readme_first_setup_command_installs_and_checks_this_machine(tmp_path):
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout: the tracked files cannot be listed")
    command = _first_setup_command()
    project = tmp_path / "tfdoctor"
    _tracked_copy(project)
    env = {key: value for key, value in os.environ.items() if not key.startswith(("VIRTUAL_ENV", "PYTHONPATH"))}
    done = subprocess.run(["bash", "-c", command], cwd=project, capture_output=True, text=True,
                          timeout=INSTALL_TIMEOUT, env=env)
    output = done.stdout + done.stderr
    # Only a network that does not answer skips: "No matching distribution" is also what a requirement
    # that exists nowhere gives, and that is a broken set-up command.
    if done.returncode != 0 and re.search(r"NewConnectionError|Temporary failure in name resolution|ProxyError|"
                                          r"Network is unreachable|Failed to establish a new connection", output):
        pytest.skip(f"pip reached no package index: {output.strip().splitlines()[-1]}")
    # 0 and 1 are the documented outcomes of a check that ran ("nothing found", "found something").
    assert done.returncode in (0, 1), output[-3000:]
    assert "Traceback" not in output
    assert re.search(r"^tfdoctor: \d+ error\(s\), \d+ warning\(s\), .*\d+ check\(s\) passed", done.stdout, re.M), \
        done.stdout[-2000:]
    assert (project / ".venv" / "bin" / "tfdoctor").exists()
    # A regular install, not an editable one: the package lives in the venv, not in the copied tree.
    located = subprocess.run([str(project / ".venv" / "bin" / "python"), "-c",
                              "import tfdoctor, sys; sys.stdout.write(tfdoctor.__file__)"],
                             capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert located.returncode == 0 and "site-packages" in located.stdout, located
    # The hook's speed rests on what it does not import (issue 26): seen on this regular install only.
    imported = subprocess.run([str(project / ".venv" / "bin" / "python"), "-c", REPORT_IMPORTS,
                               ",".join((*HOOK_NEVER_IMPORTS, "subprocess"))], capture_output=True, text=True,
                              timeout=120, cwd=tmp_path)
    assert imported.returncode in (0, 1) and "Traceback" not in imported.stderr, imported.stderr[-2000:]
    names = set(imported.stderr.splitlines()[-1].split())
    if "subprocess" in names:  # a probe started a child here (numactl, ptxas): contextlib comes with it
        names -= {"subprocess", *NEEDED_BY_SUBPROCESS}
    assert names == set(), imported.stderr
    # The hint tfdoctor prints for an optional part works as printed (issue 38): from this regular install
    # it names the folder tfdoctor was installed from, and running it exactly installs the part.
    tune = subprocess.run([str(project / ".venv" / "bin" / "tfdoctor"), "tune", "--budget", "2"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, env=env)
    assert tune.returncode == 2 and "tfdoctor tune needs optuna: " in tune.stderr, tune.stderr
    hint = tune.stderr.split("tfdoctor tune needs optuna: ", 1)[1].strip()
    assert hint.startswith(str(project / ".venv" / "bin" / "python")) and f"'{project}[tune]'" in hint
    installed = subprocess.run(["bash", "-c", hint], cwd=tmp_path, capture_output=True, text=True,
                               timeout=INSTALL_TIMEOUT, env=env)
    assert installed.returncode == 0, (installed.stdout + installed.stderr)[-3000:]
    optuna = subprocess.run([str(project / ".venv" / "bin" / "python"), "-c", "import optuna"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert optuna.returncode == 0, optuna.stderr[-2000:]
