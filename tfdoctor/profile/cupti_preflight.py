"""Before `tfdoctor profile` runs a workload on a GPU: does CUPTI let it trace GPU kernels here? The profiler
the user asked for is tfdoctor's own, so every CUPTI finding is an error (profile_blockers).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from tfdoctor.facts import Facts

if TYPE_CHECKING:
    from tfdoctor.model import Finding

PREFLIGHT_SECTIONS = ("env", "host", "nvml", "gpu_pci", "cuda_libs", "privileges", "python")


def profile_preflight(environ: Mapping[str, str], device: str = "auto", python: str | None = None,
                      root: str = "/") -> list[str]:
    """One line per blocker, for `tfdoctor profile` to print before it runs on a GPU; [] for --device cpu
    or a machine without an NVIDIA GPU or driver (nothing is gathered then)."""
    if device == "cpu":
        return []
    from pathlib import Path

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


def profile_blockers(facts: Facts) -> list[Finding]:
    """What keeps `tfdoctor profile` from tracing GPU kernels on this machine: the CUPTI checks with the
    intent to profile set (their findings are then errors). Pure: profile_preflight gathers the facts.
    Here rather than beside the checks: running checks is the engine's work, and checks stay below it."""
    from tfdoctor.derive.profiling_intent import PROFILE_INTENT
    from tfdoctor.engine import run_checks
    from tfdoctor.registry import load_registry

    intent = Facts(facts.sections, {**facts.meta, "intent": PROFILE_INTENT})
    checks = [c for c in load_registry().checks if c.code.startswith("CUPTI")]
    return list(run_checks(checks, intent).findings())
