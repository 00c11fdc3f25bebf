"""A conda environment: the channel each package of the TensorFlow stack came from, and the channel priority
conda solves with. Facts section "conda".

conda records every installed package as `<prefix>/conda-meta/<name>-<version>-<build>.json`, its keys in
sorted order: "channel" near the top (a URL, or a name in older conda), "url" (the package file it was
fetched from) near the end, after the large "files" and "paths_data". Only the records of the stack are
read, and of each only its first and last 4 KB. `channel_priority` is read from the .condarc files conda
reads (the later ones override the earlier) and the CONDA_CHANNEL_PRIORITY variable, which overrides them
all; unset means conda's default, flexible.
"""

from __future__ import annotations

import posixpath
import re

from tfdoctor.facts import Unknown
from tfdoctor.facts.machine import Machine
from tfdoctor.facts.probes.openmp import environment_prefix
from tfdoctor.registry import probe

# The packages whose builds must come from one channel family: TensorFlow and what it links or imports
# compiled (protobuf, abseil, gRPC, HDF5, NumPy, the C++ runtime, Python itself).
STACK = ("tensorflow", "tensorflow-base", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-estimator", "keras",
         "tensorboard", "numpy", "numpy-base", "protobuf", "libprotobuf", "abseil-cpp", "libabseil", "grpc-cpp",
         "libgrpc", "grpcio", "h5py", "hdf5", "python", "libstdcxx-ng", "libstdcxx", "ml_dtypes", "flatbuffers",
         "python-flatbuffers", "snappy", "re2")
_RECORD = re.compile(r"^(?P<name>[A-Za-z0-9_.+-]{1,200}?)-(?P<version>[^-]{1,100})-(?P<build>[^-]{1,200})\.json$")
_CHANNEL = re.compile(r'"channel":\s*"(?P<value>[^"\\]{0,500})"')
_URL = re.compile(r'"url":\s*"(?P<value>[^"\\]{0,1000})"')
EDGE = 4096  # bytes read at each end of a record
_PRIORITY = re.compile(r"^channel_priority:\s*['\"]?(?P<value>[A-Za-z]{1,20})['\"]?\s*(?:#.*)?$", re.MULTILINE)


def channel_of(value: str) -> str:
    """A record's channel as conda prints it: "https://conda.anaconda.org/conda-forge/linux-64" ->
    "conda-forge", "https://repo.anaconda.com/pkgs/main/linux-64/x.conda" -> "pkgs/main" (defaults)."""
    text = value.strip()
    match = re.match(r"^https?://[^/]{1,200}/(?P<path>[^?#]{0,500})", text)
    if match is None:
        return text  # already a name ("conda-forge", "defaults")
    parts = [p for p in match.group("path").split("/") if p]
    if parts and parts[0] == "pkgs" and len(parts) > 1:
        return f"pkgs/{parts[1]}"
    if parts and parts[0] == "t" and len(parts) > 2:  # anaconda.org tokens: /t/<token>/<channel>/
        parts = parts[2:]
    return parts[0] if parts else text


def _edges(machine: Machine, path: str) -> str | Unknown:
    from tfdoctor.facts.bounded import RangeReader

    try:
        with RangeReader(machine.path(path), budget=2 * EDGE, limit=EDGE) as read:
            head = read(0, EDGE)
            tail = read(max(EDGE, read.size - EDGE), EDGE) if read.size > EDGE else b""
    except OSError as exc:
        return Unknown(f"{path} could not be read: {exc.strerror or exc}")
    return (head + b"\n" + tail).decode("utf-8", errors="replace")


def _record(machine: Machine, path: str, name: str, version: str, build: str) -> dict[str, object]:
    text = _edges(machine, path)
    if isinstance(text, Unknown):
        return {"name": name, "version": version, "build": build, "channel": text}
    found = _CHANNEL.search(text) or _URL.search(text)
    channel: object = channel_of(found.group("value")) if found and found.group("value") else \
        Unknown(f"{path} names no channel or url")
    return {"name": name, "version": version, "build": build, "channel": channel}


def condarc_files(machine: Machine, prefix: str) -> list[str]:
    """The .condarc files conda reads, in its order (a later one overrides an earlier)."""
    home = machine.environ.get("HOME", "")
    found = ["/etc/conda/.condarc", "/etc/conda/condarc", "/var/lib/conda/.condarc"]
    if home.startswith("/"):
        found += [f"{home}/.config/conda/.condarc", f"{home}/.conda/.condarc", f"{home}/.condarc"]
    found.append(f"{prefix}/.condarc")
    condarc = machine.environ.get("CONDARC", "")
    if condarc.startswith("/"):
        found.append(condarc)
    return found


def _priority(machine: Machine, prefix: str) -> dict[str, object]:
    # conda reads every setting from CONDA_<NAME> too, over all the .condarc files.
    variable = machine.environ.get("CONDA_CHANNEL_PRIORITY", "").strip()
    if re.fullmatch(r"[A-Za-z]{1,20}", variable):
        return {"value": variable.lower(), "source": "CONDA_CHANNEL_PRIORITY"}
    value: object = None
    source = None
    for path in condarc_files(machine, prefix):
        if not machine.exists(path):
            continue
        text = machine.read_text(path, limit=256 * 1024)
        if isinstance(text, Unknown):
            return {"value": text, "source": path}
        match = _PRIORITY.search(text)
        if match:
            value, source = match.group("value").lower(), path
    return {"value": value, "source": source}  # None: not set, conda's default (flexible)


@probe("conda", timeout=1.0)
def probe_conda(machine: Machine) -> dict[str, object]:
    prefix = environment_prefix(machine)
    meta = posixpath.join(prefix, "conda-meta") if prefix else None
    if meta is None or not machine.exists(meta):
        return {"prefix": prefix, "is_conda": False}
    listing = machine.listdir(meta)
    if isinstance(listing, Unknown):
        return {"prefix": prefix, "is_conda": True, "packages": listing}
    packages = []
    for entry in listing:
        match = _RECORD.match(entry)
        if match and match.group("name") in STACK:
            packages.append(_record(machine, f"{meta}/{entry}", match.group("name"), match.group("version"),
                                    match.group("build")))
    return {"prefix": prefix, "is_conda": True, "packages": packages,
            "channel_priority": _priority(machine, prefix)}
