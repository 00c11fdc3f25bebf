"""An environment variable judged against the installed TensorFlow release
(tfdoctor/knowledge/tensorflow_variables.toml). Pure: a function of the facts and the table."""

from __future__ import annotations

from tfdoctor.derive.tensorflow_distribution import installed_tensorflow
from tfdoctor.facts import Facts, NotChecked
from tfdoctor.records import value_tuple

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import Any


@value_tuple
class VariableRule:
    """The row that holds for a variable's value under the installed release, and that release."""

    row: dict[str, Any]
    release: str | None  # None: the installed release could not be read (the row holds for it anyway)

    @property
    def effect(self) -> str:
        return str(self.row["effect"])

    @property
    def sources(self) -> list[str]:
        return [str(s) for s in self.row.get("source", ())]

    def under(self) -> str:
        """"TensorFlow 2.21.0", or "TensorFlow 2" when the release could not be read."""
        return f"TensorFlow {self.release}" if self.release else "TensorFlow 2"


def variable_rule(facts: Facts, variable: str, value: str) -> VariableRule | None:
    """The tensorflow_variables row for `variable` set to `value` under the installed release, or None
    (no row, or the release is outside every row's range)."""
    from tfdoctor import knowledge
    from tfdoctor.derive.requirement_ranges import version_satisfies

    try:
        dist = installed_tensorflow(facts)
    except NotChecked:  # the python section was not collected: the release cannot be read
        dist = None
    release = dist.version if dist is not None else None
    for row in knowledge.table_rows("tensorflow_variables"):
        if row["variable"] != variable or (row.get("value") and row["value"] != value):
            continue
        if release is None:
            if row.get("unknown_release"):
                return VariableRule(row, None)
            continue
        if version_satisfies(release, str(row["tensorflow"])) is True:
            return VariableRule(row, release)
    return None


@value_tuple
class FlagVerdict:
    """An XLA_FLAGS name against the installed release's flag list (tfdoctor/knowledge/xla_flags.toml)."""

    name: str
    release: str  # the installed TensorFlow release
    listed: str  # the release whose list was read for it
    known_in: tuple[str, ...]  # the other listed releases whose XLA registers the name, oldest first
    newer: bool  # every release that knows it is newer than the installed one
    older: bool  # every release that knows it is older than the installed one


def xla_flag_verdicts(facts: Facts, names: list[str]) -> list[FlagVerdict]:
    """The names of `names` that the installed release's XLA does not register although another listed
    release's does: what XLA005 reports. [] when the installed release has no list (no verdict)."""
    from tfdoctor import knowledge
    from tfdoctor.derive.requirement_ranges import version_satisfies
    from tfdoctor.derive.versions import version_tuple

    try:
        dist = installed_tensorflow(facts)
    except NotChecked:
        return []
    if dist is None:
        return []
    rows = knowledge.table("xla_flags").rows
    mine = next((r for r in rows if version_satisfies(dist.version, str(r["tensorflow"])) is True), None)
    if mine is None:
        return []
    registered = set(mine["flags"])
    verdicts = []
    for name in dict.fromkeys(names):
        if name in registered:
            continue
        known_in = tuple(sorted((str(r["release"]) for r in rows if r is not mine and name in r["flags"]),
                                key=version_tuple))
        if known_in:
            here = version_tuple(dist.version)
            verdicts.append(FlagVerdict(name, dist.version, str(mine["release"]), known_in,
                                        newer=all(version_tuple(k) > here for k in known_in),
                                        older=all(version_tuple(k) < here for k in known_in)))
    return verdicts
