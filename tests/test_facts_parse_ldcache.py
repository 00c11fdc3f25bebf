"""The ld.so.cache parser against caches that ldconfig itself builds over a fake tree."""

from __future__ import annotations

import shutil
import struct
import subprocess

import pytest

from tfdoctor.facts.parse_ldcache import entries_for_machine, format_like_ldconfig, parse_ld_so_cache
from tfdoctor.testing.elf import shared_object

LDCONFIG = shutil.which("ldconfig") or shutil.which("/sbin/ldconfig")
needs_ldconfig = pytest.mark.skipif(LDCONFIG is None, reason="ldconfig is not installed")


def _tree(make_root):
    root = make_root("ldtree")
    for folder, files in {
        "/opt/cuda-12.2/lib64": {"libcudart.so.12.2.140": "libcudart.so.12",
                                 "libcublas.so.12.2.5.6": "libcublas.so.12"},
        "/opt/cudnn/lib": {"libcudnn.so.8.9.7": "libcudnn.so.8"},
        "/opt/cupti": {"libcupti.so.2023.2.2": "libcupti.so.12"},
    }.items():
        for filename, soname in files.items():
            root.write(f"{folder}/{filename}", shared_object(soname))
    root.write("/etc/ld.so.conf", "/opt/cuda-12.2/lib64\n/opt/cudnn/lib\n/opt/cupti\n")
    return root


def _build(root, layout: str) -> tuple[bytes, list[str]]:
    cache = f"/etc/ld.so.cache.{layout}"
    subprocess.run([LDCONFIG, "-r", str(root.path), "-c", layout, "-C", cache, "-f", "/etc/ld.so.conf"],
                   check=True, capture_output=True, timeout=30)
    host_file = root.path / cache.lstrip("/")
    printed = subprocess.run([LDCONFIG, "-p", "-C", str(host_file)], capture_output=True, text=True, check=True,
                             timeout=30).stdout
    lines = [line for line in printed.splitlines() if line.startswith("\t")]
    return host_file.read_bytes(), lines


@needs_ldconfig
@pytest.mark.parametrize("layout", ["new", "old", "compat"])
def test_parser_agrees_with_ldconfig_print_cache(make_root, layout):
    root = _tree(make_root)
    data, expected = _build(root, layout)
    found_layout, entries = parse_ld_so_cache(data)
    assert found_layout == layout
    assert format_like_ldconfig(entries) == expected
    assert {e.soname for e in entries} == {"libcudart.so.12", "libcublas.so.12", "libcudnn.so.8", "libcupti.so.12"}
    assert next(e.path for e in entries if e.soname == "libcupti.so.12") == "/opt/cupti/libcupti.so.12"


@needs_ldconfig
def test_ldconfig_created_the_soname_links_the_cache_points_at(make_root):
    root = _tree(make_root)
    _build(root, "new")
    assert (root.path / "opt/cudnn/lib/libcudnn.so.8").is_symlink()


def test_x86_64_entries_are_kept_and_foreign_ones_dropped():
    from tfdoctor.facts.parse_ldcache import CacheEntry

    entries = [CacheEntry("libfoo.so.1", 0x0303, "/lib64/libfoo.so.1"),
               CacheEntry("libfoo.so.1", 0x0003, "/lib32/libfoo.so.1"),  # i386
               CacheEntry("libfoo.so.1", 0x0a03, "/lib/aarch64/libfoo.so.1")]
    assert [e.path for e in entries_for_machine(entries, "x86_64")] == ["/lib64/libfoo.so.1"]
    assert [e.path for e in entries_for_machine(entries, "aarch64")] == ["/lib/aarch64/libfoo.so.1"]
    assert entries[0].flags_text == "libc6,x86-64"


@pytest.mark.parametrize("data, message", [
    (b"", "unknown magic"),
    (b"\x7fELF" + bytes(60), "unknown magic"),
    (b"glibc-ld.so.cache1.1" + bytes(8), "truncated"),
    (b"glibc-ld.so.cache1.1" + struct.pack("<II", 1000, 0) + bytes(24), "announces 1000 entries"),
    (b"glibc-ld.so.cache2.0" + bytes(40), "not 1.1"),
])
def test_malformed_caches_are_rejected_with_a_reason(data, message):
    with pytest.raises(ValueError, match=message):
        parse_ld_so_cache(data)
