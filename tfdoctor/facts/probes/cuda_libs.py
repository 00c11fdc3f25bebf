"""The CUDA libraries TensorFlow dlopens, as the dynamic loader will resolve them — and every other copy
on disk that it will not (that copy's folder is the fix).

The loader's order for a dlopen from TensorFlow's own libraries (they carry DT_RUNPATH, not DT_RPATH):
LD_LIBRARY_PATH, then TensorFlow's RUNPATH (from 2.14 the lib folders of the pip nvidia-* wheels,
site-packages/nvidia/<lib>/lib), then /etc/ld.so.cache, then the default folders. CUDA_HOME and
/usr/local/cuda* are not on that path at all; they are scanned for copies the loader cannot see.

Facts section "cuda_libs" (documented in docs/facts-gpu.md).
"""

from __future__ import annotations

import os
import posixpath
import re
import sys
from collections.abc import Callable, Iterable

from tfdoctor.facts import Unknown
from tfdoctor.facts.machine import Machine
from tfdoctor.facts.rooted_fs import RootedFs
from tfdoctor.registry import probe

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import Any

# Library key -> file stem. TensorFlow asks for "<stem>.<soname version>".
LIBRARIES = {
    "cudart": "libcudart.so", "cublas": "libcublas.so", "cublasLt": "libcublasLt.so", "cudnn": "libcudnn.so",
    "cufft": "libcufft.so", "cusolver": "libcusolver.so", "cusparse": "libcusparse.so", "nccl": "libnccl.so",
    "cupti": "libcupti.so", "cuda": "libcuda.so",
}
MULTIARCH = {"x86_64": "x86_64-linux-gnu", "aarch64": "aarch64-linux-gnu", "ppc64le": "powerpc64le-linux-gnu"}
TOOLKIT_LIB_SUBDIRS = ("lib64", "lib", "extras/CUPTI/lib64", "targets/x86_64-linux/lib",
                       "targets/sbsa-linux/lib", "targets/x86_64-linux/lib/stubs")
TENSORFLOW_DISTS = ("tensorflow", "tensorflow_cpu", "tensorflow_gpu", "tensorflow_intel", "tf_nightly",
                    "intel_tensorflow", "tensorflow_aarch64")
RUNPATH_SINCE = (2, 14)

# One pass over a folder listing: the group names the library (libcuda.so.550.54.15 -> "cuda").
_LIBRARY_FILE = re.compile(
    r"^lib(cudart|cublasLt|cublas|cudnn|cufft|cusolver|cusparse|nccl|cupti|cuda)\.so(?:\.[0-9.]+)?$")
_VERSION_TAIL = re.compile(r"\.so((?:\.[0-9]+)+)$")
_DIST_INFO = re.compile(r"^(?P<name>.+?)-(?P<version>[0-9][^-]*)\.dist-info$")


BUILD_INFO_LIMIT = 1024 * 1024  # a real build_info.py is a few kilobytes

def matches_stem(filename: str, stem: str) -> bool:
    return filename == stem or filename.startswith(stem + ".")


def file_version(filename: str) -> str | None:
    """libcudnn.so.8.9.7 -> "8.9.7"; libcupti.so.2023.2.1 -> "2023.2.1"; libcudnn.so -> None."""
    match = _VERSION_TAIL.search(filename)
    return match.group(1)[1:] if match else None


def version_tuple(text: str | None) -> tuple[int, ...]:
    if not text:
        return ()
    parts = []
    for piece in str(text).split("."):
        if not piece.isdigit():
            break
        parts.append(int(piece))
    return tuple(parts)


def parse_cudnn_header(text: str) -> str | None:
    values = {}
    for key in ("CUDNN_MAJOR", "CUDNN_MINOR", "CUDNN_PATCHLEVEL"):
        match = re.search(rf"#define\s+{key}\s+([0-9]+)", text)
        if not match:
            return None
        values[key] = match.group(1)
    return ".".join(values[k] for k in ("CUDNN_MAJOR", "CUDNN_MINOR", "CUDNN_PATCHLEVEL"))


def loader_candidates(name: str, ld_library_path: Iterable[str], runpath: Iterable[str],
                      cache: Iterable[tuple[str, str]], default_dirs: Iterable[str],
                      exists: Callable[[str], bool]) -> list[dict[str, str]]:
    """Every path the loader would accept for `name`, in the order it tries them. The first one wins.

    `cache` holds (soname, path) pairs in ld.so.cache order; `exists` answers for machine paths.
    """
    found: list[dict[str, str]] = []
    for via, dirs in (("LD_LIBRARY_PATH", ld_library_path), ("RUNPATH", runpath)):
        for folder in dirs:
            if folder and exists(posixpath.join(folder, name)):
                found.append({"path": posixpath.join(folder, name), "via": via})
    for soname, path in cache:
        if soname == name and exists(path):
            found.append({"path": path, "via": "ld.so.cache"})
    for folder in default_dirs:
        if exists(posixpath.join(folder, name)):
            found.append({"path": posixpath.join(folder, name), "via": "default folder"})
    return found


def resolve_library(name: str, ld_library_path: Iterable[str], runpath: Iterable[str],
                    cache: Iterable[tuple[str, str]], default_dirs: Iterable[str],
                    exists: Callable[[str], bool]) -> dict[str, str] | None:
    """Where dlopen(name) from TensorFlow lands, or None when it fails."""
    found = loader_candidates(name, ld_library_path, runpath, cache, default_dirs, exists)
    return found[0] if found else None


# -- where to look -------------------------------------------------------------------------------

def _architecture(machine: Machine) -> str:
    if machine.is_live:
        return os.uname().machine
    text = machine.read_text("/proc/sys/kernel/arch")
    return text.strip() if isinstance(text, str) and text.strip() else "x86_64"


def default_dirs(arch: str) -> list[str]:
    multiarch = MULTIARCH.get(arch)
    dirs = [f"/lib/{multiarch}", f"/usr/lib/{multiarch}"] if multiarch else []
    return [*dirs, "/lib64", "/usr/lib64", "/lib", "/usr/lib"]


def python_prefix(machine: Machine) -> str | None:
    """The environment prefix of --python, as a path on the probed machine: the folder above its bin/ (a
    venv or conda env). --python names a file on this host (it is run as given); under --root, a path inside
    the root is that tree's interpreter and is read without the root (one join with the root, not two),
    any other path is taken as the tree's own. Every probe that reads --python's environment asks here."""
    if not machine.python:
        return None
    path = machine.python
    if not machine.is_live:
        root = os.fspath(machine.root).rstrip("/")
        if path.startswith(root + "/"):
            path = machine.unroot(path)
    return posixpath.dirname(posixpath.dirname(path))


def site_packages(machine: Machine, fs: RootedFs) -> list[str]:
    """The site-packages folders TensorFlow may live in: this interpreter's path (live, no --python) or
    the --python interpreter's prefix, then those of $VIRTUAL_ENV, $CONDA_PREFIX and the system."""
    found: list[str] = []
    if machine.is_live and not machine.python:
        found += [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
    other = python_prefix(machine)
    prefixes = [other, machine.environ.get("VIRTUAL_ENV"), machine.environ.get("CONDA_PREFIX"), "/usr/local", "/usr"]
    for prefix in filter(None, prefixes):
        lib = posixpath.join(prefix, "lib")
        for entry in fs.listdir(lib):
            if entry.startswith("python3"):
                for leaf in ("site-packages", "dist-packages"):
                    candidate = posixpath.join(lib, entry, leaf)
                    if fs.is_dir(candidate):
                        found.append(candidate)
    seen: list[str] = []
    for path in found:
        if path not in seen:
            seen.append(path)
    return seen


def dist_versions(fs: RootedFs, folder: str) -> dict[str, str]:
    versions = {}
    for entry in fs.listdir(folder):
        match = _DIST_INFO.match(entry)
        if match:
            versions.setdefault(re.sub(r"[-_.]+", "_", match.group("name")).lower(), match.group("version"))
    return versions


def _tensorflow(fs: RootedFs, packages: list[str]) -> dict[str, Any] | None:
    """The TensorFlow the loader scan belongs to: location, version, build_info, and its pins."""
    from tfdoctor.facts.probes import pyenv_snapshot

    for folder in packages:
        if not fs.is_file(posixpath.join(folder, "tensorflow", "__init__.py")):
            continue
        versions = dist_versions(fs, folder)
        dist = next((d for d in TENSORFLOW_DISTS if d in versions), None)
        info: dict[str, Any] = {"site_packages": folder, "dist": dist, "version": versions.get(dist or "")}
        build_info = posixpath.join(folder, "tensorflow", "python", "platform", "build_info.py")
        info["build_info"] = read_tf_build_info(fs.host_path(build_info)) if fs.is_file(build_info) else None
        requires: list[str] = []
        if dist:
            for entry in fs.listdir(folder):
                match = _DIST_INFO.match(entry)
                if match and re.sub(r"[-_.]+", "_", match.group("name")).lower() == dist:
                    meta = fs.read_text(posixpath.join(folder, entry, "METADATA")) or ""
                    requires = pyenv_snapshot._parse_metadata(meta)["requires_dist"]
        info["requires_dist"] = requires
        return info
    return None


def witness(fs: RootedFs, tensorflow: dict[str, Any]) -> None:
    """What the installed TensorFlow's shared objects say about themselves, added to its record: their
    dynamic sections and the NCCL linkage they show."""
    tensorflow["libraries"] = tensorflow_libraries(fs, str(tensorflow["site_packages"]))
    linkage = nccl_linkage(tensorflow)
    tensorflow["nccl_linkage"] = linkage[0] if linkage else Unknown("libtensorflow_framework.so.2 not read")
    if linkage:
        tensorflow["nccl_linkage_rule"] = linkage[1]


def read_tf_build_info(path: str) -> dict[str, Any]:
    """build_info.py of a wheel. Real wheels write `build_info = collections.OrderedDict([(k, v), …])`,
    which a plain literal_eval rejects; the pair list is read here when the snapshot's reader finds nothing."""
    from tfdoctor.facts.probes import pyenv_snapshot

    info = pyenv_snapshot.read_build_info(path)
    if info and "is_cuda_build" in info:
        return info
    import ast  # only for a file the snapshot's reader could not read: ast costs the hook ~1.6 ms

    from tfdoctor.facts.bounded import read_probe_file

    try:
        read = read_probe_file(path, BUILD_INFO_LIMIT)  # a FIFO or device is refused, never read
        if read.truncated:
            return info
        tree = ast.parse(read.data.decode("utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return info
    for node in tree.body:
        if (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == "build_info" and isinstance(node.value, ast.Call) and node.value.args):
            try:
                value = ast.literal_eval(node.value.args[0])
                return {str(k): v for k, v in dict(value).items()}
            except (ValueError, TypeError, SyntaxError):
                return info
    return info


def wheel_lib_dirs(fs: RootedFs, folder: str) -> list[dict[str, str | None]]:
    """site-packages/nvidia/<lib>/lib folders with the version of the wheel that installed each."""
    versions = dist_versions(fs, folder)
    dirs = []
    nvidia = posixpath.join(folder, "nvidia")
    for entry in fs.listdir(nvidia):
        lib = posixpath.join(nvidia, entry, "lib")
        if not fs.is_dir(lib):
            continue
        dist = next((d for d in versions if d.startswith(f"nvidia_{entry.lower()}_cu")), None)
        dirs.append({"dir": lib, "dist": dist.replace("_", "-") if dist else None,
                     "version": versions.get(dist) if dist else None})
    return dirs


def toolkits(machine: Machine, fs: RootedFs) -> list[dict[str, Any]]:
    """CUDA toolkit roots: $CUDA_HOME/$CUDA_PATH/$CUDA_ROOT, /usr/local/cuda*, /opt/cuda, /usr/lib/cuda,
    each with its link target (reported, not hidden) and its version."""
    roots: list[tuple[str, str]] = []
    for name in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"):
        value = machine.environ.get(name)
        if value and value.startswith("/"):
            roots.append((value.rstrip("/") or "/", name))
    roots += [(posixpath.join("/usr/local", e), "/usr/local") for e in fs.listdir("/usr/local")
              if e == "cuda" or e.startswith("cuda-")]
    roots += [(p, "well-known") for p in ("/opt/cuda", "/usr/lib/cuda") if fs.exists(p) or fs.is_link(p)]
    result = []
    seen = set()
    for root, origin in roots:
        if root in seen:
            continue
        seen.add(root)
        target = fs.realpath(root)
        result.append({
            "path": root, "origin": origin,
            "target": target if target != root else None,
            "broken": fs.is_broken_link(root) or not fs.exists(root),
            "version": toolkit_version(fs, root),
        })
    return result


def toolkit_version(fs: RootedFs, root: str) -> str | None:
    text = fs.read_text(posixpath.join(root, "version.json"))
    if text:
        import json

        try:
            data = json.loads(text)
        except (ValueError, RecursionError):  # RecursionError: brackets nested past the stack
            data = None
        for key in ("cuda", "cuda_cudart", "cuda_nvcc"):
            component = data.get(key) if isinstance(data, dict) else None
            if isinstance(component, dict) and component.get("version"):
                return str(component["version"])
    text = fs.read_text(posixpath.join(root, "version.txt"))
    if text:
        match = re.search(r"CUDA Version\s+([0-9.]+)", text)
        if match:
            return match.group(1)
    match = re.search(r"cuda-([0-9]+\.[0-9]+)$", fs.realpath(root) or "")
    return match.group(1) if match else None


# The shared objects TensorFlow's own loader lives in and beside (site-packages/tensorflow/...): tsl's
# dso_loader, which dlopens the CUDA libraries, is in the framework, so its RUNPATH is the one the loader
# searches (a dlopen searches the RUNPATH of the object that calls it). The others are recorded as evidence.
FRAMEWORK = "libtensorflow_framework.so.2"
MAIN_LIBRARIES = (FRAMEWORK, "libtensorflow_cc.so.2", "python/_pywrap_tensorflow_internal.so")
# Wheel folders (site-packages/nvidia/<folder>/lib) every GPU step loads from: TensorFlow skips every GPU
# when one of these libraries cannot be opened ("Cannot dlopen some GPU libraries").
GPU_STEP_FOLDERS = ("cublas", "cuda_runtime", "cudnn", "cufft", "cusolver", "cusparse")
STUB_LOADED = ("cupti", "nccl")  # opened by the code that uses them: searched on stub_runpath
ELF_READ_BUDGET = 1024 * 1024  # headers + dynamic segment + strings; 2.21's framework RUNPATH is ~24 KB
ELF_READ_SECONDS = 0.5


def read_elf_dynamic(fs: RootedFs, path: str) -> dict[str, Any] | Unknown:
    """NEEDED, RUNPATH, RPATH and SONAME of a shared object, from a few bounded reads (never the whole file)."""
    import time

    from tfdoctor.facts.bounded import BudgetExceeded, RangeReader
    from tfdoctor.facts.elf import ElfError, read_dynamic

    if not fs.is_file(path):
        return Unknown(f"{path} does not exist")
    try:
        with RangeReader(fs.host_path(path), ELF_READ_BUDGET, deadline=time.monotonic() + ELF_READ_SECONDS) as read_at:
            return read_dynamic(read_at).as_dict()
    except ElfError as exc:
        return Unknown(f"{path}: {exc}")
    except (BudgetExceeded, TimeoutError) as exc:
        return Unknown(f"{path}: not read ({exc})")
    except OSError as exc:
        return Unknown(f"{path} not readable: {exc.strerror or exc}")


def tensorflow_libraries(fs: RootedFs, folder: str) -> dict[str, Any]:
    """The dynamic sections of TensorFlow's main shared objects that exist, by path under tensorflow/."""
    found: dict[str, Any] = {}
    for name in MAIN_LIBRARIES:
        path = posixpath.join(folder, "tensorflow", name)
        if fs.is_file(path):
            found[name] = read_elf_dynamic(fs, path)
    return found


def loader_runpath(fs: RootedFs, tensorflow: dict[str, Any], wheel_dirs: list[dict[str, str | None]]
                   ) -> tuple[list[str], bool, str]:
    """(the folders TensorFlow's dlopen searches after LD_LIBRARY_PATH, whether they reach every wheel folder
    a GPU step loads from, the rule used). The installed framework's own RUNPATH first; when it cannot
    be read, the build's row of tfdoctor/knowledge/tensorflow_builds.toml; a release the table lacks is
    given the pip wheel folders (the RUNPATH every release from 2.14 to 2.20 carries)."""
    nvidia = posixpath.join(str(tensorflow["site_packages"]), "nvidia")
    wanted = [posixpath.join(nvidia, f, "lib") for f in GPU_STEP_FOLDERS]
    framework = (tensorflow.get("libraries") or {}).get(FRAMEWORK)
    if isinstance(framework, dict):
        dirs = expanded_runpath(fs, tensorflow, FRAMEWORK, framework)
        path = posixpath.join(str(tensorflow["site_packages"]), "tensorflow", FRAMEWORK)
        return dirs, all(w in dirs for w in wanted), f"RUNPATH of {path}"
    from tfdoctor import knowledge

    present = [str(d["dir"]) for d in wheel_dirs if str(d["dir"]).startswith(nvidia + "/")]
    version = tensorflow.get("version")
    wanted_mm = version_tuple(version)[:2]
    for row in knowledge.table("tensorflow_builds").rows:
        if version_tuple(row["tensorflow"])[:2] == wanted_mm:
            reaches = row.get("runpath_by_build", {}).get(version, row.get("runpath", []))
            dirs = [d for d in present if posixpath.basename(posixpath.dirname(d)) in reaches]
            return dirs, all(f in reaches for f in GPU_STEP_FOLDERS), (
                f"tensorflow_builds row {row['tensorflow']} (the framework's RUNPATH could not be read)")
    if not wanted_mm or wanted_mm >= RUNPATH_SINCE:
        return present, True, "not in tensorflow_builds: assumed to carry the pip wheel folders"
    return [], False, f"not in tensorflow_builds: before {'.'.join(map(str, RUNPATH_SINCE))}, no RUNPATH"


def stub_runpath(fs: RootedFs, tensorflow: dict[str, Any], wheel_dirs: list[dict[str, str | None]],
                 runpath: list[str]) -> list[str]:
    """Where CUPTI (the profiler) and NCCL (collectives) are searched: every main library's RUNPATH, the
    framework's first. Bazel puts a wheel folder on the RUNPATH of the library that links that wheel's loader
    stub (2.14-2.19: cuda_cupti only on libtensorflow_cc.so.2's), and those libraries are opened from there,
    not by the GPU-registration check that needs the framework's. Without readable files: every pip folder."""
    libraries = tensorflow.get("libraries") or {}
    if not isinstance(libraries.get(FRAMEWORK), dict):
        nvidia = posixpath.join(str(tensorflow["site_packages"]), "nvidia") + "/"
        return list(dict.fromkeys([*runpath, *(str(d["dir"]) for d in wheel_dirs if str(d["dir"]).startswith(nvidia))]))
    dirs = list(runpath)
    for name, dynamic in libraries.items():
        if name != FRAMEWORK and isinstance(dynamic, dict):
            dirs += expanded_runpath(fs, tensorflow, name, dynamic)
    return list(dict.fromkeys(dirs))


def expanded_runpath(fs: RootedFs, tensorflow: dict[str, Any], name: str, dynamic: dict[str, Any]) -> list[str]:
    """A main library's RUNPATH as folders: $ORIGIN is the real folder of the file (as the loader takes it)."""
    from tfdoctor.facts.elf import expand_origin

    path = posixpath.join(str(tensorflow["site_packages"]), "tensorflow", name)
    origin = posixpath.dirname(fs.realpath(path) or path)
    return list(dict.fromkeys(d for d in (expand_origin(e, origin) for e in dynamic["runpath"]) if d.startswith("/")))


def nccl_linkage(tensorflow: dict[str, Any]) -> tuple[str, str] | None:
    """("dynamic"|"static", why) as the installed framework says it, or None when it cannot be read.

    A framework that dlopens NCCL names it: libnccl.so.2 in NEEDED or a nccl folder on its RUNPATH (2.21);
    the 2.14-2.20 wheels compile NCCL in (their libraries carry its "NCCL version" banner) and name neither."""
    framework = (tensorflow.get("libraries") or {}).get(FRAMEWORK)
    if not isinstance(framework, dict):
        return None
    build_info = tensorflow.get("build_info")
    if isinstance(build_info, dict) and build_info.get("is_cuda_build") is False:
        return "none", "not a CUDA build"
    if any(n.startswith("libnccl.so") for n in framework["needed"]):
        return "dynamic", f"{FRAMEWORK} NEEDs libnccl.so"
    reaching = [e for e in framework["runpath"] if e.rstrip("/").endswith("nccl/lib")]
    if reaching:
        return "dynamic", f"{FRAMEWORK}'s RUNPATH names {reaching[0]}"
    return "static", f"{FRAMEWORK} neither NEEDs libnccl.so nor names a nccl folder on its RUNPATH"


def conda_environment(machine: Machine, fs: RootedFs) -> dict[str, Any] | None:
    """The active conda environment ($CONDA_PREFIX): its lib/ (where conda's cudatoolkit and cudnn put
    the libraries; a conda Python's RUNPATH does not reach a dlopen from TensorFlow) and the
    etc/conda/activate.d scripts that set LD_LIBRARY_PATH for it (TensorFlow 2.12's install guide)."""
    prefix = machine.environ.get("CONDA_PREFIX")
    if not prefix or not prefix.startswith("/"):
        return None
    prefix = prefix.rstrip("/") or "/"
    folder = posixpath.join(prefix, "etc", "conda", "activate.d")
    scripts = []
    for name in sorted(fs.listdir(folder)):
        text = fs.read_text(posixpath.join(folder, name)) or ""
        scripts.append({"path": posixpath.join(folder, name), "sets_ld_library_path": "LD_LIBRARY_PATH" in text})
    return {"prefix": prefix, "lib": posixpath.join(prefix, "lib"), "activate_d": scripts}


def _read_ld_cache(machine: Machine, fs: RootedFs, arch: str) -> dict[str, Any] | Unknown:
    from tfdoctor.facts.parse_ldcache import entries_for_machine, parse_ld_so_cache

    data = fs.read_bytes("/etc/ld.so.cache")
    if data is None:
        return Unknown("/etc/ld.so.cache does not exist or is not readable")
    try:
        layout, entries = parse_ld_so_cache(data)
    except (ValueError, IndexError) as exc:  # struct.error is a ValueError
        return Unknown(f"/etc/ld.so.cache not understood: {exc}")
    kept = [e for e in entries_for_machine(entries, arch) if _LIBRARY_FILE.match(e.soname)]
    return {"path": "/etc/ld.so.cache", "format": layout, "entries": [
        {"soname": e.soname, "path": e.path, "flags": e.flags_text} for e in kept]}


def _cudnn_header(fs: RootedFs, lib_dir: str, arch: str) -> str | None:
    parent = posixpath.dirname(lib_dir.rstrip("/"))
    candidates = [posixpath.join(parent, "include", "cudnn_version.h")]
    if lib_dir.startswith(("/usr/lib", "/lib")):
        multiarch = MULTIARCH.get(arch, "")
        candidates += ["/usr/include/cudnn_version.h"]
        candidates += [f"/usr/include/{multiarch}/{e}" for e in fs.listdir(f"/usr/include/{multiarch}")
                       if e.startswith("cudnn_version")]
    for path in candidates:
        text = fs.read_text(path)
        if text:
            version = parse_cudnn_header(text)
            if version:
                return version
    return None


# A hostile LD_LIBRARY_PATH can hold thousands of entries: the first ones are the ones the loader tries.
LD_LIBRARY_PATH_DIRS_KEPT = 256


def ld_library_path_dirs(fs: RootedFs, entries: list[str]) -> list[dict[str, str]]:
    """Each LD_LIBRARY_PATH entry as this node sees it: a directory, missing, not a directory, or relative
    (the loader takes it from the current folder). Fleets compare these: a folder on every node's path that
    one node lacks is named there (issue 37), where the variable's string alone is the same everywhere."""
    dirs: list[dict[str, str]] = []
    for entry in dict.fromkeys(entries[:LD_LIBRARY_PATH_DIRS_KEPT]):
        if not entry.startswith("/"):
            state = "relative"
        elif fs.is_dir(entry):
            state = "directory"
        else:
            state = "not a directory" if fs.exists(entry) else "missing"
        dirs.append({"dir": entry, "state": state})
    return dirs


@probe("cuda_libs", timeout=3.0)
def probe_cuda_libs(machine: Machine) -> dict[str, Any]:
    from tfdoctor.facts.probes.nvidia_presence import NO_NVIDIA, nvidia_present

    fs = RootedFs(machine)
    arch = _architecture(machine)
    ld_library_path = [d for d in machine.environ.get("LD_LIBRARY_PATH", "").split(":") if d]
    packages = site_packages(machine, fs)
    tensorflow = _tensorflow(fs, packages)
    if not nvidia_present(machine):
        # No GPU: nothing the loader finds matters, and the pre-job hook skips the ELF reads.
        return {"arch": arch, "ld_library_path": ld_library_path,
                "ld_library_path_dirs": ld_library_path_dirs(fs, ld_library_path), "site_packages": packages,
                "tensorflow": tensorflow, "libraries": Unknown(NO_NVIDIA)}
    if tensorflow:
        witness(fs, tensorflow)
    runpath: list[str] = []
    wheel_dirs: list[dict[str, str | None]] = []
    for folder in packages:
        wheel_dirs += wheel_lib_dirs(fs, folder)
    stubs: list[str] = []
    if tensorflow:
        runpath, tensorflow["runpath_finds_wheels"], tensorflow["runpath_rule"] = loader_runpath(
            fs, tensorflow, wheel_dirs)
        stubs = stub_runpath(fs, tensorflow, wheel_dirs, runpath)
    ld_cache = _read_ld_cache(machine, fs, arch)
    cache_pairs = [] if isinstance(ld_cache, Unknown) else [(e["soname"], e["path"]) for e in ld_cache["entries"]]
    defaults = default_dirs(arch)
    kits = toolkits(machine, fs)

    scan: list[tuple[str, str]] = [(d, "LD_LIBRARY_PATH") for d in ld_library_path]
    scan += [(str(d["dir"]), "pip wheel") for d in wheel_dirs]
    scan += [(posixpath.dirname(p), "ld.so.cache") for _, p in cache_pairs]
    scan += [(d, "default folder") for d in defaults]
    scan += [(posixpath.join(k["path"], sub), f"toolkit {k['path']}") for k in kits for sub in TOOLKIT_LIB_SUBDIRS]
    conda = conda_environment(machine, fs)
    if conda is not None:
        scan += [(str(conda["lib"]), "conda env")]
    scan += [(d, "well-known") for d in ("/usr/local/nvidia/lib64", "/usr/lib/wsl/lib")]
    wheel_version = {str(d["dir"]): d["version"] for d in wheel_dirs}

    libraries: dict[str, Any] = {key: {"files": [], "resolved": {}} for key in LIBRARIES}
    listed: set[str] = set()
    for folder, origin in scan:
        if folder in listed:
            continue
        listed.add(folder)
        for filename in fs.listdir(folder):
            match = _LIBRARY_FILE.match(filename)
            if not match:
                continue
            key = match.group(1)
            path = posixpath.join(folder, filename)
            real = fs.realpath(path)
            record: dict[str, Any] = {
                "name": filename, "dir": folder, "origin": origin,
                "target": real if real and real != path else None, "broken": fs.is_broken_link(path),
                "file_version": file_version(posixpath.basename(real or filename)),
                "wheel_version": wheel_version.get(folder),
            }
            if key == "cudnn":
                record["header_version"] = _cudnn_header(fs, folder, arch)
            libraries[key]["files"].append(record)
    for key, entry in libraries.items():
        names = sorted({f["name"] for f in entry["files"]} | {s for s, _ in cache_pairs
                                                             if matches_stem(s, LIBRARIES[key])})
        searched = stubs if key in STUB_LOADED else runpath
        for name in names:
            found = loader_candidates(name, ld_library_path, searched, cache_pairs, defaults, fs.exists)
            if found:
                entry["resolved"][name] = found[0]
                if len(found) > 1:
                    entry["resolved"][name]["others"] = [f["path"] for f in found[1:]]
    return {
        "arch": arch,
        "ld_library_path": ld_library_path,
        "ld_library_path_dirs": ld_library_path_dirs(fs, ld_library_path),
        "runpath": runpath,
        "stub_runpath": stubs,
        "ld_cache": ld_cache,
        "default_dirs": defaults,
        "site_packages": packages,
        "wheel_dirs": wheel_dirs,
        "toolkits": kits,
        "tensorflow": tensorflow,
        "conda": conda,
        "libraries": libraries,
    }
