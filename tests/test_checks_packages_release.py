"""What the installed files say about the release that will run (issue 27 items 3-5, issue 23 item 3):
protobuf against TensorFlow's generated code (PKG016), add-ons built for another TensorFlow (PKG017), a GPU
environment's nvidia-* wheels judged on a host without a GPU (PKG018, CUDA001/CUDA002 not "passed"). Each
fake environment that fires has a healthy twin that stays silent."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import check_facts
from support.fake_site_packages import BUILD_INFO_CUDA, TF_2_20_REQUIRES, TF_2_21_REQUIRES, FakeSitePackages

from tfdoctor.engine import Report
from tfdoctor.facts.probes.pyenv_snapshot import snapshot
from tfdoctor.model import AdminFix, Status
from tfdoctor.testing import facts_from

PIP = f"{sys.executable} -m pip"
DRIVER = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05  Thu Sep 25 01:37:11 UTC 2025"
# tensorflow[and-cuda]==2.21.0's Requires-Dist for the extra (the fake's TF_2_21_REQUIRES keeps cuBLAS and cuDNN).
AND_CUDA_2_21 = {"nvidia-cublas-cu12": "12.5.3.2", "nvidia-cudnn-cu12": "9.3.0.75"}


def run(site: FakeSitePackages, select: tuple[str, ...] = ("PKG",), driver: str | None = None,
        env: dict[str, str] | None = None) -> Report:
    python: dict[str, Any] = snapshot(paths=[str(site)], environ={}, prefix=str(site.path.parent / "prefix"))
    return check_facts(facts_from({"python": python, "host": {"nvidia_driver": driver}}, env=env or {}),
                       select=select)


def found(report: Report) -> set[tuple[str, str]]:
    return {(f.code, f.severity.label) for f in report.findings()}


@pytest.fixture
def site(tmp_path: Path) -> FakeSitePackages:
    return FakeSitePackages(tmp_path / "site-packages")


# -- PKG016: protobuf against the code TensorFlow generated ------------------------------------------------

def tensorflow_2_20(site: FakeSitePackages, protobuf: str) -> FakeSitePackages:
    site.tensorflow(version="2.20.0", requires=TF_2_20_REQUIRES, gencode="5.28.3")
    return site.healthy_dependencies(protobuf=protobuf)


@pytest.mark.parametrize(("protobuf", "expected"), [
    ("5.29.5", set()),                          # the healthy twin: the major of the generated code
    ("5.28.3", set()),                          # exactly the generated code's version
    ("6.33.6", {("PKG016", "info")}),           # one major newer, TensorFlow's range has no cap
    ("7.34.0", {("PKG016", "info")}),           # two majors newer: outside protobuf's guarantee, measured to work
    ("8.0.0", {("PKG016", "warning")}),         # two majors newer, never measured
    ("5.28.0", {("PKG016", "error")}),          # in TensorFlow's range (>=5.28.0), older than the gencode
])
def test_protobuf_against_tensorflow_2_20_gencode(site, protobuf, expected):
    assert found(run(tensorflow_2_20(site, protobuf))) == expected


def test_protobuf_one_major_newer_than_the_gencode_says_why(site):
    (finding,) = run(tensorflow_2_20(site, "6.33.6")).findings()
    assert finding.message.startswith(
        "protobuf 6.33.6 is one major newer than the protobuf 5.28.3 TensorFlow 2.20.0's generated code was made "
        "with, and TensorFlow asks for protobuf>=5.28.0: protobuf guarantees that a runtime loads generated code one "
        "major older")
    assert finding.evidence["python.tensorflow.protobuf_gencode.version"] == "5.28.3"
    assert finding.fixes == (AdminFix("Install protobuf>=5.28.3,<6 next to TensorFlow 2.20.0",
                                      (f"{PIP} install 'protobuf>=5.28.3,<6' 'tensorflow-cpu==2.20.0'",)),)


def test_protobuf_older_than_the_gencode_quotes_the_version_error(site):
    (finding,) = run(tensorflow_2_20(site, "5.28.0")).findings()
    assert "VersionError: Detected incompatible Protobuf Gencode/Runtime versions" in finding.message
    assert "Runtime version cannot be older than the linked gencode version" in finding.message


def test_a_newer_major_inside_tensorflows_own_cap_is_silent(site):
    """2.21 (gencode 6.31.1) asks for protobuf<8: protobuf 7 is allowed by TensorFlow itself."""
    site.tensorflow(gencode="6.31.1").healthy_dependencies(protobuf="7.36.2")
    assert run(site).codes() == []


def test_protobuf_below_the_floor_is_pkg005_with_the_symptom_of_that_version(site):
    """Issue 27 item 5: protobuf 4 (no runtime_version module) under 2.21 fails at the import of
    runtime_version, not with a VersionError."""
    site.tensorflow(gencode="6.31.1").healthy_dependencies(protobuf="4.25.8")
    (finding,) = run(site).findings()
    assert (finding.code, finding.severity.label) == ("PKG005", "error")
    assert finding.message.endswith(
        "import tensorflow fails: ImportError: cannot import name 'runtime_version' from 'google.protobuf' (the "
        "generated _pb2 modules import it; protobuf has it from 5.26)")


def test_ml_dtypes_built_for_numpy_1_quotes_the_umath_failure(site):
    site.tensorflow().healthy_dependencies(ml_dtypes="0.3.2")
    (finding,) = run(site).findings()
    assert (finding.code, finding.severity.label) == ("PKG005", "error")
    assert "ImportError: numpy.core.umath failed to import" in finding.message


def test_gencode_is_read_from_the_wheel(site):
    tensorflow_2_20(site, "5.29.5")
    python = snapshot(paths=[str(site)], environ={})
    assert python["tensorflow"]["protobuf_gencode"] == {
        "version": "5.28.3", "checks_runtime": True,
        "file": str(site.path / "tensorflow/core/framework/attr_value_pb2.py")}
    site.file("tensorflow/core/framework/attr_value_pb2.py", "# Generated by the protocol buffer compiler.\n")
    assert snapshot(paths=[str(site)], environ={})["tensorflow"]["protobuf_gencode"] is None  # before 5.26


# -- PKG017: add-ons built for another TensorFlow ----------------------------------------------------------

ADDONS = {
    # name: (version, Requires-Dist as their METADATA writes it)
    "tensorflow-text": ("2.20.0", ("tensorflow<2.21,>=2.20.0",
                                   'tensorflow-cpu<2.21,>=2.20.0; extra == "tensorflow-cpu"',
                                   'tensorflow-datasets>=3.2.0; extra == "tests"')),
    "tensorflow-decision-forests": ("1.12.0", ("tensorflow==2.19.0", "tf_keras~=2.19")),
    "tensorflow-addons": ("0.23.0", ("typeguard<3.0.0,>=2.7", "tensorflow (<2.16.0,>=2.13.0) ; extra == 'tensorflow'",
                                     "tensorflow-cpu (<2.16.0,>=2.13.0) ; extra == 'tensorflow-cpu'")),
    "tensorflow-serving-api": ("2.19.0", ("protobuf (<7.0.0dev,>=3.20.3)", "tensorflow (<3,>=2.19.0)")),
}


# Issue 36: the fix names a release that exists, installed without pulling the distribution named `tensorflow`
# on top of tensorflow-cpu; for an add-on with no release for TensorFlow 2.21 it says so (package_graph.toml).
ADDON_FIXES = {
    "tensorflow-text": ("Install tensorflow-text 2.21.*, the release built for TensorFlow 2.21.0",
                        (f"{PIP} install --no-deps 'tensorflow-text==2.21.*'",), ""),
    "tensorflow-decision-forests": (
        "Wait for the tensorflow-decision-forests release for TensorFlow 2.21, or use the TensorFlow its installed "
        "release is built for", (), "tfdoctor knows no tensorflow-decision-forests release built for TensorFlow "
        "2.21.0 (the newest known to tfdoctor is for TensorFlow 2.19); once one is published, install it with "
        "--no-deps and the exact version"),
    "tensorflow-addons": (
        "No tensorflow-addons release exists for TensorFlow 2.21.0: remove it, or use an older TensorFlow (its newest "
        "release is for 2.15)", (f"{PIP} uninstall -y tensorflow-addons",),
        "TensorFlow Addons ended development (minimal maintenance until May 2024); 0.23.0, for TensorFlow 2.13-2.15, "
        "is its final release: under Keras 3 (TensorFlow 2.16+) it was not rebuilt"),
}


@pytest.mark.parametrize(("name", "severity"), [("tensorflow-text", "error"), ("tensorflow-decision-forests", "error"),
                                                ("tensorflow-addons", "error")])
def test_addon_built_for_another_release(site, name, severity):
    version, requires = ADDONS[name]
    site.tensorflow().healthy_dependencies().dist(name, version, requires=requires, top_level=(name.replace("-", "_"),))
    report = run(site)
    assert found(report) == {("PKG017", severity)}
    (finding,) = report.findings()
    assert "undefined symbol" in finding.message
    (fix,) = finding.fixes
    assert (fix.title, fix.steps, fix.text) == ADDON_FIXES[name]


def test_addon_fix_under_the_tensorflow_distribution_keeps_deps_and_pins_it(site):
    """Next to the distribution the add-on names (`tensorflow`), pip may resolve: TensorFlow pinned, no --no-deps."""
    version, requires = ADDONS["tensorflow-text"]
    site.tensorflow(name="tensorflow").healthy_dependencies().dist("tensorflow-text", version, requires=requires)
    (finding,) = run(site).findings()
    assert finding.fixes[0].steps == (f"{PIP} install 'tensorflow-text==2.21.*' 'tensorflow==2.21.0'",)


def test_tensorflow_io_for_a_release_it_was_built_for_names_that_release(site):
    site.tensorflow_2_15().dist("tensorflow-io", "0.37.1", requires=(
        "tensorflow-io-gcs-filesystem==0.37.1", "tensorflow<2.17.0,>=2.16.0; extra == 'tensorflow'"))
    finding = next(f for f in run(site).findings() if f.code == "PKG017")
    assert finding.fixes[0].steps == (f"{PIP} install --no-deps 'tensorflow-io==0.36.0'",)


def test_addon_message_names_its_pin_and_the_symptom(site):
    version, requires = ADDONS["tensorflow-text"]
    site.tensorflow().healthy_dependencies().dist("tensorflow-text", version, requires=requires)
    (finding,) = run(site).findings()
    assert finding.message.startswith(
        "tensorflow-text 2.20.0 was built for TensorFlow <2.21,>=2.20.0 (its METADATA), and TensorFlow 2.21.0 is "
        "installed: import tensorflow_text fails: tensorflow.python.framework.errors_impl.NotFoundError: "
        "…/tensorflow_text/python/…/_text_similarity_metric_ops.so (or another of its _*.so): undefined symbol")


def test_addons_built_for_the_installed_release_are_silent(site):
    """The healthy twins: the same add-ons at the releases made for the installed TensorFlow."""
    site.tensorflow().healthy_dependencies()
    site.dist("tensorflow-text", "2.21.1", requires=("tensorflow<2.22,>=2.21.0",))  # 2.21.0: broken (PKG010)
    site.dist("tensorflow-serving-api", "2.19.0", requires=ADDONS["tensorflow-serving-api"][1])  # <3: fits 2.21
    site.dist("tensorflow-recommenders", "0.7.3", requires=('tensorflow (>=2.9.0) ; sys_platform != "darwin"',))
    assert run(site).codes() == []


def test_pure_python_addon_is_a_warning(site):
    site.tensorflow_2_15().dist("tensorflow-serving-api", "2.19.0", requires=ADDONS["tensorflow-serving-api"][1])
    assert ("PKG017", "warning") in found(run(site))


# -- PKG018: a GPU environment checked where there is no GPU -----------------------------------------------

def gpu_venv(site: FakeSitePackages, **wheels: str) -> FakeSitePackages:
    """`pip install 'tensorflow[and-cuda]==2.21.0'` (then whatever changed the wheels)."""
    site.tensorflow(name="tensorflow", build_info=BUILD_INFO_CUDA, requires=TF_2_21_REQUIRES,
                    gencode="6.31.1").healthy_dependencies()
    for name, version in {**AND_CUDA_2_21, **wheels}.items():
        site.dist(name, version, top_level=("nvidia",), tags=("py3-none-manylinux2014_x86_64",))
    return site


def test_cudnn_8_under_a_cudnn_9_build_on_a_login_node(site):
    """Issue 27 item 3: no GPU here, yet the job will skip every GPU on the GPU node."""
    report = run(gpu_venv(site, **{"nvidia-cudnn-cu12": "8.9.7.29"}), select=("PKG", "CUDA"))
    assert found(report) == {("PKG018", "error")}
    (finding,) = report.findings()
    assert finding.message == (
        "nvidia-cudnn-cu12 8.9.7.29 does not fit TensorFlow 2.21.0's CUDA build (cuDNN 9; tensorflow[and-cuda] asks "
        "for nvidia-cudnn-cu12<10.0,>=9.3.0.75): TensorFlow asks the loader for libcudnn.so.9, which this wheel does "
        "not have: on a GPU node TensorFlow logs 'Cannot dlopen some GPU libraries', skips every GPU and runs on the "
        "CPU (this host has no NVIDIA GPU: the job will meet it on a GPU node)")
    assert finding.fixes == (AdminFix("Install the nvidia-cudnn-cu12 TensorFlow 2.21.0 was built for",
                                      (f"{PIP} install 'nvidia-cudnn-cu12<10.0,>=9.3.0.75'",)),)
    statuses = {r.code: r for r in report.results}
    for code in ("CUDA001", "CUDA002"):  # not "passed": nothing was resolved here
        assert statuses[code].status is Status.NOT_CHECKED, code
        assert "no NVIDIA GPU or driver on this host" in statuses[code].reason


def test_cudnn_older_minor_and_other_libraries_outside_the_range(site):
    report = run(gpu_venv(site, **{"nvidia-cudnn-cu12": "9.1.0.70", "nvidia-cublas-cu12": "12.4.5.8"}))
    assert found(report) == {("PKG018", "error"), ("PKG018", "warning")}
    cudnn = next(f for f in report.findings() if "cudnn" in f.message)
    assert "fails at the first convolution" in cudnn.message


def test_gpu_venv_with_the_wheels_it_was_built_for_is_silent_on_a_login_node(site):
    report = run(gpu_venv(site), select=("PKG", "CUDA"))
    assert report.codes() == []
    assert {r.code: r.status for r in report.results}["CUDA002"] is Status.NOT_CHECKED


def test_on_a_gpu_host_the_wheel_is_judged_too_without_the_login_node_note(site):
    report = run(gpu_venv(site, **{"nvidia-cudnn-cu12": "8.9.7.29"}), driver=DRIVER, select=("PKG018",))
    (finding,) = report.findings()
    assert finding.code == "PKG018" and "this host has no NVIDIA GPU" not in finding.message


def test_cpu_build_with_stray_nvidia_wheels_is_not_judged(site):
    site.tensorflow().healthy_dependencies().dist("nvidia-cudnn-cu12", "8.9.7.29", top_level=("nvidia",))
    assert run(site, select=("PKG", "CUDA")).codes() == []


def test_a_newer_patch_than_a_215_pin_fits_and_an_older_cudnn_does_not(site):
    """tensorflow[and-cuda]==2.15.1 pins nvidia-cudnn-cu12==8.9.4.25: 8.9.7.29 loads (same major, newer);
    8.6.0.163 is older than the build."""
    build_info_215 = BUILD_INFO_CUDA.replace("'12.5.1'", "'12.2'").replace("('cudnn_version', '9')",
                                                                          "('cudnn_version', '8')")
    requires = ('nvidia-cudnn-cu12==8.9.4.25; extra == "and-cuda"', 'nvidia-cublas-cu12==12.2.5.6; extra == "and-cuda"',
                "numpy<2.0.0,>=1.23.5")
    site.tensorflow(name="tensorflow", version="2.15.1", build_info=build_info_215, requires=requires)
    site.healthy_dependencies(numpy="1.26.4")
    site.dist("nvidia-cublas-cu12", "12.2.5.6").dist("nvidia-cudnn-cu12", "8.9.7.29")
    assert run(site, select=("PKG018",)).codes() == []
    site.dist("nvidia-cudnn-cu12", "8.6.0.163")
    shutil.rmtree(site.path / "nvidia_cudnn_cu12-8.9.7.29.dist-info")
    (finding,) = run(site, select=("PKG018",)).findings()
    assert finding.severity.label == "error" and "fails at the first convolution" in finding.message
