"""The XLA_FLAGS names the installed TensorFlow's XLA registers, read from its own library — only when
that matters.

XLA's flag names are NUL-terminated strings in the .rodata section of libtensorflow_cc.so.2
(tensorflow/python/_pywrap_tensorflow_internal.so before 2.12; tfdoctor.facts.flag_strings). The library is
~700 MB and its .rodata ~45 MB: reading it costs about a second, scanning the whole file ~20 s. So it is read
only when XLA_FLAGS names an --xla_ flag that tfdoctor/knowledge/xla_flags.toml cannot settle — the
installed release has no row, or the row lacks a name (the row was read from another patch release's or
another build's wheel; a finding that XLA aborts should rest on the installed library itself) — and what is
read is kept in the cache folder (tfdoctor.facts.probes.pyenv_snapshot.cache_folder, its ownership rules)
under the library's stat (inode, size, mtime, ctime). With XLA_FLAGS unset nothing is imported or read.
Facts section "xla_flag_names": {"library", "tensorflow", "flags", "cached", "read_bytes"}, or Unknown with
why it was not read.
"""

from __future__ import annotations

from tfdoctor.facts import Unknown
from tfdoctor.facts.machine import Machine
from tfdoctor.registry import probe

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import Any

LIBRARIES = ("libtensorflow_cc.so.2", "python/_pywrap_tensorflow_internal.so")  # 2.12 on, then before
SECTION = ".rodata"
MAX_SECTION = 256 * 1024 * 1024  # 2.20's .rodata is 45 MB; a larger one is not read
READ_SECONDS = 4.0  # under the probe's timeout: a slow disk gives an Unknown, not an abandoned probe
CACHE_NAME = "xla-flag-names.json"
CACHE_ENTRIES = 8  # libraries whose lists are kept (a few environments' worth; ~8 KB each)
CACHE_FORMAT = 1  # raised whenever what is read or kept changes


def xla_names(raw: str) -> list[str]:
    """The --xla_ names of an XLA_FLAGS value, in order."""
    from tfdoctor.facts.parse import flag_tokens

    names = (token[2:].partition("=")[0] for token in flag_tokens(raw) if token.startswith("--"))
    return list(dict.fromkeys(name for name in names if name.startswith("xla_")))


def read_library_names(host_path: str, cache: str | None, shown: str | None = None) -> dict[str, Any] | Unknown:
    """The "xla_…" strings of a library's .rodata, from the cache when the file is unchanged. `shown`: the
    library's path on the machine probed, for the reasons (the host's path under --root)."""
    shown = shown or host_path
    import os
    import time

    from tfdoctor.facts.bounded import BudgetExceeded, RangeReader
    from tfdoctor.facts.elf import ElfError, find_section
    from tfdoctor.facts.flag_strings import CHUNK, XLA_NAME, names_in_range
    from tfdoctor.facts.probes.pyenv_snapshot import StatMemo, stat_key

    try:
        with RangeReader(host_path, MAX_SECTION + 1024 * 1024, limit=CHUNK,
                         deadline=time.monotonic() + READ_SECONDS) as read_at:
            key = stat_key(read_at.status)
            memo = StatMemo(os.path.join(cache, CACHE_NAME), CACHE_ENTRIES,
                            f"xla-flag-names/{CACHE_FORMAT}") if cache else None
            kept = memo.get(host_path, key) if memo is not None else None
            if isinstance(kept, list) and all(isinstance(n, str) for n in kept):
                return {"flags": kept, "cached": True, "read_bytes": 0}
            found = find_section(read_at, SECTION)
            if found is None:
                return Unknown(f"{shown} has no {SECTION} section")
            offset, size = found
            if size > MAX_SECTION:
                return Unknown(f"{shown}: {SECTION} is {size} bytes, more than {MAX_SECTION}: not read")
            names = names_in_range(read_at, offset, size, XLA_NAME, CHUNK)
    except ElfError as exc:
        return Unknown(f"{shown}: {exc}")
    except (BudgetExceeded, TimeoutError) as exc:
        return Unknown(f"{shown}: not read ({exc})")
    except OSError as exc:
        return Unknown(f"{shown} not readable: {exc.strerror or exc}")
    if not names:
        return Unknown(f"{shown}: no XLA flag name in its {SECTION}: not XLA's library")
    if memo is not None:
        memo.put(host_path, key, names)
        memo.save()
    return {"flags": names, "cached": False, "read_bytes": size}


def _installed(machine: Machine) -> tuple[str, str | None, str] | Unknown:
    """(site-packages folder, TensorFlow's version, its XLA library's path) of the TensorFlow the job imports."""
    import posixpath

    from tfdoctor.facts.probes.cuda_libs import TENSORFLOW_DISTS, dist_versions, site_packages
    from tfdoctor.facts.rooted_fs import RootedFs

    fs = RootedFs(machine)
    for folder in site_packages(machine, fs):
        if not fs.is_file(posixpath.join(folder, "tensorflow", "__init__.py")):
            continue
        versions = dist_versions(fs, folder)
        version = next((versions[d] for d in TENSORFLOW_DISTS if d in versions), None)
        for name in LIBRARIES:
            path = posixpath.join(folder, "tensorflow", name)
            if fs.is_file(path):
                return folder, version, path
        return Unknown(f"TensorFlow in {folder} has none of {', '.join(LIBRARIES)}")
    return Unknown("no TensorFlow installed in the site-packages folders looked at")


@probe("xla_flag_names", timeout=5.0)
def probe_xla_flag_names(machine: Machine) -> dict[str, Any] | Unknown:
    raw = machine.environ.get("XLA_FLAGS")
    if not raw or not raw.strip():
        return Unknown("XLA_FLAGS is unset: the installed XLA's flag list is not read")
    names = xla_names(raw)
    if not names:
        return Unknown("XLA_FLAGS names no --xla_ flag: the installed XLA's flag list is not read")
    installed = _installed(machine)
    if isinstance(installed, Unknown):
        return installed
    _folder, version, path = installed
    if version:
        from tfdoctor import knowledge

        # The table's rows are one release series each (">=2.20.0,<2.21.0rc0"): the series of the installed
        # version finds its row without derive's range parser, which a probe does not import. A miss here
        # costs only a read of the library; the checks judge by the rows' own ranges.
        series = version.split(".")[:2]
        row = next((r for r in knowledge.table_rows("xla_flags") if str(r["release"]).split(".")[:2] == series),
                   None)
        if row is not None and all(name in row["flags"] for name in names):
            return Unknown(f"every --xla_ name of XLA_FLAGS is in the TensorFlow {row['release']} list "
                           "(xla_flags.toml): the installed library is not read")
    from tfdoctor.facts.probes.pyenv_snapshot import cache_folder
    from tfdoctor.facts.rooted_fs import RootedFs

    # Keyed by the host's path: a --root tree's library is another file than the live one.
    read = read_library_names(RootedFs(machine).host_path(path), cache_folder(), shown=path)
    if isinstance(read, Unknown):
        return read
    return {"library": path, "tensorflow": version, **read}
