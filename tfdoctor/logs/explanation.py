"""Join the messages found in a log with what the related checks found on the machine (pure)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tfdoctor.logs.messages import Sighting
from tfdoctor.model import CheckResult, Severity, Status

# What a message comes to on this machine, from worst to mildest.
ERROR, WARNING, INFO, UNCONFIRMED, HARMLESS = "error", "warning", "info", "unconfirmed", "harmless"
VERDICTS = (ERROR, WARNING, INFO, UNCONFIRMED, HARMLESS)


@dataclass(frozen=True)
class ExplainedMessage:
    """A recognised log message, the related checks' results on this machine, and the verdict they lead to."""

    sighting: Sighting
    results: tuple[CheckResult, ...]  # the related checks, in the table's order
    verdict: str

    @property
    def crashed(self) -> bool:
        return any(r.status is Status.CRASHED for r in self.results)

    @property
    def without_gpu(self) -> bool:
        """The related GPU checks had nothing to look at: this machine has no NVIDIA GPU or driver."""
        return (any(r.status is Status.NOT_APPLICABLE for r in self.results)
                and not any(r.findings for r in self.results))


def verdict(sighting: Sighting, results: Sequence[CheckResult]) -> str:
    """error/warning/info: a related check found that; unconfirmed: the message signals a problem but no
    check found its cause here (the log may come from another machine); harmless: nothing to fix."""
    worst = max((r.worst for r in results if r.worst is not None), default=None)
    if worst is Severity.ERROR:
        return ERROR
    if worst is Severity.WARNING:
        return WARNING
    if worst is Severity.INFO and not sighting.message.harmless:
        return INFO
    return HARMLESS if sighting.message.harmless else UNCONFIRMED


def explain_sightings(sightings: Sequence[Sighting], results: Sequence[CheckResult]) -> list[ExplainedMessage]:
    by_code = {r.code: r for r in results}
    explained = []
    for sighting in sightings:
        related = tuple(by_code[c] for c in sighting.message.checks if c in by_code)
        explained.append(ExplainedMessage(sighting, related, verdict(sighting, related)))
    return explained


def counts(explained: Sequence[ExplainedMessage]) -> dict[str, int]:
    tally = dict.fromkeys(VERDICTS, 0)
    for item in explained:
        tally[item.verdict] += 1
    return tally
