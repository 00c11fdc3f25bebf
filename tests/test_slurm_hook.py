"""The pre-job hook under a real Slurm: a single-node cluster on loopback (tests/support/local_slurm.py).

The cluster is tests/conftest.py's `slurm` fixture (shared with tests/test_tune_slurm.py): skipped, with the
reason, where Slurm cannot be installed or started (no root, no apt, no network).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from support.local_slurm import LocalSlurm

pytestmark = pytest.mark.slurm

# The job runs on a node with a bare PATH: use the absolute path of this venv's own script.
TFDOCTOR = str(Path(sys.executable).parent / "tfdoctor")
HOOK = f"{TFDOCTOR} check --fail-on error --quiet || exit 1"


def test_hook_lets_a_healthy_job_run_to_the_end(slurm: LocalSlurm) -> None:
    code, output = slurm.sbatch(f"#!/bin/sh\n{HOOK}\necho job-body-ran\n", "healthy", env={})
    assert (code, output) == (0, "job-body-ran\n")


def test_hook_stops_a_job_with_a_planted_error(slurm: LocalSlurm) -> None:
    code, output = slurm.sbatch(f"#!/bin/sh\n{HOOK}\necho job-body-ran\n", "planted",
                                env={"OMP_NUM_THREADS": "abc"})
    assert code == 1
    assert "job-body-ran" not in output
    assert output.splitlines() == [
        "tfdoctor: error: THR001 thread-count-not-a-number: OMP_NUM_THREADS='abc' is not a positive whole "
        "number; the runtime ignores it"
    ]


def test_task_prolog_applies_the_fixes_to_every_task(slurm: LocalSlurm) -> None:
    script = (
        "#!/bin/sh\n"
        'echo "batch OMP_NUM_THREADS=$OMP_NUM_THREADS cpus=$SLURM_CPUS_ON_NODE"\n'
        "srun sh -c 'echo \"step OMP_NUM_THREADS=$OMP_NUM_THREADS\"'\n"
        f"{HOOK}\n"
        "echo job-body-ran\n"
    )
    code, output = slurm.sbatch(script, "prolog", env={"OMP_NUM_THREADS": "abc", "TFDOCTOR_TEST_PROLOG": "1"})
    lines = output.splitlines()
    assert code == 0, output
    # The fix sets OMP_NUM_THREADS to the job's CPU budget: the CPUs Slurm gave it on this node.
    cpus = lines[0].rsplit("cpus=", 1)[1]
    assert cpus.isdigit()
    assert lines == [f"batch OMP_NUM_THREADS={cpus} cpus={cpus}", f"step OMP_NUM_THREADS={cpus}", "job-body-ran"]


def test_srun_collects_facts_named_by_node_and_compare_reads_them(slurm: LocalSlurm) -> None:
    script = (
        "#!/bin/sh\n"
        "mkdir -p facts\n"
        f"srun --ntasks-per-node=1 {TFDOCTOR} collect -o facts/%N.json --force 2>/dev/null || exit 1\n"
        f"{TFDOCTOR} compare facts/*.json\n"
    )
    code, output = slurm.sbatch(script, "collect", env={})
    assert (code, output) == (0, "All 1 node(s) agree on every compared fact.\n")
    # slurmd was started as node "localhost": %N is Slurm's node name, not the machine's host name.
    assert (slurm.base / "facts" / "localhost.json").exists()
