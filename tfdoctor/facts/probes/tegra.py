"""Jetson (Tegra) boards: the L4T release, the device-tree model, the Tegra driver libraries and the GPU's
device nodes. Facts section "tegra".

A Jetson's GPU is integrated in the SoC: no PCI function, no /proc/driver/nvidia, no NVML. What shows it
is the L4T release file (/etc/nv_tegra_release: "# R35 (release), REVISION: 4.1, GCID: 33958178, BOARD:
t186ref, EABI: aarch64, DATE: ..."), the board's device-tree model (NUL-terminated), libcuda in
/usr/lib/aarch64-linux-gnu/tegra/, and the nvhost/nvgpu device nodes under /dev.
"""

from __future__ import annotations

import re

from tfdoctor.facts import Unknown
from tfdoctor.facts.machine import Machine
from tfdoctor.registry import probe

RELEASE_FILE = "/etc/nv_tegra_release"
MODEL_FILES = ("/proc/device-tree/model", "/sys/firmware/devicetree/base/model")
TEGRA_LIBS = "/usr/lib/aarch64-linux-gnu/tegra"
# "# R35 (release), REVISION: 4.1, GCID: ..., BOARD: t186ref, EABI: aarch64, DATE: ..." (bounded, linear)
_RELEASE = re.compile(r"#\s*R(?P<major>\d{1,3})\s*\(release\),\s*REVISION:\s*(?P<revision>\d{1,3}(?:\.\d{1,3}){0,2})")
_BOARD = re.compile(r"BOARD:\s*(?P<board>[A-Za-z0-9_.-]{1,64})")


def parse_tegra_release(text: str) -> dict[str, str]:
    """The first line of /etc/nv_tegra_release -> {"release": "35.4.1", "board": "t186ref", "line": ...}.
    ValueError when the line is not L4T's."""
    line = text.strip().splitlines()[0][:400] if text.strip() else ""
    match = _RELEASE.match(line)
    if match is None:
        raise ValueError(f"not an L4T release line: {line!r}")
    board = _BOARD.search(line)
    return {"release": f"{match.group('major')}.{match.group('revision')}",
            "board": board.group("board") if board else "", "line": line}


def _release(machine: Machine) -> dict[str, str] | Unknown | None:
    if not machine.exists(RELEASE_FILE):
        return None  # known absent: not a Jetson image (or a container without the file)
    return machine.read_parsed(RELEASE_FILE, parse_tegra_release, "is not an L4T release line")


def _model(machine: Machine) -> str | Unknown | None:
    for path in MODEL_FILES:
        if machine.exists(path):
            text = machine.read_text(path, limit=4096)
            return text if isinstance(text, Unknown) else text.split("\0", 1)[0].strip()
    return None  # no device tree: an x86 machine or a VM


def _listing(machine: Machine, folder: str, prefixes: tuple[str, ...]) -> list[str] | Unknown:
    names = machine.listdir(folder)
    if isinstance(names, Unknown):
        # Absent: none there. Present but not listable: not known, not "none".
        return names if machine.exists(folder) else []
    return [f"{folder}/{n}" for n in names if n.startswith(prefixes)]


@probe("tegra", timeout=1.0)
def probe_tegra(machine: Machine) -> dict[str, object]:
    release, model = _release(machine), _model(machine)
    libcuda = _listing(machine, TEGRA_LIBS, ("libcuda.so",))
    gpu_nodes = _listing(machine, "/dev", ("nvhost-gpu", "nvhost-ctrl-gpu", "nvgpu"))
    jetson_model = isinstance(model, str) and "jetson" in model.lower()
    return {
        "detected": isinstance(release, dict) or (isinstance(libcuda, list) and bool(libcuda)) or jetson_model,
        "l4t": release,
        "model": model,
        "libcuda": libcuda,
        "gpu_nodes": gpu_nodes,
    }
