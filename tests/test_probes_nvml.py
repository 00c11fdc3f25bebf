"""NVML through a fake pynvml: healthy answers, a missing library, an init error, one call that raises,
one call that hangs (the probe gives up, the CLI still exits), and no import at all without a driver."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tfdoctor.derive.gpu_inventory import all_gpus
from tfdoctor.facts import Unknown, abandoned
from tfdoctor.facts.probes import nvml
from tfdoctor.testing import facts_from
from tfdoctor.testing.fake_nvml import FakeGpu, FakeNvml, NVMLError, NVMLError_LibraryNotFound

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def use_nvml(monkeypatch):
    monkeypatch.setattr(abandoned, "_abandoned", [])
    fakes: list[FakeNvml] = []

    def install(fake: FakeNvml | None = None, factory=None) -> None:
        if fake is not None:
            fakes.append(fake)
        monkeypatch.setattr(nvml, "NVML_OVERRIDE", factory or (lambda: fake))

    yield install
    for fake in fakes:
        fake.release.set()  # let a hung worker thread finish


def probe(make_root, timeout: float = 2.0):
    return nvml.probe_nvml(make_root().machine({}, timeout=timeout))


def test_healthy_gpu_gives_every_documented_field(make_root, use_nvml):
    use_nvml(FakeNvml([FakeGpu(processes=[(77, 512)], clock_reasons=0x1 | 0x4)], driver="550.54.15", cuda=12040))
    facts = probe(make_root)
    assert facts["driver_version"] == "550.54.15" and facts["cuda_driver_version"] == "12.4"
    device = facts["devices"][0]
    assert device == {
        "index": 0, "uuid": "GPU-8c4e2f19-5a1d-4b2e-9f3a-0d6c7b8e9f10", "name": "NVIDIA A100-SXM4-40GB",
        "pci_bus_id": "00000000:3B:00.0", "compute_capability": "8.0", "memory_total_mib": 40960,
        "memory_used_mib": 3, "utilization_gpu_percent": 0, "processes": [{"pid": 77, "used_mib": 512}],
        "persistence_mode": True,
        "ecc": {"enabled": True, "uncorrected_volatile": 0, "uncorrected_aggregate": 0},
        "retired_pages": {"single_bit": 0, "double_bit": 0, "pending": False},
        "remapped_rows": {"correctable": 0, "uncorrectable": 0, "pending": False, "failed": False},
        "clock_event_reasons": ["gpu_idle", "sw_power_cap"],
        "pcie": {"gen_current": 4, "gen_max": 4, "width_current": 16, "width_max": 16},
        "mig_mode": {"current": False, "pending": False}, "mig_devices": [], "nvlink": None,
    }
    gpus = all_gpus(facts_from({"nvml": facts}))
    assert [(g.index, g.compute_capability) for g in gpus] == [(0, (8, 0))]


def test_mig_instances_are_listed(make_root, use_nvml):
    use_nvml(FakeNvml([FakeGpu(mig=(True, True), mig_uuids=["MIG-aaaa", "MIG-bbbb"])]))
    assert probe(make_root)["devices"][0]["mig_devices"] == ["MIG-aaaa", "MIG-bbbb"]


def test_not_supported_is_none_not_unknown(make_root, use_nvml):
    use_nvml(FakeNvml([FakeGpu(ecc=None, remapped=None, mig=None)]))
    device = probe(make_root)["devices"][0]
    assert device["ecc"] == {"enabled": None, "uncorrected_volatile": None, "uncorrected_aggregate": None}
    assert device["remapped_rows"] is None and device["mig_mode"] is None


def test_pynvml_not_installed(make_root, use_nvml):
    def missing():
        raise ImportError("No module named 'pynvml'")

    use_nvml(factory=missing)
    facts = probe(make_root)
    assert isinstance(facts, Unknown) and facts.reason.startswith("nvidia-ml-py (pynvml) is not installed")


def test_nvml_library_missing(make_root, use_nvml):
    use_nvml(FakeNvml(init_error=NVMLError_LibraryNotFound("NVML Shared Library Not Found")))
    facts = probe(make_root)
    assert isinstance(facts, Unknown)
    assert facts.reason == "NVML library (libnvidia-ml.so.1) not found: NVML Shared Library Not Found"


def test_init_error(make_root, use_nvml):
    use_nvml(FakeNvml(init_error=NVMLError("Driver/library version mismatch")))
    facts = probe(make_root)
    assert facts == Unknown("nvmlInit failed: Driver/library version mismatch")


def test_one_call_raising_makes_only_its_field_unknown(make_root, use_nvml):
    use_nvml(FakeNvml([FakeGpu()], fail={"nvmlDeviceGetPersistenceMode": NVMLError("Unknown Error"),
                                         "nvmlSystemGetCudaDriverVersion": NVMLError("Function Not Found")}))
    facts = probe(make_root)
    device = facts["devices"][0]
    assert device["persistence_mode"] == Unknown("nvmlDeviceGetPersistenceMode failed: Unknown Error")
    assert facts["cuda_driver_version"] == Unknown("nvmlSystemGetCudaDriverVersion failed: Function Not Found")
    assert device["name"] == "NVIDIA A100-SXM4-40GB" and device["compute_capability"] == "8.0"


def test_a_failing_handle_is_recorded_per_device(make_root, use_nvml):
    lost = {"nvmlDeviceGetHandleByIndex": NVMLError("GPU is lost")}
    use_nvml(FakeNvml([FakeGpu(), FakeGpu(uuid="GPU-2")], fail=lost))
    devices = probe(make_root)["devices"]
    assert devices == [{"index": 0, "error": "nvmlDeviceGetHandleByIndex failed: GPU is lost"},
                       {"index": 1, "error": "nvmlDeviceGetHandleByIndex failed: GPU is lost"}]


def test_a_hanging_call_becomes_unknown_within_the_timeout(make_root, use_nvml):
    use_nvml(FakeNvml([FakeGpu()], hang={"nvmlDeviceGetCudaComputeCapability"}))
    facts = probe(make_root, timeout=0.5)
    limit = nvml.nvml_timeout(make_root().machine({}, timeout=0.5))
    assert facts == Unknown(f"NVML did not answer within {limit:g} s (hung in nvmlDeviceGetCudaComputeCapability)")
    assert abandoned.abandoned_probes() == ["nvml"]


def test_hung_nvml_makes_gpu_checks_not_checked(make_root, use_nvml):
    from tfdoctor.engine import gather_facts, run_checks
    from tfdoctor.registry import load_registry, select_checks

    use_nvml(FakeNvml([FakeGpu()], hang={"nvmlInit"}))
    root = make_root()
    root.write("/proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15\n")
    registry = load_registry()
    probes = [p for p in registry.probes if p.section in ("nvml", "host", "env")]
    facts = gather_facts(probes, root.machine({}, timeout=0.5))
    # The driver is loaded, so NVML's silence leaves the GPUs unknown (not "no GPUs"), with the reason.
    assert "hung in nvmlInit" in facts.sections["nvml"]["nvml_error"]
    assert facts.sections["nvml"]["driver_version"] == "550.54.15"
    report = run_checks(select_checks(registry.checks, ("GPU0",)), facts)
    assert {r.status.value for r in report.results} == {"not-checked"}
    assert "(hung in nvmlInit); no GPU listed in /proc/driver/nvidia/gpus" in report.result("GPU001").reason


HUNG_CLI = textwrap.dedent("""
    import sys
    from tfdoctor.facts.probes import nvml
    from tfdoctor.testing.fake_nvml import FakeGpu, FakeNvml
    nvml.NVML_OVERRIDE = lambda: FakeNvml([FakeGpu()], hang={"nvmlDeviceGetName"})
    from tfdoctor.cli import main
    main(sys.argv[1:])
""")


def test_cli_exits_although_nvml_hangs(make_root):
    root = make_root()
    root.write("/proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15\n")
    done = subprocess.run([sys.executable, "-c", HUNG_CLI, "check", "--root", str(root.path), "--timeout", "1",
                           "--format", "json", "--select", "GPU0"], capture_output=True, text=True, timeout=60,
                          cwd=root.path, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    reasons = {r["code"]: r.get("reason", "") for r in report["results"]} if "results" in report else {}
    assert reasons and all("hung in nvmlDeviceGetName" in reason for reason in reasons.values())


def test_no_driver_means_pynvml_is_never_imported(tmp_path):
    if Path("/proc/driver/nvidia/version").exists() or any(p.startswith("nvidia") for p in os.listdir("/dev")):
        pytest.skip("this machine has an NVIDIA driver")
    code = ("import sys\nfrom tfdoctor.engine import gather_facts\nfrom tfdoctor.registry import load_registry\n"
            "from tfdoctor.facts.machine import Machine\n"
            "facts = gather_facts(load_registry().probes, Machine())\n"
            "print('pynvml' in sys.modules, facts.sections['nvml'].reason)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True,
                         cwd=tmp_path).stdout
    assert out.startswith("False no NVIDIA driver")


def test_nvlink_links_their_peers_and_switches(make_root, use_nvml):
    """An SXM A100 with 12 links: to a peer GPU, to NVSwitches, and a link down; a PCIe card has none."""
    links = [("00000000:0F:00.0", 0)] * 2 + [("00000000:C4:00.0", 2)] * 8 + [("00000000:87:00.0", 0)]
    use_nvml(FakeNvml([FakeGpu(nvlinks=links), FakeGpu(pci_bus_id="00000000:0F:00.0")]))
    first, second = probe(make_root)["devices"]
    assert first["nvlink"] == {"active_links": 11, "peers": ["00000000:0F:00.0", "00000000:87:00.0"], "switch": True}
    assert second["nvlink"] is None
    use_nvml(FakeNvml([FakeGpu(nvlinks=links)], fail={"nvmlDeviceGetNvLinkState": RuntimeError("Unknown Error")}))
    assert probe(make_root)["devices"][0]["nvlink"] == Unknown("nvmlDeviceGetNvLinkState failed: Unknown Error")
