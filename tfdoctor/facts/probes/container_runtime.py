"""What the container runtime gave this process of the host's NVIDIA driver: the driver files the NVIDIA
Container Toolkit mounted (per capability, tfdoctor/knowledge/nvidia_container_toolkit.toml), the GPU device
nodes, and Apptainer/Singularity's image folder (/.singularity.d) with what `--nv` bound into its libs folder.

Which engine runs the container is read by the host and privileges probes (host.container,
privileges.container) and told apart in tfdoctor/derive/container.py; this probe adds only what those signs
do not say. Outside a container, or on a host without anything NVIDIA, it reads nothing more."""

from __future__ import annotations

from tfdoctor.facts import Unknown
from tfdoctor.facts.machine import Machine
from tfdoctor.facts.probes.nvidia_presence import NO_NVIDIA, nvidia_present
from tfdoctor.facts.probes.privileges import container_signs
from tfdoctor.registry import probe

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import Any

# Where the toolkit mounts driver libraries: the image's own library folder (Debian multiarch, RHEL lib64),
# and under WSL2 the Windows driver's folder.
LIBRARY_FOLDERS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
                   "/usr/lib/wsl/lib")
BINARY_FOLDERS = ("/usr/bin",)
SINGULARITY_DIR = "/.singularity.d"
# Set inside every Apptainer (and, for compatibility, Singularity) container: the image and its name.
APPTAINER_VARIABLES = ("APPTAINER_CONTAINER", "APPTAINER_NAME", "SINGULARITY_CONTAINER", "SINGULARITY_NAME")
MAX_LISTED = 200  # a libs folder or device list longer than this is cut (a real one holds ~30)


def apptainer_signs(machine: Machine) -> list[str]:
    signs = [SINGULARITY_DIR] if machine.exists(f"{SINGULARITY_DIR}/env") else []
    return signs + [name for name in APPTAINER_VARIABLES if machine.environ.get(name)]


def _apptainer(machine: Machine) -> dict[str, Any] | None:
    signs = apptainer_signs(machine)
    if not signs:
        return None
    libs = machine.listdir(f"{SINGULARITY_DIR}/libs")
    return {"signs": signs, "libs": libs[:MAX_LISTED] if isinstance(libs, list) else libs}


def _toolkit_rows() -> tuple[dict[str, Any], ...]:
    from tfdoctor.knowledge import table_rows

    return table_rows("nvidia_container_toolkit")


def driver_files(machine: Machine) -> dict[str, list[str]]:
    """Capability -> the toolkit's files of that capability present here (library folders and /usr/bin)."""
    rows = _toolkit_rows()
    capability_of = {str(lib): str(row["capability"]) for row in rows for lib in row.get("libs", ())}
    found: dict[str, list[str]] = {str(row["capability"]): [] for row in rows}
    for folder in LIBRARY_FOLDERS:
        names = machine.listdir(folder)
        for name in names if isinstance(names, list) else ():
            # One lookup per entry (a CUDA image's library folder holds thousands): libcuda.so.550.54.15 and
            # libcuda.so.1 are libcuda.so's; libcudart.so.12 is nobody's.
            cut = name.find(".so")
            capability = capability_of.get(name[:cut + 3]) if cut > 0 else None
            if capability and (len(name) == cut + 3 or name[cut + 3] == "."):
                found[capability].append(f"{folder}/{name}")
    for row in rows:
        for binary in row.get("bins", ()):
            paths = [f"{d}/{binary}" for d in BINARY_FOLDERS]
            found[str(row["capability"])] += [p for p in paths if machine.exists(p)]
    return {capability: sorted(paths)[:MAX_LISTED] for capability, paths in found.items()}


def device_nodes(machine: Machine) -> list[str] | Unknown:
    names = machine.listdir("/dev")
    if isinstance(names, Unknown):
        return names
    # /dev/dxg: the GPU of a container under WSL2 (Docker Desktop's WSL2 backend), where no /dev/nvidia* exists.
    return [f"/dev/{n}" for n in names if n.startswith("nvidia") or n == "dxg"][:MAX_LISTED]


@probe("container_runtime")
def probe_container_runtime(machine: Machine) -> dict[str, Any]:
    apptainer = _apptainer(machine)
    inside = bool(apptainer) or bool(container_signs(machine))
    if not inside:
        why = Unknown("not in a container (no engine marker, cgroup name, Kubernetes or Apptainer sign)")
        return {"apptainer": None, "driver_files": why, "device_nodes": why}
    if not nvidia_present(machine):
        return {"apptainer": apptainer, "driver_files": Unknown(NO_NVIDIA), "device_nodes": Unknown(NO_NVIDIA)}
    return {"apptainer": apptainer, "driver_files": driver_files(machine), "device_nodes": device_nodes(machine)}
