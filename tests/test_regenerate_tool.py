"""tools/regenerate.py's own behaviour (its steps are tested where their files are: test_golden, test_knowledge…)."""

from __future__ import annotations

import importlib.util

import pytest
from conftest import REPO


def _tool():
    spec = importlib.util.spec_from_file_location("regenerate_tool", REPO / "tools" / "regenerate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_failed_step_shows_the_end_of_its_output_and_says_how_much_was_left_out(monkeypatch, capsys):
    tool = _tool()
    script = "import sys\nfor n in range(5000): print('line', n)\nsys.exit('the real error')\n"
    with pytest.raises(SystemExit) as ended:
        tool.run("a step that fails", ["-c", script])
    told = str(ended.value.code)
    assert told.startswith("tools/regenerate.py: `-c ") and "failed (exit 1):\n" in told
    assert "[4801 earlier lines not shown]\n" in told
    assert told.rstrip().endswith("line 4999\nthe real error")
    assert "line 4800\n" not in told and "\nline 4801\n" in told  # 199 lines of stdout and the error line
    assert len(told.splitlines()) < 210


def test_a_short_failure_is_shown_whole():
    tool = _tool()
    assert tool.last_lines("a\nb\n", keep=2) == "a\nb\n"
    assert tool.last_lines("a\nb\nc\n", keep=2) == "[1 earlier lines not shown]\nb\nc\n"


def test_a_step_still_running_at_its_time_limit_is_stopped_with_a_message(monkeypatch):
    tool = _tool()
    monkeypatch.setattr(tool, "STEP_TIMEOUT", 1)
    with pytest.raises(SystemExit) as ended:
        tool.run("a step that hangs", ["-c", "import time; time.sleep(60)"])
    assert str(ended.value.code) == ("tools/regenerate.py: `-c import time; time.sleep(60)` still running after 1 s: "
                                     "stopped")


@pytest.mark.parametrize(("changes", "said"), [
    (True, "changed (tests/snapshots/gpu/ not regenerated: skipped):\n  docs/checks.md\n"),
    (False, "nothing changed: every generated file was up to date (tests/snapshots/gpu/ not regenerated: skipped)\n"),
])
def test_a_skipped_step_is_said_whether_or_not_files_changed(monkeypatch, capsys, changes, said):
    """The steps stood in for (what they run is tested where their files are): only what main says."""
    import subprocess

    tool = _tool()
    states = iter([{"docs/checks.md": "a"}, {"docs/checks.md": "b" if changes else "a"}])
    monkeypatch.setattr(tool, "digests", lambda: next(states))
    monkeypatch.setattr(tool, "run", lambda title, args, env=None: subprocess.CompletedProcess(args, 0, "page", ""))
    monkeypatch.setattr(tool, "write_file", lambda *args, **kwargs: None)
    assert tool.main(["--skip-gpu-fixtures"]) == 0
    assert capsys.readouterr().out == "-- GPU fixtures: skipped (--skip-gpu-fixtures)\n" + said
