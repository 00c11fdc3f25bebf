"""PROF — what a micro-profile measured (facts section "profile", written by `tfdoctor profile`).

These checks only run on facts that hold a profile (`tfdoctor profile`, or `tfdoctor check --facts`
on a file saved with `tfdoctor profile --save-facts`); everywhere else they are "not checked".
"""

from __future__ import annotations

from collections.abc import Iterator

from tfdoctor.facts import Facts, NotChecked
from tfdoctor.model import Applicability, Finding, PythonFix, Severity
from tfdoctor.registry import check

PIPELINE_FIX = """\
# Overlap input with training and run the map in parallel:
dataset = dataset.map(parse, num_parallel_calls=tf.data.AUTOTUNE)
dataset = dataset.batch(batch_size).prefetch(tf.data.AUTOTUNE)
# Replace tf.py_function / tf.numpy_function maps with TensorFlow ops where you can (they hold the GIL),
# and cache what does not change between epochs: dataset = dataset.cache()
"""


def _profile(facts: Facts) -> dict:
    section = facts.get("profile")
    if not section.get("ok"):
        raise NotChecked(f"the profile run failed: {section.get('error')}")
    return section


@check("PROF001", "input-pipeline-bound", Severity.WARNING)
def input_pipeline_bound(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Reads the input-wait share the micro-profile measured: the part of each training step spent
    waiting for the next batch from tf.data.

    Why is this bad?
    While the step waits for input the CPU or GPU that should train sits idle: when more than half of
    the step is waiting, no thread, precision or compiler setting can make training faster — the
    pipeline is the bottleneck. Typical causes: a `tf.py_function` map (runs Python under the GIL),
    a map without `num_parallel_calls`, no `prefetch`, decoding the same files every epoch.

    Example:
    `dataset.map(tf.py_function(load, ...)).batch(32)` measured waiting 85 % of each step.

    Fix:
    Parallelize the map (`num_parallel_calls=tf.data.AUTOTUNE`), end the pipeline with
    `.prefetch(tf.data.AUTOTUNE)`, replace Python maps with TensorFlow ops, `.cache()` what repeats.

    Fix safety:
    Manual: the change is in your input pipeline code; it does not change what the model sees.
    """
    section = _profile(facts)
    share = section.get("input_share")
    if share is None:
        raise NotChecked("the profile recorded no input wait (no step markers)")
    if not section.get("input_bound"):
        return
    yield Finding(
        f"the {section['workload']} workload waited for input {share:.0%} of each step: it is input-bound",
        evidence={"profile.input_share": round(share, 4), "profile.workload": section["workload"]},
        fixes=(PythonFix("Parallelize and prefetch the tf.data pipeline", PIPELINE_FIX, Applicability.MANUAL),),
    )


@check("PROF002", "gpu-activity-not-captured", Severity.WARNING)
def gpu_activity_not_captured(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds a profile in which TensorFlow saw a GPU but the trace holds no device events.

    Why is this bad?
    Device events come from CUPTI; without them the profile cannot tell device time from host time,
    kernel names or precision, and TensorBoard's profile shows an empty GPU. The usual cause is a
    missing or mismatched libcupti, or profiling restricted to administrators
    (NVreg_RestrictProfilingToAdminUsers=1).

    Example:
    A profile on a machine whose LD_LIBRARY_PATH lacks CUDA's extras/CUPTI/lib64.

    Fix:
    Follow the CUPTI findings of `tfdoctor check` (library path, profiling permission), then profile again.

    Fix safety:
    Not applicable: this check points at other findings.
    """
    section = _profile(facts)
    captured = facts.get("profile.device_activity_captured")
    if captured is not False:
        return
    yield Finding(
        "a GPU is present but the profile holds no device events: CUPTI is not capturing "
        "(see the CUPTI findings of tfdoctor check)",
        evidence={"profile.device_activity_captured": False, "profile.devices": section.get("devices", [])},
    )


@check("PROF003", "profile-run-noisy", Severity.INFO)
def profile_run_noisy(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Reports a profile during which the hypervisor took a noticeable share of the CPU time (steal in
    /proc/stat above 5 %).

    Why is this bad?
    Stolen time lengthens steps at random: a noisy run's step times and comparisons say more about
    the neighbours on the host than about this environment.

    Example:
    A cloud VM on an oversubscribed host showing 12 % steal during the run.

    Fix:
    Profile again at a quieter time, or on a dedicated instance, before acting on the timings.

    Fix safety:
    Not applicable: information about the measurement.
    """
    section = _profile(facts)
    steal = section.get("cpu_steal")
    if not section.get("noisy") or steal is None:
        return
    yield Finding(
        f"the hypervisor took {steal:.0%} of the CPU time during the profile: its timings are noisy",
        evidence={"profile.cpu_steal": round(steal, 4)},
    )


@check("PROF004", "mixed-precision-measured-slower", Severity.INFO)
def mixed_precision_measured_slower(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Reads the comparison of mixed_float16 with float32 that `tfdoctor profile --measure-mixed-precision`
    ran on this machine, and reports a measured slowdown.

    Why is this bad?
    Mixed precision pays off only where the hardware computes float16 fast (GPU tensor cores, some
    CPUs with AMX-FP16); elsewhere every layer casts back and forth and the float16 kernels are
    emulated: on a CPU without native float16 math training gets several times slower. A measured
    slowdown outranks any suggestion drawn from the hardware's description: the MP checks read the
    same measurement (`profile.mixed_precision_speedup`) and stay silent when it is below 1.

    Example:
    mixed_float16 measured ×7.1 slower than float32 on a 2-core CPU VM.

    Fix:
    Keep the float32 policy on this machine (remove `set_global_policy('mixed_float16')`).

    Fix safety:
    Manual: the policy is set in your code.
    """
    section = _profile(facts)
    measured = facts.get("profile.mixed_precision")
    if measured.get("verdict") != "slower":
        return
    yield Finding(
        f"mixed_float16 measured slower than float32 on this machine: {measured.get('summary')}",
        evidence={"profile.mixed_precision.ratio": round(measured["ratio"], 3),
                  "profile.mixed_precision.low": round(measured["low"], 3),
                  "profile.workload": section["workload"]},
        fixes=(PythonFix("Keep the float32 policy",
                         "tf.keras.mixed_precision.set_global_policy('float32')", Applicability.MANUAL),),
    )
