"""`tfdoctor fix --write-launcher` and the NUMA checks through the command line."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from support.command_line import run_cli
from support.numa_hosts import probe_with_gpus, two_socket_host


def tfdoctor(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_cli(list(args), cwd=cwd, timeout=120)


def facts_file(make_root, tmp_path: Path, env: dict[str, str]) -> Path:
    facts = probe_with_gpus(two_socket_host(make_root()), env)
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(facts.to_json()))
    return path


def test_write_launcher_writes_an_executable_and_refuses_to_overwrite(make_root, tmp_path):
    facts = facts_file(make_root, tmp_path, {"CUDA_VISIBLE_DEVICES": "2,3"})
    done = tfdoctor("fix", "--facts", str(facts), "--write-launcher", "run.sh", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""  # only the launcher was asked for: no env script on stdout
    launcher = tmp_path / "run.sh"
    assert os.access(launcher, os.X_OK)
    text = launcher.read_text()
    assert text.startswith("#!/bin/sh\n# tfdoctor ")
    assert "  '') node='1' cpus='8-15,24-31'" in text
    assert "launcher written to run.sh (node 1 without a local rank; 2 rank slot(s); binding by numactl)" in done.stderr
    assert "NUMA001 needs an administrator: Bind the process to NUMA node 1" in done.stderr

    again = tfdoctor("fix", "--facts", str(facts), "--write-launcher", "run.sh", cwd=tmp_path)
    assert again.returncode == 2
    assert again.stderr.startswith("tfdoctor: error: run.sh exists; add --force to overwrite it")
    launcher.write_text("mine\n")
    forced = tfdoctor("fix", "--facts", str(facts), "--write-launcher", "run.sh", "--force", cwd=tmp_path)
    assert forced.returncode == 0
    assert launcher.read_text() == text


def test_env_script_gains_the_bound_nodes_thread_sizes(make_root, tmp_path):
    facts = facts_file(make_root, tmp_path, {"CUDA_VISIBLE_DEVICES": "2,3"})
    done = tfdoctor("fix", "--facts", str(facts), "--write", "env.sh", "--write-launcher", "run.sh", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    script = (tmp_path / "env.sh").read_text()
    assert "# NUMA001 process-unbound-from-gpu-node:" in script
    assert "OMP_NUM_THREADS='8'" in script and "TF_NUM_INTRAOP_THREADS='8'" in script


def test_check_reports_the_numa_finding(make_root, tmp_path):
    facts = facts_file(make_root, tmp_path, {"CUDA_VISIBLE_DEVICES": "2,3"})
    done = tfdoctor("check", "--facts", str(facts), "--select", "NUMA", "--format", "json", cwd=tmp_path)
    assert done.returncode == 0  # a warning, below the default --fail-on error
    report = json.loads(done.stdout)
    failed = [r["code"] for r in report["results"] if r["status"] == "failed"]
    assert failed == ["NUMA001"]


def test_launcher_needs_numa_facts(tmp_path):
    facts = {"schema_version": 1, "meta": {}, "sections": {
        "cpu": {"online": [0, 1]}, "numa": {"$unknown": "probe numa failed"}, "env": {"variables": {}}}}
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(facts))
    done = tfdoctor("fix", "--facts", str(path), "--write-launcher", "run.sh", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("tfdoctor: error: cannot write the launcher run.sh: numa unknown: probe numa failed")
    assert not (tmp_path / "run.sh").exists()


def test_every_numa_check_is_documented():
    from tfdoctor.registry import DOC_SECTIONS, load_registry

    checks = [c for c in load_registry().checks if c.code.startswith("NUMA")]
    assert [c.code for c in checks] == ["NUMA001", "NUMA002", "NUMA003", "NUMA004", "NUMA101", "NUMA102"]
    for spec in checks:
        for section in DOC_SECTIONS:
            assert f"{section}:" in spec.doc or f"{section}\n" in spec.doc, (spec.code, section)


def test_recorded_slurm_rank_replays_with_an_error_and_a_rank_aware_launcher(tmp_path):
    from conftest import REPO

    snapshot = REPO / "tests" / "snapshots" / "numa" / "slurm-rank1-off-gpu-node.json"
    done = tfdoctor("check", "--facts", str(snapshot), "--select", "NUMA", "--format", "json", cwd=tmp_path)
    assert done.returncode == 1  # an error, at the default --fail-on
    report = json.loads(done.stdout)
    (failed,) = [r for r in report["results"] if r["status"] == "failed"]
    assert failed["code"] == "NUMA102"
    assert failed["findings"][0]["message"] == "local rank 1 is bound to NUMA node(s) 1 but its GPU 1 sits on node 0"
    done = tfdoctor("fix", "--facts", str(snapshot), "--write-launcher", "run.sh", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "run.sh").read_text()
    assert "      1) node='0' cpus='0-7,16-23' places='{0}:8,{16}:8' intra=4 inter=1 ;;" in text
    assert "      2) node='1' cpus='8-15,24-31' places='{8}:8,{24}:8' intra=4 inter=1 ;;" in text
