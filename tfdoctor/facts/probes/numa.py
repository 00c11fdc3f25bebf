"""NUMA: the host's nodes (CPUs, memory, distances), the NUMA node of every NVIDIA GPU on the PCI bus,
and whether binding tools exist and may bind memory.

The process's allowed CPUs and memory nodes are the cpu probe's (`cpu.allowed_cpus`, `cpu.allowed_mems`);
sockets and cores are its `cpu.topology`.

Whether numactl may bind memory is a live-only test (`numactl --membind=N true` under the timeout):
containers without CAP_SYS_NICE or with a restrictive seccomp profile refuse set_mempolicy/mbind. Under a
fake root (--root) nothing is executed; the answer is read from the file MEMBIND_FACT_FILE in the tree
("permitted", or "refused: <message>"), and is unknown when that file is absent. It is not tested on a
single-node host either (nothing to choose between). The launcher repeats the test at run time anyway.
"""

from __future__ import annotations

import os
import re

from tfdoctor.facts import Unknown
from tfdoctor.facts.machine import Machine
from tfdoctor.facts.parse import parse_cpulist
from tfdoctor.facts.parse_numa import is_nvidia_gpu, parse_distance, parse_hex, parse_node_meminfo
from tfdoctor.registry import probe

SYS_NODE = "/sys/devices/system/node"
SYS_PCI = "/sys/bus/pci/devices"
MEMBIND_FACT_FILE = "/.tfdoctor/numactl-membind"
TOOLS = ("numactl", "taskset")


def _nodes(machine: Machine) -> list[dict[str, object]] | Unknown:
    entries = machine.listdir(SYS_NODE)
    if isinstance(entries, Unknown):
        return Unknown(f"no NUMA information: {entries.reason}")
    numbers = sorted(int(e[4:]) for e in entries if re.fullmatch(r"node[0-9]+", e))
    if not numbers:
        return Unknown(f"{SYS_NODE} lists no nodes")
    nodes = []
    for number in numbers:
        base = f"{SYS_NODE}/node{number}"
        node: dict[str, object] = {"node": number}
        node["cpus"] = machine.read_parsed(f"{base}/cpulist", parse_cpulist)
        node["mem_total_kib"] = machine.read_parsed(f"{base}/meminfo", parse_node_meminfo, "has no MemTotal")
        node["distances"] = machine.read_parsed(f"{base}/distance", parse_distance)
        nodes.append(node)
    return nodes


def _pci_gpus(machine: Machine) -> list[dict[str, object]] | Unknown:
    entries = machine.listdir(SYS_PCI)
    if isinstance(entries, Unknown):
        return Unknown(f"PCI devices unreadable: {entries.reason}")
    gpus = []
    for bdf in entries:
        base = f"{SYS_PCI}/{bdf}"
        vendor, pci_class = machine.read_text(f"{base}/vendor"), machine.read_text(f"{base}/class")
        if isinstance(vendor, Unknown) or isinstance(pci_class, Unknown):
            continue
        try:
            if not is_nvidia_gpu(parse_hex(vendor), parse_hex(pci_class)):
                continue
        except ValueError:
            continue
        gpu: dict[str, object] = {"bus_id": bdf.lower()}
        gpu["numa_node"] = machine.read_parsed(f"{base}/numa_node", int, "is not a number")
        gpu["local_cpus"] = machine.read_parsed(f"{base}/local_cpulist", parse_cpulist)
        gpus.append(gpu)
    return gpus


def _find_tool(machine: Machine, name: str) -> str | None:
    for folder in machine.environ.get("PATH", "").split(":"):
        if not folder.startswith("/"):
            continue  # relative PATH entries depend on the job's working directory
        candidate = f"{folder.rstrip('/')}/{name}"
        target = machine.path(candidate)
        if os.path.isfile(target) and os.access(target, os.X_OK):
            return candidate
    return None


def _membind(machine: Machine, numactl: str | None, nodes: object) -> dict[str, object] | Unknown:
    if not machine.is_live:
        text = machine.read_text(MEMBIND_FACT_FILE)
        if isinstance(text, Unknown):
            return Unknown("numactl memory binding is tested on the live machine only")
        answer = text.strip()
        if answer == "permitted":
            return {"permitted": True}
        return {"permitted": False, "error": answer.partition(":")[2].strip() or answer}
    if numactl is None:
        return Unknown("numactl is not on PATH")
    if isinstance(nodes, list) and len(nodes) < 2:
        # Nothing to choose between; spares every `tfdoctor check` a subprocess on one-node hosts.
        return Unknown("not tested on a single-node host")
    with_memory = [n["node"] for n in nodes if isinstance(n.get("mem_total_kib"), int) and n["mem_total_kib"]] \
        if isinstance(nodes, list) else []
    node = with_memory[0] if with_memory else 0
    # Well inside the probe's own deadline, so a hung numactl costs this fact, not the section.
    limit = min(1.0, machine.timeout / 2)
    import subprocess  # here, not at the top: only multi-node hosts pay for it

    from tfdoctor.facts.bounded import find_helper, run_bounded

    true = find_helper("true", machine.environ.get("PATH", ""))  # numactl would look `true` up in `.` too
    if true is None:
        return Unknown("true is not in an absolute folder of PATH")
    try:
        done = run_bounded([numactl, f"--membind={node}", true], timeout=limit, limit=64 * 1024,
                           env=machine.environ)
    except subprocess.TimeoutExpired:
        return Unknown(f"numactl --membind={node} true did not finish in {limit:g} s")
    except OSError as exc:
        return Unknown(f"numactl could not run: {exc.strerror or exc}")
    if done.returncode == 0:
        return {"permitted": True}
    message = (done.stderr or done.stdout).decode(errors="replace").strip().splitlines()
    return {"permitted": False, "error": message[0] if message else f"exit status {done.returncode}"}


@probe("numa")
def probe_numa(machine: Machine) -> dict[str, object]:
    nodes = _nodes(machine)
    tools = {name: _find_tool(machine, name) for name in TOOLS}
    return {
        "nodes": nodes,
        "pci_gpus": _pci_gpus(machine),
        "tools": tools,
        "membind": _membind(machine, tools["numactl"], nodes),
    }
