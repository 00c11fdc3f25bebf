"""The pre-job hook (`tfdoctor check`) costs at most 3 % of `import tensorflow` (issue 26): modules it need
not import stay unimported. Checked in a fresh interpreter by a finder first on sys.meta_path, which sees
every import, importlib.import_module's too (the registry loads checks and probes that way), and records
which module asked for each."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import sysconfig

from conftest import REPO
from support.build_info_samples import GENERATED
from support.fake_site_packages import FakeSitePackages
from support.hook_imports import HOOK_NEVER_IMPORTS, NEEDED_BY_SUBPROCESS

# What the hook's path must not import (tests/support/hook_imports.py): ast (build_info.py, read by
# pyenv_snapshot._generated_assignments), ipaddress (/proc/net/if_inet6, written by format_ipv6), datetime
# (the knowledge tables' dates, parsed only by knowledge.table, not knowledge.table_rows), typing, pathlib...
HOOK_FREE_OF = HOOK_NEVER_IMPORTS

# Run first in the child: records which module first imported each module named in sys.argv[1:], and at
# exit prints that with the `result` the code left and whether subprocess was imported.
RECORDER = """
import atexit, sys
watched = set(sys.argv[1:])
importers = {name: "<startup>" for name in watched if name in sys.modules}
atexit.register(lambda: print(repr((result, importers, "subprocess" in sys.modules)), file=sys.stderr))

class Recorder:
    def find_spec(self, name, path=None, target=None):
        if name in watched and name not in importers:
            frame = sys._getframe(1)
            while frame.f_code.co_filename.startswith("<frozen importlib"):
                frame = frame.f_back
            importers[name] = frame.f_globals.get("__name__")
        return None

sys.meta_path.insert(0, Recorder())
"""


def _fresh(code: str, *args: str, pythonpath: tuple[str, ...] = ()) -> tuple[object, dict[str, str], bool]:
    """`code`, after RECORDER, in a fresh interpreter started as the installed `tfdoctor` command starts:
    without site's .pth files (an editable install's finder imports pathlib, and with it ipaddress, before
    any code runs), this checkout first, then the packages of this environment. Returns what `code` left in
    `result`, the importers of the modules named in HOOK_FREE_OF, and whether subprocess was imported (a
    probe that starts a child, numactl's binding test on a host of several NUMA nodes, brings contextlib)."""
    paths = (str(REPO), *pythonpath, sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"])
    done = subprocess.run([sys.executable, "-S", "-c", RECORDER + code, *HOOK_FREE_OF, *args], capture_output=True,
                          text=True, timeout=120, check=False, env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)})
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode in (0, 1), done.stderr  # 1: `check` found something on this machine
    return ast.literal_eval(done.stderr.splitlines()[-1])


def test_a_live_check_imports_none_of_them(tmp_path):
    """`tfdoctor check --quiet` with its probes run on this machine, in an environment with TensorFlow
    (a fake wheel as TensorFlow 2.21 installs it, build_info.py as its generator writes it)."""
    site = FakeSitePackages(tmp_path / "site-packages").tensorflow(build_info=GENERATED["2.21-cpu"])
    site.healthy_dependencies()
    code = ("from tfdoctor.facts.probes import pyenv_snapshot\nread, calls = pyenv_snapshot.read_build_info, []\n"
            "pyenv_snapshot.read_build_info = lambda path: calls.append(path) or read(path)\n"
            "from tfdoctor.console import main\nsys.argv = ['tfdoctor', 'check', '--quiet']\ntry:\n    main()\n"
            "finally:\n    result = len(calls)")
    read_build_info, importers, child = _fresh(code, pythonpath=(str(site),))
    assert read_build_info > 0  # the fake TensorFlow's build_info.py was read
    assert {k: v for k, v in importers.items() if not (child and k in NEEDED_BY_SUBPROCESS)} == {}


def test_the_network_probe_reads_addresses_without_ipaddress(tmp_path):
    (tmp_path / "proc" / "net").mkdir(parents=True)
    (tmp_path / "proc" / "net" / "fib_trie").write_text("Local:\n  |-- 10.0.0.7\n     /32 host LOCAL\n")
    (tmp_path / "proc" / "net" / "if_inet6").write_text(
        "00000000000000000000000000000001 01 80 10 80       lo\n"
        "fe8000000000000000fc00fffe000001 04 40 20 80     eth0\n")
    code = ("from tfdoctor.facts.probes.network import _addresses\n"
            "class Files:  # the one Machine method _addresses calls, without a pathlib.Path\n"
            "    def read_text(self, path):\n        with open(sys.argv[-1] + path) as handle:\n"
            "            return handle.read()\n"
            "result = _addresses(Files())")
    addresses, importers, _ = _fresh(code, str(tmp_path))
    assert addresses == ["10.0.0.7", "::1", "fe80::fc:ff:fe00:1"]
    assert importers == {}


def test_the_hooks_tables_are_read_without_datetime():
    """The rows of the tables the hook reads come without datetime; a table's date, asked for, brings it."""
    code = ("names = ('openmp_runtimes', 'python_compatibility', 'tensorflow_threading')\n"
            "from tfdoctor import knowledge\nrows = [len(knowledge.table_rows(n)) > 0 for n in names]\n"
            "before = dict(importers)\ntaken = knowledge.table(names[0]).taken\n"
            "result = (rows, before, type(taken).__module__)")
    (rows, before, taken_type), importers, _ = _fresh(code)
    assert (rows, taken_type) == ([True, True, True], "datetime")
    assert "datetime" not in before
    assert importers["datetime"] == "tfdoctor.knowledge"  # table(...).taken: parsed when asked for
