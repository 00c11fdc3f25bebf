"""tests/conftest.py's watch over the slow parts: which markers the programs a test started and the modules
it imported call for (README, "Development": the fast subset leaves those tests out)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import slow_parts_used

WORKLOAD = "/src/tfdoctor/profile/workload_main.py"


@pytest.mark.parametrize(("started", "imported", "expected"), [
    ([["/usr/bin/srun", "-N1", "hostname"]], [], {"slurm"}),
    (["sbatch --wait job.sh"], [], {"slurm"}),  # a shell string
    ([[Path("/usr/bin/chromium"), "--headless"]], [], {"browser"}),
    ([[sys.executable, WORKLOAD, "/tmp/spec.json"]], [], {"tensorflow"}),
    ([], ["tensorflow"], {"tensorflow"}),
    ([], ["playwright"], {"browser"}),
    ([[sys.executable, "-m", "tfdoctor", "check"], ["git", "status"], [b"/bin/sh", b"-c", b"true"]], ["json"], set()),
    ([["/opt/no-such-python", WORKLOAD]], [], set()),
    ([[]], [], set()),
])
def test_slow_parts_used(started, imported, expected):
    assert slow_parts_used(started, imported) == expected


def test_a_stand_in_interpreter_script_runs_no_tensorflow(tmp_path):
    """tests/test_profile_compare.py's fake children: a shell script named `python` before workload_main.py."""
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\nexec true\n")
    python.chmod(0o755)
    assert slow_parts_used([[str(python), WORKLOAD, "spec.json"]], []) == set()


def test_a_test_on_the_shared_cluster_is_marked_slurm(request):
    """The collection hook marks any test that takes the `slurm` fixture, and no other."""
    from types import SimpleNamespace

    import conftest

    on_cluster, elsewhere = [], []
    conftest.pytest_collection_modifyitems([
        SimpleNamespace(fixturenames=["tmp_path", "slurm"], add_marker=on_cluster.append),
        SimpleNamespace(fixturenames=["tmp_path"], add_marker=elsewhere.append)])
    assert [mark.name for mark in on_cluster] == ["slurm"] and elsewhere == []
    assert request.node.get_closest_marker("slurm") is None
