"""Before `tfdoctor profile` runs a workload on a GPU: does CUPTI let it trace GPU kernels here? The profiler
the user asked for is tfdoctor's own, so every CUPTI finding is an error (tfdoctor.checks.cupti.profile_blockers).
"""

from __future__ import annotations

from collections.abc import Mapping

PREFLIGHT_SECTIONS = ("env", "host", "nvml", "gpu_pci", "cuda_libs", "privileges", "python")


def profile_preflight(environ: Mapping[str, str], device: str = "auto", python: str | None = None,
                      root: str = "/") -> list[str]:
    """One line per blocker, for `tfdoctor profile` to print before it runs on a GPU; [] for --device cpu
    or a machine without an NVIDIA GPU or driver (nothing is gathered then)."""
    if device == "cpu":
        return []
    from pathlib import Path

    from tfdoctor.checks.cupti import profile_blockers
    from tfdoctor.engine import gather_facts
    from tfdoctor.facts.machine import Machine
    from tfdoctor.facts.probes.nvidia_presence import nvidia_present
    from tfdoctor.registry import load_registry

    machine = Machine(root=Path(root), environ=dict(environ), python=python)
    if not nvidia_present(machine):
        return []
    probes = [p for p in load_registry().probes if p.section in PREFLIGHT_SECTIONS]
    lines = []
    for finding in profile_blockers(gather_facts(probes, machine)):
        fix = f" — {finding.fixes[0].title}" if finding.fixes else ""
        lines.append(f"tfdoctor: {finding.code} {finding.message}{fix}")
    return lines
