"""DIST110–DIST112 (tfdoctor/checks/launchers.py), GPU counts per task from the launcher and the PCI bus
(tfdoctor/derive/launcher_gpus.py, GPU103, NUMA101), and severities that depend on use (XLA001, CUPTI002)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from conftest import check_facts
from healthy.corpus import examine
from support.framework_facts import A100, gpu_devices, make_facts
from support.launcher_jobs import jobs, machine

from tfdoctor.checks.launchers import _exempted, _grpc_proxy
from tfdoctor.derive.launcher_gpus import node_gpus, pci_host_gpus
from tfdoctor.model import AdminFix, EnvFix, Severity, set_env

CLUSTER = {"cluster": {"worker": ["gpu021.cluster.local:12345", "gpu022.cluster.local:12345"]},
           "task": {"type": "worker", "index": 0}}


def warnings(report, family: str = "") -> list[str]:
    return sorted({f.code for f in report.findings()
                   if f.severity is not None and f.severity >= Severity.WARNING and f.code.startswith(family)})


# -- the one-GPU-per-task Slurm layout, healthy and broken ------------------------------------------------

def test_one_gpu_per_task_under_constrain_devices_is_silent(tmp_path):
    report = examine(machine("slurm-one-gpu-per-task-constrained"), tmp_path)
    assert warnings(report) == []
    assert report.result("GPU103").status.value == "passed"


def test_one_gpu_per_task_was_taken_for_sharing_without_the_launcher(tmp_path):
    """The same task with the launcher's GPU variables removed: NVML's one GPU against the PCI bus's four
    and four tasks still says nothing is shared (the bus counts the host's GPUs)."""
    base = machine("slurm-one-gpu-per-task-constrained")
    env = {k: v for k, v in base.env.items() if k not in ("SLURM_GPUS_PER_TASK", "SLURM_JOB_GPUS",
                                                          "SLURM_GPUS_ON_NODE")}
    report = examine(dataclasses.replace(base, name="no-gpu-variables", env=env), tmp_path)
    assert warnings(report, "GPU") == []


def test_eight_tasks_on_four_gpus_still_share_under_constrain_devices(tmp_path):
    base = machine("slurm-one-gpu-per-task-constrained")
    env = {k: v for k, v in base.env.items() if k not in ("SLURM_GPUS_PER_TASK", "SLURM_JOB_GPUS",
                                                          "SLURM_GPUS_ON_NODE")}
    env.update(SLURM_NTASKS_PER_NODE="8", SLURM_STEP_TASKS_PER_NODE="8", SLURM_TASKS_PER_NODE="8")
    report = examine(dataclasses.replace(base, name="eight-tasks", env=env), tmp_path)
    finding = report.result("GPU103").findings[0]
    assert finding.evidence["env.SLURM_NTASKS_PER_NODE"] == 8
    assert finding.evidence["gpus.host"] == 4 and finding.evidence["gpus.host_source"] == "gpu_pci.devices"


def test_node_gpus_reads_the_launcher_first():
    facts = make_facts(env={"SLURM_GPUS_PER_TASK": "a100:2"}, gpus=gpu_devices(A100))
    layout = node_gpus(facts, [], (4, "SLURM_NTASKS_PER_NODE"))
    assert (layout.gpus, layout.per_task, layout.shared) == (8, 2, False)
    facts = make_facts(env={"SLURM_JOB_GPUS": "0,1"}, gpus=gpu_devices(A100))
    layout = node_gpus(facts, [], (4, "SLURM_NTASKS_PER_NODE"))
    assert (layout.gpus, layout.shared, layout.evidence["env.SLURM_JOB_GPUS"]) == (2, True, "0,1")


def test_pci_host_gpus_are_in_bus_order():
    facts = make_facts(gpus=gpu_devices(A100))
    facts.sections["gpu_pci"] = {"devices": [{"address": "0000:86:00.0"}, {"address": "0000:18:00.0"}]}
    assert [(g.index, g.pci_bus_id) for g in pci_host_gpus(facts)] == [(0, "0000:18:00.0"), (1, "0000:86:00.0")]


def test_horovod_rank_past_its_one_gpu_is_named(tmp_path):
    report = examine(jobs()["dist110-horovod-rank-2-of-one-gpu-per-task"], tmp_path)
    assert warnings(report) == ["DIST110"]
    finding = report.result("DIST110").findings[0]
    assert finding.message.startswith("local rank 2 of 4 sees one GPU")
    assert finding.evidence["python.distributions.horovod"] == "0.28.1"
    assert finding.evidence["env.SLURM_LOCALID"] == 2
    (fix,) = finding.fixes
    assert isinstance(fix, AdminFix) and "gpus[hvd.local_rank() % len(gpus)]" in fix.steps[1]


def test_local_rank_zero_and_jobs_without_horovod_are_not_named(tmp_path):
    dist110 = jobs()["dist110-horovod-rank-2-of-one-gpu-per-task"]
    rank0 = dataclasses.replace(dist110, name="rank0", env={**dist110.env, "SLURM_LOCALID": "0", "SLURM_PROCID": "0"})
    assert "DIST110" not in warnings(examine(rank0, tmp_path))
    # The healthy twins: the same task without Horovod, and Horovod with every GPU visible.
    assert examine(machine("slurm-one-gpu-per-task-constrained"), tmp_path).result("DIST110").status.value == "passed"
    assert examine(machine("slurm-horovod-rank-sees-node-gpus"), tmp_path).result("DIST110").status.value == "passed"


# -- MPI slots against the host's GPUs --------------------------------------------------------------------

def test_eight_mpi_ranks_on_a_four_gpu_host(tmp_path):
    report = examine(jobs()["dist111-mpirun-eight-slots-on-a-four-gpu-host"], tmp_path)
    finding = report.result("DIST111").findings[0]
    assert finding.message.startswith("the MPI launcher put 8 ranks on this host (OMPI_COMM_WORLD_LOCAL_SIZE=8) but "
                                      "it has 4 GPUs")
    assert finding.fixes[0].steps[0] == "mpirun --map-by ppr:4:node …   # Open MPI"


@pytest.mark.parametrize("variable", ["MPI_LOCALNRANKS", "PMI_LOCAL_SIZE", "PALS_LOCAL_SIZE"])
def test_mpi_local_sizes_of_other_launchers(variable):
    gpus = gpu_devices(A100, A100)
    assert check_facts(make_facts(env={variable: "4"}, gpus=gpus), select=["DIST111"]).codes() == ["DIST111"]
    assert check_facts(make_facts(env={variable: "2"}, gpus=gpus), select=["DIST111"]).codes() == []
    # A CPU job on that host (no GPU visible to it) does not compete for the GPUs.
    hidden = make_facts(env={variable: "4", "CUDA_VISIBLE_DEVICES": ""}, gpus=gpus)
    assert check_facts(hidden, select=["DIST111"]).codes() == []


# -- the proxy in front of gRPC ---------------------------------------------------------------------------

def proxied(**env: str):
    return check_facts(make_facts(env={"TF_CONFIG": json.dumps(CLUSTER), **env}), select=["DIST112"])


def test_proxy_without_the_cluster_in_no_proxy():
    report = proxied(https_proxy="http://proxy.corp:3128", no_proxy="localhost,127.0.0.1")
    (finding,) = report.findings()
    assert finding.message == ("gRPC sends TensorFlow's worker channels through the proxy "
                               "https_proxy=http://proxy.corp:3128 and no_proxy does not exempt gpu021.cluster.local, "
                               "gpu022.cluster.local: the workers wait for each other at start-up")
    (fix,) = finding.fixes
    assert isinstance(fix, EnvFix)
    assert fix.changes == (set_env("no_proxy", "localhost,127.0.0.1,gpu021.cluster.local,gpu022.cluster.local"),)


@pytest.mark.parametrize("env", [
    {"https_proxy": "http://proxy.corp:3128", "no_proxy": ".cluster.local"},  # a domain suffix
    {"https_proxy": "http://proxy.corp:3128", "no_proxy": "gpu021.cluster.local, gpu022.cluster.local"},
    {"http_proxy": "http://proxy.corp:3128", "no_grpc_proxy": "cluster.local", "no_proxy": "localhost"},
    {"HTTPS_PROXY": "http://proxy.corp:3128", "HTTP_PROXY": "http://proxy.corp:3128"},  # gRPC reads lower case only
    {"https_proxy": "https://proxy.corp:3128"},  # a scheme gRPC refuses: it uses no proxy
    {"grpc_proxy": "", "https_proxy": "http://proxy.corp:3128"},  # the first set one decides: empty is "none"
], ids=["domain", "hosts", "no-grpc-proxy", "upper-case", "https-scheme", "grpc-proxy-empty"])
def test_proxies_grpc_does_not_use_for_the_cluster(env):
    assert proxied(**env).codes() == []


def test_no_grpc_proxy_replaces_no_proxy_and_upper_case_is_ignored():
    report = proxied(https_proxy="http://u:pw@proxy.corp:3128", no_grpc_proxy="localhost", no_proxy=".cluster.local")
    assert report.findings()[0].fixes[0].changes == (
        set_env("no_grpc_proxy", "localhost,gpu021.cluster.local,gpu022.cluster.local"),)
    report = proxied(https_proxy="http://proxy.corp:3128", NO_PROXY=".cluster.local")
    assert report.findings()[0].message.endswith("NO_PROXY=.cluster.local is set, but gRPC reads only the "
                                                 "lower-case no_proxy")


def test_a_proxy_password_is_never_shown():
    report = proxied(https_proxy="http://bob:s3cret@proxy.corp:3128", no_proxy="localhost")
    (finding,) = report.findings()
    assert "s3cret" not in finding.message and "s3cret" not in json.dumps(finding.to_json())
    assert "https_proxy=http://<redacted>@proxy.corp:3128" in finding.message
    recorded = make_facts(env={"https_proxy": "http://bob:s3cret@proxy.corp:3128"}).dumps()
    assert "s3cret" not in recorded and "http://<redacted>@proxy.corp:3128" in recorded


def test_grpc_matching_rules():
    assert _exempted("10.10.4.17", "10.10.0.0/16") and not _exempted("10.11.4.17", "10.10.0.0/16")
    assert not _exempted("gpu021.cluster.local", "10.10.0.0/16")  # names are not resolved for CIDR ranges
    assert _exempted("GPU021.Cluster.Local", "cluster.local") and not _exempted("localhost", "")
    assert _grpc_proxy(make_facts(env={"http_proxy": "http://<redacted>@proxy:3128"})) == (
        "proxy", "http_proxy", "http://<redacted>@proxy:3128")


def test_a_single_task_cluster_is_not_judged():
    single = {"cluster": {"worker": ["localhost:12345"]}, "task": {"type": "worker", "index": 0}}
    report = check_facts(make_facts(env={"TF_CONFIG": json.dumps(single), "https_proxy": "http://proxy:3128"}),
                         select=["DIST112"])
    assert report.codes() == []


# -- severities that depend on use ------------------------------------------------------------------------

def test_libdevice_missing_is_a_note_when_nothing_turns_xla_on(tmp_path):
    base = machine("gpu-runtime-image-xla-unused-without-libdevice")
    (finding,) = examine(base, tmp_path).result("XLA001").findings
    assert finding.severity == Severity.INFO and finding.evidence["xla_in_use"] is False
    for name, env in (("auto-jit", {"TF_XLA_FLAGS": "--tf_xla_auto_jit=2"}),
                      ("xla-flags", {"XLA_FLAGS": "--xla_gpu_autotune_level=0"})):
        job = dataclasses.replace(base, name=name, env={**base.env, **env})
        (finding,) = examine(job, tmp_path).result("XLA001").findings
        assert finding.severity == Severity.ERROR, name
        assert list(finding.evidence["xla_in_use"]) == [f"env.{next(iter(env))}"]


def test_keras_optimizers_compile_with_xla_from_2_11():
    from tfdoctor.derive.feature_use import xla_in_use

    def with_keras(env=None, **watched):
        facts = make_facts(env=env)
        facts.sections["python"] = {"watched": {k.replace("_", "-"): {"version": v} for k, v in watched.items()}}
        return xla_in_use(facts)

    assert with_keras(keras="2.10.0") == {}
    assert list(with_keras(keras="2.11.0")) == ["python.watched.keras"]
    assert list(with_keras(keras="3.6.0")) == ["python.watched.keras"]
    # TF_USE_LEGACY_KERAS=1 imports tf-keras (itself 2.11+), whatever keras is installed beside it.
    assert list(with_keras({"TF_USE_LEGACY_KERAS": "1"}, keras="3.6.0", tf_keras="2.17.0")) == [
        "python.watched.tf-keras"]


def test_cupti_tracer_variables_mean_the_job_profiles():
    from tfdoctor.derive.profiling_intent import intends_to_profile

    assert not intends_to_profile(make_facts())
    assert intends_to_profile(make_facts(env={"TF_GPU_CUPTI_FORCE_CONCURRENT_KERNEL": "1"}))


# -- one process on GPUs of two NUMA nodes, with and without NVLink between them -------------------------------

def test_gpus_of_two_nodes_on_nvswitches_are_a_note_without_fewer_gpus(tmp_path):
    report = examine(machine("dgx-a100-one-process-all-gpus-nvlink"), tmp_path)
    (finding,) = report.result("NUMA003").findings
    assert finding.severity == Severity.INFO
    assert finding.message.startswith("this process uses GPUs on NUMA nodes 0, 1, joined by NVLink")
    assert [type(f) for f in finding.fixes] == [AdminFix]  # one process per GPU, never CUDA_VISIBLE_DEVICES
    assert "(ring, NVLink, 300 GB/s per GPU)" in report.result("DIST107").findings[0].message


def _bridged(pairs):
    """Four GPUs, two per node, with NVLink bridges between the `pairs` of indices."""
    from tfdoctor.derive.gpu_inventory import Gpu

    buses = ["0000:18:00.0", "0000:3b:00.0", "0000:86:00.0", "0000:af:00.0"]
    peers = {i: [buses[j] for a, b in pairs for i2, j in ((a, b), (b, a)) if i2 == i] for i in range(4)}
    return [Gpu(i, "NVIDIA RTX A6000", (8, 6), pci_bus_id=bus,
                raw={"nvlink": {"active_links": 4 * len(peers[i]), "peers": peers[i], "switch": False}
                     if peers[i] else None}) for i, bus in enumerate(buses)]


def test_nvlink_must_join_the_nodes():
    from tfdoctor.derive.nvlink import nvlink_connected

    assert nvlink_connected(_bridged([(0, 1), (2, 3)])) is False  # bridges within each socket only
    assert nvlink_connected(_bridged([(0, 1), (1, 2), (2, 3)])) is True
    assert nvlink_connected(_bridged([(0, 1), (2, 3)])[:2]) is True
    unknown = _bridged([(0, 1), (1, 2), (2, 3)])
    unknown[3] = unknown[3]._replace(raw={"nvlink": {"reason": "nvmlDeviceGetNvLinkState failed"}})
    assert nvlink_connected(unknown) is None


def test_gpus_of_two_nodes_without_nvlink_still_warn(tmp_path):
    base = machine("dgx-a100-one-process-all-gpus-nvlink")

    def pcie_only(root):
        return tuple(dataclasses.replace(g, nvlinks=None) for g in base.build(root))

    (finding,) = examine(dataclasses.replace(base, name="pcie", build=pcie_only), tmp_path).result("NUMA003").findings
    assert finding.severity == Severity.WARNING
    assert finding.fixes[0].changes[1] == set_env("CUDA_VISIBLE_DEVICES", "0,1,2,3")


# -- OpenMP binding across the tasks of a node --------------------------------------------------------------

def test_omp_binding_within_each_tasks_own_cores_is_silent_and_unbound_tasks_still_pile_up(tmp_path):
    bound = machine("slurm-one-gpu-per-task-omp-bound-cgroup-v1")
    assert examine(bound, tmp_path).result("THR106").status.value == "passed"
    # The same four tasks started with --cpu-bind=none on the whole node: their masks are the same.
    base = machine("slurm-one-gpu-per-task-constrained")

    def unbound(root):
        gpus = base.build(root)
        from healthy import parts
        parts.process(root, mems_allowed="0-1")
        return gpus

    env = {**bound.env, "SLURM_CPU_BIND": "quiet,none", "SLURM_CPU_BIND_TYPE": "none"}
    report = examine(dataclasses.replace(base, name="unbound", build=unbound, env=env), tmp_path)
    (finding,) = report.result("THR106").findings
    assert finding.message.startswith("4 processes of this job on this node (SLURM_STEP_TASKS_PER_NODE) may each "
                                      "run on the same 96 CPUs")


# -- DIST107 reads the links the nvml probe records ----------------------------------------------------------

def test_allreduce_link_comes_from_the_recorded_pcie_and_nvlink_fields():
    from tfdoctor.derive.allreduce import intra_node_link
    from tfdoctor.derive.gpu_inventory import Gpu

    pcie = {"gen_current": 4, "gen_max": 4, "width_current": 16, "width_max": 16}
    cards = [Gpu(i, "NVIDIA L40S", (8, 9), raw={"pcie": pcie, "nvlink": None}) for i in range(2)]
    link = intra_node_link(cards)
    assert not link.assumed and link.description.startswith("PCIe gen4 x16")
    sxm = [Gpu(i, "NVIDIA A100-SXM4-40GB", (8, 0), raw={"pcie": pcie, "nvlink": {"active_links": 12, "peers": [],
                                                                                    "switch": True}})
           for i in range(2)]
    assert intra_node_link(sxm).description == "NVLink, 300 GB/s per GPU"
    assert intra_node_link([Gpu(0, "x", (8, 0), raw={})]).assumed
