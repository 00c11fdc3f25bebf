"""Which ptxas the XLA of the installed TensorFlow will run: the toolchain probe's records put in that
release's search order (tfdoctor/knowledge/xla_ptxas.toml [[search]]), refused versions skipped where the
release skips them. Pure: a function of the xla_toolchain facts and the TensorFlow release."""

from __future__ import annotations

from tfdoctor.facts import Facts, NotChecked, Unknown
from tfdoctor.facts.parse import DATA_DIR_FLAG
from tfdoctor.records import value_tuple

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import Any

# Releases the table has no [[search]] row for (before 2.12): the probe's order, the candidate roots
# (the data-dir folder first) and then PATH, as the older asm_compiler.cc searched.
LEGACY_ORDER = ("data_dir", "roots", "path")


@value_tuple
class Ptxas:
    """One ptxas XLA would try: its path, its version (a string, Unknown, or None), how XLA reaches it
    (the candidate root's origin, or "PATH") and the root record when it is in a CUDA root (None on PATH)."""

    path: str
    version: Any
    via: str
    root: dict[str, Any] | None


@value_tuple
class Search:
    """The search order of one release: the steps, whether refused versions are skipped, the row's range."""

    order: tuple[str, ...]
    skips_refused: bool
    tensorflow: str | None  # the [[search]] row's range; None: no row (LEGACY_ORDER)


def search_for(release: str | None) -> Search:
    """The [[search]] row for TensorFlow `release`; a release the table cannot place gets the newest row
    (newer XLA keeps the newest order), an older release than every row the legacy order."""
    from tfdoctor import knowledge
    from tfdoctor.derive.requirement_ranges import version_satisfies

    rows = knowledge.table("xla_ptxas").data.get("search", [])
    if release is None:
        row = rows[0]
        return Search(tuple(row["order"]), bool(row["skips_refused"]), str(row["tensorflow"]))
    for row in rows:
        if version_satisfies(str(release), str(row["tensorflow"])) is not False:
            return Search(tuple(row["order"]), bool(row["skips_refused"]), str(row["tensorflow"]))
    return Search(LEGACY_ORDER, False, None)


def _records(facts: Facts, path: str) -> list[dict[str, Any]]:
    records = facts.get(path) or []
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise NotChecked(f"{path} holds {str(records)[:40]!r}, not a list of records")
    return records


def candidates(facts: Facts, release: str | None) -> tuple[Search, list[Ptxas]]:
    """Every ptxas XLA of `release` would try, in its order (refusals not applied)."""
    from tfdoctor.derive.xla_libdevice import searched

    search = search_for(release)
    # The candidate roots this release searches, in its order (xla_ptxas.toml [[roots]]); one the facts do
    # not record (an older tfdoctor's) has no ptxas to offer.
    roots = [r.record for r in searched(facts, release) if r.record is not None]
    on_path = _records(facts, "xla_toolchain.path_ptxas")
    steps: dict[str, list[Ptxas]] = {
        "data_dir": [Ptxas(r["ptxas"], r.get("ptxas_version"), r.get("origin") or DATA_DIR_FLAG, r)
                     for r in roots if r.get("origin") == DATA_DIR_FLAG and r.get("ptxas")],
        "roots": [Ptxas(r["ptxas"], r.get("ptxas_version"), str(r.get("origin") or r["dir"]), r)
                  for r in roots if r.get("origin") != DATA_DIR_FLAG and r.get("ptxas")],
        "path": [Ptxas(p["path"], p.get("version"), "PATH", None)
                 for p in on_path if isinstance(p.get("path"), str)],
    }
    ordered: list[Ptxas] = []
    for step in search.order:
        ordered += [p for p in steps.get(step, []) if all(p.path != o.path for o in ordered)]
    return search, ordered


def resolved(facts: Facts, release: str | None, refusal: Any) -> tuple[Search, list[Ptxas], Ptxas | None]:
    """(the release's search, every candidate in order, the ptxas XLA runs or None). `refusal(version,
    release)` says why XLA refuses a version (None when it accepts it); a release that skips refused
    versions runs the first accepted one, an older release the first one. A candidate whose version is
    Unknown stops the search there when the release skips refused versions (raises NotChecked: which one
    runs depends on it)."""
    search, ordered = candidates(facts, release)
    if not search.skips_refused:
        return search, ordered, (ordered[0] if ordered else None)
    for ptxas in ordered:
        if isinstance(ptxas.version, Unknown):
            raise NotChecked(f"version of {ptxas.path} unknown: {ptxas.version.reason}")
        if refusal(ptxas.version, release) is None:
            return search, ordered, ptxas
    return search, ordered, None
