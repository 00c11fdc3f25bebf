"""Pure parsers for the network, shared-memory and IOMMU probes (tested on text)."""

from __future__ import annotations

import re
import sys

_SIZE_SUFFIX = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def parse_fib_trie_local(text: str) -> list[str]:
    """The host's own IPv4 addresses: the "/32 host LOCAL" leaves of /proc/net/fib_trie."""
    found: list[str] = []
    last_ip = ""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("|--"):
            last_ip = stripped[3:].strip()
        elif "/32 host LOCAL" in stripped and last_ip and last_ip not in found:
            found.append(last_ip)
    return found


def parse_if_inet6(text: str) -> list[str]:
    """IPv6 addresses from /proc/net/if_inet6 (32 hex digits, then index, prefix, scope, flags, name)."""
    found: list[str] = []
    for line in text.splitlines():
        fields = line.split()
        if not fields or len(fields[0]) != 32:
            continue
        try:
            address = format_ipv6(int(fields[0], 16))
        except ValueError:
            continue
        if address not in found:
            found.append(address)
    return found


# Python 3.13 writes an IPv4-mapped address (::ffff:0:0/96) with its IPv4 part dotted (gh-87799).
_MAPPED_DOTTED = sys.version_info >= (3, 13)


def format_ipv6(value: int) -> str:
    """str(ipaddress.IPv6Address(value)), without importing ipaddress (~1 ms of every pre-job hook run):
    lowercase hextets without leading zeros, the longest run of two or more zero hextets (the first of equal
    runs) written "::" (RFC 5952); an IPv4-mapped address as this interpreter's ipaddress writes it.
    ValueError outside 0 .. 2**128 - 1, as ipaddress raises."""
    if not 0 <= value < 1 << 128:
        raise ValueError(f"{value} is not a 128-bit IPv6 address")
    if _MAPPED_DOTTED and value >> 32 == 0xFFFF:
        return "::ffff:" + ".".join(str(value >> shift & 0xFF) for shift in (24, 16, 8, 0))
    hextets = [f"{value >> shift & 0xFFFF:x}" for shift in range(112, -16, -16)]
    best_start, best_length, start = 0, 0, 0
    for index, hextet in enumerate(hextets):
        if hextet != "0":
            start = index + 1
        elif index + 1 - start > best_length:
            best_start, best_length = start, index + 1 - start
    if best_length < 2:
        return ":".join(hextets)
    return ":".join(hextets[:best_start]) + "::" + ":".join(hextets[best_start + best_length:])


def parse_hosts_names(text: str, addresses: list[str], hostname: str) -> list[str]:
    """Names /etc/hosts gives to this host: every name on a line for one of its addresses or its name."""
    names: list[str] = []
    for line in text.splitlines():
        fields = line.split("#", 1)[0].split()
        if len(fields) < 2:
            continue
        ip, aliases = fields[0], fields[1:]
        if (ip in addresses and not ip.startswith("127.") and ip != "::1") or hostname in aliases:
            names += [a for a in aliases if a not in names]
    return names


def parse_size(text: str) -> int | None:
    """A tmpfs size option ("65536k", "1g", "1073741824") in bytes; None for percentages or junk."""
    match = re.fullmatch(r"([0-9]+)([kmgtKMGT]?)", text.strip())
    if not match:
        return None
    return int(match.group(1)) * _SIZE_SUFFIX[match.group(2).lower()]


def parse_mount(text: str, mount_point: str) -> dict[str, object] | None:
    """The last /proc/mounts entry for `mount_point`: fstype and options; None when not mounted."""
    entry = None
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[1] == mount_point:
            entry = {"source": fields[0], "fstype": fields[2], "options": fields[3].split(",")}
    return entry


def parse_meminfo_total(text: str) -> int | None:
    for line in text.splitlines():
        if line.startswith("MemTotal:"):
            fields = line.split()
            if len(fields) >= 2 and fields[1].isdigit():
                return int(fields[1]) * 1024
    return None


def parse_iommu_cmdline(text: str) -> dict[str, str]:
    """The kernel command-line parameters that decide IOMMU translation."""
    keys = ("intel_iommu", "amd_iommu", "iommu", "iommu.passthrough", "iommu.strict")
    found: dict[str, str] = {}
    for token in text.split():
        if token == "--":
            break  # what follows goes to init, not to the kernel
        name, sep, value = token.partition("=")
        if name in keys:
            found[name] = value if sep else ""
    return found


def parse_ib_rate(text: str) -> float | None:
    """An InfiniBand port rate ("100 Gb/sec (4X EDR)") in Gbit/s."""
    match = re.match(r"\s*([0-9.]+)\s*Gb/sec", text)
    return float(match.group(1)) if match else None
