"""CUDA — the libraries TensorFlow dlopens, as the loader resolves them; CUDA_VISIBLE_DEVICES; the JIT cache.

Library names follow TensorFlow's loader (tsl dso_loader): libcudart.so.12, libcublas.so.12,
libcublasLt.so.12, libcufft.so.11, libcusolver.so.11, libcusparse.so.12, libcudnn.so.<cuDNN major>,
libnccl.so.2, libcuda.so.1 for a CUDA 12 build (the CUDA 11 names end in .11.0, .11, .10, .11, .11).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tfdoctor.derive.gpu_inventory import all_gpus, driver_loaded
from tfdoctor.derive.tf_build import (
    TfBuild,
    arch_support,
    cuda_gpu_setup,
    version_tuple,
    wanted_sonames,
)
from tfdoctor.facts import Facts
from tfdoctor.facts.parse import count
from tfdoctor.model import AdminFix, EnvFix, Finding, Severity, set_env
from tfdoctor.registry import check

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import Any

# The library and release derivations are imported past each check's `cuda_gpu_setup` gate: a CPU-only
# TensorFlow (most pre-job hook hosts) never pays for them.

# The libraries every GPU step needs (CUPTI has its own family; NCCL only matters for several GPUs).
CORE_LIBRARIES = ("cuda", "cudart", "cublas", "cublasLt", "cudnn", "cufft", "cusolver", "cusparse", "nccl")
# The minimum (major, minor) TensorFlow needs of each library, from the build or its and-cuda pins.
VERSIONED = ("cudart", "cublas", "cudnn")
JIT_CACHE_MIN_BYTES = 1 << 31  # 2 GiB: TensorFlow's PTX JITs to several hundred MB per architecture
JIT_CACHE_RECOMMENDED = str(4 * (1 << 30))  # 4 GiB, the largest value the driver accepts


def _install_fix(facts: Facts, build: TfBuild, keys: list[str], names: list[str]) -> AdminFix:
    from tfdoctor.derive.container import driver_library_fix

    steps: list[str] = []
    prose: list[str] = []
    if "cuda" in keys:
        commands, about = driver_library_fix(facts)  # the host's driver, or the flag of this container's runtime
        steps += commands
        prose.append(about)
    others = [k for k in keys if k != "cuda"]
    if len(others) > 1 and build.pins and build.version and build.dist == "tensorflow":
        steps.append(f"pip install 'tensorflow[and-cuda]=={build.version}'   # every pinned nvidia-* wheel")
    else:
        for key in others:
            hint = build.install_hint(key)  # a pip command, or NVIDIA's installers in words when no wheel exists
            into = steps if hint.startswith("pip ") else prose
            if hint not in into:
                into.append(hint)
    return AdminFix(f"Install {_listing(names, verb=False)} for CUDA {build.cuda_version}", tuple(steps),
                    text="; ".join(prose))


def required_version(build: TfBuild, key: str) -> tuple[tuple[int, ...], str]:
    """(major, minor) the build needs of a library and where that figure comes from."""
    if key == "cudart":
        return version_tuple(build.cuda_version)[:2], f"TensorFlow built with CUDA {build.cuda_version}"
    pin = build.pin_for(key)
    if pin:
        return version_tuple(pin[1])[:2], f"tensorflow[and-cuda] pins {pin[0]}=={pin[1]}"
    if key == "cudnn":
        from tfdoctor.derive.cuda_releases import cudnn_built_with

        known = cudnn_built_with(build.version, build.cudnn_version)
        if known and len(version_tuple(build.cudnn_version)) < 2:
            # build_info gives only the major: the release's tested configuration gives the minor.
            return version_tuple(known[0])[:2], (f"TensorFlow {build.version} was built with cuDNN {known[0]} "
                                                 f"({known[1].table} knowledge table)")
        return version_tuple(build.cudnn_version)[:2], f"TensorFlow built with cuDNN {build.cudnn_version}"
    return version_tuple(build.cuda_version)[:2], f"TensorFlow built with CUDA {build.cuda_version}"


@check("CUDA001", "cuda-library-not-resolvable", Severity.ERROR)
def cuda_library_not_resolvable(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Resolves each library a CUDA build of TensorFlow dlopens (libcuda, cudart, cuBLAS, cuBLASLt, cuDNN,
    cuFFT, cuSOLVER, cuSPARSE, NCCL) the way the dynamic loader will: LD_LIBRARY_PATH, TensorFlow's
    RUNPATH, /etc/ld.so.cache, the default folders. TensorFlow's RUNPATH is read from the installed
    libtensorflow_framework.so.2 itself (its loader's dlopen searches that file's RUNPATH: 2.16.1
    reaches only nvidia/cuda_runtime/lib, 2.16.2 every wheel folder); only when that file cannot be
    read does the build's row of tfdoctor/knowledge/tensorflow_builds.toml stand in. The names come
    from the build's CUDA generation (tfdoctor/knowledge/cuda_sonames.toml). A missing libnccl.so.2
    is a warning only when the build dlopens NCCL (2.21: nvidia/nccl/lib on the framework's RUNPATH;
    2.14–2.20 and older compile NCCL in) and the job has several visible GPUs or workers
    (TF_CONFIG, WORLD_SIZE, SLURM_NTASKS, …): one GPU and one worker never call it. A library whose
    wheel folder only another TensorFlow library's RUNPATH names, in a build whose framework reaches
    cuDNN's wheel (2.21's cuSOLVER, named by libtensorflow_cc.so.2 alone), is a warning: no GPU run has
    shown that it fails there.

    Why is this bad?
    TensorFlow logs "Could not load dynamic library 'libcudnn.so.8'" once, skips every GPU and runs
    on the CPU, often 10-50× slower, without failing.

    Example:
    CUDA 12.2 in /usr/local/cuda-12.2/lib64, which is neither on LD_LIBRARY_PATH nor in ld.so.conf.

    Fix:
    When the library is on disk in a folder the loader does not search, put that folder first on
    LD_LIBRARY_PATH. When it is nowhere, install it as the TensorFlow build pins it
    (`pip install 'tensorflow[and-cuda]==<version>'`, or the nvidia-* wheel).

    Fix safety:
    Safe: the prepended folder holds the very library TensorFlow asks for. Installing is manual.
    """
    build = cuda_gpu_setup(facts)
    if build is None:
        _not_checked_without_gpu(facts)
        return
    from tfdoctor.derive.container import driver_library_withheld
    from tfdoctor.derive.resolvable_libraries import LibraryView, prefer_copy, put_folder_first

    wanted = wanted_sonames(build)
    driver_present = driver_loaded(facts)
    off_path: dict[str, list[tuple[str, list[str]]]] = {}  # folder -> [(library, copies found)]
    missing: list[tuple[str, str]] = []  # (key, library)
    broken: list[str] = []
    lib_path: list[str] = []
    nccl_evidence: dict[str, Any] = {}
    for key in CORE_LIBRARIES:
        name = wanted.get(key)
        if name is None or (key == "cuda" and not driver_present):
            continue  # no driver at all: DRV001 says so
        if key == "cuda" and driver_library_withheld(facts):
            continue  # the container runtime withholds it: CTR001/CTR002 name the runtime's flag
        if key == "nccl":
            nccl_evidence = _nccl_matters(build, facts)
            if not nccl_evidence.pop("matters"):
                continue  # one GPU and one worker, or NCCL compiled in: nothing will dlopen it
        view = LibraryView(facts, key)
        lib_path = view.ld_library_path
        if view.resolved(name):
            continue
        broken += [c.path for c in view.broken(name)]
        copies = view.unresolvable(name)
        if copies:
            best = prefer_copy(copies, required_version(build, key)[0] if key in VERSIONED else ())
            off_path.setdefault(best.dir, []).append((name, [c.path for c in copies]))
        else:
            missing.append((key, name))
    conda = facts.peek("cuda_libs.conda")
    conda_lib = conda.get("lib") if isinstance(conda, dict) else None
    runpath_note = _runpath_note(facts)
    for folder, found in off_path.items():
        names = [name for name, _ in found]
        fixes: tuple[EnvFix | AdminFix, ...] = (put_folder_first(folder, f"it holds {_listing(names, verb=False)}"),)
        if folder == conda_lib:
            # The conda way: the environment sets it on activation (TensorFlow 2.12's install guide).
            fixes += (AdminFix("Or set it whenever the conda environment is activated", (
                "mkdir -p $CONDA_PREFIX/etc/conda/activate.d",
                "echo 'export LD_LIBRARY_PATH=$CONDA_PREFIX/lib/:$LD_LIBRARY_PATH' >> "
                "$CONDA_PREFIX/etc/conda/activate.d/env_vars.sh")),)
        evidence: dict[str, Any] = {"libraries": names, "folder": folder, "found_at": dict(found),
                                    "cuda_libs.ld_library_path": lib_path}
        unproven = False
        if runpath_note and "/site-packages/nvidia/" in folder:
            evidence["runpath"] = runpath_note
            stubs = facts.peek("cuda_libs.stub_runpath")
            if isinstance(stubs, list) and folder in stubs:
                # 2.21's cuSOLVER: libtensorflow_cc.so.2 names the folder, the framework does not.
                evidence["on_another_librarys_runpath"] = (
                    "another TensorFlow library's RUNPATH names this folder; the GPU check in "
                    "libtensorflow_framework.so.2 does not search it")
                # A framework that reaches cuDNN's wheel was built to find its wheels; that it misses this one
                # folder, which another of its libraries names, is not proven to fail on a GPU (2.21; no public
                # report either way). A framework that reaches none of them is (2.16.1: tensorflow#63362).
                unproven = _framework_reaches(facts, "cudnn")
        if unproven:
            evidence["unverified"] = ("no run on a GPU has shown whether TensorFlow finds it there; if the log says "
                                      "\"Could not load dynamic library\" for it, apply the fix")
            yield Finding(
                f"{_listing(names, verb=False)} may not be found by TensorFlow: only another of its libraries' "
                f"RUNPATH names {folder}, not libtensorflow_framework.so.2's",
                evidence=evidence, fixes=fixes, severity=Severity.WARNING)
            continue
        yield Finding(
            f"{_listing(names)} not resolvable by the loader, but {'it exists' if len(names) == 1 else 'they exist'} "
            f"in {folder}: TensorFlow will not use the GPU",
            evidence=evidence, fixes=fixes)
    nccl_missing = [m for m in missing if m[0] == "nccl"]
    for severity, group in ((None, [m for m in missing if m[0] != "nccl"]), (Severity.WARNING, nccl_missing)):
        if not group:
            continue
        names = [name for _, name in group]
        evidence: dict[str, Any] = {"libraries": names, "cuda_libs.ld_library_path": lib_path}
        if broken:
            evidence["broken_links"] = broken
        if severity:
            evidence.update(nccl_evidence)
        yield Finding(
            f"{_listing(names)} not installed anywhere tfdoctor looked: "
            + ("multi-GPU collectives will fail" if severity else "TensorFlow will not use the GPU")
            + (f" (broken link{'s' if len(broken) > 1 else ''}: {', '.join(broken)})" if broken else ""),
            evidence=evidence, fixes=(_install_fix(facts, build, [k for k, _ in group], names),), severity=severity)


def _framework_reaches(facts: Facts, wheel: str) -> bool:
    """Whether libtensorflow_framework.so.2's own RUNPATH (cuda_libs.runpath) reaches nvidia/<wheel>/lib."""
    runpath = facts.peek("cuda_libs.runpath")
    return isinstance(runpath, list) and any(
        isinstance(d, str) and d.endswith(f"/site-packages/nvidia/{wheel}/lib") for d in runpath)


def _runpath_note(facts: Facts) -> str | None:
    """Why the wheels next to TensorFlow are not on its RUNPATH, when that is the reason."""
    tensorflow = facts.peek("cuda_libs.tensorflow")
    if not isinstance(tensorflow, dict) or tensorflow.get("runpath_finds_wheels") is not False:
        return None
    return (f"TensorFlow {tensorflow.get('version')}'s RUNPATH does not reach every site-packages/nvidia/*/lib "
            f"folder its loader needs ({tensorflow.get('runpath_rule')}): those must be on LD_LIBRARY_PATH")


def _nccl_matters(build: TfBuild, facts: Facts) -> dict[str, Any]:
    """Whether a missing libnccl.so.2 can hurt this job: the build dlopens it and the job has several GPUs
    or workers. How the build links NCCL is read from the installed libtensorflow_framework.so.2 (it
    names nvidia/nccl/lib on its RUNPATH, or libnccl.so.2 in NEEDED, when it loads NCCL); when that file
    cannot be read, from the release's row of tensorflow_builds (a release the table lacks is assumed to
    load it)."""
    from tfdoctor.derive.cuda_releases import tensorflow_release
    from tfdoctor.derive.job_layout import collective_layout

    tensorflow = facts.peek("cuda_libs.tensorflow")
    read = tensorflow.get("nccl_linkage") if isinstance(tensorflow, dict) else None
    evidence: dict[str, Any] = {"matters": False}
    if read in ("static", "dynamic"):
        linkage = read
        evidence.update(nccl_linkage=linkage, nccl_linkage_rule=tensorflow.get("nccl_linkage_rule"))
    else:
        release = tensorflow_release(build.version)
        linkage = release.values.get("nccl") if release else None
        evidence["nccl_linkage"] = linkage or "unknown (assumed dynamic)"
        if release is not None:
            evidence["knowledge"] = release.evidence()
    if linkage == "static":
        return evidence
    layout = collective_layout(facts)
    evidence.update(layout.evidence)
    evidence["matters"] = layout.uses_collectives is True
    return evidence


def _not_checked_without_gpu(facts: Facts) -> None:
    """A CUDA build on a host without a GPU (a login node): the libraries are resolved on the GPU node, so
    the check is not "passed" here; PKG018 judges the nvidia-* wheels against the build meanwhile."""
    from tfdoctor.derive.tf_build import gpu_host, tensorflow_build
    from tfdoctor.facts import NotChecked

    build = tensorflow_build(facts)
    if build is not None and build.is_cuda_build and not gpu_host(facts):
        raise NotChecked("no NVIDIA GPU or driver on this host: the CUDA libraries are resolved where the job "
                         "runs (PKG018 compares the nvidia-* wheels with the build here)")


def _listing(names: list[str], verb: bool = True) -> str:
    text = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return f"{text} {'is' if len(names) == 1 else 'are'}" if verb else text


@check("CUDA002", "cuda-library-older-than-build", Severity.ERROR)
def cuda_library_older_than_build(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Compares the version of the cuDNN, cuBLAS and CUDA runtime the loader resolves with what the
    TensorFlow build needs: the same major version and at least the build's minor version (the
    CUDA version of build_info.py, or the nvidia-* pins of the `and-cuda` extra).

    Why is this bad?
    cuDNN and cuBLAS are backward compatible within a major version only: an older minor lacks
    symbols or engines TensorFlow calls, which shows up as "DNN library is not found",
    "CUDNN_STATUS_NOT_INITIALIZED" or a failed cuBLAS handle at the first convolution or matmul.

    Example:
    TensorFlow 2.15 (cuDNN 8.9 pinned) resolving /usr/lib/x86_64-linux-gnu/libcudnn.so.8 → 8.6.0.

    Fix:
    When a new-enough copy is on disk, put its folder first on LD_LIBRARY_PATH; otherwise install
    the pinned version.

    Fix safety:
    Safe: the prepended folder holds a compatible version of the same library.
    """
    build = cuda_gpu_setup(facts)
    if build is None:
        _not_checked_without_gpu(facts)
        return
    from tfdoctor.derive.resolvable_libraries import LibraryView, prefer_copy, put_folder_first, satisfies

    wanted = wanted_sonames(build)
    for key in VERSIONED:
        name = wanted.get(key)
        if name is None:
            continue
        view = LibraryView(facts, key)
        resolved = view.resolved(name)
        if not resolved:
            continue
        copy = view.copy_at(resolved["path"])
        need, source = required_version(build, key)
        if copy is None or copy.version is None or satisfies(copy.version, need):
            continue
        better = [c for c in view.on_disk(name) if not c.broken and satisfies(c.version, need)
                  and c.path != copy.path and version_tuple(c.version)]
        evidence = {"library": name, "resolved": resolved["path"], "resolved_version": copy.version,
                    "required": ".".join(map(str, need)), "required_by": source}
        if better:
            best = prefer_copy(better, need)
            fix: EnvFix | AdminFix = put_folder_first(best.dir, f"it holds {name} {best.version}")
        else:
            fix = _install_fix(facts, build, [key], [name])
        yield Finding(
            f"{name} resolves to version {copy.version} ({resolved['path']}), older than the "
            f"{'.'.join(map(str, need))} this TensorFlow needs ({source})",
            evidence=evidence, fixes=(fix,))


@check("CUDA003", "cuda-library-shadowed-by-other-copy", Severity.WARNING)
def cuda_library_shadowed(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds a library with several loader-visible copies where the one the loader takes first is not
    the version the TensorFlow build pins (typically a toolkit folder on LD_LIBRARY_PATH shadowing
    the pip nvidia-* wheel TensorFlow was installed with).

    Why is this bad?
    LD_LIBRARY_PATH comes before TensorFlow's own RUNPATH, so an unrelated CUDA on it silently
    replaces the tested combination: different kernels and heuristics at best, version mismatches
    between cuBLAS and cuBLASLt or cuDNN's sub-libraries at worst.

    Example:
    LD_LIBRARY_PATH=/usr/local/cuda-12.1/lib64 while tensorflow[and-cuda] installed
    nvidia-cublas-cu12 12.3.4.1.

    Fix:
    Put the pinned copy's folder first on LD_LIBRARY_PATH (or drop the other folder from it).

    Fix safety:
    Safe: the prepended folder holds the version TensorFlow was tested with.
    """
    build = cuda_gpu_setup(facts)
    if build is None:
        return
    from tfdoctor.derive.resolvable_libraries import LibraryView, put_folder_first, satisfies

    wanted = wanted_sonames(build)
    for key in ("cudart", "cublas", "cublasLt", "cudnn", "cufft", "cusolver", "cusparse", "nccl"):
        name, pin = wanted.get(key), build.pin_for(key)
        if name is None or pin is None:
            continue
        view = LibraryView(facts, key)
        resolved = view.resolved(name)
        if not resolved or not resolved.get("others"):
            continue
        first = view.copy_at(resolved["path"])
        pinned = version_tuple(pin[1])[:2]
        if first is None or not version_tuple(first.version) or version_tuple(first.version)[:2] == pinned:
            continue
        if key in VERSIONED and not satisfies(first.version, required_version(build, key)[0]):
            continue  # CUDA002 reports it
        matching = [c for c in (view.copy_at(p) for p in resolved["others"])
                    if c is not None and version_tuple(c.version)[:2] == pinned]
        if not matching:
            continue
        target = matching[0]
        yield Finding(
            f"{name} resolves to {resolved['path']} ({first.version}, via {resolved['via']}) ahead of "
            f"{target.path} ({target.version}), the version tensorflow[and-cuda] pins ({pin[0]}=={pin[1]})",
            evidence={"library": name, "resolved": resolved["path"], "resolved_version": first.version,
                      "shadowed": resolved["others"], "pinned": f"{pin[0]}=={pin[1]}"},
            fixes=(put_folder_first(target.dir, f"it holds the pinned {name}"),))


# -- CUDA_VISIBLE_DEVICES -------------------------------------------------------------------------

def _entries(setting: str) -> list[str]:
    return [e.strip() for e in setting.split(",")]


def _known_uuids(facts: Facts) -> tuple[list[str], list[str]]:
    gpus, migs = [], []
    for gpu in all_gpus(facts):
        if gpu.uuid:
            gpus.append(gpu.uuid)
        raw = gpu.raw if isinstance(gpu.raw, dict) else {}
        recorded = raw.get("mig_devices")
        migs += [m for m in recorded if isinstance(m, str)] if isinstance(recorded, list) else []
    return gpus, migs


@check("CUDA004", "cuda-visible-devices-names-missing-device", Severity.ERROR)
def cuda_visible_devices_names_missing_device(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Matches every entry of CUDA_VISIBLE_DEVICES (indices, GPU-… and MIG-… UUIDs or unique
    prefixes) against the GPUs NVML lists.

    Why is this bad?
    CUDA stops reading the list at the first entry it cannot match: that device and every one after
    it are hidden. "0,1,2,3" copied from an 8-GPU node to a 2-GPU node, or a UUID from another
    machine, leaves the job with fewer GPUs than planned, or none.

    Example:
    CUDA_VISIBLE_DEVICES=2,3 on a host with GPUs 0 and 1.

    Fix:
    List only devices this host has (the scheduler's allocation, e.g. Slurm's, usually sets it).

    Fix safety:
    Manual: which GPUs a job should use is the user's or the scheduler's choice.
    """
    setting = facts.env("CUDA_VISIBLE_DEVICES")
    if not setting or not setting.strip():
        return
    gpus = all_gpus(facts)
    if not gpus:
        return
    indices = {g.index for g in gpus}
    uuids, migs = _known_uuids(facts)
    for position, entry in enumerate(_entries(setting)):
        if not entry:
            break
        if re.fullmatch(r"-?[0-9]{1,9}", entry):  # ASCII digits only: "²".isdigit(), but int() refuses it
            ok = int(entry) in indices
        else:
            ok = any(u == entry or u.startswith(entry) for u in [*uuids, *migs])
        if ok:
            continue
        hidden = _entries(setting)[position:]
        yield Finding(
            f"CUDA_VISIBLE_DEVICES entry {entry!r} matches no GPU of this host ({len(gpus)} GPU(s)): CUDA "
            f"ignores it and every entry after it ({', '.join(hidden)})",
            evidence={"env.CUDA_VISIBLE_DEVICES": setting, "nvml.devices": sorted(indices)},
            fixes=(AdminFix("List only this host's GPUs in CUDA_VISIBLE_DEVICES", ("nvidia-smi -L  # their UUIDs",),
                            text=f"valid indices here: {', '.join(str(i) for i in sorted(indices))} (or their "
                                 "GPU- UUIDs)"),))
        return


@check("CUDA005", "cuda-visible-devices-hides-every-gpu", Severity.WARNING)
def cuda_visible_devices_hides_every_gpu(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds CUDA_VISIBLE_DEVICES set to an empty value (or "-1") on a host with NVIDIA GPUs and a
    CUDA build of TensorFlow.

    Why is this bad?
    An empty list hides every GPU: TensorFlow runs on the CPU without an error. It is sometimes
    deliberate, more often a job script expanding an unset variable.

    Example:
    CUDA_VISIBLE_DEVICES=$GPU_IDS with GPU_IDS unset.

    Fix:
    Unset CUDA_VISIBLE_DEVICES, or set the GPUs the job should use.

    Fix safety:
    Manual: hiding GPUs may be intended.
    """
    setting = facts.env("CUDA_VISIBLE_DEVICES")
    if setting is None or setting.strip() not in ("", "-1"):
        return
    if cuda_gpu_setup(facts) is None:
        return
    gpus = all_gpus(facts)
    if not gpus:
        return
    yield Finding(
        f"CUDA_VISIBLE_DEVICES={setting!r} hides all {len(gpus)} GPU(s): TensorFlow will run on the CPU "
        "(ignore this if it is intended)",
        evidence={"env.CUDA_VISIBLE_DEVICES": setting, "nvml.devices": [g.index for g in gpus]},
        fixes=(AdminFix("Unset CUDA_VISIBLE_DEVICES or list the GPUs to use",
                        ("unset CUDA_VISIBLE_DEVICES", "export CUDA_VISIBLE_DEVICES=0  # for example")),))


@check("CUDA006", "cuda-visible-devices-mixes-index-and-uuid", Severity.WARNING)
def cuda_visible_devices_mixes_forms(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds CUDA_VISIBLE_DEVICES mixing indices and GPU-/MIG- UUIDs.

    Why is this bad?
    Indices follow CUDA's enumeration order (fastest first unless CUDA_DEVICE_ORDER=PCI_BUS_ID),
    UUIDs name one board: a mix is easy to get wrong and can name one GPU twice. A MIG UUID
    combined with anything else exposes only the first MIG instance.

    Example:
    CUDA_VISIBLE_DEVICES=0,GPU-8c4e2f19-…

    Fix:
    Use one form, preferably UUIDs (nvidia-smi -L lists them).

    Fix safety:
    Manual: which GPUs a job should use is the user's choice.
    """
    setting = facts.env("CUDA_VISIBLE_DEVICES")
    if not setting:
        return
    entries = [e for e in _entries(setting) if e]
    numeric = [e for e in entries if e.lstrip("-").isdigit()]
    named = [e for e in entries if not e.lstrip("-").isdigit()]
    if numeric and named:
        yield Finding(
            f"CUDA_VISIBLE_DEVICES={setting!r} mixes indices ({', '.join(numeric)}) and UUIDs "
            f"({', '.join(named)})",
            evidence={"env.CUDA_VISIBLE_DEVICES": setting},
            fixes=(AdminFix("Use one form in CUDA_VISIBLE_DEVICES",
                            ("nvidia-smi -L  # lists every GPU with its UUID",)),))


# -- PTX JIT cache --------------------------------------------------------------------------------

def jit_gpus(facts: Facts, build: TfBuild) -> list[Any]:
    """GPUs the driver JIT-compiles TensorFlow's PTX for; not those whose architecture that PTX cannot
    target at all (DRV003 reports them: a cache cannot help)."""
    from tfdoctor.derive.cuda_releases import architecture_gap

    return [g for g in all_gpus(facts) if g.compute_capability
            and arch_support(g.compute_capability, build.compute_capabilities) == "ptx"
            and architecture_gap(g.compute_capability, build.cuda_version, build.compute_capabilities) is None]


@check("CUDA007", "cuda-jit-cache-too-small", Severity.WARNING)
def cuda_jit_cache_too_small(facts: Facts) -> Iterator[Finding]:
    """What it does:
    When a GPU's architecture is not among the binaries of the TensorFlow build (so the driver must
    JIT-compile TensorFlow's PTX at start-up), checks that the CUDA JIT cache is enabled and large
    enough: CUDA_CACHE_DISABLE unset, CUDA_CACHE_MAXSIZE at least 2 GiB.

    Why is this bad?
    Compiling TensorFlow's kernels from PTX takes minutes. With the cache off, or smaller than the
    compiled kernels (the driver's default is a few hundred MB), every process start pays it again.

    Example:
    A compute capability 9.0 GPU with a wheel built for sm_80 and compute_80, CUDA_CACHE_MAXSIZE unset.

    Fix:
    Set CUDA_CACHE_MAXSIZE=4294967296 (4 GiB, the largest the driver accepts) and unset
    CUDA_CACHE_DISABLE; put CUDA_CACHE_PATH on a persistent disk in containers.

    Fix safety:
    Safe: the cache changes start-up time and disk use, never results.
    """
    build = cuda_gpu_setup(facts)
    if build is None or not build.compute_capabilities:
        return
    gpus = jit_gpus(facts, build)
    if not gpus:
        return
    disabled = facts.env("CUDA_CACHE_DISABLE") == "1"
    raw = facts.env("CUDA_CACHE_MAXSIZE")
    size = count(raw) if raw else None
    if not disabled and size is not None and size >= JIT_CACHE_MIN_BYTES:
        return
    changes = [set_env("CUDA_CACHE_MAXSIZE", JIT_CACHE_RECOMMENDED)]
    if disabled:
        changes.append(set_env("CUDA_CACHE_DISABLE", "0"))
    state = "disabled (CUDA_CACHE_DISABLE=1)" if disabled else (
        f"limited to {size} bytes" if size is not None else "at the driver's default size")
    yield Finding(
        f"GPU {gpus[0].name} (compute capability {gpus[0].cc_text}) needs TensorFlow's PTX JIT-compiled "
        f"at start-up, and the CUDA JIT cache is {state}",
        evidence={"gpu.compute_capability": gpus[0].cc_text,
                  "tensorflow.cuda_compute_capabilities": list(build.compute_capabilities),
                  "env.CUDA_CACHE_DISABLE": facts.env("CUDA_CACHE_DISABLE"), "env.CUDA_CACHE_MAXSIZE": raw},
        fixes=(EnvFix("Keep JIT-compiled kernels: CUDA_CACHE_MAXSIZE=4 GiB", tuple(changes)),))
