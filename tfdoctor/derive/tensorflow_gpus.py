"""Which GPUs *this TensorFlow* will run ops on — not which GPUs the host has (pure, over facts).

A CPU-only distribution (tensorflow-cpu, tf-nightly-cpu…) or a build without CUDA (build_info.py says
`is_cuda_build: False`: native Windows since 2.11, macOS, a source build without --config=cuda) on a GPU
host runs every convolution on the CPU: tf.config.list_physical_devices("GPU") is simply empty. Layout,
precision and XLA checks must judge by that, not by the host's hardware.

When the installed TensorFlow or its build cannot be read, the host's visible GPUs are taken as usable:
a check then keeps its GPU-host verdict rather than guessing CPU-only (PKG001/PKG003 speak about the
installation itself). Missing CUDA libraries also send TensorFlow to the CPU; the CUDA family reports
those (CUDA001) with their fix, so they are not repeated here.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from tfdoctor.derive.gpu_inventory import Gpu, visible_gpus
from tfdoctor.derive.tf_build import tensorflow_build
from tfdoctor.facts import Facts, NotChecked
from tfdoctor.records import value_tuple

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import Any


@value_tuple
class TensorflowGpus:
    """The GPUs this TensorFlow will place ops on, against the GPUs the process can see."""

    gpus: tuple[Gpu, ...]  # the GPUs TensorFlow will place ops on
    visible: tuple[Gpu, ...]  # the GPUs the process can see (after CUDA_VISIBLE_DEVICES)
    why_not: str = ""  # why TensorFlow uses none of the visible GPUs ("" when it uses them, or sees none)
    evidence: Mapping[str, Any] = MappingProxyType({})

    def __bool__(self) -> bool:
        return bool(self.gpus)

    @property
    def cpu_only(self) -> str:
        """A phrase for a finding: why ops run on the CPU."""
        if self.why_not:
            return f"TensorFlow cannot use this host's GPUs ({self.why_not})"
        return "TensorFlow sees no GPU"


def _cpu_only_build(facts: Facts) -> tuple[str, dict[str, Any]] | None:
    """(reason, evidence) when the TensorFlow that will be imported is CPU-only; None when it is a CUDA
    build or cannot be told."""
    build = tensorflow_build(facts)
    name = build.dist if build else None
    version = build.version if build else None
    if build is None:
        from tfdoctor.derive.tensorflow_distribution import installed_tensorflow

        try:
            dist = installed_tensorflow(facts)
        except NotChecked:
            return None
        if dist is None:
            return None
        name, version = dist.name, dist.version
    label = f"{name} {version}".strip() if name else "the installed TensorFlow"
    if name and (name.endswith("-cpu") or "-cpu-" in name):
        return f"{label} is a CPU-only distribution", {"tensorflow.distribution": name}
    if build is not None and not build.is_cuda_build:
        return (f"{label} was built without CUDA (build_info is_cuda_build: False)",
                {"tensorflow.distribution": name, "python.tensorflow.build_info.is_cuda_build": False})
    return None


def tensorflow_gpus(facts: Facts) -> TensorflowGpus:
    """The GPUs TensorFlow will use. Raises NotChecked when a driver is present but the GPUs are unknown."""
    visible = tuple(visible_gpus(facts))
    if not visible:
        return TensorflowGpus((), (), evidence={"gpus.visible": 0})
    cpu_only = _cpu_only_build(facts)
    if cpu_only is None:
        return TensorflowGpus(visible, visible)
    reason, evidence = cpu_only
    return TensorflowGpus((), visible, reason, {"gpus.visible": len(visible), "gpus.usable_by_tensorflow": 0,
                                                 **evidence})
