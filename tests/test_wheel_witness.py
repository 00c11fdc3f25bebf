"""The installed wheel as the first witness, on fake machines built from the real wheels' records
(tests/data/wheel_records/): NCCL linkage and RUNPATH read from libtensorflow_framework.so.2, a release
newer than the tables judged from its own files; and the 2024-2026 diagnoses of issue 23 (ptxas XLA
refuses, Blackwell GPUs, the intent to profile), each with its healthy twin."""

from __future__ import annotations

import pytest
from conftest import check_facts
from support import gpu_scenarios as g

from tfdoctor.facts import Facts
from tfdoctor.facts.probes.cuda_libs import probe_cuda_libs
from tfdoctor.model import Severity
from tfdoctor.testing import FakeRoot


def load(name: str) -> Facts:
    return Facts.load(g.SNAPSHOTS / f"{name}.json")


def ld_library_path_fixes(facts: Facts) -> list[str]:
    """The folders the fix plan would put on LD_LIBRARY_PATH."""
    from tfdoctor.fixes.plan import plan_fixes

    plan = plan_fixes(check_facts(facts).findings(), unsafe=True)
    return [p.change.value for p in plan.env if p.change.name == "LD_LIBRARY_PATH"]


def findings(name: str, code: str) -> list:
    return [f for f in check_facts(load(name), select=[code]).findings() if f.code == code]


# -- NCCL: compiled into 2.14-2.20, loaded by 2.21 -------------------------------------------------------

def test_no_nccl_finding_for_2_18_on_two_gpus_and_one_for_2_21():
    assert findings("healthy-tf218-two-gpus-without-nccl", "CUDA001") == []
    tf218 = load("healthy-tf218-two-gpus-without-nccl").sections["cuda_libs"]["tensorflow"]
    assert tf218["nccl_linkage"] == "static"
    assert tf218["nccl_linkage_rule"] == ("libtensorflow_framework.so.2 neither NEEDs libnccl.so nor names a nccl "
                                          "folder on its RUNPATH")
    (nccl,) = findings("cuda001-nccl-missing-two-gpus", "CUDA001")
    assert nccl.evidence["libraries"] == ["libnccl.so.2"] and nccl.severity is Severity.WARNING
    assert findings("healthy-tf221-two-gpus-with-nccl", "CUDA001") == []


# -- RUNPATH is the build's ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["healthy-tf2162-pip", "healthy-tf2170-pip", "healthy-tf2171-pip"])
def test_2_16_2_and_2_17_pip_installs_need_no_ld_library_path(name):
    facts = load(name)
    assert check_facts(facts, select=g.GPU_FAMILIES).codes() == []
    assert ld_library_path_fixes(facts) == []
    tensorflow = facts.sections["cuda_libs"]["tensorflow"]
    assert tensorflow["runpath_finds_wheels"] is True
    assert tensorflow["runpath_rule"] == f"RUNPATH of {g.SITE}/tensorflow/libtensorflow_framework.so.2"
    resolved = facts.sections["cuda_libs"]["libraries"]["cudnn"]["resolved"]["libcudnn.so.8"]
    assert resolved == {"path": f"{g.SITE}/nvidia/cudnn/lib/libcudnn.so.8", "via": "RUNPATH"}


def test_2_16_1_pip_install_needs_the_wheel_folders_on_ld_library_path():
    facts = load("cuda001-tf2161-runpath-misses-wheels")
    # Its framework's real RUNPATH: $ORIGIN/, tensorrt and cuda_runtime, each in and outside site-packages.
    assert [d for d in facts.sections["cuda_libs"]["runpath"] if d.startswith(g.SITE)] == [
        f"{g.SITE}/tensorflow", f"{g.SITE}/tensorrt", f"{g.SITE}/nvidia/cuda_runtime/lib"]
    folders = [f"{g.SITE}/nvidia/{d}/lib" for d in ("cublas", "cudnn", "cufft", "cusolver", "cusparse")]
    assert [f.evidence["folder"] for f in findings("cuda001-tf2161-runpath-misses-wheels", "CUDA001")] == folders
    assert ld_library_path_fixes(facts) == folders


def test_2_21_framework_lacks_cusolver_which_only_libtensorflow_cc_names():
    (finding,) = findings("cuda001-tf221-cusolver-off-runpath", "CUDA001")
    assert finding.evidence["libraries"] == ["libcusolver.so.11"]
    assert finding.evidence["folder"] == f"{g.SITE}/nvidia/cusolver/lib"
    # Not proven to fail on a GPU (its framework reaches every other wheel): a warning with the fix, not an error.
    assert finding.severity is Severity.WARNING
    assert finding.message.startswith("libcusolver.so.11 may not be found by TensorFlow")
    assert "Could not load dynamic library" in finding.evidence["unverified"]
    assert ld_library_path_fixes(load("cuda001-tf221-cusolver-off-runpath")) == [f"{g.SITE}/nvidia/cusolver/lib"]


def test_2_16_1s_missing_folders_stay_errors():
    """Its framework reaches no wheel but cuda_runtime: the shape that failed for everyone (tensorflow#63362)."""
    severities = {f.severity for f in findings("cuda001-tf2161-runpath-misses-wheels", "CUDA001")}
    assert severities == {Severity.ERROR}


def test_a_release_newer_than_the_tables_is_judged_from_its_own_files(tmp_path):
    """2.99.0 is in no table: its framework's RUNPATH (here missing cudnn) and NCCL linkage are read."""
    root = FakeRoot(tmp_path)
    g.driver(root)
    g.process(root)
    g.tensorflow(root, version="2.99.0", cuda="12.9.1", cudnn="9", caps=["sm_90", "sm_120", "compute_120"])
    runpath = tuple(f"$ORIGIN/../nvidia/{d}/lib" for d in ("cublas", "cuda_runtime", "cufft", "cusolver", "cusparse",
                                                            "nccl"))
    root.write(f"{g.SITE}/tensorflow/libtensorflow_framework.so.2",
               g.shared_object("libtensorflow_framework.so.2", runpath=runpath))
    g.wheels(root, {**g.PINS_216, "nvidia-cudnn-cu12": "9.10.2.21"}, cudnn_major="9")
    facts = probe_cuda_libs(root.machine({"VIRTUAL_ENV": g.VENV, "PATH": "/usr/bin"}))
    tensorflow = facts["tensorflow"]
    assert tensorflow["version"] == "2.99.0" and tensorflow["nccl_linkage"] == "dynamic"
    assert tensorflow["runpath_finds_wheels"] is False
    assert tensorflow["runpath_rule"] == f"RUNPATH of {g.SITE}/tensorflow/libtensorflow_framework.so.2"
    assert facts["libraries"]["cudnn"]["resolved"] == {}
    assert facts["libraries"]["cublas"]["resolved"]["libcublas.so.12"]["via"] == "RUNPATH"


# -- ptxas: version.json's nvcc component, and the versions XLA refuses ----------------------------------

def test_xla_refuses_the_ptxas_of_cuda_12_3_update_1():
    facts = load("xla004-ptxas-version-refused")
    # The toolkit as /usr/local/cuda and as /usr/local/cuda-12.3, the folder 2.16 and 2.17 were built against
    # (TF_CUDA_TOOLKIT_PATH), which their XLA tries first (xla_ptxas.toml [[roots]]).
    candidates = [c for c in facts.sections["xla_toolchain"]["candidates"] if c["ptxas"]]
    assert [c["dir"] for c in candidates] == ["/usr/local/cuda", "/usr/local/cuda-12.3"]
    assert {c["ptxas_version"] for c in candidates} == {"12.3.103"}  # version.json "cuda_nvcc", not "cuda" 12.3.1
    (finding,) = findings("xla004-ptxas-version-refused", "XLA004")
    assert finding.message == (
        "XLA will not run ptxas 12.3.103 (/usr/local/cuda-12.3/bin/ptxas): XLA refuses ptxas 12.3.103 (CUDA 12.3 "
        "Update 1): XLA lists it in kBuggyPtxAsVersions: this ptxas miscompiles XLA's kernels; no other ptxas "
        "qualifies: XLA falls back to the driver's slower PTX compiler")
    assert finding.fixes[0].steps[0] == "pip install 'nvidia-cuda-nvcc-cu12==12.3.107'"
    assert findings("healthy-cuda-123-update-2-ptxas", "XLA004") == []
    twin = load("healthy-cuda-123-update-2-ptxas")
    assert {c["ptxas_version"] for c in twin.sections["xla_toolchain"]["candidates"] if c["ptxas"]} == {"12.3.107"}


def test_xla_before_2_17_does_not_refuse_it_but_2_15_and_2_16_abort_on_it():
    # Before 2.17 the search takes the first ptxas whatever its version (no exclusion, no fall-back); 2.15
    # and 2.16 then abort on 12.3.103 (tensorflow/tensorflow#68966), an error; 2.14 says nothing about it.
    facts = load("xla004-ptxas-version-refused")
    facts.sections["python"]["watched"]["tensorflow"]["version"] = "2.16.2"
    (finding,) = findings_of(facts, "XLA004")
    assert finding.severity is Severity.ERROR and "will run ptxas 12.3.103" in finding.message
    assert "and then abort" in finding.message
    facts.sections["python"]["watched"]["tensorflow"]["version"] = "2.14.1"
    assert findings_of(facts, "XLA004") == []


def findings_of(facts: Facts, code: str) -> list:
    return [f for f in check_facts(facts, select=[code]).findings() if f.code == code]


# -- Blackwell -------------------------------------------------------------------------------------------

def test_a_blackwell_gpu_cannot_run_a_cuda_12_5_build_and_is_told_what_can():
    (finding,) = findings("drv003-blackwell-newer-than-every-kernel", "DRV003")
    assert finding.severity is Severity.ERROR
    assert finding.message.startswith(
        "GPU 0 (NVIDIA GeForce RTX 5090, compute capability 12.0, Blackwell (GeForce RTX 50, RTX PRO Blackwell)) "
        "cannot run this TensorFlow 2.18.0 build: it has no sm_12x kernels and its CUDA 12.5.1 PTX is older than "
        "the PTX ISA 8.7 (CUDA 12.8) this architecture needs")
    assert finding.message.endswith("It runs: no tensorflow release tfdoctor knows is built with CUDA ≥ 12.8 "
                                    "(the newest: 2.21, CUDA 12.5)")
    assert finding.evidence["releases_that_run"] == []
    assert finding.fixes[0].text.startswith("Run TensorFlow in nvcr.io/nvidia/tensorflow:25.01-tf2-py3")
    # The JIT cache cannot help a JIT that fails: CUDA007 stays silent.
    assert findings("drv003-blackwell-newer-than-every-kernel", "CUDA007") == []
    assert check_facts(load("healthy-blackwell-with-a-cuda-128-build"), select=g.GPU_FAMILIES).codes() == []


def test_a_hopper_gpu_on_a_ptx_only_build_still_only_warns():
    """compute 9.0 PTX JITs fine on 9.x: the old warning, not the Blackwell error (the same 2.18 build)."""
    facts = load("drv003-hopper-on-a-ptx-only-build")
    assert facts.sections["nvml"]["devices"][0]["name"] == "NVIDIA H100 80GB HBM3"
    (finding,) = findings("drv003-hopper-on-a-ptx-only-build", "DRV003")
    assert finding.severity is Severity.WARNING
    assert "NVIDIA H100 80GB HBM3" in finding.message and "compute capability 9.0" in finding.message
    # A JIT that works is worth caching: CUDA007 speaks here, not on the Blackwell machine.
    assert [f.severity for f in findings("drv003-hopper-on-a-ptx-only-build", "CUDA007")] == [Severity.WARNING]


# -- the intent to profile -------------------------------------------------------------------------------

def test_tensorboard_before_2_2_is_an_intent_to_profile():
    (error,) = findings("cupti002-tensorboard-2-1-bundles-the-profiler", "CUPTI002")
    assert error.severity is Severity.ERROR and error.evidence["profiler_installed"] is True
    facts = load("cupti002-tensorboard-2-1-bundles-the-profiler")
    facts.sections["python"]["watched"]["tensorboard"]["version"] = "2.15.2"  # plugin no longer bundled
    (info,) = findings_of(facts, "CUPTI002")
    assert info.severity is Severity.INFO
    assert findings("healthy-tensorboard-2-1-with-sys-admin", "CUPTI002") == []


def test_tfdoctor_profile_on_a_gpu_is_itself_the_intent():
    from tfdoctor.profile.cupti_preflight import profile_blockers, profile_preflight

    facts = load("cupti002-tensorboard-2-1-bundles-the-profiler")
    facts.sections["python"]["watched"]["tensorboard"]["version"] = "2.15.2"
    (blocker,) = profile_blockers(facts)
    assert blocker.code == "CUPTI002" and blocker.severity is Severity.ERROR
    assert profile_blockers(load("healthy-container-with-sys-admin")) == []
    assert profile_preflight({"PATH": "/usr/bin"}, device="cpu") == []


def test_the_profile_command_prints_the_blockers_before_it_runs(monkeypatch):
    from click.testing import CliRunner

    from tfdoctor.profile import cli, cupti_preflight, runner

    order: list[str] = []
    monkeypatch.setattr(cupti_preflight, "profile_preflight",
                        lambda environ, device, python: order.append("preflight") or ["tfdoctor: CUPTI002 blocked"])

    def stop(*args, **kwargs):
        order.append("run")
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "run_workload", stop)
    result = CliRunner().invoke(cli.profile, ["--device", "gpu"])
    assert order == ["preflight", "run"]
    assert "tfdoctor: CUPTI002 blocked" in result.output


def test_profile_preflight_on_a_fake_gpu_machine(tmp_path):
    """The preflight gathers the GPU facts itself: root in a default Docker container is blocked."""
    from tfdoctor.facts.probes import nvml
    from tfdoctor.profile.cupti_preflight import profile_preflight
    from tfdoctor.testing.fake_nvml import FakeNvml

    scenario = g.by_name("cupti002-root-in-docker")
    root = g.build_root(scenario, tmp_path / "machine")
    previous = nvml.NVML_OVERRIDE
    nvml.NVML_OVERRIDE = lambda: FakeNvml(scenario.gpus)
    try:
        lines = profile_preflight(scenario.environment(), "gpu", root=str(root.path))
        healthy = g.build_root(g.by_name("healthy-container-with-sys-admin"), tmp_path / "healthy")
        silent = profile_preflight(scenario.environment(), "gpu", root=str(healthy.path))
    finally:
        nvml.NVML_OVERRIDE = previous
    assert [line.split(" ", 2)[1] for line in lines] == ["CUPTI002"]
    assert lines[0].startswith("tfdoctor: CUPTI002 GPU profiling is restricted to administrators")
    assert lines[0].endswith("CUPTI cannot trace GPU kernels — Start the docker container with SYS_ADMIN")
    assert silent == []


def test_the_2_21_cusolver_finding_says_which_library_names_the_folder():
    (finding,) = findings("cuda001-tf221-cusolver-off-runpath", "CUDA001")
    assert finding.evidence["on_another_librarys_runpath"].startswith("another TensorFlow library's RUNPATH")
    # 2.16.1's libtensorflow_cc.so.2 names every folder as well (and still failed: tensorflow#63362).
    assert all("on_another_librarys_runpath" in f.evidence
               for f in findings("cuda001-tf2161-runpath-misses-wheels", "CUDA001"))
