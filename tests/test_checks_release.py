"""Settings judged against the installed TensorFlow release (issue 36 items 1 and 2): XLA auto-clustering on
a CPU-only job (XLA107), an allocator a release breaks on (GPU107), and the ptxas XLA runs, found in the
installed release's own search order (XLA002, XLA004; tfdoctor/knowledge/xla_ptxas.toml [[search]])."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import check_facts
from support import gpu_scenarios as g
from support.framework_facts import V100, gpu_devices, make_facts

from tfdoctor.derive.xla_ptxas import LEGACY_ORDER, search_for
from tfdoctor.facts import Facts
from tfdoctor.model import Applicability, EnvFix, Severity, prepend_path, set_env, unset_env

SNAPSHOTS = Path(__file__).parent / "snapshots" / "checks"
CPU_JIT = "--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit --tf_xla_min_cluster_size=4"


def _with_tensorflow(facts: Facts, version: str, cuda: str | None = None) -> Facts:
    facts.sections["python"] = g.python_section(tf_version=version, cuda=cuda, pins={})
    return facts


# A V100 host as the probes record it (host, gpu_pci, cuda_libs, nvml: the sections a probe run always
# writes), recorded for MP107's earlier fixture; the GPU fixtures below add their environment and TensorFlow.
V100_NODE = Path(__file__).parent / "data" / "release" / "v100-node.json"


def _v100_node(name: str, env: dict[str, str], version: str, cuda: str) -> Facts:
    facts = Facts.load(V100_NODE)
    facts.sections["env"] = {"variables": env}
    facts.meta["hostname"] = name
    return _with_tensorflow(facts, version, cuda=cuda)


def _cpus(facts: Facts, processors: int) -> Facts:
    facts.sections["cpu"]["cpuinfo"]["processors"] = processors
    return facts


def fixtures() -> dict[str, Facts]:
    """The triggering fixtures under tests/snapshots/checks/, as built here (test_fixtures_are_current)."""
    gpu107 = "gpu107-cuda-malloc-async-in-tensorflow-2-5"
    mp107 = "mp107-auto-mixed-precision-ignored-by-tensorflow-2"
    return {
        "xla107-cpu-auto-clustering-on-a-cpu-only-node": _cpus(make_facts(env={"TF_XLA_FLAGS": CPU_JIT}), 32),
        gpu107: _v100_node(gpu107, {"TF_GPU_ALLOCATOR": "cuda_malloc_async"}, "2.5.0", "11.2"),
        "mp106-auto-mixed-precision-in-nvidia-tensorflow-1-without-tensor-cores": _with_tensorflow(
            make_facts(env={"TF_ENABLE_AUTO_MIXED_PRECISION": "1"}), "1.15.5"),
        mp107: _v100_node(mp107, {"TF_ENABLE_AUTO_MIXED_PRECISION": "1"}, "2.15.1", "12.2"),
        "xla108-command-buffer-flag-with-tensorflow-2-15": _with_tensorflow(
            make_facts(env={"XLA_FLAGS": "--xla_gpu_enable_command_buffer= --xla_dump_to=/tmp/xla"}), "2.15.1"),
    }


@pytest.mark.parametrize("name", sorted(fixtures()))
def test_fixtures_are_current(name):
    path = SNAPSHOTS / f"{name}.json"
    assert path.read_text(encoding="utf-8") == fixtures()[name].dumps() + "\n", \
        f"{path} is stale: write fixtures()[{name!r}].dumps() to it"


# -- XLA107 -------------------------------------------------------------------------------------------

def test_cpu_auto_clustering_on_a_cpu_only_node_is_a_warning_with_its_fix():
    report = check_facts(make_facts(env={"TF_XLA_FLAGS": CPU_JIT}), select=["XLA107"])
    (finding,) = report.findings()
    assert finding.severity is Severity.WARNING
    assert finding.message.startswith("XLA auto-clusters the CPU graph (--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit)"
                                      " where ")
    assert "on 8 logical CPUs" in finding.message
    assert finding.fixes == (EnvFix("Turn CPU auto-clustering off (use jit_compile=True on chosen functions)",
                                    (set_env("TF_XLA_FLAGS", "--tf_xla_min_cluster_size=4"),), Applicability.UNSAFE),)


@pytest.mark.parametrize("flags", [
    "--tf_xla_auto_jit=2",                            # no CPU clustering at all: XLA105's case
    "--tf_xla_auto_jit=0 --tf_xla_cpu_global_jit",    # clustering off
    "--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit=false",
])
def test_no_cpu_clustering_is_silent(flags):
    assert check_facts(make_facts(env={"TF_XLA_FLAGS": flags}), select=["XLA107"]).findings() == []


def test_cpu_clustering_with_a_gpu_is_not_xla107s():
    facts = _with_tensorflow(make_facts(env={"TF_XLA_FLAGS": CPU_JIT}, gpus=gpu_devices(V100)), "2.15.1", cuda="12.2")
    assert check_facts(facts, select=["XLA107"]).findings() == []


def test_only_clustering_flags_are_removed_and_nothing_left_unsets():
    (finding,) = check_facts(make_facts(env={"TF_XLA_FLAGS": "--tf_xla_auto_jit=1 --tf_xla_cpu_global_jit=true"}),
                             select=["XLA107"]).findings()
    assert finding.fixes[0].changes == (unset_env("TF_XLA_FLAGS"),)


# -- GPU107 -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("version, fires", [("2.5.0", True), ("2.6.2", True), ("2.7.0", False), ("2.21.0", False),
                                            ("2.4.1", False)])
def test_cuda_malloc_async_is_judged_by_the_release(version, fires):
    facts = _with_tensorflow(make_facts(env={"TF_GPU_ALLOCATOR": "cuda_malloc_async"}, gpus=gpu_devices(V100)),
                             version, cuda="11.2")
    findings = check_facts(facts, select=["GPU107"]).findings()
    assert bool(findings) is fires
    if fires:
        (finding,) = findings
        assert finding.message == (f"TF_GPU_ALLOCATOR=cuda_malloc_async is broken in TensorFlow {version}: creating "
                                   "the GPU device fails: InternalError: No allocator statistics")
        assert finding.severity is Severity.ERROR
        assert finding.fixes == (EnvFix("Unset TF_GPU_ALLOCATOR", (unset_env("TF_GPU_ALLOCATOR"),)),)
        assert "https://github.com/tensorflow/tensorflow/pull/50961" in finding.evidence["sources"]


def test_cuda_malloc_async_without_a_readable_release_or_a_gpu_is_silent():
    assert check_facts(make_facts(env={"TF_GPU_ALLOCATOR": "cuda_malloc_async"}, gpus=gpu_devices(V100)),
                       select=["GPU107"]).findings() == []
    facts = _with_tensorflow(make_facts(env={"TF_GPU_ALLOCATOR": "cuda_malloc_async"}), "2.5.0")
    assert check_facts(facts, select=["GPU107"]).findings() == []


# -- the ptxas XLA runs, in its release's order -------------------------------------------------------

@pytest.mark.parametrize("release, order, skips", [
    ("2.21.0", ("data_dir", "path", "roots"), True), ("2.17.0rc0", ("data_dir", "path", "roots"), True),
    ("2.16.2", ("path", "data_dir", "roots"), False), ("2.12.0", ("path", "data_dir", "roots"), False),
    ("2.11.1", LEGACY_ORDER, False), (None, ("data_dir", "path", "roots"), True),
])
def test_search_order_by_release(release, order, skips):
    search = search_for(release)
    assert (search.order, search.skips_refused) == (order, skips)


def _toolkit_on_path(version: str, cuda_link: str | None = None):
    """TensorFlow 2.15 with its CUDA wheels (ptxas 12.2.140), a CUDA `version` toolkit's bin/ on PATH."""
    def build(root):
        g._pip_machine(root)
        base = g.toolkit(root, version)
        if cuda_link:
            g.link(root, "/usr/local/cuda", g.toolkit(root, cuda_link))
        return base
    return build


def _collect(tmp_path, build, env: dict[str, str], python: dict) -> Facts:
    scenario = g.Scenario("release-ptxas", build, python=python, env=env)
    return g.collect(scenario, g.build_root(scenario, tmp_path / "machine"))


def test_a_toolkit_on_path_is_the_ptxas_xla_215_runs_before_its_wheel(tmp_path):
    # The wheel's ptxas 12.2 matches the build; XLA 2.15 tries PATH first and runs the 11.8 toolkit's.
    env = {"PATH": f"{g.VENV}/bin:/usr/local/cuda-11.8/bin:/usr/bin:/bin"}
    facts = _collect(tmp_path, _toolkit_on_path("11.8"), env, g.PIP)
    (finding,) = check_facts(facts, select=["XLA002"]).findings()
    assert finding.message == ("XLA will run ptxas 11.8.89 (/usr/local/cuda-11.8/bin/ptxas, via PATH), older than "
                               "the CUDA 12.2 TensorFlow 2.15.0 was built with")
    assert finding.evidence["search_order"] == ["path", "data_dir", "roots"]
    # --xla_gpu_cuda_data_dir would not help here (PATH comes first in 2.15): the wheel's bin/ goes first on PATH.
    assert finding.fixes == (EnvFix(f"Put {g.SITE}/nvidia/cuda_nvcc/bin first on PATH",
                                    (prepend_path("PATH", f"{g.SITE}/nvidia/cuda_nvcc/bin"),)),)


def test_a_newer_toolkit_on_path_is_not_judged_by_the_old_cuda_link(tmp_path):
    # /usr/local/cuda -> 11.8 (which the probe lists first among the roots), but XLA 2.15 runs PATH's 12.4.
    env = {"PATH": f"{g.VENV}/bin:/usr/local/cuda-12.4/bin:/usr/bin:/bin"}
    facts = _collect(tmp_path, _toolkit_on_path("12.4", cuda_link="11.8"), env, g.PIP)
    assert facts.get("xla_toolchain.ptxas")["path"] == "/usr/local/cuda/bin/ptxas"  # the probe's hint: 11.8
    assert check_facts(facts, select=["XLA002", "XLA004"]).findings() == []


def test_xla_217_skips_a_refused_ptxas_on_path_and_runs_the_wheels(tmp_path):
    def build(root):
        g._release_pip("2.17.1")(root)
        g._ptxas_toolkit("12.3.1", "12.3.103")(root)
    env = {"PATH": f"{g.VENV}/bin:/usr/local/cuda-12.3/bin:/usr/bin:/bin"}
    facts = _collect(tmp_path, build, env, g.release_python("2.17.1"))
    report = check_facts(facts, select=["XLA002", "XLA004"])
    (finding,) = report.findings()
    assert finding.code == "XLA004"
    assert finding.evidence["candidates"][0] == {"path": "/usr/local/cuda-12.3/bin/ptxas", "version": "12.3.103"}
    assert "it runs " + f"{g.SITE}/nvidia/cuda_nvcc/bin/ptxas" in finding.message
    # XLA002 judges the wheel's ptxas XLA runs (as new as the build), not the refused one on PATH.
    assert report.result("XLA002").findings == ()


def test_xla_216_runs_an_old_ptxas_it_does_not_refuse(tmp_path):
    # Before 2.17 XLA has no minimum: a ptxas 11.8 is run (XLA002 says it is older), never "refused" (XLA004).
    env = {"PATH": f"{g.VENV}/bin:/usr/local/cuda-11.8/bin:/usr/bin:/bin"}
    facts = _collect(tmp_path, _toolkit_on_path("11.8"), env, g.PIP)
    from tfdoctor.checks.xla import _refusal

    assert _refusal("11.4.48", "2.16.1") is None
    assert _refusal("11.4.48", "2.17.1") == "XLA skips any ptxas older than 11.8.0"
    assert check_facts(facts, select=["XLA004"]).findings() == []


def test_xla_216_runs_ptxas_12_3_103_from_path_and_aborts(tmp_path):
    # tensorflow[and-cuda] 2.16 (its nvcc wheel's ptxas is fine), a CUDA 12.3 Update 1 toolkit on PATH: XLA 2.16
    # tries PATH first, runs 12.3.103 and aborts ("has a bug that we think can affect XLA").
    def build(root):
        g._release_pip("2.16.1")(root)
        g._ptxas_toolkit("12.3.1", "12.3.103")(root)
    env = {"PATH": f"{g.VENV}/bin:/usr/local/cuda-12.3/bin:/usr/bin:/bin"}
    facts = _collect(tmp_path, build, env, g.release_python("2.16.1"))
    (finding,) = check_facts(facts, select=["XLA004"]).findings()
    assert finding.severity is Severity.ERROR
    assert finding.message.startswith("XLA in TensorFlow 2.16.1 will run ptxas 12.3.103 (/usr/local/cuda-12.3/bin/"
                                      "ptxas, via PATH) and then abort: XLA aborts the process")
    wheel_bin = f"{g.SITE}/nvidia/cuda_nvcc/bin"
    assert finding.fixes == (EnvFix(f"Put {wheel_bin} first on PATH", (prepend_path("PATH", wheel_bin),)),)
    # 2.17 skips the same ptxas instead (a warning: it runs the wheel's).
    assert _abort_row_release("12.3.103", "2.17.1") is None


def _abort_row_release(version, release):
    from tfdoctor.checks.xla import _abort

    return _abort(version, release)


# -- XLA108: XLA_FLAGS against the flags the installed release's XLA registers ------------------------------

def _xla_flags(flags: str, version: str):
    return check_facts(_with_tensorflow(make_facts(env={"XLA_FLAGS": flags}), version), select=["XLA108"]).findings()


def test_the_flag_lists_follow_xla_history():
    # --xla_gpu_enable_command_buffer replaced --xla_gpu_graph_level (openxla/xla#30187 removed the latter),
    # --xla_cpu_use_thunk_runtime came with XLA's CPU thunk runtime: what the wheels say, release by release.
    from tfdoctor import knowledge

    def has(flag):
        return [r["release"] for r in knowledge.table("xla_flags").rows if flag in r["flags"]]

    assert has("xla_gpu_enable_command_buffer") == ["2.16.2", "2.17.1", "2.18.1", "2.19.1", "2.20.0", "2.21.0"]
    assert has("xla_gpu_graph_level") == ["2.15.1", "2.16.2", "2.17.1", "2.18.1", "2.19.1", "2.20.0"]
    assert has("xla_cpu_use_thunk_runtime") == ["2.17.1", "2.18.1", "2.19.1", "2.20.0", "2.21.0"]


def test_a_flag_of_newer_xla_aborts_an_older_release():
    (finding,) = _xla_flags("--xla_gpu_enable_command_buffer= --xla_dump_to=/tmp/xla", "2.15.1")
    assert finding.severity is Severity.ERROR
    assert finding.message == ("XLA_FLAGS sets --xla_gpu_enable_command_buffer, which the XLA of TensorFlow 2.15.1 "
                               "does not register (a flag of newer XLA: the first release read that registers it is "
                               "2.16.2): XLA aborts at its first compilation")
    assert finding.evidence["registered_in"] == ["2.16.2", "2.17.1", "2.18.1", "2.19.1", "2.20.0", "2.21.0"]
    assert finding.fixes == (EnvFix("Remove --xla_gpu_enable_command_buffer from XLA_FLAGS",
                                    (set_env("XLA_FLAGS", "--xla_dump_to=/tmp/xla"),)),)


def test_a_flag_removed_before_the_installed_release():
    (finding,) = _xla_flags("--xla_gpu_graph_level=0", "2.21.0")
    assert "(a flag this XLA has removed: the last release read that registers it is 2.20.0)" in finding.message
    assert finding.fixes[0].changes == (unset_env("XLA_FLAGS"),)


@pytest.mark.parametrize("flags, version", [
    ("--xla_gpu_graph_level=0", "2.15.0"),              # 2.15's own flag (the list holds for the minor series)
    ("--xla_gpu_enable_command_buffer=", "2.21.0"),
    ("--xla_gpu_enable_command_buffer=", "2.16.1"),     # 2.16 has it (the 2.16.2 list holds for 2.16.x)
    ("--xla_gpu_enable_command_buffer=", "2.14.1"),     # no list for 2.14: no verdict
    ("--xla_cpu_use_thunk_runtime=false", "2.17.0"),
    ("--xla_dump_too=/tmp/x", "2.15.1"),                # in no list: a typo, XLA103's
])
def test_flags_the_release_has_or_cannot_be_judged_are_silent(flags, version):
    assert _xla_flags(flags, version) == []


def test_flag_list_reads_nul_terminated_names_across_chunks():
    import io

    from tfdoctor.knowledge import xla_flag_list

    filler = b"\x01" * (xla_flag_list.CHUNK - 5)
    data = (b"\x00xla_dump_to\x00--xla_gpu_autotune_level\x00" + filler + b"\x00xla_split_across_chunks\x00"
            + b"\x0axla_gpu_graph_level\x18\x01" + b"foo_xla_not_a_flag\x00")
    assert xla_flag_list.flag_names(io.BytesIO(data)) == ["xla_dump_to", "xla_gpu_autotune_level",
                                                          "xla_split_across_chunks"]


def test_flag_lists_hold_the_flags_tfdoctor_names():
    # The typo list of derive/xla_flags.py is a set of real flags: 2.21's list has every one still in XLA.
    from tfdoctor import knowledge
    from tfdoctor.derive.xla_flags import XLA_COMMON

    (listed,) = [r for r in knowledge.table("xla_flags").rows if r["release"] == "2.21.0"]
    assert sorted(XLA_COMMON - set(listed["flags"])) == [
        "xla_enable_dumping", "xla_gpu_enable_async_all_reduce", "xla_gpu_graph_level"]
