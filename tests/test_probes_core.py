"""Core probes against fake roots: good trees give exact facts, broken trees give Unknowns, never crashes."""

from __future__ import annotations

import json

import pytest
from conftest import probe_root
from support.command_line import assert_no_traceback, run_cli

from tfdoctor.facts import Unknown
from tfdoctor.facts.parse import format_cpulist, parse_cpu_max, parse_cpuinfo, parse_cpulist
from tfdoctor.testing import HASWELL_FLAGS


@pytest.mark.parametrize(("text", "cpus"), [
    ("0-3,8,10-11\n", [0, 1, 2, 3, 8, 10, 11]), ("", []), ("5", [5]), ("0-6:2", [0, 2, 4, 6]),
])
def test_parse_cpulist(text, cpus):
    assert parse_cpulist(text) == cpus
    assert parse_cpulist(format_cpulist(cpus)) == cpus


@pytest.mark.parametrize("text", ["a-b", "3-1", "1,,x"])
def test_parse_cpulist_rejects(text):
    with pytest.raises(ValueError):
        parse_cpulist(text)


def test_parse_cpu_max():
    assert parse_cpu_max("max 100000\n") is None
    assert parse_cpu_max("150000 100000") == (150000, 100000)
    for bad in ("", "1 2 3", "-5 100000", "x 100000"):
        with pytest.raises(ValueError):
            parse_cpu_max(bad)


def test_parse_cpuinfo_arm_features():
    info = parse_cpuinfo("processor\t: 0\nFeatures\t: fp asimd sve\nCPU implementer\t: 0x41\n\n")
    assert info == {"vendor": "0x41", "model_name": "", "flags": ["asimd", "fp", "sve"], "processors": 1}


def test_terraform_variable_is_not_collected(make_root):
    root = make_root().cpus()
    facts = probe_root(root, env={"TF_CLI_CONFIG_FILE": "/root/.terraformrc", "TF_NUM_INTRAOP_THREADS": "2",
                                  "AWS_SECRET_ACCESS_KEY": "x", "SLURM_CPUS_PER_TASK": "2"})
    assert facts.get("env.variables") == {"TF_NUM_INTRAOP_THREADS": "2", "SLURM_CPUS_PER_TASK": "2"}


def test_healthy_fake_root_facts(make_root):
    root = make_root().cpus(sockets=2, cores_per_socket=2, threads_per_core=2, governor="performance")
    root.write("/proc/sys/kernel/osrelease", "6.1.0-18-amd64\n")  # what uname's release reads
    facts = probe_root(root, env={})
    assert facts.get("host.kernel") == "6.1.0-18-amd64"
    assert facts.get("cpu.online") == list(range(8))
    assert facts.get("cpu.allowed_cpus") == list(range(8))
    assert facts.get("cpu.governors") == {"performance": 8}
    assert facts.get("cpu.topology")[5] == {"cpu": 5, "socket": 0, "core": 1}
    assert facts.get("cpu.cpuinfo.flags") == sorted(HASWELL_FLAGS)  # the probe lists /proc/cpuinfo's flags sorted
    assert facts.get("host.arch") == "x86_64"
    assert facts.get("host.nvidia_driver") is None


def test_empty_root_gives_unknowns_with_reasons(make_root):
    root = make_root()
    (root.path / "proc/self/cgroup").unlink()
    facts = probe_root(root, env={})
    assert facts.peek("cpu.online") == Unknown("/sys/devices/system/cpu/online does not exist")
    assert facts.peek("cpu.cpuinfo") == Unknown("/proc/cpuinfo does not exist")
    assert facts.peek("cgroup") == Unknown("/proc/self/cgroup does not exist")
    assert facts.peek("host.kernel") == Unknown("fake root: kernel release not recorded")  # not ""


def test_garbage_files_give_unknowns(make_root):
    root = make_root().cpus()
    root.write("/proc/cpuinfo", b"\xff\xfe garbage without any colon\n")
    root.write("/sys/devices/system/cpu/online", "zero-one\n")
    root.write("/proc/self/status", "Cpus_allowed_list:\tnonsense\n")
    root.cgroup_v2("lots of cpus please")
    facts = probe_root(root, env={})
    assert facts.peek("cpu.cpuinfo") == Unknown("/proc/cpuinfo not understood: no processor entries")
    assert facts.peek("cpu.online") == Unknown("/sys/devices/system/cpu/online is malformed: 'zero-one'")
    assert facts.peek("cpu.allowed_cpus") == Unknown("Cpus_allowed_list in /proc/self/status is malformed")
    assert isinstance(facts.peek("cgroup.quota"), Unknown)


def test_directories_where_files_belong(make_root):
    root = make_root()
    (root.path / "proc/cpuinfo").mkdir(parents=True)
    (root.path / "sys/devices/system/cpu/online").mkdir(parents=True)
    facts = probe_root(root, env={})
    assert facts.peek("cpu.cpuinfo") == Unknown("/proc/cpuinfo is a directory")


def test_non_numeric_topology(make_root):
    root = make_root().cpus()
    root.write("/sys/devices/system/cpu/cpu1/topology/core_id", "one\n")
    facts = probe_root(root, env={})
    assert facts.peek("cpu.topology") == Unknown("topology of cpu1 is not numeric")


@pytest.mark.parametrize("breakage", ["empty", "garbage", "dirs"])
def test_cli_on_broken_roots_never_tracebacks(make_root, breakage):
    root = make_root()
    if breakage == "garbage":
        for path in ("/proc/cpuinfo", "/sys/devices/system/cpu/online", "/proc/self/status",
                     "/sys/fs/cgroup/cpu.max", "/proc/driver/nvidia/version", "/etc/os-release"):
            root.write(path, b"\x00\xff\xfe\n:::\n")
    elif breakage == "dirs":
        for path in ("proc/cpuinfo", "sys/devices/system/cpu/online", "proc/self/status"):
            (root.path / path).mkdir(parents=True)
    env = {"OMP_NUM_THREADS": "-1", "TF_NUM_INTRAOP_THREADS": "lots", "SLURM_CPUS_PER_TASK": "x"}
    done = run_cli(["check", "--root", str(root.path), "--format", "json"], env=env)
    assert_no_traceback(done)
    assert done.returncode in (0, 1)
    report = json.loads(done.stdout)
    assert report["summary"]["crashed"] == 0
    assert {r["code"]: r["status"] for r in report["results"]}["THR001"] == "failed"
