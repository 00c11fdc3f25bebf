"""The corpus of real reports (tests/reports/, issues 35 and 36): every report of the dev split is
diagnosed by one of the codes it was labelled with, every report names a healthy twin that exists in
tests/healthy/ (whose silence tests/test_healthy_corpus.py holds), and the held-out split stays measured
by benchmarks/real_reports.py, not asserted here."""

from __future__ import annotations

import pytest
from healthy import MACHINES
from reports import REPORTS, RealReport, diagnosed, examine, register

from tfdoctor.registry import load_registry

DEV = [pytest.param(r, id=r.name) for r in REPORTS if r.split == "dev"]


@pytest.mark.parametrize("report", DEV)
def test_dev_report_is_diagnosed(report: RealReport, tmp_path) -> None:
    result = examine(report, tmp_path)
    crashed = [f"{r.code}: {r.reason}" for r in result.crashed()]
    assert not crashed, f"{report.name}: checks crashed: {crashed}"
    seen = sorted(f"{f.code} {f.severity.label if f.severity else '?'}: {f.message}" for f in result.findings())
    assert diagnosed(report, result), (f"{report.name} ({report.source}): none of {report.expect} at "
                                       f"{report.least.label} or above; findings: {seen}")


@pytest.mark.parametrize("report", [pytest.param(r, id=r.name) for r in REPORTS])
def test_report_is_labelled_with_codes_that_exist_and_a_twin_in_the_healthy_corpus(report: RealReport) -> None:
    codes = {c.code for c in load_registry().checks}
    assert set(report.expect) <= codes, f"{report.name}: unknown codes {sorted(set(report.expect) - codes)}"
    assert report.twin in {m.name for m in MACHINES}, f"{report.name}: no healthy machine {report.twin!r}"


def test_register_refuses_a_report_without_a_source_a_split_or_codes() -> None:
    def bad(**changes) -> RealReport:
        fields = dict(name="bad", source="https://github.com/tensorflow/tensorflow/issues/1",
                      category="containers", split="dev", about="a bad record", expect=("DRV001",),
                      twin="laptop-cpu-venv", facts="tests/snapshots/cpu-only-vm-tensorflow-2.21.json")
        return RealReport(**{**fields, **changes})

    for changes, message in [({"source": "a forum somewhere"}, "not an https:// address"),
                             ({"split": "train"}, "split 'train'"), ({"expect": ()}, "names no check code"),
                             ({"category": "misc"}, "category 'misc'"), ({"facts": None}, "built \\(build=\\)")]:
        with pytest.raises(ValueError, match=message):
            register(bad(**changes))
    assert all(r.name != "bad" for r in REPORTS)


def test_the_documented_dev_row_counts_the_corpus() -> None:
    """docs/real-reports.md's dev row names as many reports and categories as the corpus holds."""
    import re
    from pathlib import Path

    page = (Path(__file__).parent.parent / "docs" / "real-reports.md").read_text(encoding="utf-8")
    words = {"five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}
    row = re.search(r"^\| dev \| all \((\w+) categories\) \| \d+ of (\d+) \|", page, re.MULTILINE)
    assert row is not None
    dev = [r for r in REPORTS if r.split == "dev"]
    assert (words.get(row[1]), int(row[2])) == (len({r.category for r in dev}), len(dev))
