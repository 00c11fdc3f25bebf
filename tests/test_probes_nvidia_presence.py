"""GPUs when NVML cannot answer (issue 11, item 5): the facts say *unknown* with the reason — never "no
GPUs" — and the driver from /proc/driver/nvidia/version is still judged against the minimum-driver table."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import check_facts
from support import gpu_scenarios as g

from tfdoctor.facts import Unknown
from tfdoctor.facts.probes import nvml
from tfdoctor.testing.fake_nvml import FakeGpu, FakeNvml, NVMLError_LibraryNotFound


def test_check_on_a_fake_root_with_a_pci_gpu_and_an_old_driver_but_no_nvml(tmp_path):
    g.by_name("drv002-driver-too-old-without-nvml").build(g.FakeRoot(tmp_path))
    done = subprocess.run([sys.executable, "-m", "tfdoctor", "check", "--root", str(tmp_path), "--format", "json",
                           "--select", "DRV,GPU0,CUDA004"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "VIRTUAL_ENV": g.VENV})
    assert done.returncode == 1, done.stdout + done.stderr
    records = {r["code"]: r for r in json.loads(done.stdout)["results"]}
    (finding,) = records["DRV002"]["findings"]
    assert finding["severity"] == "error"
    assert finding["message"].startswith("the driver (470.82.01, from /proc/driver/nvidia/version; its newest CUDA "
                                         "is 11.4) is older than the CUDA 12.2 TensorFlow was built with")
    assert finding["evidence"]["knowledge"]["row"] == {"cuda": "12.2", "linux": "535.54.03", "windows": "536.25"}
    # The GPU is known to exist (PCI bus) but nothing else of it: GPU and architecture checks say why.
    reason = "NVML is not queried under --root (it would describe this host, not the tree)"
    assert records["DRV003"]["status"] == "not-checked" and reason in records["DRV003"]["reason"]
    assert records["GPU001"]["status"] == "not-checked" and reason in records["GPU001"]["reason"]


def test_fallback_facts_are_unknown_with_the_reason_and_keep_the_numa_node():
    from tfdoctor.facts import Facts

    facts = Facts.load(g.SNAPSHOTS / "drv002-driver-too-old-without-nvml.json")
    section = facts.sections["nvml"]
    assert section["source"] == "pci" and section["driver_version"] == "470.82.01"
    (device,) = section["devices"]
    assert device["pci_bus_id"] == "00000000:3B:00.0" and device["numa_node"] == 0
    assert isinstance(device["compute_capability"], Unknown) and "NVML" in device["compute_capability"].reason
    assert facts.sections["gpu_pci"]["devices"][0]["numa_node"] == 0
    # The healthy twin (driver 550.54.15 ≥ 535.54.03) stays silent but says what it could not check.
    twin = check_facts(Facts.load(g.SNAPSHOTS / "healthy-driver-without-nvml.json"), select=g.GPU_FAMILIES)
    assert twin.codes() == [] and twin.result("DRV002").status.value == "passed"
    assert twin.result("DRV003").status.value == "not-checked"


def _probe_nvml(root, factory):
    previous = nvml.NVML_OVERRIDE
    nvml.NVML_OVERRIDE = factory
    try:
        return nvml.probe_nvml(root.machine({}, timeout=5.0))
    finally:
        nvml.NVML_OVERRIDE = previous


def test_nvml_library_missing_falls_back_to_proc_and_pci(make_root):
    root = make_root()
    g.driver(root, proc_gpus=False)
    missing = FakeNvml([FakeGpu()], init_error=NVMLError_LibraryNotFound("libnvidia-ml.so.1: cannot open"))
    facts = _probe_nvml(root, lambda: missing)
    assert facts["source"] == "pci" and facts["driver_version"] == "550.54.15"
    assert facts["nvml_error"] == "NVML library (libnvidia-ml.so.1) not found: libnvidia-ml.so.1: cannot open"
    assert [d["pci_bus_id"] for d in facts["devices"]] == ["00000000:3B:00.0"]


def test_nothing_lists_the_gpus_then_they_are_unknown_not_none(make_root):
    root = make_root()
    g.wsl2(root)  # WSL2: no /proc/driver/nvidia, no NVIDIA PCI device
    broken = FakeNvml([FakeGpu()], init_error=RuntimeError("Driver/library version mismatch"))
    facts = _probe_nvml(root, lambda: broken)
    assert isinstance(facts["devices"], Unknown)
    assert facts["devices"].reason.startswith("nvmlInit failed: Driver/library version mismatch; no GPU listed")


def test_wsl2_is_recognised_and_judged_with_the_windows_driver():
    from tfdoctor.facts import Facts

    healthy = Facts.load(g.SNAPSHOTS / "healthy-wsl2.json")
    assert healthy.sections["host"]["wsl2"] == {"detected": True,
                                                "signs": ["/dev/dxg", "/usr/lib/wsl/lib/libcuda.so.1"]}
    assert healthy.sections["host"]["nvidia_driver"] is None
    assert healthy.sections["cuda_libs"]["libraries"]["cuda"]["resolved"]["libcuda.so.1"]["via"] == "ld.so.cache"
    old = check_facts(Facts.load(g.SNAPSHOTS / "drv002-wsl2-windows-driver-too-old.json"), select=["DRV002"])
    (finding,) = old.findings()
    assert (finding.fixes[0].steps, finding.fixes[0].text) == ((), "Update the NVIDIA driver on Windows (WSL2 uses it; "
                                                                  "≥ 536.25)")
    assert finding.evidence["knowledge"]["row"]["windows"] == "536.25"
