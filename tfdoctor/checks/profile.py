"""PROF — what a micro-profile measured (facts section "profile", written by `tfdoctor profile`).

These checks only run on facts that hold a profile (`tfdoctor profile`, or `tfdoctor check --facts`
on a file saved with `tfdoctor profile --save-facts`); everywhere else they are "not checked".
"""

from __future__ import annotations

from collections.abc import Iterator

from tfdoctor.facts import Facts, NotChecked, Unknown
from tfdoctor.model import Applicability, EnvFix, Finding, PythonFix, Severity, set_env
from tfdoctor.registry import check

PIPELINE_FIX = """\
# Overlap input with training and run the map in parallel:
dataset = dataset.map(parse, num_parallel_calls=tf.data.AUTOTUNE)
dataset = dataset.batch(batch_size).prefetch(tf.data.AUTOTUNE)
# Replace tf.py_function / tf.numpy_function maps with TensorFlow ops where you can (they hold the GIL),
# and cache what does not change between epochs: dataset = dataset.cache()
"""


NUMBER = (int, float)
OPTIONAL_NUMBER = (int, float, type(None))
OPTIONAL_MAPPING = (dict, type(None))


def _shaped(value: object, kinds: tuple[type, ...], what: str):
    """`value` when it has the shape `tfdoctor profile` writes, else NotChecked: a facts file damaged or
    edited by hand leaves a check "not checked", never crashed (tests/test_properties.py)."""
    if isinstance(value, Unknown):
        raise NotChecked(f"{what} is unknown: {value.reason}")
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise NotChecked(f"{what} is malformed in the facts ({type(value).__name__})")
    return value


def _profile(facts: Facts) -> dict:
    section = _shaped(facts.get("profile"), (dict,), "profile")
    if not section.get("ok"):
        raise NotChecked(f"the profile run failed: {section.get('error')}")
    return section


def _steps(section: dict) -> dict:
    return _shaped(section.get("steps"), OPTIONAL_MAPPING, "profile.steps") or {}


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
    share = _shaped(section.get("input_share"), OPTIONAL_NUMBER, "profile.input_share")
    if share is None:
        raise NotChecked("the profile measured no input wait: no steps were found (PROF010)"
                         if not _steps(section).get("count") else
                         "the profile measured no input wait (Keras steps without a trace)")
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
    steal = _shaped(section.get("cpu_steal"), OPTIONAL_NUMBER, "profile.cpu_steal")
    if not section.get("noisy") or steal is None:
        return
    yield Finding(
        f"the hypervisor took {steal:.0%} of the CPU time during the profile: its timings are noisy",
        evidence={"profile.cpu_steal": round(steal, 4)},
    )


@check("PROF004", "mixed-precision-measured-slower", Severity.INFO)
def mixed_precision_measured_slower(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Reads the comparison of a mixed-precision policy with float32 that `tfdoctor profile
    --measure-mixed-precision` ran on this machine (the policy declared in TFDOCTOR_MIXED_PRECISION,
    else the one the MP checks recommend here: mixed_bfloat16 on a CPU with bfloat16 units,
    mixed_float16 on tensor-core GPUs), and reports a measured slowdown.

    Why is this bad?
    Mixed precision pays off only where the hardware computes the low type fast (GPU tensor cores, CPUs
    with AMX or avx512_bf16 for bfloat16); elsewhere every layer casts back and forth and the kernels are
    emulated: float16 on a CPU without native float16 math trains several times slower. A measured
    slowdown outranks any suggestion drawn from the hardware's description: the MP checks read the
    same measurement (`profile.mixed_precision_speedup`) and stay silent when it is below 1.

    Example:
    mixed_float16 measured ×7.1 slower than float32 on a 2-core CPU VM.

    Fix:
    Keep the float32 policy on this machine (remove the `set_global_policy` call).

    Fix safety:
    Manual: the policy is set in your code.
    """
    section = _profile(facts)
    measured = _shaped(facts.get("profile.mixed_precision"), (dict,), "profile.mixed_precision")
    if measured.get("verdict") != "slower":
        return
    for name in ("ratio", "low"):
        _shaped(measured.get(name), NUMBER, f"profile.mixed_precision.{name}")
    policy = measured.get("policy") or "mixed_float16"  # profiles recorded before the policy was chosen
    yield Finding(
        f"{policy} measured slower than float32 on this machine: {measured.get('summary')}",
        evidence={"profile.mixed_precision.ratio": round(measured["ratio"], 3),
                  "profile.mixed_precision.low": round(measured["low"], 3),
                  "profile.workload": section["workload"]},
        fixes=(PythonFix("Keep the float32 policy",
                         "tf.keras.mixed_precision.set_global_policy('float32')", Applicability.MANUAL),),
    )


# -- the step-time breakdown (profile.breakdown, tfdoctor/profile/breakdown.py) ----------------------

DOMINANT_SHARE = 0.25  # a category that takes a quarter of every step is where the time goes
HALF_PRECISION_FLOOR = 0.10  # below this share of kernel time a mixed policy has not reached the GPU

LAUNCH_FIX = """\
# Launch fewer, larger kernels: run the step as one graph and let XLA fuse the small ops
@tf.function(jit_compile=True)
def train_step(x, y):
    ...
# with Keras: model.compile(..., jit_compile=True, steps_per_execution=32)
# and raise the batch size (x2-x4, memory permitting): the same launches then carry more work.
"""
COPIES_FIX = """\
# Copy the next batch to the GPU while this one trains, from pinned host memory:
dataset = dataset.apply(tf.data.experimental.prefetch_to_device("/gpu:0", buffer_size=2))
# (tf.distribute strategies: experimental_distribute_dataset prefetches to the devices itself)
# Keep tensors on the GPU between steps: avoid .numpy(), Python-side metrics and tf.py_function in the step.
"""
COMMUNICATION_FIX = """\
# Fewer, larger all-reduces, overlapped with the backward pass:
strategy = tf.distribute.MirroredStrategy(
    cross_device_ops=tf.distribute.NcclAllReduce())  # NCCL, not hierarchical copies
options = tf.distribute.experimental.CommunicationOptions(bytes_per_pack=32 * 1024 * 1024)
# optimizer.apply_gradients / strategy.reduce(..., options=options): gradient packing into 32 MB chunks
# Then run `tfdoctor check --select DIST,NUMA` for NCCL transport, topology and NIC findings.
"""
COMPILATION_FIX = """\
# Compile once: give every step the same shapes and dtypes
dataset = dataset.batch(batch_size, drop_remainder=True)      # no short last batch
dataset = dataset.padded_batch(batch_size, padded_shapes=...)  # pad variable lengths to buckets
@tf.function(reduce_retracing=True, input_signature=[...])   # one trace for all shapes
# and pass tensors, not Python numbers, into tf.function (each new Python value is a new graph).
"""
MIXED_PRECISION_KERNELS_FIX = """\
# Let the GPU's float16 units (tensor cores) do the math:
tf.keras.mixed_precision.set_global_policy("mixed_float16")  # before the model is built
# keep layer sizes (units, filters, batch, sequence length) multiples of 8;
# tensor cores need compute capability 7.0 or newer (V100, T4, A100, H100...).
"""


def _breakdown(facts: Facts) -> dict:
    _profile(facts)
    return _shaped(facts.get("profile.breakdown"), (dict,), "profile.breakdown")


def _dominant(facts: Facts, category: str) -> tuple[float, dict] | None:
    """(the category's share of the step time, the breakdown) when it takes ≥ DOMINANT_SHARE."""
    breakdown = _breakdown(facts)
    step_ms = breakdown.get("step_ms")
    categories = _shaped(breakdown.get("categories_ms", {}), (dict,), "profile.breakdown.categories_ms")
    spent = categories.get(category)
    if not isinstance(step_ms, (int, float)) or not isinstance(spent, (int, float)) or step_ms <= 0:
        raise NotChecked("the profile's step-time breakdown has no step time")
    share = spent / step_ms
    return (share, breakdown) if share >= DOMINANT_SHARE else None


def _breakdown_evidence(category: str, share: float, breakdown: dict) -> dict:
    return {f"profile.breakdown.categories_ms.{category}": round(breakdown["categories_ms"][category], 3),
            "profile.breakdown.step_ms": round(breakdown["step_ms"], 3), "share": round(share, 4)}


@check("PROF005", "steps-launch-bound", Severity.WARNING)
def steps_launch_bound(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Reads the step-time breakdown of the profile and reports steps in which the GPU sits idle for at
    least a quarter of the time while the host is launching kernels (CUDA launch calls and the host side
    of the ops that make them).

    Why is this bad?
    Each kernel launch costs the host several microseconds; when the kernels are small (small batch,
    many small ops, eager execution, Python between ops) the GPU finishes each one before the next is
    launched and waits. A faster GPU does not help: the step is bound by the host's launch rate.

    Example:
    A small model with batch 8 in eager mode: 16 kernels of 0.1 ms per step, each launched in 0.4 ms —
    64 % of the step is the GPU waiting for launches.

    Fix:
    Run the step as a `tf.function` (one graph, launched by TensorFlow's executor) with XLA
    (`jit_compile=True`) to fuse small ops into fewer kernels; raise the batch size so each launch
    carries more work; `TF_GPU_THREAD_MODE=gpu_private` gives each GPU its own launch threads so they
    are not delayed by the input pipeline's.

    Fix safety:
    Unsafe: gpu_private dedicates two host threads per GPU (fewer for the rest); the code changes are manual.
    """
    found = _dominant(facts, "launch")
    if not found:
        return
    share, breakdown = found
    yield Finding(
        f"the GPU waited for kernel launches {share:.0%} of each step "
        f"({breakdown['categories_ms']['launch']:.2f} of {breakdown['step_ms']:.2f} ms): the steps are launch-bound",
        evidence=_breakdown_evidence("launch", share, breakdown),
        fixes=(PythonFix("Compile the step with tf.function and XLA, and raise the batch size", LAUNCH_FIX,
                         Applicability.MANUAL),
               EnvFix("Give each GPU its own kernel-launch threads",
                      (set_env("TF_GPU_THREAD_MODE", "gpu_private"),), Applicability.UNSAFE)),
    )


@check("PROF006", "steps-copy-bound", Severity.WARNING)
def steps_copy_bound(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Reports steps that spend at least a quarter of their time in host↔device copies that no kernel
    overlaps (memcpy on the GPU's copy streams, or synchronous memcpy calls on the host).

    Why is this bad?
    A copy the GPU waits for is time it does not compute. Copies from pageable host memory are staged
    through a bounce buffer and cannot overlap compute; copies issued inside the step (reading a metric
    back with `.numpy()`, feeding NumPy arrays) serialize with it.

    Example:
    Each step copies a 60 MB batch of float32 images from pageable memory: 4 ms of a 10 ms step.

    Fix:
    Prefetch batches to the GPU while the previous step trains
    (`tf.data.experimental.prefetch_to_device`), so copies come from pinned memory and overlap; keep
    tensors on the GPU between steps; send smaller dtypes (uint8 images, cast on the GPU).

    Fix safety:
    Manual: the change is in your input pipeline and training loop.
    """
    found = _dominant(facts, "copies")
    if not found:
        return
    share, breakdown = found
    yield Finding(
        f"host-device copies took {share:.0%} of each step "
        f"({breakdown['categories_ms']['copies']:.2f} of {breakdown['step_ms']:.2f} ms) with no kernel running",
        evidence=_breakdown_evidence("copies", share, breakdown),
        fixes=(PythonFix("Prefetch batches to the GPU from pinned memory", COPIES_FIX, Applicability.MANUAL),),
    )


@check("PROF007", "steps-communication-bound", Severity.WARNING)
def steps_communication_bound(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Reports steps that spend at least a quarter of their time in NCCL collectives (all-reduce,
    all-gather…) that no compute kernel overlaps.

    Why is this bad?
    In data-parallel training every step all-reduces the gradients; when that is not overlapped with
    the backward pass, or runs over a slow path (PCIe through the host instead of NVLink, TCP instead
    of InfiniBand, many small tensors each with its own all-reduce), the GPUs wait for each other.

    Example:
    Two GPUs on different PCIe switches without P2P: 4 ms of NCCL all-reduce in a 10 ms step.

    Fix:
    Pack gradients into fewer, larger all-reduces (`CommunicationOptions(bytes_per_pack=...)`), use the
    NCCL cross-device ops, and follow the NCCL and topology findings of `tfdoctor check`
    (`--select DIST,NUMA`): P2P and NVLink, the InfiniBand transport, the NIC near each GPU.

    Fix safety:
    Manual: the changes are in your distribution strategy and the cluster's configuration.
    """
    found = _dominant(facts, "communication")
    if not found:
        return
    share, breakdown = found
    yield Finding(
        f"NCCL communication took {share:.0%} of each step "
        f"({breakdown['categories_ms']['communication']:.2f} of {breakdown['step_ms']:.2f} ms) "
        "with no compute overlapping it",
        evidence=_breakdown_evidence("communication", share, breakdown),
        fixes=(PythonFix("Pack gradients into fewer all-reduces and check the NCCL setup", COMMUNICATION_FIX,
                         Applicability.MANUAL),),
    )


@check("PROF008", "steps-compilation-bound", Severity.WARNING)
def steps_compilation_bound(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Reports timed steps that spend at least a quarter of their time compiling with XLA (the warm-up
    steps are not timed, so this is compilation that keeps happening).

    Why is this bad?
    XLA compiles a cluster once per distinct set of input shapes and dtypes. When shapes change from
    step to step (a short last batch, variable sequence lengths, Python numbers passed into a
    `tf.function`) every new shape compiles again, and a compile takes from tens of milliseconds to
    minutes while the GPU waits.

    Example:
    Sequence batches of varying length under `jit_compile=True`: 5 ms of every 10 ms step in `_XlaCompile`.

    Fix:
    Give every step the same shapes: `drop_remainder=True`, bucket and pad variable lengths, an
    `input_signature` or `reduce_retracing=True` on the `tf.function`, tensors instead of Python values.

    Fix safety:
    Manual: the change is in your input pipeline and function signatures.
    """
    found = _dominant(facts, "compilation")
    if not found:
        return
    share, breakdown = found
    yield Finding(
        f"XLA compilation took {share:.0%} of each timed step "
        f"({breakdown['categories_ms']['compilation']:.2f} of {breakdown['step_ms']:.2f} ms): shapes keep changing",
        evidence=_breakdown_evidence("compilation", share, breakdown),
        fixes=(PythonFix("Keep input shapes stable so XLA compiles once", COMPILATION_FIX, Applicability.MANUAL),),
    )


@check("PROF009", "mixed-precision-not-on-gpu", Severity.WARNING)
def mixed_precision_not_on_gpu(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Compares the run's mixed dtype policy with the GPU kernels that actually ran: the share of kernel
    time in float16/bfloat16 kernels and whether any tensor-core kernel ran (both read from the kernel
    names in the profile).

    Why is this bad?
    Mixed precision is fast only when the math reaches the GPU's tensor cores. It falls back silently:
    a policy set after the model was built, custom layers that compute in float32, layer sizes that are
    not multiples of 8 (cuBLAS and cuDNN then pick ordinary kernels), a GPU older than Volta. The job
    then pays for the casts and gets nothing for them.

    Example:
    Policy mixed_float16, but 100 % of the kernel time is in `volta_sgemm_128x64_nn` and
    `implicit_convolve_sgemm`: float32 kernels, no tensor cores.

    Fix:
    Set the policy before building the model, keep units, filters and batch sizes multiples of 8, and
    use a GPU with compute capability 7.0 or newer.

    Fix safety:
    Manual: the change is in your model code.
    """
    section = _profile(facts)
    _breakdown(facts)
    policy = section.get("policy")
    if not isinstance(policy, str):
        raise NotChecked("the dtype policy of the profiled run is unknown")
    if not policy.startswith("mixed_"):
        return
    share = _shaped(facts.get("profile.breakdown.half_precision_device_share"), NUMBER,
                    "profile.breakdown.half_precision_device_share")
    tensor_core = facts.get("profile.breakdown.tensor_core_kernels")
    evidence = {"profile.policy": policy, "profile.breakdown.half_precision_device_share": round(share, 4),
                "profile.breakdown.tensor_core_kernels": tensor_core}
    fix = PythonFix("Make the mixed policy reach the GPU's tensor cores", MIXED_PRECISION_KERNELS_FIX,
                    Applicability.MANUAL)
    if share < HALF_PRECISION_FLOOR:
        yield Finding(f"the policy is {policy} but only {share:.0%} of the GPU kernel time ran in float16/bfloat16 "
                      "kernels: mixed precision fell back to float32", evidence=evidence, fixes=(fix,))
    elif not tensor_core:
        yield Finding(f"the policy is {policy} and {share:.0%} of the GPU kernel time ran in float16/bfloat16 "
                      "kernels, but none of them on tensor cores", evidence=evidence, fixes=(fix,))


# -- a script whose steps were not found ------------------------------------------------------------

STEP_MARKER_FIX = """\
# Mark each training step (the time between two marked steps counts as waiting for input):
for step, (x, y) in enumerate(dataset):
    with tf.profiler.experimental.Trace("train", step_num=step, _r=1):
        train_step(x, y)
"""
PY_FUNCTION_OPS = frozenset({"EagerPyFunc", "PyFunc", "PyFuncStateless", "EagerPyFuncStateless"})
PY_FUNCTION_SHARE = 0.5  # Python holds more than half of TensorFlow's op time on the host


def _no_steps(section: dict) -> bool:
    return not _steps(section).get("count")


@check("PROF010", "profile-steps-not-found", Severity.INFO)
def profile_steps_not_found(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Reports a profiled script in which no training steps were found: no step markers, no Keras
    `fit`/`evaluate`/`predict` batches, no `tf.function` called at least 5 times (or all of them were
    warm-up steps).

    Why is this bad?
    Without steps the profile has no step time and no input wait: the input-pipeline check (PROF001)
    and the step-time breakdown cannot run, and what the trace shows cannot be put per step. A loop
    that runs its step eagerly (no `tf.function`), or in a function called from several places, is the
    usual reason.

    Example:
    A custom loop calling an eager `train_step(x, y)`: the profile reports 0 steps, input wait unknown.

    Fix:
    Mark each training step with `tf.profiler.experimental.Trace("train", step_num=step, _r=1)` (see
    docs/profile.md), or run the step as a `tf.function`; run more steps than `--warmup`.

    Fix safety:
    Manual: the marker is a line in your script; it does not change what the script computes.
    """
    section = _profile(facts)
    if section.get("workload") != "script" or not _no_steps(section):
        return
    excluded = _shaped(_steps(section).get("excluded_warmup"), OPTIONAL_NUMBER, "profile.steps.excluded_warmup") or 0
    candidates = _shaped(section.get("step_candidates"), (list, type(None)), "profile.step_candidates") or []
    candidates = [_shaped(c, (dict,), "profile.step_candidates[]") for c in candidates]
    seen = [f"{c.get('name')} ×{c.get('calls')}" for c in candidates]
    why = (f"all {excluded} steps found were warm-up steps (--warmup)" if excluded else
           "no step markers, no Keras fit/evaluate/predict batches, no tf.function called 5 times or more"
           + (f" (seen: {', '.join(seen)})" if seen else ""))
    yield Finding(
        f"no training steps were found in the script: {why}; step time and input wait are unknown",
        evidence={"profile.steps.count": 0, "profile.steps.excluded_warmup": excluded,
                  "profile.step_candidates": [c.get("name") for c in candidates]},
        fixes=(PythonFix("Mark each training step for the profiler", STEP_MARKER_FIX, Applicability.MANUAL),),
    )


@check("PROF011", "python-function-dominates-op-time", Severity.WARNING)
def python_function_dominates_op_time(facts: Facts) -> Iterator[Finding]:
    """What it does:
    In a profile whose input wait could not be measured (its steps were not found), reports Python
    functions run as TensorFlow ops (`tf.py_function` → EagerPyFunc, `tf.numpy_function` → PyFunc)
    that take more than half of the op time on the host.

    Why is this bad?
    A Python function inside a graph or a tf.data map runs under the GIL, one call at a time, however
    many threads tf.data or TensorFlow give it. When it holds most of the op time it is, almost
    always, the input pipeline's bottleneck — the thing PROF001 would measure if the steps were known.

    Example:
    `dataset.map(lambda x: tf.py_function(decode, [x], tf.float32))`: EagerPyFunc 97 % of the host op time.

    Fix:
    Replace the Python function with TensorFlow ops (tf.io, tf.image, tf.strings); failing that run
    it in parallel (`num_parallel_calls`) and `.prefetch` so it overlaps the training step; then mark
    the steps (PROF010) and profile again to measure the input wait.

    Fix safety:
    Manual: the change is in your input pipeline code.
    """
    section = _profile(facts)
    if section.get("input_share") is not None:
        return  # measured: PROF001 judges the input wait itself
    top = section.get("top_ops")
    if not isinstance(top, list):
        raise NotChecked("the profile's op times are unknown")
    rows = [r for r in top if isinstance(r, dict) and r.get("where") == "host" and isinstance(r.get("op"), str)
            and r.get("op") in PY_FUNCTION_OPS]
    shares = [r.get("share") or 0.0 for r in rows]
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in shares):
        raise NotChecked("malformed top_ops share")
    share = sum(float(v) for v in shares)
    if share <= PY_FUNCTION_SHARE:
        return
    names = ", ".join(str(r["op"]) for r in rows)
    yield Finding(
        f"Python functions run as TensorFlow ops ({names}) took {share:.0%} of the host op time; the input wait "
        "could not be measured, but such a function is usually the input bottleneck",
        evidence={"profile.top_ops.python_function_share": round(share, 4), "profile.top_ops.ops": names},
        fixes=(PythonFix("Replace the Python function with TensorFlow ops, or parallelize and prefetch it",
                         PIPELINE_FIX, Applicability.MANUAL),),
    )
