"""benchmarks/lint_instructions.py (issue 39, item 7): lint's instructions over a plain parse's, this tree and
a baseline in one run; without valgrind or the snapshot it says so and gives no figure."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import lint_instructions


def test_without_valgrind_it_skips_without_a_figure(monkeypatch, capsys):
    monkeypatch.setattr(lint_instructions.shutil, "which", lambda name: None)
    assert lint_instructions.main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("skipped: valgrind is not here") and "lint / parse" not in out


def test_without_the_snapshot_it_names_the_fetch_to_run(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(lint_instructions.shutil, "which", lambda name: "/usr/bin/valgrind")
    assert lint_instructions.main(["--mirror", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out == ("skipped: no snapshot of snowkylin/tensorflow-handbook here "
                   "(fetch github:snowkylin/tensorflow-handbook): no figure\n")


@pytest.mark.parametrize(("args", "error"), [(["--repo", "o/nowhere"], "not in"), (["--rounds", "0"], "at least 1")])
def test_a_repository_not_in_the_manifest_or_no_round_is_refused(monkeypatch, capsys, args, error):
    monkeypatch.setattr(lint_instructions.shutil, "which", lambda name: "/usr/bin/valgrind")
    with pytest.raises(SystemExit) as exited:
        lint_instructions.main(args)
    assert exited.value.code == 2 and error in capsys.readouterr().err


def test_the_warm_up_is_taken_out_of_both(monkeypatch):
    counted = {"warm": 1_000, "lint": 1_300, "parse": 1_200}
    monkeypatch.setattr(lint_instructions, "instructions", lambda package, root, mode, rounds: counted[mode])
    assert lint_instructions.measure(Path("pkg"), Path("root"), 2) == (300, 200)


def test_a_measured_process_that_hangs_ends_the_run_with_a_message(monkeypatch):
    def hang(*args, **kwargs):
        raise lint_instructions.subprocess.TimeoutExpired(args[0], kwargs["timeout"])

    monkeypatch.setattr(lint_instructions.subprocess, "run", hang)
    with pytest.raises(SystemExit, match="the lint process under valgrind ran over 1800 s"):
        lint_instructions.instructions(Path("pkg"), Path("root"), "lint", 2)
