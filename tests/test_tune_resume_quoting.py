"""The `--resume FILE` commands tfdoctor tune prints are quoted for the shell (tfdoctor.fixes.quoting.sh_word):
a results file named with a space or a quote is continued by pasting the command as printed."""

from __future__ import annotations

import errno
import shlex

import pytest

from tfdoctor.fixes.quoting import sh_word
from tfdoctor.tune import results as results_module
from tfdoctor.tune.results import ResultsError, ResultsLog

HEADER = {"space": {}, "seeds": []}


def _resume_word(message: str) -> str:
    """The word after --resume, as a shell reads the message's command."""
    words = shlex.split(message.split("--resume ", 1)[1])
    return words[0].rstrip(",;")


def test_exists_message_quotes_the_path(tmp_path):
    path = tmp_path / "my run's results.jsonl"
    path.write_text("x\n")
    with pytest.raises(ResultsError) as caught:
        ResultsLog.create(path, HEADER)
    assert f"--resume {sh_word(str(path))}," in str(caught.value)
    assert _resume_word(str(caught.value)) == str(path)


def test_full_disk_message_quotes_the_path(tmp_path, monkeypatch):
    path = tmp_path / "my results.jsonl"
    log = ResultsLog.create(path, HEADER)
    size = path.stat().st_size

    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(results_module.os, "write", full)
    try:
        with pytest.raises(ResultsError) as caught:
            log.append_line({"type": "note"})
    finally:
        monkeypatch.undo()
        log.close()
    assert str(caught.value).endswith(f"--resume {sh_word(str(path))}")
    assert _resume_word(str(caught.value)) == str(path)
    assert path.stat().st_size == size


def test_interrupted_message_quotes_the_path(tmp_path, capsys):
    from tfdoctor.tune.cli import _guarded

    path = tmp_path / "a b.jsonl"
    log = ResultsLog.create(path, HEADER)
    try:
        with pytest.raises(KeyboardInterrupt), _guarded(log):
            raise KeyboardInterrupt
    finally:
        log.close()
    err = capsys.readouterr().err
    assert f"continue with: tfdoctor tune --resume {sh_word(str(path))}\n" in err
    assert '"type": "interrupted"' in path.read_text()


def test_storage_lost_message_survives_an_unwritable_results_file(tmp_path, monkeypatch):
    """The storage and the results file's file system lost together: the stop is still said as the storage's
    (exit 2 with the command that resumes), not replaced by the results file's append error."""
    from tfdoctor.tune.shared_cli import storage_lost
    from tfdoctor.usage import UsageError

    path = tmp_path / "w 1.jsonl"
    log = ResultsLog.create(path, HEADER)

    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(results_module.os, "write", full)
    try:
        error = storage_lost(RuntimeError("the database stayed unreachable for 60 s"), log)
    finally:
        monkeypatch.undo()
        log.close()
    assert isinstance(error, UsageError)
    message = str(error.format_message())
    assert message.startswith("--storage: the database stayed unreachable for 60 s; this worker stopped.")
    assert f"tfdoctor tune --resume {sh_word(str(path))}" in message
    assert '"stopped"' not in path.read_text()


@pytest.mark.parametrize("pid", ["99999999999999999999", "\u00b2", "12\u00b3"])
def test_abandoned_start_with_an_impossible_pid_is_not_a_traceback(tmp_path, pid):
    """A header-only results file whose recorded worker pid is no pid (edited, corrupted): the file is kept
    and the start refused ("exists"), never an OverflowError/ValueError traceback."""
    import json

    from tfdoctor.tune.cli import _abandoned_start

    shared = {"study": "s", "storage": "sqlite:///x.db"}
    path = tmp_path / "w.jsonl"
    path.write_text(json.dumps({"type": "header", "shared": {**shared, "worker": f"node1:{pid}"}}) + "\n")
    assert _abandoned_start(path, {"shared": {**shared, "worker": "node1:4242"}}, None) is False
    assert path.exists()


def test_abandoned_start_of_a_dead_worker_is_still_found(tmp_path):
    import json
    import subprocess
    import sys

    from tfdoctor.tune.cli import _abandoned_start

    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                           text=True, check=True, timeout=60)
    shared = {"study": "s", "storage": "sqlite:///x.db"}
    path = tmp_path / "w.jsonl"
    path.write_text(json.dumps({"type": "header", "shared": {**shared, "worker": f"node1:{child.stdout.strip()}"}})
                    + "\n")
    assert _abandoned_start(path, {"shared": {**shared, "worker": "node1:4242"}}, None) is True


@pytest.mark.parametrize("runs", [5, True, {"a": 1}, "confirm"])
def test_written_verdict_of_another_shape_is_no_runs(runs):
    """The study's winner attribute is the shared database's: runs in another shape than a list are no runs,
    never a TypeError traceback (and a string is not read letter by letter)."""
    from types import SimpleNamespace

    from tfdoctor.tune.shared import WINNER_ATTR, written_verdict

    study = SimpleNamespace(user_attrs={WINNER_ATTR: {"worker": "n1:1", "summary": {"verdict": "none"},
                                                      "runs": runs}})
    assert written_verdict(study) == ({"verdict": "none"}, [], "n1:1")
