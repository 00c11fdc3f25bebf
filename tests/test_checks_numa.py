"""The NUMA family on fake hosts: one scenario per case of issue 4, with exact codes, evidence, fixes and
the launcher's binding command per rank."""

from __future__ import annotations

import json

import pytest
from conftest import check_facts, env_fixes
from support.numa_hosts import (
    CHECK_SNAPSHOTS,
    FIXTURES,
    GPU_BUS_IDS,
    NODE0,
    NODE1,
    probe_with_gpus,
    record,
    slurm_env,
    two_socket_host,
)

from tfdoctor.derive.numa_placement import launch_plan, rank_layout
from tfdoctor.facts import Facts
from tfdoctor.model import AdminFix, Applicability, EnvFix, Severity

NUMACTL = ["numactl", "--cpunodebind={}", "--membind={}", "--"]


def numactl(node: int) -> list[str]:
    return [part.format(node) for part in NUMACTL]


def test_unbound_process_with_gpus_on_one_node(make_root):
    root = two_socket_host(make_root())
    facts = probe_with_gpus(root, {"CUDA_VISIBLE_DEVICES": "2,3"})
    report = check_facts(facts, select=["NUMA", "THR"])
    assert report.codes() == ["NUMA001"]
    finding = report.result("NUMA001").findings[0]
    assert finding.message == ("this process may run on NUMA nodes 0, 1 but its GPU(s) 2, 3 sit on node 1: "
                               "it is not bound")
    assert finding.evidence == {
        "numa.gpu_nodes": {"2": 1, "3": 1},
        "cpu.allowed_cpus": "0-31",
        "numa.process_nodes": [0, 1],
        "numa.node0.cpus": NODE0,
        "numa.node1.cpus": NODE1,
    }
    env_fix, admin = finding.fixes
    assert isinstance(env_fix, EnvFix) and isinstance(admin, AdminFix)
    # The environment script gains the thread sizes of the node it should be bound to (8 cores).
    assert env_fixes(report) == {"TF_NUM_INTRAOP_THREADS": "8", "TF_NUM_INTEROP_THREADS": "1", "OMP_NUM_THREADS": "8"}
    assert admin.steps[-1] == "numactl --cpunodebind=1 --membind=1 python train.py   # or by hand"
    plan = launch_plan(facts)
    assert plan.methods == ("numactl", "taskset", "omp")
    assert plan.command_for(None) == numactl(1)
    # With a local rank each process goes to its own GPU's node; two ranks share node 1: 4 threads each.
    assert [plan.command_for(r) for r in (0, 1)] == [numactl(1), numactl(1)]
    assert [plan.slot_for(r).threads["OMP_NUM_THREADS"] for r in (0, 1)] == ["4", "4"]
    assert plan.single.threads["OMP_NUM_THREADS"] == "8"


def test_all_four_gpus_span_sockets(make_root):
    facts = probe_with_gpus(two_socket_host(make_root()), {})
    report = check_facts(facts, select=["NUMA"])
    assert report.codes() == ["NUMA003"]
    finding = report.result("NUMA003").findings[0]
    assert finding.message == ("this process uses GPUs on 2 NUMA nodes (node 0: GPU 0,1; node 1: GPU 2,3): "
                               "their traffic crosses sockets")
    assert finding.evidence["numa.gpu_nodes"] == {"0": 0, "1": 0, "2": 1, "3": 1}
    (fix,) = finding.fixes
    assert fix.applicability is Applicability.MANUAL
    assert {c.name: c.value for c in fix.changes} == {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": "0,1"}
    assert env_fixes(report) == {}  # manual: never written into env.sh
    plan = launch_plan(facts)
    assert plan.command_for(None) == []  # no one node is right for four GPUs on two sockets
    assert [plan.command_for(r) for r in range(4)] == [numactl(0), numactl(0), numactl(1), numactl(1)]


def test_gpus_span_sockets_prefers_the_bound_node(make_root):
    facts = probe_with_gpus(two_socket_host(make_root(), allowed=NODE1), {})
    fix = check_facts(facts, select=["NUMA003"]).result("NUMA003").findings[0].fixes[0]
    assert {c.name: c.value for c in fix.changes}["CUDA_VISIBLE_DEVICES"] == "2,3"


def test_process_bound_to_the_wrong_node(make_root):
    root = two_socket_host(make_root(), allowed=NODE0)
    facts = probe_with_gpus(root, {"CUDA_VISIBLE_DEVICES": "2,3"})
    report = check_facts(facts, select=["NUMA", "THR"])
    assert report.codes() == ["NUMA002", "THR101"]
    finding = report.result("NUMA002").findings[0]
    assert finding.severity is Severity.ERROR
    assert finding.message == "this process is bound to NUMA node(s) 0 but its GPU(s) 2, 3 sit on node(s) 1"
    assert finding.evidence == {
        "numa.gpu_nodes": {"2": 1, "3": 1},
        "cpu.allowed_cpus": NODE0,
        "numa.process_nodes": [0],
        "numa.node0.cpus": NODE0,
        "numa.node1.cpus": NODE1,
    }
    # The error decides the thread sizes: those of node 1, where the process belongs.
    assert env_fixes(report) == {"TF_NUM_INTRAOP_THREADS": "8", "TF_NUM_INTEROP_THREADS": "1", "OMP_NUM_THREADS": "8"}
    plan = launch_plan(facts)
    assert plan.command_for(None) == numactl(1)
    assert plan.single.cpulist == NODE1


def test_bound_to_the_right_node_is_silent(make_root):
    facts = probe_with_gpus(two_socket_host(make_root(), allowed=NODE1), {"CUDA_VISIBLE_DEVICES": "2,3"})
    assert check_facts(facts, select=["NUMA"]).codes() == []


def test_single_socket_workstation_with_unknown_gpu_node(make_root):
    root = make_root().cpus(sockets=1, cores_per_socket=8, threads_per_core=2).numa(["0-15"])
    root.pci_gpu("0000:01:00.0", -1, "0-15").tool("taskset")
    facts = probe_with_gpus(root, {}, bus_ids=("0000:01:00.0",))
    report = check_facts(facts, select=["NUMA"])
    assert report.codes() == ["NUMA004"]
    finding = report.result("NUMA004").findings[0]
    assert finding.severity is Severity.INFO
    assert finding.message == ("GPU 0 (0000:01:00.0): numa_node is -1 (the firmware does not report the GPU's "
                               "node); harmless on this single-node host")
    assert finding.evidence == {"numa.pci_gpus.numa_node": {"0000:01:00.0": -1}, "numa.nodes": 1}
    assert finding.fixes == ()
    assert report.worst() is Severity.INFO
    plan = launch_plan(facts)
    # numactl is absent and its memory binding unknown: taskset, to the only node.
    assert plan.methods == ("taskset", "omp")
    assert plan.command_for(None) == ["taskset", "-c", "0-15"]
    assert plan.single.threads == {"TF_NUM_INTRAOP_THREADS": "8", "TF_NUM_INTEROP_THREADS": "1",
                                   "OMP_NUM_THREADS": "8"}


def test_unknown_gpu_node_on_two_sockets_is_a_warning_with_admin_steps(make_root):
    root = two_socket_host(make_root())
    root.pci_gpu("0000:88:00.0", -1, "0-31")  # firmware says nothing, local_cpulist is every CPU
    facts = probe_with_gpus(root, {"CUDA_VISIBLE_DEVICES": "2"})
    report = check_facts(facts, select=["NUMA"])
    assert report.codes() == ["NUMA004"]  # GPU 2's node is unknown: nothing to bind it to
    finding = report.result("NUMA004").findings[0]
    assert finding.severity is Severity.WARNING
    (admin,) = finding.fixes
    assert admin.steps[0] == "echo NODE | sudo tee /sys/bus/pci/devices/0000:88:00.0/numa_node"
    assert "stop-gap as root (lost at reboot, taints the kernel)" in admin.text
    assert launch_plan(facts).command_for(None) == []


def test_unknown_gpu_node_inferred_from_local_cpulist(make_root):
    root = two_socket_host(make_root())
    root.pci_gpu("0000:88:00.0", -1, NODE1)
    facts = probe_with_gpus(root, {"CUDA_VISIBLE_DEVICES": "2"})
    report = check_facts(facts, select=["NUMA"])
    assert report.codes() == ["NUMA001", "NUMA004"]
    assert report.result("NUMA004").findings[0].message.endswith("inferred from local_cpulist: GPU 2 on node 1")
    assert launch_plan(facts).command_for(None) == numactl(1)


def test_container_refusing_memory_binding_falls_back_to_taskset(make_root):
    root = two_socket_host(make_root(), membind="refused: set_mempolicy: Operation not permitted")
    facts = probe_with_gpus(root, {"CUDA_VISIBLE_DEVICES": "0"})
    assert facts.get("numa.membind") == {"permitted": False, "error": "set_mempolicy: Operation not permitted"}
    report = check_facts(facts, select=["NUMA"])
    assert report.codes() == ["NUMA001"]
    by_hand = report.result("NUMA001").findings[0].fixes[1].steps[-1]
    assert by_hand == "taskset -c 0-7,16-23 python train.py   # or by hand"
    plan = launch_plan(facts)
    assert plan.methods == ("taskset", "omp")
    assert plan.membind_error == "set_mempolicy: Operation not permitted"
    assert plan.command_for(None) == ["taskset", "-c", NODE0]
    assert [plan.command_for(r) for r in range(4)] == [["taskset", "-c", NODE0]] * 4


def test_slurm_step_with_four_local_ranks_bound_cyclically(make_root):
    # Slurm's default cyclic distribution binds ranks 0,2 to socket 0 and 1,3 to socket 1; GPUs 0,1 are
    # on node 0 and 2,3 on node 1, so ranks 1 and 2 drive a GPU on the other socket.
    codes, messages = {}, {}
    for rank, allowed in enumerate((NODE0, NODE1, NODE0, NODE1)):
        root = two_socket_host(make_root(f"rank{rank}"), allowed=allowed)
        facts = probe_with_gpus(root, slurm_env(rank))
        report = check_facts(facts, select=["NUMA"])
        codes[rank] = report.codes()
        if "NUMA102" in codes[rank]:
            finding = report.result("NUMA102").findings[0]
            messages[rank] = finding.message
            assert finding.severity is Severity.ERROR
            assert finding.evidence["env.SLURM_LOCALID"] == rank
            assert finding.evidence["env.SLURM_NTASKS_PER_NODE"] == 4
            assert finding.evidence["env.SLURM_CPU_BIND"] == "quiet,sockets"
            assert finding.evidence["numa.gpu_nodes"] == {str(rank): rank // 2}
            assert finding.fixes[1].steps[1].startswith("srun --cpu-bind=none ./run.sh python train.py")
        plan = launch_plan(facts)
        assert [plan.command_for(r) for r in range(4)] == [numactl(0), numactl(0), numactl(1), numactl(1)]
        assert [plan.slot_for(r).threads["OMP_NUM_THREADS"] for r in range(4)] == ["4"] * 4
    assert codes == {0: [], 1: ["NUMA102"], 2: ["NUMA102"], 3: []}
    assert messages == {1: "local rank 1 is bound to NUMA node(s) 1 but its GPU 1 sits on node 0",
                        2: "local rank 2 is bound to NUMA node(s) 0 but its GPU 2 sits on node 1"}


def test_slurm_step_unbound_ranks(make_root):
    for rank in range(4):
        root = two_socket_host(make_root(f"rank{rank}"))
        facts = probe_with_gpus(root, slurm_env(rank, SLURM_CPU_BIND="quiet,none"))
        report = check_facts(facts, select=["NUMA"])
        assert report.codes() == ["NUMA001"]
        finding = report.result("NUMA001").findings[0]
        assert finding.message.startswith(f"local rank {rank} may run on NUMA nodes 0, 1")
        # The rank's share of its node: 8 cores, 2 ranks.
        assert {c.name: c.value for c in finding.fixes[0].changes}["OMP_NUM_THREADS"] == "4"


def test_ranks_sharing_a_node_with_threads_for_the_whole_node(make_root):
    root = two_socket_host(make_root(), allowed=NODE0)
    facts = probe_with_gpus(root, slurm_env(0, OMP_NUM_THREADS="8", TF_NUM_INTRAOP_THREADS="8"))
    report = check_facts(facts, select=["NUMA"])
    assert report.codes() == ["NUMA101"]
    finding = report.result("NUMA101").findings[0]
    assert finding.message == ("OMP_NUM_THREADS=8, TF_NUM_INTRAOP_THREADS=8 per rank, but 2 local ranks share "
                               "node 0 (16 CPUs): each rank's share is 4 thread(s)")
    assert finding.evidence["numa.node_share"] == 4
    assert env_fixes(report) == {"OMP_NUM_THREADS": "4", "TF_NUM_INTRAOP_THREADS": "4"}
    # Within the share: silent.
    facts = probe_with_gpus(root, slurm_env(0, OMP_NUM_THREADS="4"))
    assert check_facts(facts, select=["NUMA101"]).codes() == []


def test_rank_layout_variables_in_order():
    from tfdoctor.testing import facts_from

    layout = rank_layout(facts_from({}, env={"PMI_RANK": "9", "OMPI_COMM_WORLD_LOCAL_RANK": "1",
                                              "OMPI_COMM_WORLD_LOCAL_SIZE": "2"}))
    assert (layout.local_rank, layout.rank_variable) == (1, "OMPI_COMM_WORLD_LOCAL_RANK")
    assert (layout.local_size, layout.size_variable) == (2, "OMPI_COMM_WORLD_LOCAL_SIZE")
    layout = rank_layout(facts_from({}, env={"SLURM_STEP_TASKS_PER_NODE": "4(x2)", "SLURM_LOCALID": "3"}))
    assert (layout.local_rank, layout.local_size) == (3, 4)


def test_single_node_host_without_gpus_is_silent(make_root):
    root = make_root().cpus(sockets=1, cores_per_socket=2).numa(["0-1"])
    facts = probe_with_gpus(root, {}, bus_ids=())
    assert check_facts(facts, select=["NUMA"]).codes() == []


def test_unknown_numa_facts_mean_not_checked(make_root):
    root = make_root().cpus(sockets=2, cores_per_socket=2)  # no /sys/devices/system/node
    facts = probe_with_gpus(root, {}, bus_ids=GPU_BUS_IDS[:1])
    report = check_facts(facts, select=["NUMA001"])
    assert report.results[0].status.value == "not-checked"
    assert "no NUMA information" in report.results[0].reason


def test_slurm_ranks_each_seeing_one_gpu(make_root):
    # --gpus-per-task=1: rank r sees only GPU r; the launcher still places every rank by the step's GPUs.
    codes = {}
    for rank, allowed in enumerate((NODE0, NODE1, NODE0, NODE1)):
        root = two_socket_host(make_root(f"rank{rank}"), allowed=allowed)
        facts = probe_with_gpus(root, slurm_env(rank, CUDA_VISIBLE_DEVICES=str(rank)))
        codes[rank] = check_facts(facts, select=["NUMA"]).codes()
        plan = launch_plan(facts)
        assert [plan.command_for(r) for r in range(4)] == [numactl(0), numactl(0), numactl(1), numactl(1)]
        assert plan.slot_for(rank).gpus == (rank,)
        assert plan.slot_for(rank).threads["OMP_NUM_THREADS"] == "4"
        assert plan.single.node == rank // 2  # started without a rank: the node of the one GPU it sees
    assert codes == {0: [], 1: ["NUMA102"], 2: ["NUMA102"], 3: []}


def test_budget_of_a_bound_node_stays_within_cgroup_limits(make_root):
    from conftest import probe_root

    from tfdoctor.derive.cpu_budget import cpu_budget

    root = two_socket_host(make_root())
    facts = probe_root(root, {})
    node1 = list(range(8, 16)) + list(range(24, 32))
    budget = cpu_budget(facts, bound_to=node1, bound_label="bound to node 1")
    assert (budget.cpus, budget.physical_cores, budget.sockets, budget.source) == (16, 8, 1, "bound to node 1")
    assert cpu_budget(facts).cpus == 32  # without bound_to: the process's own affinity, as before
    root.cgroup_v2(cpu_max="400000 100000")
    budget = cpu_budget(probe_root(root, {}), bound_to=node1, bound_label="bound to node 1")
    assert (budget.cpus, budget.source) == (4, "cgroup quota 400000/100000")


def test_rank_variables_are_collected():
    from tfdoctor.facts.probes.environment import is_relevant

    for name in ("LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", "PMI_RANK", "MPI_LOCALRANKID",
                 "MPI_LOCALNRANKS", "LOCAL_WORLD_SIZE", "SLURM_CPU_BIND", "SLURM_GPUS_ON_NODE", "SLURM_STEP_GPUS"):
        assert is_relevant(name), name


def test_per_task_allocation_is_not_split_again(make_root):
    root = two_socket_host(make_root(), allowed=NODE0)
    facts = probe_with_gpus(root, slurm_env(0, SLURM_CPUS_PER_TASK="2"))
    # Node 0 has 8 cores for 2 ranks (4 each), but Slurm gave this task 2 CPUs: 2 threads.
    assert launch_plan(facts).slot_for(0).threads["OMP_NUM_THREADS"] == "2"


def test_batch_script_that_knows_the_task_count_is_not_a_rank(make_root):
    root = two_socket_host(make_root(), allowed=NODE0)
    env = {"SLURM_TASKS_PER_NODE": "4", "SLURM_JOB_ID": "7", "CUDA_VISIBLE_DEVICES": "2,3"}
    facts = probe_with_gpus(root, env)
    report = check_facts(facts, select=["NUMA"])
    assert report.codes() == ["NUMA002"]
    assert report.result("NUMA002").findings[0].message.startswith("this process is bound")
    # Its launcher sizes for the 4 tasks the step will start, all on node 1 (GPUs 2, 3): 2 threads each.
    plan = launch_plan(facts)
    assert [plan.command_for(r) for r in range(4)] == [numactl(1)] * 4
    assert [plan.slot_for(r).threads["OMP_NUM_THREADS"] for r in range(4)] == ["2"] * 4


# -- the recorded fixtures (tests/snapshots/checks/numa*.json, from tests/support/numa_hosts.py) -------------

@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda f: f.name)
def test_recorded_fixture_fires_exactly_its_numa_codes(fixture):
    facts = Facts.load(CHECK_SNAPSHOTS / f"{fixture.name}.json")
    assert check_facts(facts, select=["NUMA"]).codes() == list(fixture.expect)


def test_numa_fixtures_are_what_the_probes_write_today(tmp_path):
    for fixture in FIXTURES:
        fresh = json.loads(record(fixture, tmp_path / fixture.name).dumps())
        recorded = json.loads((CHECK_SNAPSHOTS / f"{fixture.name}.json").read_text())
        assert fresh["sections"] == recorded["sections"], (
            f"{fixture.name}: the probes now write other facts: run python tools/regenerate.py")
