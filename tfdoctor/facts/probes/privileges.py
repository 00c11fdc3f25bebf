"""Whether this process may use CUPTI's profiling features: effective uid, capabilities, the driver's
profiling restriction (RmProfilingAdminOnly) and where it is configured, and container signs.

Since driver 418.43 (Linux) the GPU performance counters are for administrators only unless the
nvidia module is loaded with NVreg_RestrictProfilingToAdminUsers=0. The running module's value is
"RmProfilingAdminOnly" in /proc/driver/nvidia/params; a modprobe.d line takes effect at the next load.
Facts section "privileges" (docs/facts-gpu.md).
"""

from __future__ import annotations

import os
import re

from tfdoctor.facts import Unknown
from tfdoctor.facts.machine import Machine
from tfdoctor.facts.parse import parse_status
from tfdoctor.registry import probe

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import Any

CAP_SYS_ADMIN = 21
CAP_PERFMON = 38
_MODPROBE_OPTION = re.compile(r"^\s*options\s+nvidia\s+.*\bNVreg_RestrictProfilingToAdminUsers=([0-9]+)")


def parse_nvidia_params(text: str) -> dict[str, str]:
    """/proc/driver/nvidia/params: "Name: value" lines."""
    params = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            params[key.strip()] = value.strip()
    return params


def modprobe_settings(machine: Machine) -> list[dict[str, str]]:
    found = []
    for folder in ("/etc/modprobe.d", "/usr/lib/modprobe.d", "/lib/modprobe.d", "/run/modprobe.d"):
        listing = machine.listdir(folder)
        for name in listing if isinstance(listing, list) else []:
            if not name.endswith(".conf"):
                continue
            text = machine.read_text(f"{folder}/{name}")
            if not isinstance(text, str):
                continue
            for line in text.splitlines():
                match = _MODPROBE_OPTION.match(line)
                if match:
                    found.append({"file": f"{folder}/{name}", "value": match.group(1)})
    return found


CGROUP_WORDS = ("kubepods", "docker", "libpod", "containerd")  # most specific first: kubepods paths name docker too


def container_signs(machine: Machine) -> list[str]:
    """Signs this process runs in a container: the engine's marker files, Kubernetes' environment, and
    the engine's name in a cgroup path ("/proc/self/cgroup:kubepods"). With cgroup v2 namespaces the
    path is "0::/" and only the marker files and the environment remain."""
    signs = [p for p in ("/.dockerenv", "/run/.containerenv") if machine.exists(p)]
    if machine.environ.get("KUBERNETES_SERVICE_HOST"):
        signs.append("KUBERNETES_SERVICE_HOST")
    for path in ("/proc/self/cgroup", "/proc/1/cgroup"):
        text = machine.read_text(path)
        word = next((w for w in CGROUP_WORDS if isinstance(text, str) and w in text), None)
        if word:
            signs.append(f"{path}:{word}")
            break
    return signs


@probe("privileges")
def probe_privileges(machine: Machine) -> dict[str, Any]:
    status = machine.read_text("/proc/self/status")
    fields = parse_status(status) if isinstance(status, str) else {}
    euid: Any
    if machine.is_live and hasattr(os, "geteuid"):
        euid = os.geteuid()
    elif "Uid" in fields and len(fields["Uid"].split()) >= 2:
        euid = int(fields["Uid"].split()[1])
    else:
        euid = Unknown("no Uid line in /proc/self/status")
    cap_eff: Any = Unknown("no CapEff line in /proc/self/status")
    sys_admin: Any = cap_eff
    perfmon: Any = cap_eff
    if re.fullmatch(r"[0-9a-fA-F]+", fields.get("CapEff", "")):
        cap_eff = fields["CapEff"].lower()
        bits = int(cap_eff, 16)
        sys_admin, perfmon = bool(bits >> CAP_SYS_ADMIN & 1), bool(bits >> CAP_PERFMON & 1)
    params = machine.read_text("/proc/driver/nvidia/params")
    admin_only: Any = None  # no driver loaded: nothing restricts anything
    if isinstance(params, str):
        value = parse_nvidia_params(params).get("RmProfilingAdminOnly")
        admin_only = int(value) if value and value.isdigit() else Unknown(
            "no RmProfilingAdminOnly in /proc/driver/nvidia/params")
    elif machine.exists("/proc/driver/nvidia/version"):
        admin_only = Unknown(params.reason)
    return {
        "euid": euid,
        "cap_eff": cap_eff,
        "cap_sys_admin": sys_admin,
        "cap_perfmon": perfmon,
        "rm_profiling_admin_only": admin_only,
        "modprobe_restrict_profiling": modprobe_settings(machine),
        "container": container_signs(machine),
    }
