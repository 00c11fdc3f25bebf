"""The dynamic section of an ELF shared object (DT_NEEDED, DT_RUNPATH, DT_RPATH, DT_SONAME), read from a
few byte ranges: the ELF header, the program headers, the PT_DYNAMIC segment and the strings it names.
libtensorflow_cc.so.2 is ~1 GB; this reads a few kilobytes of it. `find_section` locates one section by
name (.rodata, where the compiler puts string literals) from the section headers, a few more kilobytes.

Pure: the bytes come from a `read_at(offset, size)` callable — a bounded.RangeReader on an installed
file, a forward-streaming reader on a wheel's zip member (tfdoctor.knowledge.extract), a bytes object in
tests. Anything malformed raises ElfError with a short reason.
"""

from __future__ import annotations

import posixpath
import struct
from collections.abc import Callable

from tfdoctor.records import value_tuple

ReadAt = Callable[[int, int], bytes]

PT_LOAD, PT_DYNAMIC = 1, 2
DT_NULL, DT_NEEDED, DT_STRTAB, DT_STRSZ, DT_SONAME, DT_RPATH, DT_RUNPATH = 0, 1, 5, 10, 14, 15, 29
MAX_PROGRAM_HEADERS = 512  # real shared objects have ~10
MAX_DYNAMIC_BYTES = 64 * 1024  # ~4000 entries; real ones have ~40
MAX_STRING = 256 * 1024  # one NEEDED or RUNPATH string: TensorFlow 2.21's framework RUNPATH is ~24 KB
STRING_STEP = 4096
MAX_SECTIONS = 4096  # real shared objects have ~40
MAX_SECTION_NAMES = 64 * 1024  # the section-name table; real ones have ~400 bytes
SHN_XINDEX = 0xFFFF


class ElfError(ValueError):
    """Not an ELF file, or one whose headers do not hold together."""


@value_tuple  # not typing.NamedTuple: the pre-job hook reads TensorFlow's libraries and never imports typing
class DynamicSection:
    """What the loader reads first of a shared object: its dependencies and where it looks for them."""

    needed: tuple[str, ...]
    runpath: tuple[str, ...]
    rpath: tuple[str, ...]
    soname: str | None

    def as_dict(self) -> dict[str, object]:
        return {"needed": list(self.needed), "runpath": list(self.runpath), "rpath": list(self.rpath),
                "soname": self.soname}


def _exact(read_at: ReadAt, offset: int, size: int, what: str) -> bytes:
    data = read_at(offset, size)
    if len(data) != size:
        raise ElfError(f"{what} at byte {offset} runs past the end of the file")
    return data


def _identify(read_at: ReadAt) -> tuple[bool, str]:
    """(64-bit, struct byte-order prefix) of the ELF file behind `read_at`; ElfError when it is not one."""
    ident = _exact(read_at, 0, 16, "ELF identification")
    if ident[:4] != b"\x7fELF":
        raise ElfError("not an ELF file")
    wide = {1: False, 2: True}.get(ident[4])
    order = {1: "<", 2: ">"}.get(ident[5])
    if wide is None or order is None:
        raise ElfError(f"unknown ELF class {ident[4]} or byte order {ident[5]}")
    return wide, order


def read_dynamic(read_at: ReadAt) -> DynamicSection:
    """The dynamic section of the ELF file behind `read_at`; ElfError when there is none or it is malformed."""
    wide, order = _identify(read_at)
    if wide:
        header = _exact(read_at, 0, 64, "ELF header")
        phoff, = struct.unpack_from(order + "Q", header, 32)
        phentsize, phnum = struct.unpack_from(order + "HH", header, 54)
        phdr, phdr_size, dyn, dyn_size = order + "IIQQQQQQ", 56, order + "qQ", 16
    else:
        header = _exact(read_at, 0, 52, "ELF header")
        phoff, = struct.unpack_from(order + "I", header, 28)
        phentsize, phnum = struct.unpack_from(order + "HH", header, 42)
        phdr, phdr_size, dyn, dyn_size = order + "IIIIIIII", 32, order + "iI", 8
    if phnum == 0 or phnum > MAX_PROGRAM_HEADERS or phentsize < phdr_size:
        raise ElfError(f"{phnum} program headers of {phentsize} bytes")
    table = _exact(read_at, phoff, phnum * phentsize, "program headers")
    loads: list[tuple[int, int, int]] = []  # (vaddr, offset, filesz)
    dynamic: tuple[int, int] | None = None
    for index in range(phnum):
        fields = struct.unpack_from(phdr, table, index * phentsize)
        if wide:
            p_type, _flags, p_offset, p_vaddr, _paddr, p_filesz = fields[:6]
        else:
            p_type, p_offset, p_vaddr, _paddr, p_filesz = fields[:5]
        if p_type == PT_LOAD:
            loads.append((p_vaddr, p_offset, p_filesz))
        elif p_type == PT_DYNAMIC:
            dynamic = (p_offset, p_filesz)
    if dynamic is None:
        raise ElfError("no dynamic segment (a static executable or an object file)")
    if dynamic[1] > MAX_DYNAMIC_BYTES:
        raise ElfError(f"dynamic segment of {dynamic[1]} bytes, more than {MAX_DYNAMIC_BYTES}")
    segment = _exact(read_at, dynamic[0], dynamic[1] - dynamic[1] % dyn_size, "dynamic segment")
    entries: list[tuple[int, int]] = []
    for index in range(len(segment) // dyn_size):
        tag, value = struct.unpack_from(dyn, segment, index * dyn_size)
        if tag == DT_NULL:
            break
        entries.append((tag, value))
    strtab = next((v for t, v in entries if t == DT_STRTAB), None)
    strsz = next((v for t, v in entries if t == DT_STRSZ), None)
    if strtab is None or strsz is None:
        raise ElfError("dynamic segment without DT_STRTAB/DT_STRSZ")
    base = _file_offset(strtab, loads)

    def string(offset: int) -> str:
        if offset >= strsz:
            raise ElfError(f"string offset {offset} beyond the string table ({strsz} bytes)")
        return _string(read_at, base + offset, min(MAX_STRING, strsz - offset))

    # Strings in file order: a streaming reader (a zip member) then never has to go back.
    wanted = sorted({v for t, v in entries if t in (DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH)})
    text = {offset: string(offset) for offset in wanted}
    needed = tuple(text[v] for t, v in entries if t == DT_NEEDED)
    # Bazel repeats entries (2.21's framework names each folder ~20 times): the first of each is kept, which
    # is the order the loader tries them in.
    runpath = tuple(dict.fromkeys(p for t, v in entries if t == DT_RUNPATH for p in text[v].split(":") if p))
    rpath = tuple(dict.fromkeys(p for t, v in entries if t == DT_RPATH for p in text[v].split(":") if p))
    soname = next((text[v] for t, v in entries if t == DT_SONAME), None)
    return DynamicSection(needed, runpath, rpath, soname)


def find_section(read_at: ReadAt, name: str) -> tuple[int, int] | None:
    """(file offset, size) of the section called `name`, None when there is none; ElfError when the section
    headers are malformed. Only the ELF header, the section header table and its name table are read."""
    wide, order = _identify(read_at)
    if wide:
        header = _exact(read_at, 0, 64, "ELF header")
        shoff, = struct.unpack_from(order + "Q", header, 40)
        shentsize, shnum, shstrndx = struct.unpack_from(order + "HHH", header, 58)
        # sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size
        shdr, shdr_size = order + "IIQQQQ", 64
    else:
        header = _exact(read_at, 0, 52, "ELF header")
        shoff, = struct.unpack_from(order + "I", header, 32)
        shentsize, shnum, shstrndx = struct.unpack_from(order + "HHH", header, 46)
        shdr, shdr_size = order + "IIIIII", 40
    if shoff == 0 or shnum == 0:
        return None  # stripped of its section headers (or past 65280 sections, which no library has)
    if shnum > MAX_SECTIONS or shentsize < shdr_size or shstrndx >= shnum or shstrndx == SHN_XINDEX:
        raise ElfError(f"{shnum} section headers of {shentsize} bytes, names in section {shstrndx}")
    table = _exact(read_at, shoff, shnum * shentsize, "section headers")
    sections = [struct.unpack_from(shdr, table, index * shentsize) for index in range(shnum)]
    _, _, _, _, names_offset, names_size = sections[shstrndx]
    if names_size > MAX_SECTION_NAMES:
        raise ElfError(f"section-name table of {names_size} bytes, more than {MAX_SECTION_NAMES}")
    names = _exact(read_at, names_offset, names_size, "section-name table")
    wanted = name.encode()
    for sh_name, _type, _flags, _addr, offset, size in sections:
        end = names.find(b"\0", sh_name)
        if sh_name < len(names) and names[sh_name:end if end >= 0 else len(names)] == wanted:
            return offset, size
    return None


def _file_offset(vaddr: int, loads: list[tuple[int, int, int]]) -> int:
    for start, offset, size in loads:
        if start <= vaddr < start + size:
            return vaddr - start + offset
    raise ElfError(f"address {vaddr:#x} of the string table is in no loaded segment")


def _string(read_at: ReadAt, offset: int, limit: int) -> str:
    """A NUL-terminated string of at most `limit` bytes, read in small steps."""
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        chunk = read_at(offset + size, min(STRING_STEP, limit - size))
        if not chunk:
            raise ElfError(f"string at byte {offset} runs past the end of the file")
        end = chunk.find(b"\0")
        if end >= 0:
            chunks.append(chunk[:end])
            return b"".join(chunks).decode("utf-8", errors="replace")
        chunks.append(chunk)
        size += len(chunk)
    raise ElfError(f"string at byte {offset} longer than {limit} bytes")


def expand_origin(entry: str, library_dir: str) -> str:
    """A RUNPATH entry as a folder: $ORIGIN (or ${ORIGIN}) is the folder of the library that carries it."""
    expanded = entry.replace("${ORIGIN}", library_dir).replace("$ORIGIN", library_dir)
    return posixpath.normpath(expanded) if expanded.startswith("/") else expanded


def bytes_reader(data: bytes) -> ReadAt:
    """read_at over bytes in memory (tests, and a small file already read)."""
    return lambda offset, size: data[offset:offset + size] if offset >= 0 else b""
