"""Requires-Dist lines against installed versions, cheaply.

`packaging` is the reference, but importing its specifiers costs ~40 ms here, a fifth of the whole
`tfdoctor check` budget, and TensorFlow's own requirements never need it: they are plain numeric
ranges ("protobuf<8.0.0,>=6.31.1") with markers that only name an extra. For those, and for plain
numeric installed versions, PEP 440 comparison is comparison of zero-padded release tuples; anything
else (pre-releases, local versions, wildcards, ~=, URLs, real markers) goes to `packaging`, imported then.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from tfdoctor.records import value_tuple

_NUMERIC = re.compile(r"^\d+(?:\.\d+)*$")
_CLAUSE = re.compile(r"^(>=|<=|==|!=|<|>)\s*(\d+(?:\.\d+)*)$")
_LINE = re.compile(r"^\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*\(?(?P<spec>[^;()@]*?)\)?\s*"
                   r"(?:;\s*(?P<marker>.*?))?\s*$")
# A marker that is false whenever no extra is requested: `extra == "x"`, alone or and-ed with anything.
_EXTRA_ONLY = re.compile(r"""\bextra\s*==\s*['"][^'"]*['"]""")


@value_tuple
class Requirement:
    """One Requires-Dist line: the canonical name, its version specifier and its marker."""

    name: str  # canonical: lower case, runs of -_. as one "-"
    specifier: str  # "" when any version will do
    marker: str | None


def canonical_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_requirement(line: str) -> Requirement | None:
    """A Requires-Dist line; None when it is not valid (it is then ignored, as pip would fail on it)."""
    if "@" not in line.split(";", 1)[0]:
        match = _LINE.match(line)
        if match:
            spec = re.sub(r"\s+", "", match.group("spec"))
            if all(_CLAUSE.match(c) for c in spec.split(",")) or not spec:
                return Requirement(canonical_name(match.group("name")), spec, match.group("marker") or None)
    from packaging.requirements import InvalidRequirement
    from packaging.requirements import Requirement as Full

    try:
        full = Full(line)
    except InvalidRequirement:
        return None
    return Requirement(canonical_name(full.name), str(full.specifier), str(full.marker) if full.marker else None)


# One comparison of a marker: `python_version >= "3.13"`, `sys_platform == 'linux'` (PEP 508's common form).
_MARKER_CLAUSE = re.compile(r"""^\s*([a-z_]{1,40})\s*(==|!=|<=|>=|<|>)\s*(['"])([A-Za-z0-9._+-]{0,60})\3\s*$""")
_VERSION_MARKERS = ("python_version", "python_full_version", "implementation_version")


def _simple_marker(marker: str, environment: Mapping[str, str]) -> bool | None:
    """A marker made of comparisons joined by `and` (what wheels' Requires-Dist mostly carry), evaluated
    without `packaging` (whose import the pre-job hook does not pay for); None for anything else."""
    if "(" in marker or re.search(r"\bor\b", marker):
        return None
    result = True
    for clause in re.split(r"\band\b", marker):
        match = _MARKER_CLAUSE.match(clause)
        if match is None or match.group(1) not in environment:
            return None
        name, op, _, value = match.groups()
        have = environment[name]
        if name in _VERSION_MARKERS:
            if not (_NUMERIC.match(have) and _NUMERIC.match(value)):
                return None
            ok = _numeric_contains(f"{op}{value}", have)
        elif op in ("==", "!="):
            ok = (have == value) is (op == "==")
        else:
            return None
        result = result and ok
    return result


def marker_applies(marker: str | None, environment: Mapping[str, str]) -> bool:
    """Whether a dependency applies to an interpreter described by `environment`, no extra requested."""
    if marker is None:
        return True
    if _EXTRA_ONLY.search(marker) and not re.search(r"\bor\b", marker):
        return False  # `... and extra == "x"` is false without that extra
    simple = _simple_marker(marker, environment)
    if simple is not None:
        return simple
    from packaging.markers import InvalidMarker, Marker

    try:
        return Marker(marker).evaluate({**environment, "extra": ""})
    except (InvalidMarker, ValueError, KeyError):
        return True  # cannot tell: keep the dependency in view


def _release(version: str) -> tuple[int, ...]:
    parts = [int(p) for p in version.split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def _numeric_contains(specifier: str, version: str) -> bool:
    have = _release(version)
    for clause in specifier.split(","):
        op, bound = _CLAUSE.match(clause).groups()  # type: ignore[union-attr]
        want = _release(bound)
        ok = {">=": have >= want, "<=": have <= want, ">": have > want, "<": have < want,
              "==": have == want, "!=": have != want}[op]
        if not ok:
            return False
    return True


def version_satisfies(version: str, specifier: str) -> bool | None:
    """Whether `version` is inside `specifier` (pre-releases allowed); None when either is invalid."""
    if not specifier:
        return True
    clauses = specifier.replace(" ", "").split(",")
    if _NUMERIC.match(version) and all(_CLAUSE.match(c) for c in clauses):
        return _numeric_contains(",".join(clauses), version)
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    try:
        return SpecifierSet(specifier).contains(Version(version), prereleases=True)
    except (InvalidSpecifier, InvalidVersion):
        return None
