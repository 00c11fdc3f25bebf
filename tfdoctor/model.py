"""The data every layer passes on: severities, fixes, findings and check results.

Everything here is a frozen dataclass of plain values so that a report can be compared in tests,
written as JSON and rendered by any renderer without the renderer knowing where it came from.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from tfdoctor.records import field, record

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import Any


class Severity(enum.IntEnum):
    """Ordered so that `--fail-on` can compare: INFO < WARNING < ERROR."""

    INFO = 1
    WARNING = 2
    ERROR = 3

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Severity:
        try:
            return cls[text.upper()]
        except KeyError:
            raise ValueError(f"unknown severity {text!r} (expected error, warning or info)") from None


class Applicability(str, enum.Enum):
    """Whether `tfdoctor fix` may apply a fix on its own.

    SAFE: changes no numerics and cannot slow a workload. UNSAFE: may change numerics or slow some
    workloads; applied only with --unsafe-fixes. MANUAL: needs a person (root, reboot, a container flag);
    shown, never written into a script.
    """

    SAFE = "safe"
    UNSAFE = "unsafe"
    MANUAL = "manual"


class EnvOp(str, enum.Enum):
    SET = "set"
    UNSET = "unset"
    PREPEND = "prepend"  # prepend one entry to a ':'-separated path list unless it is already there


@record(frozen=True)
class EnvChange:
    """One change to an environment variable: set it, unset it, or prepend an entry to a path list."""

    op: EnvOp
    name: str
    value: str | None = None  # None only for UNSET

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"op": self.op.value, "name": self.name}
        if self.value is not None:
            data["value"] = self.value
        return data


def set_env(name: str, value: str) -> EnvChange:
    return EnvChange(EnvOp.SET, name, value)


def unset_env(name: str) -> EnvChange:
    return EnvChange(EnvOp.UNSET, name)


def prepend_path(name: str, entry: str) -> EnvChange:
    return EnvChange(EnvOp.PREPEND, name, entry)


@record(frozen=True)
class EnvFix:
    """Environment changes that a sourced script applies."""

    title: str
    changes: tuple[EnvChange, ...]
    applicability: Applicability = Applicability.SAFE
    kind: str = field(default="env", init=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "title": self.title,
            "applicability": self.applicability.value,
            "changes": [c.to_json() for c in self.changes],
        }


@record(frozen=True)
class PythonFix:
    """Code that must run inside the training process (what no environment variable can set)."""

    title: str
    code: str
    applicability: Applicability = Applicability.UNSAFE
    kind: str = field(default="python", init=False)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "title": self.title, "applicability": self.applicability.value,
                "code": self.code}


@record(frozen=True)
class AdminFix:
    """Instructions for an administrator: shown to the user, never written into a script.

    One shape, as every fix: `steps` holds only commands, each a line one could type (a `# comment` after it
    at most); what a person must do by hand or decide — edit a file, reseat a card, choose between two ways
    — is prose, in `text`. A fix with no command that works (no such release; a conflict) has no steps."""

    title: str
    steps: tuple[str, ...]
    applicability: Applicability = field(default=Applicability.MANUAL)
    text: str = ""
    kind: str = field(default="admin", init=False)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"kind": self.kind, "title": self.title, "applicability": self.applicability.value,
                                "steps": list(self.steps)}
        if self.text:
            data["text"] = self.text
        return data


Fix = EnvFix | PythonFix | AdminFix


def fix_from_json(data: Mapping[str, Any]) -> Fix:
    kind = data["kind"]
    applicability = Applicability(data["applicability"])
    if kind == "env":
        changes = tuple(EnvChange(EnvOp(c["op"]), c["name"], c.get("value")) for c in data["changes"])
        return EnvFix(data["title"], changes, applicability)
    if kind == "python":
        return PythonFix(data["title"], data["code"], applicability)
    if kind == "admin":
        return AdminFix(data["title"], tuple(data["steps"]), applicability, str(data.get("text", "")))
    raise ValueError(f"unknown fix kind {kind!r}")


@record(frozen=True)
class Finding:
    """One problem a check observed. `code`, `name` and `severity` are filled in by the engine."""

    message: str
    evidence: Mapping[str, Any] = field(default_factory=dict)
    fixes: tuple[Fix, ...] = ()
    severity: Severity | None = None  # None: the check's own severity
    code: str = ""
    name: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "name": self.name,
            "severity": self.severity.label if self.severity else None,
            "message": self.message,
            "evidence": dict(self.evidence),
            "fixes": [f.to_json() for f in self.fixes],
        }


class Status(str, enum.Enum):
    PASSED = "passed"  # ran, found nothing
    FAILED = "failed"  # ran, yielded findings (written "info" in JSON when all of them are info)
    NOT_CHECKED = "not-checked"  # a fact it needs is unknown
    NOT_APPLICABLE = "not-applicable"  # nothing here for it to look at (a GPU check without a GPU)
    CRASHED = "crashed"  # the check raised


@record(frozen=True)
class CheckResult:
    """One check's outcome: passed, failed with findings, not checked, not applicable or crashed (with the
    reason)."""

    code: str
    name: str
    severity: Severity
    status: Status
    findings: tuple[Finding, ...] = ()
    reason: str = ""  # why not checked or not applicable, or what the crash was

    @property
    def worst(self) -> Severity | None:
        if not self.findings:
            return None
        return max(f.severity or self.severity for f in self.findings)

    @property
    def reported_status(self) -> str:
        """The status a reader sees: "info" when every finding is info, so that a JSON reader filtering on
        "failed" finds only what is worth a warning or an error (report schema 2)."""
        if self.status is Status.FAILED and self.worst is Severity.INFO:
            return "info"
        return self.status.value

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "code": self.code,
            "name": self.name,
            # The record's severity is that of its worst finding; the check's declared one stays readable.
            "severity": (self.worst or self.severity).label,
            "default_severity": self.severity.label,
            "status": self.reported_status,
            "findings": [f.to_json() for f in self.findings],
        }
        if self.reason:
            data["reason"] = self.reason
        return data
