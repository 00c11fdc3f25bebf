"""The requirement graph below TensorFlow and fixes checked against it (issue 36, "the Python environment").

PKG021 follows each dependency's own Requires-Dist; every pip fix of the PKG checks is checked against every
installed distribution's requirements before it is offered, and is not offered while a foreign folder
(PYTHONPATH, a .pth file, the user site) supplies what it would change. The fake environments are those of
tests/test_checks_packages_coupling.py (real dist-info shapes, a fake pip that resolves like pip).
"""

from __future__ import annotations

import json

import pytest
from support.fake_pip import FakePip
from support.fake_site_packages import (
    ML_DTYPES_0_7_REQUIRES,
    TF_2_15_REQUIRES,
    TF_2_20_REQUIRES,
    TF_2_21_REQUIRES,
    FakeSitePackages,
)
from test_checks_packages_coupling import PIP, SITUATIONS, Environment, apply_fix, make, new, old

from tfdoctor.derive.requirement_graph import (
    addon_release_for,
    addon_status,
    disjoint,
    fix_conflicts,
    tensorflow_closure,
)
from tfdoctor.derive.requirement_ranges import parse_requirement
from tfdoctor.derive.tensorflow_distribution import installed_tensorflow
from tfdoctor.facts.probes.pyenv_snapshot import snapshot
from tfdoctor.fixes.plan import plan_fixes
from tfdoctor.model import AdminFix, EnvFix, EnvOp, Finding, Severity, fix_from_json
from tfdoctor.report.text import fix_lines


def situation(tmp_path, name: str) -> Environment:
    return make(tmp_path, next(s for s in SITUATIONS if s.name == name))


# -- PKG021 ------------------------------------------------------------------------------------------------

def test_ml_dtypes_0_7_on_numpy_1_is_an_error_naming_the_graph_and_its_fix_works(tmp_path):
    environment = situation(tmp_path, "2.21 + numpy 1.26.4 + ml-dtypes 0.7.0")
    (finding,) = environment.check().findings()
    assert (finding.code, finding.severity) == ("PKG021", Severity.ERROR)
    assert finding.message == (
        "ml-dtypes 0.7.0, which TensorFlow 2.21.0 needs, requires numpy>=2.0.0 and numpy 1.26.4 is installed: import "
        "ml_dtypes fails, and with it import tensorflow: 'RuntimeError: module was compiled against NumPy C-API "
        "version 0x12 (NumPy 2.0) but the running NumPy has C-API version 0x11', then 'ImportError: "
        "numpy._core.multiarray failed to import' and 'SystemError: <built-in function __import__> returned a result "
        "with an exception set'")
    assert finding.evidence["python.watched.ml-dtypes.requires_dist"] == "numpy>=2.0.0"
    assert finding.fixes == (AdminFix("Install numpy>=2.0.0, which ml-dtypes 0.7.0 requires, next to TensorFlow 2.21.0",
                                      (f"{PIP} install 'numpy>=2.0.0' 'tensorflow-cpu==2.21.0'",)),)
    apply_fix(environment, finding.fixes[0])
    assert environment.check().codes() == []


def test_numpy_1_inside_tensorflows_range_was_silent_before_the_graph(tmp_path):
    """What the issue measured: every range TensorFlow declares holds, so PKG005 says nothing."""
    report = situation(tmp_path, "2.21 + numpy 1.26.4 + ml-dtypes 0.7.0").check()
    assert [f.code for f in report.findings()] == ["PKG021"]


def test_when_tensorflows_own_range_excludes_what_the_dependency_needs_no_pip_command_is_offered(tmp_path):
    environment = Environment(tmp_path)
    old(environment, ml_dtypes="0.7.0")  # TensorFlow 2.15: numpy<2.0.0 and ml-dtypes~=0.3.1
    environment.site.dist("ml_dtypes", "0.7.0", requires=ML_DTYPES_0_7_REQUIRES, top_level=("ml_dtypes",))
    finding = next(f for f in environment.check().findings() if f.code == "PKG021")
    (fix,) = finding.fixes
    assert fix == AdminFix("Install a ml-dtypes release that accepts TensorFlow 2.15.1's numpy<2.0.0,>=1.23.5", (),
                           text="TensorFlow 2.15.1 requires numpy<2.0.0,>=1.23.5 and ml-dtypes 0.7.0 requires "
                                "numpy>=2.0.0: no numpy satisfies both")


def test_a_missing_requirement_of_a_dependency_is_a_warning(tmp_path):
    environment = Environment(tmp_path)
    new(environment)
    environment.site.dist("keras", "3.15.1", requires=("absl-py", "numpy", "rich", "namex", "h5py", "optree",
                                                       "ml-dtypes", "packaging"), top_level=("keras",))
    findings = [f for f in environment.check().findings() if f.code == "PKG021"]
    assert sorted((f.message.split(":")[0], f.severity) for f in findings) == [
        ("keras 3.15.1, which TensorFlow 2.21.0 needs, requires namex and namex is not installed", Severity.WARNING),
        ("keras 3.15.1, which TensorFlow 2.21.0 needs, requires optree and optree is not installed", Severity.WARNING),
        ("keras 3.15.1, which TensorFlow 2.21.0 needs, requires rich and rich is not installed", Severity.WARNING),
    ]


def test_the_closure_follows_dependencies_of_dependencies_and_stops_at_what_is_installed(tmp_path):
    environment = Environment(tmp_path)
    new(environment)
    environment.site.dist("keras", "3.15.1", requires=("rich", "numpy"), top_level=("keras",))
    environment.site.dist("rich", "14.0.0", requires=("pygments<3.0.0,>=2.13.0", "markdown-it-py>=2.2.0"))
    environment.site.dist("pygments", "2.19.2")
    facts = environment.facts()
    closure = tensorflow_closure(facts, installed_tensorflow(facts))
    assert {"keras", "numpy", "ml-dtypes", "rich", "pygments"} <= set(closure)
    assert "markdown-it-py" not in closure and "tensorflow-cpu" not in closure


def test_facts_without_the_requirements_of_dependencies_stay_silent(tmp_path):
    """Facts recorded before the listing carried Requires-Dist: the graph stops where nothing is recorded."""
    environment = situation(tmp_path, "2.21 + numpy 1.26.4 + ml-dtypes 0.7.0")
    facts = environment.facts()
    del facts.sections["python"]["watched"]["ml-dtypes"]["requires_dist"]
    from conftest import check_facts

    assert check_facts(facts, select=["PKG021"]).codes() == []


# -- fixes checked against the whole graph ------------------------------------------------------------------

def test_pinning_numpy_for_an_old_tensorflow_next_to_jax_is_not_offered(tmp_path):
    environment = situation(tmp_path, "2.15 + numpy 2.1.3 next to jax 0.4.38")
    numpy = next(f for f in environment.check().findings() if f.code == "PKG005" and f.severity is Severity.ERROR)
    (fix,) = numpy.fixes
    assert fix.title == ("Install numpy<2.0.0,>=1.23.5 next to TensorFlow 2.15.1: no pip command does it without "
                         "breaking jax")
    assert fix.steps == ()
    assert fix.text == (
        f"`{PIP} install 'numpy<2.0.0,>=1.23.5' 'tensorflow-cpu==2.15.1'` would move ml-dtypes into ~=0.3.1, and jax "
        "0.4.38 requires ml-dtypes>=0.4.0: decide first which of them this environment keeps (uninstall the other, or "
        "move TensorFlow to a release whose ranges both accept), then run tfdoctor check again")


def test_what_the_refused_command_would_do_is_what_the_fake_pip_does(tmp_path):
    """The conflict is real: running the command anyway leaves jax below its ml_dtypes floor."""
    environment = situation(tmp_path, "2.15 + numpy 2.1.3 next to jax 0.4.38")
    from support.fake_pip import FakePip

    pip = FakePip(environment.site)
    pip.run(f"{PIP} install 'numpy<2.0.0,>=1.23.5' 'tensorflow-cpu==2.15.1'")
    assert pip.installed("ml-dtypes") == "0.3.2"  # below jax's ml_dtypes>=0.4.0


def test_fix_conflicts_without_jax_is_empty(tmp_path):
    environment = Environment(tmp_path)
    old(environment, numpy="2.1.3", ml_dtypes="0.4.1")
    facts = environment.facts()
    wanted = [parse_requirement("numpy<2.0.0,>=1.23.5")]
    assert fix_conflicts(facts, installed_tensorflow(facts), wanted) == []


@pytest.mark.parametrize(("first", "second", "expected"), [
    ("~=0.3.1", ">=0.4.0", True),
    ("~=0.3.1", ">=0.3.2", False),
    ("<2.0.0,>=1.23.5", ">=2.0.0", True),
    ("<2.0.0", "<=2.0.0", False),
    ("<=2.0", ">=2.0.0", False),
    ("<2", ">=2", True),
    ("==2.21.*", ">=2.21.3", False),
    ("==2.21.*", ">=2.22", True),
    ("==1.2.3", "!=1.2.3", False),  # exclusions are not followed: no verdict of conflict drawn from them
    (">=1", "", False),
    (">=1.0rc1", "<1", None),
])
def test_disjoint(first, second, expected):
    assert disjoint(first, second) is expected


# -- fixes while a foreign folder supplies the package --------------------------------------------------------

def test_pip_fix_under_a_foreign_copy_with_the_venvs_own_behind_it_is_not_offered(tmp_path):
    environment = situation(tmp_path, "2.15 + PYTHONPATH holding numpy 2.1.3")
    finding = next(f for f in environment.check().findings() if f.code == "PKG005")
    (fix,) = finding.fixes
    assert isinstance(fix, EnvFix) and fix.changes[0].op is EnvOp.UNSET


def test_pip_fix_under_the_only_copy_in_the_user_site_runs_without_it(tmp_path):
    environment = situation(tmp_path, "2.21 + protobuf 4.25.8 from the user site")
    (finding,) = environment.check().findings()
    assert [type(f) for f in finding.fixes] == [EnvFix, AdminFix]
    assert finding.fixes[1].steps == (
        f"PYTHONNOUSERSITE=1 {PIP} install 'protobuf<8.0.0,>=6.31.1' 'tensorflow-cpu==2.21.0'",)


def test_tensorflow_imported_from_pythonpath_gets_no_pip_fix(tmp_path):
    environment = situation(tmp_path, "2.21 installed, 2.15.1 on PYTHONPATH")
    for finding in environment.check().findings():
        assert all(" -m pip " not in step for fix in finding.fixes if isinstance(fix, AdminFix) for step in fix.steps)


def test_shadowed_tensorflow_cpu_is_named_by_its_module(tmp_path):
    """A second tensorflow-cpu on PYTHONPATH: the module imported is `tensorflow`, never `tensorflow_cpu`."""
    environment = Environment(tmp_path)
    new(environment)
    other = environment.folder("old-venv/lib/site-packages")
    other.tensorflow(name="tensorflow-cpu", version="2.20.0")
    environment.env["PYTHONPATH"] = str(other)
    finding = next(f for f in environment.check().findings() if f.code == "PKG013")
    assert finding.message.endswith("TensorFlow 2.20.0 is what `import tensorflow` loads, not the 2.21.0 installed "
                                    "in the environment")
    assert "import tensorflow_cpu" not in finding.message


# -- add-on release tables ------------------------------------------------------------------------------------

def test_addon_tables():
    assert addon_release_for("tensorflow-addons", "2.15.1") == "0.23.0"
    assert addon_release_for("tensorflow-addons", "2.21.0") is None
    assert addon_status("tensorflow-addons").ended is True
    assert addon_status("tensorflow-io").newest_tensorflow == "2.16"
    assert addon_release_for("tensorflow-io", "2.16.2") == "0.37.1"


# -- one shape for admin fixes ----------------------------------------------------------------------------------

def test_admin_fix_prose_is_a_comment_line_and_survives_json():
    fix = AdminFix("Decide", (), text="jax needs ml-dtypes>=0.4.0\nsecond line")
    assert fix_lines(fix) == ["# jax needs ml-dtypes>=0.4.0 second line"]
    assert fix_from_json(json.loads(json.dumps(fix.to_json()))) == fix
    assert "text" not in AdminFix("Run", ("cmd",)).to_json()
    finding = Finding("m", fixes=(fix,), severity=Severity.ERROR, code="PKG021", name="n")
    assert plan_fixes([finding]).notes() == ["tfdoctor: PKG021 needs an administrator: Decide",
                                             "    # jax needs ml-dtypes>=0.4.0 second line"]


# -- the snapshot ---------------------------------------------------------------------------------------------

def test_snapshot_records_requires_of_every_distribution_without_extras(tmp_path):
    site = FakeSitePackages(tmp_path / "site")
    site.dist("jax", "0.4.38", requires=("ml_dtypes>=0.4.0", 'jaxlib==0.4.38; extra == "minimum-jaxlib"',
                                         'numpy>=1.24; python_version >= "3.9"'))
    site.dist("plain", "1.0")
    (tmp_path / "site/broken-1.0.dist-info").mkdir()
    listed = snapshot(paths=[str(site.path)], environ={}, cache="")["distributions"]
    assert listed["jax"]["requires_dist"] == ["ml_dtypes>=0.4.0", 'numpy>=1.24; python_version >= "3.9"']
    assert listed["plain"]["requires_dist"] == []
    assert "requires_dist" not in listed["broken"]  # no METADATA: not recorded, never an empty list


# -- markers without packaging (the pre-job hook does not import it) ------------------------------------------

ENVIRONMENT = {"python_version": "3.11", "python_full_version": "3.11.7", "sys_platform": "linux",
               "platform_machine": "x86_64", "platform_system": "Linux", "implementation_name": "cpython",
               "os_name": "posix", "platform_python_implementation": "CPython"}


@pytest.mark.parametrize("marker", [
    'python_version >= "3.13"', "python_version<'3.11'", 'python_version >= "3.10"', 'python_version > "3.11"',
    'python_version <= "3.11"', 'python_version != "3.11"', 'python_full_version >= "3.11.7"',
    'sys_platform == "linux" and platform_machine != "aarch64"', 'platform_system == "Darwin"',
    'platform_machine == "x86_64" and python_version >= "3.10" and sys_platform == "linux"',
    'python_version < "3.9" or sys_platform == "linux"', 'sys_platform < "m"', '(python_version >= "3.10")',
])
def test_simple_markers_agree_with_packaging(marker):
    from packaging.markers import Marker

    from tfdoctor.derive.requirement_ranges import _simple_marker, marker_applies

    truth = Marker(marker).evaluate({**ENVIRONMENT, "extra": ""})
    assert _simple_marker(marker, ENVIRONMENT) in (truth, None)
    assert marker_applies(marker, ENVIRONMENT) is truth


def test_an_ended_addon_under_an_older_tensorflow_than_its_newest_release_is_not_called_releaseless(tmp_path):
    """tensorflow-io has releases for TensorFlow 2.13 (not in the table): no "no release exists" for it."""
    environment = Environment(tmp_path)
    environment.site.tensorflow(name="tensorflow-cpu", version="2.13.1", requires=("numpy>=1.22,<=1.24.3",))
    environment.site.healthy_dependencies(numpy="1.24.3")
    environment.site.dist("tensorflow_io", "0.37.1", requires=('tensorflow<2.17.0,>=2.16.0; extra == "tensorflow"',))
    finding = next(f for f in environment.check().findings() if f.code == "PKG017")
    (fix,) = finding.fixes
    assert fix.title == "Install the tensorflow-io release built for TensorFlow 2.13" and fix.steps == ()


def test_a_missing_requirement_importable_without_metadata_is_not_reported(tmp_path):
    environment = Environment(tmp_path)
    new(environment)
    environment.site.dist("keras", "3.15.1", requires=("rich",), top_level=("keras",))
    environment.site.file("rich/__init__.py")  # vendored or copied in, no dist-info
    assert [f for f in environment.check().findings() if f.code == "PKG021"] == []


def test_the_package_graph_table_is_consistent():
    """A fallback row for every kind of bound, a source on every row, an error only with the symptom measured or
    quoted, and add-on rows only for the add-ons the coupling table knows."""
    from tfdoctor.derive.python_compatibility import BOUND_KINDS, addons
    from tfdoctor.knowledge import table_rows

    rows = table_rows("package_graph")
    fallbacks = {r["when"] for r in rows if r["kind"] == "requirement" and r["package"] == r["requires"] == "*"}
    assert fallbacks == set(BOUND_KINDS)
    assert all(r.get("source") for r in rows)
    assert all(r.get("symptom") for r in rows if r.get("severity") == "error")
    known = {a.package for a in addons()}
    assert {r["package"] for r in rows if r["kind"].startswith("addon-")} <= known


def test_pkg021_under_pythonpath_offers_only_to_take_the_folder_away(tmp_path):
    """As measured on a real venv (run 4): the one fix is PYTHONPATH, no pip command."""
    environment = situation(tmp_path, "2.21 + PYTHONPATH holding numpy 1.26.4 + ml-dtypes 0.7.0")
    finding = next(f for f in environment.check().findings() if f.code == "PKG021")
    (fix,) = finding.fixes
    assert isinstance(fix, EnvFix) and [(c.op, c.name) for c in fix.changes] == [(EnvOp.UNSET, "PYTHONPATH")]


def test_the_addon_fix_keeps_tensorflow_cpu_alone(tmp_path):
    """Issue 36: the old fix (`pip install 'tensorflow-text' 'tensorflow-cpu==2.21.0'`) pulled the `tensorflow`
    distribution on top of tensorflow-cpu; the fix now installs the add-on's 2.21 release with --no-deps."""
    from support.fake_pip import FakePip
    from test_checks_packages_coupling import found

    environment = Environment(tmp_path)
    new(environment)
    environment.site.dist("tensorflow_text", "2.20.0", requires=("tensorflow<2.21,>=2.20.0",),
                          top_level=("tensorflow_text",))
    (finding,) = environment.check().findings()
    apply_fix(environment, finding.fixes[0])
    assert environment.check().codes() == []
    assert FakePip(environment.site).installed("tensorflow") is None
    assert FakePip(environment.site).installed("tensorflow-text") == "2.21.1"  # pip's newest 2.21.*: not 2.21.0
    FakePip(environment.site).run(f"{PIP} install 'tensorflow-text' 'tensorflow-cpu==2.21.0'")  # the old fix
    assert FakePip(environment.site).installed("tensorflow") == "2.21.0"
    assert ("PKG002", "warning") in found(environment.check())


@pytest.mark.parametrize("hostile", [">=1.\u00b2", ">=" + "9" * 5000, "~=" + "9" * 5000 + ".1"])
def test_a_bound_int_cannot_read_is_not_plain_bounds_rather_than_a_crash(hostile):
    # a METADATA line is read whole: a superscript digit passes str.isdigit, 5000 digits exceed int()'s limit
    assert disjoint(hostile, "<2") is None


# -- measured on real environments (benchmarks/python_env_truth.py, 2026-12-05) ----------------------------------

TF_2_19_REQUIRES = tuple({"protobuf<8.0.0,>=6.31.1": "protobuf!=4.21.0,!=4.21.1,!=4.21.2,!=4.21.3,!=4.21.4,"
                                                    "!=4.21.5,<6.0.0dev,>=3.20.3",
                          "keras>=3.12.0": "keras>=3.5.0", "numpy>=1.26.0": "numpy<2.2.0,>=1.26.0",
                          "h5py<3.15.0,>=3.11.0": "h5py>=3.11.0"}.get(r, r)
                         for r in TF_2_21_REQUIRES)


def tensorflow_2_19(environment: Environment, **versions: str) -> None:
    """tensorflow-cpu 2.19.1 as pip resolves it (numpy 2.1.3, protobuf 5.29.6, ml-dtypes 0.7.0)."""
    environment.site.tensorflow(version="2.19.1", requires=TF_2_19_REQUIRES)
    environment.site.healthy_dependencies(**{"numpy": "2.1.3", "protobuf": "5.29.6", "ml_dtypes": "0.7.0",
                                             "h5py": "3.16.0", **versions})


def pkg005(environment: Environment) -> list[tuple[str, Severity]]:
    return [(f.message.split(":")[0], f.severity) for f in environment.check().findings() if f.code == "PKG005"]


@pytest.mark.parametrize(("installed", "tensorflow", "severity", "symptom"), [
    ("0.4.1", "2.19.1", "warning", ""),  # measured: imports and trains
    ("0.2.0", "2.17.1", "warning", ""),  # measured
    ("0.2.0", "2.15.1", "warning", ""),  # measured
    ("0.4.1", "2.20.0", "error", "has no attribute 'int2'"),  # measured
    ("0.4.1", "2.21.0", "error", "has no attribute 'float4_e2m1fn'"),  # measured
    ("0.3.2", "2.19.1", "error", "numpy.core.umath failed to import"),  # built for numpy 1, under numpy 2
])
def test_ml_dtypes_below_the_floor_breaks_only_where_tensorflow_names_a_newer_type(installed, tensorflow, severity,
                                                                                      symptom):
    from tfdoctor.derive import python_compatibility as compat

    coupling = compat.bound_coupling("ml-dtypes", installed, tensorflow, compat.BELOW_FLOOR)
    assert coupling.severity == severity
    assert symptom in coupling.symptom


def test_tensorflow_2_19_with_ml_dtypes_0_4_is_a_warning_and_its_twin_silent(tmp_path):
    """Was an error (a false alarm): 2.19.1 with ml-dtypes 0.4.1 imports and trains in a real environment."""
    environment = Environment(tmp_path / "below")
    tensorflow_2_19(environment, ml_dtypes="0.4.1")
    assert pkg005(environment) == [
        ("ml-dtypes 0.4.1 is outside TensorFlow 2.19.1's range ml-dtypes<1.0.0,>=0.5.1", Severity.WARNING)]
    twin = Environment(tmp_path / "twin")
    tensorflow_2_19(twin)
    assert twin.check().codes() == []


def test_tensorflow_2_20_with_ml_dtypes_0_4_stays_an_error(tmp_path):
    environment = Environment(tmp_path)
    environment.site.tensorflow(version="2.20.0", requires=TF_2_20_REQUIRES)
    environment.site.healthy_dependencies(ml_dtypes="0.4.1")
    ((message, severity),) = pkg005(environment)
    assert severity is Severity.ERROR and message.startswith("ml-dtypes 0.4.1 is outside TensorFlow 2.20.0's range")


def test_tensorflow_text_2_21_0_is_known_broken_and_its_fix_keeps_tensorflow_cpu_alone(tmp_path):
    """tensorflow-text 2.21.0 fails to import next to TensorFlow 2.21 (undefined symbol icudt77_dat, measured; fixed
    in 2.21.1): its METADATA matches, so only the known-break row says it. The fix takes 2.21.1 with --no-deps (a
    plain install would put the `tensorflow` distribution on top of tensorflow-cpu)."""
    environment = Environment(tmp_path)
    new(environment)
    environment.site.dist("tensorflow_text", "2.21.0", requires=("tensorflow<2.22,>=2.21.0",),
                          top_level=("tensorflow_text",))
    (finding,) = environment.check().findings()
    assert (finding.code, finding.severity) == ("PKG010", Severity.ERROR)
    assert "undefined symbol: icudt77_dat" in finding.message
    assert finding.fixes == (AdminFix("Install tensorflow-text>=2.21.1,<2.22 next to TensorFlow 2.21.0",
                                      (f"{PIP} install --no-deps 'tensorflow-text>=2.21.1,<2.22'",)),)
    apply_fix(environment, finding.fixes[0])
    assert environment.check().codes() == []
    assert FakePip(environment.site).installed("tensorflow") is None
    assert FakePip(environment.site).installed("tensorflow-text") == "2.21.1"


def test_tensorflow_text_2_21_1_is_silent(tmp_path):
    environment = Environment(tmp_path)
    new(environment)
    environment.site.dist("tensorflow_text", "2.21.1", requires=("tensorflow<2.22,>=2.21.0",),
                          top_level=("tensorflow_text",))
    assert environment.check().codes() == []


def test_tensorflow_cpu_on_pythonpath_in_front_of_the_environments_own_gets_only_the_pythonpath_fix(tmp_path):
    """Measured: PYTHONPATH holding tensorflow-cpu 2.15.1 alone in front of the environment's own tensorflow-cpu
    2.21.0 fails (numpy 2.4.6). The pip fix it got (`PYTHONPATH='' pip install 'numpy<2.0.0,>=1.23.5'
    'tensorflow-cpu==2.15.1'`) replaced the environment's own 2.21.0 with 2.15.1; taking the folder out of
    PYTHONPATH is the whole fix, the environment's own TensorFlow then being imported."""
    environment = Environment(tmp_path)
    new(environment)
    other = environment.folder("shared/tensorflow-2.15")
    other.tensorflow(name="tensorflow-cpu", version="2.15.1", requires=TF_2_15_REQUIRES, requires_python=">=3.9")
    environment.env["PYTHONPATH"] = str(other)
    findings = [f for f in environment.check().findings() if f.severity is Severity.ERROR]
    assert {f.code for f in findings} >= {"PKG005"}
    for finding in findings:
        (fix,) = finding.fixes
        assert isinstance(fix, EnvFix) and [(c.op, c.name) for c in fix.changes] == [(EnvOp.UNSET, "PYTHONPATH")]
        apply_fix(environment, fix)
    assert environment.check().codes() == []
    assert FakePip(environment.site).installed("tensorflow-cpu") == "2.21.0"
