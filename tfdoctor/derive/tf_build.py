"""TensorFlow's CUDA build, derived from facts (pure): the CUDA / cuDNN versions and GPU architectures
it was built for, the nvidia-* wheels its `and-cuda` extra pins, and the library names it will dlopen.

The build comes from the python snapshot (python.tensorflow.build_info, python.watched); when that
interpreter has no TensorFlow (a --root run over a fake tree), from the TensorFlow the cuda_libs probe
found next to the nvidia-* wheels (cuda_libs.tensorflow).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

from tfdoctor.derive.versions import major_minor, version_tuple
from tfdoctor.facts import Facts
from tfdoctor.records import value_tuple

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import Any

TENSORFLOW_DISTS = ("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-intel", "tf-nightly",
                    "tf-nightly-gpu", "intel-tensorflow", "tensorflow-aarch64")
# "nvidia-cudnn-cu12==8.9.4.25" and the older METADATA form "nvidia-cudnn-cu11 (==8.7.0.84)" (2.14, 2.15);
# a range (2.20 on: ">=12.5.3.2,<13.0") pins nothing.
_PIN = re.compile(r"^(?P<name>nvidia-[A-Za-z0-9_.-]+?)\s*(?:\(\s*)?==\s*(?P<version>[0-9][^;\s,)]*)\)?\s*(?:;|$)")
# Which nvidia-* wheel ships each library TensorFlow loads (CUDA 12 names; -cu11 for CUDA 11).
WHEEL_OF = {"cudart": "nvidia-cuda-runtime", "cublas": "nvidia-cublas", "cublasLt": "nvidia-cublas",
            "cudnn": "nvidia-cudnn", "cufft": "nvidia-cufft", "cusolver": "nvidia-cusolver",
            "cusparse": "nvidia-cusparse", "nccl": "nvidia-nccl", "cupti": "nvidia-cuda-cupti",
            "nvcc": "nvidia-cuda-nvcc"}


@value_tuple
class TfBuild:
    """What the installed TensorFlow was built with: CUDA, cuDNN, GPU architectures and its wheel pins."""

    version: str | None
    dist: str | None
    is_cuda_build: bool
    cuda_version: str | None  # "12.2"
    cudnn_version: str | None  # "8" or "8.9"
    compute_capabilities: tuple[str, ...]  # ("sm_60", "compute_90", …)
    pins: Mapping[str, str] = MappingProxyType({})  # nvidia-cudnn-cu12 -> 8.9.4.25 (and-cuda extra)

    @property
    def cuda_major(self) -> int | None:
        parts = version_tuple(self.cuda_version)
        return parts[0] if parts else None

    def pin_for(self, library: str) -> tuple[str, str] | None:
        """(wheel, pinned version) for a library key, from the and-cuda extra."""
        stem = WHEEL_OF.get(library)
        if not stem:
            return None
        for name, version in self.pins.items():
            if re.fullmatch(rf"{re.escape(stem)}-cu[0-9]+", name):
                if library == "cudnn" and self.contradicting_cudnn_pin() is not None:
                    return None
                return name, version
        return None

    def contradicting_cudnn_pin(self) -> tuple[str, str] | None:
        """The and-cuda cuDNN pin when its major is not the build's own: the loader asks for
        libcudnn.so.<build major>, so the build wins and the pin is ignored."""
        build_major = version_tuple(self.cudnn_version)[:1]
        for name, version in self.pins.items():
            contradicts = bool(build_major) and version_tuple(version)[:1] != build_major
            if re.fullmatch(r"nvidia-cudnn-cu[0-9]+", name) and contradicts:
                return name, version
        return None

    def wheel_name(self, library: str) -> str | None:
        stem = WHEEL_OF.get(library)
        return f"{stem}-cu{self.cuda_major}" if stem and self.cuda_major else None

    def install_hint(self, library: str) -> str:
        """One install step that names only packages that exist: the and-cuda pin, the release's and-cuda
        extra, an nvidia-* wheel of this CUDA generation, or (CUDA 10, no wheels) NVIDIA's installers."""
        from tfdoctor.derive.cuda_releases import cudnn_built_with, tensorflow_release, wheel_exists, wheel_suffix

        pin = self.pin_for(library)
        if pin:
            return f"pip install '{pin[0]}=={pin[1]}'"
        release = tensorflow_release(self.version)
        if release is not None and release.values.get("and_cuda") and self.dist == "tensorflow":
            return f"pip install 'tensorflow[and-cuda]=={self.version}'"
        stem, suffix = WHEEL_OF.get(library), wheel_suffix(self.cuda_version)
        known = cudnn_built_with(self.version, self.cudnn_version)
        cudnn = known[0] if known else self.cudnn_version
        wanted = cudnn if library == "cudnn" else self.cuda_version
        if stem and suffix and wheel_exists(self.cuda_version, library, wanted):
            return f"pip install '{stem}-{suffix}{self._wheel_spec(library, cudnn)}'"
        if library == "cudnn":
            return f"install cuDNN {cudnn} for CUDA {self.cuda_version} (NVIDIA's cuDNN archive)"
        if library == "nccl":
            return (f"install NCCL 2 for CUDA {major_minor(self.cuda_version)} "
                    "(the libnccl2 package of NVIDIA's repository)")
        return f"install the CUDA {self.cuda_version} toolkit (NVIDIA's CUDA Toolkit archive)"

    def _wheel_spec(self, library: str, cudnn: str | None) -> str:
        """A version range the wheel really has: the CUDA-numbered wheels follow the CUDA minor, cuDNN
        its own; cuFFT, cuSOLVER, cuSPARSE and NCCL carry their own numbers (any of this major fits)."""
        cuda_numbered = ("cudart", "cupti", "nvcc") + (("cublas", "cublasLt") if (self.cuda_major or 0) >= 12 else ())
        if library in cuda_numbered:
            return f"=={major_minor(self.cuda_version)}.*"
        if library == "cudnn":
            return f"=={major_minor(cudnn)}.*" if cudnn else ""
        return ""


def parse_pins(requires_dist: Any) -> dict[str, str]:
    pins: dict[str, str] = {}
    if not isinstance(requires_dist, (list, tuple)):  # absent, or a hand-edited facts file
        return pins
    for requirement in requires_dist:
        text = str(requirement)
        if "nvidia-" not in text:
            continue
        if "extra" in text and "and-cuda" not in text and "and_cuda" not in text:
            continue
        match = _PIN.match(text.strip())
        if match:
            pins[match.group("name").lower()] = match.group("version")
    return pins


def _from_python(facts: Facts) -> tuple[Any, str | None, str | None, Any]:
    python = facts.peek("python")
    if not isinstance(python, dict):
        return None, None, None, None
    tensorflow = python.get("tensorflow") or {}
    info = tensorflow.get("build_info") if isinstance(tensorflow, dict) else None
    watched = python.get("watched") or {}
    for dist in TENSORFLOW_DISTS:
        if isinstance(watched, dict) and isinstance(watched.get(dist), dict):
            record = watched[dist]
            return info, dist, record.get("version"), record.get("requires_dist")
    return info, None, None, None


def tensorflow_build(facts: Facts) -> TfBuild | None:
    """None when no TensorFlow is installed (or its build is unreadable)."""
    info, dist, version, requires = _from_python(facts)
    found = facts.peek("cuda_libs.tensorflow")
    found_ok = isinstance(found, dict) and isinstance(found.get("build_info"), dict)
    # Under --root the python snapshot describes tfdoctor's interpreter, not the fake machine's.
    fake_root = facts.meta.get("root") not in (None, "/")
    if found_ok and (fake_root or not isinstance(info, dict)):
        info = found["build_info"]
        dist = (found.get("dist") or "tensorflow").replace("_", "-")
        version, requires = found.get("version"), found.get("requires_dist")
    if not isinstance(info, dict):
        return None
    caps = info.get("cuda_compute_capabilities") or []
    if isinstance(caps, str):
        caps = [c.strip() for c in caps.split(",")]
    elif not isinstance(caps, (list, tuple)):
        caps = []
    return TfBuild(
        version=str(version) if version else None,
        dist=dist,
        is_cuda_build=bool(info.get("is_cuda_build")),
        cuda_version=str(info["cuda_version"]) if info.get("cuda_version") else None,
        cudnn_version=str(info["cudnn_version"]) if info.get("cudnn_version") else None,
        compute_capabilities=tuple(str(c) for c in caps),
        pins=parse_pins(requires),
    )


def wanted_sonames(build: TfBuild) -> dict[str, str]:
    """The file names TensorFlow's loader asks for (tsl dso_loader), by library key, derived from the
    build's CUDA generation in the cuda_sonames knowledge table."""
    from tfdoctor.derive.cuda_releases import sonames

    return sonames(build.cuda_version, build.cudnn_version)


def gpu_host(facts: Facts) -> bool:
    """An NVIDIA GPU or driver is visible on this host (by NVML, /proc or the PCI bus)."""
    devices = facts.peek("nvml.devices")
    if isinstance(devices, list) and devices:
        return True
    if facts.peek("host.nvidia_driver") or facts.peek("host.wsl2.detected") is True:
        return True
    pci = facts.peek("gpu_pci.devices")
    return isinstance(pci, list) and bool(pci)


def cuda_gpu_setup(facts: Facts) -> TfBuild | None:
    """The TensorFlow CUDA build when this is a GPU host running one; None when the GPU stack cannot matter."""
    build = tensorflow_build(facts)
    if build is None or not build.is_cuda_build or not gpu_host(facts):
        return None
    system = facts.peek("host.system")
    if isinstance(system, str) and system != "Linux":
        return None
    return build


def architecture_targets(capabilities: tuple[str, ...]) -> list[tuple[str, tuple[int, int], str]]:
    """(kind "sm" or "compute", (major, minor), suffix "", "a" or "f") of each well-formed entry of a build's
    cuda_compute_capabilities, as nvcc names them ("sm_80", "compute_90", "sm_90a", "sm_100f")."""
    found = []
    for entry in capabilities:
        kind, _, rest = entry.partition("_")
        suffix = rest[-1:] if rest[-1:] in ("a", "f") else ""
        digits = rest[:-1] if suffix else rest
        if kind in ("sm", "compute") and digits.isdigit() and len(digits) >= 2:
            found.append((kind, (int(digits[:-1]), int(digits[-1])), suffix))
    return found


def arch_support(cc: tuple[int, int], capabilities: tuple[str, ...]) -> str:
    """"sass" (a binary for this GPU), "ptx" (only PTX it must JIT), or "none". A binary sm_XY runs on X.Y
    and the later minors of major X; PTX compute_XY is JIT-compiled for X.Y and every later GPU. The "a"
    targets (architecture-specific, sm_90a) run on X.Y only, binary and PTX alike ("cannot be run on later
    generation devices", PTX ISA); the "f" targets (family-specific, CUDA 12.9: sm_100f) on major X from
    minor Y on (NVIDIA, "Family-Specific Architecture Features", 2025)."""
    sass = ptx = False
    for kind, target, suffix in architecture_targets(capabilities):
        if suffix == "a":
            runs = cc == target
        elif suffix == "f" or kind == "sm":
            runs = cc[0] == target[0] and cc[1] >= target[1]
        else:
            runs = cc >= target
        sass = sass or (runs and kind == "sm")
        ptx = ptx or (runs and kind == "compute")
    return "sass" if sass else "ptx" if ptx else "none"
