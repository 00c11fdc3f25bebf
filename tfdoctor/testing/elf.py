"""The smallest ELF shared object ldconfig accepts: a header, a PT_LOAD, a PT_DYNAMIC and a DT_SONAME
(and, when asked, DT_NEEDED and DT_RUNPATH entries: a fake libtensorflow_framework.so.2 says where its
loader looks, as the real one does).

Tests build real ld.so.cache files with `ldconfig -C FILE -f CONF` over fake trees; ldconfig reads
each file's SONAME, so the fake libraries must be real ELF objects, and no compiler is needed here.
"""

from __future__ import annotations

import struct

_MACHINES = {"x86_64": 62, "aarch64": 183}
ET_DYN, PT_LOAD, PT_DYNAMIC = 3, 1, 2
DT_NULL, DT_NEEDED, DT_STRTAB, DT_STRSZ, DT_SONAME, DT_RUNPATH = 0, 1, 5, 10, 14, 29


def shared_object(soname: str, machine: str = "x86_64", needed: tuple[str, ...] = (),
                  runpath: tuple[str, ...] = ()) -> bytes:
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
    header = ident + struct.pack("<HHIQQQIHHHHHH", ET_DYN, _MACHINES[machine], 1, 0, phoff, 0, 0,
                                 64, 56, phnum, 64, 0, 0)
    load = struct.pack("<IIQQQQQQ", PT_LOAD, 4, 0, 0, 0, total, total, 0x1000)
    dyn = struct.pack("<IIQQQQQQ", PT_DYNAMIC, 4, dyn_off, dyn_off, dyn_off, len(dynamic), len(dynamic), 8)
    return header + load + dyn + dynamic + strtab
