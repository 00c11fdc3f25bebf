"""Pure parsers for the files and tool output probes read. No I/O here: text in, values out.

Each parser raises ValueError with a short reason on input it does not understand; the probe that
calls it turns that into an Unknown.
"""

from __future__ import annotations

import re

# The most CPUs any Linux build can address (CONFIG_NR_CPUS tops out at 8192; twice that for margin). A CPU
# list naming a CPU beyond it, or beyond the machine's own count, is refused before anything is built.
CPU_ID_LIMIT = 16384
# Where XLA looks for nvvm/libdevice (and ptxas): read from XLA_FLAGS by the toolchain probe and written by
# the XLA checks' fixes, so it is defined here, below both.
DATA_DIR_FLAG = "--xla_gpu_cuda_data_dir"


class CpusBeyondMachine(ValueError):
    """A CPU list naming a CPU the machine does not have (at or above `limit`): a finding, not work."""

    def __init__(self, highest: int, limit: int) -> None:
        super().__init__(f"names CPU {highest}, beyond the {limit} CPU(s) this machine has")
        self.highest = highest
        self.limit = limit


def _bounded_range(start: int, end: int, stride: int, limit: int) -> range:
    """range(start, end + 1, stride), refused (CpusBeyondMachine) before it is built when it leaves [0, limit)."""
    if start < 0:
        raise ValueError(f"negative CPU number {start}")
    if end >= limit:
        highest = start + (end - start) // stride * stride
        if highest >= limit:
            raise CpusBeyondMachine(highest, limit)
    return range(start, end + 1, stride)


def parse_cpulist(text: str, limit: int = CPU_ID_LIMIT) -> list[int]:
    """Kernel cpulist format: "0-3,8,10-11" -> [0, 1, 2, 3, 8, 10, 11]. Empty text: no CPUs.

    Bounded: a CPU number at or above `limit` (default CPU_ID_LIMIT) raises CpusBeyondMachine (a
    ValueError) before any list is built, so "0-4000000000" costs nothing."""
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
                raise ValueError(f"bad cpulist range {part[:40]!r}")
            cpus.update(_bounded_range(start, end, stride, limit))
        else:
            cpus.update(_bounded_range(int(part), int(part), 1, limit))
    return sorted(cpus)


def parse_affinity_list(text: str, limit: int = CPU_ID_LIMIT) -> list[int] | None:
    """GOMP_CPU_AFFINITY / KMP proclist syntax: "0 3 1-2 4-15:2" or "0,3,{4,5}"; None if unparsable.

    Bounded like parse_cpulist: CpusBeyondMachine for a CPU at or above `limit`."""
    cpus: set[int] = set()
    for token in re.split(r"[\s,{}]+", text.strip()):
        if not token:
            continue
        found = re.fullmatch(r"(\d{1,30})(?:-(\d{1,30})(?::(\d{1,30}))?)?", token)
        if not found:
            return None
        start = int(found.group(1))
        end = int(found.group(2) or start)
        step = int(found.group(3) or 1)
        if end < start or step < 1:
            return None
        cpus.update(_bounded_range(start, end, step, limit))
    return sorted(cpus)


def parse_omp_places(value: str, limit: int = CPU_ID_LIMIT) -> tuple[str | None, int | None, list[int] | None]:
    """OMP_PLACES -> (abstract name, count, cpus of an explicit list). "{0}:4" expands to 4 places.

    Bounded: interval and repeat notations ("{0:4000000000}", "{0}:4000000000:1") are checked against
    `limit` arithmetically before a CPU is listed (CpusBeyondMachine); a repeat with stride 0 names its
    CPUs once, whatever the count. None, None, None when the value is not understood."""
    text = value.strip().lower()
    abstract = re.fullmatch(r"(threads|cores|sockets|ll_caches|numa_domains)\s*(?:\((\d{1,30})\))?", text)
    if abstract:
        return abstract.group(1), int(abstract.group(2)) if abstract.group(2) else None, None
    cpus: set[int] = set()
    count = 0
    for place in re.finditer(r"\{([^}]*)\}(?::(\d{1,30})(?::(-?\d{1,30}))?)?", text):
        if ":" in place.group(1):  # {start:len[:stride]}
            try:
                parts = [int(x) for x in place.group(1).split(":")]
            except ValueError:
                return None, None, None
            start, length, stride = [*parts, 1, 1][:3]
            inner = _progression(start, length, stride, limit)
        else:
            inner = [int(x) for x in re.findall(r"\d{1,30}", place.group(1))]
            for cpu in inner:
                _bounded_range(cpu, cpu, 1, limit)
        repeat = int(place.group(2) or 1)
        stride = int(place.group(3) or 1)  # the OpenMP default stride is 1
        for cpu in inner:
            cpus.update(_progression(cpu, repeat, stride, limit))
        count += repeat
    if not count:
        return None, None, None
    return None, count, sorted(cpus)


def _progression(start: int, length: int, stride: int, limit: int) -> list[int]:
    """start, start + stride, … (length terms) within [0, limit), or CpusBeyondMachine / ValueError."""
    if length < 1:
        return []
    if stride == 0:
        return list(_bounded_range(start, start, 1, limit))
    last = start + (length - 1) * stride
    low, high = min(start, last), max(start, last)
    if low < 0:
        raise ValueError(f"negative CPU number {low}")
    if high >= limit:
        raise CpusBeyondMachine(high, limit)
    return list(range(start, last + (1 if stride > 0 else -1), stride))


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


def parse_stat_cpus(text: str, limit: int = CPU_ID_LIMIT) -> list[int]:
    """The online CPUs /proc/stat lists (a `cpuN ...` line each), sorted; ValueError when it lists none or
    one beyond `limit`."""
    cpus = []
    for line in text.splitlines():
        name = line.split(" ", 1)[0]
        if name.startswith("cpu") and name[3:].isdecimal() and name[3:].isascii():
            cpu = int(name[3:])
            if cpu >= limit:
                raise ValueError(f"CPU {cpu} is beyond {limit}")
            cpus.append(cpu)
    if not cpus:
        raise ValueError("no cpuN line")
    return sorted(set(cpus))


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


# No count tfdoctor reads (threads, ranks, nodes, bytes) is larger; a hostile environment can hold a
# 120,000-digit "number", which int() refuses (Python's 4300-digit limit) or converts in quadratic time.
COUNT_LIMIT = 10**18


def count(text: str) -> int | None:
    """A whole number written in ASCII digits (blanks around allowed), capped at COUNT_LIMIT; None for
    anything else ('²'.isdigit() is true, yet int() refuses it)."""
    digits = text.strip()
    if not (digits.isascii() and digits.isdigit()):
        return None
    digits = digits.lstrip("0") or "0"
    return int(digits) if len(digits) <= 18 else COUNT_LIMIT


def parse_int(text: str) -> int:
    return int(text.strip())


def flag_tokens(text: str) -> list[str]:
    """The words of a shell-quoted string (a flags variable: XLA_FLAGS, TF_XLA_FLAGS; a notebook's install
    command): quotes honoured as a shell would; with a stray quote, split on whitespace."""
    import shlex  # only when there is such a string

    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def parse_data_dir(xla_flags: str | None) -> str | None:
    """The last --xla_gpu_cuda_data_dir in XLA_FLAGS (XLA parses flags left to right)."""
    if not xla_flags:
        return None
    tokens = flag_tokens(xla_flags)
    found = None
    for i, token in enumerate(tokens):
        if token.startswith(DATA_DIR_FLAG + "="):
            found = token.split("=", 1)[1]
        elif token == DATA_DIR_FLAG and i + 1 < len(tokens):
            found = tokens[i + 1]
    return found
