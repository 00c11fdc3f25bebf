"""Jobs of issue 35's launcher and networking checks (DIST110–DIST112), built as tests/healthy/ builds its
machines: each is a healthy machine of tests/healthy/machines_launchers.py with the one thing changed that the
check looks for. `python tests/support/launcher_jobs.py` records them as the checks' triggering fixtures
(tests/snapshots/checks/dist11*.json)."""

from __future__ import annotations

import dataclasses
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))

from healthy import MACHINES, HealthyMachine  # noqa: E402
from healthy.corpus import collect  # noqa: E402
from healthy.machines import VENV  # noqa: E402
from healthy.machines_launchers import PROXY_ENV, horovod  # noqa: E402

from support.gpu_scenarios import link  # noqa: E402
from tfdoctor.testing import FakeRoot  # noqa: E402

FIXTURES = HERE.parent / "snapshots" / "checks"


def machine(name: str) -> HealthyMachine:
    return next(m for m in MACHINES if m.name == name)


def _bound(build, with_horovod: bool = False):
    """The machine's build, with its GPUs bound to the nvidia module on the PCI bus (the `driver` link sysfs
    has for a claimed function) and, if asked, Horovod installed."""
    def bound(root: FakeRoot):
        gpus = build(root)
        for function in sorted((root.path / "sys/bus/pci/devices").iterdir()):
            if (function / "vendor").read_text().strip() == "0x10de":
                link(root, f"/sys/bus/pci/devices/{function.name}/driver", "../../drivers/nvidia")
                link(root, f"/sys/bus/pci/drivers/nvidia/{function.name}", f"../../devices/{function.name}")
        if with_horovod:
            horovod(root, VENV)
        return gpus
    return bound


def jobs() -> dict[str, HealthyMachine]:
    """Fixture name -> the machine that shows it."""
    task = machine("slurm-one-gpu-per-task-constrained")
    horovod_rank = machine("slurm-horovod-rank-sees-node-gpus")
    proxy = machine("multi-worker-behind-proxy-with-no-proxy")
    mpi_env = {k: v for k, v in horovod_rank.env.items() if not k.startswith(("SLURM_", "CUDA_VISIBLE"))}
    mpi_env.update({"OMPI_COMM_WORLD_RANK": "13", "OMPI_COMM_WORLD_SIZE": "16", "OMPI_COMM_WORLD_LOCAL_RANK": "5",
                    "OMPI_COMM_WORLD_LOCAL_SIZE": "8", "OMPI_COMM_WORLD_NODE_RANK": "1",
                    "TF_FORCE_GPU_ALLOW_GROWTH": "true", "OMP_NUM_THREADS": "6"})
    no_exemption = {**proxy.env, "no_proxy": "localhost,127.0.0.1", "NO_PROXY": "localhost,127.0.0.1"}
    return {
        "dist110-horovod-rank-2-of-one-gpu-per-task": dataclasses.replace(
            task, name="dist110", build=_bound(task.build, with_horovod=True)),
        "dist111-mpirun-eight-slots-on-a-four-gpu-host": dataclasses.replace(
            horovod_rank, name="dist111", env=mpi_env, build=_bound(horovod_rank.build)),
        "dist112-proxy-without-the-cluster-in-no-proxy": dataclasses.replace(
            proxy, name="dist112", env=no_exemption, build=_bound(proxy.build)),
    }


def record() -> list[Path]:
    written = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, job in jobs().items():
            facts = collect(job, Path(tmp)).read_text()
            target = FIXTURES / f"{name}.json"
            target.write_text(facts)
            written.append(target)
    return written


__all__ = ["PROXY_ENV", "jobs", "machine", "record"]

if __name__ == "__main__":
    for path in record():
        print(path)
