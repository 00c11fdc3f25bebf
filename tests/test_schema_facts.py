"""Every fact path a check reads is declared in facts.schema.json (recorded over every facts file the
tests keep: the recorded snapshots and the healthy corpus)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.fact_reads import declared, recorded_reads, undeclared

from tfdoctor.facts import Facts

TESTS = Path(__file__).resolve().parent
FACT_FILES = sorted(p for folder in ("snapshots", "healthy") for p in (TESTS / folder).rglob("*.json")
                    if '"sections"' in p.read_text()[:4000])


def test_there_are_facts_files_to_walk():
    assert len(FACT_FILES) >= 30


def test_every_fact_path_a_check_reads_is_in_the_schema():
    reads = recorded_reads(Facts.load(p) for p in FACT_FILES)
    assert "nvml.devices.[].persistence_mode" in reads  # device fields are recorded too
    assert undeclared(reads) == []


@pytest.mark.parametrize("path, expected", [
    ("nvml.driver_version", True),
    ("nvml.devices.[].ecc.uncorrected_volatile", True),
    ("nvml.devices.[].ecc.no_such_counter", False),
    ("nvml.devices.[].persistence_mode", True),
    ("env.variables.OMP_NUM_THREADS", True),  # a map: any variable
    ("nvml.devices.[].no_such_field", False),
    ("no_section.x", False),
])
def test_the_schema_walk(path, expected):
    assert declared(path) is expected
