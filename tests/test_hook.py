"""The pre-job hook's contract: `tfdoctor check --fail-on LEVEL --quiet` prints nothing on a healthy node
and one line per problem otherwise, within its time budget, with pinned exit codes. Also the fix forms a
job uses: `eval "$(tfdoctor fix --print)"` and `tfdoctor fix --format taskprolog`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

from tfdoctor.fixes.plan import FixPlan, PlannedChange, Source
from tfdoctor.fixes.render_taskprolog import render_taskprolog
from tfdoctor.model import prepend_path, set_env, unset_env
from tfdoctor.testing import FakeRoot

THR001_LINE = ("tfdoctor: error: THR001 thread-count-not-a-number: OMP_NUM_THREADS='abc' is not a positive "
               "whole number; the runtime ignores it")


@pytest.fixture
def node(tmp_path: Path) -> Path:
    """A healthy two-CPU node with no cgroup limit."""
    return FakeRoot(tmp_path / "node").cpus(cores_per_socket=2).cgroup_v2().path


def hook(args: list[str], env: dict[str, str] | None = None, cwd: Path | None = None,
         prelude: str = "") -> subprocess.CompletedProcess[str]:
    """tfdoctor in a fresh process with only the given environment, as a batch job would run it.

    `prelude` is Python run before the CLI (to plant a hung probe or a crashing check)."""
    code = f"{prelude}\nfrom tfdoctor.cli import main\nmain({args!r})\n"
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(Path(__file__).parent)}
    return subprocess.run([sys.executable, "-c", code], env={**base, **(env or {})}, cwd=cwd,
                          capture_output=True, text=True, timeout=60, check=False)


def test_healthy_node_prints_nothing_and_exits_0(node: Path, tmp_path: Path) -> None:
    done = hook(["check", "--root", str(node), "--fail-on", "error", "--quiet"], cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_planted_error_exits_1_with_one_line(node: Path, tmp_path: Path) -> None:
    done = hook(["check", "--root", str(node), "--fail-on", "error", "--quiet"],
                env={"OMP_NUM_THREADS": "abc"}, cwd=tmp_path)
    assert (done.returncode, done.stdout.splitlines(), done.stderr) == (1, [THR001_LINE], "")


def test_one_line_per_problem(node: Path, tmp_path: Path) -> None:
    done = hook(["check", "--root", str(node), "--quiet"],
                env={"OMP_NUM_THREADS": "abc", "TF_NUM_INTRAOP_THREADS": "-3"}, cwd=tmp_path)
    lines = done.stdout.splitlines()
    assert done.returncode == 1
    assert len(lines) == 2
    assert lines[0] == THR001_LINE
    assert lines[1].startswith("tfdoctor: error: THR001 thread-count-not-a-number: TF_NUM_INTRAOP_THREADS='-3'")


def test_warnings_stay_silent_below_the_fail_on_level(node: Path, tmp_path: Path) -> None:
    env = {"OMP_NUM_THREADS": "64"}  # more threads than the node's 2 CPUs: a warning, not an error
    quiet = hook(["check", "--root", str(node), "--fail-on", "error", "--quiet"], env=env, cwd=tmp_path)
    assert (quiet.returncode, quiet.stdout) == (0, "")
    loud = hook(["check", "--root", str(node), "--fail-on", "warning", "--quiet"], env=env, cwd=tmp_path)
    assert loud.returncode == 1
    assert [line.split(":")[1] for line in loud.stdout.splitlines()] == [" warning"]
    assert "OMP_NUM_THREADS=64" in loud.stdout


def test_fail_on_never_reports_nothing_and_exits_0(node: Path, tmp_path: Path) -> None:
    done = hook(["check", "--root", str(node), "--fail-on", "never", "--quiet"],
                env={"OMP_NUM_THREADS": "abc"}, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, "")


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "1e400", "soon"])
def test_bad_timeout_is_a_usage_error(node: Path, tmp_path: Path, value: str) -> None:
    done = hook(["check", "--root", str(node), "--quiet", "--timeout", value], cwd=tmp_path)
    assert done.returncode == 2
    assert "--timeout" in done.stderr.splitlines()[-1] and "Traceback" not in done.stderr
    assert done.stdout == ""


def with_plugin(group: str) -> str:
    """A prelude that adds tests/support/hook_plugins.py to one entry-point group, as an installed plugin would."""
    return ("import tfdoctor.registry as registry\n"
            "real = registry._entry_points\n"
            "registry._entry_points = lambda g: "
            f"[*real(g), ('bad', 'support.hook_plugins')] if g == {group!r} else real(g)\n")


def test_a_hung_probe_cannot_hang_the_hook(node: Path, tmp_path: Path) -> None:
    # The subprocess timeout (60 s) is the hang detector; the budget here is half a second.
    done = hook(["check", "--root", str(node), "--fail-on", "error", "--quiet", "--timeout", "0.5"],
                env={"OMP_NUM_THREADS": "abc"}, cwd=tmp_path, prelude=with_plugin("tfdoctor.probes"))
    assert done.returncode == 1
    assert done.stdout.splitlines() == [THR001_LINE]
    assert done.stderr == ("tfdoctor: not checked: probe(s) wedged did not finish within the --timeout budget; "
                           "raise --timeout to check them\n")



def test_a_crashing_check_exits_3_with_one_line(node: Path, tmp_path: Path) -> None:
    done = hook(["check", "--root", str(node), "--fail-on", "error", "--quiet"], cwd=tmp_path,
                prelude=with_plugin("tfdoctor.checks"))
    assert done.returncode == 3
    [line] = done.stdout.splitlines()
    assert line.startswith("tfdoctor: crashed: ZZZ999 always-crashes: RuntimeError: boom")


def test_eval_fix_print_then_the_hook_passes(node: Path, tmp_path: Path) -> None:
    python = f"{sys.executable} -c 'from tfdoctor.cli import main; main()'"
    script = (f'eval "$({python} fix --root {node} --print 2>/dev/null)"\n'
              f'{python} check --root {node} --fail-on error --quiet || exit 1\n'
              'echo "OMP_NUM_THREADS=$OMP_NUM_THREADS"\n')
    done = subprocess.run(["sh", "-c", script], env={"PATH": os.environ["PATH"], "OMP_NUM_THREADS": "abc"},
                          cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout) == (0, "OMP_NUM_THREADS=2\n")


# -- TaskProlog ----------------------------------------------------------------------------------------

SOURCE = Source("TST001", "test-finding", "a test finding")


def plan_of(*changes) -> FixPlan:
    return FixPlan(env=[PlannedChange(change, (SOURCE,), "fix it") for change in changes])


def test_taskprolog_sets_and_unsets_literally() -> None:
    plan = plan_of(set_env("OMP_NUM_THREADS", "8"), set_env("XLA_FLAGS", "--xla_a=1 --xla_b='x y' $HOME"),
                   unset_env("KMP_AFFINITY"))
    rendered = render_taskprolog(plan, {})
    assert rendered.text == ("export OMP_NUM_THREADS=8\n"
                             "export XLA_FLAGS=--xla_a=1 --xla_b='x y' $HOME\n"
                             "unset KMP_AFFINITY\n")
    assert rendered.notes == ()


def test_taskprolog_prepend_uses_the_tasks_current_value() -> None:
    plan = plan_of(prepend_path("LD_LIBRARY_PATH", "/opt/cuda/lib64"))
    assert render_taskprolog(plan, {}).text == "export LD_LIBRARY_PATH=/opt/cuda/lib64\n"
    assert render_taskprolog(plan, {"LD_LIBRARY_PATH": ""}).text == "export LD_LIBRARY_PATH=/opt/cuda/lib64\n"
    assert (render_taskprolog(plan, {"LD_LIBRARY_PATH": "/usr/lib:/x"}).text
            == "export LD_LIBRARY_PATH=/opt/cuda/lib64:/usr/lib:/x\n")
    # Already there: nothing to change, so nothing is written.
    assert render_taskprolog(plan, {"LD_LIBRARY_PATH": "/usr/lib:/opt/cuda/lib64"}).text == ""


def test_taskprolog_skips_values_with_line_breaks_with_a_note() -> None:
    plan = plan_of(set_env("TF_CONFIG", '{"a":\n1}'), set_env("OMP_NUM_THREADS", "4"))
    rendered = render_taskprolog(plan, {})
    assert rendered.text == "export OMP_NUM_THREADS=4\n"
    assert rendered.notes == ("tfdoctor: TST001 not applied: the value of TF_CONFIG contains a line break, "
                              "which a TaskProlog cannot express",)


def test_fix_format_taskprolog_on_the_command_line(node: Path, tmp_path: Path) -> None:
    done = hook(["fix", "--root", str(node), "--format", "taskprolog"], env={"OMP_NUM_THREADS": "abc"},
                cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, "export OMP_NUM_THREADS=2\n")
    healthy = hook(["fix", "--root", str(node), "--format", "taskprolog"], cwd=tmp_path)
    assert (healthy.returncode, healthy.stdout) == (0, "")


def test_fix_shell_is_kept_as_an_alias_of_format(node: Path, tmp_path: Path) -> None:
    env = {"OMP_NUM_THREADS": "abc"}
    by_shell = hook(["fix", "--root", str(node), "--shell", "fish"], env=env, cwd=tmp_path)
    by_format = hook(["fix", "--root", str(node), "--format", "fish"], env=env, cwd=tmp_path)
    assert by_shell.returncode == 0 and "set -gx OMP_NUM_THREADS '2'" in by_shell.stdout
    assert by_shell.stdout == by_format.stdout
    clash = hook(["fix", "--root", str(node), "--format", "sh", "--shell", "fish"], cwd=tmp_path)
    assert clash.returncode == 2
    assert clash.stderr == "tfdoctor: error: --format sh and --shell fish disagree; give one of them\n"


# Derivations that only a GPU (or several NUMA nodes) can make useful: each check imports them past its
# own gate, so the pre-job hook on a CPU-only host never pays for them (about 25 ms of the hook's time).
GPU_ONLY_DERIVATIONS = ("tfdoctor.derive.numa_placement", "tfdoctor.derive.resolvable_libraries",
                        "tfdoctor.derive.cuda_releases", "tfdoctor.derive.job_layout",
                        "tfdoctor.derive.tf_config", "tfdoctor.derive.allreduce")

_IMPORTED_BY_CHECK = (
    "import sys\n"
    "from tfdoctor.cli import main\n"
    "try:\n    main(['check', '--facts', sys.argv[1], '--format', 'json'])\n"
    "except SystemExit:\n    pass\n"
    "sys.stderr.write(' '.join(sorted(m for m in sys.modules if m.startswith('tfdoctor.derive.') or m == 'tomllib')))\n"
)


def _derivations_imported(snapshot: Path, tmp_path: Path) -> set[str]:
    done = subprocess.run([sys.executable, "-c", _IMPORTED_BY_CHECK, str(snapshot)], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert done.stdout.startswith("{"), done.stderr
    return set(done.stderr.split())


def test_check_on_a_cpu_only_host_imports_no_gpu_derivation(tmp_path: Path) -> None:
    snapshots = REPO / "tests" / "snapshots"
    cpu_only = _derivations_imported(snapshots / "cpu-only-vm-tensorflow-2.21.json", tmp_path)
    assert cpu_only and not cpu_only & set(GPU_ONLY_DERIVATIONS)
    # Nor the TOML parser: the knowledge tables come from their compiled twins, and there is no config.
    assert "tomllib" not in cpu_only
    # The same run over a GPU host's facts does import them: the gates open where they should.
    numa = _derivations_imported(snapshots / "numa" / "slurm-rank1-off-gpu-node.json", tmp_path)
    assert "tfdoctor.derive.numa_placement" in numa
    cuda = _derivations_imported(snapshots / "gpu" / "cuda002-cudnn-older-than-build.json", tmp_path)
    assert {"tfdoctor.derive.resolvable_libraries", "tfdoctor.derive.cuda_releases"} <= cuda


def test_every_dataclass_has_a_docstring() -> None:
    """Without one, `dataclass` builds the class's doc from inspect.signature at import: about 0.5 ms a
    class here, a tenth of the hook's own import time over the thirty on its path. Also, it is the doc."""
    import ast

    package = REPO / "tfdoctor"
    bare = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.ClassDef) and not ast.get_docstring(node)
                    and any("dataclass" in ast.unparse(d) for d in node.decorator_list)):
                bare.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name}")
    assert bare == []


def test_the_entry_point_imports_the_command_line_with_the_collector_paused_then_frozen() -> None:
    """tfdoctor.console (the `tfdoctor` script, `python -m tfdoctor`) freezes what importing the command
    line made, and leaves the collector on for the command; importing tfdoctor.cli alone changes nothing."""
    code = ("import gc\n"
            "from tfdoctor.console import load_cli\n"
            "main = load_cli()\n"
            "print(gc.isenabled(), gc.get_freeze_count() > 10000, main.__module__)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split() == ["True", "True", "tfdoctor.cli"]
    code = "import gc\nimport tfdoctor.cli\nprint(gc.isenabled(), gc.get_freeze_count())\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split() == ["True", "0"]
    code = "import gc\ngc.disable()\nfrom tfdoctor.console import load_cli\nload_cli()\nprint(gc.isenabled())\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split() == ["False"]  # a caller that had turned it off keeps it off

