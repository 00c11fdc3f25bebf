"""A pure parser of glibc's /etc/ld.so.cache: bytes in, (soname, flags, path) entries out.

Two layouts exist. The old one ("ld.so-1.7.0") holds 12-byte entries whose string offsets count from
the string table that follows them. The new one ("glibc-ld.so.cache1.1", the only one glibc ≥ 2.32
writes by default) holds 24-byte entries whose offsets count from the start of the file. A "compat"
file is an old cache followed by a new one; the new part wins, as it does for the loader.
The entries are in the loader's preference order, which `ldconfig -p` prints unchanged.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

OLD_MAGIC = b"ld.so-1.7.0"
NEW_MAGIC = b"glibc-ld.so.cache"
NEW_VERSION = b"1.1"

# Architecture bits of an entry's flags (glibc ldconfig.h), as `ldconfig -p` names them.
_ARCH_NAMES = {
    0x0000: "", 0x0100: "SPARC 64-bit", 0x0200: "IA-64", 0x0300: "x86-64", 0x0400: "64bit",
    0x0500: "64bit", 0x0600: "64bit", 0x0700: "N32", 0x0800: "x32", 0x0900: "hard-float",
    0x0a00: "AArch64", 0x0b00: "soft-float", 0x0c00: "nan2008", 0x0d00: "N32,nan2008",
    0x0e00: "64bit,nan2008", 0x0f00: "double-float", 0x1000: "RISC-V",
}
_TYPE_NAMES = {0x0000: "libc4", 0x0001: "ELF", 0x0002: "libc5", 0x0003: "libc6"}
# The arch bits a 64-bit process of each machine can load; untagged libc6 entries there are 32-bit ones.
ARCH_BITS_FOR_MACHINE = {"x86_64": 0x0300, "aarch64": 0x0a00, "ppc64le": 0x0500, "s390x": 0x0400}


@dataclass(frozen=True)
class CacheEntry:
    """One library of /etc/ld.so.cache: its soname, its flags (ABI, architecture) and its path."""

    soname: str
    flags: int
    path: str

    @property
    def arch_bits(self) -> int:
        return self.flags & 0xFF00

    @property
    def flags_text(self) -> str:
        """The parenthesised part of `ldconfig -p`: "libc6,x86-64"."""
        kind = _TYPE_NAMES.get(self.flags & 0x00FF, "unknown")
        arch = _ARCH_NAMES.get(self.arch_bits, "unknown")
        return f"{kind},{arch}" if arch else kind


def _cstring(data: bytes, offset: int) -> str:
    if not 0 <= offset < len(data):
        raise ValueError(f"string offset {offset} outside the file")
    end = data.find(b"\0", offset)
    if end < 0:
        raise ValueError("unterminated string")
    return data[offset:end].decode("utf-8", errors="surrogateescape")


def _parse_new(data: bytes, base: int) -> list[CacheEntry]:
    header = struct.Struct("<17s3sII")  # magic, version, nlibs, len_strings
    if len(data) < base + 48:
        raise ValueError("new-format header truncated")
    _magic, version, nlibs, _strings = header.unpack_from(data, base)
    if version != NEW_VERSION:
        raise ValueError(f"new-format cache version {version!r} is not 1.1")
    entry = struct.Struct("<iIIIQ")  # flags, key, value, osversion, hwcap
    start = base + 48
    if start + nlibs * entry.size > len(data):
        raise ValueError(f"cache announces {nlibs} entries but is only {len(data)} bytes")
    entries = []
    for i in range(nlibs):
        flags, key, value, _os, _hwcap = entry.unpack_from(data, start + i * entry.size)
        # Offsets count from the start of the new-format part (the file start unless compat).
        entries.append(CacheEntry(_cstring(data, base + key), flags, _cstring(data, base + value)))
    return entries


def _parse_old(data: bytes) -> tuple[list[CacheEntry], int]:
    """The old entries, and the offset just past their string table (where a new part may follow)."""
    (nlibs,) = struct.unpack_from("<I", data, 12)
    entry = struct.Struct("<iII")
    strings = 16 + nlibs * entry.size
    if strings > len(data):
        raise ValueError(f"old-format cache announces {nlibs} entries but is only {len(data)} bytes")
    entries = []
    for i in range(nlibs):
        flags, key, value = entry.unpack_from(data, 16 + i * entry.size)
        entries.append(CacheEntry(_cstring(data, strings + key), flags, _cstring(data, strings + value)))
    return entries, strings


def parse_ld_so_cache(data: bytes) -> tuple[str, list[CacheEntry]]:
    """("new" | "old" | "compat", entries in the loader's order). ValueError on anything else."""
    try:
        return _parse_any(data)
    except struct.error as exc:  # a header or entry cut short: a truncated or hostile file
        raise ValueError(f"truncated ld.so.cache: {exc}") from None


def _parse_any(data: bytes) -> tuple[str, list[CacheEntry]]:
    if data.startswith(NEW_MAGIC):
        return "new", _parse_new(data, 0)
    if data.startswith(OLD_MAGIC):
        old, strings = _parse_old(data)
        found = data.find(NEW_MAGIC, strings)
        if found >= 0:
            # The new part is 8-byte aligned after the old strings.
            return "compat", _parse_new(data, found)
        return "old", old
    raise ValueError("not an ld.so.cache (unknown magic)")


def entries_for_machine(entries: list[CacheEntry], machine: str) -> list[CacheEntry]:
    """The entries a 64-bit process on `machine` may load; all of them for an unknown machine."""
    bits = ARCH_BITS_FOR_MACHINE.get(machine)
    if bits is None:
        return list(entries)
    return [e for e in entries if e.arch_bits == bits and e.flags & 0x00FF in (0x01, 0x03)]


def format_like_ldconfig(entries: list[CacheEntry]) -> list[str]:
    """The entry lines of `ldconfig -p` (tests compare them with the real tool's output)."""
    return [f"\t{e.soname} ({e.flags_text}) => {e.path}" for e in entries]
