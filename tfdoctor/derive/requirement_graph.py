"""The requirement graph of the inspected environment: every installed distribution's own Requires-Dist.

TensorFlow's METADATA is only the first layer. What TensorFlow imports has requirements of its own
(ml-dtypes 0.7 requires numpy>=2.0.0 while TensorFlow 2.21 accepts numpy>=1.26.0), and a pip command that
pins TensorFlow makes pip move every package outside TensorFlow's ranges — possibly below what another
installed package needs (jax's ml_dtypes floor). Pure functions of the `python` facts: the snapshot records
each distribution's Requires-Dist (those behind an extra left out), the watched ones in full.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from tfdoctor.derive.python_compatibility import BELOW_FLOOR, MISSING, Coupling, coupling_of, violated_bound
from tfdoctor.derive.requirement_ranges import (
    Requirement,
    canonical_name,
    marker_applies,
    parse_requirement,
    version_satisfies,
)
from tfdoctor.derive.tensorflow_distribution import (
    TENSORFLOW_DISTS,
    TensorflowDistribution,
    installed_version,
    marker_environment,
    top_level_import_name,
)
from tfdoctor.facts import Facts
from tfdoctor.records import value_tuple

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import Any

# How far the graph is followed from TensorFlow: its requirements, theirs, and theirs (numpy is reached at
# the second step through keras or ml-dtypes); a bound on the work whatever a hand-made facts file holds.
MAX_DEPTH = 4


def _distributions(facts: Facts) -> Mapping[str, Any]:
    found = facts.peek("python.distributions")
    return found if isinstance(found, Mapping) else {}


def requires_path(facts: Facts, name: str) -> str | None:
    """The fact holding a distribution's Requires-Dist lines: the watched record's, else the listing's; None
    when the snapshot has none for it (not installed, unreadable METADATA, facts recorded before the listing
    had them)."""
    name = canonical_name(name)
    for path in (f"python.watched.{name}", f"python.distributions.{name}"):
        info = facts.peek(path)
        if isinstance(info, Mapping) and isinstance(info.get("requires_dist"), list):
            return f"{path}.requires_dist"
    return None


def requires_lines(facts: Facts, name: str) -> list[str] | None:
    """A distribution's Requires-Dist lines (requires_path's), None when not recorded."""
    path = requires_path(facts, name)
    return None if path is None else [str(line) for line in facts.peek(path)]


def requirements_of(facts: Facts, name: str,
                    environment: Mapping[str, str] | None = None) -> list[tuple[Requirement, str]] | None:
    """(requirement, METADATA line) of a distribution that apply to the inspected interpreter with no extra
    requested; None when its requirements were not recorded."""
    lines = requires_lines(facts, name)
    if lines is None:
        return None
    environment = marker_environment(facts) if environment is None else environment
    found = []
    for line in lines:
        requirement = parse_requirement(line)
        if requirement is not None and marker_applies(requirement.marker, environment):
            found.append((requirement, line))
    return found


def tensorflow_closure(facts: Facts, dist: TensorflowDistribution) -> list[str]:
    """The installed distributions TensorFlow needs, directly or through others (breadth first, TensorFlow
    itself and other TensorFlow distributions left out): those whose own requirements decide whether
    `import tensorflow` works."""
    environment = marker_environment(facts)
    seen: list[str] = []
    frontier = [dist.name]
    for _ in range(MAX_DEPTH):
        following: list[str] = []
        for name in frontier:
            for requirement, _line in requirements_of(facts, name, environment) or ():
                needed = requirement.name
                if needed in TENSORFLOW_DISTS or needed in seen or installed_version(facts, needed) is None:
                    continue
                seen.append(needed)
                following.append(needed)
        frontier = following
    return seen


@value_tuple
class Unmet:
    """One requirement of a package TensorFlow needs that the environment does not satisfy."""

    requirer: str
    requirer_version: str
    requirement: Requirement
    line: str
    installed: str | None  # None: the required package is not installed
    bound: str  # below-floor, above-cap, excluded or missing (python_compatibility's kinds)


def unmet_requirements(facts: Facts, dist: TensorflowDistribution) -> Iterator[Unmet]:
    """The requirements of TensorFlow's dependencies (not of TensorFlow itself: PKG005 and PKG009 judge those)
    that the installed versions do not meet."""
    environment = marker_environment(facts)
    modules = facts.peek("python.modules")
    modules = modules if isinstance(modules, Mapping) else {}
    for requirer in tensorflow_closure(facts, dist):
        version = installed_version(facts, requirer) or ""
        for requirement, line in requirements_of(facts, requirer, environment) or ():
            if requirement.name in TENSORFLOW_DISTS:
                continue  # an add-on's TensorFlow pin is PKG017's
            installed = installed_version(facts, requirement.name)
            if installed is None:
                if top_level_import_name(requirement.name) not in modules:  # importable without metadata: there
                    yield Unmet(requirer, version, requirement, line, None, MISSING)
                continue
            if not requirement.specifier or version_satisfies(installed, requirement.specifier) is not False:
                continue
            bound = violated_bound(installed, requirement.specifier) or BELOW_FLOOR
            yield Unmet(requirer, version, requirement, line, installed, bound)


# ------------------------------------------------------------------------------------ fixes on the graph

RELEASE_PART_DIGITS = 18  # no release number is longer


def _release(text: str) -> tuple[int, ...] | None:
    parts = text.split(".")
    # ASCII digits only, and short: "²" passes str.isdigit, and int() refuses 4300 digits (a METADATA line is
    # read whole)
    if not parts or not all(p.isascii() and p.isdigit() and len(p) <= RELEASE_PART_DIGITS for p in parts):
        return None
    numbers = [int(p) for p in parts]
    while len(numbers) > 1 and numbers[-1] == 0:
        numbers.pop()
    return tuple(numbers)


def _interval(specifier: str) -> tuple[tuple[tuple[int, ...], bool] | None,
                                        tuple[tuple[int, ...], bool] | None] | None:
    """(floor, cap) of a specifier, each (release, inclusive) or None when open; None when a clause cannot be
    read as a bound on plain releases (pre-releases, local versions, ===): no verdict is drawn from it."""
    floor: tuple[tuple[int, ...], bool] | None = None
    cap: tuple[tuple[int, ...], bool] | None = None

    def raise_floor(value: tuple[int, ...], inclusive: bool) -> None:
        nonlocal floor
        if floor is None or value > floor[0] or (value == floor[0] and not inclusive):
            floor = (value, inclusive)

    def lower_cap(value: tuple[int, ...], inclusive: bool) -> None:
        nonlocal cap
        if cap is None or value < cap[0] or (value == cap[0] and not inclusive):
            cap = (value, inclusive)

    for clause in (c.strip() for c in specifier.replace(" ", "").split(",")):
        if not clause or clause.startswith("!="):
            continue  # an exclusion never empties a range of more than one release
        op = next((o for o in ("~=", "===", ">=", "<=", "==", ">", "<") if clause.startswith(o)), None)
        if op is None or op == "===":
            return None
        bound = clause[len(op):]
        if op == "==" and bound.endswith(".*"):
            base = _release(bound[:-2])
            if base is None:
                return None
            raise_floor(base, True)
            lower_cap((*base[:-1], base[-1] + 1), False)
            continue
        value = _release(bound)
        if value is None:
            return None
        if op == "~=":
            parts = bound.split(".")
            if len(parts) < 2:
                return None
            raise_floor(value, True)
            prefix = tuple(int(p) for p in parts[:-1])
            lower_cap((*prefix[:-1], prefix[-1] + 1), False)
        elif op in (">=", ">"):
            raise_floor(value, op == ">=")
        elif op in ("<=", "<"):
            lower_cap(value, op == "<=")
        else:  # ==
            raise_floor(value, True)
            lower_cap(value, True)
    return floor, cap


def disjoint(first: str, second: str) -> bool | None:
    """Whether no release can satisfy both specifiers; None when either cannot be read as plain bounds."""
    one, other = _interval(first), _interval(second)
    if one is None or other is None:
        return None
    floors = [f for f in (one[0], other[0]) if f is not None]
    caps = [c for c in (one[1], other[1]) if c is not None]
    if not floors or not caps:
        return False
    low = max(floors, key=lambda f: (f[0], not f[1]))
    high = min(caps, key=lambda c: (c[0], c[1]))
    if low[0] < high[0]:
        return False
    if low[0] > high[0]:
        return True
    return not (low[1] and high[1])


@value_tuple
class Conflict:
    """A fix would move `package` into `forced`, which `dependent` (its `line`) does not accept."""

    package: str
    forced: str
    dependent: str
    dependent_version: str
    line: str
    specifier: str


def forced_ranges(facts: Facts, dist: TensorflowDistribution | None,
                  wanted: Iterable[Requirement]) -> dict[str, str]:
    """What `pip install <wanted...> <tensorflow pinned>` makes pip enforce: the requirements named, and every
    requirement of the pinned TensorFlow (pip keeps them all satisfied)."""
    forced: dict[str, list[str]] = {}
    for requirement in wanted:
        if requirement.specifier:
            forced.setdefault(requirement.name, []).append(requirement.specifier)
    if dist is not None:
        for requirement, _line in requirements_of(facts, dist.name) or ():
            if requirement.specifier and requirement.name not in TENSORFLOW_DISTS:
                forced.setdefault(requirement.name, []).append(requirement.specifier)
    return {name: ",".join(dict.fromkeys(specs)) for name, specs in forced.items()}


def fix_conflicts(facts: Facts, dist: TensorflowDistribution | None, wanted: Iterable[Requirement]) -> list[Conflict]:
    """Installed distributions a pip fix would break: for every package the fix makes pip move (its installed
    version is outside what the fix enforces, or it is missing), each other installed distribution whose
    requirement on it cannot hold together with what is enforced."""
    wanted = list(wanted)
    forced = forced_ranges(facts, dist, wanted)
    moved = {name: spec for name, spec in forced.items()
             if (have := installed_version(facts, name)) is None or version_satisfies(have, spec) is False}
    if not moved:
        return []
    skip = {r.name for r in wanted} | set(TENSORFLOW_DISTS)
    environment = marker_environment(facts)
    conflicts = []
    for name in sorted(_distributions(facts)):
        if name in skip or name in moved:
            continue
        for requirement, line in requirements_of(facts, name, environment) or ():
            spec = moved.get(requirement.name)
            if spec is None or not requirement.specifier:
                continue
            if disjoint(spec, requirement.specifier) is True:
                conflicts.append(Conflict(requirement.name, spec, name, installed_version(facts, name) or "",
                                          line, requirement.specifier))
    return conflicts


# ------------------------------------------------------------------------ the table (package_graph.toml)
GRAPH_TABLE = "package_graph"


def _rows(kind: str) -> Iterator[Mapping[str, Any]]:
    from tfdoctor.knowledge import table_rows

    return (row for row in table_rows(GRAPH_TABLE) if row.get("kind") == kind)


def requirement_coupling(unmet: Unmet) -> Coupling:
    """How bad one unmet requirement of a dependency is: the most specific `requirement` row (this package
    and this required package, then any package requiring it, then the fallback of its kind of bound)."""
    best: tuple[int, Mapping[str, Any]] | None = None
    for row in _rows("requirement"):
        if row["when"] != unmet.bound or row["requires"] not in (unmet.requirement.name, "*"):
            continue
        if row["package"] not in (unmet.requirer, "*"):
            continue
        versions = row.get("versions")
        if versions is not None and version_satisfies(unmet.requirer_version, str(versions)) is not True:
            continue
        rank = (row["package"] != "*") * 2 + (row["requires"] != "*")
        if best is None or rank > best[0]:
            best = (rank, row)
    if best is None:  # the consistency test keeps a "*"/"*" row for every kind of bound
        return Coupling("warning", "outside the range the package declares", "", ())
    return coupling_of(best[1])


@value_tuple
class AddonStatus:
    """What is known of an add-on's releases: whether they ended, the newest TensorFlow one is built for."""

    package: str
    ended: bool
    newest_tensorflow: str
    follows_tensorflow: bool
    note: str
    sources: tuple[str, ...]


def addon_status(package: str) -> AddonStatus | None:
    for row in _rows("addon-status"):
        if row["package"] == package:
            return AddonStatus(package, bool(row.get("ended")), str(row["newest_tensorflow"]),
                               bool(row.get("follows_tensorflow")), str(row.get("note", "")),
                               tuple(row.get("source", ())))
    return None


def addon_release_for(package: str, tensorflow: str) -> str | None:
    """The add-on release the table knows to be built for this TensorFlow, None when it knows none."""
    for row in _rows("addon-release"):
        if row["package"] == package and version_satisfies(tensorflow, str(row["tensorflow"])) is True:
            return str(row["release"])
    return None
