"""CPUs: flags, topology (sockets, cores, hyperthreads), the allowed set, frequency governors."""

from __future__ import annotations

import os
import sys

from tfdoctor.facts import Unknown
from tfdoctor.facts.machine import Machine
from tfdoctor.facts.parse import parse_cpuinfo, parse_cpulist, parse_stat_cpus, parse_status
from tfdoctor.registry import probe

SYS_CPU = "/sys/devices/system/cpu"


def _cpuinfo(machine: Machine) -> dict[str, object] | Unknown:
    text = machine.read_text("/proc/cpuinfo")
    if isinstance(text, str):
        try:
            return parse_cpuinfo(text)
        except ValueError as exc:
            return Unknown(f"/proc/cpuinfo not understood: {exc}")
    if machine.is_live and not sys.platform.startswith("linux"):
        # Off Linux only: py-cpuinfo spends over a second, so it is never the first choice.
        try:
            import cpuinfo

            info = cpuinfo.get_cpu_info()
            return {"vendor": info.get("vendor_id_raw", ""), "model_name": info.get("brand_raw", ""),
                    "flags": sorted(info.get("flags", [])), "processors": info.get("count", 0)}
        except Exception as exc:
            return Unknown(f"py-cpuinfo failed: {exc}")
    return text


def _topology(machine: Machine, online: list[int]) -> list[dict[str, int]] | Unknown:
    """One entry per online CPU: its socket (package) and core, so hyperthreads share a core id."""
    cpus = []
    for cpu in online:
        base = f"{SYS_CPU}/cpu{cpu}/topology"
        package = machine.read_text(f"{base}/physical_package_id")
        core = machine.read_text(f"{base}/core_id")
        if isinstance(package, Unknown) or isinstance(core, Unknown):
            missing = package if isinstance(package, Unknown) else core
            return Unknown(f"topology of cpu{cpu} unreadable: {getattr(missing, 'reason', '')}")
        try:
            cpus.append({"cpu": cpu, "socket": int(package), "core": int(core)})
        except ValueError:
            return Unknown(f"topology of cpu{cpu} is not numeric")
    return cpus


def _governors(machine: Machine, online: list[int]) -> dict[str, int] | Unknown:
    counts: dict[str, int] = {}
    for cpu in online:
        text = machine.read_text(f"{SYS_CPU}/cpu{cpu}/cpufreq/scaling_governor")
        if isinstance(text, Unknown):
            # Virtual machines and many containers have no cpufreq at all: not an error, just unknown.
            return Unknown(f"no readable frequency governor ({text.reason})")
        counts[text.strip()] = counts.get(text.strip(), 0) + 1
    return counts


def _allowed(machine: Machine) -> dict[str, object]:
    status = machine.read_text("/proc/self/status")
    fields = parse_status(status) if isinstance(status, str) else {}
    allowed: object
    if machine.is_live and hasattr(os, "sched_getaffinity"):
        allowed = sorted(os.sched_getaffinity(0))
    elif "Cpus_allowed_list" in fields:
        try:
            allowed = parse_cpulist(fields["Cpus_allowed_list"])
        except ValueError:
            allowed = Unknown("Cpus_allowed_list in /proc/self/status is malformed")
    else:
        allowed = Unknown(status.reason if isinstance(status, Unknown) else "no Cpus_allowed_list")
    mems: object = Unknown("no Mems_allowed_list in /proc/self/status")
    if "Mems_allowed_list" in fields:
        try:
            mems = parse_cpulist(fields["Mems_allowed_list"])
        except ValueError:
            mems = Unknown("Mems_allowed_list in /proc/self/status is malformed")
    return {"allowed_cpus": allowed, "allowed_mems": mems}


def _online_from_stat(machine: Machine, unread: Unknown) -> list[int] | Unknown:
    stat = machine.read_text("/proc/stat")
    if not isinstance(stat, str):
        return unread
    try:
        return parse_stat_cpus(stat)
    except ValueError:
        return unread


@probe("cpu")
def probe_cpu(machine: Machine) -> dict[str, object]:
    from tfdoctor.facts.probes import darwin

    if darwin.is_mac(machine):
        # No /proc or /sys on macOS: sysctl answers; no per-CPU topology, governors nor affinity there.
        facts = darwin.cpu_from_sysctl(darwin.sysctl_answers(machine))
        facts["topology"] = facts["governors"] = Unknown("macOS: no per-CPU topology or governor files")
        facts["allowed_cpus"] = facts["online"]  # macOS has no CPU affinity masks: every CPU is allowed
        facts["allowed_mems"] = Unknown("macOS: no memory nodes")
        return facts
    online_text = machine.read_text(f"{SYS_CPU}/online")
    online: list[int] | Unknown
    if isinstance(online_text, str):
        try:
            online = parse_cpulist(online_text)
        except ValueError:
            online = Unknown(f"{SYS_CPU}/online is malformed: {online_text.strip()!r}")
    else:
        # Not os.cpu_count(): its fallback reads the same file with no bound and the GIL held (an `online`
        # that is a character device hung check for ever). /proc/stat lists the online CPUs too.
        online = _online_from_stat(machine, online_text) if machine.is_live else online_text
    facts: dict[str, object] = {"online": online, "cpuinfo": _cpuinfo(machine)}
    if isinstance(online, list):
        facts["topology"] = _topology(machine, online)
        facts["governors"] = _governors(machine, online)
    else:
        facts["topology"] = facts["governors"] = Unknown(f"online CPUs unknown: {online.reason}")
    facts.update(_allowed(machine))
    return facts
