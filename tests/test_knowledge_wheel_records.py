"""The release tables agree with the real wheels: every row of tensorflow_builds from 2.9 on against the
records `python -m tfdoctor.knowledge.extract` wrote from the real tensorflow wheels
(tests/data/wheel_records/), and the log lines and dependency rows whose first release the records show."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tfdoctor import knowledge
from tfdoctor.derive.versions import version_tuple

RECORDS_DIR = Path(__file__).resolve().parent / "data" / "wheel_records"
RECORDS = {r["version"]: r for r in (json.loads(p.read_text()) for p in sorted(RECORDS_DIR.glob("*.json")))}
ROWS = knowledge.table("tensorflow_builds").rows
FRAMEWORK = "tensorflow/libtensorflow_framework.so.2"


def _row(version: str) -> dict:
    return next(r for r in ROWS if version_tuple(r["tensorflow"])[:2] == version_tuple(version)[:2])


def _release_key(version: str) -> tuple:
    """2.16.0rc0 sorts before 2.16.0 and 2.16.1."""
    head, _, rc = version.partition("rc")
    return (*version_tuple(head), 0 if rc else 1, int(rc or 0))


def _framework_folders(record: dict) -> set[str]:
    """site-packages/nvidia/<folder>/lib folders the framework's RUNPATH names ($ORIGIN is tensorflow/)."""
    runpath = record["libraries"].get(FRAMEWORK, {}).get("runpath") or []
    return {e.split("/")[3] for e in runpath if e.startswith("$ORIGIN/../nvidia/") and e.endswith("/lib")}


def _spec_floor(spec: str) -> tuple[int, ...]:
    """"==9.3.0.75" or ">=9.3.0.75,<10" -> (9, 3, 0, 75)."""
    for clause in spec.split(","):
        if clause.startswith(("==", ">=")):
            return version_tuple(clause[2:])
    return ()


def test_every_row_from_2_9_has_a_record():
    missing = [r["tensorflow"] for r in ROWS
               if version_tuple(r["tensorflow"]) >= (2, 9) and not any(_row(v) is r for v in RECORDS)]
    assert missing == []


@pytest.mark.parametrize("version", sorted(RECORDS, key=_release_key))
def test_row_agrees_with_the_wheel(version):
    record, row = RECORDS[version], _row(version)
    info = record["build_info"]
    assert record["name"] == "tensorflow" and info["is_cuda_build"] is True
    assert version_tuple(info["cuda_version"])[:2] == version_tuple(row["cuda"])
    assert version_tuple(info["cudnn_version"])[:1] == version_tuple(row["cudnn"])[:1]
    assert bool(record["and_cuda"]) == row["and_cuda"]
    cudnn = next((s for n, s in record["and_cuda"].items() if n.startswith("nvidia-cudnn-")), None)
    if cudnn:  # the pin (or the range's floor) is where the table's cuDNN minor comes from
        assert _spec_floor(cudnn)[:2] == version_tuple(row["cudnn"])
    banners = {lib["nccl_banner"] for lib in record["libraries"].values() if lib.get("nccl_banner")}
    if row["nccl"] == "static":
        assert banners == {row["nccl_version"]} or {b.split("+")[0] for b in banners} == {row["nccl_version"]}
        assert "nccl" not in _framework_folders(record)
    else:
        assert banners == set() and "nccl" in _framework_folders(record)
    reaches = row.get("runpath_by_build", {}).get(version, row["runpath"])
    assert _framework_folders(record) == set(reaches)


def test_nccl_is_compiled_in_from_2_14_to_2_20_and_loaded_by_2_21():
    linkage = {v: _row(v)["nccl"] for v in RECORDS if version_tuple(v)[:2] >= (2, 14)}
    assert {v for v, kind in linkage.items() if kind == "dynamic"} == {v for v in linkage if v.startswith("2.21.")}


def test_runpath_is_a_property_of_the_build():
    """2.16.1 reaches only cuda_runtime, 2.16.2 and 2.17.x every GPU-step folder (tensorflow#63362)."""
    assert _framework_folders(RECORDS["2.16.1"]) == {"cuda_runtime"}
    for version in ("2.16.2", "2.17.0", "2.17.1"):
        assert {"cublas", "cudnn", "cufft", "cusolver", "cusparse", "cuda_runtime"} <= _framework_folders(
            RECORDS[version]), version


def test_log_message_first_releases_agree_with_the_wheels():
    """A log_messages row that names the releases printing it (`tensorflow`) is true of every record."""
    from packaging.specifiers import SpecifierSet

    rows = {r["id"]: r for r in knowledge.table("log_messages").rows if r.get("tensorflow")}
    assert {"local-rendezvous-end-of-sequence", "cpu-instructions-onednn"} <= set(rows)
    for version, record in RECORDS.items():
        carried = {m for lib in record["libraries"].values() for m in lib.get("messages", [])}
        carried |= {m for found in record.get("message_files", {}).values() for m in found}
        for message, row in rows.items():
            printed = SpecifierSet(row["tensorflow"], prereleases=True).contains(version)
            assert (message in carried) == printed, (message, version)


def test_requires_python_floor_is_the_oldest_python_of_the_python_support_row():
    table = knowledge.table("python_compatibility")
    rows = {r["tensorflow"]: r for r in table.rows if r.get("kind") == "python-support"}
    compared = 0
    for version, record in RECORDS.items():
        row = rows.get(".".join(map(str, version_tuple(version)[:2])))
        if row is None:
            continue
        floor = version_tuple(record["requires_python"].removeprefix(">="))[:2]
        assert floor == version_tuple(row["python"][0]), version
        compared += 1
    assert compared >= 10


def test_xla_ptxas_exclusion_releases_agree_with_the_wheels():
    """The releases xla_ptxas.toml says refuse ptxas 12.3.103 are those whose XLA carries the exclusion."""
    from packaging.specifiers import SpecifierSet

    (row,) = [r for r in knowledge.table("xla_ptxas").rows if r["outcome"] == "skipped"]
    for version, record in RECORDS.items():
        carried = any("xla-ptxas-version-excluded" in lib.get("messages", []) for lib in record["libraries"].values())
        assert carried == SpecifierSet(row["tensorflow"], prereleases=True).contains(version), version


@pytest.mark.parametrize("version, breaks", [("2.9.3", True), ("2.10.1", True), ("2.11.1", True), ("2.12.1", False)])
def test_protobuf_4_breaks_the_releases_whose_gencode_predates_it(version, breaks):
    """2.9-2.11 ship _pb2 modules protobuf 4 refuses ("Descriptors cannot be created directly"); their
    wheels cap protobuf below 3.20, 2.12's allows 4.x."""
    from tfdoctor.derive.python_compatibility import known_break_row

    row = known_break_row("protobuf", "4.25.3", version)
    assert (row is not None and row["severity"] == "error"
            and "Descriptors cannot be created directly" in row["symptom"]) == breaks
    cap = next(r for r in RECORDS[version]["requires_dist"] if r.startswith("protobuf"))
    assert ("<3.20" in cap) == breaks, cap
