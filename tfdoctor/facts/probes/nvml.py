"""NVIDIA driver and GPUs through NVML (nvidia-ml-py's `pynvml`), with /proc and /sys as the fallback.

pynvml is imported only when the host shows an NVIDIA driver (/proc/driver/nvidia/version or a
/dev/nvidia* node): a host without a GPU never pays for it. Every NVML call runs in one worker thread
that the probe waits for at most `nvml_timeout(machine)` seconds: a wedged driver leaves an Unknown
saying which call hung, and the thread is reported abandoned so the CLI leaves with os._exit.
A call that raises makes its own field Unknown; "Not Supported" (ECC on a GeForce) is None.

Sections: "nvml" (the contract in tfdoctor/derive/gpu_inventory.py, fields in docs/facts-gpu.md) and
"gpu_pci" (NVIDIA PCI functions from /sys, present with or without a driver).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from tfdoctor.facts import Unknown
from tfdoctor.facts.machine import Machine
from tfdoctor.registry import probe

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import Any

# Tests (and embedders) put a callable returning a pynvml-like object here; it is used even under
# --root. None: import pynvml, on the live machine only, when a driver is present.
NVML_OVERRIDE: Callable[[], Any] | None = None

# NVML constants, spelled out so that a fake NVML needs only functions.
MEMORY_ERROR_UNCORRECTED = 1
VOLATILE_ECC, AGGREGATE_ECC = 0, 1
RETIRED_SINGLE_BIT, RETIRED_DOUBLE_BIT = 0, 1
CLOCK_EVENT_REASONS = {
    0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
    0x10: "sync_boost", 0x20: "sw_thermal_slowdown", 0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown", 0x100: "display_clock_setting",
}
NVIDIA_VENDOR = "0x10de"


def nvml_timeout(machine: Machine) -> float:
    """Leave the engine time to record the answer before its own deadline for this probe."""
    return max(0.2, min(3.0, machine.timeout * 0.6))


def decode_reasons(mask: int) -> list[str]:
    return [name for bit, name in sorted(CLOCK_EVENT_REASONS.items()) if mask & bit]


def _text(value: Any) -> str:
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else str(value)


def _cuda_version(value: int) -> str:
    return f"{value // 1000}.{(value % 1000) // 10}"


WSL_SIGNS = ("/dev/dxg", "/usr/lib/wsl/lib/libcuda.so.1")


def wsl2_signs(machine: Machine) -> list[str]:
    """WSL2 exposes the Windows driver through /dev/dxg and /usr/lib/wsl/lib (libcuda, libnvidia-ml):
    no /proc/driver/nvidia, no /dev/nvidia*, no NVIDIA device on its PCI bus."""
    return [path for path in WSL_SIGNS if machine.exists(path)]


def nvidia_driver_present(machine: Machine) -> bool:
    if machine.exists("/proc/driver/nvidia/version") or "/dev/dxg" in wsl2_signs(machine):
        return True
    listing = machine.listdir("/dev")
    return isinstance(listing, list) and any(name.startswith("nvidia") for name in listing)


class _Session:
    """Calls NVML, remembering the call in flight (the one to name when it hangs)."""

    def __init__(self, nvml: Any) -> None:
        self.nvml = nvml
        self.current = "nvmlInit"

    def call(self, name: str, *args: Any) -> Any:
        self.current = name
        return getattr(self.nvml, name)(*args)

    def field(self, name: str, *args: Any, convert: Callable[[Any], Any] = lambda v: v) -> Any:
        try:
            return convert(self.call(name, *args))
        except Exception as exc:
            if "not supported" in str(exc).lower() or type(exc).__name__.endswith("NotSupported"):
                return None
            return Unknown(f"{name} failed: {_text(exc) or type(exc).__name__}")


def _processes(raw: Any) -> list[dict[str, Any]]:
    result = []
    for proc in raw or []:
        used = getattr(proc, "usedGpuMemory", None)
        result.append({"pid": int(getattr(proc, "pid", 0)),
                       "used_mib": int(used) // (1024 * 1024) if isinstance(used, int) else None})
    return result


def _mig_devices(session: _Session, handle: Any) -> list[str] | Unknown | None:
    count = session.field("nvmlDeviceGetMaxMigDeviceCount", handle)
    if not isinstance(count, int):
        return count
    uuids = []
    for slot in range(count):
        try:
            child = session.call("nvmlDeviceGetMigDeviceHandleByIndex", handle, slot)
        except Exception:
            continue  # an empty slot answers NVML_ERROR_NOT_FOUND
        uuid = session.field("nvmlDeviceGetUUID", child, convert=_text)
        if isinstance(uuid, str):
            uuids.append(uuid)
    return uuids


NVLINK_MAX_LINKS = 18  # NVML_NVLINK_MAX_LINKS (R520 on; 12 before, whose GPUs answer past their last link)
NVLINK_REMOTE_SWITCH = 2  # nvmlDeviceGetNvLinkRemoteDeviceType: 0 GPU, 1 IBM NPU, 2 NVSwitch


def _nvlink(session: _Session, handle: Any) -> dict[str, Any] | Unknown | None:
    """The GPU's active NVLinks and what each reaches: {active_links, peers (the PCI bus ids of GPUs at the
    other end), switch (a link reaches an NVSwitch)}; None when the GPU has no NVLink ("Not Supported")."""
    first = session.field("nvmlDeviceGetNvLinkState", handle, 0)
    if first is None or isinstance(first, Unknown):
        return first
    active, peers, switch = 0, [], False
    for link in range(NVLINK_MAX_LINKS):
        try:
            state = first if link == 0 else session.call("nvmlDeviceGetNvLinkState", handle, link)
        except Exception:
            break  # past the GPU's last link NVML answers "Invalid Argument"
        if not state:
            continue
        active += 1
        kind = session.field("nvmlDeviceGetNvLinkRemoteDeviceType", handle, link)
        if kind == NVLINK_REMOTE_SWITCH:
            switch = True
            continue
        remote = session.field("nvmlDeviceGetNvLinkRemotePciInfo", handle, link, convert=lambda p: _text(p.busId))
        if isinstance(remote, str) and remote not in peers:
            peers.append(remote)
    return {"active_links": active, "peers": peers, "switch": switch}


def _device(session: _Session, index: int) -> dict[str, Any]:
    handle = session.call("nvmlDeviceGetHandleByIndex", index)
    f = session.field
    memory = f("nvmlDeviceGetMemoryInfo", handle)
    ecc = f("nvmlDeviceGetEccMode", handle)
    mig = f("nvmlDeviceGetMigMode", handle)
    remapped = f("nvmlDeviceGetRemappedRows", handle)
    if hasattr(session.nvml, "nvmlDeviceGetCurrentClocksEventReasons"):
        reasons = f("nvmlDeviceGetCurrentClocksEventReasons", handle, convert=decode_reasons)
    else:
        reasons = f("nvmlDeviceGetCurrentClocksThrottleReasons", handle, convert=decode_reasons)
    utilization = f("nvmlDeviceGetUtilizationRates", handle, convert=lambda u: int(u.gpu))
    device: dict[str, Any] = {
        "index": index,
        "uuid": f("nvmlDeviceGetUUID", handle, convert=_text),
        "name": f("nvmlDeviceGetName", handle, convert=_text),
        "pci_bus_id": f("nvmlDeviceGetPciInfo", handle, convert=lambda p: _text(p.busId)),
        "compute_capability": f("nvmlDeviceGetCudaComputeCapability", handle,
                                convert=lambda cc: f"{int(cc[0])}.{int(cc[1])}"),
        "memory_total_mib": memory.total // (1024 * 1024) if not isinstance(memory, Unknown) and memory
        else memory,
        "memory_used_mib": memory.used // (1024 * 1024) if not isinstance(memory, Unknown) and memory
        else memory,
        "utilization_gpu_percent": utilization,
        "processes": f("nvmlDeviceGetComputeRunningProcesses", handle, convert=_processes),
        "persistence_mode": f("nvmlDeviceGetPersistenceMode", handle, convert=lambda v: bool(v)),
        "ecc": {
            "enabled": ecc if not isinstance(ecc, (list, tuple)) else bool(ecc[0]),
            "uncorrected_volatile": f("nvmlDeviceGetTotalEccErrors", handle, MEMORY_ERROR_UNCORRECTED,
                                      VOLATILE_ECC, convert=int),
            "uncorrected_aggregate": f("nvmlDeviceGetTotalEccErrors", handle, MEMORY_ERROR_UNCORRECTED,
                                       AGGREGATE_ECC, convert=int),
        },
        "retired_pages": {
            "single_bit": f("nvmlDeviceGetRetiredPages", handle, RETIRED_SINGLE_BIT, convert=len),
            "double_bit": f("nvmlDeviceGetRetiredPages", handle, RETIRED_DOUBLE_BIT, convert=len),
            "pending": f("nvmlDeviceGetRetiredPagesPendingStatus", handle, convert=lambda v: bool(v)),
        },
        "remapped_rows": remapped if not isinstance(remapped, (list, tuple)) else {
            "correctable": int(remapped[0]), "uncorrectable": int(remapped[1]),
            "pending": bool(remapped[2]), "failed": bool(remapped[3])},
        "clock_event_reasons": reasons,
        "pcie": {
            "gen_current": f("nvmlDeviceGetCurrPcieLinkGeneration", handle, convert=int),
            "gen_max": f("nvmlDeviceGetMaxPcieLinkGeneration", handle, convert=int),
            "width_current": f("nvmlDeviceGetCurrPcieLinkWidth", handle, convert=int),
            "width_max": f("nvmlDeviceGetMaxPcieLinkWidth", handle, convert=int),
        },
        "mig_mode": mig if not isinstance(mig, (list, tuple)) else {"current": bool(mig[0]),
                                                                    "pending": bool(mig[1])},
    }
    device["mig_devices"] = (_mig_devices(session, handle)
                             if isinstance(device["mig_mode"], dict) and device["mig_mode"]["current"] else [])
    device["nvlink"] = _nvlink(session, handle)
    return device


def query_nvml(nvml: Any, session: _Session | None = None) -> dict[str, Any] | Unknown:
    """Everything NVML tells about the driver and each device. Runs in the worker thread."""
    session = session or _Session(nvml)
    try:
        session.call("nvmlInit")
    except Exception as exc:
        name = type(exc).__name__
        if "LibraryNotFound" in name or "library not found" in str(exc).lower():
            return Unknown(f"NVML library (libnvidia-ml.so.1) not found: {_text(exc)}")
        return Unknown(f"nvmlInit failed: {_text(exc) or name}")
    try:
        facts: dict[str, Any] = {
            "source": "nvml",
            "driver_version": session.field("nvmlSystemGetDriverVersion", convert=_text),
            "cuda_driver_version": session.field("nvmlSystemGetCudaDriverVersion", convert=_cuda_version),
        }
        try:
            count = session.call("nvmlDeviceGetCount")
        except Exception as exc:
            facts["devices"] = Unknown(f"nvmlDeviceGetCount failed: {_text(exc)}")
            return facts
        devices: list[Any] = []
        for index in range(int(count)):
            try:
                devices.append(_device(session, index))
            except Exception as exc:  # the handle itself failed (GPU fallen off the bus)
                devices.append({"index": index, "error": f"{session.current} failed: {_text(exc)}"})
        facts["devices"] = devices
        return facts
    finally:
        import contextlib  # here: the pre-job hook on a host without NVIDIA's driver never imports it

        with contextlib.suppress(Exception):
            session.call("nvmlShutdown")


def _load_nvml() -> Any:
    import pynvml  # nvidia-ml-py; ~40 ms, paid only on hosts with an NVIDIA driver

    return pynvml


def _run_with_timeout(nvml_factory: Callable[[], Any], timeout: float) -> dict[str, Any] | Unknown:
    box: dict[str, Any] = {}
    session_box: dict[str, _Session] = {}

    def work() -> None:
        try:
            nvml = nvml_factory()
        except ImportError as exc:
            box["result"] = Unknown(f"nvidia-ml-py (pynvml) is not installed: {exc}")
            return
        except Exception as exc:
            box["result"] = Unknown(f"NVML could not be loaded: {type(exc).__name__}: {exc}")
            return
        session_box["s"] = _Session(nvml)
        try:
            box["result"] = query_nvml(nvml, session_box["s"])
        except Exception as exc:
            box["result"] = Unknown(f"NVML failed: {type(exc).__name__}: {exc}")

    thread = threading.Thread(target=work, name="nvml", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        from tfdoctor.facts.abandoned import note_abandoned

        note_abandoned(thread)
        call = session_box["s"].current if "s" in session_box else "loading NVML"
        return Unknown(f"NVML did not answer within {timeout:g} s (hung in {call})")
    return box["result"]


def procfs_driver(machine: Machine) -> dict[str, Any]:
    """The driver version from /proc/driver/nvidia/version, devices from /proc/driver/nvidia/gpus."""
    import re

    text = machine.read_text("/proc/driver/nvidia/version")
    version: Any = Unknown("no /proc/driver/nvidia/version")
    if isinstance(text, str):
        match = re.search(r"Kernel Module(?: for [A-Za-z0-9_]+)?\s+([0-9]+(?:\.[0-9]+)+)", text)
        version = match.group(1) if match else Unknown("driver version not found in /proc/driver/nvidia/version")
    devices = []
    listing = machine.listdir("/proc/driver/nvidia/gpus")
    for position, bus in enumerate(listing if isinstance(listing, list) else []):
        info = machine.read_text(f"/proc/driver/nvidia/gpus/{bus}/information")
        fields = {}
        if isinstance(info, str):
            for line in info.splitlines():
                key, sep, value = line.partition(":")
                if sep:
                    fields[key.strip()] = value.strip()
        minor = fields.get("Device Minor", "")
        devices.append({
            "index": int(minor) if minor.isdigit() else position,
            "name": fields.get("Model", ""),
            "uuid": fields.get("GPU UUID", ""),
            "pci_bus_id": _full_bus_id(fields.get("Bus Location", bus)),
            "compute_capability": Unknown("not in /proc (NVML unavailable)"),
        })
    return {"source": "procfs", "driver_version": version,
            "cuda_driver_version": Unknown("only NVML reports the driver's CUDA version"), "devices": devices}


def fallback_inventory(machine: Machine, reason: str) -> dict[str, Any]:
    """What the machine shows when NVML cannot answer: the driver from /proc, the GPUs from
    /proc/driver/nvidia/gpus, else from the PCI bus (vendor 0x10de, display/3D class) with their NUMA
    node; and when neither lists one, GPUs *unknown* (never "none"): NVML's failure says nothing about
    how many GPUs there are."""
    facts = procfs_driver(machine)
    facts["nvml_error"] = reason
    if facts["devices"]:
        return facts
    pci = pci_gpus(machine)
    if isinstance(pci, list) and pci:
        facts["source"] = "pci"
        facts["devices"] = [{
            "index": position, "name": Unknown(f"NVML unavailable: {reason}"),
            "uuid": Unknown(f"NVML unavailable: {reason}"), "pci_bus_id": _full_bus_id(device["address"]),
            "compute_capability": Unknown(f"NVML unavailable: {reason}"), "numa_node": device["numa_node"],
        } for position, device in enumerate(pci)]
    else:
        facts["devices"] = Unknown(f"{reason}; no GPU listed in /proc/driver/nvidia/gpus or on the PCI bus")
    return facts


def _full_bus_id(text: str) -> str:
    """/proc writes "0000:3b:00.0"; NVML writes "00000000:3B:00.0". Normalise to NVML's form."""
    if text.count(":") == 2:
        domain, _, rest = text.partition(":")
        try:
            return f"{int(domain, 16):08X}:{rest.upper()}"
        except ValueError:
            pass
    return text.upper()


@probe("nvml", timeout=5.0)
def probe_nvml(machine: Machine) -> dict[str, Any] | Unknown:
    driver = nvidia_driver_present(machine)
    if NVML_OVERRIDE is None and not driver:
        return Unknown("no NVIDIA driver (no /proc/driver/nvidia/version, no /dev/nvidia*, no WSL2 /dev/dxg)")
    if NVML_OVERRIDE is None and not machine.is_live:
        return fallback_inventory(machine, "NVML is not queried under --root (it would describe this host, "
                                           "not the tree)")
    result = _run_with_timeout(NVML_OVERRIDE or _load_nvml, nvml_timeout(machine))
    if isinstance(result, Unknown) and driver:
        return fallback_inventory(machine, result.reason)  # the driver is there: GPUs unknown, not none
    return result


@probe("gpu_pci")
def probe_gpu_pci(machine: Machine) -> dict[str, Any] | Unknown:
    """NVIDIA display/3D controllers on the PCI bus: tells "no driver" from "no GPU"."""
    devices = pci_gpus(machine)
    return devices if isinstance(devices, Unknown) else {"devices": devices}


def pci_gpus(machine: Machine) -> list[dict[str, Any]] | Unknown:
    listing = machine.listdir("/sys/bus/pci/devices")
    if isinstance(listing, Unknown):
        return listing
    devices = []
    for address in listing:
        vendor = machine.read_text(f"/sys/bus/pci/devices/{address}/vendor")
        if not isinstance(vendor, str) or vendor.strip().lower() != NVIDIA_VENDOR:
            continue
        klass = machine.read_text(f"/sys/bus/pci/devices/{address}/class")
        klass_text = klass.strip().lower() if isinstance(klass, str) else ""
        if not klass_text.startswith(("0x0300", "0x0302")):
            continue  # audio and USB functions of a graphics card are not GPUs
        device = machine.read_text(f"/sys/bus/pci/devices/{address}/device")
        numa = machine.read_text(f"/sys/bus/pci/devices/{address}/numa_node")
        node: Any = Unknown(f"/sys/bus/pci/devices/{address}/numa_node not readable")
        if isinstance(numa, str) and numa.strip().lstrip("-").isdigit():
            node = int(numa.strip())  # -1: the platform does not say (one node, or firmware silent)
        devices.append({"address": address, "class": klass_text,
                        "device_id": device.strip() if isinstance(device, str) else None,
                        "driver_bound": machine.exists(f"/sys/bus/pci/devices/{address}/driver"),
                        "numa_node": node})
    return devices
