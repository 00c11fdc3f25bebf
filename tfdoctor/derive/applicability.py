"""Which checks cannot apply to a machine: a GPU check on a host with no NVIDIA GPU and no driver; a check
of TensorFlow's installation in a Python environment without TensorFlow (PKG001 says that one).

Such a check ran and found nothing, but "passed" would claim it looked at something: its result is
"not applicable", with the reason. Only positive evidence of absence counts: the PCI bus was read and
lists no NVIDIA GPU, and no driver is loaded. When the bus could not be read the check keeps its own
verdict. A finding is never hidden: only a check that found nothing becomes not applicable.
"""

from __future__ import annotations

from tfdoctor.facts import Facts

# The checks about NVIDIA GPUs, by code prefix (longest match wins, as in --select). GPU105
# (TF_CPP_MIN_LOG_LEVEL) and GPU106 (deterministic ops) matter on a CPU too; XLA1xx parse flags that
# XLA's CPU backend reads as well; NUMA101 sizes the thread pools of CPU-only ranks bound to a node too; CTR003
# (an emulated x86 image) needs no GPU.
GPU_ONLY_PREFIXES = ("CUDA", "CUPTI", "DRV", "GPU0", "GPU101", "GPU102", "GPU103", "GPU104", "NUMA00", "NUMA102",
                     "XLA0", "CTR001", "CTR002")

NO_GPU = "no NVIDIA GPU or driver on this host"


def no_gpu_reason(facts: Facts) -> str | None:
    """Why no GPU check can apply here, or None when a GPU may be present (or it cannot be told). A Jetson
    has an NVIDIA GPU these checks cannot see (integrated in the Tegra SoC): they do not apply, and the
    reason says so rather than "no NVIDIA GPU"."""
    from tfdoctor.derive.tf_build import gpu_host

    platform = platform_reason(facts)
    if platform is not None:
        return platform

    if gpu_host(facts) or not isinstance(facts.peek("gpu_pci.devices"), list):
        return None  # a GPU is visible, or the bus could not be read: absence is not shown
    return f"{NO_GPU} (the PCI bus lists none, /proc/driver/nvidia is absent)"


def gpu_only(code: str) -> bool:
    return code.startswith(GPU_ONLY_PREFIXES)


MACOS = ("macOS: TensorFlow has no CUDA build for macOS (its GPU is reached through the Metal plug-in, "
         "PLAT011); the NVIDIA GPU checks do not apply")


def platform_reason(facts: Facts) -> str | None:
    """Why the checks of discrete NVIDIA GPUs on Linux cannot apply to this platform, whatever else they
    could not read: a Jetson (its GPU integrated in the Tegra SoC) or a Mac. None on other hosts, and on a
    Jetson where a discrete GPU is visible after all."""
    from tfdoctor.derive.platforms import jetson_reason
    from tfdoctor.derive.tf_build import gpu_host

    if facts.peek("host.system") == "Darwin" or facts.peek("darwin.detected") is True:
        return MACOS
    jetson = jetson_reason(facts)
    return jetson if jetson is not None and not gpu_host(facts) else None
# The checks of an installed TensorFlow: its distributions, dependencies, files, build and add-ons, and
# CPU001 (the wheel's instruction set), PKG021 (TensorFlow's requirement graph), PKG030 (the channels of
# TensorFlow's conda stack). Not PKG001 (it reports the absence) nor PKG013 (any package shadowed from
# outside the environment, numpy as much as TensorFlow's).
TENSORFLOW_ONLY_CODES = frozenset({"CPU001", *(f"PKG{n:03d}" for n in (*range(2, 13), *range(14, 19), 21, 30))})

NO_TENSORFLOW = "TensorFlow is not installed in the inspected Python environment (PKG001)"


def tensorflow_only(code: str) -> bool:
    return code in TENSORFLOW_ONLY_CODES


def no_tensorflow_reason(facts: Facts) -> str | None:
    """Why no check of TensorFlow's installation can apply, or None when it is installed (or it cannot be
    told: the Python environment was not read)."""
    from tfdoctor.derive.tensorflow_distribution import tensorflow_distributions

    package_dir, watched = facts.peek("python.tensorflow.package_dir"), facts.peek("python.watched")
    if package_dir is None and isinstance(watched, dict):
        try:
            if not tensorflow_distributions(facts):
                return NO_TENSORFLOW
        except Exception:  # a malformed environment fact: the checks keep their own verdicts
            return None
    return None
