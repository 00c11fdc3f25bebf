"""GPU — the health of the GPUs this job will use, as NVML reports it (GPU001–GPU099; GPU1xx belongs
to the framework family). Each check reads the device records of the "nvml" section."""

from __future__ import annotations

from collections.abc import Iterator

from tfdoctor.derive.gpu_inventory import Gpu
from tfdoctor.derive.gpu_inventory import visible_gpus as _visible_gpus
from tfdoctor.facts import Facts, NotChecked, Unknown
from tfdoctor.model import AdminFix, Finding, Severity
from tfdoctor.registry import check

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import Any

SLOWDOWN_REASONS = ("hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown")
OTHER_PROCESS_SHARE = 0.5


def visible_gpus(facts: Facts) -> list[Gpu]:
    """The visible GPUs, when NVML described them: /proc (the fallback) knows nothing of their health."""
    gpus = _visible_gpus(facts)
    if gpus and facts.peek("nvml.source") != "nvml":
        why = facts.peek("nvml.nvml_error") or "NVML was not queried"
        raise NotChecked(f"GPU health needs NVML ({why})")
    return gpus


def _value(gpu: Gpu, *path: str, kind: type | None = None) -> Any:
    """The value at `path` in the device record; None when absent, unknown, or (with `kind`) of another type."""
    node: Any = gpu.raw if isinstance(gpu.raw, dict) else {}
    for key in path:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    if kind is not None and not isinstance(node, kind):
        return None
    return None if isinstance(node, Unknown) else node


def _label(gpu: Gpu) -> str:
    return f"GPU {gpu.index} ({gpu.name}{', ' + gpu.pci_bus_id if gpu.pci_bus_id else ''})"


def _idle(gpu: Gpu) -> bool:
    reasons = _value(gpu, "clock_event_reasons", kind=list) or []
    return "gpu_idle" in reasons or _value(gpu, "utilization_gpu_percent") == 0


@check("GPU001", "gpu-persistence-mode-off", Severity.WARNING)
def gpu_persistence_mode_off(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds GPUs with persistence mode off (Linux).

    Why is this bad?
    Without persistence (or nvidia-persistenced) the driver tears a GPU's state down when its last
    client exits and rebuilds it for the next: every process start, and nvidia-smi, waits seconds
    per GPU, and ECC and clock settings are re-applied each time.

    Example:
    nvidia-smi -q shows "Persistence Mode: Disabled" on a training node.

    Fix:
    Run the nvidia-persistenced daemon (preferred) or `nvidia-smi -pm 1` at boot.

    Fix safety:
    Manual: needs root.
    """
    if facts.peek("host.system") not in ("Linux", None):
        return
    off = [g for g in visible_gpus(facts) if _value(g, "persistence_mode") is False]
    if off:
        yield Finding(
            f"persistence mode is off on {', '.join(_label(g) for g in off)}: each process start re-initialises "
            "the GPU (seconds)",
            evidence={"nvml.devices.persistence_mode": {g.index: False for g in off}},
            fixes=(AdminFix("Enable persistence", ("sudo systemctl enable --now nvidia-persistenced",
                                                   "sudo nvidia-smi -pm 1   # or this, without the daemon")),))


@check("GPU002", "gpu-uncorrectable-ecc-errors", Severity.ERROR)
def gpu_uncorrectable_ecc_errors(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Reads each GPU's uncorrectable (double-bit) ECC error counts: volatile (since the last driver
    load) and aggregate (lifetime).

    Why is this bad?
    An uncorrectable error corrupts data or kills the process using the GPU ("uncorrectable ECC
    error encountered"); errors since the last reset mean the board is failing now. Lifetime errors
    alone are a warning: the affected pages may have been retired since.

    Example:
    nvidia-smi -q -d ECC: "Volatile … DRAM Uncorrectable: 2".

    Fix:
    Drain the node, reset the GPU (nvidia-smi -r), run the vendor diagnostics (dcgmi diag -r 3);
    replace the board when errors recur.

    Fix safety:
    Manual: needs root and an idle GPU.
    """
    for gpu in visible_gpus(facts):
        volatile = _value(gpu, "ecc", "uncorrected_volatile") or 0
        aggregate = _value(gpu, "ecc", "uncorrected_aggregate") or 0
        if not volatile and not aggregate:
            continue
        yield Finding(
            f"{_label(gpu)} has {volatile} uncorrectable ECC error(s) since the driver loaded "
            f"({aggregate} over its lifetime)",
            evidence={"gpu": gpu.index, "ecc.uncorrected_volatile": volatile, "ecc.uncorrected_aggregate": aggregate},
            fixes=(AdminFix("Take the GPU out of service and diagnose it", (
                f"sudo nvidia-smi -r -i {gpu.index}   # reset, with no process on it",
                "dcgmi diag -r 3   # NVIDIA DCGM diagnostics")),),
            severity=Severity.ERROR if volatile else Severity.WARNING)


@check("GPU003", "gpu-memory-pages-retired-or-pending", Severity.WARNING)
def gpu_memory_pages_retired(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Reads retired pages (double-bit and repeated single-bit ECC errors), pending retirements, and
    on Ampere and later the remapped rows (pending, failed).

    Why is this bad?
    A pending retirement or row remap takes effect only after a GPU reset: until then the bad memory
    stays in use. A failed remap means the board ran out of spare rows and needs replacing. Many
    retired pages predict failure.

    Example:
    nvidia-smi -q -d ROW_REMAPPER: "Pending: Yes".

    Fix:
    Reset the GPU when it is idle (nvidia-smi -r) or reboot; replace it on a failed remap.

    Fix safety:
    Manual: needs root and an idle GPU.
    """
    for gpu in visible_gpus(facts):
        problems = []
        severity = Severity.WARNING
        if _value(gpu, "retired_pages", "pending"):
            problems.append("a page retirement is pending (needs a GPU reset)")
        if _value(gpu, "remapped_rows", "pending"):
            problems.append("a row remap is pending (needs a GPU reset)")
        if _value(gpu, "remapped_rows", "failed"):
            problems.append("a row remap failed (no spare rows left)")
            severity = Severity.ERROR
        double = _value(gpu, "retired_pages", "double_bit") or 0
        if double:
            problems.append(f"{double} page(s) retired after double-bit errors")
        if not problems:
            continue
        yield Finding(
            f"{_label(gpu)}: {'; '.join(problems)}",
            evidence={"gpu": gpu.index, "retired_pages": _value(gpu, "retired_pages"),
                      "remapped_rows": _value(gpu, "remapped_rows")},
            fixes=(AdminFix("Reset the GPU to apply pending retirements", (
                f"sudo nvidia-smi -r -i {gpu.index}   # with no process on it; or reboot",)),),
            severity=severity)


@check("GPU004", "gpu-clocks-throttled", Severity.WARNING)
def gpu_clocks_throttled(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Reads each GPU's current clock event (throttle) reasons and reports thermal slowdown, hardware
    slowdown and power-brake slowdown. Power capping under load and idle clocks are normal and are
    not reported.

    Why is this bad?
    These reasons cut the clocks to a fraction; seen while the GPU is idle they point to a cooling,
    power-supply or external power-brake problem that will slow every step of the job.

    Example:
    nvidia-smi -q -d PERFORMANCE: "HW Power Brake Slowdown: Active" on an idle GPU.

    Fix:
    Check cooling (fans, airflow, temperature), power cables and the chassis power-brake signal.

    Fix safety:
    Manual: hardware.
    """
    for gpu in visible_gpus(facts):
        reasons = [r for r in (_value(gpu, "clock_event_reasons", kind=list) or []) if r in SLOWDOWN_REASONS]
        if not reasons:
            continue
        yield Finding(
            f"{_label(gpu)} is slowed down by {', '.join(reasons)}" + (" while idle" if _idle(gpu) else ""),
            evidence={"gpu": gpu.index, "clock_event_reasons": _value(gpu, "clock_event_reasons"),
                      "utilization_gpu_percent": _value(gpu, "utilization_gpu_percent")},
            fixes=(AdminFix("Find the cause of the slowdown", (
                f"nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER -i {gpu.index}",),
                text="check fans, airflow, power cables and the chassis' power-brake signal"),))


@check("GPU005", "gpu-pcie-link-degraded", Severity.WARNING)
def gpu_pcie_link_degraded(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Compares each GPU's current PCIe link width with its maximum, and the generation too while the
    GPU is busy (an idle GPU lowers its link generation to save power, which is normal).

    Why is this bad?
    A x16 card trained at x8 or x4 (a bad riser, a dirty slot, the wrong slot) has a half or a
    quarter of the host-to-device bandwidth: input pipelines and multi-GPU all-reduce over PCIe slow
    down accordingly.

    Example:
    nvidia-smi -q: "Link Width Max: 16x, Current: 8x".

    Fix:
    Reseat the card or move it to a full-width slot; check the BIOS slot bifurcation settings.

    Fix safety:
    Manual: hardware.
    """
    for gpu in visible_gpus(facts):
        pcie = _value(gpu, "pcie", kind=dict) or {}
        width, width_max = pcie.get("width_current"), pcie.get("width_max")
        gen, gen_max = pcie.get("gen_current"), pcie.get("gen_max")
        problems = []
        if isinstance(width, int) and isinstance(width_max, int) and 0 < width < width_max:
            problems.append(f"width x{width} of x{width_max}")
        if (isinstance(gen, int) and isinstance(gen_max, int) and 0 < gen < gen_max and not _idle(gpu)):
            problems.append(f"generation {gen} of {gen_max} while busy")
        if problems:
            yield Finding(
                f"{_label(gpu)} runs its PCIe link below its maximum: {', '.join(problems)}",
                evidence={"gpu": gpu.index, "pcie": pcie},
                fixes=(AdminFix("Restore the full PCIe link", (
                    f"nvidia-smi -q -i {gpu.index} | grep -A8 'PCIe Generation'",),
                    text="reseat the card or use a full-width slot; check riser cables and BIOS bifurcation"),))


@check("GPU006", "gpu-mig-enabled-without-instances", Severity.ERROR)
def gpu_mig_enabled_without_instances(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds GPUs in MIG mode with no MIG instance created.

    Why is this bad?
    A GPU in MIG mode runs CUDA work only inside its MIG instances: with none, CUDA sees no usable
    device on it and TensorFlow runs on the CPU.

    Example:
    nvidia-smi -mig 1 was run on an A100, but no `nvidia-smi mig -cgi … -C` followed.

    Fix:
    Create instances (nvidia-smi mig -cgi <profiles> -C) or disable MIG (nvidia-smi -mig 0 and a reset).

    Fix safety:
    Manual: needs root and an idle GPU.
    """
    for gpu in visible_gpus(facts):
        mode = _value(gpu, "mig_mode", kind=dict) or {}
        if not mode.get("current"):
            continue
        instances = _value(gpu, "mig_devices")
        if instances is None or instances:
            continue
        yield Finding(
            f"{_label(gpu)} is in MIG mode with no MIG instance: CUDA cannot run work on it",
            evidence={"gpu": gpu.index, "mig_mode": mode, "mig_devices": []},
            fixes=(AdminFix("Create MIG instances or disable MIG", (
                f"sudo nvidia-smi mig -i {gpu.index} -lgip   # list the profiles",
                f"sudo nvidia-smi mig -i {gpu.index} -cgi <profile ids> -C",
                f"sudo nvidia-smi -i {gpu.index} -mig 0 && sudo nvidia-smi -r -i {gpu.index}   # or disable MIG")),))


@check("GPU007", "gpu-memory-held-by-other-process", Severity.WARNING)
def gpu_memory_held_by_other_process(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds GPUs where other processes already hold more than half of the memory before the job starts.

    Why is this bad?
    TensorFlow reserves nearly all free GPU memory at start-up: what another process holds is
    missing from the job, which fails with out-of-memory errors or falls back to smaller batches, and
    both compete for the GPU's compute time. Often it is a forgotten notebook kernel.

    Example:
    A Jupyter kernel holding 30 GiB of a 40 GiB A100.

    Fix:
    Stop the other process, or pick another GPU with CUDA_VISIBLE_DEVICES.

    Fix safety:
    Manual: the other process may belong to someone else.
    """
    for gpu in visible_gpus(facts):
        total, used = _value(gpu, "memory_total_mib"), _value(gpu, "memory_used_mib")
        processes = _value(gpu, "processes", kind=list) or []
        if not isinstance(total, int) or total <= 0 or not isinstance(used, int) or not processes:
            continue
        if used <= total * OTHER_PROCESS_SHARE:
            continue
        pids = [p.get("pid") for p in processes if isinstance(p, dict)]
        yield Finding(
            f"{_label(gpu)}: {used} of {total} MiB are already in use by process(es) {', '.join(map(str, pids))}",
            evidence={"gpu": gpu.index, "memory_used_mib": used, "memory_total_mib": total, "processes": processes},
            fixes=(AdminFix("Free the GPU or use another one", (
                f"nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv -i {gpu.index}",),
                text="stop that process, or set CUDA_VISIBLE_DEVICES to an idle GPU"),))
