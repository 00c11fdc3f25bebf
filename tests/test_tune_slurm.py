"""A tune shared by a Slurm job array (docs/tune.md, "One tune on many nodes"), under a real Slurm: a
single-node cluster on loopback (tests/support/local_slurm.py); each array task is a worker of one
journal-file study, the measured command a fake job (tests/support/tune_fakes.py).

The cluster is tests/conftest.py's `slurm` fixture (shared with tests/test_slurm_hook.py): skipped, with the
reason, where Slurm cannot be installed or started (no root, no apt, no network).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from conftest import REPO
from support.local_slurm import LocalSlurm
from support.tune_fakes import METRIC
from support.tune_setup import FAKE, SPACE_TOML

pytestmark = pytest.mark.slurm
optuna = pytest.importorskip("optuna")

TFDOCTOR = str(Path(sys.executable).parent / "tfdoctor")
BUDGET = 12


def _array_script() -> str:
    """The batch script of docs/tune.md (the same in docs/batch.md), with the fake job as the command, a
    small budget and the space of the fake."""
    blocks = [re.search(r"```sh\n(#!/bin/sh\n#SBATCH --array.*?)```", (REPO / "docs" / page).read_text(), re.S)
              for page in ("tune.md", "batch.md")]
    assert all(blocks) and blocks[0].group(1) == blocks[1].group(1)
    script = blocks[0].group(1)
    script = script.replace("tfdoctor tune ", f"{TFDOCTOR} tune ").replace("--budget 64", f"--budget {BUDGET} "
                                                                           "--space space.toml")
    script = script.replace("-- python train.py --steps 200", f"-- {sys.executable} {FAKE}")
    script = script.replace("'images/sec: ([0-9.]+)'", f"'{METRIC}'")
    assert str(FAKE) in script and "--space space.toml" in script and METRIC in script
    return script.replace("#!/bin/sh\n", "#!/bin/sh\nexport FAKE_JOB_STATE=\"runs-$SLURM_ARRAY_TASK_ID\" "
                          "FAKE_JOB_DEPENDS=TF_NUM_INTRAOP_THREADS\n", 1)


def test_a_two_task_array_tunes_to_the_end_and_writes_the_winner_once(slurm: LocalSlurm) -> None:
    base = slurm.base
    (base / "space.toml").write_text(SPACE_TOML)
    (base / "tune.sh").write_text(_array_script())
    done = slurm.client(["sbatch", "--wait", "--array=0-1", "--ntasks=1", "--cpus-per-task=1", "--export=ALL",
                         "--job-name", "tune", "--output", str(base / "tune-%a.out"), "--chdir", str(base),
                         str(base / "tune.sh")], timeout=600)
    outputs = [(base / f"tune-{i}.out").read_text() if (base / f"tune-{i}.out").exists() else "" for i in (0, 1)]
    assert done.returncode == 0, (done.stderr, outputs, slurm.logs())
    journal = optuna.storages.journal.JournalFileBackend(str(base / "tune.journal"))
    storage = optuna.storages.JournalStorage(journal)
    names = optuna.get_all_study_names(storage)
    assert len(names) == 1 and names[0].startswith("tune-")  # one study: the array's, named by its job id
    trials = optuna.load_study(storage=storage, study_name=names[0]).get_trials()
    measured = [t for t in trials if "worker" in t.user_attrs]
    assert sorted(t.number for t in measured) == list(range(BUDGET))
    assert len({t.user_attrs["worker"] for t in measured}) == 2, outputs  # both tasks measured
    assert sum("writes the winner; this one is done" in out for out in outputs) == 1, outputs
    assert sum("verdict: change TF_NUM_INTRAOP_THREADS=4" in out for out in outputs) == 1, outputs
    assert "export TF_NUM_INTRAOP_THREADS" in (base / "env.sh").read_text()
