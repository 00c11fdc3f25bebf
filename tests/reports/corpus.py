"""The registry of real reports and the one way a report is judged.

A `RealReport` is one problem a user reported in public (an issue thread, a forum post), rebuilt as the
machine the report describes: a tree under a FakeRoot (or a recorded facts file), examined exactly as
tests/healthy/ examines its machines. `expect` is written from the report, before tfdoctor is run on
it: the codes that name the cause the thread found. A report is *diagnosed* when one of them fires at
`least` or above. Each report names its healthy twin in tests/healthy/: the same machine set up right,
which must stay silent.

`split` is chosen when the report is added and never changed: "dev" reports are what the checks were
written against (tests/test_real_reports.py holds them diagnosed); "heldout" reports are measured, not
asserted (benchmarks/real_reports.py prints the figure that docs/real-reports.md cites).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from healthy.corpus import HealthyMachine, check_recorded, collect
from healthy.parts import PythonEnv

from tfdoctor.engine import Report
from tfdoctor.model import Severity
from tfdoctor.testing import FakeRoot
from tfdoctor.testing.fake_nvml import FakeGpu

SPLITS = ("dev", "heldout")
# The categories of the third held-out set (issues 35 and 36), and those of the earlier sets.
CATEGORIES = ("containers", "launchers", "networking", "severity", "release", "platforms", "pyenv",
              "cuda-chain")


@dataclass(frozen=True)
class RealReport:
    name: str
    source: str  # the public thread, as an https:// address
    category: str  # one of CATEGORIES
    split: str  # "dev" or "heldout", fixed when the report is added
    about: str  # the reported symptom and the cause the thread found, in one line
    expect: tuple[str, ...]  # codes naming that cause; any one at `least` or above diagnoses the report
    twin: str  # the name of its healthy twin in tests/healthy/
    build: Callable[[FakeRoot], Sequence[FakeGpu] | None] | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    python: PythonEnv | None = None
    nvml: Mapping[str, Any] = field(default_factory=dict)
    facts: str | None = None  # a recorded facts file (relative to the repository) instead of a tree
    sections: Mapping[str, Any] = field(default_factory=dict)
    least: Severity = Severity.WARNING

    def machine(self) -> HealthyMachine:
        """The report's machine in the shape tests/healthy/ examines (nothing is assumed healthy of it)."""
        return HealthyMachine(self.name, (), self.about, self.build, self.env, self.python, self.nvml,
                              self.facts, self.sections)


REPORTS: list[RealReport] = []


def register(*reports: RealReport) -> None:
    for report in reports:
        problems = []
        if report.build is None and report.facts is None:
            problems.append("a report is built (build=) or recorded (facts=)")
        if any(r.name == report.name for r in REPORTS):
            problems.append("two reports of that name")
        if report.split not in SPLITS:
            problems.append(f"split {report.split!r} is not one of {SPLITS}")
        if report.category not in CATEGORIES:
            problems.append(f"category {report.category!r} is not one of {CATEGORIES}")
        if not re.fullmatch(r"https://[^\s]+", report.source):
            problems.append(f"source {report.source!r} is not an https:// address")
        if not report.expect or not all(re.fullmatch(r"[A-Z]+[0-9]{3}", c) for c in report.expect):
            problems.append(f"expect {report.expect!r} names no check code")
        if problems:
            raise ValueError(f"{report.name}: " + "; ".join(problems))
        REPORTS.append(report)


def examine(report: RealReport, tmp: Path) -> Report:
    return check_recorded(collect(report.machine(), tmp))


def diagnosed(report: RealReport, result: Report) -> list[str]:
    """The expected codes that fired at the report's `least` severity or above (empty: not diagnosed)."""
    return sorted({f.code for f in result.findings()
                   if f.code in report.expect and f.severity is not None and f.severity >= report.least})
