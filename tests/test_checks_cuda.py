"""The CUDA, CUPTI, DRV, XLA and GPU0xx families on recorded facts (tests/snapshots/gpu/*.json): each
fixture reports exactly its codes, the healthy ones stay silent, and exact evidence and fixes. (That every
check has a fixture that triggers it is tests/test_checks.py's, for every family.)"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import check_facts, env_fixes
from support import gpu_scenarios as g

from tfdoctor.facts import Facts, Unknown
from tfdoctor.model import AdminFix, Severity, Status

FAMILIES = g.GPU_FAMILIES


def load(name: str) -> Facts:
    return Facts.load(g.SNAPSHOTS / f"{name}.json")


def report(name: str):
    return check_facts(load(name), select=FAMILIES)


@pytest.mark.parametrize("scenario", g.SCENARIOS, ids=lambda s: s.name)
def test_each_fixture_reports_exactly_its_codes(scenario):
    result = report(scenario.name)
    assert tuple(result.codes()) == scenario.expect
    assert not result.crashed()


@pytest.mark.parametrize("name", [s.name for s in g.SCENARIOS if s.name.startswith("healthy-")])
def test_healthy_machines_have_no_error_or_warning(name):
    result = report(name)
    assert [f for f in result.findings() if f.severity >= Severity.WARNING] == []


def test_fixtures_are_what_the_probes_write_today(tmp_path):
    """The recorded files come from tests/support/gpu_scenarios.py; regenerate them when a probe changes."""
    if not g.ld_cache(g.FakeRoot(tmp_path / "probe-ldconfig"), []):
        pytest.skip("ldconfig is not installed (the system-toolkit fixture uses a real ld.so.cache)")
    g.main(tmp_path / "out")
    for scenario in g.SCENARIOS:
        fresh = json.loads((tmp_path / "out" / f"{scenario.name}.json").read_text())
        recorded = json.loads((g.SNAPSHOTS / f"{scenario.name}.json").read_text())
        assert fresh["sections"] == recorded["sections"], (
            f"{scenario.name}: the probes now write other facts: run python tools/regenerate.py")


def test_libraries_on_disk_but_off_the_loader_path_get_one_prepend_per_folder():
    findings = [f for f in report("cuda001-library-not-on-loader-path").findings() if f.code == "CUDA001"]
    assert len(findings) == 1
    finding = findings[0]
    assert finding.evidence["libraries"] == ["libcudart.so.12", "libcublas.so.12", "libcublasLt.so.12",
                                             "libcudnn.so.8", "libcufft.so.11", "libcusolver.so.11",
                                             "libcusparse.so.12"]
    assert finding.evidence["folder"] == "/usr/local/cuda/lib64"
    assert finding.evidence["found_at"]["libcudnn.so.8"] == ["/usr/local/cuda/lib64/libcudnn.so.8",
                                                            "/usr/local/cuda-12.2/lib64/libcudnn.so.8"]
    assert [c.to_json() for c in finding.fixes[0].changes] == [
        {"op": "prepend", "name": "LD_LIBRARY_PATH", "value": "/usr/local/cuda/lib64"}]


def test_libraries_nowhere_get_the_pinned_install():
    (errors,) = [f for f in report("cuda001-library-not-installed").findings() if f.code == "CUDA001"]
    assert errors.severity is Severity.ERROR
    assert errors.evidence["libraries"] == ["libcudart.so.12", "libcublas.so.12", "libcublasLt.so.12",
                                            "libcudnn.so.8", "libcufft.so.11", "libcusolver.so.11",
                                            "libcusparse.so.12"]
    assert errors.fixes[0].steps == ("pip install 'tensorflow[and-cuda]==2.15.0'   # every pinned nvidia-* wheel",)
    # NCCL is missing too, but this job has one GPU and one worker: collectives never run.


def test_missing_nccl_is_judged_against_the_jobs_layout():
    (nccl,) = [f for f in report("cuda001-nccl-missing-two-gpus").findings() if f.code == "CUDA001"]
    assert nccl.severity is Severity.WARNING
    assert nccl.message.startswith("libnccl.so.2 is not installed anywhere tfdoctor looked: multi-GPU collectives")
    assert nccl.evidence["visible_gpus"] == 2 and nccl.evidence["nccl_linkage"] == "dynamic"
    # Judged from the installed wheel's own file, not from a table row.
    assert nccl.evidence["nccl_linkage_rule"] == (
        "libtensorflow_framework.so.2's RUNPATH names $ORIGIN/../../nvidia/nccl/lib")
    assert "knowledge" not in nccl.evidence
    assert nccl.fixes == (AdminFix("Install libnccl.so.2 for CUDA 12.5.1",
                                   ("pip install 'tensorflow[and-cuda]==2.21.0'",)),)
    # One GPU, but several workers: collectives cross the workers.
    facts = load("healthy-one-gpu-without-nccl")
    assert check_facts(facts, select=["CUDA001"]).codes() == []
    facts.sections["env"]["variables"]["TF_CONFIG"] = (
        '{"cluster": {"worker": ["node1:2222", "node2:2222"]}, "task": {"type": "worker", "index": 0}}')
    (multi,) = check_facts(facts, select=["CUDA001"]).findings()
    assert multi.evidence["env.TF_CONFIG"] == "2 chief/worker tasks"
    facts.sections["env"]["variables"]["TF_CONFIG"] = ""
    facts.sections["env"]["variables"]["SLURM_NTASKS"] = "4"
    assert check_facts(facts, select=["CUDA001"]).findings()[0].evidence["env.SLURM_NTASKS"] == "4"


def test_a_build_that_links_nccl_in_never_asks_for_it():
    facts = load("healthy-static-nccl-two-gpus")
    assert facts.peek("cuda_libs.libraries.nccl.files") == []
    assert check_facts(facts, select=["CUDA001"]).codes() == []


def test_missing_libcuda_with_a_driver_points_at_the_driver_on_a_host_and_the_runtime_in_a_container():
    facts = load("healthy-cuda12-pip")
    facts.sections["cuda_libs"]["libraries"]["cuda"] = {"files": [], "resolved": {}}
    finding = check_facts(facts, select=["CUDA001"]).findings()[0]
    assert finding.evidence["libraries"] == ["libcuda.so.1"]
    fix = finding.fixes[0]
    assert fix.steps == () and fix.text.startswith("libcuda.so.1 comes with the NVIDIA driver: install the driver's")
    assert "docker" not in fix.text  # a host: no container flag helps
    facts.sections["privileges"]["container"] = ["/.dockerenv"]
    finding = check_facts(facts, select=["CUDA001"]).findings()[0]
    assert finding.fixes[0].steps[0] == "docker run --gpus all …"
    assert "NVIDIA Container Toolkit" in finding.fixes[0].text
    facts.sections["privileges"]["container"] = ["/run/.containerenv"]
    finding = check_facts(facts, select=["CUDA001"]).findings()[0]
    assert finding.fixes[0].steps[0] == "podman run --device nvidia.com/gpu=all …"


def test_old_cudnn_first_on_path_points_at_the_wheel():
    finding = report("cuda002-cudnn-older-than-build").findings()[0]
    assert finding.evidence == {
        "library": "libcudnn.so.8", "resolved": "/opt/cudnn-8.6/lib/libcudnn.so.8", "resolved_version": "8.6.0",
        "required": "8.9", "required_by": "tensorflow[and-cuda] pins nvidia-cudnn-cu12==8.9.4.25"}
    assert finding.fixes[0].changes[0].value == f"{g.SITE}/nvidia/cudnn/lib"


def test_shadowed_cublas_names_the_pinned_copy():
    findings = {f.evidence["library"]: f for f in report("cuda003-cublas-shadowed").findings()}
    assert set(findings) == {"libcudart.so.12", "libcublas.so.12", "libcublasLt.so.12"}
    cublas = findings["libcublas.so.12"]
    assert cublas.evidence["pinned"] == "nvidia-cublas-cu12==12.2.5.6"
    assert cublas.evidence["resolved_version"] == "12.4.5.8"
    assert cublas.fixes[0].changes[0].value == f"{g.SITE}/nvidia/cublas/lib"


def test_visible_devices_findings():
    missing = report("cuda004-visible-devices-missing").findings()[0]
    assert missing.message.startswith("CUDA_VISIBLE_DEVICES entry '2' matches no GPU of this host (2 GPU(s))")
    assert report("cuda005-visible-devices-empty").findings()[0].evidence["env.CUDA_VISIBLE_DEVICES"] == ""


def test_jit_cache_fix_sets_four_gib():
    result = report("cuda007-jit-cache-default")
    assert env_fixes(result)["CUDA_CACHE_MAXSIZE"] == "4294967296"


def test_cupti_fixes():
    off_path = report("cupti001-cupti-not-on-loader-path").findings()[0]
    assert [c.value for c in off_path.fixes[0].changes] == ["/usr/local/cuda/extras/CUPTI/lib64"]
    assert off_path.severity is Severity.WARNING  # tensorboard-plugin-profile is installed
    dated = report("cupti001-cupti-dated-name-only").findings()[0]
    assert dated.severity is Severity.INFO  # nothing there profiles
    assert dated.fixes[0].steps[0] == ("ln -s libcupti.so.2022.3.0 "
                                       "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.11.8")


def _with(facts: Facts, env: dict[str, str] | None = None, watched: dict[str, object] | None = None,
          intent: str | None = None) -> Facts:
    """The facts with nothing set up to profile, then with what is given."""
    data = json.loads(json.dumps(facts.to_json()))
    data["sections"]["python"]["watched"].pop("tensorboard-plugin-profile", None)
    data["sections"]["python"]["distributions"].pop("tensorboard-plugin-profile", None)
    data["sections"]["env"]["variables"].update(env or {})
    data["sections"]["python"]["watched"].update(watched or {})
    if intent:
        data["meta"]["intent"] = intent
    return Facts.from_json(data)


@pytest.mark.parametrize("scenario", ["cupti001-cupti-not-on-loader-path", "cupti001-cupti-dated-name-only"])
def test_missing_cupti_is_an_info_when_nothing_profiles_and_a_warning_when_the_job_is_set_up_to(scenario):
    """TensorFlow loads CUPTI only when a profiler starts: a training job without one is not warned."""
    facts = load(scenario)
    (quiet,) = check_facts(_with(facts), select=["CUPTI001"]).findings()
    assert quiet.severity is Severity.INFO and quiet.evidence["profiler_installed"] is False
    assert "nothing here is set up to profile: training is unaffected" in quiet.message
    plugin = {"tensorboard-plugin-profile": {"version": "2.15.1", "location": g.SITE}}
    for profiling in (_with(facts, watched=plugin), _with(facts, env={"TF_GPU_CUPTI_USE_ACTIVITY_API": "1"}),
                      _with(facts, intent="profile")):
        (loud,) = check_facts(profiling, select=["CUPTI001"]).findings()
        assert loud.severity is Severity.WARNING and loud.evidence["profiler_installed"] is True
        assert loud.message.endswith("the TensorFlow Profiler will record no GPU activity")
        assert loud.fixes == quiet.fixes


def test_profiling_restriction_is_an_error_with_the_profiler_installed_and_info_without():
    facts = load("cupti002-profiling-admin-only")
    finding = check_facts(facts, select=["CUPTI002"]).findings()[0]
    assert finding.severity is Severity.ERROR
    assert [f.title for f in finding.fixes] == ["Start the docker container with SYS_ADMIN",
                                                "Allow profiling for all users on the host"]
    assert "options nvidia NVreg_RestrictProfilingToAdminUsers=0" in finding.fixes[1].steps[0]
    del facts.sections["python"]["watched"]["tensorboard-plugin-profile"]
    quiet = check_facts(facts, select=["CUPTI002"]).findings()[0]
    assert quiet.severity is Severity.INFO and quiet.message.endswith("this matters only if you profile")


def test_root_in_a_default_container_has_no_sys_admin():
    docker = report("cupti002-root-in-docker").findings()[0]
    assert docker.message.startswith(
        "GPU profiling is restricted to administrators (RmProfilingAdminOnly: 1) and this process (uid 0 in a docker "
        "container, CapEff 00000000a80425fb (the default set of a container)) has no CAP_SYS_ADMIN")
    assert docker.fixes[0] == AdminFix("Start the docker container with SYS_ADMIN", (
        "docker run --cap-add SYS_ADMIN …   # or --privileged",))
    assert docker.evidence["privileges.container"] == ["/.dockerenv"]
    kubernetes = report("cupti002-root-in-kubernetes").findings()[0]
    assert kubernetes.evidence["container_kind"] == "kubernetes"
    assert kubernetes.evidence["privileges.container"] == ["KUBERNETES_SERVICE_HOST", "/proc/self/cgroup:kubepods"]
    assert (kubernetes.fixes[0].steps, kubernetes.fixes[0].text) == ((), (
        'in the container\'s spec: securityContext: {capabilities: {add: ["SYS_ADMIN"]}} (or privileged: true)'))
    assert kubernetes.fixes[1].title == "Allow profiling for all users on the host"


def test_capabilities_decide_not_the_uid():
    facts = load("cupti002-root-in-docker")
    facts.sections["privileges"].update(cap_eff="00000000a82425fb", cap_sys_admin=True)
    assert check_facts(facts, select=["CUPTI002"]).codes() == []
    # A user with CAP_PERFMON on a driver from R565 may profile; on R550 it may not.
    facts.sections["privileges"].update(euid=1000, cap_eff="0000004000000000", cap_sys_admin=False, cap_perfmon=True)
    assert check_facts(facts, select=["CUPTI002"]).codes() == ["CUPTI002"]
    facts.sections["nvml"]["driver_version"] = "565.57.01"
    assert check_facts(facts, select=["CUPTI002"]).codes() == []
    # Capabilities unreadable: uid 0 on a host is enough, uid 0 in a container is not known to be.
    facts.sections["privileges"].update(euid=0, cap_sys_admin=Unknown("no CapEff line"), container=[])
    facts.sections["host"]["container"] = {"detected": False, "signs": []}
    assert check_facts(facts, select=["CUPTI002"]).codes() == []
    facts.sections["privileges"]["container"] = ["/.dockerenv"]
    assert check_facts(facts, select=["CUPTI002"]).result("CUPTI002").status.value == "not-checked"


def test_driver_findings():
    # In a container the host kernel's /proc has no driver either: load it there, then give the container the GPU.
    (fix,) = report("drv001-driver-not-loaded").findings()[0].fixes
    assert fix.title == "Load the NVIDIA driver on the host, then give the container the GPU"
    assert fix.steps[0] == "sudo modprobe nvidia" and fix.steps[-1].startswith("docker run --gpus all")
    assert fix.text.startswith("first install the driver")  # prose in the text, commands in the steps
    old = report("drv002-driver-cuda-too-old").findings()[0]
    assert old.severity is Severity.ERROR and old.evidence["cuda_compat_possible"] is True
    k80 = report("drv003-gpu-older-than-build").findings()[0]
    assert k80.severity is Severity.ERROR
    h100 = next(f for f in report("cuda007-jit-cache-default").findings() if f.code == "DRV003")
    assert h100.severity is Severity.WARNING and "JIT-compiles" in h100.message


DRV003_FIXTURE = "gpu/drv003-gpu-older-than-build.json"
CAPS = "python.tensorflow.build_info.cuda_compute_capabilities"


def _drv003(capabilities: object, cc: str, name: str = "NVIDIA H100 80GB HBM3"):
    from support.snapshot_facts import edited_facts

    facts = edited_facts(DRV003_FIXTURE, {CAPS: capabilities, "nvml.devices.0.compute_capability": cc,
                                          "nvml.devices.0.name": name})
    return check_facts(facts, select=["DRV003"]).results[0]


def test_architecture_specific_entries_serve_their_own_gpu_only():
    """A source build for Hopper with sm_90a (and its PTX compute_90a): binaries on the H100; nothing a B200
    can run, neither binary nor PTX (PTX ISA: "a" targets "cannot be run on later generation devices")."""
    hopper = ["sm_80", "sm_90a", "compute_90a"]
    assert _drv003(hopper, "9.0").status is Status.PASSED
    (b200,) = _drv003(hopper, "10.0", "NVIDIA B200").findings
    assert b200.severity is Severity.ERROR
    assert b200.message.startswith("GPU 0 (NVIDIA B200, compute capability 10.0) has neither binary kernels in "
                                   "this TensorFlow build (sm_80, sm_90a, compute_90a) nor PTX")
    (jit,) = _drv003(["sm_80", "compute_90a"], "9.0").findings  # its own PTX: JIT-compiled for the H100
    assert jit.severity is Severity.WARNING and "JIT-compiles" in jit.message
    (k80,) = _drv003(["sm_80", "sm_90a", "compute_90a"], "3.7", "Tesla K80").findings
    assert "is older than every architecture" in k80.message


@pytest.mark.parametrize("capabilities", [[], None, "", ["sm_x"]])
def test_a_cuda_build_naming_no_architectures_is_not_checked_rather_than_passed(capabilities):
    result = _drv003(capabilities, "3.7", "Tesla K80")
    assert result.status is Status.NOT_CHECKED
    assert result.reason.endswith("names no cuda_compute_capabilities")


def test_driver_of_same_major_is_only_a_warning():
    facts = load("drv002-driver-cuda-too-old")
    facts.sections["nvml"]["cuda_driver_version"] = "12.0"
    assert check_facts(facts, select=["DRV002"]).findings()[0].severity is Severity.WARNING


def test_xla_fixes_keep_the_users_other_flags():
    assert env_fixes(report("xla001-libdevice-not-found")) == {
        "XLA_FLAGS": "--xla_gpu_cuda_data_dir=/usr/local/cuda-12.4"}
    assert env_fixes(report("xla003-data-dir-without-libdevice")) == {
        "XLA_FLAGS": f"--xla_gpu_autotune_level=2 --xla_gpu_cuda_data_dir={g.SITE}/nvidia/cuda_nvcc"}
    assert env_fixes(report("xla002-ptxas-older-than-build")) == {
        "XLA_FLAGS": f"--xla_gpu_cuda_data_dir={g.SITE}/nvidia/cuda_nvcc"}


def test_merge_data_dir():
    from tfdoctor.checks.xla import merge_data_dir

    assert merge_data_dir(None, "/c") == "--xla_gpu_cuda_data_dir=/c"
    assert merge_data_dir("--a=1 --xla_gpu_cuda_data_dir /old --b", "/c") == "--a=1 --b --xla_gpu_cuda_data_dir=/c"


def test_unknown_nvml_on_a_driver_host_is_not_checked_not_silent():
    facts = load("healthy-cuda12-pip")
    from tfdoctor.facts import Unknown

    facts.sections["nvml"] = Unknown("nvmlInit failed: Driver/library version mismatch")
    result = check_facts(facts, select=["GPU0", "DRV003"])
    assert {r.status.value for r in result.results} == {"not-checked"}
    # The driver is still judged, from /proc/driver/nvidia/version (550.54.15 ≥ 535.54.03 for CUDA 12.2).
    assert check_facts(facts, select=["DRV002"]).result("DRV002").status.value == "passed"


@pytest.mark.parametrize("name, code", [("healthy-cuda12-pip", 0), ("cuda001-library-not-on-loader-path", 1)])
def test_cli_replays_fixtures(name, code):
    done = subprocess.run([sys.executable, "-m", "tfdoctor", "check", "--facts", str(g.SNAPSHOTS / f"{name}.json"),
                           "--select", ",".join(FAMILIES)], capture_output=True, text=True, timeout=60)
    assert done.returncode == code, done.stdout + done.stderr


def test_gpus_known_only_from_proc_leave_health_and_architecture_not_checked():
    facts = load("healthy-cuda12-pip")
    facts.sections["nvml"] = {"source": "procfs", "nvml_error": "nvmlInit failed: Driver/library version mismatch",
                              "driver_version": "550.54.15", "devices": [{"index": 0, "name": "NVIDIA A100",
                                                                          "pci_bus_id": "00000000:3B:00.0"}]}
    result = check_facts(facts, select=["GPU0", "DRV003"])
    assert {r.status.value for r in result.results} == {"not-checked"}
    assert result.result("GPU001").reason == (
        "GPU health needs NVML (nvmlInit failed: Driver/library version mismatch)")


def test_a_release_whose_runpath_misses_the_wheels_gets_every_wheel_folder_prepended():
    findings = [f for f in report("cuda001-tf216-wheels-off-runpath").findings() if f.code == "CUDA001"]
    folders = [f.evidence["folder"] for f in findings]
    # 2.16.1's framework reaches nvidia/cuda_runtime/lib only (tensorflow_builds runpath_by_build); NCCL is
    # compiled in, so its folder is no fix.
    assert folders == [f"{g.SITE}/nvidia/{d}/lib" for d in ("cublas", "cudnn", "cufft", "cusolver", "cusparse")]
    assert all(f.severity is Severity.ERROR for f in findings)
    assert findings[0].evidence["runpath"] == (
        "TensorFlow 2.16.1's RUNPATH does not reach every site-packages/nvidia/*/lib folder its loader needs "
        "(tensorflow_builds row 2.16 (the framework's RUNPATH could not be read)): those must be on LD_LIBRARY_PATH")
    assert [c.value for f in findings for c in f.fixes[0].changes] == folders
    twin = load("healthy-tf216-wheels-on-ld-library-path")
    assert twin.sections["cuda_libs"]["runpath"] == [f"{g.SITE}/nvidia/cuda_runtime/lib"]
    assert twin.sections["cuda_libs"]["libraries"]["cudnn"]["resolved"]["libcudnn.so.8"]["via"] == "LD_LIBRARY_PATH"
    # 2.15 does reach them: the same wheels resolve through the RUNPATH.
    healthy = load("healthy-cuda12-pip")
    assert healthy.sections["cuda_libs"]["tensorflow"]["runpath_rule"] == (
        "tensorflow_builds row 2.15 (the framework's RUNPATH could not be read)")
    assert healthy.sections["cuda_libs"]["libraries"]["cudnn"]["resolved"]["libcudnn.so.8"]["via"] == "RUNPATH"


def test_conda_lib_is_a_place_cuda_libraries_live():
    (libs,) = [f for f in report("cuda001-conda-lib-not-on-loader-path").findings() if f.code == "CUDA001"]
    assert libs.evidence["folder"] == f"{g.CONDA_ENV}/lib"
    assert libs.message.startswith("libcudart.so.11.0, libcublas.so.11, libcublasLt.so.11, libcudnn.so.8, "
                                   "libcufft.so.10, libcusolver.so.11 and libcusparse.so.11 are not resolvable")
    assert [c.value for c in libs.fixes[0].changes] == [f"{g.CONDA_ENV}/lib"]
    assert libs.fixes[1].steps[1] == ("echo 'export LD_LIBRARY_PATH=$CONDA_PREFIX/lib/:$LD_LIBRARY_PATH' >> "
                                      "$CONDA_PREFIX/etc/conda/activate.d/env_vars.sh")
    twin = load("healthy-conda-activate-d")
    assert twin.sections["cuda_libs"]["conda"]["activate_d"] == [
        {"path": f"{g.CONDA_ENV}/etc/conda/activate.d/env_vars.sh", "sets_ld_library_path": True}]
    resolved = twin.sections["cuda_libs"]["libraries"]["cudart"]["resolved"]["libcudart.so.11.0"]
    assert resolved == {"path": f"{g.CONDA_ENV}/lib/libcudart.so.11.0", "via": "LD_LIBRARY_PATH"}


def test_a_gpu_newer_than_every_binary_says_whether_the_driver_can_jit():
    jit = next(f for f in report("cuda007-jit-cache-default").findings() if f.code == "DRV003")
    assert jit.severity is Severity.WARNING
    assert "(sm_50, sm_60, sm_70, sm_80, compute_90)" in jit.message
    assert jit.evidence["driver_can_jit"] == "the driver supports CUDA 12.4"
    assert [f.title for f in jit.fixes] == ["Use a TensorFlow build that includes this GPU's architecture",
                                            "Meanwhile keep the JIT-compiled kernels: CUDA_CACHE_MAXSIZE=4 GiB"]
    assert "NGC" in jit.fixes[0].text
    assert jit.fixes[0].steps == ("pip install -U 'tensorflow[and-cuda]'   # check the release's build_info for sm_90",)
    (stuck,) = [f for f in report("drv003-ptx-too-new-for-driver").findings() if f.code == "DRV003"]
    assert stuck.severity is Severity.ERROR
    assert stuck.message.endswith("and the driver cannot JIT its CUDA 12.2 PTX (the driver supports CUDA 12.0): "
                                  "CUDA_ERROR_UNSUPPORTED_PTX_VERSION, no GPU kernels at all")


def test_cupti_of_another_cuda_names_the_soname_the_copy_and_the_right_folder():
    (finding,) = report("cupti003-cupti-of-another-cuda").findings()
    assert finding.severity is Severity.ERROR  # a profiler is installed
    assert finding.message == (
        "TensorFlow (CUDA 12.2) loads libcupti.so, and the loader gives it /usr/local/cuda/extras/CUPTI/lib64/"
        "libcupti.so (via LD_LIBRARY_PATH), the CUPTI of CUDA 11.8.89 (toolkit /usr/local/cuda -> "
        "/usr/local/cuda-11.8): the Profiler will record no GPU activity")
    assert finding.evidence["library"] == "libcupti.so.12"
    assert finding.evidence["right_copy"] == "/usr/local/cuda-12.2/extras/CUPTI/lib64/libcupti.so.12"
    assert [c.value for c in finding.fixes[0].changes] == ["/usr/local/cuda-12.2/extras/CUPTI/lib64"]
    twin = load("healthy-cupti-of-the-builds-cuda")
    assert check_facts(twin, select=["CUPTI"]).codes() == []
    assert check_facts(twin, select=["CUPTI003"]).result("CUPTI003").status.value == "passed"


@pytest.mark.parametrize("entry", ["²", "--1", "9" * 5000, "１"])
def test_a_hostile_visible_devices_entry_is_a_finding_not_a_crash(entry):
    """"²".isdigit() is true and int() refuses it, as it refuses 4,300+ digits: CUDA004 crashed on such an
    entry; it is now an entry that matches no GPU, named as written."""
    facts = load("cuda004-visible-devices-missing")
    facts.sections["env"]["variables"]["CUDA_VISIBLE_DEVICES"] = entry
    result = check_facts(facts, select=["CUDA004"])
    assert result.crashed() == []
    assert result.codes() == ["CUDA004"]


@pytest.mark.parametrize(("text", "expected"), [("2.21.0", (2, 21, 0)), ("12.2.140rc1", (12, 2, 140)),
                                                ("1." + "9" * 5000, (1,)), ("9" * 19, ()), ("²", ())])
def test_version_tuple_stops_at_what_no_release_number_is(text, expected):
    from tfdoctor.derive.versions import version_tuple

    assert version_tuple(text) == expected
