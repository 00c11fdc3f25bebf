"""XLA — what XLA's GPU compiler needs at run time: libdevice and a ptxas as new as the build's CUDA
(XLA001–XLA099; XLA1xx belongs to the framework family)."""

from __future__ import annotations

import re
from collections.abc import Iterator

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
    Looks for nvvm/libdevice/libdevice.10.bc where XLA does: the folder named by
    --xla_gpu_cuda_data_dir in XLA_FLAGS, /usr/local/cuda, the pip nvidia-cuda-nvcc wheel next to
    TensorFlow; and elsewhere on disk (other toolkits, CONDA_PREFIX) for the fix.

    Why is this bad?
    Every XLA-compiled GPU computation (jit_compile=True, Keras 3's default jit_compile="auto" on
    GPU, many tf.function graphs) fails with "libdevice not found at ./libdevice.10.bc" after the
    warning "Can't find libdevice directory ${CUDA_DIR}/nvvm/libdevice".

    Example:
    TensorFlow from pip with system CUDA in /usr/local/cuda-12.2 but no /usr/local/cuda link.

    Fix:
    Set XLA_FLAGS=--xla_gpu_cuda_data_dir=<a folder holding nvvm/libdevice> (the user's other XLA
    flags are kept), or install the nvidia-cuda-nvcc wheel.

    Fix safety:
    Safe: the flag only tells XLA where its CUDA files are.
    """
    build = cuda_gpu_setup(facts)
    if build is None:
        return
    if facts.get("xla_toolchain.libdevice"):
        return
    candidates = _roots(facts, "xla_toolchain.candidates")
    elsewhere = _roots(facts, "xla_toolchain.libdevice_elsewhere")
    evidence: dict[str, Any] = {"searched": [c["dir"] for c in candidates],
                                "env.XLA_FLAGS": facts.env("XLA_FLAGS")}
    if elsewhere:
        best = max(elsewhere, key=lambda e: version_tuple(e.get("ptxas_version")))
        evidence["found_at"] = [e["dir"] for e in elsewhere]
        yield Finding(
            f"XLA will not find libdevice (searched {', '.join(evidence['searched'])}); {best['dir']} has it",
            evidence=evidence, fixes=(data_dir_fix(facts, best["dir"], "it holds nvvm/libdevice"),))
        return
    yield Finding(
        f"no libdevice.10.bc anywhere XLA looks ({', '.join(evidence['searched'])}) or elsewhere: XLA GPU "
        "compilation fails with \"libdevice not found at ./libdevice.10.bc\"",
        evidence=evidence, fixes=(_nvcc_install(build),))


@check("XLA002", "xla-ptxas-older-than-build", Severity.WARNING)
def xla_ptxas_older_than_build(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Compares the version of the first ptxas XLA will run (from its CUDA folders' bin/, then PATH)
    with the CUDA version TensorFlow was built with.

    Why is this bad?
    XLA compiles its PTX with ptxas; an older ptxas may not know the PTX version XLA emits (compile
    errors) and older releases have known miscompilations XLA warns about. Without any ptxas XLA
    falls back to the driver's JIT, which is slower and only works with a new enough driver.

    Example:
    /usr/local/cuda → cuda-11.8 on PATH, TensorFlow 2.15 built with CUDA 12.2.

    Fix:
    Point --xla_gpu_cuda_data_dir at a toolkit (or the nvidia-cuda-nvcc wheel) whose ptxas matches the
    build, or put its bin/ first on PATH when XLA finds ptxas only there.

    Fix safety:
    Safe: only changes which ptxas XLA runs.
    """
    build = cuda_gpu_setup(facts)
    if build is None or not build.cuda_version:
        return
    first = facts.get("xla_toolchain.ptxas")
    if first and not (isinstance(first, dict) and isinstance(first.get("path"), str)):
        raise NotChecked(f"xla_toolchain.ptxas holds {str(first)[:40]!r}, not a ptxas record")
    need = version_tuple(build.cuda_version)[:2]
    if first and isinstance(first.get("version"), Unknown):
        raise NotChecked(f"version of {first['path']} unknown: {first['version'].reason}")
    if not first or not version_tuple(first.get("version")) or version_tuple(first["version"])[:2] >= need:
        return
    roots = [*_roots(facts, "xla_toolchain.candidates"), *_roots(facts, "xla_toolchain.libdevice_elsewhere")]
    newer = [r for r in roots if r.get("ptxas") and version_tuple(r.get("ptxas_version"))[:2] >= need]
    evidence = {"ptxas": first["path"], "ptxas_version": first["version"], "via": first.get("via"),
                "tensorflow.cuda_version": build.cuda_version}
    fixes: tuple[EnvFix | AdminFix, ...]
    if newer and first.get("via") == "PATH":
        folder = newer[0]["ptxas"].rsplit("/", 1)[0]
        fixes = (EnvFix(f"Put {folder} first on PATH", (prepend_path("PATH", folder),)),)
    elif newer and newer[0].get("libdevice"):
        fixes = (data_dir_fix(facts, newer[0]["dir"], f"its ptxas is {newer[0]['ptxas_version']}"),)
    else:
        fixes = (_nvcc_install(build),)
    yield Finding(
        f"XLA will run ptxas {first['version']} ({first['path']}), older than the CUDA {build.cuda_version} "
        "TensorFlow was built with",
        evidence=evidence, fixes=fixes)


@check("XLA003", "xla-data-dir-without-libdevice", Severity.WARNING)
def xla_data_dir_without_libdevice(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds --xla_gpu_cuda_data_dir in XLA_FLAGS naming a folder without nvvm/libdevice.

    Why is this bad?
    The flag is meant to fix XLA's search; pointing at the wrong level (…/nvvm, …/lib64) or a
    missing folder means XLA silently uses another CUDA, or none (see XLA001).

    Example:
    XLA_FLAGS=--xla_gpu_cuda_data_dir=/usr/local/cuda/nvvm/libdevice (it wants /usr/local/cuda).

    Fix:
    Name the CUDA root that contains nvvm/libdevice.

    Fix safety:
    Safe: the flag only tells XLA where its CUDA files are.
    """
    if cuda_gpu_setup(facts) is None:
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
    yield Finding(
        f"XLA_FLAGS sets {DATA_DIR_FLAG}={data_dir}, which has no nvvm/libdevice"
        + ("" if record.get("exists") else " (the folder does not exist)"),
        evidence={"env.XLA_FLAGS": facts.env("XLA_FLAGS"), "xla_toolchain.cuda_data_dir": data_dir},
        fixes=fixes)


def _refusal(version: Any, release: str | None) -> str | None:
    """Why XLA in this TensorFlow release skips a ptxas of `version` (tfdoctor/knowledge/xla_ptxas.toml), or None."""
    from tfdoctor import knowledge
    from tfdoctor.derive.requirement_ranges import version_satisfies

    have = version_tuple(version)
    if len(have) < 3:
        return None
    table = knowledge.table("xla_ptxas")
    for row in table.rows:
        # A release the specifier cannot read (None) is given the exclusion: newer XLA keeps it.
        applies = release is None or version_satisfies(str(release), row["tensorflow"]) is not False
        if applies and have == version_tuple(row["ptxas"]):
            return f"XLA refuses ptxas {row['ptxas']} (CUDA {row['cuda']}): {row['why']}"
    minimum = str(table.data.get("minimum", ""))
    if minimum and have < version_tuple(minimum):
        return f"XLA skips any ptxas older than {minimum}"
    return None


@check("XLA004", "xla-ptxas-version-refused", Severity.WARNING)
def xla_ptxas_version_refused(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Reads the version of every ptxas XLA would try, in XLA's order (the --xla_gpu_cuda_data_dir folder,
    /usr/local/cuda, the pip nvidia-cuda-nvcc wheel, then PATH) — from the toolkit's version.json
    "cuda_nvcc" component, which is what `ptxas --version` prints, not the toolkit release ("cuda"
    12.3.1 for CUDA 12.3 Update 1, whose ptxas is 12.3.103) — and compares the first with the versions
    XLA refuses (tfdoctor/knowledge/xla_ptxas.toml: 12.3.103, and anything older than 11.8.0).

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
    roots = _roots(facts, "xla_toolchain.candidates")
    path_ptxas = facts.get("xla_toolchain.path_ptxas") or []
    if not isinstance(path_ptxas, list):
        raise NotChecked("xla_toolchain.path_ptxas is not a list of ptxas records")
    ordered = [(r["ptxas"], r.get("ptxas_version"), r) for r in roots if r.get("ptxas")]
    ordered += [(p.get("path"), p.get("version"), None) for p in path_ptxas if isinstance(p, dict)]
    if not ordered:
        return
    path, version, _ = ordered[0]
    if isinstance(version, Unknown):
        raise NotChecked(f"version of {path} unknown: {version.reason}")
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


__all__ = ["Severity", "merge_data_dir"]
