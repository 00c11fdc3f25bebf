"""cgroup CPU limits, v1 and v2: the quota a container or job step really has.

The effective quota is the smallest one on the path from the process's cgroup up to the root, since
a parent's limit binds every child.
"""

from __future__ import annotations

import posixpath

from tfdoctor.facts import Unknown
from tfdoctor.facts.machine import Machine
from tfdoctor.facts.parse import parse_cgroup_membership, parse_cpu_max, parse_cpulist
from tfdoctor.registry import probe

CGROUP_ROOT = "/sys/fs/cgroup"


def _ancestors(path: str) -> list[str]:
    """'/a/b' -> ['/a/b', '/a', '/']; the cgroup namespace root appears as '/'."""
    path = posixpath.normpath(path or "/")
    chain = [path]
    while path != "/":
        path = posixpath.dirname(path)
        chain.append(path)
    return chain


def _join(base: str, cgroup_path: str) -> str:
    return posixpath.join(base, cgroup_path.lstrip("/")).rstrip("/") or base


def _v2(machine: Machine, path: str) -> dict[str, object]:
    limits = []
    for cg in _ancestors(path):
        text = machine.read_text(_join(CGROUP_ROOT, cg) + "/cpu.max")
        if isinstance(text, Unknown):
            continue
        try:
            parsed = parse_cpu_max(text)
        except ValueError as exc:
            return {"version": 2, "quota": Unknown(str(exc))}
        if parsed:
            limits.append({"cgroup": cg, "quota_us": parsed[0], "period_us": parsed[1]})
    cpuset = Unknown("no cpuset.cpus.effective")
    for cg in _ancestors(path):
        text = machine.read_text(_join(CGROUP_ROOT, cg) + "/cpuset.cpus.effective")
        if isinstance(text, str) and text.strip():
            try:
                cpuset = parse_cpulist(text)
            except ValueError:
                cpuset = Unknown("cpuset.cpus.effective is malformed")
            break
    return {"version": 2, "path": path, "limits": limits, "cpuset": cpuset}


def _v1(machine: Machine, membership: dict[str, str]) -> dict[str, object]:
    path = membership.get("cpu", membership.get("cpuacct", "/"))
    limits = []
    for mount in ("cpu,cpuacct", "cpu", "cpuacct,cpu"):
        base = f"{CGROUP_ROOT}/{mount}"
        if not machine.exists(base):
            continue
        for cg in _ancestors(path):
            quota = machine.read_text(_join(base, cg) + "/cpu.cfs_quota_us")
            period = machine.read_text(_join(base, cg) + "/cpu.cfs_period_us")
            if isinstance(quota, Unknown) or isinstance(period, Unknown):
                continue
            try:
                q, p = int(quota.strip()), int(period.strip())
            except ValueError:
                return {"version": 1, "quota": Unknown(f"cfs quota/period not numeric in {cg}")}
            if q > 0 and p > 0:
                limits.append({"cgroup": cg, "quota_us": q, "period_us": p})
        break
    cpuset: object = Unknown("no cpuset controller")
    cs_path = membership.get("cpuset", "/")
    for cg in _ancestors(cs_path):
        text = machine.read_text(_join(f"{CGROUP_ROOT}/cpuset", cg) + "/cpuset.effective_cpus")
        if isinstance(text, Unknown):
            text = machine.read_text(_join(f"{CGROUP_ROOT}/cpuset", cg) + "/cpuset.cpus")
        if isinstance(text, str) and text.strip():
            try:
                cpuset = parse_cpulist(text)
            except ValueError:
                cpuset = Unknown("cpuset.cpus is malformed")
            break
    return {"version": 1, "path": path, "limits": limits, "cpuset": cpuset}


@probe("cgroup")
def probe_cgroup(machine: Machine) -> dict[str, object] | Unknown:
    text = machine.read_text("/proc/self/cgroup")
    if isinstance(text, Unknown):
        return text
    membership = parse_cgroup_membership(text)
    # A hybrid host lists v1 controllers and an empty v2 hierarchy; the cpu controller decides.
    if "cpu" in membership or "cpuacct" in membership:
        return _v1(machine, membership)
    if "" in membership:
        return _v2(machine, membership[""])
    return Unknown("/proc/self/cgroup names no cpu controller")
