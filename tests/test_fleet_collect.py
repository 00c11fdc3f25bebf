"""tfdoctor collect named by host: -o with %h/%N/%j, and --by-host DIR."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tfdoctor.fleet.output_name import OutputNameError, expand_output
from tfdoctor.testing import FakeRoot


@pytest.mark.parametrize(("pattern", "environ", "expected"), [
    ("facts/%h.json", {}, "facts/gpu07.cluster.example.json"),
    ("facts/%N.json", {}, "facts/gpu07.json"),
    ("facts/%N.json", {"SLURMD_NODENAME": "n-7"}, "facts/n-7.json"),
    ("facts/%j/%N.json", {"SLURM_JOB_ID": "4242"}, "facts/4242/gpu07.json"),
    ("facts/%j-%N.json", {"PBS_JOBID": "17.pbs"}, "facts/17.pbs-gpu07.json"),
    ("facts/%j-%N.json", {"LSB_JOBID": "9"}, "facts/9-gpu07.json"),
    ("facts/%j.json", {}, "facts/nojob.json"),
    ("100%%-%N.json", {}, "100%-gpu07.json"),
    ("plain.json", {}, "plain.json"),
])
def test_output_patterns(pattern: str, environ: dict[str, str], expected: str) -> None:
    assert expand_output(pattern, "gpu07.cluster.example", environ) == expected


def test_a_name_cannot_climb_out_of_the_folder() -> None:
    assert expand_output("facts/%N.json", "h", {"SLURMD_NODENAME": "../../etc/x"}) == "facts/.._.._etc_x.json"


@pytest.mark.parametrize("pattern", ["%t.json", "facts/%", "%n"])
def test_unknown_patterns_are_refused(pattern: str) -> None:
    with pytest.raises(OutputNameError):
        expand_output(pattern, "h", {})


def collect(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    root = FakeRoot(cwd / "root").cpus().path
    code = f"from tfdoctor.cli import main; main({['collect', '--root', str(root), *args]!r})"
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env={"PATH": os.environ["PATH"], **env},
                          capture_output=True, text=True, timeout=60, check=False)


def test_collect_by_host_creates_the_folder_and_names_the_file(tmp_path: Path) -> None:
    done = collect(["--by-host", "facts"], tmp_path, {"SLURMD_NODENAME": "gpu07"})
    assert done.returncode == 0, done.stderr
    assert done.stderr == "tfdoctor: facts written to facts/gpu07.json\n"
    assert json.loads((tmp_path / "facts" / "gpu07.json").read_text())["schema_version"] == 1
    again = collect(["--by-host", "facts"], tmp_path, {"SLURMD_NODENAME": "gpu07"})
    assert again.returncode == 2 and "exists; add --force" in again.stderr


def test_collect_output_pattern_and_errors(tmp_path: Path) -> None:
    (tmp_path / "facts").mkdir()
    done = collect(["-o", "facts/%N-%j.json"], tmp_path, {"SLURMD_NODENAME": "n1", "SLURM_JOB_ID": "5"})
    assert done.returncode == 0 and (tmp_path / "facts" / "n1-5.json").exists()
    bad = collect(["-o", "facts/%t.json"], tmp_path, {})
    assert (bad.returncode, bad.stderr) == (2, "tfdoctor: error: unknown pattern %t in 'facts/%t.json' "
                                               "(known: %h %N %j %%)\n")
    both = collect(["-o", "x.json", "--by-host", "facts"], tmp_path, {})
    assert (both.returncode, both.stderr) == (2, "tfdoctor: error: give -o FILE or --by-host DIR, not both\n")
