"""tests/conftest.py's watch over the slow parts: which markers the programs a test started and the modules
it imported call for (README, "Development": the fast subset leaves those tests out)."""

from __future__ import annotations

import os
import subprocess
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


# A run of pytest of its own over a small file, with tests/conftest.py's watch and nothing else of this suite:
# `module` stands for TensorFlow, as SLOW_MODULES is configured for it. The marked test imports it first;
# each unmarked test after it imports it again (already in sys.modules) and must still be caught.
ORDERED_TESTS = '''
import importlib

import pytest


@pytest.mark.tensorflow
def test_1_marked_imports_it_first():
    import {module}


def test_2_unmarked_import_statement():
    import {module}


def test_3_unmarked_from_import():
    from {module} import __version__


def test_4_unmarked_import_module():
    importlib.import_module("{module}")


def test_5_unmarked_imports_nothing_slow():
    import json
'''
WATCH_ONLY = '''
import importlib.util

spec = importlib.util.spec_from_file_location("watched_conftest", {conftest!r})
watch = importlib.util.module_from_spec(spec)
spec.loader.exec_module(watch)
watch.SLOW_MODULES.setdefault({module!r}, "tensorflow")
_slow_parts_carry_their_markers = watch._slow_parts_carry_their_markers
'''


@pytest.mark.parametrize("module", ["stand_in_tensorflow", pytest.param("tensorflow", marks=pytest.mark.tensorflow)])
def test_an_unmarked_import_is_caught_after_a_marked_test_loaded_the_module(tmp_path, module):
    from conftest import REPO

    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    tensorflow: runs TensorFlow\n")
    (tmp_path / "stand_in_tensorflow.py").write_text('__version__ = "0"\n')
    (tmp_path / "conftest.py").write_text(WATCH_ONLY.format(conftest=str(REPO / "tests" / "conftest.py"),
                                                            module=module))
    (tmp_path / "test_order.py").write_text(ORDERED_TESTS.format(module=module))
    # Its output is read line by line: plain whatever the caller's environment asks of pytest (a CI that sets
    # FORCE_COLOR or PY_COLORS for its logs, options in PYTEST_ADDOPTS).
    env = {name: value for name, value in os.environ.items() if name != "PYTEST_ADDOPTS"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rfE", "--color=no", "-p", "no:cacheprovider",
                           "test_order.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    # The watch fails a test at its teardown: pytest counts it as an error.
    caught = {line.split("::")[1].split(" ")[0] for line in done.stdout.splitlines() if line.startswith("ERROR ")}
    assert caught == {"test_2_unmarked_import_statement", "test_3_unmarked_from_import",
                      "test_4_unmarked_import_module"}, done.stdout + done.stderr
    assert "5 passed, 3 errors" in done.stdout and done.returncode == 1
    # Counted in the error sections, where the message is a line of its own: the short summary's lines repeat it
    # when the terminal is wide enough, and cut it where it is not.
    message = "this test runs tensorflow without the marker: add @pytest.mark.tensorflow"
    told = [line for line in done.stdout.splitlines() if line.startswith(message)]
    assert len(told) == 3, done.stdout


def test_the_import_watch_counts_each_import_that_succeeds_by_its_top_level_name():
    """`colorsys` stands for TensorFlow (already loaded or not, its import is counted each time it runs);
    a module that is not installed runs nothing slow, so its failed import is not counted."""
    import importlib

    import conftest

    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(conftest.SLOW_MODULES, "colorsys", "tensorflow")
        patch.setitem(conftest.SLOW_MODULES, "no_such_module_anywhere", "browser")
        seen = conftest.watch_slow_imports(patch)
        with pytest.raises(ImportError):
            import no_such_module_anywhere  # noqa: F401
        assert seen == set()
        import colorsys  # noqa: F401
        assert seen == {"colorsys"}
        seen.clear()
        importlib.import_module("colorsys")
        assert seen == {"colorsys"}
