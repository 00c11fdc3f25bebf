"""Pure views over the "cuda_libs" facts: where a library name resolves, what version that copy is,
and which copies on disk the loader cannot see. Shared by the CUDA and CUPTI families."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any

from tfdoctor.derive.tf_build import version_tuple
from tfdoctor.facts import Facts, NotChecked, Unknown
from tfdoctor.model import EnvFix, prepend_path


@dataclass(frozen=True)
class LibraryCopy:
    """One copy of a CUDA library on disk: where, which version, who installed it, and whether it is broken."""

    path: str
    dir: str
    version: str | None
    origin: str
    broken: bool = False


def _best_version(record: dict[str, Any]) -> str | None:
    """The most precise version known for one file: cudnn_version.h, the wheel, then the file name."""
    candidates = [record.get("header_version"), record.get("wheel_version"), record.get("file_version")]
    known = [c for c in candidates if isinstance(c, str) and version_tuple(c)]
    if not known:
        return None
    best = known[0]
    for other in known[1:]:
        if len(version_tuple(other)) > len(version_tuple(best)) and version_tuple(other)[:1] == version_tuple(best)[:1]:
            best = other
    return best


def _copy(record: dict[str, Any]) -> LibraryCopy:
    return LibraryCopy(posixpath.join(record["dir"], record["name"]), record["dir"], _best_version(record),
                       record.get("origin", ""), bool(record.get("broken")))


def _records(files: object) -> bool:
    return files is None or isinstance(files, Unknown) or (isinstance(files, list) and all(
        isinstance(r, dict) and isinstance(r.get("dir"), str) and isinstance(r.get("name"), str) for r in files))


def _strings(value: object) -> bool:
    return value is None or isinstance(value, Unknown) or (
        isinstance(value, list) and all(isinstance(v, str) for v in value))


def _resolution(record: object) -> bool:
    """Where the loader finds a library: a path, and the other copies it would also see."""
    return (isinstance(record, dict) and isinstance(record.get("path"), str)
            and _strings(record.get("others")) and not isinstance(record.get("others"), Unknown))


class LibraryView:
    def __init__(self, facts: Facts, key: str) -> None:
        entry = facts.get(f"cuda_libs.libraries.{key}")
        files = entry.get("files") if isinstance(entry, dict) else None
        resolved = entry.get("resolved") if isinstance(entry, dict) else None
        ld_library_path, runpath = facts.peek("cuda_libs.ld_library_path"), facts.peek("cuda_libs.runpath")
        # A hand-edited facts file may hold anything here: refuse it as a whole rather than crash on a part.
        if not (isinstance(entry, dict) and _records(files) and isinstance(resolved, (dict, Unknown, type(None)))
                and all(r is None or _resolution(r) for r in (resolved or {}).values())
                and _strings(ld_library_path) and _strings(runpath)):
            raise NotChecked(f"cuda_libs.libraries.{key} or the loader paths have an unexpected shape")
        self.files: list[dict[str, Any]] = list(files or [])
        self.resolved_map: dict[str, dict[str, Any]] = dict(resolved or {})
        self.ld_library_path: list[str] = list(ld_library_path or [])
        self.runpath: list[str] = list(runpath or [])

    def resolved(self, name: str) -> dict[str, Any] | None:
        return self.resolved_map.get(name)

    def copy_at(self, path: str) -> LibraryCopy | None:
        for record in self.files:
            if posixpath.join(record["dir"], record["name"]) == path:
                return _copy(record)
        return LibraryCopy(path, posixpath.dirname(path), None, "ld.so.cache")

    def on_disk(self, name: str) -> list[LibraryCopy]:
        """Every copy named `name`, loader-visible or not, broken links included."""
        return [_copy(r) for r in self.files if r["name"] == name]

    def unresolvable(self, name: str) -> list[LibraryCopy]:
        """Intact copies the loader will not find (their folders are the fix)."""
        resolved = self.resolved(name) or {}
        visible = {resolved.get("path"), *(resolved.get("others") or [])}
        return [c for c in self.on_disk(name) if not c.broken and c.path not in visible]

    def broken(self, name: str) -> list[LibraryCopy]:
        return [c for c in self.on_disk(name) if c.broken]

    def other_names(self, stem: str, name: str) -> list[LibraryCopy]:
        """Intact files of the same library under another name (libcupti.so.2022.4.0 for libcupti.so.11.8)."""
        return [_copy(r) for r in self.files if r["name"] != name and not r.get("broken")
                and r["name"].startswith(stem + ".")]


def prefer_copy(copies: list[LibraryCopy], wanted: tuple[int, ...] = ()) -> LibraryCopy:
    """The copy to point the loader at: one satisfying `wanted` (same major, ≥ minor), newest first,
    pip wheels before toolkits on a tie (they are what TensorFlow pins)."""
    def key(copy: LibraryCopy) -> tuple[int, tuple[int, ...], int]:
        ok = satisfies(copy.version, wanted) if wanted else True
        return (1 if ok else 0, version_tuple(copy.version), 1 if copy.origin == "pip wheel" else 0)

    return max(copies, key=key)


def satisfies(version: str | None, wanted: tuple[int, ...]) -> bool:
    """Same major and not older (to the precision both sides know)."""
    have = version_tuple(version)
    if not have or not wanted:
        return True
    if have[0] != wanted[0]:
        return False
    n = min(len(have), len(wanted), 2)
    return have[:n] >= wanted[:n]


def put_folder_first(folder: str, why: str) -> EnvFix:
    """The fix that makes the loader find `folder`'s copy before any other (the CUDA and CUPTI families)."""
    return EnvFix(f"Put {folder} first on LD_LIBRARY_PATH ({why})", (prepend_path("LD_LIBRARY_PATH", folder),))
