"""A conda environment: the channel each package of the TensorFlow stack came from, and the channel priority
conda solves with. Facts section "conda".

conda records every installed package as `<prefix>/conda-meta/<name>-<version>-<build>.json`, its keys in
sorted order: "channel" near the top (a URL, or a name in older conda), "url" (the package file it was
fetched from) near the end, after the large "files" and "paths_data". Only the records of the stack are
read, and of each only its first and last 4 KB. `channel_priority` is merged as conda merges it from the
files of its search path (SEARCH_PATH below: /etc/conda, /var/lib/conda, conda's root, XDG_CONFIG_HOME,
~/.config/conda, ~/.conda, ~/.condarc, the environment, CONDARC; the later override the earlier) and the
CONDA_CHANNEL_PRIORITY variable, which overrides them all; a value marked `#!final` overrides everything
after it. Unset means conda's default, flexible; a file that exists and cannot be read makes it Unknown.
"""

from __future__ import annotations

import os
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
_PRIORITY = re.compile(r"^channel_priority:[ \t]*(?P<value>'[A-Za-z]{1,20}'|\"[A-Za-z]{1,20}\"|[A-Za-z]{1,20})"
                       r"[ \t]*(?:#(?P<comment>[^\n]{0,200}))?$", re.MULTILINE)


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


# conda's configuration search path (conda/base/constants.py SEARCH_PATH, not Windows; the XDG_CONFIG_HOME
# entries since conda 4.11.0), in its order: a later file overrides an earlier one. Each entry is a file
# (read when named .condarc or condarc, or ending in .yml or .yaml) or a folder (its *.yml and *.yaml files,
# in name order); conda skips an entry whose variable is unset, that does not exist, or that is neither a
# regular file nor a folder (a FIFO).
SEARCH_PATH = (
    "/etc/conda/.condarc", "/etc/conda/condarc", "/etc/conda/condarc.d/",
    "/var/lib/conda/.condarc", "/var/lib/conda/condarc", "/var/lib/conda/condarc.d/",
    "$CONDA_ROOT/.condarc", "$CONDA_ROOT/condarc", "$CONDA_ROOT/condarc.d/",
    "$XDG_CONFIG_HOME/conda/.condarc", "$XDG_CONFIG_HOME/conda/condarc", "$XDG_CONFIG_HOME/conda/condarc.d/",
    "~/.config/conda/.condarc", "~/.config/conda/condarc", "~/.config/conda/condarc.d/",
    "~/.conda/.condarc", "~/.conda/condarc", "~/.conda/condarc.d/",
    "~/.condarc",
    "$CONDA_PREFIX/.condarc", "$CONDA_PREFIX/condarc", "$CONDA_PREFIX/condarc.d/",
    "$CONDARC",
)
CONDARC_NAMES = (".condarc", "condarc")
YAML_SUFFIXES = (".yml", ".yaml")
CONDARC_LIMIT = 256 * 1024  # bytes of one file: a .condarc is a few lines
FOLDER_FILES_LIMIT = 64  # *.yml files read from one condarc.d folder
_CONDA_EXE = re.compile(r"^(?P<root>/.{0,4000}?)/(?:bin|condabin)/conda$")
_CONDA_PYTHON_EXE = re.compile(r"^(?P<root>/.{0,4000}?)/bin/python[0-9.]{0,10}$")


def conda_root(machine: Machine, prefix: str) -> str | Unknown:
    """conda's own installation, $CONDA_ROOT of the search path: the variable when set, else the prefix of
    the Python conda runs in (conda/__init__.py sets CONDA_ROOT to it). `conda activate` exports that
    Python as CONDA_PYTHON_EXE and conda as CONDA_EXE; without them, the conda environment that holds
    `envs/<this environment>`, or this environment when conda is installed in it (the base)."""
    root = machine.environ.get("CONDA_ROOT", "")
    if root.startswith("/"):
        return posixpath.normpath(root)
    for variable, pattern in (("CONDA_EXE", _CONDA_EXE), ("CONDA_PYTHON_EXE", _CONDA_PYTHON_EXE)):
        match = pattern.match(machine.environ.get(variable, ""))
        if match:
            return posixpath.normpath(match.group("root"))
    parent, name = posixpath.split(posixpath.normpath(prefix))
    if name and posixpath.basename(parent) == "envs" and machine.exists(f"{posixpath.dirname(parent)}/conda-meta"):
        return posixpath.dirname(parent)
    if machine.exists(f"{prefix}/condabin/conda") or machine.exists(f"{prefix}/bin/conda"):
        return posixpath.normpath(prefix)
    return Unknown("conda's installation is not known (CONDA_ROOT, CONDA_EXE and CONDA_PYTHON_EXE are unset, "
                   f"and {prefix} is neither under <conda>/envs nor holds conda): its .condarc files were not read")


def search_path(machine: Machine, prefix: str) -> list[str | Unknown]:
    """SEARCH_PATH with its variables and ~ expanded from the job's environment (CONDA_PREFIX: the environment
    probed, the one a `conda install` in it configures), each path once, at its first place (conda's
    `unique`); an entry whose place is known but whose path is not (conda's root, a relative CONDARC) is
    Unknown there."""
    home = machine.environ.get("HOME", "")
    values: dict[str, str | Unknown] = {
        "CONDA_ROOT": conda_root(machine, prefix), "CONDA_PREFIX": prefix,
        "XDG_CONFIG_HOME": machine.environ.get("XDG_CONFIG_HOME", ""), "CONDARC": machine.environ.get("CONDARC", "")}
    found: list[str | Unknown] = []
    seen: set[str] = set()
    for entry in SEARCH_PATH:
        if entry.startswith("~/"):
            if not home.startswith("/"):
                continue  # no home: conda's expanduser finds none either
            path = home + entry[1:]
        elif entry.startswith("$"):
            variable, _, rest = entry[1:].partition("/")
            value = values[variable]
            if isinstance(value, Unknown):
                if value not in found:
                    found.append(value)
                continue
            if not value:
                continue  # unset: conda keeps "$NAME/…", a relative path that is not there
            if not value.startswith("/"):
                found.append(Unknown(f"{variable}={value} is relative: which file conda reads depends on the "
                                     "folder it runs in"))
                continue
            path = f"{value}/{rest}" if rest else value
        else:
            path = entry
        key = posixpath.normpath(path)
        if key not in seen:
            seen.add(key)
            found.append(path)
    return found


def _kind(machine: Machine, path: str) -> str | None:
    """"file" or "folder" for what conda reads at `path` (links followed), None for anything else."""
    import stat

    try:
        mode = os.stat(machine.path(path)).st_mode
    except (OSError, ValueError):
        return None  # conda skips what it cannot stat
    return "file" if stat.S_ISREG(mode) else "folder" if stat.S_ISDIR(mode) else None


def condarc_files(machine: Machine, prefix: str) -> list[str | Unknown]:
    """The configuration files conda reads, in its order (a later one overrides an earlier): the files of
    search_path() that exist, each folder's *.yml and *.yaml files in name order. Unknown where one cannot
    be listed."""
    files: list[str | Unknown] = []
    for entry in search_path(machine, prefix):
        if isinstance(entry, Unknown):
            files.append(entry)
            continue
        kind = _kind(machine, entry)
        name = posixpath.basename(entry.rstrip("/"))
        if kind == "file" and (name in CONDARC_NAMES or name.endswith(YAML_SUFFIXES)):
            files.append(entry)
        elif kind == "folder":
            listing = machine.listdir(entry)
            if isinstance(listing, Unknown):
                files.append(listing)
                continue
            folder = entry.rstrip("/")
            wanted = [f"{folder}/{n}" for n in listing if n.endswith(YAML_SUFFIXES)]
            wanted = [p for p in wanted if _kind(machine, p) == "file"]
            if len(wanted) > FOLDER_FILES_LIMIT:
                files.append(Unknown(f"{folder} holds {len(wanted)} configuration files, more than the "
                                     f"{FOLDER_FILES_LIMIT} read"))
                continue
            files.extend(wanted)
    return files


def priority_value(text: str) -> str:
    """A channel_priority as conda takes it: strict, flexible, disabled; true and false as conda's
    ChannelPriority reads them (flexible, disabled)."""
    value = text.strip().strip("'\"").lower()
    return {"true": "flexible", "false": "disabled"}.get(value, value)


def _setting(text: str) -> tuple[str, bool] | None:
    """The file's channel_priority and whether it is marked `#!final` (conda keeps the first final value over
    every later file and the variable), None when the file does not set it."""
    found = None
    for match in _PRIORITY.finditer(text):
        comment = "#" + (match.group("comment") or "")
        found = (priority_value(match.group("value")), comment.strip().strip("!#") == "final")
    return found


def _priority(machine: Machine, prefix: str) -> dict[str, object]:
    """channel_priority as conda merges it: the first value marked #!final, else the last one set, the
    CONDA_CHANNEL_PRIORITY variable after every file. A file that could not be read may hold either: then
    the value is Unknown, unless a final value before it decides."""
    settings: list[tuple[str, str | Unknown | None, bool]] = []  # (source, value, final)
    read: list[str] = []
    for path in condarc_files(machine, prefix):
        if isinstance(path, Unknown):
            settings.append(("", path, False))
            continue
        text = machine.read_text(path, limit=CONDARC_LIMIT)
        if isinstance(text, Unknown):
            settings.append((path, text, False))
            continue
        read.append(path)
        setting = _setting(text)
        if setting is not None:
            settings.append((path, *setting))
    # conda reads every setting from CONDA_<NAME> too, after the files; "!important" marks it final.
    variable = machine.environ.get("CONDA_CHANNEL_PRIORITY", "").strip()
    value, important, _ = variable.partition("!important")
    if re.fullmatch(r"[A-Za-z]{1,20}", value.strip()):
        settings.append(("CONDA_CHANNEL_PRIORITY", priority_value(value), bool(important)))
    final = next((i for i, s in enumerate(settings) if isinstance(s[1], str) and s[2]), None)
    considered = settings if final is None else settings[:final + 1]
    unread = next((s for s in considered if isinstance(s[1], Unknown)), None)
    if unread is not None:
        return {"value": unread[1], "source": unread[0] or None, "files": read}
    decided = considered[-1] if considered else None
    if decided is None:
        return {"value": None, "source": None, "files": read}  # not set: conda's default, flexible
    return {"value": decided[1], "source": decided[0], "files": read}


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
