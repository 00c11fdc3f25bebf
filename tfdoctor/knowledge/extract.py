"""A maintainer's command: turn a real TensorFlow wheel into the small JSON record the knowledge tables
are proven against (tests/data/wheel_records/, tests/test_knowledge_wheel_records.py).

    python -m tfdoctor.knowledge.extract tensorflow-2.21.0-cp311-cp311-manylinux_2_27_x86_64.whl

prints the record: build_info.py's CUDA, cuDNN and compute capabilities; METADATA's Requires-Python,
Requires-Dist and the `and-cuda` pins; the dynamic section (NEEDED, RUNPATH, RPATH) of the main shared
objects; the NCCL banner ("NCCL version 2.19.3+cuda12.3") when NCCL is compiled into one of them; which
of a few log lines' words they carry (MESSAGES).
`-o FILE` writes it instead (never over an existing file without --force).

The wheel is read as a zip: the big libraries are decompressed as a stream, a megabyte at a time, never
written to disk. Exit codes: 0 written, 2 bad input (not a wheel, no TensorFlow in it, file exists).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import zipfile
import zlib
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import IO, Any

from tfdoctor.facts.elf import ElfError, read_dynamic

RECORD_VERSION = 1
# The shared objects the loader sees first: the framework (tsl's library loader lives there), the C++
# core (2.12 on), the Python extension that held both before.
MAIN_LIBRARIES = ("tensorflow/libtensorflow_framework.so.2", "tensorflow/libtensorflow_cc.so.2",
                  "tensorflow/python/_pywrap_tensorflow_internal.so")
# Small extensions scanned for MESSAGES only: the CPU-feature notice is printed from its own module.
MESSAGE_FILES = ("tensorflow/python/platform/_pywrap_cpu_feature_guard.so",)
BUILD_INFO = "tensorflow/python/platform/build_info.py"
CHUNK = 1 << 20
KEEP = 4 << 20  # bytes kept behind the stream's position: the ELF reads near the start need no reopen
# NCCL's compiled-in version string: VERSION_STRING "NCCL version 2.19.3+cuda12.3" (src/init.cc).
NCCL_BANNER = re.compile(rb"NCCL version ([0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3})(\+cuda[0-9]{1,3}\.[0-9]{1,3})?")
# Fixed words whose presence dates a behaviour: log lines whose releases tfdoctor/knowledge/log_messages.toml
# states (its `tensorflow` column), and XLA's ptxas exclusion (xla_ptxas.toml).
MESSAGES = {
    "local-rendezvous-end-of-sequence": b"Local rendezvous is aborting with status",
    # cpu_feature_guard.cc streams the 2.5-2.11 notice in pieces: its first piece names that wording.
    "cpu-instructions-onednn": b"This TensorFlow binary is optimized with ",
    # XLA's ptxas search skips excluded versions (FindPtxAsExecutable: 12.3.103) and logs this at VLOG(2).
    "xla-ptxas-version-excluded": b"which was explicitly excluded",
}
OVERLAP = 128  # longer than any needle: a needle split across two chunks is still found
TEXT_LIMIT = 1 << 20  # METADATA and build_info.py are a few KB


class ExtractError(Exception):
    """The file is not a TensorFlow wheel this command can read (exit 2)."""


class MemberReader:
    """read_at over one zip member decompressed as a stream: reads ahead skip forward, a read behind what
    is kept reopens the member (the ELF reader asks in file order, so that is rare)."""

    def __init__(self, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> None:
        self.archive, self.info = archive, info
        self._open()

    def _open(self) -> None:
        self.stream: IO[bytes] = self.archive.open(self.info)
        self.start = 0  # file offset of buffer[0]
        self.buffer = bytearray()
        self.eof = False

    def __call__(self, offset: int, size: int) -> bytes:
        if offset < self.start:
            self.stream.close()
            self._open()
        while self.start + len(self.buffer) < offset + size and not self.eof:
            chunk = self.stream.read(CHUNK)
            if not chunk:
                self.eof = True
                break
            self.buffer += chunk
            drop = min(offset, self.start + len(self.buffer) - KEEP) - self.start
            if drop > KEEP:
                del self.buffer[:drop]
                self.start += drop
        at = offset - self.start
        return bytes(self.buffer[at:at + size])

    def close(self) -> None:
        self.stream.close()


def scan_strings(stream: IO[bytes]) -> tuple[str | None, list[str]]:
    """(the first NCCL version banner, the MESSAGES ids whose words appear) in one pass over a stream."""
    tail = b""
    banner: str | None = None
    found: set[str] = set()
    while True:
        chunk = stream.read(CHUNK)
        if not chunk:
            return banner, sorted(found)
        window = tail + chunk
        if banner is None:
            match = NCCL_BANNER.search(window)
            if match:
                banner = (match.group(1) + (match.group(2) or b"")).decode()
        found.update(key for key, needle in MESSAGES.items() if key not in found and needle in window)
        tail = window[-OVERLAP:]


def _text(archive: zipfile.ZipFile, name: str) -> str:
    info = archive.getinfo(name)
    if info.file_size > TEXT_LIMIT:
        raise ExtractError(f"{name} is {info.file_size} bytes, more than a real one")
    return archive.read(info).decode("utf-8", errors="replace")


def parse_build_info(text: str) -> dict[str, Any]:
    """build_info.py's `build_info` mapping (OrderedDict([...]) in real wheels), or {} when absent."""
    import ast

    from tfdoctor.facts.probes import pyenv_snapshot

    try:
        values = pyenv_snapshot._literal_assignments(ast.parse(text))
    except (SyntaxError, ValueError) as exc:
        raise ExtractError(f"{BUILD_INFO} does not parse: {exc}") from None
    info = values.get("build_info")
    return {str(k): v for k, v in info.items()} if isinstance(info, dict) else {}


def extract(path: Path, banners: bool = True) -> dict[str, Any]:
    """The record of one wheel. `banners=False` skips the scan for NCCL (the one full pass per library)."""
    from tfdoctor.facts.probes import pyenv_snapshot

    try:
        archive = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as exc:
        raise ExtractError(f"{path} is not a wheel (a zip file): {exc}") from None
    with archive:
        names = set(archive.namelist())
        metadata_name = next((n for n in sorted(names) if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)), None)
        if metadata_name is None or BUILD_INFO not in names:
            raise ExtractError(f"{path} holds no {BUILD_INFO} or *.dist-info/METADATA: not a TensorFlow wheel")
        metadata = pyenv_snapshot._parse_metadata(_text(archive, metadata_name))
        build_info = parse_build_info(_text(archive, BUILD_INFO))
        libraries: dict[str, Any] = {}
        for name in MAIN_LIBRARIES:
            if name not in names:
                continue
            info = archive.getinfo(name)
            reader = MemberReader(archive, info)
            try:
                record: dict[str, Any] = read_dynamic(reader).as_dict()
            except ElfError as exc:
                record = {"error": str(exc)}
            finally:
                reader.close()
            record["size"] = info.file_size
            if banners:
                with archive.open(info) as stream:
                    record["nccl_banner"], record["messages"] = scan_strings(stream)
            libraries[name] = record
        message_files: dict[str, list[str]] = {}
        for name in MESSAGE_FILES:
            if banners and name in names:
                with archive.open(name) as stream:
                    message_files[name] = scan_strings(stream)[1]
    keep = ("cuda_version", "cudnn_version", "cuda_compute_capabilities", "is_cuda_build", "is_rocm_build")
    return {
        "record_version": RECORD_VERSION,
        "wheel": path.name,
        "sha256": _sha256(path),
        "name": metadata["name"],
        "version": metadata["version"],
        "requires_python": metadata["requires_python"],
        "requires_dist": metadata["requires_dist"],
        "and_cuda": and_cuda_requirements(metadata["requires_dist"]),
        "build_info": {k: build_info[k] for k in keep if k in build_info},
        "libraries": libraries,
        "message_files": message_files,
    }


def and_cuda_requirements(requires_dist: list[str]) -> dict[str, str]:
    """nvidia-* wheel -> its version specifier in the and-cuda extra ("==12.5.3.2", ">=12.5.3.2,<13.0")."""
    found: dict[str, str] = {}
    for text in requires_dist:
        requirement, _, marker = text.partition(";")
        if not re.search(r"extra\s*==\s*['\"]and[-_]cuda['\"]", marker):
            continue
        match = re.match(r"\s*(nvidia-[A-Za-z0-9_.-]+)\s*\(?([^)]*)\)?\s*$", requirement)
        if match:
            found[match.group(1).lower()] = match.group(2).replace(" ", "")
    return found


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def render(record: dict[str, Any]) -> str:
    return json.dumps(record, indent=1, sort_keys=False) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tfdoctor.knowledge.extract",
                                     description="Print the knowledge record of a TensorFlow wheel.")
    parser.add_argument("wheel", type=Path)
    parser.add_argument("-o", "--output", help="write the record to this file (- : standard output)")
    parser.add_argument("--force", action="store_true", help="replace an existing output file")
    parser.add_argument("--no-banners", action="store_true",
                        help="skip the scan for the NCCL banner and log lines (faster)")
    args = parser.parse_args(argv)
    from tfdoctor.fixes.write import STDOUT, WriteError, write_file

    output = args.output or STDOUT
    try:
        if not args.wheel.is_file():
            raise ExtractError(f"{args.wheel}: no such file")
        if output != STDOUT and Path(output).exists() and not args.force:
            raise ExtractError(f"{output} exists: add --force to replace it")
        try:
            record = extract(args.wheel, banners=not args.no_banners)
        except (zipfile.BadZipFile, zlib.error, EOFError) as exc:  # a damaged member: CRC, inflate, truncation
            raise ExtractError(f"{args.wheel}: a damaged zip member: {exc}") from None
        write_file(output, render(record), force=args.force)
    except (ExtractError, WriteError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def record_path(version: str) -> PurePosixPath:
    """Where a verified release's record lives in the repository."""
    return PurePosixPath("tests/data/wheel_records") / f"tensorflow-{version}.json"


if __name__ == "__main__":
    raise SystemExit(main())
