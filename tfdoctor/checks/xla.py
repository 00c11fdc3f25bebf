"""XLA — what XLA's GPU compiler needs at run time: libdevice and a ptxas as new as the build's CUDA
(XLA001–XLA099; XLA1xx belongs to the framework family)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from tfdoctor.derive import xla_libdevice, xla_ptxas
from tfdoctor.derive.tf_build import TfBuild, cuda_gpu_setup, version_tuple
from tfdoctor.facts import Facts, NotChecked, Unknown
from tfdoctor.facts.parse import DATA_DIR_FLAG
from tfdoctor.model import AdminFix, EnvFix, Finding, Severity, prepend_path, set_env
from tfdoctor.registry import check

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import Any


def _roots(facts: Facts, path: str) -> list[dict[str, Any]]:
    """CUDA roots the toolchain probe recorded: a list of records, each naming its folder."""
    roots = facts.get(path) or []
    if not isinstance(roots, list) or not all(isinstance(r, dict) and isinstance(r.get("dir"), str) for r in roots):
        raise NotChecked(f"{path} holds {str(roots)[:40]!r}, not a list of CUDA root records")
    return roots


def merge_data_dir(xla_flags: str | None, data_dir: str) -> str:
    """XLA_FLAGS with --xla_gpu_cuda_data_dir replaced by `data_dir`; the user's other flags kept."""
    kept = []
    tokens = (xla_flags or "").split()
    skip = False
    for token in tokens:
        if skip:
            skip = False
            continue
        if token == DATA_DIR_FLAG:
            skip = True
            continue
        if token.startswith(DATA_DIR_FLAG + "="):
            continue
        kept.append(token)
    return " ".join([*kept, f"{DATA_DIR_FLAG}={data_dir}"])


def data_dir_fix(facts: Facts, folder: str, why: str) -> EnvFix:
    merged = merge_data_dir(facts.env("XLA_FLAGS"), folder)
    return EnvFix(f"Point XLA at {folder} ({why})", (set_env("XLA_FLAGS", merged),))


def _nvcc_install(build: TfBuild) -> AdminFix:
    command = build.install_hint("nvcc")  # names only a wheel (or extra) that exists for this CUDA
    alternative = "install the CUDA toolkit's nvcc package and set XLA_FLAGS=--xla_gpu_cuda_data_dir=<its root>"
    if not command.startswith("pip "):  # no wheel for this CUDA: NVIDIA's installers, in words
        return AdminFix("Install libdevice and ptxas", (), text=f"{command}; or {alternative}")
    return AdminFix("Install libdevice and ptxas (the nvidia-cuda-nvcc wheel)", (command,), text=f"or {alternative}")


@check("XLA001", "xla-libdevice-not-found", Severity.ERROR)
def xla_libdevice_not_found(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Looks for nvvm/libdevice/libdevice.10.bc where the XLA of the installed TensorFlow does, in its
    order (tfdoctor/knowledge/xla_ptxas.toml [[roots]]): the folder named by --xla_gpu_cuda_data_dir in
    XLA_FLAGS, the toolkit the wheel was built against (/usr/local/cuda-X.Y, up to 2.17), /usr/local/cuda,
    /opt/cuda (2.19 on), the pip nvidia-cuda-nvcc wheel next to TensorFlow (2.14 on), tensorflow/cuda
    (2.18 on) and the environment TensorFlow is installed in, such as a conda environment's prefix (2.19
    on). XLA takes the first root with an nvvm/libdevice folder. Elsewhere on disk (other toolkits,
    /usr/lib/cuda, CONDA_PREFIX, a root only newer releases search) it looks for the fix.

    Why is this bad?
    Every XLA-compiled GPU computation (jit_compile=True, Keras 3's default jit_compile="auto" on
    GPU, many tf.function graphs) fails with "libdevice not found at ./libdevice.10.bc" after the
    warning "Can't find libdevice directory ${CUDA_DIR}/nvvm/libdevice". It is an error when something
    seen turns XLA on — TF_XLA_FLAGS auto-jit, XLA_FLAGS, or a Keras from 2.11 on, whose optimizers
    default to jit_compile=True on a GPU (Keras 3 also compiles the train step) — and an info otherwise
    (TensorFlow 2.10 and older with nothing set): a job that never compiles with XLA does not need
    libdevice (jit_compile=True in the code is `tfdoctor lint`'s to see). A libdevice only in a root the
    installed release does not search (a conda environment's nvvm/libdevice under TensorFlow 2.15, Arch
    Linux's /opt/cuda before 2.19, Debian's /usr/lib/cuda in any release) is not found.

    Example:
    TensorFlow 2.15 from pip without the nvcc wheel, a system CUDA 12.4 in /usr/local/cuda-12.4 and no
    /usr/local/cuda link (its XLA searches /usr/local/cuda-12.2, the toolkit it was built against, not 12.4).

    Fix:
    Set XLA_FLAGS=--xla_gpu_cuda_data_dir=<a folder holding nvvm/libdevice> (the user's other XLA
    flags are kept), or install the nvidia-cuda-nvcc wheel.

    Fix safety:
    Safe: the flag only tells XLA where its CUDA files are.
    """
    build = cuda_gpu_setup(facts)
    if build is None:
        return
    found = xla_libdevice.resolve(facts, build.version)
    if isinstance(found, Unknown):
        raise NotChecked(found.reason)
    if found.path:
        return
    elsewhere = xla_libdevice.unsearched_with_libdevice(facts, build.version)
    from tfdoctor.derive.feature_use import xla_in_use

    in_use = xla_in_use(facts)
    severity = Severity.ERROR if in_use else Severity.INFO
    unused = "" if in_use else "; nothing seen turns XLA on (this matters once jit_compile or auto-jit is used)"
    searched = [r.dir for r in found.searched]
    evidence: dict[str, Any] = {"searched": searched, "tensorflow.version": build.version,
                                "env.XLA_FLAGS": facts.env("XLA_FLAGS"), "xla_in_use": in_use or False}
    if found.root is not None:  # an nvvm/libdevice folder without the file: XLA stops there
        folder = f"{found.root.dir}/nvvm/libdevice"
        evidence["libdevice_dir"] = folder
        later = [r.record for r in xla_libdevice.searched(facts, build.version)
                 if r.record and r.record.get("libdevice") and r.dir != found.root.dir]
        good = [*later, *elsewhere]  # the flag puts any of them before the empty folder
        fixes: tuple[EnvFix | AdminFix, ...] = (
            (data_dir_fix(facts, good[0]["dir"], "it holds nvvm/libdevice"),) if good else (_nvcc_install(build),))
        yield Finding(
            f"XLA will take {folder} (the first nvvm/libdevice folder TensorFlow {build.version}'s XLA finds), "
            f"which has no libdevice.10.bc: XLA GPU compilation fails with \"libdevice not found at "
            f"{folder}/libdevice.10.bc\"" + unused, evidence=evidence, fixes=fixes, severity=severity)
        return
    if elsewhere:
        best = max(elsewhere, key=lambda e: version_tuple(e.get("ptxas_version")))
        evidence["found_at"] = [e["dir"] for e in elsewhere]
        yield Finding(
            f"XLA will not find libdevice (TensorFlow {build.version}'s XLA searches {', '.join(searched)}); "
            f"{best['dir']} has it" + unused, evidence=evidence,
            fixes=(data_dir_fix(facts, best["dir"], "it holds nvvm/libdevice"),), severity=severity)
        return
    yield Finding(
        f"no libdevice.10.bc anywhere XLA looks ({', '.join(searched)}) or elsewhere: XLA GPU "
        "compilation fails with \"libdevice not found at ./libdevice.10.bc\"" + unused,
        evidence=evidence, fixes=(_nvcc_install(build),), severity=severity)


@check("XLA002", "xla-ptxas-older-than-build", Severity.WARNING)
def xla_ptxas_older_than_build(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds the ptxas XLA will run, in the search order of the installed TensorFlow's XLA
    (tfdoctor/knowledge/xla_ptxas.toml: from 2.17 the --xla_gpu_cuda_data_dir folder, then PATH, then
    the release's CUDA roots (the toolkit it was built against, /usr/local/cuda, the pip nvidia-cuda-nvcc
    wheel, ...), skipping the versions XLA refuses; 2.12–2.16 PATH first, then the CUDA roots), and compares
    its version with the CUDA version TensorFlow was built with.

    Why is this bad?
    XLA compiles its PTX with ptxas; an older ptxas may not know the PTX version XLA emits (compile
    errors, or XLA falls back to the driver's slower JIT). A system toolkit's ptxas on PATH is run before
    the pip wheel's: judging the wheel's ptxas there judges a binary XLA never runs.

    Example:
    A CUDA 11.8 toolkit's bin/ on PATH next to the nvidia-cuda-nvcc 12.2 wheel, TensorFlow 2.15 built with
    CUDA 12.2: XLA runs the toolkit's ptxas 11.8.

    Fix:
    Point --xla_gpu_cuda_data_dir at a toolkit (or the nvidia-cuda-nvcc wheel) whose ptxas matches the
    build when XLA searches that folder first, or put its bin/ first on PATH.

    Fix safety:
    Safe: only changes which ptxas XLA runs.
    """
    build = cuda_gpu_setup(facts)
    if build is None or not build.cuda_version:
        return
    first = facts.get("xla_toolchain.ptxas")  # the probe's hint only: the release's order decides below
    if first and not (isinstance(first, dict) and isinstance(first.get("path"), str)):
        raise NotChecked(f"xla_toolchain.ptxas holds {str(first)[:40]!r}, not a ptxas record")
    search, ordered, runs = xla_ptxas.resolved(facts, build.version, _refusal)
    if runs is None:
        return  # no ptxas, or every one refused: XLA004 says so
    need = version_tuple(build.cuda_version)[:2]
    if isinstance(runs.version, Unknown):
        raise NotChecked(f"version of {runs.path} unknown: {runs.version.reason}")
    if not version_tuple(runs.version) or version_tuple(runs.version)[:2] >= need:
        return
    roots = [*_roots(facts, "xla_toolchain.candidates"), *_roots(facts, "xla_toolchain.libdevice_elsewhere")]
    newer = [r for r in roots if r.get("ptxas") and version_tuple(r.get("ptxas_version"))[:2] >= need
             and _refusal(r.get("ptxas_version"), build.version) is None]
    evidence = {"ptxas": runs.path, "ptxas_version": runs.version, "via": runs.via,
                "tensorflow.version": build.version, "tensorflow.cuda_version": build.cuda_version,
                "search_order": list(search.order),
                "candidates": [{"path": p.path, "version": p.version} for p in ordered]}
    fixes: tuple[EnvFix | AdminFix, ...] = (_nvcc_install(build),)
    if newer:
        folder = newer[0]["ptxas"].rsplit("/", 1)[0]
        if newer[0].get("libdevice") and _searched_before(search, ordered, "data_dir") == []:
            fixes = (data_dir_fix(facts, newer[0]["dir"], f"its ptxas is {newer[0]['ptxas_version']}"),)
        elif _searched_before(search, ordered, "path") == []:
            fixes = (EnvFix(f"Put {folder} first on PATH", (prepend_path("PATH", folder),)),)
    yield Finding(
        f"XLA will run ptxas {runs.version} ({runs.path}, via {runs.via}), older than the CUDA "
        f"{build.cuda_version} TensorFlow {build.version} was built with",
        evidence=evidence, fixes=fixes)


def _searched_before(search: xla_ptxas.Search, ordered: list[xla_ptxas.Ptxas], step: str) -> list[str]:
    """The ptxas XLA would try before the `step` of its search: a fix that puts a folder at that step only
    works when this is empty (a data-dir folder the user set counts before PATH from 2.17)."""
    before = search.order[:search.order.index(step)] if step in search.order else search.order
    kinds = {"data_dir": lambda p: p.via == DATA_DIR_FLAG, "path": lambda p: p.via == "PATH",
             "roots": lambda p: p.via not in ("PATH", DATA_DIR_FLAG)}
    return [p.path for p in ordered if any(kinds[k](p) for k in before if k in kinds)]


@check("XLA003", "xla-data-dir-without-libdevice", Severity.WARNING)
def xla_data_dir_without_libdevice(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds --xla_gpu_cuda_data_dir in XLA_FLAGS naming a folder without nvvm/libdevice/libdevice.10.bc,
    and says which libdevice the installed release's XLA takes instead (its other roots, in its order:
    tfdoctor/knowledge/xla_ptxas.toml [[roots]]).

    Why is this bad?
    The flag is meant to fix XLA's search; pointing at the wrong level (…/nvvm, …/lib64) or a
    missing folder means XLA silently uses another CUDA, or none (see XLA001). A folder with an
    nvvm/libdevice folder but no libdevice.10.bc in it stops the search there: XLA fails.

    Example:
    XLA_FLAGS=--xla_gpu_cuda_data_dir=/usr/local/cuda/nvvm/libdevice (it wants /usr/local/cuda).

    Fix:
    Name the CUDA root that contains nvvm/libdevice.

    Fix safety:
    Safe: the flag only tells XLA where its CUDA files are.
    """
    build = cuda_gpu_setup(facts)
    if build is None:
        return
    data_dir = facts.get("xla_toolchain.cuda_data_dir")
    if not data_dir:
        return
    if not isinstance(data_dir, str):
        raise NotChecked(f"xla_toolchain.cuda_data_dir holds a JSON {type(data_dir).__name__}, not a path")
    record = next((c for c in _roots(facts, "xla_toolchain.candidates") if c["dir"] == data_dir), None)
    if record is None or record.get("libdevice"):
        return
    guess = re.sub(r"/(nvvm(/libdevice)?|lib64|lib|bin)/?$", "", data_dir.rstrip("/"))
    roots = [*_roots(facts, "xla_toolchain.candidates"), *_roots(facts, "xla_toolchain.libdevice_elsewhere")]
    good = next((r for r in roots if r.get("libdevice") and r["dir"] == guess), None) or next(
        (r for r in roots if r.get("libdevice")), None)
    fixes = (data_dir_fix(facts, good["dir"], "it holds nvvm/libdevice"),) if good else ()
    found = xla_libdevice.resolve(facts, build.version)
    if isinstance(found, Unknown):
        instead = ""  # which one XLA takes instead is not known; the flag is wrong all the same
    elif found.root is not None and found.root.dir == data_dir:
        instead = "; its empty nvvm/libdevice folder stops XLA's search there (XLA001)"
    elif found.path:
        instead = f"; XLA takes {found.path} instead"
    else:
        instead = "; XLA finds no libdevice anywhere else either (XLA001)"
    yield Finding(
        f"XLA_FLAGS sets {DATA_DIR_FLAG}={data_dir}, which has no nvvm/libdevice/libdevice.10.bc"
        + ("" if record.get("exists") else " (the folder does not exist)") + instead,
        evidence={"env.XLA_FLAGS": facts.env("XLA_FLAGS"), "xla_toolchain.cuda_data_dir": data_dir,
                  "tensorflow.version": build.version},
        fixes=fixes)


def _refusal(version: Any, release: str | None) -> str | None:
    """Why XLA in this TensorFlow release skips a ptxas of `version` (tfdoctor/knowledge/xla_ptxas.toml), or None."""
    from tfdoctor import knowledge
    from tfdoctor.derive.requirement_ranges import version_satisfies

    have = version_tuple(version)
    if len(have) < 3:
        return None
    if release is not None and not xla_ptxas.search_for(str(release)).skips_refused:
        return None  # this XLA runs the first ptxas it finds, whatever its version (XLA002 judges it)
    table = knowledge.table("xla_ptxas")
    for row in table.rows:
        if row.get("outcome") != "skipped":
            continue  # XLA runs it (and aborts: _abort)
        # A release the specifier cannot read (None) is given the exclusion: newer XLA keeps it.
        applies = release is None or version_satisfies(str(release), row["tensorflow"]) is not False
        if applies and have == version_tuple(row["ptxas"]):
            return f"XLA refuses ptxas {row['ptxas']} (CUDA {row['cuda']}): {row['why']}"
    # [meta] minimum (a key written under [meta] belongs to it: reading the top level found nothing before)
    minimum = str(table.data.get("meta", {}).get("minimum", ""))
    if minimum and have < version_tuple(minimum):
        return f"XLA skips any ptxas older than {minimum}"
    return None


def _abort(version: Any, release: str | None) -> str | None:
    """Why XLA of this release aborts after running a ptxas of `version` (xla_ptxas.toml "abort" rows), or None."""
    from tfdoctor import knowledge
    from tfdoctor.derive.requirement_ranges import version_satisfies

    have = version_tuple(version)
    if len(have) < 3 or release is None:
        return None
    for row in knowledge.table("xla_ptxas").rows:
        if (row.get("outcome") == "abort" and have == version_tuple(row["ptxas"])
                and version_satisfies(str(release), row["tensorflow"]) is True):
            return str(row["why"])
    return None


@check("XLA004", "xla-ptxas-version-refused", Severity.WARNING)
def xla_ptxas_version_refused(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Reads the version of every ptxas XLA would try, in the order of the installed release's XLA
    (tfdoctor/knowledge/xla_ptxas.toml: from 2.17 the --xla_gpu_cuda_data_dir folder, PATH, then the
    release's CUDA roots, such as /usr/local/cuda and the pip nvidia-cuda-nvcc wheel) — from the toolkit's
    version.json "cuda_nvcc" component, which is what `ptxas --version` prints, not the toolkit release ("cuda"
    12.3.1 for CUDA 12.3 Update 1, whose ptxas is 12.3.103) — and compares the first with the versions
    XLA refuses (tfdoctor/knowledge/xla_ptxas.toml: 12.3.103, and anything older than 11.8.0, from 2.17).
    Releases before 2.17 refuse nothing in the search: 2.15 and 2.16 run ptxas 12.3.103 and then abort
    the process, an error.

    Why is this bad?
    XLA skips a refused ptxas without an error: it runs the next one it finds, perhaps of another CUDA,
    or none and falls back to the driver's PTX compiler ("Couldn't find a suitable version of ptxas"),
    which compiles XLA's kernels more slowly at every start and fails for PTX newer than the driver.

    Example:
    /usr/local/cuda → a CUDA 12.3 Update 1 toolkit (ptxas 12.3.103) and no nvidia-cuda-nvcc wheel.

    Fix:
    Point --xla_gpu_cuda_data_dir at a toolkit or nvidia-cuda-nvcc wheel whose ptxas XLA accepts, or
    install the nvidia-cuda-nvcc wheel of the build's CUDA.

    Fix safety:
    Safe: only changes which ptxas XLA runs.
    """
    build = cuda_gpu_setup(facts)
    if build is None:
        return
    search, candidates = xla_ptxas.candidates(facts, build.version)
    ordered = [(p.path, p.version, p.root) for p in candidates]
    if not ordered:
        return
    path, version, _ = ordered[0]
    if isinstance(version, Unknown):
        raise NotChecked(f"version of {path} unknown: {version.reason}")
    aborts = _abort(version, build.version)
    if aborts is not None:
        yield _aborting_ptxas(facts, build, search, candidates, aborts)
        return
    why = _refusal(version, build.version)
    if why is None:
        return
    usable = next(((p, v, r) for p, v, r in ordered[1:]
                   if not isinstance(v, Unknown) and version_tuple(v) and _refusal(v, build.version) is None), None)
    outcome = (f"it runs {usable[0]} ({usable[1]}) instead" if usable else
               "no other ptxas qualifies: XLA falls back to the driver's slower PTX compiler")
    evidence = {"ptxas": path, "ptxas_version": version, "tensorflow.version": build.version,
                "refusal": why, "candidates": [{"path": p, "version": v} for p, v, _ in ordered]}
    elsewhere = [r for r in _roots(facts, "xla_toolchain.libdevice_elsewhere")
                 if r.get("ptxas") and r.get("libdevice") and _refusal(r.get("ptxas_version"), build.version) is None
                 and version_tuple(r.get("ptxas_version"))]
    good = [r for _, _, r in ordered[1:] if r and r.get("libdevice")
            and _refusal(r.get("ptxas_version"), build.version) is None] + elsewhere
    fixes = (data_dir_fix(facts, good[0]["dir"], f"its ptxas is {good[0]['ptxas_version']}"),) if good else (
        _nvcc_install(build),)
    yield Finding(f"XLA will not run ptxas {version} ({path}): {why}; {outcome}", evidence=evidence, fixes=fixes)


def _aborting_ptxas(facts: Facts, build: TfBuild, search: xla_ptxas.Search, candidates: list[xla_ptxas.Ptxas],
                    why: str) -> Finding:
    """XLA004's finding when the first ptxas is one this release runs and then aborts on: an error."""
    first = candidates[0]
    roots = [*_roots(facts, "xla_toolchain.candidates"), *_roots(facts, "xla_toolchain.libdevice_elsewhere")]
    good = [r for r in roots if r.get("ptxas") and version_tuple(r.get("ptxas_version"))
            and _abort(r.get("ptxas_version"), build.version) is None]
    fixes: tuple[EnvFix | AdminFix, ...] = (_nvcc_install(build),)
    if good:
        folder = good[0]["ptxas"].rsplit("/", 1)[0]
        if good[0].get("libdevice") and _searched_before(search, candidates, "data_dir") == []:
            fixes = (data_dir_fix(facts, good[0]["dir"], f"its ptxas is {good[0]['ptxas_version']}"),)
        elif _searched_before(search, candidates, "path") == []:
            fixes = (EnvFix(f"Put {folder} first on PATH", (prepend_path("PATH", folder),)),)
    return Finding(
        f"XLA in TensorFlow {build.version} will run ptxas {first.version} ({first.path}, via {first.via}) and "
        f"then abort: {why}",
        evidence={"ptxas": first.path, "ptxas_version": first.version, "via": first.via,
                  "tensorflow.version": build.version, "search_order": list(search.order),
                  "candidates": [{"path": p.path, "version": p.version} for p in candidates]},
        fixes=fixes, severity=Severity.ERROR)


__all__ = ["Severity", "merge_data_dir"]
