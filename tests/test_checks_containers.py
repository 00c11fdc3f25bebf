"""CTR — the container runtime's share of the GPU (issue 35): the toolkit's capabilities, Apptainer's --nv, an
x86 image emulated on arm64; and the runtime-fitting advice of DRV001 and CUDA001."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from conftest import REPO, check_facts
from healthy import HealthyMachine, collect
from healthy import machines_containers as mc
from support import container_fixtures

from tfdoctor.derive.container import capabilities_grant_compute, cpuinfo_arch, driver_library_fix, emulation
from tfdoctor.facts import Facts, Unknown
from tfdoctor.model import Severity
from tfdoctor.testing import facts_from

FIXTURES = REPO / "tests" / "snapshots" / "containers"


def _facts(machine: HealthyMachine) -> Facts:
    with tempfile.TemporaryDirectory() as tmp:
        return Facts.load(collect(machine, Path(tmp)))


def _findings(facts: Facts, *codes: str) -> list:
    return [f for f in check_facts(facts, select=codes).findings() if f.code in codes]


@pytest.mark.parametrize("name", sorted(container_fixtures.FIXTURES))
def test_fixture_is_what_its_machine_records_today(name: str) -> None:
    """Stale fixtures: `python tools/regenerate.py` rewrites them (times fixed: they change only with the facts)."""
    assert container_fixtures.recorded(name) == (FIXTURES / f"{name}.json").read_text(), (
        f"tests/snapshots/containers/{name}.json is stale: run python tools/regenerate.py")


def test_utility_only_capability_is_ctr001_with_the_variable_as_fix_and_no_cuda001() -> None:
    facts = Facts.load(FIXTURES / "ctr001-utility-capability-only.json")
    report = check_facts(facts)
    codes = {f.code for f in report.findings() if f.severity and f.severity >= Severity.WARNING}
    assert codes == {"CTR001"}
    (finding,) = _findings(facts, "CTR001")
    assert finding.severity is Severity.ERROR
    assert "NVIDIA_DRIVER_CAPABILITIES=utility" in finding.message
    (fix,) = finding.fixes
    assert fix.steps[0] == "docker run --gpus all -e NVIDIA_DRIVER_CAPABILITIES=compute,utility …   # or =all"
    assert "ENV NVIDIA_DRIVER_CAPABILITIES=compute,utility" in fix.steps[1]
    assert finding.evidence["container_runtime.driver_files.compute"] == []
    assert "/usr/bin/nvidia-smi" in finding.evidence["container_runtime.driver_files.utility"]


def test_capabilities_unset_with_utility_files_only_is_ctr001_naming_the_old_default() -> None:
    machine = HealthyMachine("unset", (), "", lambda r: mc.toolkit_container(r, ("utility",)),
                             env=mc.toolkit_env(None), python=mc.VENV, nvml=mc.NVML)
    (finding,) = _findings(_facts(machine), "CTR001")
    assert "NVIDIA_DRIVER_CAPABILITIES unset (older toolkits then mount utility alone)" in finding.message


def test_compute_asked_for_but_absent_is_left_to_cuda001() -> None:
    """compute named and libcuda still missing: not the capability's doing, so CUDA001 names the library."""
    machine = HealthyMachine("asked", (), "", lambda r: mc.toolkit_container(r, ("utility",)),
                             env=mc.toolkit_env("compute,utility"), python=mc.VENV, nvml=mc.NVML)
    facts = _facts(machine)
    assert _findings(facts, "CTR001") == []
    (cuda,) = _findings(facts, "CUDA001")
    assert "libcuda.so.1" in cuda.message
    assert any("docker run --gpus all" in s for s in cuda.fixes[0].steps)


def test_apptainer_without_nv_is_ctr002_with_nv_fix_and_no_docker_advice() -> None:
    facts = Facts.load(FIXTURES / "ctr002-apptainer-without-nv.json")
    report = check_facts(facts)
    codes = {f.code for f in report.findings() if f.severity and f.severity >= Severity.WARNING}
    assert codes == {"CTR002"}
    (finding,) = _findings(facts, "CTR002")
    assert finding.fixes[0].steps == (
        "apptainer exec --nv image.sif python train.py   # singularity exec --nv alike",
        "apptainer exec --nvccli image.sif python train.py   # where nvidia-container-cli is installed")
    assert not any("docker" in step for f in report.findings() for fix in f.fixes for step in fix.steps)


def test_emulated_x86_image_on_apple_silicon_is_ctr003_and_cpu001_stays_silent() -> None:
    facts = Facts.load(FIXTURES / "ctr003-amd64-image-on-apple-silicon.json")
    report = check_facts(facts)
    codes = {f.code for f in report.findings() if f.severity and f.severity >= Severity.WARNING}
    assert codes == {"CTR003"}
    (finding,) = _findings(facts, "CTR003")
    assert "Docker Desktop's arm64 VM (linuxkit kernel)" in finding.message
    assert finding.fixes[0].steps[0].startswith("docker run --platform linux/arm64")


@pytest.mark.parametrize(("value", "grants"), [
    ("compute,utility", True), ("all", True), (" Utility , COMPUTE ", True), ("utility", False),
    ("graphics,utility", False), ("", False), (None, False)])
def test_capabilities_grant_compute(value: str | None, grants: bool) -> None:
    assert capabilities_grant_compute(value) is grants


def test_cpuinfo_arch_and_emulation_from_the_interpreter_and_cpuinfo() -> None:
    apple = {"cpu": {"cpuinfo": {"vendor": "0x61", "flags": ["asimd", "fp"], "model_name": ""}}}
    assert cpuinfo_arch(facts_from(apple)) == "aarch64"
    x86 = {"cpu": {"cpuinfo": {"vendor": "GenuineIntel", "flags": ["sse2", "avx"], "model_name": ""}}}
    assert cpuinfo_arch(facts_from(x86)) == "x86_64"
    emulated = facts_from({**apple, "python": {"marker_environment": {"platform_machine": "x86_64"}},
                           "host": {"kernel": "6.10.14-linuxkit"}})
    assert emulation(emulated) == {"python.marker_environment.platform_machine": "x86_64",
                                   "cpu.cpuinfo.vendor": "0x61", "cpuinfo_arch": "aarch64",
                                   "host.kernel": "6.10.14-linuxkit"}
    native = facts_from({**apple, "python": {"marker_environment": {"platform_machine": "aarch64"}}})
    assert emulation(native) is None
    intel_mac = facts_from({**x86, "python": {"marker_environment": {"platform_machine": "x86_64"}}})
    assert emulation(intel_mac) is None


@pytest.mark.parametrize(("sections", "command", "first_words"), [
    ({"container_runtime": {"apptainer": {"signs": ["/.singularity.d"], "libs": []}}},
     "apptainer exec --nv image.sif python train.py", "--nv binds the host's libcuda.so.1"),
    ({"privileges": {"container": ["/.dockerenv"]}}, "docker run --gpus all …", "the NVIDIA Container Toolkit"),
    ({"privileges": {"container": ["/run/.containerenv"]}}, "podman run --device nvidia.com/gpu=all …",
     "CDI devices"),
    ({"privileges": {"container": ["KUBERNETES_SERVICE_HOST"]}}, None, "request the GPU in the pod spec"),
    ({}, None, "libcuda.so.1 comes with the NVIDIA driver")])
def test_driver_library_fix_names_the_runtimes_own_flag(sections: dict, command: str | None,
                                                        first_words: str) -> None:
    steps, text = driver_library_fix(facts_from(sections))
    assert steps == ((command,) if command else ())  # commands only: prose is the text (issue 36)
    assert text.startswith(first_words)


def test_probe_outside_a_container_reads_nothing_more(make_root) -> None:
    from conftest import probe_root

    root = make_root()
    root.write("/proc/self/cgroup", "0::/user.slice/user-1000.slice/session-3.scope\n")
    section = probe_root(root, {}).get("container_runtime")
    assert section["apptainer"] is None
    assert isinstance(section["driver_files"], Unknown)
    assert section["driver_files"].reason.startswith("not in a container")


def test_utility_only_in_a_kubernetes_pod_asks_for_the_variable_in_the_pod_spec() -> None:
    machine = HealthyMachine("pod", (), "", lambda r: mc.toolkit_container(r, ("utility",), engine="kubernetes"),
                             env=mc.toolkit_env("utility") | mc.POD_ENV, python=mc.VENV, nvml=mc.NVML)
    (finding,) = _findings(_facts(machine), "CTR001")
    assert finding.evidence["container_kind"] == "kubernetes"
    assert finding.fixes[0].steps == (
        'env: [{name: NVIDIA_DRIVER_CAPABILITIES, value: "compute,utility"}]   # in the container\'s spec',)


def test_no_ctr_finding_outside_a_container_even_with_nvml_and_no_libcuda() -> None:
    """A host whose driver lacks its user-space libcuda is CUDA001's (the driver's advice), never CTR001's."""
    facts = Facts.load(REPO / "tests" / "snapshots" / "gpu" / "healthy-cuda12-pip.json")
    facts.sections["cuda_libs"]["libraries"]["cuda"] = {"files": [], "resolved": {}}
    assert _findings(facts, "CTR001", "CTR002", "CTR003") == []


def test_the_toolkit_table_holds_libcuda_under_compute_and_nvml_under_utility() -> None:
    from tfdoctor.knowledge import table

    toolkit = table("nvidia_container_toolkit")
    rows = {row["capability"]: row for row in toolkit.rows}
    assert set(rows) == {"utility", "compute"}
    assert "libnvidia-ml.so" in rows["utility"]["libs"] and "nvidia-smi" in rows["utility"]["bins"]
    assert {"libcuda.so", "libnvidia-ptxjitcompiler.so"} <= set(rows["compute"]["libs"])
    assert not set(rows["utility"]["libs"]) & set(rows["compute"]["libs"])
    assert any("libnvidia-container" in source for source in toolkit.sources)


def test_apptainer_libs_folder_unread_is_ctr002_not_checked_rather_than_passed() -> None:
    facts = Facts.load(FIXTURES / "ctr002-apptainer-without-nv.json")
    reason = "/.singularity.d/libs could not be listed: Permission denied"
    facts.sections["container_runtime"]["apptainer"]["libs"] = Unknown(reason)
    from tfdoctor.model import Status

    (result,) = [r for r in check_facts(facts, select=["CTR002"]).results if r.code == "CTR002"]
    assert result.status is Status.NOT_CHECKED and "Permission denied" in result.reason


def test_cpuinfo_flags_holding_a_non_string_do_not_crash_the_emulation_check():
    """A damaged or hand-made facts file: a list inside cpu.cpuinfo.flags (found by tests/test_properties.py)
    is skipped, and the strings beside it still decide the architecture."""
    from tfdoctor.derive.container import cpuinfo_arch
    from tfdoctor.facts import Facts

    def with_flags(flags):
        cpuinfo = {"flags": flags, "vendor": None}
        return Facts.from_json({"schema_version": 1, "sections": {"cpu": {"cpuinfo": cpuinfo}}})

    assert cpuinfo_arch(with_flags([[], "sse2"])) == "x86_64"
    assert cpuinfo_arch(with_flags([[]])) is None
