"""CPU checks on fake machines (FakeRoot) with a fake TensorFlow read by the real snapshot."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import check_facts, env_fixes, probe_root
from support.fake_site_packages import FakeSitePackages

from tfdoctor.facts.probes.pyenv_snapshot import snapshot
from tfdoctor.model import AdminFix, Applicability, EnvFix, Status, unset_env
from tfdoctor.testing import FakeRoot

NO_AVX_FLAGS = ("fpu", "sse", "sse2", "ssse3", "sse4_1", "sse4_2", "popcnt")
CELERON = "Intel(R) Celeron(R) CPU  J1900  @ 1.99GHz"


def run(root: FakeRoot, site: FakeSitePackages | None, env: dict[str, str] | None = None):
    facts = probe_root(root, env or {})
    paths = [str(site)] if site is not None else []
    facts.sections["python"] = snapshot(paths=paths, environ={}, prefix="/nonexistent")
    return check_facts(facts, select=["CPU"])


@pytest.fixture
def site(tmp_path: Path) -> FakeSitePackages:
    return FakeSitePackages(tmp_path / "site-packages").tensorflow().healthy_dependencies()


def test_cpu_without_avx_and_an_avx_wheel(make_root, site):
    root = make_root().cpus(flags=NO_AVX_FLAGS, model=CELERON, governor="performance")
    report = run(root, site)
    assert report.codes() == ["CPU001"]
    finding = report.findings()[0]
    assert finding.severity.label == "error"
    assert finding.message == (f"tensorflow-cpu 2.21.0 (cp311-cp311-manylinux_2_27_x86_64) is compiled with AVX, "
                               f"which {CELERON} lacks: import tensorflow will die with 'Illegal instruction'")
    assert finding.evidence == {
        "cpu.cpuinfo.flags": sorted(NO_AVX_FLAGS), "cpu.cpuinfo.model_name": CELERON,
        "python.watched.tensorflow-cpu.wheel_tags": ["cp311-cp311-manylinux_2_27_x86_64"],
        "python.watched.tensorflow-cpu.version": "2.21.0",
    }
    assert isinstance(finding.fixes[0], AdminFix)
    assert finding.fixes[0].applicability is Applicability.MANUAL


def test_cpu_with_avx_is_silent(make_root, site):
    root = make_root().cpus(governor="performance")  # default flags include avx
    report = run(root, site)
    assert report.codes() == []
    assert {r.status for r in report.results} == {Status.PASSED}


@pytest.mark.parametrize(("version", "tags", "installer"), [
    ("2.21.0", ("cp311-cp311-manylinux_2_27_aarch64",), "pip"),  # not an x86 wheel
    ("2.21.0", (), "pip"),                                       # no WHEEL file: not a wheel install
    ("2.21.0", ("cp311-cp311-linux_x86_64",), "pip"),            # a wheel built from source
    ("2.21.0", ("cp311-cp311-manylinux_2_27_x86_64",), "conda"),  # conda's own build
    ("1.5.0", ("cp36-cp36m-manylinux1_x86_64",), "pip"),         # before AVX wheels
])
def test_no_avx_but_wheel_not_judged(make_root, tmp_path, version, tags, installer):
    site = FakeSitePackages(tmp_path / "sp").tensorflow(name="tensorflow", version=version, tags=tags)
    dist_info = next(site.path.glob("tensorflow-*.dist-info"))
    (dist_info / "INSTALLER").write_text(installer + "\n")
    if not tags:
        (dist_info / "WHEEL").unlink()
    root = make_root().cpus(flags=NO_AVX_FLAGS, governor="performance")
    assert run(root, site).codes() == []


def test_no_avx_without_tensorflow_is_silent(make_root):
    root = make_root().cpus(flags=NO_AVX_FLAGS, governor="performance")
    assert run(root, None).codes() == []


def test_unreadable_cpuinfo_is_not_checked(make_root, site):
    root = make_root().cpus(governor="performance")
    (root.path / "proc/cpuinfo").unlink()
    report = run(root, site)
    assert report.result("CPU001").status is Status.NOT_CHECKED
    assert report.result("CPU001").reason == "cpu.cpuinfo unknown: /proc/cpuinfo does not exist"


@pytest.mark.parametrize("value", ["0", "false", "False"])
def test_onednn_disabled_on_x86(make_root, site, value):
    root = make_root().cpus(governor="performance")
    report = run(root, site, env={"TF_ENABLE_ONEDNN_OPTS": value})
    assert report.codes() == ["CPU002"]
    finding = report.findings()[0]
    assert finding.message == f"TF_ENABLE_ONEDNN_OPTS={value} turns off oneDNN's CPU kernels in tensorflow-cpu 2.21.0"
    assert finding.evidence == {"env.TF_ENABLE_ONEDNN_OPTS": value, "python.watched.tensorflow-cpu.version": "2.21.0"}
    assert finding.fixes == (EnvFix("Unset TF_ENABLE_ONEDNN_OPTS", (unset_env("TF_ENABLE_ONEDNN_OPTS"),),
                                    Applicability.UNSAFE),)
    assert env_fixes(report) == {"TF_ENABLE_ONEDNN_OPTS": None}


@pytest.mark.parametrize(("value", "version", "tags"), [
    ("1", "2.21.0", ("cp311-cp311-manylinux_2_27_x86_64",)),
    ("0", "2.8.0", ("cp310-cp310-manylinux2010_x86_64",)),      # oneDNN was off by default then
    ("0", "2.21.0", ("cp311-cp311-manylinux_2_27_aarch64",)),   # not x86
])
def test_onednn_silent_cases(make_root, tmp_path, value, version, tags):
    site = FakeSitePackages(tmp_path / "sp").tensorflow(version=version, tags=tags)
    root = make_root().cpus(governor="performance")
    assert run(root, site, env={"TF_ENABLE_ONEDNN_OPTS": value}).codes() == []


def test_governor_not_performance(make_root, site):
    root = make_root().cpus(cores_per_socket=4, governor="powersave")
    (root.path / "sys/devices/system/cpu/cpu3/cpufreq/scaling_governor").write_text("performance\n")
    report = run(root, site)
    assert report.codes() == ["CPU003"]
    finding = report.findings()[0]
    assert finding.severity.label == "info"
    assert finding.message == "3 of 4 CPUs are not on the performance governor (3 on powersave)"
    assert finding.evidence == {"cpu.governors": {"performance": 1, "powersave": 3}}
    assert finding.fixes == (AdminFix("Set the performance frequency governor (root)",
                                      ("sudo cpupower frequency-set -g performance",)),)
    assert env_fixes(report) == {}


def test_no_cpufreq_is_not_checked(make_root, site):
    root = make_root().cpus()  # no governor files, as in most VMs and containers
    report = run(root, site)
    assert report.codes() == []
    assert report.result("CPU003").status is Status.NOT_CHECKED
    assert report.result("CPU003").reason.startswith("cpu.governors unknown: no readable frequency governor")


def test_windows_wheel_without_avx(make_root, tmp_path):
    site = FakeSitePackages(tmp_path / "sp").tensorflow(name="tensorflow-intel", version="2.15.1",
                                                        tags=("cp311-cp311-win_amd64",))
    root = make_root().cpus(flags=NO_AVX_FLAGS, governor="performance")
    report = run(root, site)
    assert report.codes() == ["CPU001"]
    assert report.findings()[0].evidence["python.watched.tensorflow-intel.wheel_tags"] == ["cp311-cp311-win_amd64"]
