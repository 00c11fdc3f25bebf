"""Facts: what the probes read off a machine, as plain JSON-able data.

A fact that could not be read is an `Unknown` carrying its reason. In JSON it is written as
`{"$unknown": "<reason>"}` wherever a value would stand, so a replayed facts file keeps the reason.
Checks read facts with `Facts.get`, which raises `NotChecked` when the fact is unknown; the engine turns
that into a "not checked: <reason>" result, so no check needs to handle unknowns by hand.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from tfdoctor.records import record

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import Any

SCHEMA_VERSION = 1
# A facts file of a large node is a few hundred KB; parsed JSON takes several times its size in memory.
FACTS_FILE_LIMIT = 16 * 1024 * 1024
UNKNOWN_KEY = "$unknown"
_MISSING: Any = object()


@record(frozen=True)
class Unknown:
    """A fact that could not be read, and why."""

    reason: str

    def __bool__(self) -> bool:  # an unknown must never pass for a truthy fact
        return False


class NotChecked(Exception):
    """Raised by `Facts.get` for an unknown fact: the check cannot run and says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class NotApplicable(Exception):
    """Raised by a check that cannot apply to this machine (a GPU check on a host without a GPU)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class FactsFileError(Exception):
    """A facts file that cannot be replayed: not JSON, another schema version, wrong shape."""


def to_jsonable(value: Any) -> Any:
    if isinstance(value, Unknown):
        return {UNKNOWN_KEY: value.reason}
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    return value


def from_jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {UNKNOWN_KEY}:
            return Unknown(str(value[UNKNOWN_KEY]))
        return {k: from_jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_jsonable(v) for v in value]
    return value


def _unknown_from_object(value: dict[str, Any]) -> Any:
    if len(value) == 1 and UNKNOWN_KEY in value:
        return Unknown(str(value[UNKNOWN_KEY]))
    return value


def _as_parsed(value: Any) -> Any:
    return value


class Facts:
    """All sections gathered for one machine (or one replayed file).

    `sections` maps a section name ("env", "cpu", "cgroup", …) to a dict of values, or to an `Unknown`
    when the whole probe failed. `meta` holds who collected what, when.
    """

    def __init__(self, sections: Mapping[str, Any], meta: Mapping[str, Any] | None = None) -> None:
        self.sections: dict[str, Any] = dict(sections)
        self.meta: dict[str, Any] = dict(meta or {})

    # -- reading -------------------------------------------------------------------------------
    def get(self, path: str, default: Any = _MISSING) -> Any:
        """The value at a dotted path ("cpu.flags"); `default` when a key is absent.

        Raises NotChecked when the value, or any section on the way, is unknown; and when the key
        is absent and no default was given (the probe never collected it).
        """
        node: Any = self.sections
        walked: list[str] = []
        for part in path.split("."):
            walked.append(part)
            if isinstance(node, Unknown):
                raise NotChecked(f"{'.'.join(walked[:-1])} unknown: {node.reason}")
            if not isinstance(node, Mapping) or part not in node:
                if default is not _MISSING:
                    return default
                raise NotChecked(f"{'.'.join(walked)} was not collected")
            node = node[part]
        if isinstance(node, Unknown):
            raise NotChecked(f"{path} unknown: {node.reason}")
        return node

    def peek(self, path: str, default: Any = None) -> Any:
        """Like `get`, but never raises: the stored Unknown itself (the first met on the path), or
        `default` when a key is absent."""
        node: Any = self.sections
        for part in path.split("."):
            if isinstance(node, Unknown):
                return node
            if not isinstance(node, Mapping) or part not in node:
                return default
            node = node[part]
        return node

    def env(self, name: str) -> str | None:
        """An environment variable from the allowlisted environment fact; None when unset."""
        variables = self.get("env.variables")
        if not isinstance(variables, Mapping):
            raise NotChecked(f"env.variables holds a JSON {type(variables).__name__}, not an object")
        value = variables.get(name)
        return None if value is None else str(value)

    def has_section(self, name: str) -> bool:
        return name in self.sections and not isinstance(self.sections[name], Unknown)

    # -- JSON ----------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "meta": to_jsonable(self.meta),
            "sections": to_jsonable(self.sections),
        }

    def dumps(self) -> str:
        """The facts as a facts file holds them, secrets redacted: every writer of facts (`collect -o`,
        `profile --save-facts`) writes this, so none can skip the redactor."""
        from tfdoctor.facts.redact import redact_value

        # ensure_ascii keeps non-UTF-8 environment bytes (lone surrogates) round-tripping.
        return json.dumps(redact_value(self.to_json()), indent=2, sort_keys=True, ensure_ascii=True)

    @classmethod
    def from_json(cls, data: Any) -> Facts:
        return cls._from_data(data, from_jsonable)

    @classmethod
    def _from_data(cls, data: Any, convert: Any) -> Facts:
        if not isinstance(data, dict):
            raise FactsFileError("a facts file holds a JSON object at the top")
        version = data.get("schema_version")
        if version != SCHEMA_VERSION:
            raise FactsFileError(
                f"facts schema version {version!r} is not supported (this tfdoctor reads version "
                f"{SCHEMA_VERSION}); collect the facts again with this tfdoctor"
            )
        sections = data.get("sections")
        if not isinstance(sections, dict):
            raise FactsFileError("a facts file needs a 'sections' object")
        meta = data.get("meta", {})
        return cls(convert(sections), convert(meta) if isinstance(meta, dict) else {})

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Facts:
        """A facts file: a regular file (a FIFO or device is refused, never waited on) of bounded size."""
        from tfdoctor.facts.bounded import InputFileError, read_input_file

        try:
            raw = read_input_file(path, FACTS_FILE_LIMIT, "facts file")
        except InputFileError as exc:
            raise FactsFileError(str(exc)) from None
        try:
            # Unknowns are rebuilt by the parser itself: a second walk over a large file costs as much again.
            data = json.loads(raw.decode("utf-8"), object_hook=_unknown_from_object)
        except (ValueError, RecursionError) as exc:
            # ValueError covers bad UTF-8, bad JSON and integers too long to convert; RecursionError, nesting
            # deeper than the parser can follow.
            raise FactsFileError(f"facts file {path} is not JSON: {exc}") from None
        from tfdoctor.facts.bounded import JSON_DEPTH_LIMIT, json_too_deep

        if json_too_deep(data):
            raise FactsFileError(f"facts file {path} nests values more than {JSON_DEPTH_LIMIT} levels deep: "
                                 "not a facts file")
        return cls._from_data(data, _as_parsed)
