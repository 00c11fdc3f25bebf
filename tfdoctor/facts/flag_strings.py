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

# A name: the prefix and at most 80 identifier characters, not preceded by one, NUL-terminated.
XLA_NAME = re.compile(rb"(?<![a-z0-9_])(xla_[a-z0-9_]{3,80})\x00")
# TF_XLA_FLAGS: flags.cc's families (auto-jit and clustering, the MLIR bridge, graph dumps, jitter).
TF_XLA_NAME = re.compile(rb"(?<![a-z0-9_])((?:tf_xla|tf_mlir|tf_dump|tf_introduce)_[a-z0-9_]{3,80})\x00")
PATTERNS = {"XLA_FLAGS": XLA_NAME, "TF_XLA_FLAGS": TF_XLA_NAME}
CHUNK = 1 << 20
OVERLAP = 96  # longer than any name with its boundary bytes: a name split across two chunks is still found


class NameScan:
    """The names of one pattern in a stream of chunks, fed in file order."""

    def __init__(self, pattern: re.Pattern[bytes]) -> None:
        self.pattern = pattern
        self.found: set[str] = set()
        self._tail = b""

    def feed(self, chunk: bytes) -> None:
        window = self._tail + chunk
        self.found.update(match.group(1).decode() for match in self.pattern.finditer(window))
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
