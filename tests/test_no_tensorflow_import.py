"""`tfdoctor check` must never import TensorFlow: it costs ~4 s and ~500 MB, and it writes
~/.keras/keras.json. Proved twice: with a booby-trapped fake TensorFlow, and with the real one."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

TRAP = """
import os, pathlib
pathlib.Path(os.environ["TFD_TRAP"]).write_text("imported")
keras = pathlib.Path(os.environ["HOME"]) / ".keras"
keras.mkdir(exist_ok=True)
(keras / "keras.json").write_text("{}")
"""


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], env={**os.environ, **env}, cwd=REPO, capture_output=True,
                          text=True, timeout=120, check=False)


def test_check_reads_a_booby_trapped_tensorflow_without_importing_it(tmp_path):
    site = tmp_path / "site"
    (site / "tensorflow" / "python" / "platform").mkdir(parents=True)
    (site / "tensorflow" / "__init__.py").write_text(TRAP)
    (site / "tensorflow" / "python" / "__init__.py").write_text(TRAP)
    (site / "tensorflow" / "python" / "platform" / "build_info.py").write_text(
        "import collections\nbuild_info = collections.OrderedDict([])\n"
        "build_info = {'is_cuda_build': False, 'cpu_compiler': '/usr/bin/clang-18'}\n")
    dist = site / "tensorflow_cpu-2.21.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: tensorflow-cpu\nVersion: 2.21.0\n"
                                   "Requires-Python: >=3.9\nRequires-Dist: numpy>=1.26.0\n\nlong text\n")
    home = tmp_path / "home"
    home.mkdir()
    trap = tmp_path / "imported.txt"
    env = {"PYTHONPATH": str(site), "HOME": str(home), "TFD_TRAP": str(trap)}
    for args in (["-m", "tfdoctor", "check", "--format", "json"], ["-m", "tfdoctor", "collect"]):
        done = run(args, env)
        assert done.returncode in (0, 1), done.stderr
        assert not trap.exists(), f"{args} imported tensorflow"
        assert list(home.iterdir()) == []
    facts = json.loads(run(["-m", "tfdoctor", "collect"], env).stdout)
    python = facts["sections"]["python"]
    assert python["tensorflow"]["package_dir"] == str(site / "tensorflow")
    assert python["tensorflow"]["build_info"]["is_cuda_build"] is False
    assert python["watched"]["tensorflow-cpu"]["version"] == "2.21.0"


@pytest.mark.tensorflow
@pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="tensorflow-cpu not installed")
def test_check_with_real_tensorflow_installed_never_imports_it(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    done = run(["-X", "importtime", "-m", "tfdoctor", "check", "--format", "json"], {"HOME": str(home)})
    assert done.returncode in (0, 1)
    imported = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time")]
    assert "tfdoctor.check_command" in imported  # the check ran (the hook form: without tfdoctor.cli)
    assert not [name for name in imported if name.split(".")[0] in ("tensorflow", "keras", "tf_keras")]
    assert list(Path(home).iterdir()) == []
