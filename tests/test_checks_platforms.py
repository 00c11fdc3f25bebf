"""The platform checks (tfdoctor/checks/platforms.py: PLAT001/002 on Jetson boards, PLAT010/011 on Macs) and
CUPTI004 (tfdoctor/checks/cupti_wsl.py), on the fixtures recorded from the report machines of
tests/reports/reports_platforms.py, edited fact by fact; and the GPU checks of discrete GPUs, which on a
Jetson or a Mac are not applicable with the platform as the reason, never "no NVIDIA GPU"."""

from __future__ import annotations

import pytest
from conftest import check_facts
from support.snapshot_facts import edited_facts

from tfdoctor.derive.platforms import jetpack_of, jetpack_with_wheel, jetpacks, metal_for, metal_releases, wheels_for
from tfdoctor.model import Severity, Status

JETSON = "checks/plat001-pypi-cpu-only-wheel-on-a-jetson.json"
OTHER_JETPACK = "checks/plat002-jetpack-6-0-wheel-on-jetpack-6-2.json"
ROSETTA = "checks/plat010-x86-wheel-under-rosetta.json"
METAL = "checks/plat011-metal-1-1-with-tensorflow-2-18.json"
WSL2 = "checks/cupti004-profiler-under-wsl2.json"
PIP = "/home/nvidia/venv/bin/python -m pip"


def only(report, code):
    findings = [f for f in report.findings() if f.code == code]
    assert len(findings) == 1, [f"{f.code}: {f.message}" for f in report.findings()]
    return findings[0]


def test_a_pypi_wheel_on_a_jetson_is_cpu_only_and_the_fix_is_nvidias_wheel_for_its_jetpack():
    finding = only(check_facts(edited_facts(JETSON, {}), select=["PLAT"]), "PLAT001")
    assert finding.severity is Severity.WARNING
    assert finding.message.startswith("TensorFlow 2.13.1 (tensorflow-cpu-aws, cp38-cp38-manylinux_2_17_aarch64")
    assert "NVIDIA Jetson AGX Orin Developer Kit (L4T R35.4.1) it will never use the GPU" in finding.message
    assert finding.fixes[0].steps == (
        f"{PIP} uninstall -y tensorflow-cpu-aws",
        f"{PIP} install --extra-index-url https://developer.download.nvidia.com/compute/redist/jp/v512 "
        "'tensorflow==2.12.0+nv23.06'")


def test_a_jetpack_without_a_table_row_gets_the_finding_without_a_guessed_command():
    facts = edited_facts(JETSON, {"tegra.l4t.release": "38.2.0"})  # JetPack 7.0 (Thor): not in the table
    finding = only(check_facts(facts, select=["PLAT001"]), "PLAT001")
    assert finding.fixes == ()
    assert "install-tf-jetson-platform" in finding.message


@pytest.mark.parametrize("edits", [
    {"tegra.detected": False},  # an aarch64 server: PyPI's wheel is what it should run
    {"python.tensorflow.build_info.is_cuda_build": True},  # a build from source with CUDA for the board
])
def test_no_jetson_or_a_cuda_build_is_silent(edits):
    report = check_facts(edited_facts(JETSON, edits), select=["PLAT001"])
    assert report.findings() == [] and report.results[0].status is Status.PASSED


def test_a_jetpack_without_wheels_of_its_own_gets_those_of_its_stack():
    facts = edited_facts(JETSON, {"tegra.l4t.release": "35.5.0"})  # JetPack 5.1.3
    finding = only(check_facts(facts, select=["PLAT001"]), "PLAT001")
    assert ("NVIDIA published no TensorFlow wheel for JetPack 5.1.3; those of JetPack 5.1.2 "
            "(https://developer.download.nvidia.com/compute/redist/jp/v512) are built against the same CUDA 11.4, "
            "cuDNN 8.6, TensorRT 8.5") in finding.message
    assert finding.fixes[0].steps[-1].endswith("/jp/v512 'tensorflow==2.12.0+nv23.06'")


def test_nvidias_wheel_of_another_jetpack_is_named_with_both_stacks():
    finding = only(check_facts(edited_facts(OTHER_JETPACK, {}), select=["PLAT"]), "PLAT002")
    assert finding.severity is Severity.WARNING
    assert finding.message.startswith(
        "TensorFlow 2.15.0+nv24.05 is NVIDIA's build for JetPack 6.0 (CUDA 12.2, cuDNN 8.9, TensorRT 8.6); "
        "NVIDIA Jetson Orin NX Engineering Reference Developer Kit Super (L4T R36.4.3) runs JetPack 6.2, which "
        "installs CUDA 12.6, cuDNN 9.3, TensorRT 10.3")
    assert finding.fixes[0].title == "Install NVIDIA's TensorFlow for JetPack 6.1"
    assert finding.fixes[0].steps == (
        f"{PIP} uninstall -y tensorflow",
        f"{PIP} install --extra-index-url https://developer.download.nvidia.com/compute/redist/jp/v61 "
        "'tensorflow==2.16.1+nv24.08'")


# NVIDIA's JetPack minor releases share one compute stack and one set of wheels: no alarm for a wheel of the
# same stack, whichever JetPack of it the wheel was published for.
@pytest.mark.parametrize(("wheel", "l4t"), [
    ("2.11.0+nv23.01", "35.5.0"),  # the JetPack 5.1 wheel on 5.1.3
    ("2.11.0+nv23.03", "35.4.1"),  # on 5.1.2
    ("2.12.0+nv23.05", "35.6.1"),  # the 5.1.1 wheel on 5.1.5
    ("2.12.0+nv23.06", "35.6.0"),  # the 5.1.2 wheel on 5.1.4
    ("2.16.1+nv24.08", "36.4.3"),  # the 6.1 wheel on 6.2
    ("2.16.1+nv24.08", "36.4.4"),  # and on 6.2.1
    ("2.14.0+nv24.01", "36.3.0"),  # the 6.0 DP wheel on 6.0
])
def test_a_wheel_of_the_same_stack_is_silent(wheel, l4t):
    facts = edited_facts(OTHER_JETPACK, {"python.watched.tensorflow.version": wheel, "tegra.l4t.release": l4t})
    result = check_facts(facts, select=["PLAT002"]).results[0]
    assert result.status is Status.PASSED and result.findings == ()


@pytest.mark.parametrize(("wheel", "l4t", "built", "board"), [
    ("2.15.0+nv24.05", "36.4.4", "6.0", "6.2.1"),  # cuDNN 8 on a board with cuDNN 9
    ("2.10.0+nv22.11", "35.5.0", "5.0.2", "5.1.3"),  # built with cuDNN 8.4 and TensorRT 8.4
    ("2.12.0+nv23.06", "36.4.3", "5.1.2", "6.2"),  # CUDA 11.4 on CUDA 12.6
    ("2.16.1+nv24.08", "36.3.0", "6.1", "6.0"),  # a newer JetPack's wheel on an older one
])
def test_a_wheel_of_another_stack_is_reported(wheel, l4t, built, board):
    facts = edited_facts(OTHER_JETPACK, {"python.watched.tensorflow.version": wheel, "tegra.l4t.release": l4t})
    finding = only(check_facts(facts, select=["PLAT002"]), "PLAT002")
    assert f"NVIDIA's build for JetPack {built} (" in finding.message and f"runs JetPack {board}," in finding.message


@pytest.mark.parametrize(("edits", "reason"), [
    ({"tegra.l4t": None}, "the L4T release is unknown"),
    ({"tegra.l4t.release": "38.2.0"}, "L4T R38.2.0 has no row"),
    ({"python.watched.tensorflow.version": "2.13.0+nv23.08"}, "not among the wheels"),
])
def test_what_the_table_cannot_tell_is_not_checked_with_the_reason(edits, reason):
    facts = edited_facts(OTHER_JETPACK, {("python", "distributions", "tensorflow", "version"): "x", **edits})
    result = check_facts(facts, select=["PLAT002"]).results[0]
    assert result.status is Status.NOT_CHECKED and reason in result.reason


def test_the_jetpacks_own_wheel_is_silent():
    facts = edited_facts(OTHER_JETPACK, {"python.watched.tensorflow.version": "2.16.1+nv24.08",
                                         "tegra.l4t.release": "36.4.0"})
    assert check_facts(facts, select=["PLAT002"]).results[0].status is Status.PASSED


def test_an_x86_wheel_under_rosetta_says_why_it_dies_and_how_to_run_natively():
    report = check_facts(edited_facts(ROSETTA, {}), select=["PLAT", "CPU001"])
    finding = only(report, "PLAT010")
    assert "under Rosetta 2 on Apple silicon (the CPU it sees: Apple M1)" in finding.message
    assert "Rosetta does not translate AVX" in finding.message
    assert finding.fixes[0].steps == ("arch -arm64 /usr/bin/python3 -m venv NEW_ENV",
                                      "NEW_ENV/bin/python -m pip install 'tensorflow==2.16.1'")
    assert only(report, "CPU001").severity is Severity.ERROR  # the same cause, from the CPU's flags


@pytest.mark.parametrize("edits", [
    {"python.machine": "arm64"},  # a native arm64 Python
    {"darwin.apple_silicon": False},  # an Intel Mac: no Rosetta
])
def test_a_native_python_or_an_intel_mac_is_silent(edits):
    assert check_facts(edited_facts(ROSETTA, edits), select=["PLAT010"]).findings() == []


@pytest.mark.parametrize(("tensorflow", "message", "steps"), [
    ("2.18.0", "tensorflow-metal 1.1.0 is built for TensorFlow 2.14 to 2.17, not 2.18.0",
     ("/Users/ada/venv/bin/python -m pip install 'tensorflow-metal==1.2.0' 'tensorflow==2.18.0'",)),
    ("2.13.1", "not 2.13.1", ("/Users/ada/venv/bin/python -m pip install 'tensorflow-metal==1.0.0' "
                              "'tensorflow==2.13.1'",)),
    ("2.21.0", "not 2.21.0", ("/Users/ada/venv/bin/python -m pip install 'tensorflow==2.17.*' "
                              "'tensorflow-metal==1.1.0'",)),
])
def test_metal_of_another_release_names_the_releases_and_the_install_that_fits(tensorflow, message, steps):
    facts = edited_facts(METAL, {"python.watched.tensorflow.version": tensorflow})
    finding = only(check_facts(facts, select=["PLAT011"]), "PLAT011")
    assert finding.severity is Severity.ERROR and message in finding.message
    assert finding.fixes[0].steps == steps


def test_metal_within_its_range_is_silent_and_an_unknown_release_is_not_checked():
    assert check_facts(edited_facts(METAL, {"python.watched.tensorflow.version": "2.17.1"}),
                       select=["PLAT011"]).results[0].status is Status.PASSED
    unknown = edited_facts(METAL, {("python", "distributions", "tensorflow-metal", "version"): "9.9.9"})
    result = check_facts(unknown, select=["PLAT011"]).results[0]
    assert result.status is Status.NOT_CHECKED and "9.9.9 is not in" in result.reason


def test_cupti_under_wsl2_is_named_when_profiling_is_set_up():
    finding = only(check_facts(edited_facts(WSL2, {}), select=["CUPTI"]), "CUPTI004")
    assert "kernel 5.15.133.1-microsoft-standard-WSL2" in finding.message
    assert finding.fixes[0].title == "Profile the GPU on native Linux"


def test_cupti004_is_silent_without_a_profiler():
    facts = edited_facts(WSL2, {})
    del facts.sections["python"]["watched"]["tensorboard-plugin-profile"]  # nothing will trace
    assert check_facts(facts, select=["CUPTI004"]).results[0].status is Status.PASSED


def test_cupti004_is_silent_on_native_linux():
    facts = edited_facts(WSL2, {"host.wsl2.detected": False, "host.kernel": "6.5.0-35-generic"})
    assert check_facts(facts, select=["CUPTI004"]).findings() == []


@pytest.mark.parametrize(("fixture", "reason"), [
    (JETSON, "NVIDIA Jetson AGX Orin Developer Kit, L4T R35.4.1: its GPU is integrated in the Tegra SoC"),
    (ROSETTA, "macOS: TensorFlow has no CUDA build for macOS"),
])
def test_gpu_checks_on_a_jetson_or_a_mac_are_not_applicable_for_the_platform(fixture, reason):
    report = check_facts(edited_facts(fixture, {}), select=["CUDA", "CUPTI", "DRV", "XLA0", "GPU0"])
    assert report.results and all(r.status is Status.NOT_APPLICABLE for r in report.results)
    assert all(r.reason.startswith(reason) for r in report.results)
    assert not any("no NVIDIA GPU" in r.reason for r in report.results)


def test_the_jetson_table_maps_each_l4t_release_to_one_jetpack_and_each_wheel_to_one_index():
    releases = [r for j in jetpacks() for r in j.l4t]
    wheels = [w for j in jetpacks() for w in j.wheels]
    assert len(releases) == len(set(releases)) and len(wheels) == len(set(wheels))
    assert all("+nv" in w for w in wheels)
    assert jetpack_of("35.4.1").index == "v512" and jetpack_with_wheel("2.15.0+nv24.05").jetpack == "6.0"
    assert jetpack_of("34.1.0") is None
    # A JetPack without wheels of its own has a JetPack of the same stack that has some, and no index.
    for jetpack in jetpacks():
        assert (jetpack.index == "") is (not jetpack.wheels)
        assert wheels_for(jetpack) is not None and wheels_for(jetpack).stack == jetpack.stack
    assert (wheels_for(jetpack_of("36.4.3")).jetpack, wheels_for(jetpack_of("35.6.1")).jetpack) == ("6.1", "5.1.2")


def test_the_metal_table_is_in_release_order_with_ranges_that_do_not_overlap():
    rows = metal_releases()
    assert [tuple(map(int, r.metal.split("."))) for r in rows] == sorted(tuple(map(int, r.metal.split(".")))
                                                                         for r in rows)
    assert metal_for((2, 18)).metal == "1.2.0" and metal_for((2, 16)).metal == "1.1.0"
    assert metal_for((2, 4)) is None and metal_for((2, 19)) is None


@pytest.mark.parametrize(("fixture", "codes"), [
    (ROSETTA, {"CPU001", "PLAT010"}),  # a Mac under Rosetta, recorded from the sysctl answers a real Mac printed
    (JETSON, {"PLAT001"}),  # a Jetson AGX Orin, recorded from its L4T release line and device-tree model
    (OTHER_JETPACK, {"PLAT002"}),  # an Orin NX on JetPack 6.2 (a real R36.4.3 file) with the JetPack 6.0 wheel
])
def test_tfdoctor_check_on_a_recorded_mac_and_jetson_names_the_cause(fixture, codes):
    import json

    from support.command_line import assert_no_traceback, run_cli
    from support.snapshot_facts import SNAPSHOTS

    done = run_cli(["check", "--facts", str(SNAPSHOTS / fixture), "--format", "json", "--fail-on", "warning"])
    assert_no_traceback(done)
    assert done.returncode == 1
    results = json.loads(done.stdout)["results"]
    loud = {r["code"] for r in results if r["status"] == "failed" and r["severity"] in ("warning", "error")}
    assert loud == codes


def test_under_rosetta_a_release_without_wheels_for_the_tools_python_gets_a_python_it_supports():
    facts = edited_facts(ROSETTA, {"python.watched.tensorflow.version": "2.21.0"})
    (fix,) = only(check_facts(facts, select=["PLAT010"]), "PLAT010").fixes
    assert fix.steps[0].startswith("arch -arm64 python3.13 -m venv NEW_ENV   # a native arm64 CPython 3.13")
    assert fix.steps[1] == "NEW_ENV/bin/python -m pip install 'tensorflow==2.21.0'"


def test_a_jetson_python_other_than_the_wheels_gets_a_new_environment_of_the_right_one():
    facts = edited_facts(JETSON, {"python.version": "3.10.12"})
    (fix,) = only(check_facts(facts, select=["PLAT001"]), "PLAT001").fixes
    assert fix.title.startswith("Install NVIDIA's TensorFlow for JetPack 5.1.2 in a Python 3.8 environment")
    assert fix.steps == ("python3.8 -m venv NEW_ENV",
                         "NEW_ENV/bin/python -m pip install --extra-index-url "
                         "https://developer.download.nvidia.com/compute/redist/jp/v512 'tensorflow==2.12.0+nv23.06'")


def test_cupti004_is_not_checked_when_the_installed_packages_are_unknown():
    facts = edited_facts(WSL2, {"python.watched": {"$unknown": "the interpreter's site-packages could not be read"}})
    result = check_facts(facts, select=["CUPTI004"]).results[0]
    assert result.status is Status.NOT_CHECKED and "site-packages" in result.reason
