"""Command-line behaviour of `tfdoctor profile` and `fix --validate` that needs no TensorFlow."""

from __future__ import annotations

import subprocess

from support.command_line import run_cli


def tfdoctor(*args: str, cwd=None) -> subprocess.CompletedProcess[str]:
    return run_cli(list(args), cwd=cwd)


def test_profile_is_listed_and_has_help():
    done = tfdoctor("profile", "--help")
    assert done.returncode == 0
    for option in ("--workload", "--script", "--steps", "--warmup", "--device", "--logdir", "--env", "--compare",
                   "--budget", "--metric", "--measure-mixed-precision", "--format"):
        assert option in done.stdout


def test_bad_inputs_are_one_line_usage_errors(tmp_path):
    bad = tmp_path / "bad.sh"
    bad.write_text("exit 4\n")
    cases = [
        (("profile", "--script", str(tmp_path / "missing.py")), "--script"),
        (("profile", "--env", str(tmp_path / "missing.sh")), "no such file"),
        (("profile", "--compare", str(bad), str(bad)), "failed (exit 4)"),
        (("profile", "--python", str(tmp_path)), "not an executable interpreter"),
        (("profile", "--workload", "resnet"), "Invalid value"),
        (("profile", "--compare", str(bad), str(bad), "--metric", "gpu"), "Invalid value for '--metric'"),
        (("profile", "--compare", str(bad), str(bad), "--budget", "5"), "Invalid value for '--budget'"),
        (("fix", "--validate", "--root", str(tmp_path)), "cannot be combined"),
        (("profile", "--logdir", str(bad)), "--logdir"),  # a file: the profile would be silently lost
    ]
    for args, message in cases:
        done = tfdoctor(*args)
        assert done.returncode == 2, (args, done.stderr)
        assert message in done.stderr
        assert "Traceback" not in done.stderr


def test_a_workload_that_cannot_start_is_reported(tmp_path):
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'no tensorflow here' >&2\nexit 1\n")
    fake.chmod(0o755)
    done = tfdoctor("profile", "--python", str(fake), "--format", "json")
    assert done.returncode == 3
    assert "Traceback" not in done.stderr
    assert '"ok": false' in done.stdout
    assert "no tensorflow here" in done.stdout


def test_fix_validate_measures_with_the_chosen_workload(monkeypatch, tmp_path, capsys):
    """--validate-workload reaches the validation; the measurement itself is faked here."""
    import pytest

    import tfdoctor.profile.validate as validate
    from tfdoctor.cli import main

    seen = {}

    def fake_validate_plan(plan, environ, *, workload="cnn", progress=None, **kwargs):
        seen["workload"] = workload
        return plan, []

    monkeypatch.setattr(validate, "validate_plan", fake_validate_plan)
    with pytest.raises(SystemExit) as exit_info:
        main(["fix", "--validate", "--validate-workload", "matmul", "--select", "THR001", "--print"])
    assert exit_info.value.code == 0
    assert seen == {"workload": "matmul"}
