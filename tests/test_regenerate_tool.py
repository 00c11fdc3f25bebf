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
