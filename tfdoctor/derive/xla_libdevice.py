"""Which libdevice the XLA of the installed TensorFlow will use: the CUDA roots that release searches
(tfdoctor/knowledge/xla_ptxas.toml [[roots]]), in its order, matched with what the toolchain probe found in
each. Pure: a function of the xla_toolchain facts and the TensorFlow release.

XLA takes the first root with an nvvm/libdevice folder and reads libdevice.10.bc from it; a root the release
does not search does not count, whatever it holds."""

from __future__ import annotations

from tfdoctor.facts import Facts, NotChecked, Unknown
from tfdoctor.facts.parse import DATA_DIR_FLAG
from tfdoctor.records import value_tuple

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import Any

# The probe's `origin` of each symbolic root of the table (the fixed ones are matched by folder).
ORIGINS = {"data_dir": DATA_DIR_FLAG, "nvcc_wheel": "pip nvidia-cuda-nvcc", "tensorflow_cuda": "tensorflow/cuda",
           "prefix": "environment prefix"}


@value_tuple
class Root:
    """One CUDA root the release searches: the table's name for it, its folder (None: the probe found no such
    folder to name, e.g. no XLA_FLAGS data dir) and the probe's record of it (None: not recorded)."""

    name: str
    dir: str | None
    record: dict[str, Any] | None


@value_tuple
class Libdevice:
    """The outcome: the roots searched, in order, and the root XLA takes (None: none has nvvm/libdevice, XLA
    falls back to ./libdevice.10.bc); `path` is the libdevice.10.bc it reads, None when that root's
    nvvm/libdevice folder lacks it."""

    searched: tuple[Root, ...]
    root: Root | None
    path: str | None


def _records(facts: Facts, path: str) -> list[dict[str, Any]]:
    records = facts.get(path) or []
    if not isinstance(records, list) or not all(isinstance(r, dict) and isinstance(r.get("dir"), str)
                                                for r in records):
        raise NotChecked(f"{path} holds {str(records)[:40]!r}, not a list of CUDA root records")
    return records


def roots_for(release: str | None) -> list[str]:
    """The [[roots]] names release `release` searches, in XLA's order. An unknown release (None, or one the
    specifiers cannot read) is given every root whose range has no upper bound: newer XLA keeps them."""
    from tfdoctor import knowledge
    from tfdoctor.derive.requirement_ranges import version_satisfies

    names: list[str] = []
    for row in knowledge.table("xla_ptxas").data.get("roots", []):
        spec = str(row["tensorflow"])
        holds = version_satisfies(str(release), spec) if release is not None else None
        if holds is None:
            holds = "<" not in spec
        if holds and row["root"] not in names:
            names.append(str(row["root"]))
    return names


def searched(facts: Facts, release: str | None) -> list[Root]:
    """The roots XLA of `release` searches, each with the probe's record of it. A symbolic root the probe
    gave no folder for (no data-dir flag, TensorFlow's folder unknown) is left out; a fixed one the probe did
    not record keeps record None (facts from a tfdoctor that did not look there)."""
    candidates = _records(facts, "xla_toolchain.candidates")
    roots: list[Root] = []
    for name in roots_for(release):
        if name.startswith("/"):
            record = next((c for c in candidates if c["dir"] == name), None)
            roots.append(Root(name, name, record))
            continue
        record = next((c for c in candidates if c.get("origin") == ORIGINS.get(name)), None)
        if record is not None:
            roots.append(Root(name, record["dir"], record))
    return roots


def has_folder(record: dict[str, Any]) -> bool:
    """Whether the root has an nvvm/libdevice folder (what XLA tests); facts recorded before the probe noted
    the folder tell only of the file."""
    folder = record.get("libdevice_dir")
    return bool(folder) if folder is not None else bool(record.get("libdevice"))


def resolve(facts: Facts, release: str | None) -> Libdevice | Unknown:
    """The libdevice XLA of `release` uses, or Unknown when a root it would reach first was not recorded."""
    roots = searched(facts, release)
    for position, root in enumerate(roots):
        if root.record is None:
            return Unknown(f"the toolchain facts do not say whether {root.dir} holds nvvm/libdevice (recorded "
                           "by a tfdoctor that did not look there)")
        if has_folder(root.record):
            path = root.record.get("libdevice")
            return Libdevice(tuple(roots[:position + 1]), root, path if isinstance(path, str) else None)
    return Libdevice(tuple(roots), None, None)


def unsearched_with_libdevice(facts: Facts, release: str | None) -> list[dict[str, Any]]:
    """Recorded roots holding libdevice.10.bc that this release does not search: what the data-dir flag
    could name (the probe's candidates for other releases, then the other folders it found)."""
    dirs = {r.dir for r in searched(facts, release)}
    found: list[dict[str, Any]] = []
    for record in [*_records(facts, "xla_toolchain.candidates"), *_records(facts, "xla_toolchain.libdevice_elsewhere")]:
        if record.get("libdevice") and record["dir"] not in dirs and all(f["dir"] != record["dir"] for f in found):
            found.append(record)
    return found
