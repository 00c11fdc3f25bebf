"""benchmarks/check_speed.py says where the checks it times keep what they learn, by the probe's own rule
(pyenv_snapshot.cache_folder): a run reported as "kept" must be one whose checks could keep anything. The
benchmarks that judge the pre-job hook judge it by the one budget docs/writing-a-check.md states."""

from __future__ import annotations

import re
import sys

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))

import check_speed
import python_env_probe


def test_the_cache_folder_printed_is_the_probes():
    assert check_speed.kept_where({"HOME": "/home/u"}) == "kept in /home/u/.cache/tfdoctor"
    assert check_speed.kept_where({"HOME": "/home/u", "XDG_CACHE_HOME": "/x"}) == "kept in /x/tfdoctor"
    assert check_speed.kept_where({"TFDOCTOR_CACHE_DIR": "/c", "HOME": "/home/u"}) == "kept in /c"


def test_a_run_that_keeps_nothing_is_not_reported_as_kept():
    # The probe ignores a relative folder (it would follow the job's working folder) and needs HOME or XDG.
    for env in ({"TFDOCTOR_CACHE_DIR": "cache", "HOME": "/home/u"}, {"TFDOCTOR_CACHE_DIR": ""}, {},
                {"XDG_CACHE_HOME": "relative"}):
        assert check_speed.kept_where(env).startswith("nothing kept between runs"), env
    assert check_speed.kept_where({"XDG_CACHE_HOME": "relative", "HOME": "/home/u"}) == \
        "kept in /home/u/.cache/tfdoctor"


def test_the_hook_budget_is_the_documented_one():
    page = (REPO / "docs" / "writing-a-check.md").read_text()
    stated = re.search(r"must cost at most (\d+) % of `import tensorflow`", page)
    assert stated, "docs/writing-a-check.md no longer states the hook's budget"
    budget = int(stated[1])
    assert check_speed.LIMIT == python_env_probe.LIMIT == budget / 100
    assert f"(limit {budget} %)" in (REPO / "benchmarks" / "check_speed_ab.py").read_text()
    assert f"({budget} %, issue 26" in python_env_probe.__doc__
