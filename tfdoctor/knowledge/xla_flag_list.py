"""The XLA_FLAGS names a TensorFlow wheel's XLA accepts, read from the wheel (knowledge maintenance only).

    python -m tfdoctor.knowledge.xla_flag_list tensorflow_cpu-2.21.0-cp311-cp311-manylinux_2_27_x86_64.whl

XLA registers each debug option flag (xla/debug_options_flags.cc) by its name, a string literal: in the wheel's
libtensorflow_cc.so.2 every one is a NUL-terminated "xla_…" string. The library also holds other "xla_"
strings (file and pass names), so the list is a superset of the flags: a name missing from it is one this XLA
does not register (XLA_FLAGS with it aborts), a name in it is not proof of a flag. The serialized DebugOptions
descriptor names fields the flag parser no longer registers (xla_gpu_graph_level in 2.21): those strings are
not NUL-terminated and are not counted. Prints one name a line; tfdoctor/knowledge/xla_flags.toml holds the
lists, with the wheel's sha256. The library is streamed from the zip, a megabyte at a time, never unpacked.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO

LIBRARY = "tensorflow/libtensorflow_cc.so.2"  # 2.12 on; before, the flags are in the Python extension
OLDER_LIBRARY = "tensorflow/python/_pywrap_tensorflow_internal.so"
# A name: "xla_" and at most 80 identifier characters, not preceded by one, NUL-terminated.
NAME = re.compile(rb"(?<![a-z0-9_])(xla_[a-z0-9_]{3,80})\x00")
CHUNK = 1 << 20
OVERLAP = 96  # longer than any name with its boundary bytes: a name split across two chunks is still found


def flag_names(stream: IO[bytes]) -> list[str]:
    """The NUL-terminated "xla_…" strings of a library, in one pass over its stream."""
    found: set[str] = set()
    tail = b""
    while True:
        chunk = stream.read(CHUNK)
        if not chunk:
            return sorted(found)
        window = tail + chunk
        found.update(match.group(1).decode() for match in NAME.finditer(window))
        tail = window[-OVERLAP:]


def wheel_flag_names(path: Path) -> tuple[str, list[str]]:
    """(the wheel's sha256, its XLA's flag names)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    with zipfile.ZipFile(path) as archive:
        names = set(archive.namelist())
        member = LIBRARY if LIBRARY in names else OLDER_LIBRARY
        if member not in names:
            raise SystemExit(f"{path.name}: no {LIBRARY} or {OLDER_LIBRARY}: not a TensorFlow wheel")
        with archive.open(member) as stream:
            return digest.hexdigest(), flag_names(stream)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheel", type=Path)
    args = parser.parse_args(argv)
    sha256, names = wheel_flag_names(args.wheel)
    sys.stdout.write(f"# {args.wheel.name} sha256={sha256}\n" + "".join(f"{n}\n" for n in names))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
