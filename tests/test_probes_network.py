"""The network, /dev/shm and IOMMU probes on fake machines, their parsers, and a recorded 8-GPU
container replayed through the CLI."""

from __future__ import annotations

import json

from conftest import REPO, check_root, probe_root
from support.command_line import run_cli

from tfdoctor.facts import Unknown
from tfdoctor.facts.parse_platform import (
    parse_fib_trie_local,
    parse_hosts_names,
    parse_ib_rate,
    parse_if_inet6,
    parse_iommu_cmdline,
    parse_mount,
    parse_size,
)

FIB_TRIE = """Main:
  +-- 0.0.0.0/0 3 0 5
     |-- 0.0.0.0
        /0 universe UNICAST
     +-- 10.0.0.0/24 2 0 2
        |-- 10.0.0.0
           /24 link UNICAST
        |-- 10.0.0.7
           /32 host LOCAL
        |-- 10.0.0.255
           /32 link BROADCAST
     +-- 127.0.0.0/8 2 0 2
        |-- 127.0.0.1
           /32 host LOCAL
Local:
     +-- 127.0.0.0/8 2 0 2
        |-- 127.0.0.1
           /32 host LOCAL
"""
IF_INET6 = ("00000000000000000000000000000001 01 80 10 80       lo\n"
            "fd000000000000000000000000000002 04 40 00 82     eth0\n")


def test_parsers():
    assert parse_fib_trie_local(FIB_TRIE) == ["10.0.0.7", "127.0.0.1"]
    assert parse_if_inet6(IF_INET6 + "garbage\n") == ["::1", "fd00::2"]
    hosts = "127.0.0.1 localhost\n10.0.0.7 gpu07.cluster gpu07  # this node\n10.0.0.8 gpu08\n"
    assert parse_hosts_names(hosts, ["10.0.0.7", "127.0.0.1"], "gpu07") == ["gpu07.cluster", "gpu07"]
    assert [parse_size(s) for s in ("65536k", "1g", "1073741824", "50%")] == [64 * 1024**2, 1024**3, 1024**3, None]
    assert parse_mount("shm /dev/shm tmpfs rw,nosuid,size=65536k 0 0\n", "/dev/shm") == {
        "source": "shm", "fstype": "tmpfs", "options": ["rw", "nosuid", "size=65536k"]}
    assert parse_mount("proc /proc proc rw 0 0\n", "/dev/shm") is None
    assert parse_iommu_cmdline("BOOT_IMAGE=/vmlinuz intel_iommu=on iommu=pt quiet -- iommu=off") == {
        "intel_iommu": "on", "iommu": "pt"}
    assert parse_ib_rate("200 Gb/sec (4X HDR)\n") == 200.0 and parse_ib_rate("junk") is None


def gpu_container(make_root):
    root = make_root()
    root.cpus(cores_per_socket=4)
    root.write("/.dockerenv", "")
    root.write("/proc/sys/kernel/hostname", "gpu07\n")
    root.write("/etc/hosts", "127.0.0.1 localhost\n10.0.0.7 gpu07.cluster gpu07\n")
    root.write("/proc/net/fib_trie", FIB_TRIE)
    root.write("/proc/net/if_inet6", IF_INET6)
    for name, state, speed in (("lo", "unknown", None), ("eth0", "up", "25000"), ("docker0", "down", None)):
        root.write(f"/sys/class/net/{name}/operstate", state + "\n")
        if speed:
            root.write(f"/sys/class/net/{name}/speed", speed + "\n")
    root.write("/sys/class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n")
    root.write("/sys/class/infiniband/mlx5_0/ports/1/rate", "100 Gb/sec (4X EDR)\n")
    root.write("/proc/mounts", "overlay / overlay rw 0 0\nshm /dev/shm tmpfs rw,nosuid,nodev,size=65536k 0 0\n")
    root.write("/proc/cmdline", "BOOT_IMAGE=/vmlinuz root=/dev/sda1 intel_iommu=on\n")
    root.write("/sys/class/iommu/dmar0/uevent", "")
    root.write("/sys/kernel/iommu_groups/0/type", "DMA\n")
    root.write("/sys/kernel/iommu_groups/1/type", "DMA\n")
    return root


def test_probes_on_a_fake_container(make_root):
    facts = probe_root(gpu_container(make_root))
    assert facts.get("network.hostname") == "gpu07"
    assert facts.get("network.names") == ["gpu07", "gpu07.cluster"]
    assert facts.get("network.addresses") == ["10.0.0.7", "127.0.0.1", "::1", "fd00::2"]
    assert facts.get("network.interfaces") == {
        "docker0": {"operstate": "down", "speed_mbps": None}, "eth0": {"operstate": "up", "speed_mbps": 25000},
        "lo": {"operstate": "unknown", "speed_mbps": None}}
    assert facts.get("network.infiniband") == [{"name": "mlx5_0", "active_rate_gbps": 100.0}]
    assert facts.get("shm") == {"mounted": True, "size_bytes": 64 * 1024**2, "source": "/proc/mounts"}
    assert facts.get("iommu") == {"cmdline": {"intel_iommu": "on"}, "units": ["dmar0"], "group_count": 2,
                                  "group_types": ["DMA"]}


def test_probes_on_a_bare_root(make_root):
    facts = probe_root(make_root())
    assert isinstance(facts.peek("network.hostname"), Unknown)
    assert isinstance(facts.peek("network.interfaces"), Unknown)
    assert facts.get("network.infiniband") == []
    assert isinstance(facts.peek("shm.size_bytes"), Unknown)
    assert facts.get("iommu.units") == [] and isinstance(facts.peek("iommu.cmdline"), Unknown)


def test_shm_without_size_is_half_of_ram(make_root):
    root = make_root()
    root.write("/proc/mounts", "tmpfs /dev/shm tmpfs rw,nosuid,nodev 0 0\n")
    root.write("/proc/meminfo", "MemTotal:       32768000 kB\nMemFree: 1 kB\n")
    assert probe_root(root).get("shm") == {"mounted": True, "size_bytes": 32768000 * 1024 // 2,
                                           "source": "tmpfs default (half of MemTotal)"}


def test_tf_config_and_nccl_checks_on_a_fake_root(make_root):
    env = {"TF_CONFIG": json.dumps({"cluster": {"worker": ["gpu07.cluster:2222", "gpu08:2222"]},
                                    "task": {"type": "worker", "index": 0}}),
           "NCCL_SOCKET_IFNAME": "ib", "NCCL_IB_DISABLE": "1"}
    report = check_root(gpu_container(make_root), env=env, select=["DIST"])
    assert report.codes() == ["DIST102", "DIST103", "DIST109"]  # DIST109: the start-up note (info)
    env["TF_CONFIG"] = json.dumps({"cluster": {"worker": ["gpu01:2222", "gpu07:2222"]},
                                   "task": {"type": "worker", "index": 0}})
    assert "DIST005" in check_root(gpu_container(make_root), env=env, select=["DIST"]).codes()


SNAPSHOT = REPO / "tests" / "snapshots" / "framework" / "dgx-a100-container.json"




def test_recorded_multi_gpu_container_replays():
    result = run_cli(["check", "--facts", str(SNAPSHOT), "--select", "LAY,MP,XLA1,GPU1,DIST", "--format", "json"])
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    failed = sorted(r["code"] for r in report["results"] if r["status"] == "failed")
    assert failed == ["DIST001", "DIST101", "DIST105", "DIST106", "GPU103", "LAY102", "XLA101"]
    # Checks whose findings are all info say so in their status (report schema 2).
    informed = sorted(r["code"] for r in report["results"] if r["status"] == "info")
    assert informed == ["DIST104", "DIST107", "GPU101", "GPU105", "XLA104"]
    by_code = {r["code"]: r for r in report["results"]}
    # The task index is malformed ("0") but the cluster is not: 2 hosts × 8 GPUs over 100 Gb/s EDR.
    evidence = by_code["DIST107"]["findings"][0]["evidence"]
    assert (evidence["allreduce_ms"], evidence["link"], evidence["hosts"]) == (204.0, "InfiniBand 100 Gb/s", 2)
    assert by_code["DIST105"]["findings"][0]["message"] == (
        "/dev/shm is 64 MiB in a container with 8 GPUs; NCCL needs about 1 GiB")
    assert not [r for r in report["results"] if r["status"] == "crashed"]


def test_framework_checks_are_documented_and_registered():
    from tfdoctor.registry import DOC_SECTIONS, load_registry

    registry = load_registry()
    assert registry.errors == []
    ours = [c for c in registry.checks if c.code.startswith(("LAY", "MP", "XLA1", "GPU1", "DIST"))]
    # Which families, not how many checks: tests/test_checks.py gives each check its fixture and twin.
    assert {c.code.rstrip("0123456789") for c in ours} == {"LAY", "MP", "XLA", "GPU", "DIST"}
    for spec in ours:
        for section in DOC_SECTIONS:
            assert f"{section}:" in spec.doc or f"{section}\n" in spec.doc, (spec.code, section)
    assert {p.section for p in registry.probes} >= {"network", "shm", "iommu"}
