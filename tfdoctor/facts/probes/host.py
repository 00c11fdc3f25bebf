"""The host as a whole: operating system, architecture, container signs, NVIDIA driver presence."""

from __future__ import annotations

import os

from tfdoctor.facts import Unknown
from tfdoctor.facts.machine import Machine
from tfdoctor.registry import probe


def _os_release(machine: Machine) -> dict[str, str] | Unknown:
    text = machine.read_text("/etc/os-release")
    if isinstance(text, Unknown):
        return text
    fields = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key in ("ID", "VERSION_ID", "PRETTY_NAME"):
            fields[key.lower()] = value.strip().strip('"')
    return fields


def _container(machine: Machine) -> dict[str, object]:
    signs = []
    if machine.exists("/.dockerenv"):
        signs.append("/.dockerenv")
    if machine.exists("/run/.containerenv"):
        signs.append("/run/.containerenv")
    if machine.environ.get("KUBERNETES_SERVICE_HOST"):
        signs.append("KUBERNETES_SERVICE_HOST")
    cgroup = machine.read_text("/proc/1/cgroup")
    if isinstance(cgroup, str) and any(w in cgroup for w in ("docker", "kubepods", "containerd", "libpod")):
        signs.append("/proc/1/cgroup")
    return {"detected": bool(signs), "signs": signs}


def _wsl2(machine: Machine) -> dict[str, object]:
    from tfdoctor.facts.probes.nvml import wsl2_signs

    signs = wsl2_signs(machine)
    return {"detected": "/dev/dxg" in signs, "signs": signs}


def _fake_mac(machine: Machine) -> bool:
    from tfdoctor.facts.probes.darwin import is_mac

    return is_mac(machine)


def _recorded_mac(machine: Machine) -> tuple[str, object, object]:
    """A fake Mac (docs/adding-a-fact.md): its architecture and kernel release as its recorded sysctl says."""
    from tfdoctor.facts.probes.darwin import sysctl_answers

    answers = sysctl_answers(machine)
    if isinstance(answers, Unknown):
        return "Darwin", answers, answers
    return ("Darwin", answers.get("hw.machine") or Unknown("sysctl gave no hw.machine"),
            answers.get("kern.osrelease") or Unknown("sysctl gave no kern.osrelease"))


@probe("host")
def probe_host(machine: Machine) -> dict[str, object]:
    driver = machine.read_text("/proc/driver/nvidia/version")
    if machine.is_live:
        uname = os.uname()  # not the platform module: its import costs the hook a few ms
        system, arch, kernel = uname.sysname, uname.machine, uname.release
    elif _fake_mac(machine):
        system, arch, kernel = _recorded_mac(machine)
    else:
        # A fake root describes a Linux machine: its architecture and kernel release are what its procfs
        # says (the files uname reads), unknown where it says nothing.
        system, arch = "Linux", Unknown("fake root: architecture not recorded")
        kernel: object = Unknown("fake root: kernel release not recorded")
        arch_file = machine.read_text("/proc/sys/kernel/arch")
        if isinstance(arch_file, str):
            arch = arch_file.strip()
        release = machine.read_text("/proc/sys/kernel/osrelease")
        if isinstance(release, str) and release.strip():
            kernel = release.strip()
    return {
        "system": system,
        "arch": arch,
        "kernel": kernel,
        "os_release": _os_release(machine),
        "container": _container(machine),
        "wsl2": _wsl2(machine),
        # Only presence and the first line: the full GPU story is the nvidia probes' business.
        "nvidia_driver": (driver.splitlines()[0].strip() if isinstance(driver, str) and driver.strip()
                          else None),
    }
