"""A new user's first hour (issue 26): listings, quiet hooks, tables that fit, statuses that say what happened."""

from __future__ import annotations

import subprocess
import sys

from conftest import REPO

from tfdoctor.registry import doc_summary


def run_cli(args: list[str], env: dict[str, str] | None = None, cwd=None) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run([sys.executable, "-m", "tfdoctor", *args], cwd=cwd or REPO,
                          env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=60,
                          check=False)


def test_list_checks_describes_each_check_by_its_first_sentence():
    done = run_cli(["check", "--list-checks"])
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert not [line for line in lines if "What it does" in line]
    thr101 = next(line for line in lines if line.startswith("THR101 "))
    assert thr101.endswith("Finds a job limited to fewer CPUs than it may run on — a CFS quota (cgroup v2 "
                           "cpu.max, v1 cpu.cfs_quota_us) or a Slurm/PBS allocation that no binding enforces "
                           "— whose thread counts are left unset.")
    descriptions = [line[62:] for line in lines if not line.startswith("plugin error")]
    assert len(set(descriptions)) == len(descriptions)


def test_doc_summary_first_sentence_of_the_first_section():
    doc = "What it does:\nFinds X (e.g. Y) in v1.2 of\nthe thing. Then more.\n\nWhy is this bad?\nZ."
    assert doc_summary(doc) == "Finds X (e.g. Y) in v1.2 of the thing."
    assert doc_summary("A lint rule's one line.\n\nWhat it does:\n  more") == "A lint rule's one line."
    assert doc_summary("") == ""
