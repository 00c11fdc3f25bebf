"""Run probes under timeouts, run the selected checks over the facts, contain every failure.

Probes run concurrently in daemon threads: most of them wait on the file system or a subprocess, and a
probe that hangs (NVML on a wedged driver) is abandoned at its deadline, its section recorded as
unknown. `facts.abandoned.abandoned_probes()` tells the CLI whether it must leave with os._exit, since a thread stuck
in C code could otherwise hold the interpreter at shutdown.
"""

from __future__ import annotations

import collections
import os
import threading
import time
from collections.abc import Iterable

from tfdoctor import __version__
from tfdoctor.facts import Facts, NotApplicable, NotChecked, Unknown
from tfdoctor.facts.abandoned import note_abandoned
from tfdoctor.facts.machine import Machine
from tfdoctor.facts.redact import excerpt
from tfdoctor.model import CheckResult, Finding, Severity, Status
from tfdoctor.records import field, record
from tfdoctor.registry import CheckSpec, ProbeSpec

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import Any

# A probe that has held its lane this long without finishing gets the probes still waiting a new lane.
# Quick probes thus run one after another on one thread: seventeen threads handing the GIL to each other
# at every read and stat cost more than the probes themselves (measured: ~60 ms against ~40 ms serial on
# a 2-CPU node). One that waits (a subprocess, NVML, a hung NFS mount) holds the rest up this long only.
HANDOFF_S = 0.05


def gather_facts(
    probes: Iterable[ProbeSpec], machine: Machine, deadline: float | None = None
) -> Facts:
    """Run every probe; each fills its own section or leaves an Unknown with the reason.

    Probes run in lanes (daemon threads) taking them in turn from one queue. A probe still running when
    its time is up (its own timeout, else the machine's, counted from the start, and never past
    `deadline`) is abandoned in its lane, and its section is unknown."""
    # A probe that will wait on a child process (`--python`'s interpreter) is taken first, by a lane of its
    # own opened at once: the child runs on another CPU while the other probes run in the next lane.
    probes = list(probes)
    early = [spec for spec in probes if spec.waits_on_child is not None and _waits(spec, machine)]
    start = time.monotonic()
    limits = {spec.section: spec.timeout if spec.timeout is not None else machine.timeout for spec in probes}
    ends = {section: start + limit if deadline is None else min(start + limit, deadline)
            for section, limit in limits.items()}
    waiting = collections.deque([*early, *(spec for spec in probes if spec not in early)])
    running: dict[threading.Thread, tuple[ProbeSpec, float]] = {}  # busy lane -> (its probe, started at)
    given_up: set[str] = set()
    results: dict[str, Any] = {}
    timings: dict[str, float] = {}
    changed = threading.Condition()

    def take(lane: threading.Thread) -> ProbeSpec | None:
        """The next probe for `lane` (the lock held): a lane is in `running` exactly while it has one."""
        if not waiting:
            return None
        spec = waiting.popleft()
        lane.name = f"probe-{spec.section}"  # what abandoned_probes() names if it hangs here
        running[lane] = (spec, time.monotonic())
        return spec

    def work() -> None:
        me = threading.current_thread()
        with changed:
            spec = running[me][0] if me in running else None  # given it by open_lane
        while spec is not None:
            began = time.perf_counter()
            try:
                value: Any = _short_reasons(spec.func(machine))
            except Exception as exc:  # a probe bug must cost one section, not the run
                value = Unknown(f"probe {spec.section} failed: {type(exc).__name__}: "
                                f"{excerpt(str(exc), REASON_CHARS)}")
            with changed:
                running.pop(me, None)
                if spec.section not in given_up:  # a late answer is not mixed into a report already made
                    results[spec.section] = value
                    timings[spec.section] = round(time.perf_counter() - began, 4)
                spec = take(me)
                if not running:
                    changed.notify()  # all done: wake the gatherer

    def open_lane() -> None:
        lane = threading.Thread(target=work, name="probe-lane", daemon=True)
        take(lane)
        lane.start()

    with changed:
        for _ in early:
            open_lane()
        while True:
            now = time.monotonic()
            for lane, (spec, _) in list(running.items()):
                if now >= ends[spec.section]:  # its time is up: the lane is left to it
                    given_up.add(spec.section)
                    del running[lane]
                    note_abandoned(lane)
            if not (waiting or running) or now >= max(ends.values()):
                break
            wake = min([ends[spec.section] for spec, _ in running.values()] + [max(ends.values())])
            if waiting:
                # A new lane once every lane has been held by one probe for HANDOFF_S (or none is left); the
                # lanes of probes waiting on a child do not count: they wait, they do not hold up the rest.
                handoff = max((began + HANDOFF_S for spec, began in running.values() if spec not in early),
                              default=now)
                if now >= handoff:
                    open_lane()
                    handoff = now + HANDOFF_S
                wake = min(wake, handoff)
            changed.wait(max(0.0, wake - now))
        waiting.clear()  # a lane that recovers after the deadline starts nothing more
        sections: dict[str, Any] = {}
        for spec in probes:
            if spec.section in results:
                sections[spec.section] = results[spec.section]
            else:
                given_up.add(spec.section)
                sections[spec.section] = Unknown(f"probe {spec.section} timed out after {limits[spec.section]:g} s")
    meta = {
        "tfdoctor_version": __version__,
        # time.strftime and os.uname, not datetime and socket: two imports fewer on the hook's path.
        "collected_at": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()),
        "hostname": _hostname() if machine.is_live else "fake-root",
        "root": os.fspath(machine.root),
        "probe_seconds": dict(sorted(timings.items())),
    }
    return Facts(dict(sorted(sections.items())), meta)


def _waits(spec: ProbeSpec, machine: Machine) -> bool:
    """The probe's own answer; a plugin's that raises only loses the head start."""
    try:
        return bool(spec.waits_on_child(machine))  # type: ignore[misc]
    except Exception:
        return False


REASON_CHARS = 300


def _short_reasons(value: Any) -> Any:
    """Every Unknown's reason as a short, single-line, redacted excerpt: a reason may quote what a probe
    read (a malformed file's content, an interpreter's stderr), and a report must not carry more of it."""
    if isinstance(value, Unknown):
        reason = excerpt(value.reason, REASON_CHARS)
        return value if reason == value.reason else Unknown(reason)
    if isinstance(value, dict):
        return {k: _short_reasons(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_short_reasons(v) for v in value]
    return value


def _hostname() -> str:
    try:
        return os.uname().nodename
    except AttributeError:  # not POSIX
        import socket

        return socket.gethostname()


@record
class Report:
    """What one run found: every check's result, the facts they read and the plugins that failed to load."""

    results: list[CheckResult]
    facts: Facts
    plugin_errors: list[str] = field(default_factory=list)

    def findings(self) -> list[Finding]:
        return [f for r in self.results for f in r.findings]

    def codes(self) -> list[str]:
        """Codes of the checks that found something, in report order (tests compare this)."""
        return [r.code for r in self.results if r.status is Status.FAILED]

    def result(self, code: str) -> CheckResult:
        return next(r for r in self.results if r.code == code)

    def worst(self) -> Severity | None:
        levels = [f.severity for f in self.findings() if f.severity is not None]
        return max(levels) if levels else None

    def crashed(self) -> list[CheckResult]:
        return [r for r in self.results if r.status is Status.CRASHED]

    def counts(self) -> dict[str, int]:
        counts = {s.label: 0 for s in Severity} | {
            "not-checked": 0, "crashed": 0, "passed": 0, "not-applicable": 0}
        for result in self.results:
            if result.status is Status.FAILED:
                for finding in result.findings:
                    counts[(finding.severity or result.severity).label] += 1
            else:
                counts[result.status.value] += 1
        return counts


def run_check(spec: CheckSpec, facts: Facts) -> CheckResult:
    try:
        raw = list(spec.func(facts) or ())
    except NotChecked as exc:
        from tfdoctor.derive.applicability import gpu_only, platform_reason

        platform = platform_reason(facts) if gpu_only(spec.code) else None  # a Jetson, a Mac: not "unknown"
        return CheckResult(spec.code, spec.name, spec.severity,
                           Status.NOT_APPLICABLE if platform else Status.NOT_CHECKED,
                           reason=excerpt(platform or exc.reason, REASON_CHARS))
    except NotApplicable as exc:
        return CheckResult(spec.code, spec.name, spec.severity, Status.NOT_APPLICABLE,
                           reason=excerpt(exc.reason, REASON_CHARS))
    except Exception as exc:
        import traceback  # only for a crashed check: off the healthy hook's path

        where = traceback.extract_tb(exc.__traceback__)[-1]
        reason = (f"{type(exc).__name__}: {excerpt(str(exc), REASON_CHARS)} "
                  f"(at {where.filename.rsplit('/', 1)[-1]}:{where.lineno})")
        return CheckResult(spec.code, spec.name, spec.severity, Status.CRASHED, reason=reason)
    findings = tuple(
        Finding(
            message=f.message,
            evidence=f.evidence,
            fixes=f.fixes,
            severity=f.severity or spec.severity,
            code=spec.code,
            name=spec.name,
        )
        for f in raw
    )
    if not findings:
        from tfdoctor.derive.applicability import gpu_only, no_gpu_reason, no_tensorflow_reason, tensorflow_only

        reason = no_gpu_reason(facts) if gpu_only(spec.code) else None
        if reason is None and tensorflow_only(spec.code):
            reason = no_tensorflow_reason(facts)
        if reason:
            return CheckResult(spec.code, spec.name, spec.severity, Status.NOT_APPLICABLE, reason=reason)
        return CheckResult(spec.code, spec.name, spec.severity, Status.PASSED)
    return CheckResult(spec.code, spec.name, spec.severity, Status.FAILED, findings)


def run_checks(
    checks: Iterable[CheckSpec], facts: Facts, plugin_errors: Iterable[str] = (), deadline: float | None = None
) -> Report:
    """Every check, in order. With a `deadline` (time.monotonic()) the checks run in a worker thread, and
    any check not finished by then is reported not checked, like a probe that ran out of time: a check
    stuck on a pathological fact must not hold the pre-job hook."""
    checks = list(checks)
    if deadline is None:
        return Report([run_check(spec, facts) for spec in checks], facts, list(plugin_errors))
    done: list[CheckResult] = []

    def work() -> None:
        for spec in checks:
            result = run_check(spec, facts)
            done.append(result)  # list.append is atomic: the waiting thread reads a consistent prefix

    worker = threading.Thread(target=work, name="checks", daemon=True)
    worker.start()
    worker.join(max(0.0, deadline - time.monotonic()))
    results = list(done)
    if worker.is_alive():
        note_abandoned(worker)  # it may hold the interpreter at exit: the CLI leaves with os._exit
        results += [CheckResult(spec.code, spec.name, spec.severity, Status.NOT_CHECKED,
                                reason="did not finish within the --timeout budget")
                    for spec in checks[len(results):]]
    return Report(results, facts, list(plugin_errors))


def should_fail(report: Report, fail_on: str) -> bool:
    if fail_on == "never":
        return False
    worst = report.worst()
    return worst is not None and worst >= Severity.parse(fail_on)
