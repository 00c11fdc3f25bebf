"""CUPTI under WSL2: GPU tracing where NVIDIA's CUDA on WSL guide lists the profiling tools among the
features WSL2 does not support. A check of the CUPTI family in a module of its own: CUPTI001–003 judge
the library and its privileges, which on WSL2 all look right while the tracer still records nothing."""

from __future__ import annotations

from collections.abc import Iterator

from tfdoctor.derive.profiling_intent import intends_to_profile
from tfdoctor.derive.tf_build import cuda_gpu_setup
from tfdoctor.facts import Facts, NotChecked, Unknown
from tfdoctor.model import AdminFix, Finding, Severity
from tfdoctor.registry import check

WSL2_KERNEL = "microsoft-standard-wsl2"


def on_wsl2(facts: Facts) -> bool:
    """WSL2: /dev/dxg (host.wsl2), or a kernel release naming it ("5.15.153.1-microsoft-standard-WSL2")."""
    kernel = facts.peek("host.kernel")
    return facts.peek("host.wsl2.detected") is True or (isinstance(kernel, str) and WSL2_KERNEL in kernel.lower())


@check("CUPTI004", "cupti-tracing-unsupported-on-wsl2", Severity.WARNING)
def cupti_tracing_unsupported_on_wsl2(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Under WSL2 (/dev/dxg and /usr/lib/wsl/lib, or a kernel release containing "microsoft-standard-WSL2")
    with a CUDA build of TensorFlow, finds that profiling is set up: a profiler plug-in is installed
    (tensorboard-plugin-profile, xprof, a TensorBoard before 2.2) or `tfdoctor profile` asks.

    Why is this bad?
    NVIDIA's CUDA on WSL user guide lists the developer tools' profiling among the features WSL2 does not
    support. TensorFlow's GPU tracer then fails although CUPTI loads and the driver allows profiling:
    "Failed to load libcupti" in TensorBoard (tensorflow/tensorflow#61210, TensorFlow 2.12, CUDA 11.8),
    CUPTI_ERROR_INVALID_DEVICE from cuptiSubscribe (#62895, TensorFlow 2.15, CUDA 12.2). The trace holds
    host activity only, and the profile's GPU figures are missing.

    Example:
    tensorflow[and-cuda] 2.15 and tensorboard-plugin-profile in Ubuntu under WSL2 on a GeForce RTX 4090.

    Fix:
    Profile the GPU on native Linux (a dual boot, a Linux host, a cloud VM); under WSL2 only the host
    side of the trace is recorded.

    Fix safety:
    Display only: another machine.
    """
    if not on_wsl2(facts) or cuda_gpu_setup(facts) is None:
        return
    if not intends_to_profile(facts):
        watched = facts.peek("python.watched")  # where a profiler plug-in would be seen
        if isinstance(watched, Unknown):
            raise NotChecked(f"python.watched: {watched.reason}")
        return
    yield Finding(
        f"GPU tracing with CUPTI under WSL2 (kernel {facts.peek('host.kernel')}): NVIDIA's CUDA on WSL guide "
        "lists profiling as not supported there; the TensorFlow Profiler will record host activity only",
        evidence={"host.wsl2.detected": facts.peek("host.wsl2.detected"), "host.kernel": facts.peek("host.kernel"),
                  "profiler_installed": True},
        fixes=(AdminFix("Profile the GPU on native Linux", (
            "run the profiling session on a native Linux host with the same GPU (WSL2 records host activity only)",
        )),))
