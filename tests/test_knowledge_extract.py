"""`python -m tfdoctor.knowledge.extract WHEEL` on a small synthetic wheel (a zip with a fake ELF .so whose
RUNPATH and NCCL banner are written here, build_info.py and METADATA), and the bounded ELF reader it
shares with the cuda_libs probe."""

from __future__ import annotations

import json
import os
import struct
import zipfile
from pathlib import Path

import pytest

from tfdoctor.facts import Unknown
from tfdoctor.facts.bounded import BudgetExceeded, RangeReader, SpecialFileError
from tfdoctor.facts.elf import ElfError, bytes_reader, expand_origin, read_dynamic
from tfdoctor.knowledge import extract
from tfdoctor.testing.elf import shared_object

RUNPATH = ("$ORIGIN/../../nvidia/nccl/lib", "$ORIGIN/../nvidia/nccl/lib", "$ORIGIN/../nvidia/cublas/lib",
           "$ORIGIN/../nvidia/cublas/lib")  # Bazel repeats entries; the record keeps the first of each
BUILD_INFO = ("import collections\nbuild_info = collections.OrderedDict([('cuda_compute_capabilities', "
              "['sm_80', 'compute_90']), ('cuda_version', '12.8.1'), ('cudnn_version', '9'), "
              "('is_cuda_build', True), ('is_rocm_build', False), ('cpu_compiler', '/usr/bin/clang')])\n")
METADATA = """Metadata-Version: 2.1
Name: tensorflow
Version: 2.99.0
Requires-Python: >=3.10
Requires-Dist: numpy >=1.26.0
Requires-Dist: nvidia-cudnn-cu12 (==9.8.0.87) ; extra == 'and-cuda'
Requires-Dist: nvidia-nccl-cu12<3,>=2.26.2; extra == "and-cuda"
Requires-Dist: nvidia-cublas-cu12==12.8.4.1; extra == "other"

TensorFlow is …
"""


def _wheel(tmp_path: Path, filler: int = 3 << 20, banner: bytes = b"NCCL version 2.26.2+cuda12.8") -> Path:
    """A wheel whose framework carries a RUNPATH, then `filler` bytes, then NCCL's banner (as a static NCCL
    leaves it in .rodata); libtensorflow_cc.so.2 is not an ELF file at all."""
    framework = shared_object("libtensorflow_framework.so.2", needed=("libc.so.6",), runpath=RUNPATH)
    framework += os.urandom(filler) + banner + b"\0Local rendezvous is aborting with status\0"
    path = tmp_path / "tensorflow-2.99.0-cp311-cp311-manylinux_2_27_x86_64.whl"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("tensorflow/libtensorflow_framework.so.2", framework)
        archive.writestr("tensorflow/libtensorflow_cc.so.2", b"this is not an ELF file at all")
        archive.writestr("tensorflow/python/platform/build_info.py", BUILD_INFO)
        archive.writestr("tensorflow-2.99.0.dist-info/METADATA", METADATA)
    return path


def test_extract_writes_the_record_of_a_synthetic_wheel(tmp_path, capsys):
    wheel = _wheel(tmp_path)
    out = tmp_path / "record.json"
    assert extract.main([str(wheel), "-o", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["version"] == "2.99.0" and record["requires_python"] == ">=3.10"
    assert record["build_info"] == {"cuda_version": "12.8.1", "cudnn_version": "9", "is_cuda_build": True,
                                    "cuda_compute_capabilities": ["sm_80", "compute_90"], "is_rocm_build": False}
    assert record["and_cuda"] == {"nvidia-cudnn-cu12": "==9.8.0.87", "nvidia-nccl-cu12": "<3,>=2.26.2"}
    framework = record["libraries"]["tensorflow/libtensorflow_framework.so.2"]
    assert framework["runpath"] == ["$ORIGIN/../../nvidia/nccl/lib", "$ORIGIN/../nvidia/nccl/lib",
                                    "$ORIGIN/../nvidia/cublas/lib"]
    assert framework["needed"] == ["libc.so.6"] and framework["soname"] == "libtensorflow_framework.so.2"
    assert framework["nccl_banner"] == "2.26.2+cuda12.8"
    assert framework["messages"] == ["local-rendezvous-end-of-sequence"]
    cc = record["libraries"]["tensorflow/libtensorflow_cc.so.2"]
    assert cc["error"] == "not an ELF file" and cc["nccl_banner"] is None
    assert record["sha256"] == __import__("hashlib").sha256(wheel.read_bytes()).hexdigest()
    assert capsys.readouterr().out == ""


def test_a_banner_split_across_chunks_and_a_read_behind_the_stream_are_found(tmp_path, monkeypatch):
    """Small chunks: the banner straddles two of them, and the strings (before the dynamic segment in a
    real library) need the member reopened."""
    monkeypatch.setattr(extract, "CHUNK", 4096)
    monkeypatch.setattr(extract, "KEEP", 4096)
    wheel = _wheel(tmp_path, filler=4096 * 3 - 10)
    record = extract.extract(wheel)
    framework = record["libraries"]["tensorflow/libtensorflow_framework.so.2"]
    assert framework["nccl_banner"] == "2.26.2+cuda12.8" and framework["runpath"][0] == RUNPATH[0]


def test_member_reader_skips_forward_and_reopens_backward(tmp_path, monkeypatch):
    monkeypatch.setattr(extract, "CHUNK", 1000)
    monkeypatch.setattr(extract, "KEEP", 1000)
    data = bytes(range(256)) * 100
    path = tmp_path / "a.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("x", data)
    with zipfile.ZipFile(path) as archive:
        read_at = extract.MemberReader(archive, archive.getinfo("x"))
        assert read_at(20000, 10) == data[20000:20010]
        assert read_at(5, 10) == data[5:15]  # behind what was kept: reopened
        assert read_at(25590, 100) == data[25590:]  # past the end: what there is
        read_at.close()


def test_bad_input_is_exit_2_with_one_line(tmp_path, capsys):
    not_a_zip = tmp_path / "x.whl"
    not_a_zip.write_text("hello")
    assert extract.main([str(not_a_zip)]) == 2
    assert capsys.readouterr().err.startswith(f"error: {not_a_zip} is not a wheel (a zip file)")
    assert extract.main([str(tmp_path / "missing.whl")]) == 2
    empty = tmp_path / "empty.whl"
    with zipfile.ZipFile(empty, "w") as archive:
        archive.writestr("other/__init__.py", "")
    assert extract.main([str(empty)]) == 2
    assert "not a TensorFlow wheel" in capsys.readouterr().err
    out = tmp_path / "record.json"
    out.write_text("mine")
    assert extract.main([str(_wheel(tmp_path, filler=10)), "-o", str(out)]) == 2
    assert out.read_text() == "mine" and "add --force" in capsys.readouterr().err


# -- the ELF reader ---------------------------------------------------------------------------------

def test_read_dynamic_of_a_fake_shared_object():
    dynamic = read_dynamic(bytes_reader(shared_object("libx.so.1", needed=("liba.so", "libb.so"),
                                                      runpath=("$ORIGIN/", "/opt/lib"))))
    assert dynamic.as_dict() == {"needed": ["liba.so", "libb.so"], "runpath": ["$ORIGIN/", "/opt/lib"],
                                 "rpath": [], "soname": "libx.so.1"}


@pytest.mark.parametrize("data, reason", [
    (b"\x7fELF", "runs past the end"),
    (b"#!/bin/sh\n" + bytes(64), "not an ELF file"),
    (b"\x7fELF" + bytes([3, 1]) + bytes(58), "unknown ELF class 3"),
    (shared_object("libx.so")[:64] + bytes(200), "no dynamic segment"),
])
def test_malformed_elf_files_raise_elf_error(data, reason):
    with pytest.raises(ElfError, match=reason):
        read_dynamic(bytes_reader(data))


def test_a_string_offset_beyond_the_table_is_refused():
    data = bytearray(shared_object("libx.so"))
    # DT_SONAME's value (the first dynamic entry, at 64 + 2 * 56) pointed past DT_STRSZ.
    struct.pack_into("<Q", data, 64 + 2 * 56 + 8, 10_000)
    with pytest.raises(ElfError, match="beyond the string table"):
        read_dynamic(bytes_reader(bytes(data)))


def test_range_reader_is_bounded_and_refuses_fifos(tmp_path):
    big = tmp_path / "big.so"
    big.write_bytes(shared_object("libbig.so", runpath=("$ORIGIN/",)) + bytes(10 << 20))
    with RangeReader(big, budget=4096) as read_at:
        assert read_dynamic(read_at).soname == "libbig.so"
        assert read_at.left < 4096  # a few hundred bytes of a 10 MB file
        with pytest.raises(BudgetExceeded):
            read_at(0, 4096)
    fifo = tmp_path / "fifo.so"
    os.mkfifo(fifo)
    with pytest.raises(SpecialFileError):
        RangeReader(fifo, budget=4096)


def test_expand_origin():
    assert expand_origin("$ORIGIN/../nvidia/cublas/lib", "/v/site-packages/tensorflow") == \
        "/v/site-packages/nvidia/cublas/lib"
    assert expand_origin("${ORIGIN}/", "/v/tf") == "/v/tf"
    assert expand_origin("relative/dir", "/v/tf") == "relative/dir"


def test_probe_reads_the_installed_framework_and_says_why_it_cannot(make_root):
    from tfdoctor.facts.probes import cuda_libs
    from tfdoctor.facts.rooted_fs import RootedFs

    root = make_root()
    site = "/venv/lib/python3.11/site-packages"
    root.write(f"{site}/tensorflow/libtensorflow_framework.so.2",
               shared_object("libtensorflow_framework.so.2", runpath=RUNPATH))
    root.write(f"{site}/tensorflow/libtensorflow_cc.so.2", b"\x7fELF garbage")
    found = cuda_libs.tensorflow_libraries(RootedFs(root.machine({})), site)
    assert found["libtensorflow_framework.so.2"]["runpath"][1] == "$ORIGIN/../nvidia/nccl/lib"
    assert isinstance(found["libtensorflow_cc.so.2"], Unknown)
    assert "libtensorflow_cc.so.2" in found["libtensorflow_cc.so.2"].reason
    assert "python/_pywrap_tensorflow_internal.so" not in found  # absent files are not listed
    assert cuda_libs.nccl_linkage({"libraries": found}) == (
        "dynamic", "libtensorflow_framework.so.2's RUNPATH names $ORIGIN/../../nvidia/nccl/lib")


# -- docs/maintaining-knowledge.md ------------------------------------------------------------------------

DOC = Path(__file__).resolve().parent.parent / "docs" / "maintaining-knowledge.md"


def test_the_documented_command_runs_as_written(tmp_path):
    """The page's one command, with the synthetic wheel and a temporary output in place of its paths."""
    import shlex
    import subprocess
    import sys

    (line,) = [ln.strip() for ln in DOC.read_text().splitlines() if ln.startswith("    python -m tfdoctor.")]
    argv = shlex.split(line)
    assert argv[:3] == ["python", "-m", "tfdoctor.knowledge.extract"] and argv[4] == "-o"
    wheel, out = _wheel(tmp_path, filler=100), tmp_path / "tensorflow-2.99.0.json"
    done = subprocess.run([sys.executable, *argv[1:3], str(wheel), "-o", str(out)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text())["version"] == "2.99.0"
    printed = subprocess.run([sys.executable, *argv[1:3], str(wheel), "-o", "-", "--no-banners"],
                             capture_output=True, text=True, timeout=120)
    assert "nccl_banner" not in json.loads(printed.stdout)["libraries"]["tensorflow/libtensorflow_framework.so.2"]


def test_the_page_lists_the_committed_records():
    listed = DOC.read_text().split("Records are committed for ", 1)[1].split(".\n", 1)[0]
    versions = [v.strip() for v in listed.replace(" and ", ", ").split(",")]
    committed = sorted(p.name.removeprefix("tensorflow-").removesuffix(".json")
                       for p in (DOC.parent.parent / "tests" / "data" / "wheel_records").glob("*.json"))
    assert sorted(versions) == committed


def test_a_planted_fifo_or_endless_string_is_unknown_not_a_hang(make_root):
    """Hostile trees: the framework a FIFO (never opened for reading), or an ELF whose string never ends
    within its bound (the read stops at MAX_STRING)."""
    from tfdoctor.facts.probes import cuda_libs
    from tfdoctor.facts.rooted_fs import RootedFs

    root = make_root()
    site = "/venv/lib/python3.11/site-packages"
    (root.path / site.lstrip("/") / "tensorflow").mkdir(parents=True)
    os.mkfifo(root.path / site.lstrip("/") / "tensorflow" / "libtensorflow_framework.so.2")
    endless = bytearray(shared_object("libtensorflow_cc.so.2"))
    endless[-1:] = b"x"  # the SONAME loses its NUL ...
    endless += b"y" * (300 * 1024)  # ... and runs past MAX_STRING
    struct.pack_into("<Q", endless, 64 + 2 * 56 + 16 * 2 + 8, len(endless))  # DT_STRSZ: the whole file
    root.write(f"{site}/tensorflow/libtensorflow_cc.so.2", bytes(endless))
    found = cuda_libs.tensorflow_libraries(RootedFs(root.machine({})), site)
    assert set(found) == {"libtensorflow_cc.so.2"}  # a FIFO is not a regular file: not even listed
    assert "longer than" in found["libtensorflow_cc.so.2"].reason


def test_a_damaged_member_is_exit_2_not_a_traceback(tmp_path, capsys):
    wheel = _wheel(tmp_path, filler=1 << 16)
    with zipfile.ZipFile(wheel) as archive:
        info = archive.getinfo("tensorflow/libtensorflow_framework.so.2")
    data = bytearray(wheel.read_bytes())
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)  # the member's compressed bytes
    data[start + 100: start + 400] = bytes(300)  # inflate fails, or the CRC does
    wheel.write_bytes(bytes(data))
    assert extract.main([str(wheel)]) == 2
    assert capsys.readouterr().err.startswith(f"error: {wheel}: a damaged zip member: ")


def test_range_reader_reads_nothing_past_the_end(tmp_path):
    """A crafted ELF header can name any offset up to 2**64: past the file it reads nothing, never overflows."""
    path = tmp_path / "small.so"
    path.write_bytes(b"0123456789")
    with RangeReader(path, budget=1024) as read:
        assert read(2, 3) == b"234"
        assert read(2**63 + 5, 4) == b"" and read(10, 4) == b""
