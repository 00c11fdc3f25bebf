"""THR: thread budgets on fake machines, with exact codes, evidence and fixes."""

from __future__ import annotations

import pytest
from conftest import check_facts, check_root, env_fixes, probe_root

from tfdoctor.derive.cpu_budget import cpu_budget
from tfdoctor.model import AdminFix, EnvFix, EnvOp, Status
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


def test_cpuset_on_a_hyperthreaded_two_socket_host(make_root):
    # 2 sockets × 4 cores × 2 threads: CPUs 0-7 are first threads, 8-15 their siblings.
    root = make_root().cpus(sockets=2, cores_per_socket=4, threads_per_core=2).cgroup_v1(cpuset="0-3,8-11")
    facts = probe_root(root, env={})
    budget = cpu_budget(facts)
    assert (budget.cpus, budget.physical_cores, budget.sockets) == (8, 4, 1)
    report = check_facts(facts, select=THR)
    assert report.codes() == ["THR101"]
    assert env_fixes(report) == {"TF_NUM_INTRAOP_THREADS": "4", "TF_NUM_INTEROP_THREADS": "1",
                                 "OMP_NUM_THREADS": "4"}


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
    assert env_fixes(report) == {"TF_NUM_INTRAOP_THREADS": "4", "TF_NUM_INTEROP_THREADS": "1",
                                 "OMP_NUM_THREADS": "4"}


def test_slurm_cpus_on_node_shared_by_tasks(make_root):
    root = make_root().cpus(cores_per_socket=16)
    facts = probe_root(root, env={"SLURM_CPUS_ON_NODE": "16", "SLURM_NTASKS_PER_NODE": "4"})
    budget = cpu_budget(facts)
    assert (budget.cpus, budget.source) == (4, "SLURM_CPUS_ON_NODE / SLURM_NTASKS_PER_NODE")


def test_pbs_ncpus(make_root):
    root = make_root().cpus(cores_per_socket=16)
    budget = cpu_budget(probe_root(root, env={"PBS_JOBID": "7.pbs", "NCPUS": "6"}))
    assert (budget.cpus, budget.source) == (6, "NCPUS (PBS)")


def test_intra_times_inter_above_budget(make_root):
    root = make_root().cpus(cores_per_socket=8)
    report = check_root(root, env={"TF_NUM_INTRAOP_THREADS": "8", "OMP_NUM_THREADS": "8",
                                   "TF_NUM_INTEROP_THREADS": "4"}, select=THR)
    assert report.codes() == ["THR102"]
    assert report.result("THR102").findings[0].message.startswith("intra-op × inter-op = 8 × 4 = 32 threads")


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
    facts = facts_from({**CPU_FACTS, "python": {"openmp_runtimes": [
        {"runtime": "libiomp5", "path": "/venv/lib/libiomp5.so"}]}}, env={})
    report = check_facts(facts, select=["THR107"])
    assert report.codes() == ["THR107"]
    assert env_fixes(report) == {"KMP_BLOCKTIME": "1"}


def test_kmp_blocktime_without_intel_openmp_is_silent():
    facts = facts_from({**CPU_FACTS, "python": {"openmp_runtimes": [
        {"runtime": "libgomp", "path": "/venv/lib/libgomp.so.1"}]}}, env={})
    assert check_facts(facts, select=["THR107"]).codes() == []


def test_kmp_blocktime_not_checked_when_runtimes_unknown():
    facts = facts_from({**CPU_FACTS, "python": {"openmp_runtimes": {"$unknown": "scan failed"}}}, env={})
    result = check_facts(facts, select=["THR107"]).result("THR107")
    assert result.status is Status.NOT_CHECKED
    assert result.reason == "python.openmp_runtimes unknown: scan failed"


def test_two_openmp_runtimes():
    facts = facts_from({"python": {"openmp_runtimes": [
        {"runtime": "libiomp5", "path": "/venv/lib/libiomp5.so"},
        {"runtime": "libgomp", "path": "/venv/lib/python3.11/site-packages/torch/lib/libgomp-a34b3233.so.1"},
    ]}}, env={})
    report = check_facts(facts, select=["THR108"])
    assert report.codes() == ["THR108"]
    finding = report.result("THR108").findings[0]
    assert finding.message == "2 OpenMP runtimes in this environment: libgomp, libiomp5"
    assert finding.evidence["python.openmp_runtimes.libiomp5"] == ["/venv/lib/libiomp5.so"]


def test_unknown_cpu_facts_mean_not_checked():
    facts = facts_from({"cpu": {"$unknown": "probe cpu timed out after 2 s"}}, env={"OMP_NUM_THREADS": "4"})
    result = check_facts(facts, select=["THR101"]).result("THR101")
    assert result.status is Status.NOT_CHECKED
    assert result.reason == "cpu unknown: probe cpu timed out after 2 s"


def test_two_openmp_runtimes_found_on_the_library_path(make_root, tmp_path):
    """End to end: real folders on LD_LIBRARY_PATH holding libiomp5 and libgomp, found by the python probe."""
    intel, gnu = tmp_path / "intel" / "lib", tmp_path / "gcc lib"
    intel.mkdir(parents=True)
    gnu.mkdir()
    (intel / "libiomp5.so").write_bytes(b"\x7fELF")
    (gnu / "libgomp.so.1").write_bytes(b"\x7fELF")
    root = make_root().cpus(cores_per_socket=4)
    report = check_root(root, env={"LD_LIBRARY_PATH": f"{intel}:{gnu}"}, select=["THR108"])
    assert report.codes() == ["THR108"]
    finding = report.result("THR108").findings[0]
    assert finding.evidence == {"python.openmp_runtimes.libgomp": [str(gnu / "libgomp.so.1")],
                                "python.openmp_runtimes.libiomp5": [str(intel / "libiomp5.so")]}
    assert isinstance(finding.fixes[0], AdminFix)


def test_one_openmp_runtime_is_silent(make_root, tmp_path):
    (tmp_path / "libgomp.so.1").write_bytes(b"\x7fELF")
    root = make_root().cpus(cores_per_socket=4)
    assert check_root(root, env={"LD_LIBRARY_PATH": str(tmp_path)}, select=["THR108"]).codes() == []
