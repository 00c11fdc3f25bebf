"""PKG checks over fake site-packages trees read by the real snapshot."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import check_facts, env_fixes
from support.fake_site_packages import BUILD_INFO_CUDA, FakeSitePackages

from tfdoctor.facts.probes.pyenv_snapshot import snapshot
from tfdoctor.model import AdminFix, Applicability, EnvFix, Status
from tfdoctor.testing import facts_from

PIP = f"{sys.executable} -m pip"
DRIVER = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024"


def python_facts(site: FakeSitePackages, **overrides: Any) -> dict[str, Any]:
    facts = snapshot(paths=[str(site)], environ={}, prefix=str(site.path.parent / "prefix"))
    facts.update(overrides)
    return facts


def run(site: FakeSitePackages, env: dict[str, str] | None = None, driver: str | None = None,
        select: tuple[str, ...] = ("PKG",), **overrides: Any):
    facts = facts_from({"python": python_facts(site, **overrides), "host": {"nvidia_driver": driver}},
                       env=env or {})
    return check_facts(facts, select=select)


@pytest.fixture
def site(tmp_path: Path) -> FakeSitePackages:
    return FakeSitePackages(tmp_path / "site-packages")


def test_healthy_tensorflow_2_21_is_silent(site):
    site.tensorflow().healthy_dependencies()
    report = run(site, env={"TF_USE_LEGACY_KERAS": "0", "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION": "upb"})
    assert report.codes() == []
    assert {r.status for r in report.results} == {Status.PASSED}


def test_healthy_cuda_tensorflow_on_gpu_host_is_silent(site):
    site.tensorflow(name="tensorflow", build_info=BUILD_INFO_CUDA).healthy_dependencies()
    assert run(site, driver=DRIVER).codes() == []


def test_tensorflow_not_installed(site):
    site.healthy_dependencies()
    report = run(site)
    assert report.codes() == ["PKG001"]
    finding = report.findings()[0]
    assert finding.message == (f"TensorFlow is not installed for {sys.executable}; if the job runs another "
                               "interpreter, inspect that one with --python PATH")
    assert finding.severity.label == "warning"
    assert finding.evidence == {"python.executable": sys.executable, "python.tensorflow.package_dir": None}
    assert finding.fixes == (AdminFix("Inspect the job's interpreter, or install TensorFlow in this one", (
        "tfdoctor check --python /path/to/the/job/venv/bin/python", f"{PIP} install tensorflow")),)


def test_tensorflow_not_installed_in_the_interpreter_given_with_python_option(site):
    site.healthy_dependencies()
    report = run(site, other_interpreter=True)
    finding = report.findings()[0]
    assert finding.message == f"TensorFlow is not installed for {sys.executable}"
    assert finding.fixes == (AdminFix("Install TensorFlow in this environment", (f"{PIP} install tensorflow",)),)


def test_unknown_python_environment_is_not_checked():
    facts = facts_from({"python": {"$unknown": "interpreter /x/python did not answer within 2 s"},
                        "host": {"nvidia_driver": None}}, env={})
    report = check_facts(facts, select=["PKG"])
    assert report.codes() == []
    assert report.result("PKG001").reason == "python unknown: interpreter /x/python did not answer within 2 s"
    assert report.result("PKG008").status is Status.PASSED  # reads only the environment


def test_two_tensorflow_distributions_keep_the_one_installed_last(site):
    site.tensorflow(name="tensorflow", version="2.20.0", installed_at=1_700_000_000)
    site.tensorflow(name="tensorflow-cpu", version="2.21.0", installed_at=1_700_000_500).healthy_dependencies()
    report = run(site)
    assert report.codes() == ["PKG002"]
    finding = report.findings()[0]
    assert finding.message == ("2 TensorFlow distributions share the tensorflow package: tensorflow 2.20.0, "
                               "tensorflow-cpu 2.21.0")
    assert finding.evidence == {"python.watched.tensorflow.version": "2.20.0",
                                "python.watched.tensorflow-cpu.version": "2.21.0"}
    assert finding.severity.label == "error"
    assert finding.fixes == (AdminFix("Keep one TensorFlow distribution (tensorflow-cpu 2.21.0 was installed last)",
                                      (f"{PIP} uninstall -y tensorflow",
                                       f"{PIP} install --force-reinstall --no-deps 'tensorflow-cpu==2.21.0'")),)


def test_two_tensorflow_distributions_of_one_version_are_a_warning(site):
    """What `pip install tensorflow-cpu tf-keras` leaves: tensorflow 2.21.0 pulled in next to tensorflow-cpu."""
    site.tensorflow(name="tensorflow-cpu", installed_at=1_700_000_000).healthy_dependencies()
    site.tensorflow(name="tensorflow", installed_at=1_700_000_500).dist("tf_keras", "2.21.0", top_level=("tf_keras",))
    report = run(site)
    assert report.codes() == ["PKG002"]
    finding = report.findings()[0]
    assert finding.severity.label == "warning"
    assert finding.message == ("2 TensorFlow distributions of the same version share the tensorflow package: "
                               "tensorflow 2.21.0, tensorflow-cpu 2.21.0; it works, but uninstalling one removes "
                               "files the other needs")
    assert finding.fixes == (AdminFix("Keep one TensorFlow distribution (tensorflow-cpu 2.21.0 was installed first)",
                                      (f"{PIP} uninstall -y tensorflow",
                                       f"{PIP} install --force-reinstall --no-deps 'tensorflow-cpu==2.21.0'")),)


def test_windows_shim_distribution_is_not_a_second_tensorflow(site):
    # tensorflow 2.15 on Windows ships no files and depends on tensorflow-intel, which has the package.
    site.dist("tensorflow", "2.15.0", requires=('tensorflow-intel==2.15.0; platform_system == "Windows"',),
              record=("tensorflow-2.15.0.dist-info/METADATA",))
    site.tensorflow(name="tensorflow-intel", version="2.15.0", requires=("numpy<2.0.0,>=1.23.5",),
                    requires_python=">=3.9").healthy_dependencies(numpy="1.26.4", keras="2.15.0")
    assert run(site).codes() == []


@pytest.mark.parametrize(("name", "build_info", "why", "steps"), [
    ("tensorflow-cpu", None, "the tensorflow-cpu distribution is CPU-only",
     (f"{PIP} uninstall -y tensorflow-cpu", f"{PIP} install 'tensorflow[and-cuda]==2.21.0'")),
    ("tensorflow", False, "its build_info.py says is_cuda_build: False",
     (f"{PIP} install 'tensorflow[and-cuda]==2.21.0'",)),
])
def test_cpu_only_tensorflow_on_gpu_host(site, name, build_info, why, steps):
    site.tensorflow(name=name).healthy_dependencies()
    if build_info is None:
        (site.path / "tensorflow/python/platform/build_info.py").unlink()
    report = run(site, driver=DRIVER)
    assert report.codes() == ["PKG003"]
    finding = report.findings()[0]
    assert finding.message == f"TensorFlow 2.21.0 ({name}) cannot use the GPUs of this host: {why}"
    expected = {"host.nvidia_driver": DRIVER, f"python.watched.{name}.version": "2.21.0"}
    if build_info is not None:
        expected["python.tensorflow.build_info.is_cuda_build"] = False
    assert finding.evidence == expected
    assert finding.fixes == (AdminFix("Install the CUDA build of TensorFlow 2.21.0", steps),)


def test_cpu_only_nightly_on_gpu_host_points_to_tf_nightly(site):
    site.tensorflow(name="tf-nightly-cpu", version="2.22.0.dev20260301").healthy_dependencies()
    finding = run(site, driver=DRIVER).findings()[0]
    assert finding.fixes[0].steps == (f"{PIP} uninstall -y tf-nightly-cpu",
                                      f"{PIP} install 'tf-nightly[and-cuda]==2.22.0.dev20260301'")


def test_cpu_only_tensorflow_without_driver_is_silent(site):
    site.tensorflow(name="tensorflow-cpu").healthy_dependencies()
    assert run(site, driver=None).codes() == []


def test_python_outside_requires_python(site):
    site.tensorflow().healthy_dependencies()
    report = run(site, version="3.9.18")
    assert report.codes() == ["PKG004", "PKG012"]  # and the cp311 wheel cannot load in 3.9
    finding = report.findings()[0]
    assert finding.message == "Python 3.9.18 is outside TensorFlow 2.21.0's Requires-Python >=3.10"
    assert finding.evidence == {"python.version": "3.9.18",
                                "python.watched.tensorflow-cpu.requires_python": ">=3.10"}
    assert finding.fixes[0].title == "Use a Python from 3.10 to 3.13 for TensorFlow 2.21.0"
    assert finding.fixes[0].steps == (
        "python3.13 -m venv NEW_ENV   # TensorFlow 2.21.0 has wheels for CPython 3.10-3.13",
        "NEW_ENV/bin/python -m pip install 'tensorflow-cpu==2.21.0'")


def test_dependencies_outside_range_one_finding_each(site):
    site.tensorflow().healthy_dependencies(numpy="1.24.4", protobuf="8.1.0", ml_dtypes="0.4.1", h5py="3.15.1")
    report = run(site)
    assert report.codes() == ["PKG005"]
    findings = report.findings()
    assert [(f.message.split(": ")[0], f.severity.label) for f in findings] == [
        ("protobuf 8.1.0 is outside TensorFlow 2.21.0's range protobuf<8.0.0,>=6.31.1", "warning"),
        ("numpy 1.24.4 is outside TensorFlow 2.21.0's range numpy>=1.26.0", "warning"),
        ("h5py 3.15.1 is outside TensorFlow 2.21.0's range h5py<3.15.0,>=3.11.0", "info"),
        ("ml-dtypes 0.4.1 is outside TensorFlow 2.21.0's range ml-dtypes<1.0.0,>=0.5.1", "error"),
    ]
    assert findings[3].message.endswith(": import tensorflow fails: AttributeError: module 'ml_dtypes' has no "
                                        "attribute 'float4_e2m1fn' (TensorFlow registers the dtypes it was built with)")
    assert findings[1].evidence == {"python.distributions.numpy.version": "1.24.4",
                                    "python.watched.tensorflow-cpu.requires_dist": "numpy>=1.26.0"}
    assert findings[3].fixes == (AdminFix("Install ml-dtypes<1.0.0,>=0.5.1 next to TensorFlow 2.21.0", (
        f"{PIP} install 'ml-dtypes<1.0.0,>=0.5.1' 'tensorflow-cpu==2.21.0'",)),)


@pytest.mark.parametrize(("python_version", "codes"), [("3.11", ["PKG005"]), ("3.12", [])])
def test_dependency_markers_use_the_inspected_interpreter(site, python_version, codes):
    """tensorflow-io-gcs-filesystem applies only below Python 3.12: decided by the snapshot's Python,
    not by the interpreter running tfdoctor."""
    requires = ('tensorflow-io-gcs-filesystem>=0.23.1; python_version < "3.12"',
                'numpy<2.0.0; extra == "never"')
    site.tensorflow(version="2.15.0", requires=requires).healthy_dependencies(numpy="1.26.4", keras="2.15.0")
    site.dist("tensorflow-io-gcs-filesystem", "0.20.0")
    marker_environment = {**snapshot(paths=[])["marker_environment"], "python_version": python_version}
    assert run(site, marker_environment=marker_environment).codes() == codes


def test_dependencies_missing_one_finding_each(site):
    site.tensorflow().healthy_dependencies()
    for name in ("ml_dtypes", "keras"):
        shutil.rmtree(next(site.path.glob(f"{name}-*.dist-info")))
    report = run(site)
    assert report.codes() == ["PKG009"]
    findings = report.findings()
    assert [f.message for f in findings] == [
        "keras is not installed, and TensorFlow 2.21.0 requires keras>=3.12.0: import tensorflow (or its first use "
        "of the package) fails with ModuleNotFoundError",
        "ml-dtypes is not installed, and TensorFlow 2.21.0 requires ml-dtypes<1.0.0,>=0.5.1: import tensorflow (or "
        "its first use of the package) fails with ModuleNotFoundError",
    ]
    assert findings[0].severity.label == "error"
    assert findings[0].evidence == {"python.distributions.keras": None,
                                    "python.watched.tensorflow-cpu.requires_dist": "keras>=3.12.0"}
    assert findings[0].fixes == (AdminFix("Install keras>=3.12.0 next to TensorFlow 2.21.0", (
        f"{PIP} install 'keras>=3.12.0' 'tensorflow-cpu==2.21.0'",)),)


def test_extras_and_other_platforms_dependencies_are_not_missing(site):
    # TF 2.21's and-cuda and gcs-filesystem extras, and a Windows-only one, are not installed: fine.
    requires = ("numpy>=1.26.0", 'tensorflow-intel==2.21.0; platform_system == "Windows"')
    site.tensorflow(requires=requires).healthy_dependencies()
    assert run(site).codes() == []


def test_legacy_keras_requested_but_missing(site):
    site.tensorflow().healthy_dependencies()
    report = run(site, env={"TF_USE_LEGACY_KERAS": "1"})
    assert report.codes() == ["PKG006"]
    finding = report.findings()[0]
    assert finding.message == "TF_USE_LEGACY_KERAS=1 asks TensorFlow 2.21.0 for tf-keras, which is not installed"
    assert finding.evidence == {"env.TF_USE_LEGACY_KERAS": "1", "python.watched.tensorflow-cpu.version": "2.21.0",
                                "python.distributions.tf-keras": None}
    assert finding.fixes[0].steps == (f"{PIP} install --no-deps 'tf-keras>=2.21,<2.22'",)


@pytest.mark.parametrize(("value", "tf_version", "tf_keras"), [
    ("yes", "2.21.0", None),      # TensorFlow reads only 1/true/True
    ("1", "2.14.0", None),        # TensorFlow before 2.15 ignores the variable
    ("true", "2.21.0", "2.21.0"),  # installed
])
def test_legacy_keras_silent_cases(site, value, tf_version, tf_keras):
    if tf_version < "2.16":  # with the numpy and Keras of its time
        site.tensorflow(version=tf_version, requires=("numpy>=1.23.5", "keras<2.15,>=2.14.0"))
        site.healthy_dependencies(numpy="1.26.4", keras="2.14.0")
    else:
        site.tensorflow(version=tf_version).healthy_dependencies()
    if tf_keras:
        site.dist("tf_keras", tf_keras, top_level=("tf_keras",))
    assert run(site, env={"TF_USE_LEGACY_KERAS": value}).codes() == []


def test_tf_keras_version_mismatch(site):
    site.tensorflow().healthy_dependencies().dist("tf_keras", "2.17.0", top_level=("tf_keras",))
    report = run(site)
    assert report.codes() == ["PKG007"]
    finding = report.findings()[0]
    assert finding.severity.label == "error"
    assert finding.message == (
        "tf-keras 2.17.0 is of another minor than TensorFlow 2.21.0: it imports, trains and saves, but the callbacks "
        "that track a best value fail as they start under numpy 2 (ModelCheckpoint, EarlyStopping, ReduceLROnPlateau): "
        "AttributeError: `np.Inf` was removed in the NumPy 2.0 release. Use `np.inf` instead.")
    assert finding.evidence == {"python.distributions.tf-keras.version": "2.17.0",
                                "python.watched.tensorflow-cpu.version": "2.21.0",
                                "sources": ["benchmarks/python_env_truth.py (2.21 + tf-keras 2.17.0)",
                                            "https://github.com/keras-team/tf-keras/blob/v2.17.0/tf_keras/src/"
                                            "callbacks.py",
                                            "https://numpy.org/devdocs/numpy_2_0_migration_guide.html"]}
    assert finding.fixes[0].steps == (f"{PIP} install --no-deps 'tf-keras>=2.21,<2.22'",)


def test_tf_keras_one_minor_behind_measured_to_work_is_an_info(site):
    """Issue 27 item 2: tf-keras 2.20.1 under 2.21 with TF_USE_LEGACY_KERAS=1 imports, trains, saves and loads."""
    site.tensorflow().healthy_dependencies().dist("tf_keras", "2.20.1", top_level=("tf_keras",))
    report = run(site, env={"TF_USE_LEGACY_KERAS": "1"})
    (finding,) = report.findings()
    assert (finding.code, finding.severity.label) == ("PKG007", "info")
    assert "measured to import, train, and save and load" in finding.message


def test_tf_keras_pair_never_measured_is_a_warning(site):
    site.tensorflow(version="2.20.0").healthy_dependencies().dist("tf_keras", "2.21.0", top_level=("tf_keras",))
    (finding,) = run(site).findings()
    assert (finding.code, finding.severity.label) == ("PKG007", "warning")
    assert finding.message.startswith("tf-keras 2.21.0 is of another minor than TensorFlow 2.20.0: a pair not measured")


def test_tf_keras_patch_difference_is_fine(site):
    site.tensorflow(version="2.21.1").healthy_dependencies().dist("tf_keras", "2.21.0")
    assert run(site).codes() == []


def test_pure_python_protobuf(site):
    site.tensorflow().healthy_dependencies()
    report = run(site, env={"PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION": "python"})
    assert report.codes() == ["PKG008"]
    finding = report.findings()[0]
    assert finding.evidence == {"env.PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION": "python"}
    assert isinstance(finding.fixes[0], EnvFix)
    assert finding.fixes[0].applicability is Applicability.SAFE
    assert env_fixes(report) == {"PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION": None}


@pytest.mark.parametrize("tensorflow", [False, True])
def test_healthy_environment_does_not_import_packaging(site, monkeypatch, tensorflow):
    """packaging's specifiers cost ~40 ms to import: TensorFlow's plain numeric ranges are compared without."""
    site.healthy_dependencies()
    if tensorflow:
        site.tensorflow()
    facts = facts_from({"python": python_facts(site), "host": {"nvidia_driver": None}}, env={})
    for name in [m for m in sys.modules if m == "packaging" or m.startswith("packaging.")]:
        monkeypatch.delitem(sys.modules, name)
    report = check_facts(facts, select=["PKG", "CPU"])
    assert report.codes() == ([] if tensorflow else ["PKG001"])
    assert "packaging.specifiers" not in sys.modules
    assert "packaging.markers" not in sys.modules


def test_recorded_cpu_only_machine_with_tensorflow_2_21():
    """Facts collected on a CPU-only VM with `pip install tensorflow-cpu==2.21.0` (tfdoctor collect --python)."""
    from conftest import REPO

    from tfdoctor.facts import Facts

    facts = Facts.load(REPO / "tests" / "snapshots" / "cpu-only-vm-tensorflow-2.21.json")
    report = check_facts(facts, select=["CPU", "PKG"])
    assert report.codes() == []
    assert [r.code for r in report.results if r.status is Status.NOT_CHECKED] == ["CPU003"]
    facts.sections["host"]["nvidia_driver"] = DRIVER  # the same environment on a GPU host
    assert check_facts(facts, select=["CPU", "PKG"]).codes() == ["PKG003"]


def test_malformed_python_facts_are_not_checked_not_crashed():
    facts = facts_from({"python": {"watched": ["tensorflow"], "distributions": "numpy",
                                   "tensorflow": {"package_dir": None}},
                        "host": {"nvidia_driver": DRIVER}}, env={"TF_USE_LEGACY_KERAS": "1"})
    report = check_facts(facts, select=["PKG", "CPU"])
    assert report.crashed() == []
    assert report.result("PKG002").reason == "python.watched is not a mapping (a hand-edited facts file?)"
