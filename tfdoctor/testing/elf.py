"""The smallest ELF shared object ldconfig accepts: a header, a PT_LOAD, a PT_DYNAMIC and a DT_SONAME
(and, when asked, DT_NEEDED and DT_RUNPATH entries: a fake libtensorflow_framework.so.2 says where its
loader looks, as the real one does).

With `rodata`, the object also has section headers and a .rodata section holding those bytes: a fake
libtensorflow_cc.so.2 carries its flag names where the real one does (tfdoctor.facts.flag_strings).

Tests build real ld.so.cache files with `ldconfig -C FILE -f CONF` over fake trees; ldconfig reads
each file's SONAME, so the fake libraries must be real ELF objects, and no compiler is needed here.
"""

from __future__ import annotations

import struct

_MACHINES = {"x86_64": 62, "aarch64": 183}
ET_DYN, PT_LOAD, PT_DYNAMIC = 3, 1, 2
DT_NULL, DT_NEEDED, DT_STRTAB, DT_STRSZ, DT_SONAME, DT_RUNPATH = 0, 1, 5, 10, 14, 29
SHT_PROGBITS, SHT_STRTAB = 1, 3
SHF_ALLOC, SHF_MERGE, SHF_STRINGS = 0x2, 0x10, 0x20


def shared_object(soname: str, machine: str = "x86_64", needed: tuple[str, ...] = (),
                  runpath: tuple[str, ...] = (), rodata: bytes | None = None) -> bytes:
    strings = [soname, *needed] + ([":".join(runpath)] if runpath else [])
    offsets, strtab = [], b"\0"
    for text in strings:
        offsets.append(len(strtab))
        strtab += text.encode() + b"\0"
    phoff, phnum = 64, 2
    dyn_off = phoff + phnum * 56
    tags = [(DT_SONAME, offsets[0])] + [(DT_NEEDED, o) for o in offsets[1:1 + len(needed)]]
    if runpath:
        tags.append((DT_RUNPATH, offsets[-1]))
    size = (len(tags) + 3) * 16  # + DT_STRTAB, DT_STRSZ, DT_NULL
    tags += [(DT_STRTAB, dyn_off + size), (DT_STRSZ, len(strtab)), (DT_NULL, 0)]
    dynamic = b"".join(struct.pack("<qQ", tag, value) for tag, value in tags)
    str_off = dyn_off + len(dynamic)
    total = str_off + len(strtab)
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)  # 64-bit, little-endian, version 1, SysV
    shoff, shnum, shstrndx, sections = 0, 0, 0, b""
    if rodata is not None:
        names = b"\0.rodata\0.shstrtab\0"
        rodata_off, names_off = total, total + len(rodata)
        shoff, shnum, shstrndx = names_off + len(names), 3, 2
        sections = rodata + names + bytes(64) + b"".join(  # section 0 is the null section
            struct.pack("<IIQQQQIIQQ", name, kind, flags, 0, offset, size, 0, 0, 1, 0)
            for name, kind, flags, offset, size in ((1, SHT_PROGBITS, SHF_ALLOC | SHF_MERGE | SHF_STRINGS, rodata_off,
                                                     len(rodata)), (9, SHT_STRTAB, 0, names_off, len(names))))
    header = ident + struct.pack("<HHIQQQIHHHHHH", ET_DYN, _MACHINES[machine], 1, 0, phoff, shoff, 0,
                                 64, 56, phnum, 64, shnum, shstrndx)
    load = struct.pack("<IIQQQQQQ", PT_LOAD, 4, 0, 0, 0, total, total, 0x1000)
    dyn = struct.pack("<IIQQQQQQ", PT_DYNAMIC, 4, dyn_off, dyn_off, dyn_off, len(dynamic), len(dynamic), 8)
    return header + load + dyn + dynamic + strtab + sections
