"""Fake machines for tests — tfdoctor's own and third-party checks' alike.

`FakeRoot` writes a machine as a directory tree to pass as `--root` / `Machine(root=...)`;
`facts_from` builds Facts from plain sections without probing anything.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tfdoctor.facts import Facts, from_jsonable
from tfdoctor.facts.machine import Machine
from tfdoctor.facts.parse import format_cpulist

# A real CPU's /proc/cpuinfo flags (a Haswell Xeon, E5-2680 v3): AVX2 and FMA with the AVX and SSE levels every
# CPU that has them lists too, no AVX-512, no bfloat16 units. A fake machine's CPU is one that exists.
HASWELL_FLAGS = ("fpu", "sse", "sse2", "ssse3", "sse4_1", "sse4_2", "popcnt", "avx", "f16c", "fma", "avx2", "bmi1",
                 "bmi2")


class FakeRoot:
    """A fake machine under `path`. Every helper returns self, so a root reads as one expression."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.write("/proc/self/cgroup", "0::/\n")

    def write(self, absolute: str, text: str | bytes, mode: int | None = None) -> FakeRoot:
        target = self.path / absolute.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            target.write_bytes(text)
        else:
            target.write_text(text)
        if mode is not None:
            target.chmod(mode)
        return self

    def symlink(self, absolute: str, points_to: str) -> FakeRoot:
        target = self.path / absolute.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(points_to, target)
        return self

    def cpus(self, sockets: int = 1, cores_per_socket: int = 2, threads_per_core: int = 1,
             flags: Iterable[str] = HASWELL_FLAGS,
             model: str = "Fake CPU", vendor: str = "GenuineIntel", allowed: Iterable[int] | None = None,
             governor: str | None = None) -> FakeRoot:
        """Linux numbering: all first threads of every core come first, then their siblings."""
        total = sockets * cores_per_socket * threads_per_core
        entries = []
        for cpu in range(total):
            _thread, rest = divmod(cpu, sockets * cores_per_socket)
            socket, core = divmod(rest, cores_per_socket)
            base = f"/sys/devices/system/cpu/cpu{cpu}"
            self.write(f"{base}/topology/physical_package_id", f"{socket}\n")
            self.write(f"{base}/topology/core_id", f"{core}\n")
            if governor:
                self.write(f"{base}/cpufreq/scaling_governor", f"{governor}\n")
            entries.append(
                f"processor\t: {cpu}\nvendor_id\t: {vendor}\nmodel name\t: {model}\n"
                f"physical id\t: {socket}\ncore id\t\t: {core}\nflags\t\t: {' '.join(flags)}\n"
            )
        self.write("/proc/cpuinfo", "\n".join(entries) + "\n")
        self.write("/sys/devices/system/cpu/online", f"{format_cpulist(range(total))}\n")
        self.write("/proc/sys/kernel/arch", "x86_64\n")
        allowed_list = format_cpulist(list(allowed) if allowed is not None else list(range(total)))
        self.write("/proc/self/status", f"Name:\tpython\nCpus_allowed_list:\t{allowed_list}\nMems_allowed_list:\t0\n")
        return self

    def cgroup_v2(self, cpu_max: str = "max 100000", path: str = "/", cpuset: str | None = None) -> FakeRoot:
        self.write("/proc/self/cgroup", f"0::{path}\n")
        base = "/sys/fs/cgroup" + ("" if path == "/" else path)
        self.write(f"{base}/cpu.max", cpu_max + "\n")
        if cpuset is not None:
            self.write(f"{base}/cpuset.cpus.effective", cpuset + "\n")
        return self

    def cgroup_v1(self, quota_us: int = -1, period_us: int = 100000, path: str = "/",
                  cpuset: str | None = None) -> FakeRoot:
        self.write("/proc/self/cgroup", f"4:cpu,cpuacct:{path}\n3:cpuset:{path}\n0::/\n")
        base = "/sys/fs/cgroup/cpu,cpuacct" + ("" if path == "/" else path)
        self.write(f"{base}/cpu.cfs_quota_us", f"{quota_us}\n")
        self.write(f"{base}/cpu.cfs_period_us", f"{period_us}\n")
        if cpuset is not None:
            self.write("/sys/fs/cgroup/cpuset" + ("" if path == "/" else path) + "/cpuset.cpus", cpuset + "\n")
        return self

    def numa(self, cpulists: Sequence[str], mem_kib: int = 64 * 1024 * 1024,
             distances: Sequence[Sequence[int]] | None = None) -> FakeRoot:
        """NUMA nodes 0..n-1 with these CPU lists ("0-7,16-23"); SLIT distances default 10 / 21.
        Also allows every node's memory in /proc/self/status (write after `.cpus()`)."""
        count = len(cpulists)
        base = "/sys/devices/system/node"
        self.write(f"{base}/online", f"{format_cpulist(range(count))}\n")
        self.write(f"{base}/possible", f"{format_cpulist(range(count))}\n")
        for node, cpulist in enumerate(cpulists):
            row = distances[node] if distances else [10 if other == node else 21 for other in range(count)]
            self.write(f"{base}/node{node}/cpulist", f"{cpulist}\n")
            self.write(f"{base}/node{node}/distance", " ".join(map(str, row)) + "\n")
            self.write(f"{base}/node{node}/meminfo", f"Node {node} MemTotal:       {mem_kib} kB\n"
                                                    f"Node {node} MemFree:        {mem_kib // 2} kB\n")
        status = self.path / "proc/self/status"
        if status.exists():
            lines = [line for line in status.read_text().splitlines() if not line.startswith("Mems_allowed_list")]
            lines.append(f"Mems_allowed_list:\t{format_cpulist(range(count))}")
            status.write_text("\n".join(lines) + "\n")
        return self

    def pci_gpu(self, bus_id: str, numa_node: int, local_cpulist: str = "",
                vendor: str = "0x10de", pci_class: str = "0x030200") -> FakeRoot:
        """A PCI function under /sys/bus/pci/devices (an NVIDIA 3D controller unless told otherwise)."""
        base = f"/sys/bus/pci/devices/{bus_id}"
        self.write(f"{base}/vendor", f"{vendor}\n")
        self.write(f"{base}/class", f"{pci_class}\n")
        self.write(f"{base}/numa_node", f"{numa_node}\n")
        self.write(f"{base}/local_cpulist", f"{local_cpulist}\n")
        return self

    def tool(self, name: str, folder: str = "/usr/bin") -> FakeRoot:
        """An executable named `name` (its presence is all a probe looks at)."""
        return self.write(f"{folder}/{name}", "#!/bin/sh\nexit 0\n", mode=0o755)

    def membind(self, answer: str) -> FakeRoot:
        """What the live `numactl --membind=N true` test would have said: "permitted" or "refused: <why>"."""
        from tfdoctor.facts.probes.numa import MEMBIND_FACT_FILE

        return self.write(MEMBIND_FACT_FILE, answer + "\n")

    def machine(self, env: Mapping[str, str] | None = None, **kwargs: Any) -> Machine:
        return Machine(root=self.path, environ=dict(env or {}), **kwargs)


def facts_from(sections: Mapping[str, Any], env: Mapping[str, str] | None = None) -> Facts:
    """Facts from plain sections (JSON form: {"$unknown": reason} marks an unknown)."""
    data = dict(sections)
    if env is not None:
        data["env"] = {"variables": dict(env)}
    return Facts(from_jsonable(data), {"hostname": "test"})
