"""Pure parsers for the files and tool output probes read. No I/O here: text in, values out.

Each parser raises ValueError with a short reason on input it does not understand; the probe that
calls it turns that into an Unknown.
"""

from __future__ import annotations


def parse_cpulist(text: str) -> list[int]:
    """Kernel cpulist format: "0-3,8,10-11" -> [0, 1, 2, 3, 8, 10, 11]. Empty text: no CPUs."""
    cpus: set[int] = set()
    text = text.strip()
    if not text:
        return []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            low, _, high = part.partition("-")
            stride = 1
            if ":" in high:  # "0-15:2" (stride form, seen in some cpuset files)
                high, _, step = high.partition(":")
                stride = int(step)
            start, end = int(low), int(high)
            if end < start or stride < 1:
                raise ValueError(f"bad cpulist range {part!r}")
            cpus.update(range(start, end + 1, stride))
        else:
            cpus.add(int(part))
    return sorted(cpus)


def format_cpulist(cpus: list[int] | set[int]) -> str:
    """The inverse of parse_cpulist, with ranges folded: [0,1,2,5] -> "0-2,5"."""
    ordered = sorted(set(cpus))
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)


def parse_cpuinfo(text: str) -> dict[str, object]:
    """/proc/cpuinfo -> vendor, model name, flags (of the first processor) and processor count."""
    processors = 0
    first: dict[str, str] = {}
    current: dict[str, str] = {}
    for line in [*text.splitlines(), ""]:
        if not line.strip():
            if current:
                processors += 1 if "processor" in current else 0
                if not first:
                    first = current
                current = {}
            continue
        key, sep, value = line.partition(":")
        if sep:
            current[key.strip()] = value.strip()
    if not first:
        raise ValueError("no processor entries")
    # x86 says "flags", arm64 says "Features".
    flags = (first.get("flags") or first.get("Features") or "").split()
    return {
        "vendor": first.get("vendor_id") or first.get("CPU implementer") or "",
        "model_name": first.get("model name") or first.get("Model") or "",
        "flags": sorted(set(flags)),
        "processors": processors,
    }


def parse_status(text: str) -> dict[str, str]:
    """/proc/<pid>/status as a dict of raw strings."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip()] = value.strip()
    return fields


def parse_cgroup_membership(text: str) -> dict[str, str]:
    """/proc/self/cgroup -> {controller: path}; the v2 unified hierarchy appears under key ""."""
    paths: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.strip().split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":
            paths[""] = path
        for controller in controllers.split(","):
            if controller:
                paths[controller] = path
    return paths


def parse_cpu_max(text: str) -> tuple[int, int] | None:
    """cgroup v2 cpu.max: "max 100000" -> None (no quota); "200000 100000" -> (200000, 100000)."""
    parts = text.split()
    if len(parts) not in (1, 2):
        raise ValueError(f"cpu.max {text.strip()!r} is not 'QUOTA PERIOD'")
    if parts[0] == "max":
        return None
    quota = int(parts[0])
    period = int(parts[1]) if len(parts) == 2 else 100000
    if quota <= 0 or period <= 0:
        raise ValueError(f"cpu.max {text.strip()!r} has a non-positive value")
    return quota, period


def parse_int(text: str) -> int:
    return int(text.strip())
