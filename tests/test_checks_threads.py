"""THR: thread budgets on fake machines, with exact codes, evidence and fixes."""

from __future__ import annotations

import json

import pytest
from conftest import check_facts, check_root, env_fixes, probe_root
from support.fake_site_packages import FakeSitePackages

from tfdoctor.derive.cpu_budget import cpu_budget
from tfdoctor.model import AdminFix, EnvFix, EnvOp, Severity, Status
from tfdoctor.testing import facts_from

THR = ["THR"]


def test_cgroup_v2_quota_without_thread_settings(make_root):
    root = make_root().cpus(sockets=2, cores_per_socket=16, threads_per_core=2).cgroup_v2("200000 100000")
    report = check_root(root, env={}, select=THR)
    assert report.codes() == ["THR101"]
    finding = report.result("THR101").findings[0]
    assert finding.evidence["cpu.budget"] == 2
    assert finding.evidence["cpu.budget.source"] == "cgroup quota 200000/100000"
    assert finding.evidence["cpu.host_cpus"] == 64
    assert finding.evidence["limit_kind"] == "quota"
    assert finding.message == (
        "this job may use 2 of the 64 CPUs it can run on (cgroup quota 200000/100000: a CFS quota) but "
        "TF_NUM_INTRAOP_THREADS, TF_NUM_INTEROP_THREADS, OMP_NUM_THREADS are not set to a valid count: "
        "TensorFlow and OpenMP size their pools from the 64 CPUs, not from this limit")
    # Two CPUs of quota fit in one socket: one inter-op thread, not one per socket of the host.
    assert env_fixes(report) == {"TF_NUM_INTRAOP_THREADS": "2", "TF_NUM_INTEROP_THREADS": "1",
                                 "OMP_NUM_THREADS": "2"}


def test_cgroup_v2_quota_in_nested_cgroup_takes_the_smallest(make_root):
    root = make_root().cpus(cores_per_socket=8)
    root.write("/proc/self/cgroup", "0::/job/step\n")
    root.write("/sys/fs/cgroup/job/cpu.max", "300000 100000\n")
    root.write("/sys/fs/cgroup/job/step/cpu.max", "max 100000\n")
    budget = cpu_budget(probe_root(root, env={}))
    assert (budget.cpus, budget.source) == (3, "cgroup quota 300000/100000")


def test_cgroup_v1_quota(make_root):
    root = make_root().cpus(cores_per_socket=8).cgroup_v1(quota_us=400000, period_us=100000)
    report = check_root(root, env={}, select=THR)
    assert report.codes() == ["THR101"]
    assert env_fixes(report)["OMP_NUM_THREADS"] == "4"


def test_fractional_quota_rounds_down_but_never_to_zero(make_root):
    root = make_root().cpus(cores_per_socket=8).cgroup_v2("50000 100000")
    budget = cpu_budget(probe_root(root, env={}))
    assert budget.cpus == 1


def test_cpuset_on_a_hyperthreaded_two_socket_host_is_a_tip_only(make_root):
    """TensorFlow and OpenMP size their pools from the affinity mask, which a cpuset limits: no warning,
    only the tip that the 8 CPUs are 4 cores and their siblings."""
    # 2 sockets × 4 cores × 2 threads: CPUs 0-7 are first threads, 8-15 their siblings.
    root = make_root().cpus(sockets=2, cores_per_socket=4, threads_per_core=2).cgroup_v1(cpuset="0-3,8-11")
    root.write("/proc/self/status", "Name:\tpython\nCpus_allowed_list:\t0-3,8-11\nMems_allowed_list:\t0\n")
    facts = probe_root(root, env={})
    budget = cpu_budget(facts)
    assert (budget.cpus, budget.physical_cores, budget.sockets) == (8, 4, 1)
    report = check_facts(facts, select=THR)
    assert report.codes() == ["THR101"]
    finding = report.result("THR101").findings[0]
    assert finding.severity is Severity.INFO
    assert finding.evidence["limit_kind"] == "affinity"
    assert finding.message.startswith("tip: the 8 CPUs this job may run on (affinity) are 4 cores")
    assert env_fixes(report) == {"TF_NUM_INTRAOP_THREADS": "4", "OMP_NUM_THREADS": "4"}


def test_cpuset_without_hyperthreads_is_silent(make_root):
    """A cpuset container (docker --cpuset-cpus=0-3) on a host without SMT: the runtimes already fit."""
    root = make_root().cpus(cores_per_socket=16).cgroup_v2(cpuset="0-3")
    root.write("/proc/self/status", "Name:\tpython\nCpus_allowed_list:\t0-3\nMems_allowed_list:\t0\n")
    facts = probe_root(root, env={})
    assert cpu_budget(facts).cpus == 4
    assert check_facts(facts, select=["THR101"]).codes() == []


def test_affinity_limit_is_silent(make_root):
    """taskset -c 0-3 on a 16-core host: sched_getaffinity says 4, and so will TensorFlow."""
    root = make_root().cpus(cores_per_socket=16, allowed=range(4))
    assert check_root(root, env={}, select=["THR101"]).codes() == []


def test_slurm_allocation_not_enforced_by_binding_warns(make_root):
    """SLURM_CPUS_PER_TASK=4 but the task may run on all 32 CPUs (no task/affinity, no cgroup cpuset)."""
    root = make_root().cpus(cores_per_socket=32)
    report = check_root(root, env={"SLURM_JOB_ID": "4242", "SLURM_CPUS_PER_TASK": "4"}, select=["THR101"])
    assert report.codes() == ["THR101"]
    finding = report.result("THR101").findings[0]
    assert finding.severity is Severity.WARNING
    assert finding.evidence["limit_kind"] == "allocation"
    assert "(SLURM_CPUS_PER_TASK: an allocation no binding enforces)" in finding.message
    assert env_fixes(report) == {"TF_NUM_INTRAOP_THREADS": "4", "TF_NUM_INTEROP_THREADS": "1", "OMP_NUM_THREADS": "4"}


def test_slurm_allocation_enforced_by_binding_is_silent(make_root):
    """The same allocation with srun --cpu-bind=cores: the task's mask is its 4 CPUs."""
    root = make_root().cpus(cores_per_socket=32, allowed=range(4, 8))
    env = {"SLURM_JOB_ID": "4242", "SLURM_CPUS_PER_TASK": "4", "SLURM_CPU_BIND": "quiet,cores"}
    assert check_root(root, env=env, select=["THR101"]).codes() == []


def test_omp_threads_on_hyperthreads(make_root):
    root = make_root().cpus(sockets=2, cores_per_socket=4, threads_per_core=2)
    report = check_root(root, env={"OMP_NUM_THREADS": "16", "TF_NUM_INTRAOP_THREADS": "16",
                                   "TF_NUM_INTEROP_THREADS": "2"}, select=THR)
    assert report.codes() == ["THR103"]
    messages = [f.message for f in report.result("THR103").findings]
    assert messages[0].startswith("OMP_NUM_THREADS=16 is above the 8 physical core(s)")
    assert env_fixes(report) == {"OMP_NUM_THREADS": "8", "TF_NUM_INTRAOP_THREADS": "8"}


def test_slurm_allocation_is_the_budget(make_root):
    root = make_root().cpus(sockets=2, cores_per_socket=16)
    env = {"SLURM_CPUS_PER_TASK": "4", "SLURM_JOB_ID": "42", "OMP_NUM_THREADS": "32",
           "TF_NUM_INTRAOP_THREADS": "32", "TF_NUM_INTEROP_THREADS": "2"}
    report = check_root(root, env=env, select=THR)
    assert report.codes() == ["THR102"]
    finding = report.result("THR102").findings[0]
    assert finding.evidence["cpu.budget.source"] == "SLURM_CPUS_PER_TASK"
    assert finding.message == ("OMP_NUM_THREADS=32, TF_NUM_INTRAOP_THREADS=32 exceed the 4 CPU(s) this job "
                               "may use (SLURM_CPUS_PER_TASK)")
    assert finding.evidence["threading_model"] == "eigen"
    # Inter-op 2 fits 4 CPUs: with a stock build the pools are not multiplied, so it is left alone.
    assert env_fixes(report) == {"TF_NUM_INTRAOP_THREADS": "4", "OMP_NUM_THREADS": "4"}


def test_slurm_cpus_on_node_shared_by_tasks(make_root):
    root = make_root().cpus(cores_per_socket=16)
    facts = probe_root(root, env={"SLURM_CPUS_ON_NODE": "16", "SLURM_NTASKS_PER_NODE": "4"})
    budget = cpu_budget(facts)
    assert (budget.cpus, budget.source) == (4, "SLURM_CPUS_ON_NODE / SLURM_NTASKS_PER_NODE")


def test_pbs_ncpus(make_root):
    root = make_root().cpus(cores_per_socket=16)
    budget = cpu_budget(probe_root(root, env={"PBS_JOBID": "7.pbs", "NCPUS": "6"}))
    assert (budget.cpus, budget.source) == (6, "NCPUS (PBS)")


@pytest.mark.parametrize("env", [
    {"TF_NUM_INTRAOP_THREADS": "8", "TF_NUM_INTEROP_THREADS": "8"},  # TensorFlow's own defaults, written out
    {"TF_NUM_INTRAOP_THREADS": "8", "OMP_NUM_THREADS": "8", "TF_NUM_INTEROP_THREADS": "2"},  # the published advice
    {"TF_NUM_INTRAOP_THREADS": "8", "OMP_NUM_THREADS": "8", "TF_NUM_INTEROP_THREADS": "4"},
])
def test_stock_build_shares_one_intra_op_pool(make_root, env):
    """tensorflow-cpu: ops started by the inter-op pool share the one intra-op pool (intra + inter)."""
    root = make_root().cpus(cores_per_socket=8)
    FakeSitePackages(root.path / "venv/lib/python3.11/site-packages").tensorflow()
    report = check_root(root, env={"VIRTUAL_ENV": "/venv", **env}, select=["THR102"])
    assert report.codes() == []


def _intel_tensorflow_root(make_root):
    """intel-tensorflow 2.15 (an MKL build): oneDNN on Intel OpenMP, libiomp5 bundled deep in the wheel."""
    root = make_root().cpus(cores_per_socket=8)
    bundled = ("tensorflow/python/_solib_k8/_U@mkl_Ulinux_S_S_Cmkl_Ulibs_Ulinux___Uexternal_Smkl_Ulinux_Slib/"
               "libiomp5.so")
    site = FakeSitePackages(root.path / "venv/lib/python3.11/site-packages")
    site.tensorflow(name="intel-tensorflow", version="2.15.0", record=(
        "tensorflow/__init__.py", "tensorflow/python/platform/build_info.py", bundled,
        "intel_tensorflow-2.15.0.dist-info/RECORD"))
    site.file(bundled, "\x7fELF")
    return root


def test_openmp_build_multiplies_the_pools(make_root):
    root = _intel_tensorflow_root(make_root)
    env = {"VIRTUAL_ENV": "/venv", "TF_NUM_INTRAOP_THREADS": "8", "OMP_NUM_THREADS": "8",
           "TF_NUM_INTEROP_THREADS": "4", "KMP_BLOCKTIME": "1"}
    report = check_root(root, env=env, select=["THR102"])
    assert report.codes() == ["THR102"]
    finding = report.result("THR102").findings[0]
    assert finding.message.startswith("intra-op × inter-op = 8 × 4 = 32 threads can be runnable at once, more "
                                      "than the 8 CPU(s) × 1 socket(s) of this job (host), because the "
                                      "TensorFlow build bundles libiomp5")
    assert finding.evidence["threading_model"] == "openmp"
    assert env_fixes(report) == {"TF_NUM_INTRAOP_THREADS": "8", "TF_NUM_INTEROP_THREADS": "1"}


def test_openmp_build_with_the_published_advice_is_silent(make_root):
    root = _intel_tensorflow_root(make_root)
    env = {"VIRTUAL_ENV": "/venv", "TF_NUM_INTRAOP_THREADS": "8", "OMP_NUM_THREADS": "8",
           "TF_NUM_INTEROP_THREADS": "1", "KMP_BLOCKTIME": "1"}
    assert check_root(root, env=env, select=THR).codes() == []


def test_threading_model_from_the_distribution_name():
    from tfdoctor.derive.openmp_runtimes import threading_model

    for dist, kind in (("intel-tensorflow", "openmp"), ("tensorflow-cpu", "eigen"), ("tensorflow", "eigen")):
        facts = facts_from({"python": {"distributions": {dist: {"version": "2.15.0", "location": "/s"}}},
                            "openmp": {"runtimes": []}})
        model = threading_model(facts)
        assert model.kind == kind
        assert model.why.startswith(f"{dist} 2.15.0 is")
    assert threading_model(facts_from({})).why.startswith("no OpenMP-threaded TensorFlow build found")


def test_healthy_settings_are_silent(make_root):
    root = make_root().cpus(sockets=2, cores_per_socket=4, threads_per_core=2)
    env = {"TF_NUM_INTRAOP_THREADS": "8", "OMP_NUM_THREADS": "8", "TF_NUM_INTEROP_THREADS": "2",
           "KMP_AFFINITY": "granularity=fine,compact,1,0", "KMP_BLOCKTIME": "1",
           "TF_CLI_CONFIG_FILE": "/root/.terraformrc"}
    report = check_root(root, env=env, select=THR)
    assert report.codes() == []


def test_unconstrained_host_without_settings_is_silent(make_root):
    root = make_root().cpus(cores_per_socket=4).cgroup_v2("max 100000")
    assert check_root(root, env={}, select=THR).codes() == []


@pytest.mark.parametrize("value", ["abc", "0", "-1", "", "4.5"])
def test_thread_count_not_a_number(make_root, value):
    root = make_root().cpus(cores_per_socket=4)
    report = check_root(root, env={"OMP_NUM_THREADS": value}, select=["THR001"])
    assert report.codes() == ["THR001"]
    finding = report.result("THR001").findings[0]
    assert finding.evidence == {"env.OMP_NUM_THREADS": value}
    assert env_fixes(report) == {"OMP_NUM_THREADS": "4"}


def test_tf_zero_means_default_and_omp_nesting_list_is_valid(make_root):
    root = make_root().cpus(cores_per_socket=4)
    report = check_root(root, env={"TF_NUM_INTEROP_THREADS": "0", "OMP_NUM_THREADS": "4,2"}, select=["THR001"])
    assert report.codes() == []


def test_omp_and_intraop_disagree(make_root):
    root = make_root().cpus(cores_per_socket=8)
    report = check_root(root, env={"OMP_NUM_THREADS": "4", "TF_NUM_INTRAOP_THREADS": "8"}, select=["THR104"])
    assert report.codes() == ["THR104"]
    assert env_fixes(report) == {"OMP_NUM_THREADS": "8", "TF_NUM_INTRAOP_THREADS": "8"}


@pytest.mark.parametrize("env", [
    {"KMP_AFFINITY": "granularity=fine,proclist=[0],explicit"},
    {"GOMP_CPU_AFFINITY": "3"},
    {"OMP_PLACES": "{0}"},
    {"OMP_PROC_BIND": "master", "OMP_PLACES": "cores"},
    {"OMP_PROC_BIND": "primary"},
])
def test_affinity_pins_all_threads_to_one_cpu(make_root, env):
    root = make_root().cpus(cores_per_socket=8)
    report = check_root(root, env={"OMP_NUM_THREADS": "8", **env}, select=["THR105"])
    assert report.codes() == ["THR105"]
    pinned = [k for k in env if k != "OMP_PLACES" or len(env) == 1][-1]
    fixes = report.result("THR105").findings[0].fixes
    assert fixes == (EnvFix(f"Unset {pinned}", (fixes[0].changes[0],)),)
    assert fixes[0].changes[0].op is EnvOp.UNSET and fixes[0].changes[0].name == pinned


@pytest.mark.parametrize("env", [
    {"KMP_AFFINITY": "granularity=fine,compact,1,0"},
    {"GOMP_CPU_AFFINITY": "0-7"},
    {"OMP_PLACES": "{0}:8"},
    {"OMP_PROC_BIND": "close", "OMP_PLACES": "cores"},
    {"OMP_PLACES": "{0}", "OMP_NUM_THREADS": "1"},
])
def test_affinity_that_spreads_is_silent(make_root, env):
    root = make_root().cpus(cores_per_socket=8)
    report = check_root(root, env={"OMP_NUM_THREADS": "8", **env}, select=["THR105"])
    assert report.codes() == []


def test_local_ranks_unbound_with_affinity_overlap(make_root):
    root = make_root().cpus(cores_per_socket=8)
    env = {"SLURM_NTASKS_PER_NODE": "4", "SLURM_CPUS_PER_TASK": "2", "KMP_AFFINITY": "compact",
           "OMP_NUM_THREADS": "2", "TF_NUM_INTRAOP_THREADS": "2", "TF_NUM_INTEROP_THREADS": "1"}
    report = check_root(root, env=env, select=THR)
    # KMP_AFFINITY says Intel OpenMP is in use, and 2 of 8 CPUs is a shared node: THR107 too.
    assert report.codes() == ["THR106", "THR107"]
    finding = report.result("THR106").findings[0]
    assert finding.evidence["env.SLURM_NTASKS_PER_NODE"] == 4
    assert isinstance(finding.fixes[1], AdminFix)
    assert env_fixes(report) == {"KMP_AFFINITY": None, "KMP_BLOCKTIME": "1"}


def test_local_ranks_bound_by_launcher_are_silent(make_root):
    root = make_root().cpus(cores_per_socket=8, allowed=[2, 3])
    env = {"SLURM_NTASKS_PER_NODE": "4", "KMP_AFFINITY": "compact", "OMP_NUM_THREADS": "2",
           "TF_NUM_INTRAOP_THREADS": "2", "TF_NUM_INTEROP_THREADS": "1"}
    assert check_root(root, env=env, select=["THR106"]).codes() == []


CPU_FACTS = {
    "cpu": {"online": list(range(16)), "allowed_cpus": list(range(16)),
            "topology": [{"cpu": c, "socket": 0, "core": c} for c in range(16)]},
    "cgroup": {"version": 2, "limits": [{"cgroup": "/", "quota_us": 400000, "period_us": 100000}],
               "cpuset": {"$unknown": "none"}},
}


def test_kmp_blocktime_on_shared_node_with_intel_openmp():
    facts = facts_from({**CPU_FACTS, "openmp": {"runtimes": [
        {"runtime": "libiomp5", "path": "/venv/lib/libiomp5.so", "owner": "intel-openmp", "owner_version": "2024.2.1",
         "found_by": "record"}]}}, env={})
    report = check_facts(facts, select=["THR107"])
    assert report.codes() == ["THR107"]
    assert env_fixes(report) == {"KMP_BLOCKTIME": "1"}


def test_kmp_blocktime_without_intel_openmp_is_silent():
    facts = facts_from({**CPU_FACTS, "openmp": {"runtimes": [
        {"runtime": "libgomp", "path": "/venv/lib/libgomp.so.1"}]}}, env={})
    assert check_facts(facts, select=["THR107"]).codes() == []


def test_kmp_blocktime_not_checked_when_runtimes_unknown():
    facts = facts_from({**CPU_FACTS, "openmp": {"$unknown": "probe openmp timed out after 2 s"}}, env={})
    result = check_facts(facts, select=["THR107"]).result("THR107")
    assert result.status is Status.NOT_CHECKED
    assert result.reason == "openmp unknown: probe openmp timed out after 2 s"


def test_unknown_cpu_facts_mean_not_checked():
    facts = facts_from({"cpu": {"$unknown": "probe cpu timed out after 2 s"}}, env={"OMP_NUM_THREADS": "4"})
    result = check_facts(facts, select=["THR101"]).result("THR101")
    assert result.status is Status.NOT_CHECKED
    assert result.reason == "cpu unknown: probe cpu timed out after 2 s"


# -- affinity across the processes of a node --------------------------------------------------------

SLURM_TASK_CGROUP = "/system.slice/slurmstepd.scope/job_4242/step_0/user/task_1"


def _slurm_rank(cpu_bind: str) -> dict[str, str]:
    """What srun exports to local rank 1 of `srun -N1 --ntasks-per-node=4 --cpus-per-task=8`."""
    return {"SLURM_JOB_ID": "4242", "SLURM_STEP_ID": "0", "SLURM_PROCID": "1", "SLURM_LOCALID": "1",
            "SLURM_NODEID": "0", "SLURM_NTASKS": "4", "SLURM_NTASKS_PER_NODE": "4", "SLURM_TASKS_PER_NODE": "4",
            "SLURM_STEP_TASKS_PER_NODE": "4", "SLURM_CPUS_PER_TASK": "8", "SLURM_CPUS_ON_NODE": "32",
            "SLURM_JOB_CPUS_PER_NODE": "32", "SLURM_CPU_BIND": cpu_bind,
            "SLURM_CPU_BIND_TYPE": cpu_bind.split(",", 1)[1].split(":", 1)[0] + (":" if ":" in cpu_bind else ""),
            "OMP_NUM_THREADS": "8", "TF_NUM_INTRAOP_THREADS": "8", "TF_NUM_INTEROP_THREADS": "1",
            "OMP_PROC_BIND": "close", "OMP_PLACES": "cores", "KMP_BLOCKTIME": "1"}


def _slurm_node(make_root, allowed):
    return (make_root().cpus(sockets=2, cores_per_socket=16, allowed=allowed)
            .cgroup_v2("max 100000", path=SLURM_TASK_CGROUP, cpuset="0-31"))


def test_slurm_ranks_not_bound_pile_onto_the_same_cores(make_root):
    root = _slurm_node(make_root, allowed=range(32))
    report = check_root(root, env=_slurm_rank("quiet,none"), select=THR)
    assert report.codes() == ["THR106"]
    (finding,) = report.result("THR106").findings
    assert finding.message == (
        "4 processes of this job on this node (SLURM_STEP_TASKS_PER_NODE) may each run on the same 32 CPUs, and "
        "OMP_PLACES=cores, OMP_PROC_BIND=close binds each one's threads from the first of them (CPU 0): the "
        "processes, and the TensorFlow pool threads that inherit the binding, pile onto the same cores")
    assert finding.evidence["env.SLURM_STEP_TASKS_PER_NODE"] == 4
    assert env_fixes(report) == {"OMP_PLACES": None, "OMP_PROC_BIND": None}
    assert finding.fixes[1].steps[0] == ("srun --ntasks-per-node=4 --cpus-per-task=8 --cpu-bind=cores "
                                         "python train.py")


def test_slurm_ranks_bound_per_rank_are_silent(make_root):
    """The twin: srun --cpu-bind=cores gave rank 1 CPUs 8-15; close/cores then binds within them."""
    root = _slurm_node(make_root, allowed=range(8, 16))
    env = _slurm_rank("quiet,mask_cpu:0x000000FF,0x0000FF00,0x00FF0000,0xFF000000")
    assert check_root(root, env=env, select=THR).codes() == []


@pytest.mark.parametrize("cpu_bind, codes", [("", ["THR106"]), ("cores", [])])
def test_batch_script_before_srun_trusts_the_binding_srun_will_apply(make_root, cpu_bind, codes):
    """In the batch script (no local rank yet) the mask is the whole allocation: srun --cpu-bind decides."""
    root = make_root().cpus(cores_per_socket=16)
    env = {"SLURM_JOB_ID": "4242", "SLURM_TASKS_PER_NODE": "4", "SLURM_CPUS_ON_NODE": "16",
           "OMP_PROC_BIND": "spread", "OMP_NUM_THREADS": "4", "TF_NUM_INTRAOP_THREADS": "4",
           "TF_NUM_INTEROP_THREADS": "1"}
    if cpu_bind:
        env["SLURM_CPU_BIND"] = cpu_bind
    assert check_root(root, env=env, select=["THR106"]).codes() == codes


@pytest.mark.parametrize("workers, codes", [
    (["localhost:12345", "localhost:23456"], ["THR106"]),
    (["worker-0.svc.cluster.local:2222", "worker-1.svc.cluster.local:2222"], []),
])
def test_tf_distribute_workers_on_one_host(make_root, workers, codes):
    root = make_root().cpus(cores_per_socket=8)
    tf_config = json.dumps({"cluster": {"worker": workers}, "task": {"type": "worker", "index": 0}})
    env = {"TF_CONFIG": tf_config, "KMP_AFFINITY": "granularity=fine,compact,1,0", "KMP_BLOCKTIME": "1"}
    report = check_root(root, env=env, select=["THR106"])
    assert report.codes() == codes
    if codes:
        assert report.result("THR106").findings[0].evidence["TF_CONFIG.local_tasks"] == 2


@pytest.mark.parametrize("gomp, codes", [("0-15", ["THR106"]), ("0-7", [])])
def test_open_mpi_ranks_with_gomp_cpu_affinity(make_root, gomp, codes):
    """A list spanning the node binds every rank the same; a list of one rank's share may differ per rank."""
    root = make_root().cpus(cores_per_socket=16)
    env = {"OMPI_COMM_WORLD_LOCAL_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_RANK": "0", "GOMP_CPU_AFFINITY": gomp}
    assert check_root(root, env=env, select=["THR106"]).codes() == codes


@pytest.mark.parametrize("env, codes", [
    ({"OMP_PROC_BIND": "spread"}, ["THR106"]),
    ({"OMP_PROC_BIND": "primary"}, ["THR106"]),
    ({"OMP_PROC_BIND": "true"}, ["THR106"]),
    ({"OMP_PLACES": "sockets"}, ["THR106"]),
    ({"KMP_AFFINITY": "scatter"}, ["THR106"]),
    ({"KMP_AFFINITY": "verbose,compact,disabled"}, []),
    ({"KMP_AFFINITY": "none"}, []),
    ({"OMP_PROC_BIND": "false", "OMP_PLACES": "cores"}, []),
    ({}, []),
])
def test_declared_worker_processes_and_binding_spellings(make_root, env, codes):
    """Data-loader or multiprocessing workers no launcher announces: TFDOCTOR_PROCESSES_PER_NODE says."""
    root = make_root().cpus(cores_per_socket=8)
    report = check_root(root, env={"TFDOCTOR_PROCESSES_PER_NODE": "4", **env}, select=["THR106"])
    assert report.codes() == codes


def test_thr105_offers_no_shared_binding_where_processes_share_the_node(make_root):
    root = make_root().cpus(cores_per_socket=8)
    env = {"OMP_NUM_THREADS": "8", "OMP_PROC_BIND": "master", "OMP_PLACES": "cores", "SLURM_LOCALID": "0",
           "SLURM_STEP_TASKS_PER_NODE": "2"}
    report = check_root(root, env=env, select=["THR105"])
    (finding,) = report.result("THR105").findings
    unset, per_process = finding.fixes
    assert unset.changes[0].op is EnvOp.UNSET
    assert isinstance(per_process, AdminFix) and per_process.title.startswith("2 processes share this node")
    assert all("compact" not in step for step in per_process.steps)


@pytest.mark.parametrize("with_libgomp, codes", [(False, []), (True, ["THR101"])])
def test_omp_num_threads_asked_for_only_where_an_openmp_team_can_run(make_root, with_libgomp, codes):
    """A stock TensorFlow under a quota with both of its pools set: OMP_NUM_THREADS matters only when an
    OpenMP runtime is in the environment (here scikit-learn's libgomp)."""
    root = make_root().cpus(cores_per_socket=16).cgroup_v2("400000 100000")
    site = FakeSitePackages(root.path / "venv/lib/python3.11/site-packages").tensorflow()
    if with_libgomp:
        site.dist("scikit-learn", "1.5.2", tags=("cp311-cp311-manylinux_2_17_x86_64",), top_level=("sklearn",),
                  record=("sklearn/__init__.py", "scikit_learn.libs/libgomp-a34b3233.so.1.0.0"))
        site.file("scikit_learn.libs/libgomp-a34b3233.so.1.0.0", "\x7fELF")
    env = {"VIRTUAL_ENV": "/venv", "TF_NUM_INTRAOP_THREADS": "4", "TF_NUM_INTEROP_THREADS": "1"}
    report = check_root(root, env=env, select=["THR101"])
    assert report.codes() == codes
    if codes:
        assert report.result("THR101").findings[0].evidence["env.unset"] == ["OMP_NUM_THREADS"]
