"""macOS: the answers of `sysctl` and SystemVersion.plist. Facts section "darwin".

On a Mac the processor, its instruction sets and whether this process runs translated by Rosetta 2 are
answered by sysctl, not by /proc: `hw.optional.arm64` (1 on Apple silicon, whatever the process's
architecture), `sysctl.proc_translated` (1 for an x86_64 process under Rosetta; absent on Intel Macs),
`machdep.cpu.brand_string`, `machdep.cpu.features` / `machdep.cpu.leaf7_features` and `hw.optional.avx*`
(what an x86_64 process may execute: under Rosetta, no AVX), `hw.physicalcpu`, `hw.logicalcpu`, `hw.memsize`.

Live, on Darwin only, the probe runs /usr/sbin/sysctl once (absolute path, bounded in time and output;
a translated process's sysctl answers for that process). Under --root a fake Mac holds the answers as the
text `sysctl NAME...` printed ("name: value" lines) in RECORDED_SYSCTL: a recorded answer is data, like
every other file of the tree, and nothing is run. A tree without SystemVersion.plist is not a Mac.
"""

from __future__ import annotations

import sys

from tfdoctor.facts import Unknown
from tfdoctor.facts.machine import Machine
from tfdoctor.registry import probe

SYSCTL = "/usr/sbin/sysctl"
SYSTEM_VERSION = "/System/Library/CoreServices/SystemVersion.plist"
RECORDED_SYSCTL = "/.tfdoctor/sysctl.txt"  # under --root only: what `sysctl NAMES` printed on that Mac
NAMES = ("hw.machine", "hw.optional.arm64", "sysctl.proc_translated", "machdep.cpu.brand_string",
         "machdep.cpu.vendor", "machdep.cpu.features", "machdep.cpu.leaf7_features", "hw.optional.avx1_0",
         "hw.optional.avx2_0", "hw.optional.avx512f", "hw.physicalcpu", "hw.logicalcpu", "hw.memsize",
         "kern.osrelease", "kern.osproductversion")
OUTPUT_LIMIT = 64 * 1024


def parse_sysctl(text: str) -> dict[str, str]:
    """`sysctl a b c` output ("a: 1" lines; a value may hold spaces) -> {name: value} of the names asked
    for. sysctl names an unknown name on stderr only, so an absent key is an unknown oid.
    ValueError when it answers none of them (every Mac knows hw.machine): nothing was read, not "all absent"."""
    answers: dict[str, str] = {}
    for line in text.splitlines()[:512]:
        name, sep, value = line.partition(": ")
        if sep and name.strip() in NAMES:
            answers[name.strip()] = value.strip()
    if not answers:
        raise ValueError("no name asked for is answered")
    return answers


def parse_system_version(text: str) -> dict[str, str]:
    """SystemVersion.plist (XML) -> ProductName, ProductVersion, ProductBuildVersion."""
    import plistlib

    try:
        document = plistlib.loads(text.encode("utf-8", errors="surrogateescape"))
    except Exception as exc:  # plistlib raises several types on a damaged file
        raise ValueError(str(exc)) from None
    if not isinstance(document, dict):
        raise ValueError("not a dictionary")
    return {k: str(document[k]) for k in ("ProductName", "ProductVersion", "ProductBuildVersion") if k in document}


def is_mac(machine: Machine) -> bool:
    if machine.is_live:
        return sys.platform == "darwin"
    return machine.exists(SYSTEM_VERSION)


def sysctl_answers(machine: Machine) -> dict[str, str] | Unknown:
    """The answers to NAMES: run live on a Mac, read from RECORDED_SYSCTL under a root."""
    if not machine.is_live:
        return machine.read_parsed(RECORDED_SYSCTL, parse_sysctl, "is not sysctl output")
    import subprocess

    from tfdoctor.facts.bounded import run_bounded

    limit = min(1.0, machine.timeout / 2)
    try:
        done = run_bounded([SYSCTL, *NAMES], timeout=limit, limit=OUTPUT_LIMIT, env={"LC_ALL": "C"})
    except subprocess.TimeoutExpired:
        return Unknown(f"{SYSCTL} did not answer in {limit:g} s")
    except OSError as exc:
        return Unknown(f"{SYSCTL} could not run: {exc.strerror or exc}")
    if done.flooded:
        return Unknown(f"{SYSCTL} wrote more than {OUTPUT_LIMIT // 1024} KB")
    # Exit status 1 when one name is unknown (sysctl.proc_translated on an Intel Mac): the others stand.
    try:
        return parse_sysctl(done.stdout.decode("utf-8", errors="replace"))
    except ValueError:
        return Unknown(f"{SYSCTL} answered none of the names asked (exit status {done.returncode})")


def flag(answers: dict[str, str] | Unknown, name: str) -> bool | None:
    """A 0/1 answer as a bool; None when sysctl does not know the name (an older macOS, an Intel Mac)."""
    if isinstance(answers, Unknown) or name not in answers:
        return None
    return answers[name].strip() == "1"


@probe("darwin", timeout=2.0)
def probe_darwin(machine: Machine) -> dict[str, object]:
    if not is_mac(machine):
        return {"detected": False}
    answers = sysctl_answers(machine)
    arm64 = flag(answers, "hw.optional.arm64")
    translated = flag(answers, "sysctl.proc_translated")
    return {
        "detected": True,
        "system_version": machine.read_parsed(SYSTEM_VERSION, parse_system_version, "is not a property list"),
        "sysctl": answers,
        "apple_silicon": answers if isinstance(answers, Unknown) else bool(arm64),
        # Absent on Intel Macs (no Rosetta there): not translated.
        "translated": answers if isinstance(answers, Unknown) else bool(translated),
    }


def x86_flags(answers: dict[str, str]) -> list[str] | None:
    """machdep.cpu.features and leaf7_features in /proc/cpuinfo's spelling ("AVX1.0" -> "avx", "SSE4.2" ->
    "sse4_2", "AVX2" -> "avx2"), so the CPU checks read one vocabulary; None when sysctl lists none (a
    native arm64 process: its instruction sets are not x86 flags)."""
    words = (answers.get("machdep.cpu.features", "") + " " + answers.get("machdep.cpu.leaf7_features", "")).split()
    if not words:
        return None
    flags = {w.lower().replace(".", "_") for w in words}
    if "avx1_0" in flags:
        flags.discard("avx1_0")
        flags.add("avx")
    return sorted(flags)


def cpu_from_sysctl(answers: dict[str, str] | Unknown) -> dict[str, object]:
    """The cpu section's fields on a Mac, from the same sysctl answers: /proc/cpuinfo's fields (vendor,
    model name, flags, processors), the online CPUs (hw.logicalcpu), and the physical core count."""
    if isinstance(answers, Unknown):
        return {"online": answers, "cpuinfo": answers}
    logical = _count(answers.get("hw.logicalcpu", ""))
    physical = _count(answers.get("hw.physicalcpu", ""))
    flags = x86_flags(answers)
    vendor = answers.get("machdep.cpu.vendor") or ("Apple" if answers.get("hw.optional.arm64") == "1" else "")
    cpuinfo: dict[str, object] = {
        "vendor": vendor, "model_name": answers.get("machdep.cpu.brand_string", ""),
        "flags": flags if flags is not None else Unknown("sysctl lists no x86 instruction-set flags "
                                                         "(a native arm64 process)"),
        "processors": logical if logical is not None else 0,
    }
    return {
        "online": list(range(logical)) if logical is not None else Unknown("sysctl gave no usable hw.logicalcpu"),
        "cpuinfo": cpuinfo,
        "physical_cores": physical if physical is not None else Unknown("sysctl gave no usable hw.physicalcpu"),
    }


def _count(text: str) -> int | None:
    """A CPU count sysctl printed, or None: ASCII digits only ("²".isdigit() is True, int("²") raises) and
    below CPU_ID_LIMIT (a recorded "hw.logicalcpu: 99999999999" must not build a list of that length)."""
    from tfdoctor.facts.parse import CPU_ID_LIMIT

    value = text.strip()
    if not (value.isascii() and value.isdecimal()) or len(value) > 6 or not 0 < int(value) <= CPU_ID_LIMIT:
        return None
    return int(value)
