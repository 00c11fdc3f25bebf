"""Which TensorFlow distribution is installed, read from the python facts (a pure function of facts).

Several distributions ship the same `tensorflow` import package (tensorflow, tensorflow-cpu, tf-nightly,
intel-tensorflow…); some are only shims that depend on another one and ship no files (tensorflow on
Windows pulled tensorflow-intel for several 2.x releases). The distribution that `import tensorflow` really loads is
the one that provides the package; when several do, the one installed last wrote over the others.
Shared by the PKG and CPU checks. `packaging` is imported only where a specifier must be evaluated.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from types import MappingProxyType

from tfdoctor.facts import Facts, NotChecked, Unknown
from tfdoctor.facts.probes.pyenv_snapshot import IMPORT_NAMES, TENSORFLOW_DISTS, normalize
from tfdoctor.records import value_tuple

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import Any

IMPORT_PACKAGE = "tensorflow"


@value_tuple
class TensorflowDistribution:
    """One installed TensorFlow distribution (tensorflow, tensorflow-cpu, …) as its metadata describes it."""

    name: str  # normalized: "tensorflow-cpu"
    version: str
    location: str = ""
    top_level: tuple[str, ...] | None = None  # None: the metadata does not say
    requires_dist: tuple[str, ...] = ()
    requires_python: str | None = None
    wheel_tags: tuple[str, ...] = ()
    installed_at: float | None = None
    installer: str | None = None
    extra: Mapping[str, Any] = MappingProxyType({})

    @property
    def provides_tensorflow(self) -> bool:
        return self.top_level is None or IMPORT_PACKAGE in self.top_level

    @property
    def release(self) -> tuple[int, ...]:
        return release_tuple(self.version)

    @property
    def is_cpu_only_name(self) -> bool:
        """Distributions that are CPU-only by name, whatever their build_info says."""
        return self.name.endswith("-cpu") or "-cpu-" in self.name

    def pin(self) -> str:
        """A requirement that keeps exactly this TensorFlow: added to every pip command tfdoctor suggests,
        so pip resolves around the user's TensorFlow instead of replacing it."""
        return f"{self.name}=={self.version}"


def top_level_import_name(name: str) -> str:
    """The top-level package a distribution is imported as ("absl-py" -> "absl", "protobuf" -> "google"),
    by the snapshot's table of names that differ, else the name with "-" as "_"."""
    return IMPORT_NAMES.get(normalize(name), normalize(name).replace("-", "_")).split("/")[0]


def release_tuple(version: str) -> tuple[int, ...]:
    """The numeric release of a version ("2.21.0rc1" -> (2, 21, 0)); () when it has none."""
    match = re.match(r"^\s*v?(\d+(?:\.\d+)*)", version)
    return tuple(int(x) for x in match.group(1).split(".")) if match else ()


def _mapping(facts: Facts, path: str) -> Mapping[str, Any]:
    value = facts.get(path)
    if not isinstance(value, Mapping):
        raise NotChecked(f"{path} is not a mapping (a hand-edited facts file?)")
    return value


def _as_tuple(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def tensorflow_distributions(facts: Facts) -> list[TensorflowDistribution]:
    """Every installed TensorFlow distribution (shims included), in name order."""
    watched = _mapping(facts, "python.watched")
    found = []
    for name, info in sorted(watched.items()):
        if name not in TENSORFLOW_DISTS or not isinstance(info, Mapping):
            continue
        top_level = info.get("top_level")
        found.append(TensorflowDistribution(
            name=name,
            version=str(info.get("version", "")),
            location=str(info.get("location", "")),
            top_level=tuple(top_level) if isinstance(top_level, list) else None,
            requires_dist=_as_tuple(info.get("requires_dist")),
            requires_python=info.get("requires_python") if isinstance(info.get("requires_python"), str) else None,
            wheel_tags=_as_tuple(info.get("wheel_tags")),
            installed_at=info.get("installed_at") if isinstance(info.get("installed_at"), (int, float)) else None,
            installer=info.get("installer") if isinstance(info.get("installer"), str) else None,
        ))
    return found


def tensorflow_providers(facts: Facts) -> list[TensorflowDistribution]:
    """The distributions that ship files into the `tensorflow` package, installed last first."""
    providers = [d for d in tensorflow_distributions(facts) if d.provides_tensorflow]
    return sorted(providers, key=lambda d: (-(d.installed_at or 0.0), d.name))


def imported_location(facts: Facts) -> str | None:
    """The path entry `import tensorflow` takes the package from (the folder holding tensorflow/)."""
    package_dir = facts.peek("python.tensorflow.package_dir")
    return os.path.dirname(package_dir) if isinstance(package_dir, str) and package_dir else None


def sharing_providers(facts: Facts) -> list[TensorflowDistribution]:
    """The providers whose files are in the folder `import tensorflow` loads from (installed last first):
    distributions in other folders (another venv's site-packages on PYTHONPATH) share no files with it."""
    providers = tensorflow_providers(facts)
    where = imported_location(facts)
    if where:
        here = [d for d in providers if os.path.normpath(d.location) == os.path.normpath(where)]
        if here:
            return here
    return providers


def installed_tensorflow(facts: Facts) -> TensorflowDistribution | None:
    """The distribution `import tensorflow` loads, or None when TensorFlow is not installed: of those in the
    folder the package is imported from, the one installed last."""
    providers = sharing_providers(facts)
    return providers[0] if providers else None


def build_info(facts: Facts) -> Mapping[str, Any] | None:
    """TensorFlow's build_info.py as read off the wheel; None when absent or unreadable."""
    info = facts.peek("python.tensorflow.build_info")
    return info if isinstance(info, Mapping) and not isinstance(info, Unknown) else None


def installed_version(facts: Facts, name: str) -> str | None:
    """The version of an installed distribution (any spelling of its name), None when absent."""
    info = _mapping(facts, "python.distributions").get(normalize(name))
    if not isinstance(info, Mapping):
        return None
    watched = facts.peek(f"python.watched.{normalize(name)}")
    if isinstance(watched, Mapping) and watched.get("version"):
        return str(watched["version"])  # METADATA's spelling beats the folder name's
    return str(info.get("version", "")) or None


def marker_environment(facts: Facts) -> dict[str, str]:
    """PEP 508 marker values of the inspected interpreter (not of the one running tfdoctor)."""
    recorded = facts.peek("python.marker_environment")
    if isinstance(recorded, Mapping):
        return {str(k): str(v) for k, v in recorded.items()}
    # Facts recorded before the snapshot carried the full environment: rebuild what it can say.
    version = str(facts.get("python.version"))
    platform = str(facts.peek("python.platform") or "")
    return {
        "python_version": ".".join(version.split(".")[:2]),
        "python_full_version": version,
        "sys_platform": platform,
        "platform_machine": str(facts.peek("python.machine") or ""),
        "platform_python_implementation": str(facts.peek("python.implementation") or "CPython"),
        "implementation_name": str(facts.peek("python.implementation") or "cpython").lower(),
        "os_name": "nt" if platform == "win32" else "posix",
        "platform_system": {"linux": "Linux", "darwin": "Darwin", "win32": "Windows"}.get(platform, platform),
    }
