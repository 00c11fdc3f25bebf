"""DIST: TF_CONFIG, NCCL variables, /dev/shm, IOMMU and the all-reduce estimate."""

from __future__ import annotations

import json

import pytest
from conftest import check_facts
from support.framework_facts import A100, T4, V100, gpu_devices, make_facts

from tfdoctor.derive.allreduce import parse_param_count
from tfdoctor.derive.tf_config import host_is_local, parse_tf_config, split_address
from tfdoctor.model import AdminFix, Applicability, EnvFix, Status, set_env, unset_env

CLUSTER = {"chief": ["node1:2222"], "worker": ["node2:2222", "node3:2222"]}


def tf_config(cluster=None, task=None, **extra) -> str:
    data = {"cluster": CLUSTER if cluster is None else cluster,
            "task": {"type": "chief", "index": 0} if task is None else task, **extra}
    return json.dumps(data)


def dist(env, **kwargs):
    # DIST109's info note fires on every valid multi-task TF_CONFIG; its own tests are in
    # test_checks_only_a_run_can_tell.py, so these tests look at the other DIST checks.
    return check_facts(make_facts(env=env, **kwargs), select=["DIST"], ignore=["DIST109"])


def only(report):
    findings = report.findings()
    assert len(findings) == 1, [(f.code, f.message) for f in findings]
    return findings[0]


# -- TF_CONFIG -----------------------------------------------------------------------------------

def test_valid_tf_config_on_its_host_is_silent():
    assert dist({"TF_CONFIG": tf_config()}).codes() == []


def test_unset_or_empty_tf_config_is_silent():
    assert dist({}).codes() == []
    assert dist({"TF_CONFIG": "  "}).codes() == []


@pytest.mark.parametrize(("raw", "message"), [
    ("{cluster: 1", "TF_CONFIG is not JSON: "),
    ("[1, 2]", "TF_CONFIG holds a JSON list, not an object"),
    ('{"task": {"type": "worker", "index": 0}}', 'TF_CONFIG has no "cluster"'),
    ('{"cluster": ["a:1"], "task": {"type": "worker", "index": 0}}', 'TF_CONFIG has a "cluster" that is a list'),
    ('{"cluster": {"worker": "node1:2222"}, "task": {"type": "worker", "index": 0}}',
     "TF_CONFIG cluster job 'worker' is not a list of addresses"),
    ('{"cluster": {"worker": ["node1"]}, "task": {"type": "worker", "index": 0}}',
     "TF_CONFIG cluster worker[0] 'node1' has no valid port"),
    ('{"cluster": {"worker": [2222]}, "task": {"type": "worker", "index": 0}}',
     'TF_CONFIG cluster worker[0] is int 2222, not a "host:port" string'),
    ('{"cluster": {"worker": ["node1:2222"]}}', 'TF_CONFIG has no "task"'),
    ('{"cluster": {"worker": ["node1:2222"]}, "task": "worker"}', 'TF_CONFIG "task" is a str, not an object'),
    ('{"cluster": {"worker": ["node1:2222"]}, "task": {"type": "worker", "index": "0"}}',
     "TF_CONFIG task index '0' is not a whole number"),
    ('{"cluster": {"worker": ["node1:2222"]}, "task": {"type": 3, "index": 0}}',
     "TF_CONFIG task type 3 is not a job name"),
])
def test_malformed_tf_config_is_one_clear_finding(raw, message):
    report = dist({"TF_CONFIG": raw})
    malformed = [f for f in report.findings() if f.code == "DIST001"]
    assert len(malformed) == 1 and malformed[0].message.startswith(message), malformed
    assert report.codes() == ["DIST001"]
    assert not report.crashed()


def test_task_type_missing_from_cluster():
    finding = only(dist({"TF_CONFIG": tf_config(task={"type": "ps", "index": 0})}))
    assert finding.code == "DIST002"
    assert finding.evidence == {"TF_CONFIG.task.type": "ps", "TF_CONFIG.cluster.jobs": ["chief", "worker"]}


def test_task_index_out_of_range():
    finding = only(dist({"TF_CONFIG": tf_config(task={"type": "worker", "index": 2})}))
    assert finding.code == "DIST002"
    assert finding.message == ("TF_CONFIG task worker[2] is out of range: the cluster lists 2 worker address(es)")
    assert finding.evidence == {"TF_CONFIG.task.index": 2, "TF_CONFIG.cluster.worker.count": 2}


def test_side_car_evaluator_outside_cluster_is_fine():
    assert dist({"TF_CONFIG": tf_config(task={"type": "evaluator", "index": 0})}).codes() == []


def test_duplicate_addresses():
    cluster = {"chief": ["node1:2222"], "worker": ["NODE1:2222", "node2:2222"]}
    finding = only(dist({"TF_CONFIG": tf_config(cluster=cluster)}))
    assert finding.code == "DIST003"
    assert finding.evidence == {"TF_CONFIG.address": "NODE1:2222", "TF_CONFIG.tasks": ["chief[0]", "worker[0]"]}


def test_cluster_shapes():
    cluster = {"chief": ["node1:2222", "node9:2222"], "workers": ["node2:2222"]}
    report = dist({"TF_CONFIG": tf_config(cluster=cluster)})
    assert report.codes() == ["DIST004"]
    messages = [f.message for f in report.findings()]
    assert messages[0].startswith("TF_CONFIG cluster has job(s) TensorFlow's strategies do not use: workers")
    assert messages[1] == "TF_CONFIG cluster has 2 chief tasks; there can be only one"


def test_ps_without_workers_and_chief_with_master():
    cluster = {"chief": ["node1:2222"], "master": ["node4:2222"], "ps": ["node2:2222"]}
    messages = [f.message for f in dist({"TF_CONFIG": tf_config(cluster=cluster)}).findings()]
    assert 'TF_CONFIG cluster has both "chief" and "master" (the old name of chief); keep one' in messages
    assert "TF_CONFIG cluster has parameter servers but no workers" in messages


def test_tf_config_of_another_host():
    finding = only(dist({"TF_CONFIG": tf_config(task={"type": "worker", "index": 1})}))
    assert finding.code == "DIST005"
    assert finding.message == ("this process is worker[1] = node3:2222, but node3 is not this host "
                               "(node1, node1.cluster.local)")
    assert finding.evidence["TF_CONFIG.own_address"] == "node3:2222"


@pytest.mark.parametrize("address", ["node1:2222", "NODE1.cluster.local:2222", "node1.svc.example:2222",
                                     "10.0.0.1:2222", "localhost:2222", "127.0.0.1:5000", "[::1]:2222"])
def test_own_address_forms_that_name_this_host(address):
    cluster = {"worker": [address, "node2:2222"]}
    assert dist({"TF_CONFIG": tf_config(cluster=cluster, task={"type": "worker", "index": 0})}).codes() == []


def test_unknown_network_facts_make_host_check_not_checked():
    facts = make_facts(env={"TF_CONFIG": tf_config()}, network={"$unknown": "probe failed"})
    assert check_facts(facts, select=["DIST005"]).result("DIST005").status is Status.NOT_CHECKED


def test_address_helpers():
    assert split_address("[fd00::2]:2222") == ("fd00::2", "2222")
    assert split_address("host") == ("host", "")
    assert host_is_local("fd00::2", [], ["fd00::2"])
    assert not host_is_local("10.0.0.2", ["node1"], ["10.0.0.1"])
    config, problems = parse_tf_config(tf_config())
    assert problems == [] and config is not None
    assert config.hosts() == ["node1", "node2", "node3"] and config.own_address == "node1:2222"


# -- NCCL ------------------------------------------------------------------------------------

def test_nccl_p2p_disabled_on_multi_gpu():
    finding = only(dist({"NCCL_P2P_DISABLE": "1"}, gpus=gpu_devices(A100, A100)))
    assert finding.code == "DIST101"
    assert finding.fixes == (EnvFix("Unset NCCL_P2P_DISABLE", (unset_env("NCCL_P2P_DISABLE"),),
                                    Applicability.UNSAFE),)
    assert dist({"NCCL_P2P_DISABLE": "1"}, gpus=gpu_devices(A100)).codes() == []


RTX_4090 = ("NVIDIA GeForce RTX 4090", "8.9")
RTX_A6000 = ("NVIDIA RTX A6000", "8.6")


def test_nccl_p2p_disabled_on_boards_without_peer_to_peer_is_silent():
    """GeForce RTX 40 boards offer no peer-to-peer: NCCL already goes through host memory (issue 16)."""
    assert dist({"NCCL_P2P_DISABLE": "1"}, gpus=gpu_devices(RTX_4090, RTX_4090)).codes() == []
    # One board without peer-to-peer leaves no pair that could use it.
    assert dist({"NCCL_P2P_DISABLE": "1"}, gpus=gpu_devices(RTX_4090, RTX_A6000)).codes() == []
    # Two professional Ampere boards can: still reported.
    finding = only(dist({"NCCL_P2P_DISABLE": "1"}, gpus=gpu_devices(RTX_4090, RTX_A6000, RTX_A6000)))
    assert (finding.code, finding.evidence) == ("DIST101", {"env.NCCL_P2P_DISABLE": "1", "gpus.visible": 2})


def test_peer_to_peer_table_rows_name_nvml_prefixes_and_reasons():
    from tfdoctor.knowledge import table

    rows = table("gpu_peer_to_peer").rows
    assert rows and all(r["name_prefix"].startswith("NVIDIA ") and r["why"] and r["boards"] for r in rows)


IB_NETWORK = {"hostname": "node1", "names": ["node1"], "addresses": ["10.0.0.1"],
              "interfaces": {"lo": {"operstate": "unknown", "speed_mbps": None},
                             "ib0": {"operstate": "up", "speed_mbps": None},
                             "eno1": {"operstate": "up", "speed_mbps": 25000}},
              "infiniband": [{"name": "mlx5_0", "active_rate_gbps": 200.0},
                             {"name": "mlx5_1", "active_rate_gbps": None}]}


def test_nccl_ib_disabled_with_active_infiniband():
    finding = only(dist({"NCCL_IB_DISABLE": "1"}, network=IB_NETWORK))
    assert finding.code == "DIST102"
    assert finding.evidence == {"env.NCCL_IB_DISABLE": "1", "network.infiniband": ["mlx5_0 (200 Gb/s)"]}
    assert dist({"NCCL_IB_DISABLE": "1"}).codes() == []  # no InfiniBand on the default host


@pytest.mark.parametrize(("setting", "fires"), [
    ("ib0", True), ("eth", False), ("=eth0", False), ("=eth", True), ("^eth,lo", True), ("^docker", False),
    ("bond0,eth", False),
])
def test_nccl_socket_ifname(setting, fires):
    report = dist({"NCCL_SOCKET_IFNAME": setting})
    assert report.codes() == (["DIST103"] if fires else [])
    if fires:
        finding = report.findings()[0]
        assert finding.evidence == {"env.NCCL_SOCKET_IFNAME": setting, "network.interfaces": ["eth0", "lo"]}
        assert finding.fixes[0].changes == (unset_env("NCCL_SOCKET_IFNAME"),)


def test_nccl_debug_info():
    finding = only(dist({"NCCL_DEBUG": "info"}))
    assert finding.code == "DIST104" and finding.fixes[0].changes == (set_env("NCCL_DEBUG", "WARN"),)
    assert dist({"NCCL_DEBUG": "WARN"}).codes() == []


# -- /dev/shm and IOMMU ------------------------------------------------------------------------

def test_small_shm_in_multi_gpu_container():
    shm = {"mounted": True, "size_bytes": 64 * 1024**2, "source": "/proc/mounts"}
    finding = only(dist({}, gpus=gpu_devices(A100, A100), container=True, shm=shm))
    assert finding.code == "DIST105"
    assert finding.message == "/dev/shm is 64 MiB in a container with 2 GPUs; NCCL needs about 1 GiB"
    assert isinstance(finding.fixes[0], AdminFix) and "--shm-size=1g" in finding.fixes[0].steps[0]


def test_shm_silent_outside_container_single_gpu_or_large():
    small = {"mounted": True, "size_bytes": 64 * 1024**2, "source": "/proc/mounts"}
    assert dist({}, gpus=gpu_devices(A100, A100), container=False, shm=small).codes() == []
    assert dist({}, gpus=gpu_devices(A100), container=True, shm=small).codes() == []
    assert dist({}, gpus=gpu_devices(A100, A100), container=True).codes() == []


def test_missing_shm_in_container():
    finding = only(dist({}, gpus=gpu_devices(T4, T4), container=True,
                        shm={"mounted": False, "size_bytes": None, "source": "/proc/mounts"}))
    assert "not mounted" in finding.message


def test_iommu_translating_on_multi_gpu_host():
    iommu = {"cmdline": {"intel_iommu": "on"}, "units": ["dmar0", "dmar1"], "group_count": 90,
             "group_types": ["DMA-FQ"]}
    finding = only(dist({}, gpus=gpu_devices(V100, V100), iommu=iommu))
    assert finding.code == "DIST106"
    assert "IOMMU units dmar0, dmar1 active (groups DMA-FQ)" in finding.message
    assert finding.evidence["gpus.host"] == 2


def test_iommu_counts_host_gpus_not_visible_ones():
    iommu = {"cmdline": {"amd_iommu": "on"}, "units": [], "group_count": 0, "group_types": []}
    facts_env = {"CUDA_VISIBLE_DEVICES": "0"}
    finding = only(dist(facts_env, gpus=gpu_devices(A100, A100), iommu=iommu))
    assert "kernel command line amd_iommu=on" in finding.message


@pytest.mark.parametrize("iommu", [
    {"cmdline": {"intel_iommu": "on", "iommu": "pt"}, "units": ["dmar0"], "group_count": 9, "group_types": ["DMA"]},
    {"cmdline": {}, "units": ["dmar0"], "group_count": 9, "group_types": ["identity"]},
    {"cmdline": {"intel_iommu": "off"}, "units": [], "group_count": 0, "group_types": []},
    {"cmdline": {}, "units": [], "group_count": 0, "group_types": []},
])
def test_iommu_passthrough_or_off_is_silent(iommu):
    assert dist({}, gpus=gpu_devices(A100, A100), iommu=iommu).codes() == []


def test_iommu_single_gpu_is_silent():
    iommu = {"cmdline": {"intel_iommu": "on"}, "units": ["dmar0"], "group_count": 9, "group_types": ["DMA"]}
    assert dist({}, gpus=gpu_devices(A100), iommu=iommu).codes() == []


# -- all-reduce estimate -----------------------------------------------------------------------

@pytest.mark.parametrize(("text", "count"), [("340000000", 340_000_000), ("340_000_000", 340_000_000),
                                             ("25.6M", 25_600_000), ("1.3B", 1_300_000_000), ("7e9", 7_000_000_000),
                                             ("110k", 110_000), ("resnet50", None), ("0", None), ("-5", None)])
def test_parse_param_count(text, count):
    assert parse_param_count(text) == count


def test_allreduce_over_nvlink():
    gpus = gpu_devices(*[A100] * 8, nvlink_active_links=12)
    finding = only(dist({"TFDOCTOR_PARAMS": "1B"}, gpus=gpus))
    assert finding.code == "DIST107"
    # 2·7/8 · 4 GB over 300 GB/s = 23.3 ms
    assert finding.evidence["allreduce_ms"] == 23.3
    assert finding.evidence["link"] == "NVLink, 300 GB/s per GPU"


def test_allreduce_over_assumed_pcie():
    finding = only(dist({"TFDOCTOR_PARAMS": "25.6M"}, gpus=gpu_devices(T4, T4)))
    # 2·1/2 · 102.4 MB over 15.76 GB/s = 6.5 ms
    assert finding.evidence["allreduce_ms"] == 6.5
    assert finding.evidence["link"] == "PCIe gen3 x16 (assumed), 15.8 GB/s"


def test_allreduce_across_nodes_uses_the_network():
    cluster = {"worker": ["node1:2222", "node2:2222"]}
    env = {"TFDOCTOR_PARAMS": "340M", "TF_CONFIG": tf_config(cluster=cluster, task={"type": "worker", "index": 0})}
    gpus = gpu_devices(*[A100] * 8, nvlink_active_links=12)
    finding = only(dist(env, gpus=gpus))
    # 16 GPUs, 2·15/16 · 1.36 GB over 100 Gb/s (12.5 GB/s) = 204 ms
    assert finding.evidence["allreduce_ms"] == 204.0
    assert finding.evidence["hosts"] == 2 and finding.evidence["hosts.source"] == "TF_CONFIG"
    assert finding.evidence["link"] == "eth0 100 Gb/s"


def test_allreduce_across_slurm_nodes_over_infiniband():
    env = {"TFDOCTOR_PARAMS": "340M", "SLURM_JOB_NUM_NODES": "4"}
    finding = only(dist(env, gpus=gpu_devices(A100, A100, nvlink_active_links=12), network=IB_NETWORK))
    assert finding.evidence["link"] == "InfiniBand 200 Gb/s" and finding.evidence["hosts"] == 4


def test_allreduce_silent_for_parameter_servers():
    cluster = {"chief": ["node1:2222"], "worker": ["node2:2222"], "ps": ["node3:2222"]}
    env = {"TFDOCTOR_PARAMS": "340M", "TF_CONFIG": tf_config(cluster=cluster)}
    assert dist(env, gpus=gpu_devices(A100, A100)).codes() == []


def test_allreduce_silent_without_params_or_single_gpu():
    assert dist({}, gpus=gpu_devices(A100, A100)).codes() == []
    assert dist({"TFDOCTOR_PARAMS": "1B"}, gpus=gpu_devices(A100)).codes() == []
    assert dist({"TFDOCTOR_PARAMS": "1B"}).codes() == []


def test_param_count_invalid():
    finding = only(dist({"TFDOCTOR_PARAMS": "resnet50"}, gpus=gpu_devices(A100, A100)))
    assert finding.code == "DIST108" and finding.evidence == {"env.TFDOCTOR_PARAMS": "resnet50"}


def test_odd_tf_config_values_never_crash():
    values = [None, 0, -1, 1.5, True, "", "x", "a:b", "h:0", "h:70000", [], {}, ["h:1"], {"0": "h:1"}, [None]]
    for cluster in values:
        for index in values:
            raw = json.dumps({"cluster": {"worker": cluster, "ps": ["p:1"]},
                              "task": {"type": "worker", "index": index}})
            report = dist({"TF_CONFIG": raw, "TFDOCTOR_PARAMS": "1M"}, gpus=gpu_devices(T4, T4))
            assert not report.crashed(), (raw, [r.reason for r in report.crashed()])
            valid = cluster == ["h:1"] and index == 0 and not isinstance(index, bool)
            assert valid or {"DIST001", "DIST002"} & set(report.codes()), raw


def test_params_variable_name_is_the_one_the_model_reads():
    import tfdoctor.checks.distribution
    import tfdoctor.derive.allreduce

    assert tfdoctor.checks.distribution.PARAMS_VARIABLE == tfdoctor.derive.allreduce.PARAMS_VARIABLE


def test_tf_config_nested_too_deeply_is_malformed_not_a_crash():
    report = dist({"TF_CONFIG": "[" * 100_000, "TFDOCTOR_PARAMS": "1M"}, gpus=gpu_devices(T4, T4))
    assert not report.crashed(), [r.reason for r in report.crashed()]
    assert "DIST001" in report.codes()


@pytest.mark.parametrize(("fixture", "field", "code", "reason"), [
    ("dist005-tf-config-of-another-host", "addresses", "DIST005", "network.addresses is malformed in the facts (int)"),
    ("dist005-tf-config-of-another-host", "names", "DIST005",
     "network.names is malformed in the facts (a list holding other things than names)"),
    ("dist102-nccl-ib-disabled-with-active-infiniband", "infiniband", "DIST102",
     "network.infiniband is malformed in the facts (int)"),
    ("dist103-nccl-socket-ifname-ib0", "interfaces", "DIST103", "network.interfaces is malformed in the facts (int)"),
])
def test_a_damaged_network_fact_is_not_checked_never_a_crash(fixture, field, code, reason):
    """A facts file edited or damaged by hand: a number, or a list of numbers, where the network probe writes
    a list of names."""
    from support.snapshot_facts import edited_facts

    facts = edited_facts(f"checks/{fixture}.json", {f"network.{field}": [1] if field == "names" else 1})
    result = check_facts(facts, select=[code]).result(code)
    assert (result.status, result.reason) == (Status.NOT_CHECKED, reason)
