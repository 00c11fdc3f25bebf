"""Fake NUMA hosts shared by the NUMA tests: topology trees for --root plus the NVML section that the
nvml probe would have recorded (built directly, as the GPU probe is not under test here)."""

from __future__ import annotations

from collections.abc import Mapping

from tfdoctor.facts import Facts
from tfdoctor.testing import FakeRoot

# 2 sockets × 8 cores × 2 threads, Linux numbering: node 0 = socket 0, node 1 = socket 1.
NODE0, NODE1 = "0-7,16-23", "8-15,24-31"
GPU_BUS_IDS = ("0000:1a:00.0", "0000:3b:00.0", "0000:88:00.0", "0000:b1:00.0")  # GPUs 0,1 node 0; 2,3 node 1


def nvml_bus_id(sysfs: str) -> str:
    """sysfs "0000:3b:00.0" -> NVML "00000000:3B:00.0"."""
    domain, rest = sysfs.split(":", 1)
    return f"{int(domain, 16):08X}:{rest.upper()}"


def nvml_section(bus_ids: tuple[str, ...]) -> dict:
    return {
        "driver_version": "550.54.15",
        "cuda_driver_version": "12.4",
        "devices": [{"index": i, "uuid": f"GPU-{i:08d}-aaaa-bbbb-cccc-000000000000", "name": "NVIDIA A100-SXM4-40GB",
                     "pci_bus_id": nvml_bus_id(b), "compute_capability": "8.0", "memory_total_mib": 40960}
                    for i, b in enumerate(bus_ids)],
    }


def two_socket_host(root: FakeRoot, allowed: str | None = None, membind: str = "permitted",
                    tools: tuple[str, ...] = ("numactl", "taskset")) -> FakeRoot:
    from tfdoctor.facts.parse import parse_cpulist

    root.cpus(sockets=2, cores_per_socket=8, threads_per_core=2,
              allowed=parse_cpulist(allowed) if allowed else None).numa([NODE0, NODE1])
    for bus_id, node, cpus in zip(GPU_BUS_IDS, (0, 0, 1, 1), (NODE0, NODE0, NODE1, NODE1), strict=True):
        root.pci_gpu(bus_id, node, cpus)
    root.pci_gpu("0000:02:00.0", 0, NODE0, vendor="0x8086", pci_class="0x020000")  # a NIC: ignored
    for tool in tools:
        root.tool(tool)
    if membind:
        root.membind(membind)
    return root


def probe_with_gpus(root: FakeRoot, env: Mapping[str, str], bus_ids: tuple[str, ...] = GPU_BUS_IDS) -> Facts:
    from conftest import probe_root

    facts = probe_root(root, {"PATH": "/usr/local/bin:/usr/bin:/bin", **env})
    facts.sections["nvml"] = nvml_section(bus_ids)
    return facts
