"""What the framework families add to `tfdoctor check`: the network/shm/iommu probes and the LAY, MP,
XLA1xx, GPU1xx and DIST checks, each against a baseline measured in the same run.

    python benchmarks/framework_checks.py [repeats]

Prints medians in milliseconds. Baselines: gathering every other probe's facts; running the THR checks.
"""

from __future__ import annotations

import sys

from _measure import median_ms

from tfdoctor.engine import gather_facts, run_checks
from tfdoctor.facts.machine import Machine
from tfdoctor.registry import load_registry, select_checks

OURS = ("network", "shm", "iommu")
FAMILIES = ("LAY", "MP", "XLA1", "GPU1", "DIST")


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    registry = load_registry()
    machine = Machine()
    ours = [p for p in registry.probes if p.section in OURS]
    others = [p for p in registry.probes if p.section not in OURS]
    facts = gather_facts(registry.probes, machine)
    framework_checks = select_checks(registry.checks, FAMILIES)
    thread_checks = select_checks(registry.checks, ("THR",))

    probes_ms = median_ms(lambda: gather_facts(ours, machine), repeats, warm=False)
    baseline_probes_ms = median_ms(lambda: gather_facts(others, machine), repeats, warm=False)
    checks_ms = median_ms(lambda: run_checks(framework_checks, facts, []), repeats, warm=False)
    baseline_checks_ms = median_ms(lambda: run_checks(thread_checks, facts, []), repeats, warm=False)
    print(f"probes network+shm+iommu: {probes_ms:.2f} ms   baseline (all {len(others)} other probes): "
          f"{baseline_probes_ms:.2f} ms   ratio {probes_ms / baseline_probes_ms:.2f}")
    print(f"{len(framework_checks)} framework checks: {checks_ms:.3f} ms   baseline ({len(thread_checks)} THR checks): "
          f"{baseline_checks_ms:.3f} ms   per check {checks_ms / len(framework_checks):.3f} vs "
          f"{baseline_checks_ms / len(thread_checks):.3f} ms")


if __name__ == "__main__":
    main()
