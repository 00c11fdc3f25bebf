"""Settings judged against the installed TensorFlow release (issue 36): a variable a release breaks on, and
XLA auto-clustering where it slows a CPU-only job down. The release ranges are data
(tfdoctor/knowledge/tensorflow_variables.toml); XLA107 lives here beside them rather than in
xla_settings.py, which parses the flags."""

from __future__ import annotations

from collections.abc import Iterator

from tfdoctor.derive.release_knowledge import variable_rule, xla_flag_verdicts
from tfdoctor.derive.tensorflow_gpus import tensorflow_gpus
from tfdoctor.derive.xla_flags import (
    auto_jit_globally_on,
    corrected_fix,
    effective_tf_xla_flags,
    parse_bool,
    split_flags,
)
from tfdoctor.facts import Facts
from tfdoctor.model import Applicability, EnvFix, Finding, Severity, set_env, unset_env
from tfdoctor.registry import check

CLUSTERING_FLAGS = ("tf_xla_auto_jit", "tf_xla_cpu_global_jit")


@check("XLA107", "auto-jit-clusters-cpu-only-job", Severity.WARNING)
def auto_jit_clusters_cpu_only_job(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds XLA auto-clustering turned on for the CPU (--tf_xla_auto_jit=1, 2 or fusible together with
    --tf_xla_cpu_global_jit) where TensorFlow has no GPU to run on (none visible, or a CPU-only
    TensorFlow).

    Why is this bad?
    Auto-clustering on the CPU is experimental in TensorFlow. XLA's CPU backend compiles each cluster into
    one function whose fused element-wise loops run on a single thread (only its matrix products and
    convolutions call into Eigen's thread pool), where TensorFlow's own kernels split every op across the
    intra-op pool: on a many-core node the clustered job is usually slower, and it pays the compile time
    on top. This is not about varying shapes (XLA104): fixed shapes are slow too.

    Example:
    TF_XLA_FLAGS="--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit" on a 32-core CPU-only node.

    Fix:
    Remove both flags and compile only chosen functions with jit_compile=True, measured
    (`tfdoctor fix --validate` keeps the change only if the job is not slower).

    Fix safety:
    Unsafe: which kernels run changes; a model that gains from XLA on this CPU loses it.
    """
    raw = facts.env("TF_XLA_FLAGS")
    flags = effective_tf_xla_flags(raw)
    if not auto_jit_globally_on(flags) or not parse_bool(flags.get("tf_xla_cpu_global_jit", "false")):
        return
    gpus = tensorflow_gpus(facts)
    if gpus:
        return
    processors = facts.peek("cpu.cpuinfo.processors")
    cores = f" on {processors} logical CPUs" if isinstance(processors, int) and processors > 1 else ""
    kept = [f.token for f in split_flags(raw or "") if f.name and f.name not in CLUSTERING_FLAGS]
    change = set_env("TF_XLA_FLAGS", " ".join(kept)) if kept else unset_env("TF_XLA_FLAGS")
    yield Finding(
        f"XLA auto-clusters the CPU graph (--tf_xla_auto_jit={flags['tf_xla_auto_jit']} "
        f"--tf_xla_cpu_global_jit) where {gpus.cpu_only}: XLA's CPU clusters run their fused loops on one "
        f"thread, where TensorFlow's kernels use the intra-op pool{cores}; the job is usually slower",
        evidence={"env.TF_XLA_FLAGS": raw, **gpus.evidence,
                  **({"cpu.cpuinfo.processors": processors} if cores else {})},
        fixes=(EnvFix("Turn CPU auto-clustering off (use jit_compile=True on chosen functions)", (change,),
                      Applicability.UNSAFE),),
    )


@check("XLA108", "xla-flag-not-in-installed-release", Severity.ERROR)
def xla_flag_not_in_installed_release(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Compares every --xla_* name in XLA_FLAGS with the flags the installed TensorFlow's XLA registers — the
    installed libtensorflow_cc.so.2's own list when the probe read it, else the list read from that
    release's wheel (tfdoctor/knowledge/xla_flags.toml) — and reports a name that another release's XLA has
    and this one does not: a flag from a newer XLA (documentation, a JAX recipe) or one this XLA has removed.

    Why is this bad?
    XLA parses XLA_FLAGS with ParseFlagsFromEnvAndDieIfUnknown: a flag this XLA does not know aborts the
    process at its first compilation ("Unknown flags in XLA_FLAGS"), whatever the flag would have done.

    Example:
    XLA_FLAGS=--xla_gpu_enable_command_buffer= with TensorFlow 2.15 (the flag came with a later XLA; 2.15
    had --xla_gpu_graph_level), or --xla_gpu_graph_level=0 with TensorFlow 2.21.

    Fix:
    Remove the flag (or use the installed release's own spelling of the setting), or upgrade TensorFlow to a
    release that has it.

    Fix safety:
    Safe: the process starts instead of aborting; the setting the flag asked for is not applied.
    """
    raw = facts.env("XLA_FLAGS")
    if not raw:
        return
    flags = split_flags(raw)
    verdicts = xla_flag_verdicts(facts, [f.name for f in flags if f.name.startswith("xla_")])
    for verdict in verdicts:
        if verdict.newer:
            when = f"a flag of newer XLA: the first release read that registers it is {verdict.known_in[0]}"
        elif verdict.older:
            when = f"a flag this XLA has removed: the last release read that registers it is {verdict.known_in[-1]}"
        else:
            when = f"registered by TensorFlow {', '.join(verdict.known_in)}, not by this release"
        yield Finding(
            f"XLA_FLAGS sets --{verdict.name}, which the XLA of TensorFlow {verdict.release} does not register "
            f"({when}): XLA aborts at its first compilation",
            evidence={"env.XLA_FLAGS": raw, "flag": verdict.name, "tensorflow.version": verdict.release,
                      "flags_read_from": verdict.read_from, "registered_in": list(verdict.known_in)},
            # The fix XLA101-103 share: one value of XLA_FLAGS for every finding, which the fix plan merges.
            fixes=(corrected_fix(facts, f"Remove --{verdict.name} from XLA_FLAGS"),),
        )


@check("GPU107", "gpu-allocator-broken-in-release", Severity.ERROR)
def gpu_allocator_broken_in_release(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds TF_GPU_ALLOCATOR set to an allocator the installed TensorFlow release is known to fail with
    (tfdoctor/knowledge/tensorflow_variables.toml: cuda_malloc_async in 2.5 and 2.6), on a host where
    TensorFlow uses a GPU.

    Why is this bad?
    TensorFlow 2.5 and 2.6 ask every GPU allocator for statistics cuda_malloc_async did not keep: creating
    the GPU device fails with "InternalError: No allocator statistics", so the job never starts (or,
    in a notebook, every GPU op fails). The fix reached TensorFlow in 2.7.

    Example:
    TF_GPU_ALLOCATOR=cuda_malloc_async with tensorflow 2.5.0.

    Fix:
    Unset TF_GPU_ALLOCATOR (TensorFlow's BFC allocator; TF_FORCE_GPU_ALLOW_GROWTH=true if the GPU is
    shared), or upgrade TensorFlow to 2.7 or newer.

    Fix safety:
    Safe: the default allocator works in every release.
    """
    allocator = facts.env("TF_GPU_ALLOCATOR")
    if not allocator:
        return
    rule = variable_rule(facts, "TF_GPU_ALLOCATOR", allocator.strip())
    if rule is None or rule.effect != "broken" or not tensorflow_gpus(facts):
        return
    yield Finding(
        f"TF_GPU_ALLOCATOR={allocator} is broken in {rule.under()}: {rule.row['symptom']}",
        evidence={"env.TF_GPU_ALLOCATOR": allocator, "tensorflow.version": rule.release,
                  "broken_in": rule.row["tensorflow"], "sources": rule.sources},
        fixes=(EnvFix("Unset TF_GPU_ALLOCATOR", (unset_env("TF_GPU_ALLOCATOR"),)),),
    )
