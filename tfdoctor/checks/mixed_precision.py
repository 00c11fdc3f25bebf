"""MP — mixed precision against the hardware: tensor cores on the GPU, bfloat16 units on the CPU.

"The GPU" is one TensorFlow can use (tfdoctor/derive/tensorflow_gpus.py): tensorflow-cpu on a GPU host
computes on the CPU, so the CPU rules apply there.

The policy in use is what the user declares (TFDOCTOR_MIXED_PRECISION, keras.json floatx; see
tfdoctor/derive/precision.py); TF_ENABLE_AUTO_MIXED_PRECISION is read on its own. A measured speed-up from
the micro-profile (`profile.mixed_precision_speedup`) overrides the hardware tables.
"""

from __future__ import annotations

from collections.abc import Iterator

from tfdoctor.derive.gpu_inventory import Gpu
from tfdoctor.derive.precision import (
    BFLOAT16_POLICIES,
    CPU_BF16_SPEEDUP,
    CPU_FLOAT16_SLOWDOWN,
    FLOAT16_POLICIES,
    POLICIES,
    POLICY_VARIABLE,
    Policy,
    PolicyDeclarationError,
    auto_mixed_precision_enabled,
    cpu_bf16_flags,
    declared_policy,
    has_bf16_tensor_cores,
    has_tensor_cores,
    measured_speedup,
    recommended_policy,
    set_policy_code,
)
from tfdoctor.derive.release_knowledge import VariableRule, variable_rule
from tfdoctor.derive.tensorflow_gpus import tensorflow_gpus
from tfdoctor.facts import Facts
from tfdoctor.model import AdminFix, Applicability, EnvFix, Finding, PythonFix, Severity, unset_env
from tfdoctor.registry import check

# A suggestion needs a measured gain above noise before it is worth numerics changes.
WORTHWHILE_SPEEDUP = 1.05


def _policy(facts: Facts) -> Policy | None:
    try:
        return declared_policy(facts)
    except PolicyDeclarationError:
        return None  # MP001 reports it; the other checks treat the policy as undeclared


def _policy_fix(policy: str, why: str) -> PythonFix:
    return PythonFix(f"Set the Keras policy to {policy} ({why})", set_policy_code(policy), Applicability.UNSAFE)


def _gpu_list(gpus: list[Gpu]) -> list[str]:
    return [f"{g.index}: {g.name} (cc {g.cc_text})" for g in gpus]


@check("MP001", "mixed-precision-declaration-invalid", Severity.WARNING)
def mixed_precision_declaration_invalid(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Checks that TFDOCTOR_MIXED_PRECISION, which tells tfdoctor the Keras policy the training script
    sets, names a policy: mixed_float16, mixed_bfloat16, float32, float16 or bfloat16.

    Why is this bad?
    A misspelt declaration makes every mixed-precision check treat the policy as undeclared.

    Example:
    TFDOCTOR_MIXED_PRECISION=mixed_fp16

    Fix:
    Set it to the policy name the script passes to set_global_policy.

    Fix safety:
    Display only: tfdoctor cannot know which policy the script sets.
    """
    raw = facts.env(POLICY_VARIABLE)
    try:
        declared_policy(facts)
    except PolicyDeclarationError:
        yield Finding(f"{POLICY_VARIABLE}={raw!r} is not a Keras policy ({', '.join(POLICIES)})",
                      evidence={f"env.{POLICY_VARIABLE}": raw})


@check("MP101", "low-precision-without-gpu-support", Severity.WARNING)
def low_precision_without_gpu_support(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds a float16 policy on GPUs without tensor cores (compute capability below 7.0, or a Turing
    GTX 16xx part), or a bfloat16 policy on GPUs older than Ampere (8.0).

    Why is this bad?
    Without tensor cores float16 matrix math runs at float32 speed or slower, so the policy buys
    nothing but casts and loss-scaling overhead (and float16's numerical risk). Before Ampere,
    bfloat16 has no tensor-core path at all and is emulated.

    Example:
    TFDOCTOR_MIXED_PRECISION=mixed_float16 on a Tesla P100 (6.0) or a GeForce GTX 1660 (7.5).

    Fix:
    Keep float32 on these GPUs.

    Fix safety:
    Unsafe: the policy changes numerics.
    """
    policy = _policy(facts)
    if policy is None or policy.name not in (*FLOAT16_POLICIES, *BFLOAT16_POLICIES):
        return
    gpus = list(tensorflow_gpus(facts).gpus)
    if not gpus:
        return
    speedup = measured_speedup(facts, policy.name)
    if speedup is not None and speedup >= WORTHWHILE_SPEEDUP:
        return
    bf16 = policy.name in BFLOAT16_POLICIES
    capable = [g for g in gpus if (has_bf16_tensor_cores(g) if bf16 else has_tensor_cores(g))]
    if capable:
        return
    unit = "bfloat16 tensor cores (Ampere, 8.0+)" if bf16 else "float16 tensor cores"
    yield Finding(
        f"policy {policy.name} ({policy.source}) but no visible GPU has {unit}: "
        f"{', '.join(_gpu_list(gpus))}",
        evidence={policy.source: policy.name, "gpus.visible": _gpu_list(gpus),
                  **({"profile.mixed_precision_speedup": speedup} if speedup is not None else {})},
        fixes=(_policy_fix("float32", "no tensor-core gain on these GPUs"),),
    )


@check("MP102", "mixed-precision-unused-on-tensor-core-gpu", Severity.INFO)
def mixed_precision_unused_on_tensor_core_gpu(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds GPUs that all have tensor cores (compute capability 7.0+, not a GTX 16xx) while no
    mixed-precision policy is declared and TF_ENABLE_AUTO_MIXED_PRECISION is off.

    Why is this bad?
    In float32 the tensor cores sit idle: mixed_float16 typically speeds up convolution- and
    matmul-heavy models 1.5-3× and halves activation memory. Ampere and newer (8.0+) also run
    mixed_bfloat16, which needs no loss scaling.

    Example:
    Two A100s, TFDOCTOR_MIXED_PRECISION unset, keras.json floatx float32.

    Fix:
    Call tf.keras.mixed_precision.set_global_policy("mixed_float16") (or "mixed_bfloat16" on 8.0+)
    before building the model; then declare it with TFDOCTOR_MIXED_PRECISION. When the
    micro-profile measured no gain, this check stays silent.

    Fix safety:
    Unsafe: reduced precision changes numerics; keep the final softmax/loss in float32.
    """
    policy = _policy(facts)
    if (policy is not None and policy.name != "float32") or auto_mixed_precision_enabled(facts):
        return
    gpus = list(tensorflow_gpus(facts).gpus)
    recommended = recommended_policy(facts)
    if not gpus or recommended is None or recommended.policy != "mixed_float16":
        return
    speedup = measured_speedup(facts, "mixed_float16")
    if speedup is not None and speedup < WORTHWHILE_SPEEDUP:
        return
    fixes = [_policy_fix("mixed_float16", "tensor cores")]
    if all(has_bf16_tensor_cores(g) for g in gpus):
        fixes.append(_policy_fix("mixed_bfloat16", "tensor cores, no loss scaling needed"))
    evidence: dict[str, object] = {"gpus.visible": _gpu_list(gpus)}
    if policy is not None:
        evidence[policy.source] = policy.name
    if speedup is not None:
        evidence["profile.mixed_precision_speedup"] = speedup
    gain = f" (measured {speedup:.2f}× faster)" if speedup is not None else ""
    yield Finding(
        f"the visible GPUs have tensor cores but no mixed-precision policy is declared{gain}",
        evidence=evidence,
        fixes=tuple(fixes),
    )


@check("MP103", "float16-on-cpu", Severity.WARNING)
def float16_on_cpu(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds a float16 policy (mixed_float16 or float16) where TensorFlow runs on the CPU: no GPU is
    visible, or the installed TensorFlow cannot use one (tensorflow-cpu, a build without CUDA).

    Why is this bad?
    x86 CPUs have no float16 arithmetic in TensorFlow's kernels: values are converted to and from
    float32 around every op. Measured here: 7.1× slower than float32.

    Example:
    TFDOCTOR_MIXED_PRECISION=mixed_float16 on a CPU-only node.

    Fix:
    Use mixed_bfloat16 when the CPU has avx512_bf16 or amx_bf16, else float32.

    Fix safety:
    Unsafe: the policy changes numerics.
    """
    policy = _policy(facts)
    if policy is None or policy.name not in FLOAT16_POLICIES:
        return
    gpus = tensorflow_gpus(facts)
    if gpus:
        return
    speedup = measured_speedup(facts, policy.name)
    if speedup is not None and speedup >= 1.0:
        return
    bf16 = cpu_bf16_flags(facts)
    fix = (_policy_fix("mixed_bfloat16", f"this CPU has {', '.join(bf16)}") if bf16
           else _policy_fix("float32", "no low-precision arithmetic on this CPU"))
    slower = 1 / speedup if speedup else CPU_FLOAT16_SLOWDOWN
    source = "measured on this host" if speedup else "measured on a reference CPU"
    yield Finding(
        f"policy {policy.name} ({policy.source}) but {gpus.cpu_only}: float16 on the CPU runs about "
        f"{slower:.1f}× slower than float32 ({source})",
        evidence={policy.source: policy.name, **gpus.evidence, "cpu.cpuinfo.flags.bf16": bf16,
                  **({"profile.mixed_precision_speedup": speedup} if speedup is not None else {})},
        fixes=(fix,),
    )


@check("MP104", "bfloat16-on-cpu-without-bf16-units", Severity.WARNING)
def bfloat16_on_cpu_without_bf16_units(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds a bfloat16 policy where TensorFlow runs on the CPU (no GPU, or a CPU-only TensorFlow on a GPU
    host) and the CPU has neither avx512_bf16 nor amx_bf16.

    Why is this bad?
    Without those instructions oneDNN emulates bfloat16 by converting to float32 and back: slower
    than plain float32, with less precision.

    Example:
    TFDOCTOR_MIXED_PRECISION=mixed_bfloat16 on a Skylake or Zen 3 server.

    Fix:
    Keep float32 on this CPU (bfloat16 pays on Cooper Lake, Sapphire Rapids, Zen 4 and newer).

    Fix safety:
    Unsafe: the policy changes numerics.
    """
    policy = _policy(facts)
    if policy is None or policy.name not in BFLOAT16_POLICIES:
        return
    gpus = tensorflow_gpus(facts)
    if gpus:
        return
    if cpu_bf16_flags(facts):
        return
    speedup = measured_speedup(facts, policy.name)
    if speedup is not None and speedup >= 1.0:
        return
    yield Finding(
        f"policy {policy.name} ({policy.source}) on a CPU without avx512_bf16 or amx_bf16: bfloat16 is "
        "emulated and slower than float32",
        evidence={policy.source: policy.name, **gpus.evidence, "cpu.cpuinfo.flags.bf16": [],
                  **({"profile.mixed_precision_speedup": speedup} if speedup is not None else {})},
        fixes=(_policy_fix("float32", "no bfloat16 units on this CPU"),),
    )


@check("MP105", "bfloat16-unused-on-cpu-with-bf16-units", Severity.INFO)
def bfloat16_unused_on_cpu_with_bf16_units(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds TensorFlow running on the CPU (no GPU, or a CPU-only TensorFlow on a GPU host) of a CPU that
    has avx512_bf16 or amx_bf16, while no bfloat16 policy is declared.

    Why is this bad?
    oneDNN runs bfloat16 convolutions and matmuls natively on these CPUs (AMX tiles on Sapphire
    Rapids): on this project's reference CPU with avx512_bf16 (docs/framework.md), not on yours,
    mixed_bfloat16 trained 2.0× faster than float32; `tfdoctor profile --measure-mixed-precision`
    measures it on this machine, and the finding then quotes that figure instead.

    Example:
    A Sapphire Rapids node, TFDOCTOR_MIXED_PRECISION unset.

    Fix:
    Call tf.keras.mixed_precision.set_global_policy("mixed_bfloat16") before building the model.
    When the micro-profile measured no gain, this check stays silent.

    Fix safety:
    Unsafe: reduced precision changes numerics.
    """
    policy = _policy(facts)
    if policy is not None and policy.name != "float32":
        return
    gpus = tensorflow_gpus(facts)
    recommended = recommended_policy(facts)
    if recommended is None or recommended.policy != "mixed_bfloat16":
        return
    bf16 = cpu_bf16_flags(facts)
    speedup = measured_speedup(facts, "mixed_bfloat16")
    if speedup is not None and speedup < WORTHWHILE_SPEEDUP:
        return
    figure = f"{speedup:.2f}× measured on this host" if speedup else f"{CPU_BF16_SPEEDUP:.1f}× on a reference CPU"
    yield Finding(
        f"this CPU has {', '.join(bf16)} but no bfloat16 policy is declared (mixed_bfloat16: {figure})",
        evidence={"cpu.cpuinfo.flags.bf16": bf16, **gpus.evidence,
                  **({policy.source: policy.name} if policy else {}),
                  **({"profile.mixed_precision_speedup": speedup} if speedup is not None else {})},
        fixes=(_policy_fix("mixed_bfloat16", f"this CPU has {', '.join(bf16)}"),),
    )


@check("MP106", "auto-mixed-precision-without-tensor-core-gpu", Severity.WARNING)
def auto_mixed_precision_without_tensor_core_gpu(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds TF_ENABLE_AUTO_MIXED_PRECISION on, under a TensorFlow that reads it (NVIDIA's TensorFlow 1
    builds; TensorFlow 2 ignores it: MP107), while no GPU TensorFlow can use has tensor cores (none
    visible, or a CPU-only TensorFlow on a GPU host).

    Why is this bad?
    There the variable turns on Grappler's float16 graph rewrite, which only rewrites ops placed on a GPU
    of compute capability 7.0 or newer; elsewhere it logs "No (suitable) GPUs detected, skipping
    auto_mixed_precision graph optimizer" and does nothing. The job runs float32 while its owner
    believes it runs mixed precision.

    Example:
    TF_ENABLE_AUTO_MIXED_PRECISION=1 on a CPU-only node or a P100.

    Fix:
    Unset the variable (on CPUs with avx512_bf16/amx_bf16, use the mixed_bfloat16 Keras policy).

    Fix safety:
    Safe: the rewrite does nothing on this host.
    """
    if not auto_mixed_precision_enabled(facts) or _amp_ignored(facts):
        return
    usable = tensorflow_gpus(facts)
    gpus = list(usable.gpus)
    if any(has_tensor_cores(g) for g in gpus):
        return
    where = f"{usable.cpu_only}" if usable.why_not else "no visible GPU has tensor cores"
    yield Finding(
        f"TF_ENABLE_AUTO_MIXED_PRECISION is on but {where}: the graph rewrite is "
        "skipped and the job runs in float32",
        evidence={"env.TF_ENABLE_AUTO_MIXED_PRECISION": facts.env("TF_ENABLE_AUTO_MIXED_PRECISION"),
                  "gpus.visible": _gpu_list(gpus), **({"tensorflow.gpus": usable.why_not} if usable.why_not else {})},
        fixes=(EnvFix("Unset TF_ENABLE_AUTO_MIXED_PRECISION", (unset_env("TF_ENABLE_AUTO_MIXED_PRECISION"),)),),
    )


def _amp_ignored(facts: Facts) -> VariableRule | None:
    """The tensorflow_variables row saying the installed TensorFlow ignores TF_ENABLE_AUTO_MIXED_PRECISION."""
    rule = variable_rule(facts, "TF_ENABLE_AUTO_MIXED_PRECISION", "")
    return rule if rule is not None and rule.effect == "ignored" else None


@check("MP107", "auto-mixed-precision-graph-rewrite", Severity.WARNING)
def auto_mixed_precision_graph_rewrite(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds TF_ENABLE_AUTO_MIXED_PRECISION on and says what the installed TensorFlow does with it
    (tfdoctor/knowledge/tensorflow_variables.toml). TensorFlow 2 never reads it: the variable belongs to
    NVIDIA's TensorFlow 1 builds (the NGC TensorFlow 1 containers, nvidia-tensorflow 1.15), where it turns
    on Grappler's float16 graph rewrite; NVIDIA's TensorFlow 2 containers log "TF_ENABLE_AUTO_MIXED_PRECISION
    has no effect.". Under such a TensorFlow 1, with a tensor-core GPU, it says what the rewrite leaves out.

    Why is this bad?
    Under TensorFlow 2 the owner believes the job trains in mixed precision; it runs in float32 at float32
    speed, unless the script sets a Keras policy itself. Under NVIDIA's TensorFlow 1 the rewrite changes
    graphs only and adds no loss scaling unless the optimizer was wrapped, so float16 gradients may
    underflow to zero.

    Example:
    TF_ENABLE_AUTO_MIXED_PRECISION=1 with TensorFlow 2.15 and a Keras model on a V100.

    Fix:
    Unset the variable and set the Keras policy mixed_float16 in the script (Keras adds loss
    scaling itself).

    Fix safety:
    Unsafe: moving to the policy changes which ops run in float16.
    """
    if not auto_mixed_precision_enabled(facts):
        return
    value = facts.env("TF_ENABLE_AUTO_MIXED_PRECISION")
    policy = _policy(facts)
    unset = EnvFix("Unset TF_ENABLE_AUTO_MIXED_PRECISION", (unset_env("TF_ENABLE_AUTO_MIXED_PRECISION"),),
                   Applicability.UNSAFE)
    ignored = _amp_ignored(facts)
    if ignored is not None:
        usable = tensorflow_gpus(facts)
        tensor_cores = [g for g in usable.gpus if has_tensor_cores(g)]
        mixed = policy is not None and policy.name.startswith("mixed_")
        outcome = (f"the declared Keras policy {policy.name} is what gives mixed precision here" if mixed
                   else "the job runs in float32")
        fixes: tuple[EnvFix | PythonFix, ...] = (unset,)
        if tensor_cores and not mixed:
            fixes = (unset, _policy_fix("mixed_float16", "Keras adds loss scaling"))
        yield Finding(
            f"TF_ENABLE_AUTO_MIXED_PRECISION={value} has no effect in {ignored.under()}: TensorFlow 2 never "
            f"reads it (it is NVIDIA's TensorFlow 1 switch), so nothing is rewritten to float16; {outcome}",
            evidence={"env.TF_ENABLE_AUTO_MIXED_PRECISION": value,
                      "tensorflow.version": ignored.release or "unknown (every release tfdoctor judges is 2.x)",
                      "gpus.visible": _gpu_list(tensor_cores or list(usable.gpus)),
                      **({policy.source: policy.name} if policy else {}), "sources": ignored.sources},
            fixes=fixes,
        )
        return
    gpus = [g for g in tensorflow_gpus(facts).gpus if has_tensor_cores(g)]
    if not gpus:
        return
    also = f"; the declared policy {policy.name} applies on top of it" if policy and policy.name != "float32" else ""
    yield Finding(
        "TF_ENABLE_AUTO_MIXED_PRECISION rewrites graphs to float16 in this TensorFlow 1 build without Keras loss "
        f"scaling and leaves eager code in float32{also}",
        evidence={"env.TF_ENABLE_AUTO_MIXED_PRECISION": value,
                  "gpus.visible": _gpu_list(gpus), **({policy.source: policy.name} if policy else {})},
        fixes=(unset, _policy_fix("mixed_float16", "Keras adds loss scaling")),
        severity=Severity.INFO,
    )


@check("MP108", "low-precision-floatx", Severity.WARNING)
def low_precision_floatx(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds keras.json "floatx" set to float16 or bfloat16.

    Why is this bad?
    floatx makes every layer both compute and *store* its weights in that type: small updates are
    rounded away and float16 training overflows without loss scaling. Mixed precision keeps the
    weights in float32 and only computes in the low type.

    Example:
    ~/.keras/keras.json: {"floatx": "float16", ...}

    Fix:
    Set "floatx": "float32" and use the mixed_float16 / mixed_bfloat16 policy instead.

    Fix safety:
    Unsafe: numerics change (for the better, but results differ).
    """
    config = facts.get("keras.config")
    floatx = config.get("floatx") if isinstance(config, dict) else None
    if floatx not in ("float16", "bfloat16"):
        return
    path = str(facts.get("keras.path", "keras.json"))
    yield Finding(
        f"{path} sets floatx={floatx}: weights are stored in {floatx}, not just computed in it",
        evidence={"keras.config.floatx": floatx, "keras.path": path},
        fixes=(AdminFix(f"Set \"floatx\": \"float32\" in {path}", (),
                        text=f"edit {path}: set \"floatx\": \"float32\""),
               _policy_fix(f"mixed_{floatx}", "float32 weights, low-precision compute")),
    )
