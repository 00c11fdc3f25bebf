"""tfdoctor compare: the odd nodes out of a fleet's facts files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tfdoctor.cli import main
from tfdoctor.facts import Facts, Unknown
from tfdoctor.fleet.compare import ABSENT, compare, compare_flat, load_nodes
from tfdoctor.fleet.flatten import flatten
from tfdoctor.fleet.hostlist import compress
from tfdoctor.testing import facts_from
from tfdoctor.testing.fleet import node_facts, write_fleet

ODD = {"node03": {"driver": "535.104.05"}, "node11": {"gpus": 3}}


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(args)
    out, err = capsys.readouterr()
    return int(exc.value.code), out, err


@pytest.fixture
def fleet16(tmp_path: Path) -> list[Path]:
    return write_fleet(tmp_path / "facts", 16, ODD)


def test_sixteen_nodes_two_odd_ones_are_named_with_their_differing_facts(fleet16: list[Path]) -> None:
    comparison = compare(*load_nodes(fleet16))
    odd = comparison.odd_nodes()
    assert sorted(odd) == ["node03", "node11"]
    assert odd["node03"] == {
        "host.nvidia_driver": "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05",
        "nvml.driver_version": "535.104.05",
    }
    assert odd["node11"]["nvml.devices#count"] == 3
    assert odd["node11"]["nvml.devices.3.name"] is ABSENT
    assert {"nvml.devices.3.pci_bus_id", "nvml.devices.3.retired_pages.pending", "nvml.devices.3.ecc.enabled",
            "nvml.devices.3.mig_devices#count", "numa.pci_gpus.3.numa_node"} < set(odd["node11"])
    # Everything else it lacks is about that fourth GPU.
    assert all(key == "nvml.devices#count" or key.startswith(("nvml.devices.3.", "numa.pci_gpus.3."))
               for key in odd["node11"])
    assert all(value is ABSENT for key, value in odd["node11"].items() if key != "nvml.devices#count")
    driver = next(d for d in comparison.differences if d.fact == "nvml.driver_version")
    assert driver.majority == "550.54.15"
    assert driver.holders[1] == ("535.104.05", ("node03",))
    assert len(driver.holders[0][1]) == 15


def test_json_output_names_the_odd_nodes_and_exit_code_is_1(fleet16: list[Path], capsys) -> None:
    code, out, _ = run_cli(["compare", "--format", "json", *map(str, fleet16)], capsys)
    data = json.loads(out)
    assert code == 1
    assert sorted(data["odd_nodes"]) == ["node03", "node11"]
    assert data["odd_nodes"]["node03"]["nvml.driver_version"] == {"value": "535.104.05"}
    assert data["odd_nodes"]["node11"]["nvml.devices.3.name"] == {"absent": True}
    count = next(d for d in data["differences"] if d["fact"] == "nvml.devices#count")
    assert count == {"fact": "nvml.devices#count", "majority": {"value": 4}, "odd_nodes": ["node11"],
                     "values": [{"value": 4, "nodes": [f"node{i:02d}" for i in range(1, 17) if i != 11]},
                                {"value": 3, "nodes": ["node11"]}]}
    assert len(data["nodes"]) == 16 and data["unreadable"] == []


def test_table_output(fleet16: list[Path], capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "120")  # the table takes the terminal's width (80 when none)
    code, out, _ = run_cli(["compare", *map(str, fleet16)], capsys)
    assert code == 1
    assert "Facts that differ across 16 node(s)" in out
    assert "535.104.05 (node03)" in out
    assert "Nodes off the majority (2/16):" in out
    assert "  node11: " in out and "nvml.devices#count=3" in out


def test_identical_nodes_agree_exit_0(tmp_path: Path, capsys) -> None:
    paths = write_fleet(tmp_path, 4)
    code, out, _ = run_cli(["compare", *map(str, paths)], capsys)
    assert (code, out) == (0, "All 4 node(s) agree on every compared fact.\n")


def test_ranks_hostnames_uuids_and_memory_in_use_are_not_compared(tmp_path: Path) -> None:
    # Every node differs in SLURM_NODEID, HOSTNAME, GPU UUIDs and memory_used_mib: none is a difference.
    comparison = compare(*load_nodes(write_fleet(tmp_path, 3)))
    assert comparison.differences == []


def test_bad_files_are_reported_per_file_and_the_rest_compared(tmp_path: Path, capsys) -> None:
    good = write_fleet(tmp_path, 3, {"node02": {"env": {"OMP_NUM_THREADS": "4"}}})
    (tmp_path / "broken.json").write_text("{not json")
    (tmp_path / "future.json").write_text(json.dumps({"schema_version": 99, "sections": {}}))
    (tmp_path / "list.json").write_text("[]")
    files = [*map(str, good), str(tmp_path / "broken.json"), str(tmp_path / "future.json"),
             str(tmp_path / "list.json"), str(tmp_path / "missing.json")]
    code, out, _ = run_cli(["compare", "--format", "json", *files], capsys)
    data = json.loads(out)
    assert code == 1
    assert [u["file"] for u in data["unreadable"]] == files[3:]
    errors = [u["error"] for u in data["unreadable"]]
    assert "is not JSON" in errors[0]
    assert "schema version 99 is not supported" in errors[1]
    assert errors[2] == "a facts file holds a JSON object at the top"
    assert errors[3].startswith("cannot read facts file")
    assert data["odd_nodes"] == {"node02": {"env.variables.OMP_NUM_THREADS": {"value": "4"}}}


def test_no_readable_file_is_a_usage_error(tmp_path: Path, capsys) -> None:
    (tmp_path / "a.json").write_text("nope")
    code, _, err = run_cli(["compare", str(tmp_path / "a.json")], capsys)
    assert code == 2
    assert f"tfdoctor: {tmp_path / 'a.json'}: facts file" in err
    code, _, err = run_cli(["compare"], capsys)
    assert code == 2 and "compare needs facts files" in err


def test_check_flag_adds_one_summary_of_findings(tmp_path: Path, capsys) -> None:
    paths = write_fleet(tmp_path, 4, {"node02": {"env": {"OMP_NUM_THREADS": "abc"}},
                                      "node04": {"env": {"OMP_NUM_THREADS": "abc"}}})
    code, out, _ = run_cli(["compare", "--check", "--format", "json", *map(str, paths)], capsys)
    data = json.loads(out)
    assert code == 1
    thr001 = next(f for f in data["checks"]["findings"] if f["code"] == "THR001")
    assert thr001["nodes"] == ["node02", "node04"] and thr001["severity"] == "error"
    code, out, _ = run_cli(["compare", "--check", *map(str, paths)], capsys)
    assert "Check findings across 4 node(s)" in out
    assert "node[02,04] (2)" in out


def test_check_flag_on_a_healthy_fleet(tmp_path: Path, capsys) -> None:
    code, out, _ = run_cli(["compare", "--check", *map(str, write_fleet(tmp_path, 2))], capsys)
    assert code == 0
    assert out.splitlines()[-1] == "Checks: no finding on any of 2 node(s)."


def test_sections_may_be_absent_or_unknown() -> None:
    # A node whose NVML probe failed, and a node from a tfdoctor that collected no "numa" section.
    healthy = Facts.from_json(node_facts("node01"))
    no_nvml = node_facts("node02")
    no_nvml["sections"]["nvml"] = {"$unknown": "NVML: driver not loaded"}
    no_numa = node_facts("node03")
    del no_numa["sections"]["numa"]
    flat = {"node01": flatten(healthy), "node02": flatten(Facts.from_json(no_nvml)),
            "node03": flatten(Facts.from_json(no_numa))}
    assert flat["node02"]["nvml"] == Unknown("NVML: driver not loaded")
    assert "nvml.driver_version" not in flat["node02"]
    assert not any(key.startswith("numa.") for key in flat["node03"])
    differences = {d.fact: d for d in compare_flat(flat)}
    assert differences["nvml"].holders == ((ABSENT, ("node01", "node03")),
                                           (Unknown("NVML: driver not loaded"), ("node02",)))
    assert differences["numa.nodes#count"].odd_nodes == ("node03",)


def test_cpu_flags_differ_flag_by_flag() -> None:
    flat = {
        "a": flatten(facts_from({"cpu": {"cpuinfo": {"flags": ["avx", "avx2", "avx512f"]}}})),
        "b": flatten(facts_from({"cpu": {"cpuinfo": {"flags": ["avx", "avx2", "avx512f"]}}})),
        "c": flatten(facts_from({"cpu": {"cpuinfo": {"flags": ["avx", "avx2"]}}})),
    }
    [difference] = compare_flat(flat)
    assert difference.fact == "cpu.cpuinfo.flags[avx512f]"
    assert difference.odd_nodes == ("c",)


def test_a_tie_has_no_majority() -> None:
    flat = {"a": {"x": 1}, "b": {"x": 2}}
    [difference] = compare_flat(flat)
    assert (difference.has_majority, difference.odd_nodes) == (False, ())


def test_repeated_hostnames_fall_back_to_file_names(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / f"{name}.json").write_text(json.dumps(node_facts("same")))
    nodes, _ = load_nodes([tmp_path / "a.json", tmp_path / "b.json"])
    assert [n.name for n in nodes] == [str(tmp_path / "a.json"), str(tmp_path / "b.json")]


@pytest.mark.parametrize(("names", "expected"), [
    (["node01", "node02", "node03", "node07"], "node[01-03,07]"),
    (["gpu9", "gpu10", "gpu11"], "gpu[9-11]"),
    (["login", "node5"], "node5,login"),
    (["node09", "node10"], "node[09-10]"),
])
def test_node_lists_are_written_like_slurm_hostlists(names: list[str], expected: str) -> None:
    assert compress(names) == expected


def test_gpu_health_and_cuda_libraries_are_compared(tmp_path: Path) -> None:
    sick = node_facts("node02")
    sick["sections"]["nvml"]["devices"][1]["remapped_rows"]["pending"] = True
    other_cudnn = node_facts("node03")
    cudnn = other_cudnn["sections"]["cuda_libs"]["libraries"]["cudnn"]
    cudnn["resolved"]["libcudnn.so.8"] = {"path": "/usr/lib/x86_64-linux-gnu/libcudnn.so.8", "via": "ld.so.cache"}
    cudnn["files"].append({"name": "libcudnn.so.8.6.0", "dir": "/usr/lib/x86_64-linux-gnu", "file_version": "8.6.0",
                           "wheel_version": None, "origin": "ld.so.cache", "broken": False, "target": None})
    for name, data in (("node01", node_facts("node01")), ("node02", sick), ("node03", other_cudnn),
                       ("node04", node_facts("node04"))):
        (tmp_path / f"{name}.json").write_text(json.dumps(data))
    odd = compare(*load_nodes(sorted(tmp_path.glob("*.json")))).odd_nodes()
    assert odd == {
        "node02": {"nvml.devices.1.remapped_rows.pending": True},
        "node03": {
            "cuda_libs.libraries.cudnn.files[libcudnn.so.8.6.0].broken": False,
            "cuda_libs.libraries.cudnn.files[libcudnn.so.8.6.0].dir": "/usr/lib/x86_64-linux-gnu",
            "cuda_libs.libraries.cudnn.files[libcudnn.so.8.6.0].file_version": "8.6.0",
            "cuda_libs.libraries.cudnn.files[libcudnn.so.8.6.0].origin": "ld.so.cache",
            "cuda_libs.libraries.cudnn.files[libcudnn.so.8.6.0].target": None,
            "cuda_libs.libraries.cudnn.files[libcudnn.so.8.6.0].wheel_version": None,
            "cuda_libs.libraries.cudnn.resolved.libcudnn.so.8.path": "/usr/lib/x86_64-linux-gnu/libcudnn.so.8",
            "cuda_libs.libraries.cudnn.resolved.libcudnn.so.8.via": "ld.so.cache",
        },
    }


def test_unknowns_survive_loading_from_files(tmp_path: Path) -> None:
    data = node_facts("node01")
    data["sections"]["nvml"] = {"$unknown": "NVML: driver not loaded"}
    data["sections"]["cpu"]["cpuinfo"]["flags"] = {"$unknown": "no /proc/cpuinfo"}
    (tmp_path / "node01.json").write_text(json.dumps(data))
    [node], _ = load_nodes([tmp_path / "node01.json"])
    assert node.facts.sections["nvml"] == Unknown("NVML: driver not loaded")
    assert node.facts.peek("cpu.cpuinfo.flags") == Unknown("no /proc/cpuinfo")
    assert flatten(node.facts)["cpu.cpuinfo.flags"] == Unknown("no /proc/cpuinfo")


def _collect_node(tmp_path: Path, name: str, folders: list[str], ld_library_path: str) -> Path:
    """One node's facts as `tfdoctor collect --root` writes them, with these folders in its tree."""
    import os
    import subprocess
    import sys

    from tfdoctor.testing import FakeRoot

    root = FakeRoot(tmp_path / "roots" / name).cpus()
    for folder in folders:
        root.write(f"{folder}/libexample.so.1", "")
    out = tmp_path / "facts" / f"{name}.json"
    out.parent.mkdir(exist_ok=True)
    code = f"from tfdoctor.cli import main; main({['collect', '--root', str(root.path), '-o', str(out)]!r})"
    env = {"PATH": os.environ["PATH"], "SLURMD_NODENAME": name, "LD_LIBRARY_PATH": ld_library_path}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    return out


def test_a_library_folder_missing_on_one_node_is_named_though_the_variable_is_the_same(tmp_path: Path,
                                                                                        capsys) -> None:
    """Issue 37: LD_LIBRARY_PATH=/opt/site/lib:/opt/mkl/lib on three nodes, /opt/mkl/lib absent on node3.
    The variable's string is identical everywhere; the folder's state is what differs."""
    path = "/opt/site/lib:/opt/mkl/lib:relative/lib"
    files = [_collect_node(tmp_path, "node1", ["/opt/site/lib", "/opt/mkl/lib"], path),
             _collect_node(tmp_path, "node2", ["/opt/site/lib", "/opt/mkl/lib"], path),
             _collect_node(tmp_path, "node3", ["/opt/site/lib"], path)]
    recorded = json.loads(files[2].read_text())["sections"]["cuda_libs"]["ld_library_path_dirs"]
    assert recorded == [{"dir": "/opt/site/lib", "state": "directory"}, {"dir": "/opt/mkl/lib", "state": "missing"},
                        {"dir": "relative/lib", "state": "relative"}]
    odd = compare(*load_nodes(files)).odd_nodes()  # a fake root's host is "fake-root": named by file
    assert odd == {str(files[2]): {"cuda_libs.ld_library_path_dirs[/opt/mkl/lib].state": "missing"}}
    code, out, _ = run_cli(["compare", "--format", "json", *map(str, files)], capsys)
    assert code == 1
    assert "node3.json" in json.dumps(json.loads(out))
