"""The CTR checks' triggering fixtures (tests/snapshots/containers/), recorded from the container machines of
tests/healthy/machines_containers.py set up wrong: `python tests/support/container_fixtures.py` rewrites them
(tools/regenerate.py runs it), tests/test_checks_containers.py says when they are stale."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from healthy import HealthyMachine, collect  # noqa: E402
from healthy import machines_containers as mc  # noqa: E402

FOLDER = TESTS / "snapshots" / "containers"

FIXTURES = {
    "ctr001-utility-capability-only": HealthyMachine(
        "ctr001", (), "docker run --gpus all with NVIDIA_DRIVER_CAPABILITIES=utility",
        lambda root: mc.toolkit_container(root, ("utility",)), env=mc.toolkit_env("utility"), python=mc.VENV,
        nvml=mc.NVML),
    "ctr002-apptainer-without-nv": HealthyMachine(
        "ctr002", (), "apptainer exec without --nv on a GPU node",
        lambda root: mc.apptainer_container(root, nv=False), env=mc.APPTAINER_ENV, python=mc.VENV),
    "ctr003-amd64-image-on-apple-silicon": HealthyMachine(
        "ctr003", (), "an amd64 image with tensorflow 2.21 under Docker Desktop on an M2 Mac",
        lambda root: mc.docker_desktop_mac(root, "x86_64"), env=mc.toolkit_env(None), python=mc.X86_VENV),
}


# What differs between two recordings of the same machine: when and how fast it was probed, and the files'
# times of installation (the fake tree is written anew each time). Fixed here, so a fixture changes only
# when what the probes read does.
RECORDED_AT = "2026-12-04T00:00:00+00:00"
INSTALLED_AT = 1796342400.0  # 2026-12-04T00:00:00Z


KERNEL_RELEASE = "6.18.44-fc-v1147"  # what the fixtures were first recorded with


def _steady(value: Any, key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: _steady(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_steady(v) for v in value]
    if key == "installed_at" and isinstance(value, (int, float)):
        return INSTALLED_AT
    if key == "seconds" and isinstance(value, (int, float)):
        return 0.0
    if key == "platform_release" and isinstance(value, str):
        # The fixture's venv Python answers with the kernel of the machine regenerating it (a container shares
        # its host's kernel): fixed, so `tools/regenerate.py` rewrites no fixture on another machine.
        return KERNEL_RELEASE
    return value


# The sections the CTR checks and the checks they answer for (CUDA001, DRV001, CPU001) read: a fixture records
# these only, so a probe added for another area does not rewrite it (as tests/support/numa_hosts.py does).
RECORDED_SECTIONS = frozenset(("container_runtime", "cpu", "cgroup", "cuda_libs", "env", "gpu_pci", "host", "nvml",
                               "privileges", "python"))


def recorded(name: str) -> str:
    """The facts file the fixture's machine records today, as text, with its times fixed."""
    with tempfile.TemporaryDirectory() as tmp:
        data = json.loads(collect(FIXTURES[name], Path(tmp)).read_text())
    data["sections"] = {k: v for k, v in data["sections"].items() if k in RECORDED_SECTIONS}
    data = _steady(data)
    data["meta"].update(collected_at=RECORDED_AT, probe_seconds={})
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def main() -> int:
    FOLDER.mkdir(parents=True, exist_ok=True)
    for name in FIXTURES:
        (FOLDER / f"{name}.json").write_text(recorded(name))
        print(f"wrote {FOLDER.relative_to(TESTS.parent)}/{name}.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
