"""The installed XLA's own flag list (probe xla_flag_names, issue 36 item 1): read from the .rodata section of
libtensorflow_cc.so.2 only when XLA_FLAGS names an --xla_ flag tfdoctor/knowledge/xla_flags.toml cannot
settle, bounded, and kept in the cache folder under the library's stat."""

from __future__ import annotations

import importlib.util
import os
import struct
from pathlib import Path

import pytest
from support.fake_site_packages import FakeSitePackages

from tfdoctor.facts import Unknown
from tfdoctor.facts.elf import ElfError, bytes_reader, find_section
from tfdoctor.facts.flag_strings import TF_XLA_NAME, XLA_NAME, names_in_range
from tfdoctor.facts.probes import pyenv_snapshot, xla_flag_names
from tfdoctor.facts.probes.xla_flag_names import probe_xla_flag_names, read_library_names
from tfdoctor.testing.elf import shared_object

VENV = "/opt/venv"
SITE = f"{VENV}/lib/python3.11/site-packages"
# .rodata as the compiler lays it out: flag names among other literals, a flag's help text beside it, the
# serialized DebugOptions descriptor (names without a NUL after them: not counted), a "--" spelling.
RODATA = (b"is not integral: %s\x00xla_cpu_enable_fast_math\x00Enable unsafe fast-math\x00xla_dump_to\x00"
          b"FUSIBLE\x00tf_xla_auto_jit\x00\x0axla_gpu_graph_level\x18\x01\x00--xla_cpu_use_thunk_runtime\x00"
          b"no_xla_prefix_here\x00")
NAMES = ["xla_cpu_enable_fast_math", "xla_cpu_use_thunk_runtime", "xla_dump_to"]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv("TFDOCTOR_CACHE_DIR", str(folder))
    monkeypatch.setattr(pyenv_snapshot, "RACY_NS", 0)  # the library this test has just written counts as settled
    return folder


def _installed(make_root, version: str, rodata: bytes | None = RODATA, dist: str = "tensorflow-cpu"):
    root = make_root()
    site = FakeSitePackages(root.path / SITE.lstrip("/")).tensorflow(name=dist, version=version)
    if rodata is not None:
        root.write(f"{SITE}/tensorflow/libtensorflow_cc.so.2", shared_object("libtensorflow_cc.so.2", rodata=rodata))
    return root, site


def _probe(root, xla_flags: str | None):
    env = {"VIRTUAL_ENV": VENV, "PATH": f"{VENV}/bin:/usr/bin"}
    if xla_flags is not None:
        env["XLA_FLAGS"] = xla_flags
    return probe_xla_flag_names(root.machine(env))


# -- the section reader --------------------------------------------------------------------------------------

def test_find_section_locates_rodata_in_a_built_library():
    data = shared_object("libtensorflow_cc.so.2", rodata=RODATA)
    offset, size = find_section(bytes_reader(data), ".rodata")
    assert data[offset:offset + size] == RODATA
    assert find_section(bytes_reader(data), ".data.rel.ro") is None


def test_a_library_without_section_headers_has_no_section():
    assert find_section(bytes_reader(shared_object("libfoo.so.1")), ".rodata") is None


@pytest.mark.parametrize("patch, message", [
    ((60, "<H", 5000), "5000 section headers"),           # e_shnum beyond any real library
    ((62, "<H", 7), "names in section 7"),               # e_shstrndx past the table
    ((40, "<Q", 1 << 40), "section headers at byte"),    # e_shoff past the end of the file
])
def test_malformed_section_headers_raise(patch, message):
    data = bytearray(shared_object("libtensorflow_cc.so.2", rodata=RODATA))
    offset, form, value = patch
    struct.pack_into(form, data, offset, value)
    with pytest.raises(ElfError, match=message):
        find_section(bytes_reader(bytes(data)), ".rodata")


def test_names_are_found_across_reads_and_a_short_read_is_refused():
    filler = b"\x01" * 1000
    data = filler + b"\x00xla_split_across_reads\x00" + filler + b"tf_xla_cpu_global_jit\x00"
    assert names_in_range(bytes_reader(data), 0, len(data), XLA_NAME, chunk=1010) == ["xla_split_across_reads"]
    assert names_in_range(bytes_reader(data), 0, len(data), TF_XLA_NAME, chunk=7) == ["tf_xla_cpu_global_jit"]
    with pytest.raises(ElfError, match="run past the end of the file"):
        names_in_range(bytes_reader(data), 0, len(data) + 10)  # a list with names missing is no list


# -- when it reads ------------------------------------------------------------------------------------------

def test_nothing_is_read_when_xla_flags_is_unset(make_root, cache, monkeypatch):
    root, _ = _installed(make_root, "2.14.1")
    monkeypatch.setattr(xla_flag_names, "read_library_names", _must_not_read)
    assert _probe(root, None) == Unknown("XLA_FLAGS is unset: the installed XLA's flag list is not read")
    assert _probe(root, "  ") == Unknown("XLA_FLAGS is unset: the installed XLA's flag list is not read")
    assert _probe(root, "--tf_xla_auto_jit=2 word") == Unknown(
        "XLA_FLAGS names no --xla_ flag: the installed XLA's flag list is not read")


def test_nothing_is_read_when_the_table_settles_every_name(make_root, cache, monkeypatch):
    root, _ = _installed(make_root, "2.20.0")
    monkeypatch.setattr(xla_flag_names, "read_library_names", _must_not_read)
    assert _probe(root, "--xla_dump_to=/tmp/x --xla_cpu_use_thunk_runtime=false") == Unknown(
        "every --xla_ name of XLA_FLAGS is in the TensorFlow 2.20.0 list (xla_flags.toml): the installed library is "
        "not read")


def _must_not_read(*args):
    raise AssertionError("the library was read")


def test_a_release_outside_the_table_is_read_then_taken_from_the_cache(make_root, cache):
    root, _ = _installed(make_root, "2.14.1")
    first = _probe(root, "--xla_dump_to=/tmp/x --xla_gpu_autotune_level=0")
    library = f"{SITE}/tensorflow/libtensorflow_cc.so.2"
    assert first == {"library": library, "tensorflow": "2.14.1", "flags": NAMES, "cached": False,
                     "read_bytes": len(RODATA)}
    assert (cache / "xla-flag-names.json").is_file()
    assert _probe(root, "--xla_dump_to=/tmp/x")["cached"] is True
    assert _probe(root, "--xla_dump_to=/tmp/x") == {**first, "cached": True, "read_bytes": 0}


def test_a_name_the_table_lacks_reads_the_library_of_a_listed_release(make_root, cache):
    root, _ = _installed(make_root, "2.20.0")
    assert _probe(root, "--xla_dump_to=/tmp/x --xla_dump_too=/tmp/y")["flags"] == NAMES


def test_a_changed_library_is_read_again(make_root, cache):
    root, _ = _installed(make_root, "2.14.1")
    assert _probe(root, "--xla_dump_to=/tmp/x")["flags"] == NAMES
    root.write(f"{SITE}/tensorflow/libtensorflow_cc.so.2",
               shared_object("libtensorflow_cc.so.2", rodata=b"\x00xla_dump_to\x00xla_new_flag\x00"))
    assert _probe(root, "--xla_dump_to=/tmp/x") == {
        "library": f"{SITE}/tensorflow/libtensorflow_cc.so.2", "tensorflow": "2.14.1",
        "flags": ["xla_dump_to", "xla_new_flag"], "cached": False, "read_bytes": 26}


def test_without_a_cache_folder_every_run_reads(make_root, cache, monkeypatch):
    monkeypatch.setenv("TFDOCTOR_CACHE_DIR", "")
    root, _ = _installed(make_root, "2.14.1")
    assert _probe(root, "--xla_dump_to=/tmp/x")["cached"] is False
    assert _probe(root, "--xla_dump_to=/tmp/x")["cached"] is False
    assert not (cache / "xla-flag-names.json").exists()


def test_a_cache_another_user_could_write_is_not_trusted(make_root, cache):
    root, _ = _installed(make_root, "2.14.1")
    _probe(root, "--xla_dump_to=/tmp/x")
    kept = cache / "xla-flag-names.json"
    text = kept.read_text().replace('"xla_dump_to"', '"xla_planted_name"')
    kept.write_text(text)
    os.chmod(kept, 0o666)  # others may write it: what it says is not taken
    assert _probe(root, "--xla_dump_to=/tmp/x")["flags"] == NAMES


@pytest.mark.parametrize("rodata, reason", [
    (None, "ELF identification at byte 0 runs past the end of the file"),  # FakeSitePackages' 4-byte stand-in
    (b"\x00plain strings\x00", "no XLA flag name in its .rodata: not XLA's library"),
])
def test_a_library_that_cannot_give_a_list_is_unknown(make_root, cache, rodata, reason):
    root, _ = _installed(make_root, "2.14.1", rodata=rodata)
    read = _probe(root, "--xla_dump_to=/tmp/x")
    assert read == Unknown(f"{SITE}/tensorflow/libtensorflow_cc.so.2: {reason}")


def test_a_section_past_the_size_bound_is_not_read(make_root, cache, monkeypatch):
    monkeypatch.setattr(xla_flag_names, "MAX_SECTION", len(RODATA) - 1)
    root, _ = _installed(make_root, "2.14.1")
    read = _probe(root, "--xla_dump_to=/tmp/x")
    assert read == Unknown(f"{SITE}/tensorflow/libtensorflow_cc.so.2: .rodata is {len(RODATA)} bytes, more than "
                           f"{len(RODATA) - 1}: not read")


def test_a_read_past_its_time_is_unknown(make_root, cache, monkeypatch):
    monkeypatch.setattr(xla_flag_names, "READ_SECONDS", -1.0)  # a disk slower than the time allowed
    root, _ = _installed(make_root, "2.14.1")
    assert _probe(root, "--xla_dump_to=/tmp/x") == Unknown(
        f"{SITE}/tensorflow/libtensorflow_cc.so.2: not read (reading took longer than the time allowed)")
    assert not (cache / "xla-flag-names.json").exists()


def test_no_tensorflow_is_unknown(make_root, cache):
    assert _probe(make_root(), "--xla_dump_to=/tmp/x") == Unknown(
        "no TensorFlow installed in the site-packages folders looked at")


# -- a real library ------------------------------------------------------------------------------------------

def _real_library() -> Path | None:
    """libtensorflow_cc.so.2 of an installed TensorFlow: TFDOCTOR_TEST_TENSORFLOW_SITE (a site-packages
    folder, e.g. of a scratch venv with `pip install tensorflow-cpu==2.20.0`), else this interpreter's."""
    site = os.environ.get("TFDOCTOR_TEST_TENSORFLOW_SITE")
    if site:
        folder = Path(site) / "tensorflow"
    else:
        spec = importlib.util.find_spec("tensorflow")  # found, not imported
        if spec is None or not spec.submodule_search_locations:
            return None
        folder = Path(next(iter(spec.submodule_search_locations)))
    library = folder / "libtensorflow_cc.so.2"
    return library if library.is_file() else None


def test_a_real_library_gives_its_releases_list(tmp_path):
    library = _real_library()
    if library is None:
        pytest.skip("no TensorFlow wheel installed (TFDOCTOR_TEST_TENSORFLOW_SITE names one's site-packages)")
    from tfdoctor import knowledge
    from tfdoctor.derive.release_knowledge import release_row

    site = library.parent.parent
    dist = next(site.glob("tensorflow*-*.dist-info"))
    version = dist.name.split("-")[1].removesuffix(".dist-info")
    read = read_library_names(str(library), None)
    assert not isinstance(read, Unknown), read
    assert {"xla_dump_to", "xla_cpu_enable_fast_math"} <= set(read["flags"])
    row = release_row(knowledge.table_rows("xla_flags"), version)
    if row is not None and row["release"] == version:
        # .rodata alone holds what the whole wheel's scan found (tfdoctor.knowledge.xla_flag_list)
        assert read["flags"] == row["flags"]
