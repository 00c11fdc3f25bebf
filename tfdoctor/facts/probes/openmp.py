"""Every OpenMP runtime (libiomp5, libomp, libgomp, hash-suffixed copies) a process of this environment
can load, and the installed distribution that brought each one.

Where it looks, cheapest first:

- one listing of each `LD_LIBRARY_PATH` folder and of `{prefix}/lib` (conda and `intel-openmp` put the
  runtime there; a conda package that did is named from `{prefix}/conda-meta`);
- in each site folder, the `RECORD` of every binary wheel (`WHEEL` tags not `*-none-any`): a RECORD
  lists every file the wheel installed, at any depth, so `torch/lib/libgomp-a34b3233.so.1`, a copy
  deep inside a package and `../../../lib/libiomp5.so` (data files) are all found, with their owner;
- a bounded walk of the site folder's directories that no distribution claims (by its name, its
  `top_level.txt` or a RECORD entry): eggs, copied trees, packages installed without metadata.

Bounded in count and time (`tfdoctor check` is a pre-job hook): at most MAX_RECORDS RECORDs of at most
MAX_RECORD_BYTES each, MAX_WALK_DIRS directories MAX_WALK_DEPTH deep, and DEADLINE_S seconds in all; a
bound that was hit is named in `incomplete`, so a check can say the list may be partial.

Facts section "openmp" (documented in docs/threads.md):
    {"runtimes": [{"runtime", "path", "real_path", "owner", "owner_version", "found_by"}],
     "scanned": {"folders", "records", "records_kept" (of the records, those whose hits were kept from an
                 earlier run), "record_bytes", "walked_dirs", "seconds"}, "incomplete": [reason],
     "tensorflow_links": {path of a TensorFlow shared object: [the OpenMP runtimes its DT_NEEDED names]}}
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
import sys
import time

from tfdoctor.facts import Unknown
from tfdoctor.facts.machine import Machine
from tfdoctor.facts.rooted_fs import RootedFs
from tfdoctor.records import value_tuple
from tfdoctor.registry import probe

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import Any

MAX_RECORDS = 400
MAX_RECORD_BYTES = 16 * 1024 * 1024
MAX_WALK_DIRS = 2000
MAX_WALK_DEPTH = 8
MAX_LIBRARY_PATH_ENTRIES = 64
DEADLINE_S = 0.5

_DIST_INFO = re.compile(r"^(?P<name>.+?)-(?P<version>[0-9][^-]*?)\.dist-info$")
_CONDA_META = re.compile(r"^(?P<name>.+)-(?P<version>[^-]+)-(?P<build>[^-]+)\.json$")
_SKIP_WALK = ("__pycache__", "include", "tests", "test")


@value_tuple
class RuntimeNames:
    """From the knowledge table: which file names are which runtime, and the conda packages of each."""

    pattern: re.Pattern[str]  # a stem, a hash suffix as auditwheel/delocate add it, then .so[.N], .dylib, .dll
    needles: re.Pattern[bytes]  # any stem, for one pass over a RECORD's bytes
    runtime_of_stem: dict[str, str]
    conda_packages: dict[str, tuple[str, ...]]

    def runtime_of(self, filename: str) -> str | None:
        match = self.pattern.match(filename)
        return self.runtime_of_stem[match.group("stem")] if match else None


def runtime_names() -> RuntimeNames:
    from tfdoctor.knowledge import table_rows

    stems: dict[str, str] = {}
    conda: dict[str, tuple[str, ...]] = {}
    for row in table_rows("openmp_runtimes"):
        stems.update({stem: row["runtime"] for stem in row["files"]})
        conda[row["runtime"]] = tuple(row.get("conda_packages", ()))
    alternatives = "|".join(sorted((re.escape(s) for s in stems), key=len, reverse=True))
    pattern = re.compile(
        rf"^(?P<stem>{alternatives})(?:-[0-9A-Za-z]+)?(?:\.so(?:\.[0-9]+)*|(?:\.[0-9]+)?\.dylib|\.dll)$")
    return RuntimeNames(pattern, re.compile(alternatives.encode()), stems, conda)


class _Scan:
    def __init__(self, machine: Machine) -> None:
        self.machine = machine
        self.fs = RootedFs(machine)
        self.names = runtime_names()
        self.found: dict[str, dict[str, Any]] = {}  # real path -> record
        self.incomplete: list[str] = []
        self.counts = {"folders": 0, "records": 0, "records_kept": 0, "record_bytes": 0, "walked_dirs": 0}
        self.deadline = time.monotonic() + DEADLINE_S
        self.host_prefix = "" if machine.is_live else os.fspath(machine.root).rstrip("/")
        self.kept = _kept_hits(machine, self.names)

    def out_of_time(self, where: str) -> bool:
        if time.monotonic() < self.deadline:
            return False
        reason = f"stopped after {DEADLINE_S:g} s ({where})"
        if reason not in self.incomplete:
            self.incomplete.append(reason)
        return True

    def add(self, path: str, found_by: str, owner: tuple[str, str] | None = None) -> None:
        runtime = self.names.runtime_of(posixpath.basename(path))
        if runtime is None or not self.fs.is_file(path):
            return
        real = self.fs.realpath(path) or path
        known = self.found.get(real)
        if known is not None:  # libgomp.so.1 -> libgomp.so.1.0.0 is one runtime; keep the owner if any
            if owner and not known["owner"]:
                known["owner"], known["owner_version"] = owner
            return
        self.found[real] = {"runtime": runtime, "path": path, "real_path": real,
                            "owner": owner[0] if owner else None, "owner_version": owner[1] if owner else None,
                            "found_by": found_by}

    def list_folder(self, folder: str, found_by: str, owner: tuple[str, str] | None = None) -> None:
        self.counts["folders"] += 1
        for entry in self.fs.listdir(folder):
            if self.names.pattern.match(entry):
                self.add(posixpath.join(folder, entry), found_by, owner)


def _read_bounded(host: str, limit: int) -> bytes | None:
    """At most `limit` bytes of a file given by its host path (os.read: an open() with its buffered layers
    costs more than the read of a small metadata file)."""
    try:
        fd = os.open(host, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO planted in site-packages cannot hold the scan
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks, size = [], 0
        while size < limit:
            chunk = os.read(fd, min(1 << 20, limit - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _binary_wheel(host_dist_info: str) -> bool:
    """A wheel with a platform tag can bundle shared libraries; "py3-none-any" ones cannot. A dist without
    WHEEL (an egg, a develop install) is read too: nothing says it is pure."""
    text = _read_bounded(host_dist_info + "/WHEEL", 8192)
    if text is None:
        return True
    tags = [line.split(b":", 1)[1].strip() for line in text.splitlines() if line.startswith(b"Tag:")]
    return not tags or not all(tag.endswith(b"-none-any") for tag in tags)


# A RECORD's hits are kept between runs of a live check with the RECORD's stat (pyenv_snapshot.StatMemo,
# the cache the RECORD verification keeps too): searching TensorFlow's 1.8 MB RECORD is most of this
# probe's time, and a RECORD is only rewritten by an install. Under --root nothing is kept.
KEPT_HITS_NAME = "openmp-record-hits.json"


def _kept_hits(machine: Machine, names: RuntimeNames) -> Any:
    """Tagged with the stems searched for: a knowledge table that names another runtime file finds them."""
    from tfdoctor.facts.probes.pyenv_snapshot import StatMemo, cache_folder

    folder = cache_folder() if machine.is_live else None
    tag = "openmp-record-hits/1:" + names.needles.pattern.decode(errors="replace")
    return StatMemo(os.path.join(folder, KEPT_HITS_NAME), MAX_RECORDS, tag) if folder else None


def _record_hits(scan: _Scan, host_record: str, entry: str) -> list[str] | None:
    """The paths of a RECORD's lines that name a runtime stem; None when there is no RECORD. The file is
    mapped, not read: a TensorFlow wheel's RECORD is about 2 MB, and copying it costs more than the search.
    Kept in scan.kept with the RECORD's stat while it is unchanged."""
    from tfdoctor.facts.probes.pyenv_snapshot import stat_key

    try:
        fd = os.open(host_record, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO has size 0: no hits, no wait
    except OSError:
        return None
    try:
        status = os.fstat(fd)
        size = status.st_size
        scan.counts["records"] += 1
        scan.counts["record_bytes"] += size
        if size > MAX_RECORD_BYTES:
            scan.incomplete.append(f"{entry}/RECORD is larger than {MAX_RECORD_BYTES} bytes: read in part")
        if size == 0:
            return []
        key = stat_key(status)
        kept = scan.kept.get(host_record, key) if scan.kept is not None and stat.S_ISREG(status.st_mode) else None
        if isinstance(kept, list) and all(isinstance(path, str) for path in kept):
            scan.counts["records_kept"] += 1
            return kept
        import mmap  # here: a RECORD whose hits were kept is not read

        with mmap.mmap(fd, min(size, MAX_RECORD_BYTES), prot=mmap.PROT_READ) as data:
            paths = []
            for hit in scan.names.needles.finditer(data):
                start = data.rfind(b"\n", 0, hit.start()) + 1
                end = data.find(b"\n", hit.end())
                line = data[start:end if end >= 0 else len(data)]
                paths.append(line.split(b",", 1)[0].decode(errors="replace"))
        if scan.kept is not None and size <= MAX_RECORD_BYTES:
            scan.kept.put(host_record, key, paths)
        return paths
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)


_SEPARATORS = re.compile(r"[-_.]+")


def _normalize(name: str) -> str:
    return _SEPARATORS.sub("_", name).lower()


def _scan_site(scan: _Scan, site: str) -> None:
    fs = scan.fs
    site = fs.realpath(site) or site  # resolved once: everything below is read relative to it
    # Under --root the root is joined as a string: pathlib would cost more than the reads themselves.
    host_site = scan.host_prefix + site
    try:
        with os.scandir(host_site) as listing:
            kinds = {e.name: e.is_dir() for e in listing}
    except OSError:
        return
    entries = sorted(kinds)
    dists = [(e, m) for e in entries if (m := _DIST_INFO.match(e))]
    claimed = {_normalize(m.group("name")) for _, m in dists}
    for entry, match in dists:
        if scan.out_of_time("reading RECORD files") or not _binary_wheel(f"{host_site}/{entry}"):
            continue
        if scan.counts["records"] >= MAX_RECORDS:
            if f"more than {MAX_RECORDS} RECORD files" not in scan.incomplete:
                scan.incomplete.append(f"more than {MAX_RECORDS} RECORD files")
            continue
        hits = _record_hits(scan, f"{host_site}/{entry}/RECORD", entry)
        if hits is None:
            continue
        owner = (match.group("name").replace("_", "-").lower(), match.group("version"))
        for relative in hits:
            if scan.names.runtime_of(posixpath.basename(relative)) is not None:
                scan.add(posixpath.normpath(posixpath.join(site, relative)), "record", owner)
    unclaimed = {e for e in entries if kinds[e] and _normalize(e.removesuffix(".libs")) not in claimed}
    if unclaimed:
        # Import names that differ from the distribution's (sklearn for scikit-learn, pkg_resources for
        # setuptools): top_level.txt, read only when some folder is still unclaimed.
        for entry, _match in dists:
            top_level = _read_bounded(f"{host_site}/{entry}/top_level.txt", 65536) or b""
            claimed.update(_normalize(t.decode(errors="replace").strip().split("/")[0])
                           for t in top_level.splitlines() if t.strip())
    # Directories no distribution claims: walked, within the bounds.
    queue = [(posixpath.join(site, e), 1) for e in entries
             if not e.endswith((".dist-info", ".egg-info", ".pth")) and e not in _SKIP_WALK
             and _normalize(e.removesuffix(".libs")) not in claimed and kinds[e]]
    # Folders named like an owned package plus ".libs" (auditwheel) are listed once, owner unknown.
    queue += [(posixpath.join(site, e), MAX_WALK_DEPTH) for e in entries
              if e.endswith(".libs") and kinds[e] and _normalize(e.removesuffix(".libs")) in claimed]
    while queue:
        folder, depth = queue.pop(0)
        if scan.out_of_time("walking unclaimed folders"):
            return
        if scan.counts["walked_dirs"] >= MAX_WALK_DIRS:
            scan.incomplete.append(f"more than {MAX_WALK_DIRS} unclaimed folders under {site}")
            return
        scan.counts["walked_dirs"] += 1
        try:
            with os.scandir(scan.host_prefix + folder) as listing:
                children = [(c.name, c.is_dir(follow_symlinks=False)) for c in listing]
        except OSError:
            continue
        for name, is_dir in sorted(children):
            path = posixpath.join(folder, name)
            if is_dir:
                if depth < MAX_WALK_DEPTH and name not in _SKIP_WALK:
                    queue.append((path, depth + 1))
            elif scan.names.pattern.match(name):
                scan.add(path, "walk")


def site_folders(machine: Machine, fs: RootedFs, prefix: str | None) -> list[str]:
    """The site folders the job's interpreter imports from: this interpreter's path (live, no --python),
    else those under the environment's prefix (--python's, $VIRTUAL_ENV, $CONDA_PREFIX)."""
    found: list[str] = []
    if machine.is_live and not machine.python:
        from tfdoctor.facts.probes.pyenv_snapshot import environment_path

        stdlib = os.path.dirname(os.__file__)
        for entry in environment_path():  # sys.path without the running script's folder
            inside = entry == stdlib or entry.startswith(stdlib + os.sep)
            if entry and not entry.endswith(".zip") and (not inside or "-packages" in entry) and os.path.isdir(entry):
                found.append(entry)
    elif prefix:
        lib = posixpath.join(prefix, "lib")
        for entry in fs.listdir(lib):
            if entry.startswith("python3"):
                for leaf in ("site-packages", "dist-packages"):
                    if fs.is_dir(posixpath.join(lib, entry, leaf)):
                        found.append(posixpath.join(lib, entry, leaf))
    return list(dict.fromkeys(found))


def environment_prefix(machine: Machine) -> str | None:
    if machine.python:
        from tfdoctor.facts.probes.cuda_libs import python_prefix

        return python_prefix(machine)  # --python under --root means what it means to every probe
    if machine.is_live:
        return sys.prefix
    return machine.environ.get("VIRTUAL_ENV") or machine.environ.get("CONDA_PREFIX")


def _conda_owner(scan: _Scan, prefix: str, runtime: str) -> tuple[str, str] | None:
    wanted = scan.names.conda_packages.get(runtime, ())
    for entry in scan.fs.listdir(posixpath.join(prefix, "conda-meta")):
        match = _CONDA_META.match(entry)
        if match and match.group("name") in wanted:
            return f"{match.group('name')} (conda)", match.group("version")
    return None


def tensorflow_links(scan: _Scan, sites: list[str]) -> dict[str, Any]:
    """The OpenMP runtimes TensorFlow's own shared objects NEED (DT_NEEDED, read from the ELF files: a few
    bounded reads each), by path: what the build links decides its threading model, whatever its name. A
    file that cannot be read as ELF is Unknown with the reason."""
    from tfdoctor.facts.probes.cuda_libs import tensorflow_libraries

    found: dict[str, Any] = {}
    for site in sites:
        if not scan.fs.is_dir(posixpath.join(site, "tensorflow")):
            continue
        for name, dynamic in tensorflow_libraries(scan.fs, site).items():
            path = posixpath.join(site, "tensorflow", name)
            if isinstance(dynamic, dict):
                found[path] = [n for n in dynamic.get("needed", []) if scan.names.runtime_of(n) is not None]
            else:
                found[path] = dynamic
        break  # the first site holding the package is the one imported
    return found


@probe("openmp")
def probe_openmp(machine: Machine) -> dict[str, Any] | Unknown:
    started = time.perf_counter()
    scan = _Scan(machine)
    prefix = environment_prefix(machine)
    library_path = [d for d in machine.environ.get("LD_LIBRARY_PATH", "").split(":") if d.startswith("/")]
    if len(library_path) > MAX_LIBRARY_PATH_ENTRIES:
        scan.incomplete.append(f"LD_LIBRARY_PATH has {len(library_path)} entries: the first "
                               f"{MAX_LIBRARY_PATH_ENTRIES} were read")
    for folder in dict.fromkeys(library_path[:MAX_LIBRARY_PATH_ENTRIES]):
        scan.list_folder(folder, "LD_LIBRARY_PATH")
    sites = site_folders(machine, scan.fs, prefix)
    for site in sites:
        _scan_site(scan, site)
    if prefix:
        before = set(scan.found)
        scan.list_folder(posixpath.join(prefix, "lib"), "prefix lib")
        for real in set(scan.found) - before:
            record = scan.found[real]
            owner = _conda_owner(scan, prefix, record["runtime"])
            if owner:
                record["owner"], record["owner_version"] = owner
    if scan.kept is not None:
        scan.kept.save()
    runtimes = sorted(scan.found.values(), key=lambda r: (r["runtime"], r["path"]))
    return {
        "runtimes": runtimes,
        "scanned": {**scan.counts, "seconds": round(time.perf_counter() - started, 4)},
        "incomplete": scan.incomplete,
        "tensorflow_links": tensorflow_links(scan, sites),
    }
