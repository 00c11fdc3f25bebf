"""The flag names a TensorFlow wheel accepts in XLA_FLAGS or TF_XLA_FLAGS, read from the wheel (knowledge
maintenance only).

    python -m tfdoctor.knowledge.xla_flag_list tensorflow_cpu-2.21.0-cp311-cp311-manylinux_2_27_x86_64.whl
    python -m tfdoctor.knowledge.xla_flag_list --variable TF_XLA_FLAGS tensorflow_cpu-2.21.0-….whl

XLA registers each debug option flag (xla/debug_options_flags.cc) by its name, a string literal: in the wheel's
libtensorflow_cc.so.2 every one is a NUL-terminated "xla_…" string; TensorFlow's own TF_XLA_FLAGS flags
(tensorflow/compiler/jit/flags.cc) are "tf_xla_…", "tf_mlir_…" strings alike. The library also holds other
such strings (file and pass names), so the list is a superset of the flags: a name missing from it is one this
build does not register (the variable aborts with it), a name in it is not proof of a flag. The serialized
DebugOptions descriptor names fields the flag parser no longer registers (xla_gpu_graph_level in 2.21): those
strings are not NUL-terminated and are not counted (tfdoctor.facts.flag_strings). Prints one name a line;
tfdoctor/knowledge/xla_flags.toml and tf_xla_flags.toml hold the lists, with the wheel's sha256. The libraries
are streamed from the zip, a megabyte at a time, never unpacked.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from tfdoctor.facts.flag_strings import CHUNK, PATTERNS, XLA_NAME, NameScan

LIBRARY = "tensorflow/libtensorflow_cc.so.2"  # 2.12 on; before, the flags are in the Python extension
OLDER_LIBRARY = "tensorflow/python/_pywrap_tensorflow_internal.so"
# TF_XLA_FLAGS' flags.cc is linked into the C++ core; the framework is read too, so a build that moves it
# there is still read whole.
FRAMEWORK = "tensorflow/libtensorflow_framework.so.2"


def flag_names(stream: IO[bytes], pattern: object = XLA_NAME) -> list[str]:
    """The NUL-terminated names of `pattern` (XLA_NAME: "xla_…") in a library, in one pass over its stream."""
    scan = NameScan(pattern)  # type: ignore[arg-type]
    for chunk in iter(lambda: stream.read(CHUNK), b""):
        scan.feed(chunk)
    return scan.names()


def wheel_flag_names(path: Path, variable: str = "XLA_FLAGS") -> tuple[str, list[str]]:
    """(the wheel's sha256, the names its libraries hold for `variable`)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    with zipfile.ZipFile(path) as archive:
        names = set(archive.namelist())
        member = LIBRARY if LIBRARY in names else OLDER_LIBRARY
        if member not in names:
            raise SystemExit(f"{path.name}: no {LIBRARY} or {OLDER_LIBRARY}: not a TensorFlow wheel")
        members = [member] + ([FRAMEWORK] if variable == "TF_XLA_FLAGS" and FRAMEWORK in names else [])
        found: set[str] = set()
        for name in members:
            with archive.open(name) as stream:
                found.update(flag_names(stream, PATTERNS[variable]))
        return digest.hexdigest(), sorted(found)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheel", type=Path)
    parser.add_argument("--variable", choices=sorted(PATTERNS), default="XLA_FLAGS",
                        help="whose flags: XLA's (XLA_FLAGS, the default) or TensorFlow's (TF_XLA_FLAGS)")
    args = parser.parse_args(argv)
    sha256, names = wheel_flag_names(args.wheel, args.variable)
    sys.stdout.write(f"# {args.wheel.name} sha256={sha256}\n" + "".join(f"{n}\n" for n in names))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
