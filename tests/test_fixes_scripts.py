"""Fix scripts: sourced for real in bash, dash and fish (when installed), twice, over a hostile
environment; the result must be exactly what the fixes asked for, and nothing may run as code."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.command_line import run_cli
from support.snapshot_facts import SNAPSHOTS

from tfdoctor.fixes.plan import FixPlan, plan_fixes
from tfdoctor.fixes.render_fish import render_fish
from tfdoctor.fixes.render_python import render_python
from tfdoctor.fixes.render_sh import render_sh
from tfdoctor.model import (
    AdminFix,
    Applicability,
    EnvFix,
    Finding,
    PythonFix,
    Severity,
    prepend_path,
    set_env,
    unset_env,
)

SNAPSHOT = SNAPSHOTS / "core" / "slurm-node-bad-threads.json"
HOSTILE = "sp ace 'single' \"double\" $(touch pwned) `touch pwned2` ${HOME} \\ back\nnew line; rm -rf x *"
NON_UTF8 = os.fsdecode(b"caf\xe9-\xff")  # not UTF-8: reaches Python as lone surrogates
LIB_DIR = "/opt/lib dir/it's $(touch pwned3)"


def hostile_findings() -> list[Finding]:
    return [
        Finding("first problem\nwith a newline that must not end the comment\n/bin/touch pwned4",
                fixes=(EnvFix("set hostile", (set_env("TFD_HOSTILE", HOSTILE), set_env("TFD_BYTES", NON_UTF8),
                                              unset_env("TFD_GONE"))),),
                severity=Severity.ERROR, code="TST001", name="hostile-values"),
        Finding("library folder missing",
                fixes=(EnvFix("prepend", (prepend_path("LD_LIBRARY_PATH", LIB_DIR),)),),
                severity=Severity.WARNING, code="TST002", name="library-not-resolvable"),
        Finding("second finding wants the same prepend",
                fixes=(EnvFix("prepend", (prepend_path("LD_LIBRARY_PATH", LIB_DIR),)),),
                severity=Severity.INFO, code="TST003", name="same-library"),
    ]


START_ENV = {
    "PATH": os.environ["PATH"],
    "LD_LIBRARY_PATH": "/usr/lib/a b:$(touch pwned5):`touch pwned6`",
    "TFD_GONE": "will be unset $(touch pwned7)",
    "TFD_UNTOUCHED": HOSTILE,
    "TFD_BYTES_BEFORE": NON_UTF8,
}


def expected_env() -> dict[str, str]:
    env = {k: v for k, v in START_ENV.items() if k != "TFD_GONE"}
    env.update({"TFD_HOSTILE": HOSTILE, "TFD_BYTES": NON_UTF8,
                "LD_LIBRARY_PATH": f"{LIB_DIR}:{START_ENV['LD_LIBRARY_PATH']}"})
    return env


SHELL_NOISE = {"PWD", "OLDPWD", "SHLVL", "_", "fish_user_paths", "__fish_bin_dir"}


def source_twice(shell: str, script: Path, cwd: Path) -> dict[str, str]:
    if shell == "fish":
        command = [shell, "--no-config", "-c", f"source {script}; source {script}; env -0"]
    else:
        command = [shell, "-c", f'. "{script}"; . "{script}"; env -0']
    env = {os.fsencode(k): os.fsencode(v) for k, v in START_ENV.items()}
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    result = {}
    for item in done.stdout.split(b"\0"):
        if item:
            key, _, value = item.partition(b"=")
            result[os.fsdecode(key)] = os.fsdecode(value)
    return {k: v for k, v in result.items() if k not in SHELL_NOISE and not k.startswith("__fish")}


SHELLS = [pytest.param("bash"), pytest.param("dash"),
          pytest.param("fish", marks=pytest.mark.skipif(not shutil.which("fish"), reason="fish not installed"))]


@pytest.mark.parametrize("shell", SHELLS)
def test_sourcing_twice_over_hostile_environment_gives_exactly_the_fixes(tmp_path, shell):
    plan = plan_fixes(hostile_findings())
    script = tmp_path / ("env.fish" if shell == "fish" else "env.sh")
    render = render_fish if shell == "fish" else render_sh
    script.write_text(render(plan, "test header"), encoding="utf-8", errors="surrogateescape")
    result = source_twice(shell, script, tmp_path)
    expected = expected_env()
    if shell == "fish":
        # fish itself sets HOME and USER, and re-encodes invalid UTF-8 in variables inherited from its
        # parent when it exports them again: properties of fish, not of the script.
        for name in ("HOME", "USER"):
            result.pop(name, None)
        assert result.pop("TFD_BYTES_BEFORE") != ""
        del expected["TFD_BYTES_BEFORE"]
    assert result == expected
    assert sorted(p.name for p in tmp_path.iterdir()) == [script.name]  # no pwned* file appeared


def test_shellcheck_passes_on_the_hostile_script(tmp_path):
    shellcheck = shutil.which("shellcheck") or str(Path(sys.executable).parent / "shellcheck")
    script = tmp_path / "env.sh"
    script.write_text(render_sh(plan_fixes(hostile_findings()), "header"), encoding="utf-8",
                      errors="surrogateescape")
    done = subprocess.run([shellcheck, "-s", "sh", str(script)], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stdout


def test_comments_name_every_finding_and_cannot_break_out():
    text = render_sh(plan_fixes(hostile_findings()), "header")
    comments = [line for line in text.splitlines() if line.startswith("#")]
    assert "# TST001 hostile-values: first problem with a newline that must not end the comment /bin/touch pwned4" \
        in comments
    assert "# TST002 library-not-resolvable: library folder missing" in comments
    assert "# TST003 same-library: second finding wants the same prepend" in comments
    assert not any(line.startswith("/bin/touch") for line in text.splitlines())


def test_plan_skips_unsafe_and_manual_and_resolves_conflicts():
    findings = [
        Finding("a", fixes=(EnvFix("set 4", (set_env("OMP_NUM_THREADS", "4"),)),), severity=Severity.WARNING,
                code="T002", name="b"),
        Finding("b", fixes=(EnvFix("set 2", (set_env("OMP_NUM_THREADS", "2"),)),), severity=Severity.ERROR,
                code="T001", name="a"),
        Finding("c", fixes=(EnvFix("unset", (unset_env("TF_ENABLE_ONEDNN_OPTS"),), Applicability.UNSAFE),
                            PythonFix("policy", "print('x')"),
                            AdminFix("reboot", ("sudo reboot",))), severity=Severity.INFO, code="T003", name="c"),
    ]
    plan = plan_fixes(findings)
    assert plan.env_values() == {"OMP_NUM_THREADS": "2"}  # the error's fix wins
    assert [(s.source.code, s.reason.split(":")[0]) for s in plan.skipped] == [
        ("T002", "OMP_NUM_THREADS is already changed by T001 (a more serious finding)"),
        ("T003", "unsafe fix"),
        ("T003", "unsafe in-process fix"),  # Python: it says where it goes (--write-python)
    ]
    assert [a.title for a, _ in plan.admin] == ["reboot"]
    unsafe = plan_fixes(findings, unsafe=True)
    assert unsafe.env_values() == {"OMP_NUM_THREADS": "2", "TF_ENABLE_ONEDNN_OPTS": None}
    assert "print('x')" in render_python(unsafe, "h")


def test_empty_plan_renders_a_harmless_script(tmp_path):
    text = render_sh(FixPlan(), "header")
    assert "Nothing to change" in text
    assert not [line for line in text.splitlines() if line and not line.startswith("#")]


# -- the command ---------------------------------------------------------------------------------

def test_fix_write_then_refuse_overwrite_then_force(tmp_path):
    target = tmp_path / "env.sh"
    done = run_cli(["fix", "--facts", str(SNAPSHOT), "--write", str(target)], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    text = target.read_text()
    assert "OMP_NUM_THREADS='4'\nexport OMP_NUM_THREADS" in text
    assert "unset KMP_AFFINITY" in text
    assert "# THR001 thread-count-not-a-number:" in text
    target.write_text("# the user's own file\n")
    again = run_cli(["fix", "--facts", str(SNAPSHOT), "--write", str(target)], cwd=tmp_path)
    assert again.returncode == 2
    assert "exists; add --force to overwrite it" in again.stderr
    assert target.read_text() == "# the user's own file\n"
    forced = run_cli(["fix", "--facts", str(SNAPSHOT), "--write", str(target), "--force"], cwd=tmp_path)
    assert forced.returncode == 0
    assert target.read_text() == text.replace(text.splitlines()[0], text.splitlines()[0])
    assert [p.name for p in tmp_path.iterdir()] == ["env.sh"]  # no temporary file left behind


def test_fix_print_is_only_the_script_and_evals_cleanly(tmp_path):
    done = run_cli(["fix", "--facts", str(SNAPSHOT), "--print"], cwd=tmp_path)
    assert done.returncode == 0
    evaluated = subprocess.run(["sh", "-c", 'eval "$1"; printf %s "$OMP_NUM_THREADS|${KMP_AFFINITY-unset}"',
                                "sh", done.stdout], capture_output=True, text=True, timeout=30, check=False,
                               env={"PATH": os.environ["PATH"], "KMP_AFFINITY": "explicit"})
    assert evaluated.stdout == "4|unset"
    # The pure-Python protobuf fix is safe; nothing unsafe or manual may appear in the script.
    assert "unsafe" not in done.stdout


def test_fix_writes_python_fixes_and_refuses_directories(tmp_path):
    done = run_cli(["fix", "--facts", str(SNAPSHOT), "--write-python", str(tmp_path / "fixes.py")], cwd=tmp_path)
    assert done.returncode == 0
    compile((tmp_path / "fixes.py").read_text(), "fixes.py", "exec")
    bad = run_cli(["fix", "--facts", str(SNAPSHOT), "--write", str(tmp_path)], cwd=tmp_path)
    assert bad.returncode == 2
    assert "is a directory" in bad.stderr
    missing = run_cli(["fix", "--facts", str(SNAPSHOT), "--write", str(tmp_path / "no" / "env.sh")], cwd=tmp_path)
    assert missing.returncode == 2
    assert "does not exist" in missing.stderr


@pytest.mark.parametrize("option", ["--write", "--write-python", "--write-launcher"])
def test_an_empty_file_name_is_a_usage_error(tmp_path, option):
    done = run_cli(["fix", "--facts", str(SNAPSHOT), option, ""], cwd=tmp_path)
    assert done.returncode == 2
    assert f"{option} needs a file name" in done.stderr
    assert list(tmp_path.iterdir()) == []
