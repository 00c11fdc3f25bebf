"""The numa probe and its parsers: sysfs text in, facts out."""

from __future__ import annotations

import pytest
from conftest import probe_root
from support.numa_hosts import NODE0, NODE1, two_socket_host

from tfdoctor.facts import Unknown
from tfdoctor.facts.parse_numa import (
    is_nvidia_gpu,
    normalize_bus_id,
    parse_distance,
    parse_node_meminfo,
    parse_tasks_per_node,
)
from tfdoctor.facts.probes.numa import probe_numa


def test_bus_ids_in_nvml_and_sysfs_forms_normalize_alike():
    assert normalize_bus_id("00000000:3B:00.0") == normalize_bus_id("0000:3b:00.0") == "0000:3b:00.0"
    assert normalize_bus_id("3b:00.1") == "0000:3b:00.1"
    with pytest.raises(ValueError):
        normalize_bus_id("GPU-1234")


def test_sysfs_parsers():
    assert parse_node_meminfo("Node 1 MemTotal:       131072 kB\nNode 1 MemFree: 5 kB\n") == 131072
    with pytest.raises(ValueError):
        parse_node_meminfo("nothing here")
    assert parse_distance("10 21\n") == [10, 21]
    assert is_nvidia_gpu(0x10DE, 0x030200) and is_nvidia_gpu(0x10DE, 0x030000)
    assert not is_nvidia_gpu(0x10DE, 0x040300)  # the GPU's HDMI audio function
    assert not is_nvidia_gpu(0x8086, 0x030000)
    assert [parse_tasks_per_node(t) for t in ("4", "4(x2),3", "")] == [4, 4, None]


def test_probe_reads_nodes_gpus_tools_and_membind(make_root):
    root = two_socket_host(make_root(), membind="refused: set_mempolicy: Operation not permitted")
    root.pci_gpu("0000:1a:00.1", 0, NODE0, pci_class="0x040300")  # audio function of GPU 0: ignored
    facts = probe_numa(root.machine({"PATH": "relative/bin:/usr/local/bin:/usr/bin"}))
    assert facts["nodes"] == [
        {"node": 0, "cpus": list(range(8)) + list(range(16, 24)), "mem_total_kib": 64 * 1024 * 1024,
         "distances": [10, 21]},
        {"node": 1, "cpus": list(range(8, 16)) + list(range(24, 32)), "mem_total_kib": 64 * 1024 * 1024,
         "distances": [21, 10]},
    ]
    assert [(g["bus_id"], g["numa_node"]) for g in facts["pci_gpus"]] == [
        ("0000:1a:00.0", 0), ("0000:3b:00.0", 0), ("0000:88:00.0", 1), ("0000:b1:00.0", 1)]
    assert facts["pci_gpus"][2]["local_cpus"] == list(range(8, 16)) + list(range(24, 32))
    assert facts["tools"] == {"numactl": "/usr/bin/numactl", "taskset": "/usr/bin/taskset"}
    assert facts["membind"] == {"permitted": False, "error": "set_mempolicy: Operation not permitted"}


def test_probe_without_numa_tree_tools_or_membind_record(make_root):
    root = make_root().cpus()
    facts = probe_numa(root.machine({"PATH": "/usr/bin"}))
    assert isinstance(facts["nodes"], Unknown) and "no NUMA information" in facts["nodes"].reason
    assert isinstance(facts["pci_gpus"], Unknown)
    assert facts["tools"] == {"numactl": None, "taskset": None}
    assert facts["membind"] == Unknown("numactl memory binding is tested on the live machine only")


def test_probe_malformed_files_are_unknown_not_crashes(make_root):
    root = make_root().cpus().numa(["0-1"])
    root.write("/sys/devices/system/node/node0/cpulist", "zero-one\n")
    root.write("/sys/devices/system/node/node0/meminfo", "garbage\n")
    root.pci_gpu("0000:01:00.0", 0).write("/sys/bus/pci/devices/0000:01:00.0/numa_node", "x\n")
    facts = probe_numa(root.machine({}))
    node = facts["nodes"][0]
    assert isinstance(node["cpus"], Unknown) and isinstance(node["mem_total_kib"], Unknown)
    assert isinstance(facts["pci_gpus"][0]["numa_node"], Unknown)


def test_cpu_probe_sees_every_node_allowed_in_memory(make_root):
    root = two_socket_host(make_root(), allowed=NODE1)
    facts = probe_root(root, {})
    assert facts.get("cpu.allowed_mems") == [0, 1]
    assert facts.get("cpu.allowed_cpus") == list(range(8, 16)) + list(range(24, 32))


def test_live_probe_answers_without_error():
    from tfdoctor.facts.machine import Machine

    facts = probe_numa(Machine())
    # Whatever this machine is, every value is either read or an Unknown with a reason.
    assert isinstance(facts["nodes"], (list, Unknown))
    assert set(facts["tools"]) == {"numactl", "taskset"}
    membind = facts["membind"]
    assert isinstance(membind, Unknown) or membind["permitted"] in (True, False)


@pytest.mark.parametrize(("body", "expected"), [
    ("exit 0", {"permitted": True}),
    ("echo 'set_mempolicy: Operation not permitted' >&2; exit 1",
     {"permitted": False, "error": "set_mempolicy: Operation not permitted"}),
    ("sleep 5", Unknown("numactl --membind=1 true did not finish in 0.1 s")),
])
def test_live_membind_test_runs_numactl_under_a_timeout(tmp_path, body, expected):
    from tfdoctor.facts.machine import Machine
    from tfdoctor.facts.probes.numa import _membind

    numactl = tmp_path / "numactl"
    # `true` by its absolute path (issue 40): numactl would otherwise look it up in `.` first here.
    numactl.write_text(f"#!/bin/sh\n[ \"$1 $2\" = '--membind=1 /usr/bin/true' ] || exit 3\n{body}\n")
    numactl.chmod(0o755)
    nodes = [{"node": 0, "mem_total_kib": 0}, {"node": 1, "mem_total_kib": 1024}]  # node 0: no memory
    environ = {"PATH": ".:bin::/usr/bin:/bin"}
    assert _membind(Machine(environ=environ, timeout=0.2), str(numactl), nodes) == expected
    assert _membind(Machine(environ={}), str(numactl), nodes[:1]) == Unknown("not tested on a single-node host")
