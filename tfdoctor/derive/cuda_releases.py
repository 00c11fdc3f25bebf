"""Release knowledge about the CUDA stack, read from the tables in tfdoctor/knowledge/ (pure):

- `tensorflow_builds`: TensorFlow release -> CUDA, cuDNN major.minor, and how its wheel finds the
  nvidia-* libraries and NCCL;
- `cuda_drivers`: the oldest driver of each CUDA release (Linux and Windows), and the floor of CUDA's
  minor-version compatibility per major;
- `cuda_sonames`: the file names TensorFlow's loader asks for, per CUDA generation.

Every lookup returns the row it used (`Row`), so a finding can carry it as evidence and `tfdoctor
explain` can name the table it came from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tfdoctor import knowledge
from tfdoctor.derive.versions import version_tuple

SONAME_STEMS = {"cudart": "libcudart.so", "cublas": "libcublas.so", "cublasLt": "libcublasLt.so",
                "cufft": "libcufft.so", "cusolver": "libcusolver.so", "cusparse": "libcusparse.so",
                "cupti": "libcupti.so"}


@dataclass(frozen=True)
class Row:
    """One row of a knowledge table, with where it came from."""

    table: str
    values: dict[str, Any]

    def evidence(self) -> dict[str, Any]:
        """What a finding shows: the table's name, its row and its citation."""
        return {"table": self.table, "row": dict(self.values), "source": knowledge.table(self.table).cite()}


def _major_minor(text: Any) -> tuple[int, ...]:
    return version_tuple(text)[:2]


def tensorflow_release(version: Any) -> Row | None:
    """The tested configuration of a TensorFlow release (by major.minor); None when the table has none."""
    wanted = _major_minor(version)
    if len(wanted) < 2:
        return None
    for row in knowledge.table("tensorflow_builds").rows:
        if _major_minor(row["tensorflow"]) == wanted:
            return Row("tensorflow_builds", row)
    return None


def cudnn_built_with(version: Any, cudnn_major: Any) -> tuple[str, Row] | None:
    """cuDNN major.minor the release was built with, when the build's own major agrees with the table."""
    row = tensorflow_release(version)
    if row is None:
        return None
    major = version_tuple(cudnn_major)[:1]
    if major and version_tuple(row.values["cudnn"])[:1] != major:
        return None  # a source build against another cuDNN: its own figure is all we know
    return str(row.values["cudnn"]), row


def soname_row(cuda: Any) -> Row | None:
    """The sonames row of a CUDA version: its major.minor row, else its major's row."""
    parts = _major_minor(cuda)
    if not parts:
        return None
    rows = knowledge.table("cuda_sonames").rows
    exact = ".".join(map(str, parts))
    for key in (exact, str(parts[0])):
        for row in rows:
            if row["cuda"] == key:
                return Row("cuda_sonames", row)
    return None


def sonames(cuda: Any, cudnn: Any = None) -> dict[str, str]:
    """Library key -> the file name TensorFlow dlopens for a build of this CUDA (and cuDNN major)."""
    row = soname_row(cuda)
    if row is None:
        return {}
    cuda_mm = ".".join(map(str, _major_minor(cuda)))
    names = {key: f"{stem}.{str(row.values[key]).replace('{cuda}', cuda_mm)}"
             for key, stem in SONAME_STEMS.items() if key in row.values}
    cudnn_major = version_tuple(cudnn)[:1]
    if cudnn_major:
        names["cudnn"] = f"libcudnn.so.{cudnn_major[0]}"
    names["nccl"] = "libnccl.so.2"
    names["cuda"] = "libcuda.so.1"
    return names


def wheel_suffix(cuda: Any) -> str:
    """"cu12", "cu11", or "" when NVIDIA publishes no pip wheels for this CUDA generation."""
    row = soname_row(cuda)
    return str(row.values.get("wheel_suffix", "")) if row else ""


def wheel_exists(cuda: Any, library: str, version: Any) -> bool:
    """Whether an nvidia-* wheel of this CUDA generation was published for `version` of `library`
    (the CUDA minor for the runtime-numbered wheels, the cuDNN release for nvidia-cudnn)."""
    row = soname_row(cuda)
    if row is None or not row.values.get("wheel_suffix"):
        return False
    column = "wheel_cudnn" if library == "cudnn" else "wheel_cuda"
    wanted = version_tuple(version)
    return any(wanted[:len(version_tuple(v))] == version_tuple(v) for v in row.values.get(column, []))


@dataclass(frozen=True)
class DriverNeed:
    """What a CUDA release asks of the driver: the toolkit's own driver, and its major's floor."""

    cuda: str
    toolkit_driver: str | None  # runs everything the toolkit produced, PTX included
    compat_floor: str | None  # runs the precompiled kernels (minor-version compatibility)
    system: str
    row: Row | None

    def evidence(self) -> dict[str, Any]:
        evidence: dict[str, Any] = {"cuda": self.cuda, "system": self.system,
                                    "toolkit_driver": self.toolkit_driver, "compat_floor": self.compat_floor}
        if self.row:
            evidence["knowledge"] = self.row.evidence()
        return evidence


def driver_need(cuda: Any, system: str = "Linux") -> DriverNeed | None:
    """The drivers a build of this CUDA needs; None when the table knows neither figure."""
    parts = _major_minor(cuda)
    if not parts:
        return None
    column = "windows" if system == "Windows" else "linux"
    table = knowledge.table("cuda_drivers")
    exact = ".".join(map(str, parts if len(parts) == 2 else (parts[0], 0)))
    row = next((r for r in table.rows if r["cuda"] == exact), None)
    floor = table.data.get("minor_compatibility", {}).get(str(parts[0]), {}).get(column)
    toolkit = row[column] if row else None
    if toolkit is None and floor is None:
        return None
    if parts[0] < 11:
        floor = toolkit  # before CUDA 11 there is no minor-version compatibility
    return DriverNeed(exact, toolkit, floor, "Windows" if system == "Windows" else "Linux",
                      Row("cuda_drivers", row) if row else None)


def driver_at_least(driver: Any, minimum: str | None) -> bool:
    """Driver versions compare component by component ("535.54.03" < "535.104.05")."""
    have = version_tuple(driver)
    return not have or not minimum or have >= version_tuple(minimum)


def driver_cuda_ceiling(driver: Any, system: str = "Linux") -> str | None:
    """The newest CUDA release whose toolkit driver this driver meets (what nvidia-smi calls its CUDA)."""
    column = "windows" if system == "Windows" else "linux"
    best: tuple[int, ...] = ()
    for row in knowledge.table("cuda_drivers").rows:
        if version_tuple(driver) and version_tuple(driver) >= version_tuple(row[column]):
            best = max(best, version_tuple(row["cuda"]))
    return ".".join(map(str, best)) if best else None


@dataclass(frozen=True)
class ArchitectureGap:
    """A GPU whose architecture needs PTX newer than the build's CUDA writes, and the builds that run on it."""

    row: Row  # gpu_architectures: compute capability, name, the first CUDA that can target it
    releases: tuple[str, ...]  # tensorflow_builds releases built with at least that CUDA
    containers: tuple[str, ...]


def architecture_gap(compute_capability: tuple[int, int], build_cuda: Any,
                     capabilities: tuple[str, ...]) -> ArchitectureGap | None:
    """The gap when a GPU of this compute capability cannot run a build: no SASS of its major in
    `capabilities` and the build's CUDA older than the one its architecture needs (gpu_architectures)."""
    table = knowledge.table("gpu_architectures")
    wanted = f"{compute_capability[0]}.{compute_capability[1]}"
    row = next((r for r in table.rows if r["compute_capability"] == wanted), None)
    if row is None or not version_tuple(build_cuda) or version_tuple(build_cuda)[:2] >= version_tuple(row["cuda"]):
        return None
    if any(c.startswith(f"sm_{compute_capability[0]}") and c[3:].rstrip("af").isdigit()
           and int(c[3:].rstrip("af")) // 10 == compute_capability[0] for c in capabilities):
        return None  # SASS of this major: no PTX to compile
    releases = tuple(r["tensorflow"] for r in knowledge.table("tensorflow_builds").rows
                     if version_tuple(r["cuda"])[:2] >= version_tuple(row["cuda"]))
    return ArchitectureGap(Row("gpu_architectures", row), releases, tuple(table.data.get("containers", ())))
