"""Every registered check, by one rule (issue 29): it fires on its own fixture and stays silent on a healthy
twin. A check's fixture is a facts file named for its code, `tests/snapshots/<folder>/<code>-<situation>.json`
(tests/snapshots/README.md); its healthy twin is a machine of tests/healthy/ on which it runs and finds
nothing. A new check without either fails here, with the file to add in the message; nothing here counts
checks, so adding one needs no other edit to this file."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import REPO, check_facts

from tfdoctor.facts import Facts
from tfdoctor.model import Status
from tfdoctor.registry import load_registry

SNAPSHOTS = REPO / "tests" / "snapshots"
FIXTURE_NAME = re.compile(r"([a-z]+\d{3})-[a-z0-9-]+")  # cuda001-library-not-installed, thr101-…
CHECKS = {spec.code: spec for spec in load_registry().checks}


def fixtures() -> dict[str, list[Path]]:
    """Code -> the facts files named for it, anywhere under tests/snapshots/."""
    found: dict[str, list[Path]] = defaultdict(list)
    for path in sorted(SNAPSHOTS.rglob("*.json")):
        match = FIXTURE_NAME.fullmatch(path.stem)
        if match:
            found[match.group(1).upper()].append(path)
    return found


FIXTURES = fixtures()


def where(path: Path) -> str:
    return str(path.relative_to(REPO))


@pytest.mark.parametrize("code", sorted(CHECKS))
def test_check_fires_on_its_fixture(code: str) -> None:
    """At its own severity or above, on at least one of its fixtures: a warning check whose only fixture draws
    an info tip has not been shown to find what it is named for."""
    spec = CHECKS[code]
    paths = FIXTURES.get(code)
    assert paths, (f"{code} has no triggering fixture: add tests/snapshots/checks/{code.lower()}-<situation>.json, "
                   f"a facts file on which {code} fires (how: tests/snapshots/README.md)")
    severities = []
    for path in paths:
        result = check_facts(Facts.load(path), select=[code]).result(code)
        assert result.status is not Status.CRASHED, f"{where(path)}: {code} crashed: {result.reason}"
        assert result.findings, (f"{where(path)} is named for {code}, but {code} is {result.status.value} there"
                                 + (f": {result.reason}" if result.reason else ""))
        severities += [f.severity for f in result.findings]
    assert max(severities) >= spec.severity, (
        f"{code} is a check of severity {spec.severity.label} but its fixtures draw only "
        f"{sorted({s.label for s in severities})}: add one on which it fires at that severity")


@pytest.mark.parametrize("code", sorted(CHECKS))
def test_check_stays_silent_on_a_healthy_twin(code: str, examined_corpus) -> None:
    """Some healthy machine on which the check ran and found nothing. (That no healthy machine gets a
    warning from any check is tests/test_healthy_corpus.py's.)"""
    ran_silent = [name for name, report in examined_corpus.items()
                  if any(r.code == code and r.status is Status.PASSED for r in report.results)]
    if not ran_silent and code.startswith("PROF") and not _xspace_protos():
        pytest.skip("the healthy profiled machines' step breakdown is read with TensorFlow's XSpace protos, "
                    "and TensorFlow is not installed here")
    assert ran_silent, (f"{code} has no healthy twin: on every machine of tests/healthy/ it is not checked, not "
                        f"applicable or fires. Add the machine where its situation is almost there but right "
                        f"(how: tests/healthy/README.md)")


def _xspace_protos() -> bool:
    from tfdoctor.facts import Unknown
    from tfdoctor.profile.xspace import xplane_module

    return not isinstance(xplane_module(), Unknown)


def test_every_fixture_is_named_for_a_registered_check() -> None:
    strays = {code: [where(p) for p in paths] for code, paths in FIXTURES.items() if code not in CHECKS}
    assert strays == {}, "fixtures named for no registered check (renamed or removed?): rename or delete them"


# -- every fixture is a machine that can exist -------------------------------------------------------------
# A fixture a probe could never have written proves a check against a machine no user has: the guards below
# hold every recorded file to what real hosts show. Each takes the folder, so it can be shown to catch the
# implausible file it is for.

DRIVER_MISSING = ("DRV001",)  # the checks that say no NVIDIA driver is loaded
# What a probe run always writes beside NVML's answer (unknown, with the reason, when it cannot read it): the
# host (its nvidia_driver line), the GPUs on the PCI bus, and the CUDA libraries.
GPU_STACK_SECTIONS = ("host", "gpu_pci", "cuda_libs")


def nvml_fixtures(folder: Path) -> list[tuple[Path, Facts]]:
    """The facts files under `folder` whose NVML section lists at least one GPU."""
    found = []
    for path in sorted(folder.rglob("*.json")):
        facts = Facts.load(path)
        devices = facts.peek("nvml.devices")
        if isinstance(devices, list) and devices:
            found.append((path, facts))
    return found


def driver_missing_beside_nvml(folder: Path) -> list[str]:
    """NVML answers only through a loaded driver: a fixture that lists NVML GPUs and draws a "no driver"
    finding cannot exist, unless its name says it is about the driver (drv…)."""
    return [f"{path.relative_to(folder)}: {code}" for path, facts in nvml_fixtures(folder)
            if not path.stem.startswith("drv")
            for code in check_facts(facts, select=DRIVER_MISSING).codes()]


def gpu_stack_sections_missing(folder: Path) -> list[str]:
    return [f"{path.relative_to(folder)}: no {name}" for path, facts in nvml_fixtures(folder)
            for name in GPU_STACK_SECTIONS if name not in facts.sections]


def nvml_gpus_unbound(folder: Path) -> list[str]:
    """NVML lists only the GPUs the nvidia module has claimed: each is on the PCI bus (where the bus could be
    read: not on WSL2), bound to a driver."""
    found = []
    for path, facts in nvml_fixtures(folder):
        pci = facts.peek("gpu_pci.devices")
        if not isinstance(pci, list):
            continue
        bound = {d.get("address", "").lower(): d.get("driver_bound") for d in pci if isinstance(d, dict)}
        for gpu in facts.peek("nvml.devices"):
            address = str(gpu.get("pci_bus_id", ""))[4:].lower()  # NVML "00000000:3B:00.0" -> sysfs "0000:3b:00.0"
            if bound.get(address) is False:
                found.append(f"{path.relative_to(folder)}: {address} unbound")
            elif address not in bound:
                found.append(f"{path.relative_to(folder)}: {address} not on the PCI bus")
    return found


# The first line of /proc/driver/nvidia/version as the module writes it ("NVRM version: NVIDIA UNIX x86_64 Kernel
# Module  550.54.15  Thu Feb 22 …", the open module's "… Open Kernel Module for x86_64  575.57.08  Release …").
MODULE_LINE = re.compile(r"NVRM version: NVIDIA UNIX (?:[\w-]+ )*?Kernel Module(?: for \w+)?\s+(\d+(?:\.\d+)+)(?:\s|$)")


def nvml_driver_unlike_the_loaded_module(folder: Path) -> list[str]:
    """NVML is the loaded module's own library: it reports that module's version, and a library of another
    version fails ("Driver/library version mismatch"), so a fixture whose NVML names another driver than
    /proc/driver/nvidia/version cannot exist; nor a version line the module does not write. (No line, as on
    WSL2 or Windows: nothing to compare.)"""
    found = []
    for path, facts in nvml_fixtures(folder):
        line = facts.peek("host.nvidia_driver")
        if not isinstance(line, str):
            continue
        module, reported = MODULE_LINE.match(line), facts.peek("nvml.driver_version")
        if module is None:
            found.append(f"{path.relative_to(folder)}: {line!r} is not the module's version line")
        elif module.group(1) != reported:
            found.append(f"{path.relative_to(folder)}: module {module.group(1)}, NVML {reported}")
    return found


# Instruction sets a CPU lists only with another: every AVX2 or FMA CPU has AVX, every AVX-512 one AVX2.
CPU_FLAG_NEEDS = {"avx2": "avx", "fma": "avx", "avx512f": "avx2", "avx": "sse4_2", "sse4_2": "sse4_1"}


def cpu_flags_no_cpu_lists(folder: Path) -> list[str]:
    """A recorded /proc/cpuinfo whose flags no CPU shows (AVX2 without AVX): the checks that read them judge a
    processor that does not exist (CPU001 would say `import tensorflow` dies on it)."""
    found = []
    for path in sorted(folder.rglob("*.json")):
        flags = Facts.load(path).peek("cpu.cpuinfo.flags")
        if isinstance(flags, list):
            found += [f"{path.relative_to(folder)}: {flag} without {needs}"
                      for flag, needs in CPU_FLAG_NEEDS.items() if flag in flags and needs not in flags]
    return found


def pci_ids_unlike_the_nvml_model(folder: Path) -> list[str]:
    """The GPU at each of NVML's buses is the model NVML names there: its PCI device id and class are that
    model's (pci.ids; tests/support/gpu_scenarios.PCI_MODELS). A model the table lacks is named, to be added."""
    from support.gpu_scenarios import PCI_MODELS

    found = []
    for path, facts in nvml_fixtures(folder):
        pci = facts.peek("gpu_pci.devices")
        if not isinstance(pci, list):
            continue
        on_bus = {d.get("address", "").lower(): d for d in pci if isinstance(d, dict)}
        for gpu in facts.peek("nvml.devices"):
            device = on_bus.get(str(gpu.get("pci_bus_id", ""))[4:].lower())
            if device is None or not isinstance(gpu.get("name"), str):
                continue  # nvml_gpus_unbound's finding; a name NVML did not give (not queried under --root)
            if gpu.get("name") not in PCI_MODELS:
                found.append(f"{path.relative_to(folder)}: {gpu.get('name')!r} has no PCI ids in PCI_MODELS")
            elif (device.get("device_id"), device.get("class")) != PCI_MODELS[gpu["name"]]:
                found.append(f"{path.relative_to(folder)}: {gpu['name']} at {device['address']} is "
                             f"{device.get('device_id')}/{device.get('class')} on the PCI bus")
    return found


GPU_UUID = re.compile(r"GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def nvml_uuids_no_gpu_has(folder: Path) -> list[str]:
    """NVML names each GPU by "GPU-" and a UUID (what CUDA_VISIBLE_DEVICES may hold, by prefix): "GPU-0000"
    is no GPU's, and a prefix of it would select GPUs no real machine would."""
    return [f"{path.relative_to(folder)}: {gpu.get('uuid')!r}" for path, facts in nvml_fixtures(folder)
            for gpu in facts.peek("nvml.devices")
            if isinstance(gpu, dict) and isinstance(gpu.get("uuid"), str) and not GPU_UUID.fullmatch(gpu["uuid"])]


def same_machine_twice(folder: Path) -> list[list[str]]:
    """Groups of fixtures with the same facts (their meta, the file's name, aside): one of them shows nothing
    the other does not, so a code's fixture is really another code's."""
    by_facts: dict[str, list[str]] = defaultdict(list)
    for path in sorted(folder.rglob("*.json")):
        by_facts[json.dumps(json.loads(path.read_text())["sections"], sort_keys=True)].append(path.name)
    return [names for names in by_facts.values() if len(names) > 1]


# Each guard over the recorded fixtures, with what to do when it names one.
PLAUSIBILITY_GUARDS = [
    pytest.param(driver_missing_beside_nvml, SNAPSHOTS, (
        "these fixtures list NVML GPUs with no NVIDIA driver loaded: load it in their fake root (as "
        "tests/support/gpu_scenarios.py's driver() does) and record them again"), id="no-driver-beside-nvml"),
    pytest.param(gpu_stack_sections_missing, SNAPSHOTS, (
        f"a probe run always writes {', '.join(GPU_STACK_SECTIONS)} (unknown with a reason when it cannot read "
        "one): record these fixtures from a fake root, or add the sections the probes write for that machine"),
        id="gpu-stack-sections"),
    pytest.param(nvml_gpus_unbound, SNAPSHOTS, (
        "NVML lists only GPUs on the PCI bus that the nvidia module has claimed: load the driver in the fake root "
        "(gpu_scenarios.driver() binds the GPUs it claims) and record these fixtures again"), id="nvml-gpus-bound"),
    pytest.param(nvml_driver_unlike_the_loaded_module, SNAPSHOTS, (
        "NVML answers with the loaded module's version: give the fake root that driver (gpu_scenarios.build_root "
        "loads the one the scenario's NVML reports) and record these fixtures again"), id="nvml-driver-is-loaded"),
    pytest.param(pci_ids_unlike_the_nvml_model, SNAPSHOTS, (
        "gpu_scenarios.build_root dresses each scenario GPU's bus as its model: record these fixtures again"),
        id="pci-model-is-nvml-model"),
    pytest.param(nvml_uuids_no_gpu_has, SNAPSHOTS,
                 "give these GPUs UUIDs as NVML reports them (gpu_scenarios.gpu_uuid)", id="nvml-uuids"),
    pytest.param(cpu_flags_no_cpu_lists, SNAPSHOTS,
                 "record these fixtures with the flags of a real CPU (tfdoctor.testing.HASWELL_FLAGS)",
                 id="cpu-flags-are-a-cpus"),
    pytest.param(same_machine_twice, SNAPSHOTS / "checks",
                 "make each fixture the situation its name says, one on which its own code fires",
                 id="no-two-check-fixtures-alike"),
]


@pytest.mark.parametrize(("guard", "folder", "what_to_do"), PLAUSIBILITY_GUARDS)
def test_every_recorded_fixture_passes_the_plausibility_guard(guard: Callable[[Path], list], folder: Path,
                                                              what_to_do: str) -> None:
    assert guard(folder) == [], what_to_do


def test_the_pci_model_guard_catches_an_a100_id_under_a_v100(tmp_path: Path) -> None:
    data = json.loads((SNAPSHOTS / "gpu" / "healthy-static-nccl-two-gpus.json").read_text())
    assert [d["device_id"] for d in data["sections"]["gpu_pci"]["devices"]] == ["0x1db5", "0x1db5"]
    data["sections"]["gpu_pci"]["devices"][1]["device_id"] = "0x20b0"  # what every model was given before
    data["sections"]["nvml"]["devices"][0]["name"] = "Tesla P4"
    (tmp_path / "healthy-mixed.json").write_text(json.dumps(data))
    assert pci_ids_unlike_the_nvml_model(tmp_path) == [
        "healthy-mixed.json: 'Tesla P4' has no PCI ids in PCI_MODELS",
        "healthy-mixed.json: Tesla V100-SXM2-32GB at 0000:3c:00.0 is 0x20b0/0x030200 on the PCI bus"]


def test_the_plausibility_guards_catch_what_they_are_for(tmp_path: Path) -> None:
    """A host whose NVML lists A100s while no driver is loaded, its GPUs unbound and its CUDA libraries not
    recorded (what the NUMA fixtures were), and the same facts filed under two names."""
    original = SNAPSHOTS / "checks" / "numa001-unbound-process-with-gpus-on-one-node.json"
    data = json.loads(original.read_text())
    data["sections"]["host"]["nvidia_driver"] = None
    for device in data["sections"]["gpu_pci"]["devices"]:
        device["driver_bound"] = False
    del data["sections"]["cuda_libs"]
    (tmp_path / "numa001-driverless.json").write_text(json.dumps(data))
    (tmp_path / "drv001-driverless.json").write_text(json.dumps(data))  # about the driver: DRV001 expected
    assert driver_missing_beside_nvml(tmp_path) == ["numa001-driverless.json: DRV001"]
    assert gpu_stack_sections_missing(tmp_path) == ["drv001-driverless.json: no cuda_libs",
                                                    "numa001-driverless.json: no cuda_libs"]
    assert nvml_gpus_unbound(tmp_path)[:2] == ["drv001-driverless.json: 0000:1a:00.0 unbound",
                                               "drv001-driverless.json: 0000:3b:00.0 unbound"]
    assert same_machine_twice(tmp_path) == [["drv001-driverless.json", "numa001-driverless.json"]]
    data["sections"]["gpu_pci"]["devices"] = data["sections"]["gpu_pci"]["devices"][1:]  # GPU 0 off the bus
    for device in data["sections"]["gpu_pci"]["devices"]:
        device["driver_bound"] = True
    (tmp_path / "numa001-driverless.json").write_text(json.dumps(data))
    (tmp_path / "drv001-driverless.json").unlink()
    assert nvml_gpus_unbound(tmp_path) == ["numa001-driverless.json: 0000:1a:00.0 not on the PCI bus"]


def test_the_driver_version_guard_catches_a_library_of_another_driver(tmp_path: Path) -> None:
    """The NUMA host (module 550.54.15 loaded, NVML 550.54.15) with NVML answering as driver 575.57.08, and
    with a version line no module writes; no line at all (WSL2) is left alone."""
    data = json.loads((SNAPSHOTS / "checks" / "numa001-unbound-process-with-gpus-on-one-node.json").read_text())
    assert nvml_driver_unlike_the_loaded_module(SNAPSHOTS / "checks") == []
    data["sections"]["nvml"]["driver_version"] = "575.57.08"
    (tmp_path / "numa001-mismatch.json").write_text(json.dumps(data))
    open_module = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build  Thu Feb 22"
    data["sections"]["host"]["nvidia_driver"] = open_module
    (tmp_path / "numa002-open-module.json").write_text(json.dumps(data))
    data["sections"]["host"]["nvidia_driver"] = "NVRM version: 575.57.08"
    (tmp_path / "numa003-short-line.json").write_text(json.dumps(data))
    del data["sections"]["host"]["nvidia_driver"]
    (tmp_path / "numa004-wsl2.json").write_text(json.dumps(data))
    assert nvml_driver_unlike_the_loaded_module(tmp_path) == [
        "numa001-mismatch.json: module 550.54.15, NVML 575.57.08",
        "numa002-open-module.json: module 550.54.15, NVML 575.57.08",
        "numa003-short-line.json: 'NVRM version: 575.57.08' is not the module's version line"]


def test_the_cpu_flags_guard_catches_avx2_without_avx(tmp_path: Path) -> None:
    data = json.loads((SNAPSHOTS / "checks" / "mp104-bfloat16-on-cpu-without-bf16-units.json").read_text())
    data["sections"]["cpu"]["cpuinfo"]["flags"] = ["avx2", "fma", "sse4_1", "sse4_2"]
    (tmp_path / "mp104-avx2-alone.json").write_text(json.dumps(data))
    data["sections"]["cpu"]["cpuinfo"]["flags"] = ["sse4_1", "sse4_2", "avx", "avx2", "avx512f", "fma"]
    (tmp_path / "mp105-avx512.json").write_text(json.dumps(data))
    data["sections"]["cpu"]["cpuinfo"]["flags"] = ["sse", "sse2", "avx", "avx2", "fma"]  # FakeRoot's old default
    (tmp_path / "mp106-avx-without-sse4.json").write_text(json.dumps(data))
    assert cpu_flags_no_cpu_lists(tmp_path) == ["mp104-avx2-alone.json: avx2 without avx",
                                                "mp104-avx2-alone.json: fma without avx",
                                                "mp106-avx-without-sse4.json: avx without sse4_2"]


def test_the_uuid_guard_catches_a_made_up_uuid(tmp_path: Path) -> None:
    data = json.loads((SNAPSHOTS / "checks" / "numa001-unbound-process-with-gpus-on-one-node.json").read_text())
    data["sections"]["nvml"]["devices"][1]["uuid"] = "GPU-0001"
    (tmp_path / "numa001-made-up.json").write_text(json.dumps(data))
    assert nvml_uuids_no_gpu_has(tmp_path) == ["numa001-made-up.json: 'GPU-0001'"]
