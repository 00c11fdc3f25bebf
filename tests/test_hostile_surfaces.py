"""Hostile inputs against the newer surfaces (issue 24): the HTML report, explain --log, profile facts,
the writers and the children tfdoctor starts. One test (or more) per class; the class number is issue 24's.
The HTML pages are opened in a real browser in tests/test_report_browser.py; the redactor's classes are in
tests/test_redact.py."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_cli import run_cli

SNAPSHOT = Path(__file__).parent / "snapshots" / "core" / "slurm-node-bad-threads.json"


def _no_traceback(done: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in done.stderr + done.stdout


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
    _no_traceback(done)
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
