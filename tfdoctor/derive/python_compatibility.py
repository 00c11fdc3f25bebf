"""What the coupling table (tfdoctor/knowledge/python_compatibility.toml) says about one situation.

Pure functions over the table's rows: how bad a dependency outside TensorFlow's declared range really
is, which installed versions break a release whatever its metadata says, which packages need tf-keras
under Keras 3, which Pythons a release has wheels for, and what CPU flags a distribution's build needs.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from tfdoctor.derive.requirement_ranges import canonical_name, version_satisfies
from tfdoctor.knowledge import table_rows
from tfdoctor.records import value_tuple

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import Any

TABLE = "python_compatibility"
SEVERITIES = ("error", "warning", "info")
# A violated clause, by the kind of bound it is.
BELOW_FLOOR, ABOVE_CAP, EXCLUDED, MISSING = "below-floor", "above-cap", "excluded", "missing"
BOUND_KINDS = (BELOW_FLOOR, ABOVE_CAP, EXCLUDED, MISSING)


@value_tuple
class Coupling:
    """The verdict of one table row on one dependency."""

    severity: str  # "error" | "warning" | "info"
    why: str
    symptom: str  # "" when nothing breaks
    sources: tuple[str, ...]


def rows(kind: str) -> Iterator[Mapping[str, Any]]:
    return (row for row in table_rows(TABLE) if row.get("kind") == kind)


def coupling_of(row: Mapping[str, Any]) -> Coupling:
    return Coupling(str(row["severity"]), str(row.get("why", "")), str(row.get("symptom", "")),
                    tuple(row.get("source", ())))


def _applies(row: Mapping[str, Any], package: str, tensorflow: str, installed: str | None = None) -> bool:
    """The row is about this package and TensorFlow release, and (when it narrows itself with `installed`)
    about this installed version."""
    if row.get("package") not in (package, "*") or version_satisfies(tensorflow, str(row["tensorflow"])) is not True:
        return False
    narrowed = row.get("installed")
    return narrowed is None or (installed is not None and version_satisfies(installed, str(narrowed)) is True)


def known_break_row(package: str, installed: str, tensorflow: str) -> Mapping[str, Any] | None:
    """The row saying this installed version breaks this TensorFlow, whatever either declares."""
    package = canonical_name(package)
    for row in rows("dependency"):
        when = str(row["when"])
        if when in BOUND_KINDS or row.get("package") != package:
            continue
        if _applies(row, package, tensorflow) and version_satisfies(installed, when) is True:
            return row
    return None


def known_break(package: str, installed: str, tensorflow: str) -> Coupling | None:
    row = known_break_row(package, installed, tensorflow)
    return coupling_of(row) if row is not None else None


def break_packages() -> tuple[str, ...]:
    """Packages with at least one known-break row, in table order."""
    names: list[str] = []
    for row in rows("dependency"):
        if str(row["when"]) not in BOUND_KINDS and row["package"] not in names:
            names.append(str(row["package"]))
    return tuple(names)


def violated_bound(installed: str, specifier: str) -> str | None:
    """Which kind of bound of `specifier` the installed version violates: below-floor, above-cap or
    excluded (checked in that order); None when it satisfies every clause it can be compared with."""
    clauses = [c.strip() for c in specifier.split(",") if c.strip()]
    kinds = []
    for clause in clauses:
        if clause.startswith("~="):  # ~=X.Y(.Z): >=X.Y(.Z) and the same prefix minus its last part
            base = clause[2:].strip()
            parts = base.split(".")
            cap = ".".join([*parts[:-2], str(int(parts[-2]) + 1)]) if len(parts) >= 2 and parts[-2].isdigit() else None
            if version_satisfies(installed, f">={base}") is False:
                kinds.append(BELOW_FLOOR)
            elif cap and version_satisfies(installed, f"<{cap}") is False:
                kinds.append(ABOVE_CAP)
            continue
        if version_satisfies(installed, clause) is not False:
            continue
        if clause.startswith(">"):
            kinds.append(BELOW_FLOOR)
        elif clause.startswith("<"):
            kinds.append(ABOVE_CAP)
        elif clause.startswith("!="):
            kinds.append(EXCLUDED)
        elif clause.startswith(("==", "===")):
            pinned = clause.lstrip("=")
            kinds.append(BELOW_FLOOR if version_satisfies(installed, f"<{pinned}") else ABOVE_CAP)
    for kind in (BELOW_FLOOR, ABOVE_CAP, EXCLUDED):
        if kind in kinds:
            return kind
    return None


def bound_coupling(package: str, installed: str | None, tensorflow: str, bound: str) -> Coupling:
    """How bad it is that `package` (at `installed`, None when missing) violates TensorFlow's `bound`
    kind: a known break first, then the package's row for that kind, then the fallback row."""
    package = canonical_name(package)
    if installed is not None:
        found = known_break(package, installed, tensorflow)
        if found is not None:
            return found
    fallback = None
    for row in rows("dependency"):
        if row["when"] != bound or not _applies(row, package, tensorflow, installed):
            continue
        if row["package"] == package:
            return coupling_of(row)
        fallback = fallback or row
    if fallback is None:  # the consistency test keeps a "*" row for every kind
        return Coupling("warning", "outside TensorFlow's declared range", "", ())
    return coupling_of(fallback)


def tf_keras_coupling(tf_keras: str, tensorflow: str) -> Coupling:
    """How a tf-keras of another major.minor behaves under this TensorFlow: the first `tf-keras` row whose
    ranges hold both (the table ends with a row for every pair)."""
    for row in rows("tf-keras"):
        if version_satisfies(tensorflow, str(row["tensorflow"])) is True \
                and version_satisfies(tf_keras, str(row["tf_keras"])) is True:
            return coupling_of(row)
    return Coupling("warning", "a tf-keras of another minor than TensorFlow", "", ())


# How a protobuf runtime relates to the protobuf version TensorFlow's generated code was made with.
RUNTIME_OLDER, ONE_MAJOR_NEWER, MAJORS_NEWER = "runtime-older", "one-major-newer", "majors-newer"


def gencode_relation(runtime: tuple[int, ...], gencode: tuple[int, ...]) -> str | None:
    """runtime-older, one-major-newer, majors-newer, or None (same major, not older)."""
    if runtime[:3] < gencode[:3]:
        return RUNTIME_OLDER
    ahead = runtime[0] - gencode[0]
    if ahead == 1:
        return ONE_MAJOR_NEWER
    return MAJORS_NEWER if ahead >= 2 else None


def gencode_coupling(relation: str, runtime: str, gencode: str) -> Coupling | None:
    """The first `protobuf-gencode` row for this relation (and, when the row narrows them, this runtime and
    this gencode version)."""
    for row in rows("protobuf-gencode"):
        if row["relation"] != relation:
            continue
        if all(row.get(key) is None or version_satisfies(value, str(row[key])) is True
               for key, value in (("runtime", runtime), ("gencode", gencode))):
            return coupling_of(row)
    return None


@value_tuple
class Addon:
    """An add-on package built against one TensorFlow release."""

    package: str
    compiled: bool  # ships custom-op shared objects compiled against TensorFlow's C++ ABI
    symptom: str
    sources: tuple[str, ...]


def addons() -> tuple[Addon, ...]:
    return tuple(Addon(str(r["package"]), bool(r.get("compiled")), str(r.get("symptom", "")),
                       tuple(r.get("source", ()))) for r in rows("addon"))


@value_tuple
class TfKerasNeed:
    """A package that needs tf-keras with Keras 3 installed: the versions concerned, the symptom, its
    sources."""

    package: str
    versions: str
    severity: str
    symptom: str
    sources: tuple[str, ...]


def tf_keras_needs(installed: Mapping[str, str], tensorflow: str) -> Iterator[tuple[str, str, TfKerasNeed]]:
    """(package, installed version, row) for installed packages that need tf-keras with this TensorFlow."""
    for row in rows("needs-tf-keras"):
        name = str(row["package"])
        version = installed.get(name)
        if version is None or version_satisfies(tensorflow, str(row["tensorflow"])) is not True:
            continue
        if version_satisfies(version, str(row["versions"])) is True:
            yield name, version, TfKerasNeed(name, str(row["versions"]), str(row["severity"]),
                                             str(row.get("symptom", "")), tuple(row.get("source", ())))


def _minor(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".")[:2])


def python_support() -> list[tuple[str, str, str]]:
    """(TensorFlow major.minor, oldest CPython, newest CPython) for every release in the table, oldest first."""
    found = [(str(r["tensorflow"]), str(r["python"][0]), str(r["python"][1])) for r in rows("python-support")]
    return sorted(found, key=lambda row: _minor(row[0]))


def python_range_for(tensorflow: str) -> tuple[str, str] | None:
    """The CPython range of a TensorFlow release (by major.minor); None when the table does not know it."""
    key = ".".join(tensorflow.split(".")[:2])
    for release, oldest, newest in python_support():
        if release == key:
            return oldest, newest
    return None


def python_in_range(python: tuple[int, int], wheels: tuple[str, str]) -> bool:
    """Whether CPython (major, minor) is within a release's (oldest, newest) range of wheels."""
    return _minor(wheels[0]) <= python <= _minor(wheels[1])


def newest_release_for_python(python: str) -> tuple[str, str, str] | None:
    """The newest release with wheels for this CPython (major.minor), as (release, oldest, newest)."""
    have = _minor(python)
    fitting = [row for row in python_support() if _minor(row[1]) <= have <= _minor(row[2])]
    return fitting[-1] if fitting else None


def newest_release() -> tuple[str, str, str]:
    return python_support()[-1]


def newer_than_every_release(python: str) -> bool:
    """Whether this CPython (major.minor…) is newer than the newest one any TensorFlow release supports."""
    try:
        return _minor(python) > _minor(newest_release()[2])
    except ValueError:
        return False


def distribution_names() -> tuple[str, ...]:
    return tuple(str(r["name"]) for r in rows("distribution"))


def distribution_cpu_flags(name: str) -> tuple[tuple[str, ...], str, tuple[str, ...]]:
    """(flags the build needs beyond AVX, why, sources) of a TensorFlow distribution."""
    for row in rows("distribution"):
        if row["name"] == name:
            return tuple(row.get("cpu_flags", ())), str(row.get("why", "")), tuple(row.get("source", ()))
    return (), "", ()
