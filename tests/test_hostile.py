"""Hostile inputs, one test per failure class of the hardening review (issue 14): script injection, unbounded
work and reads, special files, bad input that must be exit 2, secrets, foreign files, --root confinement,
`-` as standard output. Each runs the real command line where the class is about the command line.

Slow cases are marked `slow` (pytest -m slow); a fast sample of every class always runs. The second round
(issue 24: the HTML report, explain --log, profile facts, writers, children) is in
tests/test_hostile_surfaces.py and tests/test_report_browser_hostile.py.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.command_line import assert_no_traceback, run_cli

HOSTILE_NAMES = ["X;touch /tmp/PWN;Y", "X\ntouch /tmp/PWN\nY", "A=B", "1ABC", "", "A B", "$(id)", "A-B", "é"]


# -- 1. command execution: one validator, one quoting --------------------------------------------

@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_the_validator_refuses_every_name_that_is_not_a_variable(name):
    from tfdoctor.fixes.quoting import ScriptValueError, env_name

    with pytest.raises(ScriptValueError):
        env_name(name)


@pytest.mark.parametrize("renderer", ["sh", "fish", "taskprolog"])
def test_every_renderer_refuses_a_hostile_name_even_past_the_plan(renderer):
    from tfdoctor.fixes.plan import FixPlan, PlannedChange, Source
    from tfdoctor.fixes.quoting import ScriptValueError
    from tfdoctor.fixes.render_fish import render_fish
    from tfdoctor.fixes.render_sh import render_sh
    from tfdoctor.fixes.render_taskprolog import render_taskprolog
    from tfdoctor.model import set_env

    plan = FixPlan()
    plan.env.append(PlannedChange(set_env("X;touch /tmp/PWN;Y", "1"), (Source("T", "t", "m"),), "t"))
    render = {"sh": lambda: render_sh(plan, "h"), "fish": lambda: render_fish(plan, "h"),
              "taskprolog": lambda: render_taskprolog(plan, {})}[renderer]
    with pytest.raises(ScriptValueError):
        render()


@pytest.mark.parametrize("value", ["'; touch PWN; '", "$(touch PWN)", "`touch PWN`", "a\nb", "\\'x", "%s{}$HOME"])
def test_quoted_values_come_back_literally_from_sh_and_fish(tmp_path, value):
    from tfdoctor.fixes.quoting import fish_quote, sh_quote

    sh = subprocess.run(["sh", "-c", f"printf %s {sh_quote(value)}"], capture_output=True, text=True, cwd=tmp_path)
    assert sh.stdout == value
    if any(Path(d, "fish").exists() for d in os.environ.get("PATH", "").split(":")):
        fish = subprocess.run(["fish", "-c", f"printf %s {fish_quote(value)}"], capture_output=True, text=True,
                              cwd=tmp_path)
        assert fish.stdout == value
    assert not (tmp_path / "PWN").exists()


@pytest.mark.parametrize("value", ["/opt/venv/bin/python", "", "a b", "'; touch PWN; '", "$(touch PWN)", "x*", "é",
                                   "--logdir=/tmp/run", "~user", "a\nb"])
def test_a_shown_word_is_plain_only_when_sh_reads_it_so(tmp_path, value):
    """sh_word leaves a word bare exactly where shlex.quote does, and sh reads back what it wrote."""
    import shlex

    from tfdoctor.fixes.quoting import sh_quote, sh_word

    assert sh_word(value) == (value if shlex.quote(value) == value else sh_quote(value))
    sh = subprocess.run(["sh", "-c", f"printf %s {sh_word(value)}"], capture_output=True, text=True, cwd=tmp_path)
    assert sh.stdout == value
    assert not (tmp_path / "PWN").exists()


@pytest.mark.parametrize("name", ["X;touch PWN;Y", "X\ntouch PWN\nY", "A=B"])
def test_tune_space_names_are_validated_before_any_trial(tmp_path, name):
    space = tmp_path / "space.toml"
    space.write_text(f"[parameters.{json.dumps(name)}]\nvalue = \"1\"\n")
    done = run_cli(["tune", "--space", str(space), "--budget", "2", "--repeats", "1", "--results", "r.jsonl",
                    "--write", "env.sh", "--metric", "v: ([0-9]+)", "--", sys.executable, "-c", "print('v: 1')"],
                   cwd=tmp_path)
    assert_no_traceback(done)
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
    assert_no_traceback(done)
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
    assert_no_traceback(done)
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
    assert_no_traceback(done)
    assert done.returncode == 2
    assert "--timeout must be a positive number of seconds" in done.stderr


def test_absurd_timeout_in_the_config_is_a_usage_error(tmp_path):
    (tmp_path / "tfdoctor.toml").write_text("timeout = 1e300\n")
    done = run_cli(["check"], cwd=tmp_path)
    assert_no_traceback(done)
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


# -- 2. unbounded work inside a check: CPU lists against the machine -------------------------------

HUGE_AFFINITY = [
    {"GOMP_CPU_AFFINITY": "0-4000000000"},
    {"OMP_PLACES": "{0:4000000000}"},
    {"OMP_PLACES": "{0}:4000000000"},
    {"KMP_AFFINITY": "granularity=fine,proclist=[0-4000000000],explicit"},
]


@pytest.mark.parametrize("env", HUGE_AFFINITY)
def test_cpu_lists_beyond_the_machine_are_a_finding_not_work(make_root, env):
    from conftest import check_root

    root = make_root().cpus(sockets=2, cores_per_socket=4, threads_per_core=2)  # CPUs 0-15
    report = check_root(root, env={"OMP_NUM_THREADS": "8", **env}, select=["THR"])
    assert report.codes() == ["THR120"]
    finding = report.result("THR120").findings[0]
    name = next(iter(env))
    assert f"{name}=" in finding.message and "names CPUs this machine does not have" in finding.message
    assert "the highest online CPU is 15" in finding.message
    assert finding.fixes[0].changes[0].name == name


@pytest.mark.parametrize("env", [{"GOMP_CPU_AFFINITY": "0-15"}, {"OMP_PLACES": "{0}:16"}, {"OMP_PLACES": "{0:4}:4:4"},
                                 {"KMP_AFFINITY": "granularity=fine,proclist=[0-15],explicit"},
                                 {"OMP_PLACES": "cores"}, {"OMP_PLACES": "{0}:4000000000:0"}])
def test_cpu_lists_within_the_machine_are_silent(make_root, env):
    """The healthy twin: the same variables naming only CPUs 0-15 of a 16-CPU node."""
    from conftest import check_root

    root = make_root().cpus(sockets=2, cores_per_socket=4, threads_per_core=2)
    assert check_root(root, env={"OMP_NUM_THREADS": "8", **env}, select=["THR120"]).codes() == []


def test_a_cpu_online_file_naming_four_billion_cpus_is_malformed_not_read(make_root):
    from conftest import probe_root

    root = make_root().cpus(cores_per_socket=2)
    root.write("/sys/devices/system/cpu/online", "0-4000000000\n")
    facts = probe_root(root)
    assert "is malformed" in facts.peek("cpu.online").reason
    assert len(facts.peek("cpu.online").reason) < 200


# -- 3. unbounded reads ------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_probed_device_or_fifo_is_not_read(make_root, kind):
    """The review's /dev/zero as /proc/cpuinfo (1 GB in 2 s) and a FIFO (blocks forever)."""
    from conftest import probe_root

    if kind == "device" and os.getuid() != 0:
        pytest.skip("mknod of a character device needs root")
    root = make_root().cpus(cores_per_socket=2)
    cpuinfo = root.path / "proc" / "cpuinfo"
    cpuinfo.parent.mkdir(parents=True, exist_ok=True)
    cpuinfo.unlink(missing_ok=True)
    if kind == "device":
        os.mknod(cpuinfo, 0o600 | stat.S_IFCHR, os.makedev(1, 5))  # the device numbers of /dev/zero
    else:
        os.mkfifo(cpuinfo)
    facts = probe_root(root)
    assert "not a regular file" in facts.peek("cpu.cpuinfo").reason


def test_a_link_to_dev_zero_in_a_fake_root_is_re_rooted(make_root):
    root = make_root().cpus(cores_per_socket=2)
    cpuinfo = root.path / "proc" / "cpuinfo"
    cpuinfo.unlink(missing_ok=True)
    os.symlink("/dev/zero", cpuinfo)
    assert root.machine().read_text("/proc/cpuinfo").reason == "/proc/cpuinfo does not exist"


def test_a_flooding_python_interpreter_is_stopped(tmp_path):
    flood = tmp_path / "python"
    flood.write_text("#!/bin/sh\nexec yes xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n")
    flood.chmod(0o755)
    done = run_cli(["check", "--python", str(flood), "-v", "--select", "PKG", "--timeout", "20"], cwd=tmp_path)
    assert_no_traceback(done)
    assert f"interpreter {flood} printed more than 32 MB: stopped" in done.stdout


def test_the_last_stderr_line_of_a_failing_interpreter_is_short_and_redacted(tmp_path):
    bad = tmp_path / "python"
    bad.write_text("#!/bin/sh\necho 'fatal: https://bob:hunter2@pypi.example/simple' "
                   "\"$(head -c 5000 /dev/zero | tr '\\0' x)\" >&2\nexit 1\n")
    bad.chmod(0o755)
    done = run_cli(["check", "--python", str(bad), "-v", "--select", "PKG"], cwd=tmp_path)
    assert_no_traceback(done)
    reasons = [line for line in done.stdout.splitlines() if "failed the snapshot" in line]
    assert reasons and "hunter2" not in done.stdout
    assert all(len(line) < 600 for line in reasons)


# -- 5. bad input is exit 2; a check bug on an odd fact is not exit 3 ------------------------------

def test_drv002_with_a_one_component_cuda_version_is_judged_not_crashed():
    from conftest import check_facts

    from tfdoctor.facts import Facts

    facts = Facts.load(Path(__file__).parent / "snapshots" / "gpu" / "drv002-driver-cuda-too-old.json")
    for section in ("python", "cuda_libs"):
        facts.sections[section]["tensorflow"]["build_info"]["cuda_version"] = "12"
    report = check_facts(facts, select=["DRV002"])
    assert report.codes() == ["DRV002"]
    assert "apt install cuda-compat-12-0" in " ".join(report.findings()[0].fixes[0].steps)


# -- checks as a whole under the time budget -------------------------------------------------------

def test_a_check_still_running_at_the_deadline_is_not_checked():
    import threading
    import time

    from tfdoctor.engine import run_checks
    from tfdoctor.facts import Facts
    from tfdoctor.model import Severity, Status
    from tfdoctor.registry import CheckSpec

    release = threading.Event()

    def stuck(facts):
        release.wait(30)
        return iter(())

    def quick(facts):
        return iter(())

    specs = [CheckSpec("TST001", "quick", Severity.WARNING, quick, "doc"),
             CheckSpec("TST002", "stuck", Severity.WARNING, stuck, "doc"),
             CheckSpec("TST003", "after", Severity.WARNING, quick, "doc")]
    start = time.monotonic()
    try:
        report = run_checks(specs, Facts({}), deadline=time.monotonic() + 0.5)
    finally:
        release.set()
    assert time.monotonic() - start < 5
    assert [r.status for r in report.results] == [Status.PASSED, Status.NOT_CHECKED, Status.NOT_CHECKED]
    assert report.results[1].reason == "did not finish within the --timeout budget"


# -- 8. --root confinement -------------------------------------------------------------------------

def test_absolute_links_in_a_fake_root_stay_inside_it(make_root, tmp_path):
    from conftest import probe_root

    outside = tmp_path / "host-secret"
    outside.write_text("root:$6$hostonlyhash:19000:0:99999:7:::\n")
    root = make_root().cpus(cores_per_socket=2)
    (root.path / "etc").mkdir(exist_ok=True)
    (root.path / "etc" / "os-release").unlink(missing_ok=True)
    os.symlink(str(outside), root.path / "etc" / "os-release")  # absolute: must be re-rooted
    os.symlink("../../../../../../../../" + str(outside), root.path / "proc" / "cpuinfo.link")
    machine = root.machine()
    assert machine.path("/etc/os-release") == str(root.path / str(outside).lstrip("/"))
    assert "hostonlyhash" not in json.dumps(probe_root(root).to_json())
    assert machine.path("/proc/cpuinfo.link") == str(root.path / str(outside).lstrip("/"))


def test_a_link_loop_in_a_fake_root_is_unknown(make_root):
    root = make_root().cpus(cores_per_socket=2)
    (root.path / "etc").mkdir(exist_ok=True)
    os.symlink("/etc/b", root.path / "etc" / "a")
    os.symlink("/etc/a", root.path / "etc" / "b")
    assert "could not be read" in root.machine().read_text("/etc/a").reason


# -- 9. `-` is standard output -------------------------------------------------------------------

@pytest.mark.parametrize("args", [["collect", "-o", "-"], ["fix", "--write", "-"], ["fix", "--write-python", "-"]])
def test_dash_writes_to_standard_output(tmp_path, args):
    snapshot = Path(__file__).parent / "snapshots" / "core" / "slurm-node-bad-threads.json"
    extra = [] if args[0] == "collect" else ["--facts", str(snapshot)]
    done = run_cli([*args, *extra], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "-").exists()
    expected = {"collect": '"schema_version": 1', "--write": "export OMP_NUM_THREADS",
                "--write-python": "# Use it: import it first"}
    assert expected[args[0] if args[0] == "collect" else args[1]] in done.stdout


# -- memory ceiling: the review's unbounded cases, each in a fresh process -------------------------

RSS_CEILING_MB = 200
MEASURE = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[2:], capture_output=True, cwd=sys.argv[1], timeout=120)
peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(done.returncode, peak_kb)
"""


def _peak_rss_mb(tmp_path: Path, args: list[str], env: dict[str, str] | None = None) -> tuple[int, float]:
    """Exit code and peak RSS (MB) of `tfdoctor ARGS` run as the only child of a fresh interpreter."""
    done = subprocess.run([sys.executable, "-c", MEASURE, str(tmp_path), sys.executable, "-m", "tfdoctor", *args],
                          capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=180)
    code, peak_kb = done.stdout.split()
    return int(code), int(peak_kb) / 1024


def _sparse(path: Path, size: int) -> Path:
    with open(path, "wb") as handle:
        handle.truncate(size)
    return path


def _fake_root_with(tmp_path: Path, absolute: str, text: str) -> Path:
    from tfdoctor.testing import FakeRoot

    root = FakeRoot(tmp_path / "root").cpus(cores_per_socket=2)
    root.write(absolute, text)
    return root.path


UNBOUNDED_FAST = {
    "200 MB facts file": lambda t: (["check", "--facts", str(_sparse(t / "f.json", 200 << 20))], None, 2),
    "compare /dev/zero": lambda t: (["compare", "/dev/zero", "/dev/zero"], None, 2),
    "GOMP_CPU_AFFINITY=0-4000000000": lambda t: (["check", "--select", "THR"], {"GOMP_CPU_AFFINITY": "0-4000000000"},
                                                 0),
    "OMP_PLACES={0:4000000000}": lambda t: (["check", "--select", "THR"], {"OMP_PLACES": "{0:4000000000}"}, 0),
}
UNBOUNDED_SLOW = {
    "cpu/online of four billion CPUs": lambda t: (
        ["check", "--root", str(_fake_root_with(t, "/sys/devices/system/cpu/online", "0-4000000000\n"))], None, None),
    "flooding --python": lambda t: (["check", "--python", str(_flooder(t)), "--select", "PKG"], None, None),
}


def _flooder(tmp_path: Path) -> Path:
    flood = tmp_path / "python"
    flood.write_text("#!/bin/sh\nexec yes " + "x" * 200 + "\n")
    flood.chmod(0o755)
    return flood


def _assert_under_ceiling(tmp_path: Path, case: Any) -> None:
    args, env, expected = case(tmp_path)
    code, peak = _peak_rss_mb(tmp_path, args, env)
    assert peak < RSS_CEILING_MB, f"peak RSS {peak:.0f} MB"
    assert code in ((0, 1) if expected in (None, 0) else (expected,))


@pytest.mark.parametrize("name", sorted(UNBOUNDED_FAST))
def test_unbounded_cases_stay_under_the_memory_ceiling(tmp_path, name):
    _assert_under_ceiling(tmp_path, UNBOUNDED_FAST[name])


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(UNBOUNDED_SLOW))
def test_slow_unbounded_cases_stay_under_the_memory_ceiling(tmp_path, name):
    _assert_under_ceiling(tmp_path, UNBOUNDED_SLOW[name])
