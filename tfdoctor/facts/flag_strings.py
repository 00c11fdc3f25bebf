"""Flag names as a TensorFlow library holds them: NUL-terminated string literals (pure).

XLA registers each XLA_FLAGS flag (xla/debug_options_flags.cc) and TensorFlow each TF_XLA_FLAGS flag
(tensorflow/compiler/jit/flags.cc) by its name, a string literal: in the library every one is a
NUL-terminated "xla_…" or "tf_xla_…" string, in .rodata. The library holds other such strings too (file and
pass names), so what is found is a superset of the flags: a name missing from it is one this build does not
register (the variable aborts the process), a name in it is not proof of a flag. Serialized protobuf
descriptors name fields without a NUL after them and are not counted. Shared by the maintainer's command
(tfdoctor.knowledge.xla_flag_list, over a wheel's zip member) and the installed-library probe
(tfdoctor.facts.probes.xla_flag_names, over .rodata).
"""

from __future__ import annotations

import re

from tfdoctor.facts.elf import ElfError, ReadAt

# A name: the prefix and at most 80 identifier characters, NUL-terminated, and (checked by NameScan, not by a
# lookbehind: one at the start of a pattern costs re its literal-prefix search, 40 times slower over 45 MB)
# not preceded by an identifier character.
XLA_NAME = re.compile(rb"xla_[a-z0-9_]{3,80}\x00")
# TF_XLA_FLAGS: flags.cc's families (auto-jit and clustering, the MLIR bridge, graph dumps, jitter).
TF_XLA_NAME = re.compile(rb"tf_(?:xla|mlir|dump|introduce)_[a-z0-9_]{3,80}\x00")
PATTERNS = {"XLA_FLAGS": XLA_NAME, "TF_XLA_FLAGS": TF_XLA_NAME}
CHUNK = 1 << 20
OVERLAP = 96  # longer than any name with its NUL: a name split across two chunks is still found
IDENTIFIER = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789_")


class NameScan:
    """The names of one pattern in a stream of chunks, fed in file order."""

    def __init__(self, pattern: re.Pattern[bytes]) -> None:
        self.pattern = pattern
        self.found: set[str] = set()
        self._tail = b""
        self._before = -1  # the byte before the tail (-1: none, the start of the stream)

    def feed(self, chunk: bytes) -> None:
        window = self._tail + chunk
        before = self._before
        for match in self.pattern.finditer(window):
            start = match.start()
            previous = window[start - 1] if start else before
            if previous not in IDENTIFIER:
                self.found.add(match.group()[:-1].decode())
        if len(window) > OVERLAP:
            self._before = window[-OVERLAP - 1]
        self._tail = window[-OVERLAP:]

    def names(self) -> list[str]:
        return sorted(self.found)


def names_in_range(read_at: ReadAt, offset: int, size: int, pattern: re.Pattern[bytes] = XLA_NAME,
                   chunk: int = CHUNK) -> list[str]:
    """The names of `pattern` in `size` bytes from `offset`, read a chunk at a time (a reader may return
    fewer bytes than asked: the next read starts where it stopped). ElfError when the range runs past the end
    of the file: a list with names missing would call real flags unregistered."""
    scan = NameScan(pattern)
    done = 0
    while done < size:
        data = read_at(offset + done, min(chunk, size - done))
        if not data:
            raise ElfError(f"{size} bytes from byte {offset} run past the end of the file")
        scan.feed(data)
        done += len(data)
    return scan.names()
