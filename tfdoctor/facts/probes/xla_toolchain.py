"""What XLA's GPU compiler will find: libdevice (nvvm/libdevice/libdevice.10.bc) and ptxas.

XLA looks for both in a list of CUDA roots that depends on the TensorFlow release: the folder of
--xla_gpu_cuda_data_dir (in XLA_FLAGS), the toolkit the wheel was built against, /usr/local/cuda, /opt/cuda,
the pip nvidia-cuda-nvcc wheel next to TensorFlow, tensorflow/cuda and the environment TensorFlow is
installed in (tfdoctor/knowledge/xla_ptxas.toml [[roots]]). This probe records every root any release
searches, whether it has an nvvm/libdevice folder (what XLA tests) and libdevice.10.bc, and its ptxas;
tfdoctor/derive/xla_libdevice.py and xla_ptxas.py keep the installed release's roots, in its order.
`libdevice` and `ptxas` are hints only (the first root's, release-blind). ptxas is also looked for on PATH.
Facts section "xla_toolchain" (docs/facts-gpu.md).
"""

from __future__ import annotations

import posixpath
import re

from tfdoctor.facts import Unknown
from tfdoctor.facts.machine import Machine
from tfdoctor.facts.parse import DATA_DIR_FLAG, parse_data_dir
from tfdoctor.facts.probes.cuda_libs import site_packages, toolkit_version, toolkits
from tfdoctor.facts.rooted_fs import RootedFs
from tfdoctor.registry import probe

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import Any

LIBDEVICE = "nvvm/libdevice/libdevice.10.bc"
VERSION_JSON_LIMIT = 1024 * 1024  # a toolkit's is ~3 KB


def parse_ptxas_version(text: str) -> str | None:
    """`ptxas --version` -> "12.2.140" (from "Cuda compilation tools, release 12.2, V12.2.140")."""
    match = re.search(r"release\s+[0-9.]+,\s*V([0-9.]+)", text) or re.search(r"release\s+([0-9.]+)", text)
    return match.group(1) if match else None


def nvcc_version(fs: RootedFs, root: str) -> str | Unknown | None:
    """The version of the toolkit's nvcc component (which ships ptxas), from version.json: what
    `ptxas --version` prints. The toolkit's own release differs: CUDA 12.3 Update 1 is "cuda" 12.3.1 and
    "cuda_nvcc" 12.3.103, the version XLA refuses. None when there is no version.json or it names no
    nvcc component (the toolkit's release stands in); Unknown when it is there but cannot be read."""
    path = posixpath.join(root, "version.json")
    text = fs.read_text(path, limit=VERSION_JSON_LIMIT)
    if text is None:
        if not fs.exists(path):
            return None
        return Unknown(f"{path} could not be read (no permission, not a regular file, or over "
                       f"{VERSION_JSON_LIMIT // (1024 * 1024)} MiB)")
    import json

    try:
        data = json.loads(text)
    except RecursionError:  # brackets nested past the stack
        return Unknown(f"{path} is not JSON a toolkit writes (nested too deep)")
    except ValueError as exc:
        return Unknown(f"{path} is not JSON ({str(exc)[:80]})")
    if not isinstance(data, dict):
        return Unknown(f"{path} holds a {type(data).__name__}, not the object of components a toolkit writes")
    component = data.get("cuda_nvcc")
    version = component.get("version") if isinstance(component, dict) else None
    return str(version) if isinstance(version, str) and version[:1].isdigit() else None


def fixed_roots() -> list[str]:
    """The fixed folders any release's XLA searches (xla_ptxas.toml [[roots]]), in the table's order."""
    from tfdoctor import knowledge

    rows = knowledge.table("xla_ptxas").data.get("roots", [])
    return list(dict.fromkeys(str(r["root"]) for r in rows if str(r["root"]).startswith("/")))


def _nvcc_wheel_version(fs: RootedFs, packages_dir: str) -> str | None:
    for entry in fs.listdir(packages_dir):
        match = re.match(r"^nvidia_cuda_nvcc_cu[0-9]+-([0-9][^-]*)\.dist-info$", entry)
        if match:
            return match.group(1)
    return None


def _ptxas_version(machine: Machine, fs: RootedFs, ptxas: str, root: str | None, wheel: str | None,
                   run: bool = True) -> Any:
    """From the wheel, the toolkit's version.json (its cuda_nvcc component, then the toolkit release) or
    version.txt; running `ptxas --version` (live only) is the last resort, and only for the ptxas XLA will use."""
    import subprocess

    if wheel:
        return wheel
    unread: Unknown | None = None  # a version.json that is there but unreadable: said, not skipped
    if root:
        nvcc = nvcc_version(fs, root)
        if isinstance(nvcc, Unknown):
            unread = nvcc  # the toolkit's release in version.txt would not be the nvcc version either
        elif version := nvcc or toolkit_version(fs, root):
            return version
    conda = _conda_nvcc_version(fs, ptxas)
    if conda:
        return conda
    if machine.is_live and run:
        from tfdoctor.facts.bounded import run_bounded

        try:
            done = run_bounded([ptxas, "--version"], timeout=min(machine.timeout, 2.0), limit=64 * 1024)
            ran = parse_ptxas_version(done.stdout.decode(errors="replace")) or Unknown(
                f"{ptxas} --version printed no release")
        except (OSError, subprocess.TimeoutExpired) as exc:
            ran = Unknown(f"{ptxas} --version failed: {type(exc).__name__}")
        return ran if unread is None or not isinstance(ran, Unknown) else Unknown(f"{unread.reason}; {ran.reason}")
    if unread is not None:
        return Unknown(unread.reason + ("" if machine.is_live else ", and ptxas is not run under --root"))
    return Unknown("no wheel, version.json/version.txt or conda-meta record names its version"
                   + ("" if machine.is_live else ", and it is not run under --root"))


def _conda_nvcc_version(fs: RootedFs, ptxas: str) -> str | None:
    """A conda environment's ptxas (<prefix>/bin/ptxas) is versioned by its package record,
    <prefix>/conda-meta/cuda-nvcc-<version>-<build>.json."""
    prefix = posixpath.dirname(posixpath.dirname(ptxas))
    for entry in fs.listdir(posixpath.join(prefix, "conda-meta")):
        match = re.match(r"^cuda-nvcc-([0-9][0-9.]*)-[^-]+\.json$", entry)
        if match:
            return match.group(1)
    return None


def _root_record(machine: Machine, fs: RootedFs, root: str, origin: str, wheel: str | None,
                 run: bool = True) -> dict[str, Any]:
    libdevice = posixpath.join(root, LIBDEVICE)
    ptxas = posixpath.join(root, "bin", "ptxas")
    has_ptxas = fs.is_file(ptxas)
    target = fs.realpath(root)
    return {
        "dir": root, "origin": origin,
        "target": target if target != root else None,
        "exists": fs.is_dir(root),
        # XLA takes the first root with this folder, then reads libdevice.10.bc from it (GetLibdeviceDir).
        "libdevice_dir": fs.is_dir(posixpath.dirname(libdevice)),
        "libdevice": libdevice if fs.is_file(libdevice) else None,
        "ptxas": ptxas if has_ptxas else None,
        "ptxas_version": _ptxas_version(machine, fs, ptxas, root, wheel, run=run) if has_ptxas else None,
    }


@probe("xla_toolchain", timeout=3.0)
def probe_xla_toolchain(machine: Machine) -> dict[str, Any] | Unknown:
    from tfdoctor.facts.probes.nvidia_presence import NO_NVIDIA, nvidia_present

    if not nvidia_present(machine):
        return Unknown(NO_NVIDIA)  # XLA on CPUs needs neither libdevice nor ptxas
    fs = RootedFs(machine)
    xla_flags = machine.environ.get("XLA_FLAGS")
    data_dir = parse_data_dir(xla_flags)
    packages = site_packages(machine, fs)
    candidates: list[dict[str, Any]] = []
    if data_dir:
        candidates.append(_root_record(machine, fs, data_dir, DATA_DIR_FLAG, None))
    # /usr/local/cuda first, as every release searches it: the `libdevice` and `ptxas` hints below are its.
    for root in sorted(fixed_roots(), key=lambda r: r != "/usr/local/cuda"):
        candidates.append(_root_record(machine, fs, root, root, None))
    for folder in packages:
        if fs.is_dir(posixpath.join(folder, "tensorflow")):
            # Every release's roots next to TensorFlow: which of them this release searches is the derivation's.
            nvcc = posixpath.join(folder, "nvidia", "cuda_nvcc")
            candidates.append(_root_record(machine, fs, nvcc, "pip nvidia-cuda-nvcc",
                                           _nvcc_wheel_version(fs, folder)))
            # Neither of these two is run for its ptxas version (a conda prefix's comes from conda-meta; a
            # system prefix's bin/ptxas is PATH's, run below).
            candidates.append(_root_record(machine, fs, posixpath.join(folder, "tensorflow", "cuda"),
                                           "tensorflow/cuda", None, run=False))
            # <prefix>/lib/pythonX.Y/site-packages/tensorflow/../../../..: the environment TensorFlow is in.
            prefix = posixpath.normpath(posixpath.join(folder, "..", "..", ".."))
            candidates.append(_root_record(machine, fs, prefix, "environment prefix", None, run=False))
            break
    libdevice = next((c["libdevice"] for c in candidates if c["libdevice"]), None)

    path_ptxas: list[dict[str, Any]] = []
    # The XLA of TensorFlow 2.12 on tries PATH before /usr/local/cuda and the pip wheel: the first ptxas on
    # PATH may be the one it runs, so that one is run for its version (live only) whatever the roots hold.
    for folder in [d for d in machine.environ.get("PATH", "").split(":") if d.startswith("/")]:
        candidate = posixpath.join(folder, "ptxas")
        if fs.is_file(candidate):
            root = posixpath.dirname(folder.rstrip("/"))
            path_ptxas.append({"path": candidate, "version": _ptxas_version(machine, fs, candidate, root, None,
                                                                            run=not path_ptxas)})
    first = next(({"path": c["ptxas"], "version": c["ptxas_version"], "via": c["origin"]}
                  for c in candidates if c["ptxas"]), None)
    if first is None and path_ptxas:
        first = {**path_ptxas[0], "via": "PATH"}

    # Folders XLA does not search that hold libdevice: what --xla_gpu_cuda_data_dir could name.
    elsewhere: list[dict[str, Any]] = []
    roots = [(k["path"], "toolkit") for k in toolkits(machine, fs)]
    roots += [(posixpath.join(p, "nvidia", "cuda_nvcc"), "pip nvidia-cuda-nvcc") for p in packages]
    conda = machine.environ.get("CONDA_PREFIX")
    if conda:
        roots.append((conda, "CONDA_PREFIX"))
        # conda-forge's CUDA packages keep the toolkit tree under targets/<platform> (its fix names that folder).
        roots += [(posixpath.join(conda, "targets", t), "CONDA_PREFIX") for t in ("x86_64-linux", "sbsa-linux")]
    searched = {c["dir"] for c in candidates}
    for root, origin in roots:
        if root in searched or any(e["dir"] == root for e in elsewhere):
            continue
        if fs.is_file(posixpath.join(root, LIBDEVICE)):
            wheel = None
            if origin.startswith("pip"):
                wheel = _nvcc_wheel_version(fs, posixpath.dirname(posixpath.dirname(root)))
            elsewhere.append(_root_record(machine, fs, root, origin, wheel, run=False))
    return {
        "xla_flags": xla_flags,
        "cuda_data_dir": data_dir,
        "candidates": candidates,
        "libdevice": libdevice,
        "ptxas": first,
        "path_ptxas": path_ptxas,
        "libdevice_elsewhere": elsewhere,
    }
