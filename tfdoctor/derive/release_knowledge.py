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


def release_row(rows: tuple[dict[str, Any], ...], version: str) -> dict[str, Any] | None:
    """The row of a flag-list table (xla_flags, tf_xla_flags) whose `tensorflow` range holds `version`."""
    from tfdoctor.derive.requirement_ranges import version_satisfies

    return next((r for r in rows if version_satisfies(version, str(r["tensorflow"])) is True), None)


def _installed_version(facts: Facts) -> str | None:
    try:
        dist = installed_tensorflow(facts)
    except NotChecked:
        return None
    return dist.version if dist is not None else None


@value_tuple
class RegisteredFlags:
    """The flag names the installed TensorFlow accepts in one variable, and where they were read."""

    names: frozenset[str]
    release: str | None  # the installed release, None when it could not be read
    read_from: str  # "libtensorflow_cc.so.2 of the installed TensorFlow", "the TensorFlow 2.20.0 wheel"
    elsewhere: frozenset[str]  # names other releases (or tfdoctor's own list) register: removed or newer flags


def registered_xla_flags(facts: Facts) -> RegisteredFlags | None:
    """XLA_FLAGS names the installed XLA registers: the installed library's own list (the xla_flag_names
    probe, read only when the table cannot settle the names) first, tfdoctor/knowledge/xla_flags.toml's row
    for the installed release second; None when neither is there (no verdict)."""
    from tfdoctor import knowledge

    rows = knowledge.table_rows("xla_flags")
    elsewhere = frozenset(name for row in rows for name in row["flags"])
    version = _installed_version(facts)
    read = facts.peek("xla_flag_names")
    if isinstance(read, dict) and isinstance(read.get("flags"), list):
        library = str(read.get("library", "the installed TensorFlow's library"))
        return RegisteredFlags(frozenset(str(n) for n in read["flags"]), version, library, elsewhere)
    row = release_row(rows, version) if version else None
    if row is None:
        return None
    return RegisteredFlags(frozenset(row["flags"]), version, f"the TensorFlow {row['release']} wheel (xla_flags.toml)",
                           elsewhere)


def registered_tf_xla_flags(facts: Facts) -> RegisteredFlags | None:
    """TF_XLA_FLAGS names the installed TensorFlow registers (tfdoctor/knowledge/tf_xla_flags.toml's row for
    its release); None when the release is unknown or outside the table (no verdict)."""
    from tfdoctor import knowledge
    from tfdoctor.derive.tf_xla_known import TF_XLA_KNOWN

    version = _installed_version(facts)
    rows = knowledge.table_rows("tf_xla_flags")
    row = release_row(rows, version) if version else None
    if row is None:
        return None
    elsewhere = TF_XLA_KNOWN | frozenset(name for r in rows for name in r["flags"])
    return RegisteredFlags(frozenset(row["flags"]), version,
                           f"the TensorFlow {row['release']} wheel (tf_xla_flags.toml)", elsewhere)


def releases_registering(table: str, name: str) -> tuple[str, ...]:
    """The releases of a flag-list table whose list holds `name`, oldest first."""
    from tfdoctor import knowledge
    from tfdoctor.derive.versions import version_tuple

    return tuple(sorted((str(r["release"]) for r in knowledge.table_rows(table) if name in r["flags"]),
                        key=version_tuple))


@value_tuple
class FlagVerdict:
    """An XLA_FLAGS name the installed XLA does not register although another listed release's does."""

    name: str
    release: str  # the installed TensorFlow release
    read_from: str  # where the installed release's list was read (RegisteredFlags.read_from)
    known_in: tuple[str, ...]  # the listed releases whose XLA registers the name, oldest first
    newer: bool  # every release that knows it is newer than the installed one
    older: bool  # every release that knows it is older than the installed one


def xla_flag_verdicts(facts: Facts, names: list[str]) -> list[FlagVerdict]:
    """The names of `names` that the installed XLA does not register (registered_xla_flags: the installed
    library first, the table second) although a listed release's does: what XLA108 reports. [] when there
    is no list for the installed release (no verdict) or its release cannot be read."""
    from tfdoctor.derive.versions import version_tuple

    registered = registered_xla_flags(facts)
    if registered is None or registered.release is None:
        return []
    here = version_tuple(registered.release)
    verdicts = []
    for name in dict.fromkeys(names):
        if name in registered.names or name not in registered.elsewhere:
            continue
        known_in = releases_registering("xla_flags", name)
        verdicts.append(FlagVerdict(name, registered.release, registered.read_from, known_in,
                                    newer=all(version_tuple(k) > here for k in known_in),
                                    older=all(version_tuple(k) < here for k in known_in)))
    return verdicts
