"""Fake NUMA hosts shared by the NUMA tests: topology trees for --root, with the nvidia module loaded and
bound to their GPUs, plus the NVML section that the nvml probe would have recorded (built directly, as the
GPU probe is not under test here). Also the source of the NUMA fixtures in tests/snapshots/checks/
(`python tests/support/numa_hosts.py` rewrites them)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):  # run as a script (tools/regenerate.py): the tests folder is the import root
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from support import gpu_scenarios as gpu
from tfdoctor.facts import Facts, from_jsonable
from tfdoctor.testing import FakeRoot

CHECK_SNAPSHOTS = Path(__file__).resolve().parents[1] / "snapshots" / "checks"
# 2 sockets × 8 cores × 2 threads, Linux numbering: node 0 = socket 0, node 1 = socket 1.
NODE0, NODE1 = "0-7,16-23", "8-15,24-31"
GPU_BUS_IDS = ("0000:1a:00.0", "0000:3b:00.0", "0000:88:00.0", "0000:b1:00.0")  # GPUs 0,1 node 0; 2,3 node 1
TENSORFLOW = "2.17.1"  # what the fixtures' venv runs: tensorflow[and-cuda], CUDA 12.3, fine with driver 550


def nvml_bus_id(sysfs: str) -> str:
    """sysfs "0000:3b:00.0" -> NVML "00000000:3B:00.0"."""
    domain, rest = sysfs.split(":", 1)
    return f"{int(domain, 16):08X}:{rest.upper()}"


def nvml_section(bus_ids: tuple[str, ...]) -> dict:
    return {
        "driver_version": "550.54.15",
        "cuda_driver_version": "12.4",
        "devices": [{"index": i, "uuid": gpu.gpu_uuid(i), "name": "NVIDIA A100-SXM4-40GB",
                     "pci_bus_id": nvml_bus_id(b), "compute_capability": "8.0", "memory_total_mib": 40960}
                    for i, b in enumerate(bus_ids)],
    }


def two_socket_host(root: FakeRoot, allowed: str | None = None, membind: str = "permitted",
                    tools: tuple[str, ...] = ("numactl", "taskset")) -> FakeRoot:
    from tfdoctor.facts.parse import parse_cpulist

    root.cpus(sockets=2, cores_per_socket=8, threads_per_core=2,
              allowed=parse_cpulist(allowed) if allowed else None).numa([NODE0, NODE1])
    for bus_id, node, cpus in zip(GPU_BUS_IDS, (0, 0, 1, 1), (NODE0, NODE0, NODE1, NODE1), strict=True):
        root.pci_gpu(bus_id, node, cpus)
    root.pci_gpu("0000:02:00.0", 0, NODE0, vendor="0x8086", pci_class="0x020000")  # a NIC: ignored
    status = root.path / "proc/self/status"  # a user's job: uid 1000, no capabilities
    status.write_text(status.read_text() + "Uid:\t1000\t1000\t1000\t1000\nCapEff:\t0000000000000000\n")
    for tool in tools:
        root.tool(tool)
    if membind:
        root.membind(membind)
    return root


def load_driver(root: FakeRoot, bus_ids: tuple[str, ...]) -> FakeRoot:
    """The A100s on the PCI bus at `bus_ids` claimed by a loaded nvidia module: what a host whose NVML lists
    them shows (without it NVML lists nothing, and DRV001 would rightly fire)."""
    for bus_id in bus_ids:
        root.write(f"/sys/bus/pci/devices/{bus_id}/device", f"{gpu.A100_DEVICE_ID}\n")
    gpu.driver(root, buses=bus_ids)
    return root


def probe(root: FakeRoot, env: Mapping[str, str]) -> Facts:
    from tfdoctor.engine import gather_facts
    from tfdoctor.registry import load_registry

    return gather_facts(load_registry().probes, root.machine(env))


def probe_with_gpus(root: FakeRoot, env: Mapping[str, str], bus_ids: tuple[str, ...] = GPU_BUS_IDS) -> Facts:
    """Every probe over `root`, its GPUs at `bus_ids` (already on its PCI bus) driven by the nvidia module,
    and NVML's answer for them."""
    if bus_ids:
        load_driver(root, bus_ids)
    facts = probe(root, {"PATH": "/usr/local/bin:/usr/bin:/bin", **env})
    facts.sections["nvml"] = nvml_section(bus_ids)
    return facts


def slurm_env(rank: int, **extra: str) -> dict[str, str]:
    """Local rank `rank` of a Slurm step of 4 tasks bound to sockets, each seeing the node's 4 GPUs."""
    return {"SLURM_LOCALID": str(rank), "SLURM_NTASKS_PER_NODE": "4", "SLURM_CPU_BIND": "quiet,sockets",
            "SLURM_GPUS_ON_NODE": "4", "SLURM_STEP_GPUS": "0,1,2,3", "CUDA_VISIBLE_DEVICES": "0,1,2,3", **extra}


# -- the recorded fixtures ------------------------------------------------------------------------

def _firmware_silent_on_gpu_2(root: FakeRoot) -> None:
    root.pci_gpu("0000:88:00.0", -1, NODE1)  # numa_node -1, but local_cpulist names node 1


@dataclass(frozen=True)
class NumaFixture:
    """One job on the two-socket A100 host, as tests/test_checks_numa.py builds it."""

    name: str
    env: dict[str, str]
    allowed: str | None = None  # the process's CPU affinity; None: every CPU
    extra: Callable[[FakeRoot], None] | None = None
    expect: tuple[str, ...] = ()  # the NUMA codes it fires, exactly


FIXTURES = (
    NumaFixture("numa001-unbound-process-with-gpus-on-one-node", {"CUDA_VISIBLE_DEVICES": "2,3"},
                expect=("NUMA001",)),
    NumaFixture("numa002-process-bound-to-the-wrong-node", {"CUDA_VISIBLE_DEVICES": "2,3"}, allowed=NODE0,
                expect=("NUMA002",)),
    NumaFixture("numa003-gpus-span-sockets-prefers-the-bound-node", {}, allowed=NODE1, expect=("NUMA003",)),
    NumaFixture("numa004-gpu-node-unknown-inferred-from-local-cpulist", {"CUDA_VISIBLE_DEVICES": "2"},
                extra=_firmware_silent_on_gpu_2, expect=("NUMA001", "NUMA004")),
    NumaFixture("numa101-ranks-sharing-a-node-with-threads-for-the-whole-node",
                slurm_env(0, OMP_NUM_THREADS="8", TF_NUM_INTRAOP_THREADS="8"), allowed=NODE0, expect=("NUMA101",)),
    NumaFixture("numa102-slurm-ranks-each-seeing-one-gpu", slurm_env(2, CUDA_VISIBLE_DEVICES="2"), allowed=NODE0,
                expect=("NUMA102",)),
)


# The sections these fixtures were recorded with (gpu_scenarios.collect names its own): a probe added later
# does not rewrite six recorded machines (docs/adding-a-fact.md's walk adds one and expects no fixture to move).
RECORDED_SECTIONS = frozenset(("cgroup", "cpu", "cuda_libs", "env", "gpu_pci", "host", "iommu", "keras", "network",
                               "numa", "nvml", "openmp", "privileges", "python", "shm", "xla_toolchain"))


def record(fixture: NumaFixture, path: Path) -> Facts:
    """What `tfdoctor collect` writes for that job: the probes over the host, with ada's venv of
    tensorflow[and-cuda] (the interpreter's own section, as gpu_scenarios records it: the interpreter running
    this is not the host's)."""
    root = two_socket_host(FakeRoot(path), allowed=fixture.allowed)
    if fixture.extra:
        fixture.extra(root)
    gpu.pip_release(root, TENSORFLOW)
    facts = probe_with_gpus(root, gpu.user_environment(fixture.env))
    sections = {name: value for name, value in facts.sections.items() if name in RECORDED_SECTIONS}
    sections["python"] = from_jsonable(gpu.python_section(**gpu.release_python(TENSORFLOW)))
    openmp = sections["openmp"]
    if isinstance(openmp, dict) and isinstance(openmp.get("scanned"), dict):
        # The scan's duration is this recording's, not the host's: pinned like the meta's probe_seconds.
        sections["openmp"] = {**openmp, "scanned": {**openmp["scanned"], "seconds": 0.0}}
    return Facts(sections, gpu.recorded_meta(facts, fixture.name))


def main(target: Path = CHECK_SNAPSHOTS) -> None:
    import tempfile

    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for fixture in FIXTURES:
            (target / f"{fixture.name}.json").write_text(record(fixture, Path(tmp) / fixture.name).dumps() + "\n")
            print(f"wrote {target / (fixture.name + '.json')}", file=sys.stderr)


if __name__ == "__main__":
    main()
