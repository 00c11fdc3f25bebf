"""The GPU release tables (tfdoctor/knowledge/tensorflow_builds, cuda_drivers, cuda_sonames): internally
consistent, and the derivations read from them give the names and figures real releases use."""

from __future__ import annotations

import re

import pytest

from tfdoctor import knowledge
from tfdoctor.derive import cuda_releases as cr
from tfdoctor.derive.tf_build import TfBuild, version_tuple

TF_ROWS = knowledge.table("tensorflow_builds").rows
DRIVER_ROWS = knowledge.table("cuda_drivers").rows


@pytest.mark.parametrize("row", TF_ROWS, ids=lambda r: r["tensorflow"])
def test_every_tensorflow_release_maps_to_a_cuda_the_other_tables_know(row):
    for system in ("Linux", "Windows"):
        need = cr.driver_need(row["cuda"], system)
        assert need is not None and need.toolkit_driver, (row, system)
    assert cr.soname_row(row["cuda"]) is not None
    assert len(version_tuple(row["cudnn"])) == 2  # major.minor: the figure build_info lacks
    assert row["nccl"] in ("static", "dynamic")
    # The and-cuda extra (nvidia-* wheels) exists from 2.14; a RUNPATH to them only with it.
    assert row["and_cuda"] == (version_tuple(row["tensorflow"]) >= (2, 14))
    assert not row["runpath"] or row["and_cuda"]
    assert all(not reaches or row["and_cuda"] for reaches in row.get("runpath_by_build", {}).values())
    # NCCL is compiled in until 2.20 (the wheels carry its banner: tests/test_knowledge_wheel_records.py),
    # loaded by 2.21.
    assert (row["nccl"] == "dynamic") == (version_tuple(row["tensorflow"]) >= (2, 21))
    assert (row["nccl"] == "static") == ("nccl" not in row["runpath"])


def test_releases_are_listed_once_in_order():
    versions = [version_tuple(r["tensorflow"]) for r in TF_ROWS]
    assert versions == sorted(versions) and len(set(versions)) == len(versions)
    cudas = [version_tuple(r["cuda"]) for r in TF_ROWS]
    assert cudas == sorted(cudas)  # no release went back to an older CUDA


def test_driver_table_rises_with_cuda_and_respects_each_majors_floor():
    for column in ("linux", "windows"):
        ordered = sorted(DRIVER_ROWS, key=lambda r: version_tuple(r["cuda"]))
        drivers = [version_tuple(r[column]) for r in ordered]
        assert drivers == sorted(drivers), column
    floors = knowledge.table("cuda_drivers").data["minor_compatibility"]
    for row in DRIVER_ROWS:
        major = str(version_tuple(row["cuda"])[0])
        if major in floors and row["cuda"] != "11.0":  # 11.0 GA shipped before the 11.x floor (450.80.02)
            assert version_tuple(row["linux"]) >= version_tuple(floors[major]["linux"]), row


def test_cudnn_wheels_listed_are_of_their_generation():
    for row in knowledge.table("cuda_sonames").rows:
        if row.get("wheel_suffix"):
            assert all(v.split(".")[0] == row["cuda"].split(".")[0] for v in row["wheel_cuda"])


# Every CUDA generation TensorFlow 2.x shipped with, with the names its loader really asks for (the
# "Could not load dynamic library" lines of each generation).
SONAMES = {
    "10.0": {"cudart": "libcudart.so.10.0", "cublas": "libcublas.so.10.0", "cufft": "libcufft.so.10.0",
             "cusolver": "libcusolver.so.10.0", "cusparse": "libcusparse.so.10.0", "cupti": "libcupti.so.10.0"},
    "10.1": {"cudart": "libcudart.so.10.1", "cublas": "libcublas.so.10", "cublasLt": "libcublasLt.so.10",
             "cufft": "libcufft.so.10", "cusolver": "libcusolver.so.10", "cusparse": "libcusparse.so.10",
             "cupti": "libcupti.so.10.1"},
    "11.0": {"cudart": "libcudart.so.11.0", "cublas": "libcublas.so.11", "cublasLt": "libcublasLt.so.11",
             "cufft": "libcufft.so.10", "cusolver": "libcusolver.so.10", "cusparse": "libcusparse.so.11",
             "cupti": "libcupti.so.11.0"},
    "11.2": {"cudart": "libcudart.so.11.0", "cublas": "libcublas.so.11", "cublasLt": "libcublasLt.so.11",
             "cufft": "libcufft.so.10", "cusolver": "libcusolver.so.11", "cusparse": "libcusparse.so.11",
             "cupti": "libcupti.so.11.2"},
    "11.8": {"cudart": "libcudart.so.11.0", "cublas": "libcublas.so.11", "cublasLt": "libcublasLt.so.11",
             "cufft": "libcufft.so.10", "cusolver": "libcusolver.so.11", "cusparse": "libcusparse.so.11",
             "cupti": "libcupti.so.11.8"},
    "12.2": {"cudart": "libcudart.so.12", "cublas": "libcublas.so.12", "cublasLt": "libcublasLt.so.12",
             "cufft": "libcufft.so.11", "cusolver": "libcusolver.so.11", "cusparse": "libcusparse.so.12",
             "cupti": "libcupti.so.12"},
}
SONAMES["12.3"] = SONAMES["12.5"] = SONAMES["12.2"]


def test_every_cuda_generation_tensorflow_shipped_with_has_its_sonames():
    shipped = {r["cuda"] for r in TF_ROWS}
    assert shipped <= set(SONAMES), shipped - set(SONAMES)


@pytest.mark.parametrize("cuda", sorted(SONAMES))
def test_sonames_per_cuda_generation(cuda):
    expected = {**SONAMES[cuda], "cudnn": "libcudnn.so.8", "nccl": "libnccl.so.2", "cuda": "libcuda.so.1"}
    assert cr.sonames(cuda, "8") == expected


def test_cudnn_minor_comes_from_the_release_when_build_info_gives_the_major_only():
    assert cr.cudnn_built_with("2.15.0", "8")[0] == "8.9"
    assert cr.cudnn_built_with("2.18.1", "9")[0] == "9.3"
    assert cr.cudnn_built_with("2.15.0", "9") is None  # a source build against another cuDNN
    assert cr.cudnn_built_with("3.1.0", "9") is None


def test_driver_need_and_ceiling():
    need = cr.driver_need("12.2", "Linux")
    assert (need.toolkit_driver, need.compat_floor) == ("535.54.03", "525.60.13")
    assert cr.driver_need("12.2", "Windows").toolkit_driver == "536.25"
    old = cr.driver_need("10.1")
    assert (old.toolkit_driver, old.compat_floor) == ("418.39", "418.39")  # no minor compatibility before 11
    assert cr.driver_cuda_ceiling("470.82.01") == "11.4"
    assert cr.driver_cuda_ceiling("550.54.15") == "12.4"
    assert not cr.driver_at_least("535.54.03", "535.104.05") and cr.driver_at_least("535.104.05", "535.54.03")


def _build(version: str, cuda: str, cudnn: str, pins: dict[str, str] | None = None) -> TfBuild:
    return TfBuild(version=version, dist="tensorflow", is_cuda_build=True, cuda_version=cuda, cudnn_version=cudnn,
                   compute_capabilities=(), pins=pins or {})


@pytest.mark.parametrize("row", TF_ROWS, ids=lambda r: r["tensorflow"])
def test_every_install_hint_names_a_package_that_exists(row):
    """pip lines name the and-cuda extra of a release that has it, or an nvidia-* wheel of a CUDA minor /
    cuDNN release published on PyPI; otherwise NVIDIA's installers (CUDA 10 has no wheels at all)."""
    build = _build(row["tensorflow"] + ".0", row["cuda"], row["cudnn"].split(".")[0])
    suffix = cr.wheel_suffix(row["cuda"])
    for library in ("cudart", "cublas", "cudnn", "cufft", "cusolver", "cusparse", "nccl", "cupti"):
        hint = build.install_hint(library)
        if not hint.startswith("pip install"):
            assert "NVIDIA" in hint, hint
            continue
        spec = re.fullmatch(r"pip install '([a-z0-9-]+)(\[and-cuda\])?(?:==([0-9.*]+))?'", hint)
        assert spec, hint
        if spec.group(2):
            assert row["and_cuda"]
            continue
        assert spec.group(1).endswith("-" + suffix), hint
        if spec.group(3):
            published = cr.soname_row(row["cuda"]).values["wheel_cudnn" if library == "cudnn" else "wheel_cuda"]
            assert any(spec.group(3).startswith(v) for v in published), hint


def test_a_cudnn_pin_contradicting_the_builds_major_is_ignored():
    build = _build("2.16.1", "12.3", "8", pins={"nvidia-cudnn-cu12": "9.1.0.70"})
    assert build.contradicting_cudnn_pin() == ("nvidia-cudnn-cu12", "9.1.0.70")
    assert build.pin_for("cudnn") is None
    assert build.install_hint("cudnn") == "pip install 'tensorflow[and-cuda]==2.16.1'"
    agreeing = _build("2.16.1", "12.3", "8", pins={"nvidia-cudnn-cu12": "8.9.7.29"})
    assert agreeing.pin_for("cudnn") == ("nvidia-cudnn-cu12", "8.9.7.29")


def test_old_builds_get_installers_not_wheels_that_do_not_exist():
    assert _build("2.3.0", "10.1", "7").install_hint("cudnn") == (
        "install cuDNN 7.6 for CUDA 10.1 (NVIDIA's cuDNN archive)")
    assert _build("2.10.0", "11.2", "8").install_hint("cudart") == (
        "install the CUDA 11.2 toolkit (NVIDIA's CUDA Toolkit archive)")
    assert _build("2.13.0", "11.8", "8").install_hint("cudnn") == "pip install 'nvidia-cudnn-cu11==8.6.*'"
    assert _build("2.13.0", "11.8", "8").install_hint("nccl") == "pip install 'nvidia-nccl-cu11'"


def test_explain_cites_the_table_a_check_uses():
    from click.testing import CliRunner

    from tfdoctor.cli import cli

    out = CliRunner().invoke(cli, ["explain", "DRV002"]).output
    assert "Knowledge: CUDA Toolkit and Corresponding Driver Versions (taken 2026-11-23;" in out
