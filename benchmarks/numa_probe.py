"""What the NUMA probe adds to `tfdoctor check`: its own time next to the cpu probe's (baseline), on
this machine and on a large fake host (8 nodes, 256 CPUs, 400 PCI functions, 8 GPUs), plus the whole
fact gathering with and without it. Prints medians of repeated runs; machines are noisy, read ratios.

    python benchmarks/numa_probe.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from _measure import median_ms

from tfdoctor.engine import gather_facts
from tfdoctor.facts.machine import Machine
from tfdoctor.facts.probes.cpu import probe_cpu
from tfdoctor.facts.probes.numa import probe_numa
from tfdoctor.registry import load_registry
from tfdoctor.testing import FakeRoot


def large_host(path: Path) -> FakeRoot:
    root = FakeRoot(path).cpus(sockets=8, cores_per_socket=16, threads_per_core=2)
    cpulists = [f"{n * 16}-{n * 16 + 15},{128 + n * 16}-{128 + n * 16 + 15}" for n in range(8)]
    root.numa(cpulists).tool("numactl").tool("taskset").membind("permitted")
    for i in range(400):
        bus = f"0000:{i // 8:02x}:{i % 8:02x}.0"
        if i % 50 == 0:
            root.pci_gpu(bus, i // 50, cpulists[i // 50])
        else:
            root.pci_gpu(bus, i % 8, "", vendor="0x8086", pci_class="0x060400")
    return root


def main() -> None:
    live = Machine()
    print(f"live machine: numa probe {median_ms(lambda: probe_numa(live)):.2f} ms, "
          f"cpu probe (baseline) {median_ms(lambda: probe_cpu(live)):.2f} ms")
    with tempfile.TemporaryDirectory() as folder:
        fake = large_host(Path(folder)).machine({"PATH": "/usr/bin"})
        print(f"large fake host: numa probe {median_ms(lambda: probe_numa(fake)):.2f} ms, "
              f"cpu probe (baseline) {median_ms(lambda: probe_cpu(fake)):.2f} ms")
    probes = load_registry().probes
    without = [p for p in probes if p.section != "numa"]
    print(f"gather_facts, live: all probes {median_ms(lambda: gather_facts(probes, live), 15):.1f} ms, "
          f"without numa (baseline) {median_ms(lambda: gather_facts(without, live), 15):.1f} ms")


if __name__ == "__main__":
    main()
