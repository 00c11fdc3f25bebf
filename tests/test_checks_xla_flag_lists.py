"""XLA_FLAGS and TF_XLA_FLAGS judged by the flags the installed release registers (issue 36 item 1): XLA103 and
XLA108 by the installed library's own list first (probe xla_flag_names), tfdoctor/knowledge/xla_flags.toml
second; XLA101 by tfdoctor/knowledge/tf_xla_flags.toml. Each case has a healthy twin that differs by the flag."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import check_facts, env_fixes
from support import gpu_scenarios as g
from support.framework_facts import make_facts

from tfdoctor.facts import Facts
from tfdoctor.model import Severity, set_env, unset_env

SNAPSHOTS = Path(__file__).parent / "snapshots" / "checks"
LIBRARY = "/opt/venv/lib/python3.11/site-packages/tensorflow/libtensorflow_cc.so.2"
# `python -m tfdoctor.knowledge.xla_flag_list` on tensorflow_cpu-2.14.1 (a release xla_flags.toml has no row
# for): the list the probe reads from that release's installed library.
LIST_2_14 = Path(__file__).parent / "data" / "release" / "xla-flags-tensorflow-cpu-2.14.1.txt"


def flags_2_14() -> list[str]:
    return [line for line in LIST_2_14.read_text(encoding="utf-8").splitlines() if not line.startswith("#")]


def _facts(version: str, env: dict[str, str], library: list[str] | None = None) -> Facts:
    """A CPU node with tensorflow-cpu `version`; `library`: the xla_flag_names section as the probe writes it
    after reading the installed library (None: not read, as when XLA_FLAGS is unset or the table settles it)."""
    facts = make_facts(env=env)
    facts.sections["python"] = g.python_section(tf_version=version, cuda=None, pins={}, dist="tensorflow-cpu")
    if library is not None:
        facts.sections["xla_flag_names"] = {"library": LIBRARY, "tensorflow": version, "flags": library,
                                            "cached": False, "read_bytes": 40_961_204}
    return facts


def fixtures() -> dict[str, Facts]:
    """The triggering fixtures under tests/snapshots/checks/, as built here (test_fixtures_are_current)."""
    return {
        "xla101-flag-tensorflow-2-20-no-longer-registers": _facts(
            "2.20.0", {"TF_XLA_FLAGS": "--tf_xla_auto_jit=2 --tf_mlir_enable_generic_outside_compilation"}),
        "xla103-flag-the-installed-library-does-not-register": _facts(
            "2.14.1", {"XLA_FLAGS": "--xla_dump_to=/tmp/xla --xla_cpu_enable_fast_maths=false"}, flags_2_14()),
        "xla108-command-buffer-flag-judged-by-the-installed-2-14-library": _facts(
            "2.14.1", {"XLA_FLAGS": "--xla_gpu_enable_command_buffer= --xla_dump_to=/tmp/xla"}, flags_2_14()),
    }


@pytest.mark.parametrize("name", sorted(fixtures()))
def test_fixtures_are_current(name):
    path = SNAPSHOTS / f"{name}.json"
    assert path.read_text(encoding="utf-8") == fixtures()[name].dumps() + "\n", \
        f"{path} is stale: write fixtures()[{name!r}].dumps() to it"


def test_the_2_14_list_is_read_from_its_wheel():
    names = flags_2_14()
    assert LIST_2_14.read_text().startswith("# tensorflow_cpu-2.14.1-")
    assert "xla_cpu_enable_fast_math" in names and "xla_dump_to" in names
    assert "xla_gpu_enable_command_buffer" not in names  # came with 2.16's XLA (xla_flags.toml)


# -- XLA101: TF_XLA_FLAGS against the release's own list -------------------------------------------------------

def _tf(version: str, flags: str):
    return check_facts(_facts(version, {"TF_XLA_FLAGS": flags}), select=["XLA101"]).findings()


def test_a_flag_the_release_removed_is_an_error():
    (finding,) = check_facts(fixtures()["xla101-flag-tensorflow-2-20-no-longer-registers"],
                             select=["XLA101"]).findings()
    assert finding.severity is Severity.ERROR
    assert finding.message == ("TF_XLA_FLAGS has --tf_mlir_enable_generic_outside_compilation, which TensorFlow "
                               "2.20.0 does not register (registered by TensorFlow 2.15.1 to 2.16.2): TensorFlow "
                               "aborts at its first XLA use")
    assert finding.evidence["registered_in"] == ["2.15.1", "2.16.2"]
    assert finding.evidence["flags_read_from"] == "the TensorFlow 2.20.0 wheel (tf_xla_flags.toml)"
    assert finding.fixes[0].changes == (set_env("TF_XLA_FLAGS", "--tf_xla_auto_jit=2"),)


def test_the_same_flag_under_a_release_that_registers_it_is_silent():
    # The healthy twin: 2.16.1 is judged by the 2.16.2 list (the minor series), which has the flag.
    assert _tf("2.16.1", "--tf_xla_auto_jit=2 --tf_mlir_enable_generic_outside_compilation") == []


def test_a_flag_of_a_newer_release_is_an_error():
    (finding,) = _tf("2.20.0", "--tf_mlir_enable_debug_info_serialization")
    assert "(registered by TensorFlow 2.21.0)" in finding.message
    assert finding.fixes[0].changes == (unset_env("TF_XLA_FLAGS"),)
    assert _tf("2.21.0", "--tf_mlir_enable_debug_info_serialization") == []


def test_a_misspelling_is_corrected_from_the_releases_list():
    (finding,) = _tf("2.20.0", "--tf_xla_auto_jit=2 --tf_xla_cpu_global_jitt")
    assert finding.severity is Severity.ERROR
    assert finding.message == ("TF_XLA_FLAGS has --tf_xla_cpu_global_jitt, which TensorFlow 2.20.0 does not "
                               "register (did you mean --tf_xla_cpu_global_jit?): TensorFlow aborts at its first "
                               "XLA use")
    assert finding.fixes[0].changes == (set_env("TF_XLA_FLAGS", "--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit"),)


def test_a_flag_no_release_registers_is_an_error_only_where_the_release_is_listed():
    # tfdoctor's own list names --tf_xla_annotate_cluster_id, but no wheel from 2.15 registers it.
    (listed,) = _tf("2.21.0", "--tf_xla_annotate_cluster_id")
    assert listed.severity is Severity.ERROR
    assert "(a flag of releases tfdoctor has no list for)" in listed.message
    assert _tf("2.14.1", "--tf_xla_annotate_cluster_id") == []  # outside the table: tfdoctor's list, as before
    (unknown,) = _tf("2.14.1", "--tf_xla_brand_new_flag")
    assert unknown.severity is Severity.WARNING  # outside the table: as before, a warning
    (judged,) = _tf("2.21.0", "--tf_xla_brand_new_flag")
    assert judged.severity is Severity.ERROR
    assert judged.message == ("TF_XLA_FLAGS has --tf_xla_brand_new_flag, which TensorFlow 2.21.0 does not register: "
                              "TensorFlow aborts at its first XLA use")


@pytest.mark.parametrize("version", ["2.15.1", "2.17.0", "2.19.1", "2.21.0"])
def test_flags_every_listed_release_registers_are_silent(version):
    flags = ("--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit --tf_xla_min_cluster_size=4 "
             "--tf_xla_persistent_cache_directory=/tmp/xla-cache --tf_xla_enable_lazy_compilation=false")
    assert _tf(version, flags) == []


def test_tfdoctors_typo_list_names_only_flags_some_release_registers_or_registered():
    # TF_XLA_KNOWN (derive/xla_flags.py) against the wheels: what no listed release has is named here.
    from tfdoctor import knowledge
    from tfdoctor.derive.xla_flags import TF_XLA_KNOWN

    listed = {name for row in knowledge.table_rows("tf_xla_flags") for name in row["flags"]}
    assert sorted(TF_XLA_KNOWN - listed) == [
        "tf_introduce_floating_point_jitter_amount", "tf_introduce_floating_point_jitter_to_tensors",
        "tf_xla_annotate_cluster_id", "tf_xla_cluster_parallel"]


def test_the_lists_follow_flags_cc_history():
    from tfdoctor import knowledge

    def has(flag):
        return [r["release"] for r in knowledge.table_rows("tf_xla_flags") if flag in r["flags"]]

    assert has("tf_mlir_enable_generic_outside_compilation") == ["2.15.1", "2.16.2"]
    assert has("tf_mlir_enable_multiple_local_cpu_devices") == ["2.16.2", "2.17.1", "2.18.1", "2.19.1", "2.20.0",
                                                                "2.21.0"]
    assert has("tf_xla_auto_jit") == ["2.15.1", "2.16.2", "2.17.1", "2.18.1", "2.19.1", "2.20.0", "2.21.0"]


# -- XLA103: XLA_FLAGS against the installed library, then the table ------------------------------------------

def _xla(version: str, flags: str, library: list[str] | None = None, select: str = "XLA103"):
    return check_facts(_facts(version, {"XLA_FLAGS": flags}, library), select=[select]).findings()


def test_a_name_the_installed_library_lacks_is_an_error_with_its_spelling():
    (finding,) = check_facts(fixtures()["xla103-flag-the-installed-library-does-not-register"],
                             select=["XLA103"]).findings()
    assert finding.severity is Severity.ERROR
    assert finding.message == ("XLA_FLAGS has --xla_cpu_enable_fast_maths, which the XLA of TensorFlow 2.14.1 does "
                               "not register (did you mean --xla_cpu_enable_fast_math?): XLA aborts at its first "
                               "compilation")
    assert finding.evidence["flags_read_from"] == LIBRARY
    assert finding.fixes[0].changes == (set_env("XLA_FLAGS",
                                                "--xla_dump_to=/tmp/xla --xla_cpu_enable_fast_math=false"),)


def test_the_spelling_the_library_registers_is_silent():
    assert _xla("2.14.1", "--xla_dump_to=/tmp/xla --xla_cpu_enable_fast_math=false", flags_2_14()) == []


def test_a_real_flag_near_a_common_one_is_no_longer_called_a_typo():
    # Without a list, --xla_dump_hlo_as_dot is within a typo of --xla_dump_hlo_as_proto: a warning, and a fix that
    # would respell a real flag. The library registers it: silent, and the flag is kept.
    (guess,) = _xla("2.14.1", "--xla_dump_hlo_as_dot")
    assert guess.severity is Severity.WARNING
    assert _xla("2.14.1", "--xla_dump_hlo_as_dot", flags_2_14()) == []


def test_without_the_library_the_releases_table_judges():
    (finding,) = _xla("2.20.0", "--xla_dump_too=/tmp/x")
    assert finding.severity is Severity.ERROR
    assert "(did you mean --xla_dump_to?)" in finding.message
    assert finding.evidence["flags_read_from"] == "the TensorFlow 2.20.0 wheel (xla_flags.toml)"
    assert _xla("2.20.0", "--xla_dump_to=/tmp/x --xla_cpu_use_thunk_runtime=false") == []


def test_a_name_no_list_knows_is_removed_by_the_fix():
    report = check_facts(_facts("2.14.1", {"XLA_FLAGS": "--xla_dump_to=/tmp/x --xla_made_up_option=1"},
                                flags_2_14()), select=["XLA103"])
    (finding,) = report.findings()
    assert finding.message == ("XLA_FLAGS has --xla_made_up_option, which the XLA of TensorFlow 2.14.1 does not "
                               "register: XLA aborts at its first compilation")
    assert env_fixes(report) == {"XLA_FLAGS": "--xla_dump_to=/tmp/x"}


def test_another_releases_flag_is_xla108s_not_xla103s():
    assert _xla("2.14.1", "--xla_gpu_enable_command_buffer=", flags_2_14()) == []
    assert _xla("2.21.0", "--xla_gpu_graph_level=0") == []


# -- XLA108: by the installed library where it was read -------------------------------------------------------

def test_a_newer_xlas_flag_is_judged_by_the_installed_library():
    (finding,) = check_facts(fixtures()["xla108-command-buffer-flag-judged-by-the-installed-2-14-library"],
                             select=["XLA108"]).findings()
    assert finding.message == ("XLA_FLAGS sets --xla_gpu_enable_command_buffer, which the XLA of TensorFlow 2.14.1 "
                               "does not register (a flag of newer XLA: the first release read that registers it is "
                               "2.16.2): XLA aborts at its first compilation")
    assert finding.evidence["flags_read_from"] == LIBRARY
    assert finding.fixes[0].changes == (set_env("XLA_FLAGS", "--xla_dump_to=/tmp/xla"),)
    # Without the library, 2.14 has no list: no verdict.
    assert _xla("2.14.1", "--xla_gpu_enable_command_buffer=", select="XLA108") == []


def test_a_library_that_registers_the_flag_overrules_the_table():
    # A 2.15 build whose library has the flag (a patched or nightly build): its own list decides.
    assert _xla("2.15.1", "--xla_gpu_enable_command_buffer=", select="XLA108") != []
    library = [*flags_2_14(), "xla_gpu_enable_command_buffer"]
    assert _xla("2.15.1", "--xla_gpu_enable_command_buffer=", library, select="XLA108") == []


def test_findings_of_both_checks_propose_one_value():
    facts = _facts("2.14.1", {"XLA_FLAGS": "--xla_gpu_enable_command_buffer= --xla_dump_to=/tmp/xla "
                                           "--xla_cpu_enable_fast_maths=false"}, flags_2_14())
    report = check_facts(facts, select=["XLA103", "XLA108"])
    assert report.codes() == ["XLA103", "XLA108"]
    assert env_fixes(report) == {"XLA_FLAGS": "--xla_dump_to=/tmp/xla --xla_cpu_enable_fast_math=false"}


def test_the_healthy_twin_on_2_14_is_judged_by_its_own_library(examined):
    # tests/healthy/machines_release.py: the probe read the fake library (the real 2.14.1 names) through
    # --root, and XLA103 and XLA108 ran on its list and found nothing.
    from healthy import MACHINES

    from tfdoctor.model import Status

    (machine,) = [m for m in MACHINES if m.name == "release-cpu-214-xla-flags-from-its-library"]
    done = examined(machine)
    read = Facts.load(done.recorded).get("xla_flag_names")
    assert read["library"] == "/home/ada/venv/lib/python3.11/site-packages/tensorflow/libtensorflow_cc.so.2"
    assert read["tensorflow"] == "2.14.1" and read["flags"] == flags_2_14()
    assert {c: done.report.result(c).status for c in ("XLA103", "XLA108")} == {"XLA103": Status.PASSED,
                                                                              "XLA108": Status.PASSED}
