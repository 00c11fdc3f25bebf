"""Fake machines for tests — tfdoctor's own and third-party checks' alike.

`FakeRoot` writes a machine as a directory tree to pass as `--root` / `Machine(root=...)`;
`facts_from` builds Facts from plain sections without probing anything.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from tfdoctor.facts import Facts, from_jsonable
from tfdoctor.facts.machine import Machine
from tfdoctor.facts.parse import format_cpulist


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
             flags: Iterable[str] = ("fpu", "sse", "sse2", "avx", "avx2", "fma"),
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

    def machine(self, env: Mapping[str, str] | None = None, **kwargs: Any) -> Machine:
        return Machine(root=self.path, environ=dict(env or {}), **kwargs)


def facts_from(sections: Mapping[str, Any], env: Mapping[str, str] | None = None) -> Facts:
    """Facts from plain sections (JSON form: {"$unknown": reason} marks an unknown)."""
    data = dict(sections)
    if env is not None:
        data["env"] = {"variables": dict(env)}
    return Facts(from_jsonable(data), {"hostname": "test"})
