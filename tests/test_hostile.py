"""Hostile inputs, one test per failure class of the hardening review (issue 14): script injection, unbounded
work and reads, special files, bad input that must be exit 2, secrets, foreign files, --root confinement,
`-` as standard output. Each runs the real command line where the class is about the command line.

Slow cases are marked `slow` (pytest -m slow); a fast sample of every class always runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_cli import run_cli
from tfdoctor.fixes.plan import FixPlan, PlannedChange, Source
from tfdoctor.fixes.quoting import ScriptValueError, env_name, fish_quote, sh_quote
from tfdoctor.model import set_env

HOSTILE_NAMES = ["X;touch /tmp/PWN;Y", "X\ntouch /tmp/PWN\nY", "A=B", "1ABC", "", "A B", "$(id)", "A-B", "é"]


def _no_traceback(done: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in done.stderr + done.stdout


# -- 1. command execution: one validator, one quoting --------------------------------------------

@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_the_validator_refuses_every_name_that_is_not_a_variable(name):
    with pytest.raises(ScriptValueError):
        env_name(name)


@pytest.mark.parametrize("renderer", ["sh", "fish", "taskprolog"])
def test_every_renderer_refuses_a_hostile_name_even_past_the_plan(renderer):
    from tfdoctor.fixes.render_fish import render_fish
    from tfdoctor.fixes.render_sh import render_sh
    from tfdoctor.fixes.render_taskprolog import render_taskprolog

    plan = FixPlan()
    plan.env.append(PlannedChange(set_env("X;touch /tmp/PWN;Y", "1"), (Source("T", "t", "m"),), "t"))
    render = {"sh": lambda: render_sh(plan, "h"), "fish": lambda: render_fish(plan, "h"),
              "taskprolog": lambda: render_taskprolog(plan, {})}[renderer]
    with pytest.raises(ScriptValueError):
        render()


@pytest.mark.parametrize("value", ["'; touch PWN; '", "$(touch PWN)", "`touch PWN`", "a\nb", "\\'x", "%s{}$HOME"])
def test_quoted_values_come_back_literally_from_sh_and_fish(tmp_path, value):
    sh = subprocess.run(["sh", "-c", f"printf %s {sh_quote(value)}"], capture_output=True, text=True, cwd=tmp_path)
    assert sh.stdout == value
    if any(Path(d, "fish").exists() for d in os.environ.get("PATH", "").split(":")):
        fish = subprocess.run(["fish", "-c", f"printf %s {fish_quote(value)}"], capture_output=True, text=True,
                              cwd=tmp_path)
        assert fish.stdout == value
    assert not (tmp_path / "PWN").exists()


@pytest.mark.parametrize("name", ["X;touch PWN;Y", "X\ntouch PWN\nY", "A=B"])
def test_tune_space_names_are_validated_before_any_trial(tmp_path, name):
    space = tmp_path / "space.toml"
    space.write_text(f"[parameters.{json.dumps(name)}]\nvalue = \"1\"\n")
    done = run_cli(["tune", "--space", str(space), "--budget", "2", "--repeats", "1", "--results", "r.jsonl",
                    "--write", "env.sh", "--metric", "v: ([0-9]+)", "--", sys.executable, "-c", "print('v: 1')"],
                   cwd=tmp_path)
    _no_traceback(done)
    assert done.returncode == 2, done.stderr
    assert "is not a valid environment variable name" in done.stderr
    assert not (tmp_path / "env.sh").exists() and not (tmp_path / "r.jsonl").exists()
    assert not (tmp_path / "PWN").exists()


def _results_file(path: Path, space: list[dict], trials: list[dict], seeds: dict | None = None) -> Path:
    header = {"type": "header", "format": "tfdoctor-tune-results/1", "space": space,
              "seeds": seeds or {}, "maximize": True, "budget": 3, "time_limit": None, "seed": 1,
              "objective": {"command_args": [sys.executable, "-c", "print('v: 1')"], "user_metric": "v: ([0-9]+)"}}
    path.write_text("".join(json.dumps(line) + "\n" for line in [header, *trials]))
    return path


INT_PARAM = {"name": "TF_NUM_INTRAOP_THREADS", "kind": "int", "target": "env", "low": 1, "high": 4, "log": False}


@pytest.mark.parametrize(("space", "trials", "message"), [
    ([{**INT_PARAM, "name": "X;touch PWN;Y"}], [], "is not a valid environment variable name"),
    ([INT_PARAM], [{"type": "trial", "number": 0, "phase": "search", "params": {"TF_NUM_INTRAOP_THREADS": 2},
                    "status": "ok", "value": float("nan"), "seconds": 1.0}], "line 2 is not a trial record"),
    ([INT_PARAM], [{"type": "trial", "number": 0, "phase": "search", "params": {"NOT_IN_SPACE": 2},
                    "status": "ok", "value": 1.0, "seconds": 1.0}], "not in the recorded space"),
    ([INT_PARAM], [{"type": "trial", "number": 0, "phase": "search", "params": {"TF_NUM_INTRAOP_THREADS": 2},
                    "status": "ok", "value": 1.0, "seconds": 1.0, "env": {"A;B": "1"}}],
     "line 2 is not a trial record"),
    ([INT_PARAM], [{"type": "trial", "number": 0, "phase": "search", "params": {"TF_NUM_INTRAOP_THREADS": 99},
                    "status": "ok", "value": 1.0, "seconds": 1.0}], "outside the space"),
    ([{**INT_PARAM, "low": 1e400}], [], "the header line is incomplete"),
])
def test_resume_validates_the_results_file_on_read(tmp_path, space, trials, message):
    results = _results_file(tmp_path / "r.jsonl", space, trials)
    done = run_cli(["tune", "--resume", str(results), "--write", "env.sh"], cwd=tmp_path)
    _no_traceback(done)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert not (tmp_path / "env.sh").exists() and not (tmp_path / "PWN").exists()


# -- 4. special files where a regular file is required -------------------------------------------

@pytest.fixture()
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.json"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("args", [
    ["check", "--facts", "{fifo}"], ["compare", "{fifo}", "{fifo}"], ["tune", "--resume", "{fifo}"],
    ["tune", "--space", "{fifo}", "--metric", "v: ([0-9]+)", "--", "true"],
    ["check", "--facts", "/dev/zero"], ["compare", "/dev/zero", "/dev/zero"],
])
def test_fifos_and_devices_are_refused_not_waited_on(tmp_path, fifo, args):
    done = run_cli([a.format(fifo=fifo) for a in args], cwd=tmp_path)  # run_cli's timeout is 60 s
    _no_traceback(done)
    assert done.returncode == 2, done.stderr
    assert "not a regular file" in done.stderr


def test_a_facts_file_over_the_limit_is_refused_without_reading_it(tmp_path):
    big = tmp_path / "big.json"
    with open(big, "wb") as handle:
        handle.truncate(17 * 1024 * 1024)  # sparse: costs no disk
    done = run_cli(["check", "--facts", str(big)], cwd=tmp_path)
    assert done.returncode == 2
    assert "is larger than 16 MB" in done.stderr


# -- 5. exit 2 for bad input ---------------------------------------------------------------------

@pytest.mark.parametrize("timeout", ["1e300", "inf", "nan", "0", "-1", "86401"])
def test_absurd_timeouts_are_usage_errors(tmp_path, timeout):
    done = run_cli(["check", "--timeout", timeout], cwd=tmp_path)
    _no_traceback(done)
    assert done.returncode == 2
    assert "--timeout must be a positive number of seconds" in done.stderr


def test_absurd_timeout_in_the_config_is_a_usage_error(tmp_path):
    (tmp_path / "tfdoctor.toml").write_text("timeout = 1e300\n")
    done = run_cli(["check"], cwd=tmp_path)
    _no_traceback(done)
    assert done.returncode == 2
    assert "timeout must be a positive number of seconds" in done.stderr


# -- 7. foreign configuration files --------------------------------------------------------------

def test_a_config_in_a_world_writable_folder_without_sticky_bit_is_ignored(tmp_path):
    shared = tmp_path / "shared"
    project = shared / "project"
    project.mkdir(parents=True)
    shared.chmod(0o777)  # anyone may drop or replace files here
    (shared / "tfdoctor.toml").write_text('fail-on = "never"\n')
    snapshot = Path(__file__).parent / "snapshots" / "core" / "slurm-node-bad-threads.json"
    done = run_cli(["check", "--facts", str(snapshot)], cwd=project)
    assert done.returncode == 1, "the planted fail-on = never must not silence the hook"
    assert f"ignoring configuration {shared / 'tfdoctor.toml'}" in done.stderr
    assert "writable by every user" in done.stderr


@pytest.mark.skipif(os.getuid() != 0, reason="planting a file of another user needs chown (root)")
def test_a_config_planted_by_another_user_in_a_sticky_tmp_is_ignored(tmp_path):
    """The review's case: /tmp/tfdoctor.toml (sticky, world-writable) of another user, fail-on = "never"."""
    tmp = tmp_path / "tmp"
    project = tmp / "alice" / "project"
    project.mkdir(parents=True)
    tmp.chmod(0o1777)
    planted = tmp / "tfdoctor.toml"
    planted.write_text('fail-on = "never"\n')
    os.chown(planted, 4242, 4242)
    snapshot = Path(__file__).parent / "snapshots" / "core" / "slurm-node-bad-threads.json"
    done = run_cli(["check", "--facts", str(snapshot)], cwd=project)
    assert done.returncode == 1
    assert f"ignoring configuration {planted}: it is owned by another user (uid 4242)" in done.stderr


def test_own_config_in_a_sticky_folder_is_trusted(tmp_path):
    from tfdoctor.config import untrusted_because

    tmp_path.chmod(0o1777)
    config = tmp_path / "tfdoctor.toml"
    config.write_text('fail-on = "never"\n')
    assert untrusted_because(config) is None
