"""XLA101–XLA199 — TF_XLA_FLAGS and XLA_FLAGS as TensorFlow parses them, and auto-clustering against the
hardware and the job's shapes. (XLA001–XLA099 are the GPU toolchain's: libdevice, ptxas.)"""

from __future__ import annotations

from collections.abc import Iterator

from tfdoctor.derive.release_knowledge import (
    RegisteredFlags,
    registered_tf_xla_flags,
    registered_xla_flags,
    releases_registering,
)
from tfdoctor.derive.tensorflow_gpus import tensorflow_gpus
from tfdoctor.derive.xla_flags import (
    AUTO_JIT_LEVELS,
    INTEGER_FLAGS,
    TF_XLA_BOOLEAN,
    TF_XLA_KNOWN,
    XLA_COMMON,
    Flag,
    auto_jit_globally_on,
    auto_jit_valid,
    closest,
    corrected_fix,
    corrected_values,
    effective_tf_xla_flags,
    parse_bool,
    split_flags,
)
from tfdoctor.facts import Facts
from tfdoctor.facts.redact import redact_in_context
from tfdoctor.model import Applicability, EnvFix, Finding, Severity, set_env, unset_env
from tfdoctor.registry import check


def _without_xla_devices(facts: Facts) -> EnvFix:
    kept = [f.token for f in split_flags(_tf_flags_base(facts)) if f.name != "tf_xla_enable_xla_devices"]
    change = set_env("TF_XLA_FLAGS", " ".join(kept)) if kept else unset_env("TF_XLA_FLAGS")
    return EnvFix("Remove --tf_xla_enable_xla_devices", (change,))


def _tf_flags_base(facts: Facts) -> str:
    """TF_XLA_FLAGS after XLA101/XLA102's corrections: what the other fixes build on."""
    return corrected_values(facts)[0]


@check("XLA101", "tf-xla-flags-unknown-flag", Severity.ERROR)
def tf_xla_flags_unknown_flag(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Parses TF_XLA_FLAGS and reports tokens TensorFlow will not accept: words without a leading
    "--", XLA compiler flags (--xla_*, which belong in XLA_FLAGS) and misspelt flag names.

    Why is this bad?
    TensorFlow parses TF_XLA_FLAGS with ParseFlagsFromEnvAndDieIfUnknown: an unknown flag aborts
    the process as soon as XLA is first touched, often minutes into a job.

    Example:
    TF_XLA_FLAGS="--tf_xla_auto_jti=2" or TF_XLA_FLAGS="--xla_gpu_autotune_level=0".

    For the releases tfdoctor/knowledge/tf_xla_flags.toml lists (read from each release's wheel), every
    flag is judged against the installed release's own list: a flag it does not register (a misspelling, a
    flag of a newer release, or one it removed) is an error, a flag it registers is silent.

    Fix:
    Correct the spelling; move --xla_* flags to XLA_FLAGS; remove a flag the installed release does not
    register. For a release the table does not list, a --tf_ flag tfdoctor does not know is a warning
    only: newer TensorFlow versions add flags.

    Fix safety:
    Safe: the corrected variable sets what the user meant; a removed flag would have aborted the process.
    """
    raw = facts.env("TF_XLA_FLAGS")
    if not raw:
        return
    registered = registered_tf_xla_flags(facts)
    flags = split_flags(raw)
    for index, flag in enumerate(flags):
        evidence = {"env.TF_XLA_FLAGS": raw, "flag": flag.token}
        if not flag.name:
            # The value of a `--token VALUE` pair is split from its flag here: shown redacted in that context.
            shown = redact_in_context(flags[index - 1].token if index else "", flag.token)
            evidence["flag"] = shown
            yield Finding(f"TF_XLA_FLAGS token {shown!r} is not a --flag; TensorFlow aborts on it",
                          evidence=evidence, fixes=(corrected_fix(facts, f"Remove {shown} from TF_XLA_FLAGS"),))
        elif flag.name.startswith("xla_"):
            yield Finding(f"{flag.token} is an XLA compiler flag: it belongs in XLA_FLAGS, and TensorFlow aborts "
                          "on it in TF_XLA_FLAGS", evidence=evidence,
                          fixes=(corrected_fix(facts, f"Move {flag.token} to XLA_FLAGS"),))
        elif registered is not None:
            yield from _not_registered(facts, flag, registered, evidence)
        elif flag.name not in TF_XLA_KNOWN:
            suggestion = closest(flag.name, TF_XLA_KNOWN)
            if suggestion:
                yield Finding(f"TF_XLA_FLAGS has unknown flag --{flag.name} (did you mean --{suggestion}?); "
                              "TensorFlow aborts on it", evidence={**evidence, "suggestion": suggestion},
                              fixes=(corrected_fix(facts, f"Spell --{flag.name} as --{suggestion}"),))
            else:
                yield Finding(f"TF_XLA_FLAGS has --{flag.name}, a flag tfdoctor does not know; if this TensorFlow "
                              "does not know it either, it aborts at the first XLA use",
                              evidence=evidence, severity=Severity.WARNING)


def _not_registered(facts: Facts, flag: Flag, registered: RegisteredFlags,
                    evidence: dict[str, object]) -> Iterator[Finding]:
    """XLA101 where the installed release's TF_XLA_FLAGS list is known: a flag it does not register."""
    if flag.name in registered.names:
        return
    evidence = {**evidence, "tensorflow.version": registered.release, "flags_read_from": registered.read_from}
    prefix = f"TF_XLA_FLAGS has --{flag.name}, which TensorFlow {registered.release} does not register"
    if flag.name in registered.elsewhere:
        known_in = releases_registering("tf_xla_flags", flag.name)
        when = (f"registered by TensorFlow {known_in[0]}" + (f" to {known_in[-1]}" if len(known_in) > 1 else "")
                if known_in else "a flag of releases tfdoctor has no list for")
        yield Finding(f"{prefix} ({when}): TensorFlow aborts at its first XLA use",
                      evidence={**evidence, "registered_in": list(known_in)},
                      fixes=(corrected_fix(facts, f"Remove --{flag.name} from TF_XLA_FLAGS"),))
        return
    suggestion = closest(flag.name, TF_XLA_KNOWN & registered.names) or closest(flag.name, registered.names)
    if suggestion:
        yield Finding(f"{prefix} (did you mean --{suggestion}?): TensorFlow aborts at its first XLA use",
                      evidence={**evidence, "suggestion": suggestion},
                      fixes=(corrected_fix(facts, f"Spell --{flag.name} as --{suggestion}"),))
    else:
        yield Finding(f"{prefix}: TensorFlow aborts at its first XLA use", evidence=evidence,
                      fixes=(corrected_fix(facts, f"Remove --{flag.name} from TF_XLA_FLAGS"),))


@check("XLA102", "tf-xla-flag-invalid-value", Severity.ERROR)
def tf_xla_flag_invalid_value(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Checks the values of TF_XLA_FLAGS: --tf_xla_auto_jit is -1, 0, 1, 2, fusible (or single-gpu(N));
    boolean flags are true/false; cluster sizes are whole numbers.

    Why is this bad?
    A value TensorFlow cannot parse fails the whole flag parse and aborts the process.

    Example:
    TF_XLA_FLAGS="--tf_xla_auto_jit=on" or "--tf_xla_cpu_global_jit=yes".

    Fix:
    Use a valid value: --tf_xla_auto_jit=2 turns auto-clustering on, 0 leaves it to the session config.
    The automatic fix removes an invalid auto-jit or number flag (TensorFlow's default) and turns
    "yes"/"on" into "true".

    Fix safety:
    Safe: the process starts with TensorFlow's defaults instead of aborting.
    """
    raw = facts.env("TF_XLA_FLAGS")
    if not raw:
        return
    for flag in split_flags(raw):
        evidence = {"env.TF_XLA_FLAGS": raw, "flag": flag.token}
        if flag.name == "tf_xla_auto_jit" and not auto_jit_valid(flag.value):
            yield Finding(f"{flag.token}: --tf_xla_auto_jit takes {', '.join(AUTO_JIT_LEVELS)} or single-gpu(N)",
                          evidence=evidence, fixes=(corrected_fix(facts, f"Remove {flag.token}"),))
        elif flag.name in TF_XLA_BOOLEAN and parse_bool(flag.value) is None:
            yield Finding(f"{flag.token}: --{flag.name} takes true or false", evidence=evidence,
                          fixes=(corrected_fix(facts, f"Correct {flag.token}"),))
        elif flag.name in INTEGER_FLAGS and not (flag.value or "").lstrip("-").isdigit():
            yield Finding(f"{flag.token}: --{flag.name} takes a whole number", evidence=evidence,
                          fixes=(corrected_fix(facts, f"Remove {flag.token}"),))


@check("XLA103", "xla-flags-unknown-flag", Severity.ERROR)
def xla_flags_unknown_flag(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Parses XLA_FLAGS: words without "--", TensorFlow's --tf_* flags (which belong in TF_XLA_FLAGS),
    names not starting with xla_, and --xla_* names within a typo of a well-known XLA flag.

    Why is this bad?
    XLA parses XLA_FLAGS with ParseFlagsFromEnvAndDieIfUnknown too: an unknown flag aborts the
    process when the first computation is compiled.

    Example:
    XLA_FLAGS="--tf_xla_auto_jit=2" or XLA_FLAGS="--xla_dump_too=/tmp/xla".

    A --xla_ name is judged by the flags the installed XLA registers: the installed libtensorflow_cc.so.2's
    own list, read (and kept in the cache folder) only when tfdoctor/knowledge/xla_flags.toml cannot settle
    the names, else the list read from the release's wheel. A name neither registers is an error; one that
    another release registers is XLA108's. With neither list, a typo-close --xla_ name is a warning (XLA
    has hundreds of flags and tfdoctor lists the common ones).

    Fix:
    Move --tf_* flags to TF_XLA_FLAGS; correct misspelt names; remove names the installed XLA does not
    register.

    Fix safety:
    Safe: the corrected variable sets what the user meant; a removed flag would have aborted the process.
    """
    raw = facts.env("XLA_FLAGS")
    if not raw:
        return
    registered = registered_xla_flags(facts) if any(f.name.startswith("xla_") for f in split_flags(raw)) else None
    flags = split_flags(raw)
    for index, flag in enumerate(flags):
        evidence = {"env.XLA_FLAGS": raw, "flag": flag.token}
        if not flag.name:
            # The value of a `--token VALUE` pair is split from its flag here: shown redacted in that context.
            shown = redact_in_context(flags[index - 1].token if index else "", flag.token)
            evidence["flag"] = shown
            yield Finding(f"XLA_FLAGS token {shown!r} is not a --flag; XLA aborts on it", evidence=evidence,
                          fixes=(corrected_fix(facts, f"Remove {shown} from XLA_FLAGS"),))
        elif flag.name.startswith("tf_"):
            yield Finding(f"{flag.token} is a TensorFlow flag: it belongs in TF_XLA_FLAGS, and XLA aborts on it "
                          "in XLA_FLAGS", evidence=evidence,
                          fixes=(corrected_fix(facts, f"Move {flag.token} to TF_XLA_FLAGS"),))
        elif not flag.name.startswith("xla_"):
            yield Finding(f"XLA_FLAGS has --{flag.name}: XLA's flags all start with --xla_", evidence=evidence,
                          fixes=(corrected_fix(facts, f"Remove {flag.token} from XLA_FLAGS"),))
        elif registered is not None:
            if flag.name in registered.names or flag.name in registered.elsewhere:
                continue  # registered here, or another release's flag: XLA108's
            suggestion = closest(flag.name, XLA_COMMON & registered.names) or closest(flag.name, registered.names)
            release = registered.release or "(release unread)"
            prefix = f"XLA_FLAGS has --{flag.name}, which the XLA of TensorFlow {release} does not register"
            evidence = {**evidence, "tensorflow.version": registered.release, "flags_read_from": registered.read_from}
            if suggestion:
                yield Finding(f"{prefix} (did you mean --{suggestion}?): XLA aborts at its first compilation",
                              evidence={**evidence, "suggestion": suggestion},
                              fixes=(corrected_fix(facts, f"Spell --{flag.name} as --{suggestion}"),))
            else:
                yield Finding(f"{prefix}: XLA aborts at its first compilation", evidence=evidence,
                              fixes=(corrected_fix(facts, f"Remove --{flag.name} from XLA_FLAGS"),))
        elif flag.name not in XLA_COMMON:
            suggestion = closest(flag.name, XLA_COMMON)
            if suggestion:
                yield Finding(f"XLA_FLAGS has --{flag.name}; did you mean --{suggestion}? XLA aborts on unknown flags",
                              evidence={**evidence, "suggestion": suggestion}, severity=Severity.WARNING,
                              fixes=(corrected_fix(facts, f"Spell --{flag.name} as --{suggestion}"),))


@check("XLA104", "auto-jit-with-dynamic-shapes", Severity.INFO)
def auto_jit_with_dynamic_shapes(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds auto-clustering on for the whole process (--tf_xla_auto_jit=1, 2 or fusible, on a GPU
    TensorFlow can use, or on the CPU with --tf_xla_cpu_global_jit). When the micro-profile measured
    XLA clusters compiled again after the first steps (`profile.xla_recompilations`, with
    `profile.xla_compile_seconds`), it says so; when nothing was measured, it says what the setting
    risks and how to find out. A profile that saw no recompilation silences it.

    Why is this bad?
    XLA compiles one executable per input shape. Variable batch sizes, sequence lengths or a ragged
    last batch recompile the clusters again and again; each compile costs seconds. With fixed shapes
    auto-clustering often helps: only a run can tell which case a job is.

    Example:
    TF_XLA_FLAGS=--tf_xla_auto_jit=2 with a text model fed unpadded sequences.

    Fix:
    Measure first: `tfdoctor profile` reports XLA clusters and recompilations, `tfdoctor fix --validate`
    keeps the setting only if it does not measurably slow the workload. If shapes vary: pad or bucket to
    a few fixed shapes (drop_remainder=True for the last batch), or compile only chosen functions with
    jit_compile=True instead of auto-clustering everything.

    Fix safety:
    Unsafe: turning auto-clustering off changes which kernels run.
    """
    raw = facts.env("TF_XLA_FLAGS")
    flags = effective_tf_xla_flags(raw)
    if not auto_jit_globally_on(flags):
        return
    cpu_global = "tf_xla_cpu_global_jit" in flags and parse_bool(flags["tf_xla_cpu_global_jit"])
    if not cpu_global and not tensorflow_gpus(facts):
        return  # nothing is clustered at all: XLA105 says so
    level = flags["tf_xla_auto_jit"]
    rest = [f.token for f in split_flags(_tf_flags_base(facts)) if f.name != "tf_xla_auto_jit"]
    changes = (set_env("TF_XLA_FLAGS", " ".join(rest)),) if rest else (unset_env("TF_XLA_FLAGS"),)
    recompilations = facts.peek("profile.xla_recompilations")
    measured = isinstance(recompilations, int) and not isinstance(recompilations, bool)
    if not measured:
        # Only a run can tell whether the shapes vary: say what the setting risks and how to find out.
        yield Finding(
            f"auto-clustering is on for the whole process (--tf_xla_auto_jit={level}): if the input shapes vary "
            "(batch size, sequence length, a smaller last batch), every new shape compiles the clusters again, "
            "seconds each. To tell: `tfdoctor profile` reports XLA recompilations, `tfdoctor fix --validate` "
            "measures the job without it. If it hurts: pad or bucket the shapes, or use jit_compile=True on "
            "chosen functions",
            evidence={"env.TF_XLA_FLAGS": raw, "profile.xla_recompilations": "not measured"},
            fixes=(EnvFix("If recompilations are measured: turn global auto-clustering off", changes,
                          Applicability.UNSAFE),),
        )
        return
    if recompilations <= 0:
        return
    seconds = facts.peek("profile.xla_compile_seconds")
    cost = (f", costing {seconds:.1f} s" if isinstance(seconds, (int, float)) and not isinstance(seconds, bool)
            else "")
    yield Finding(
        f"auto-clustering is on for the whole process (--tf_xla_auto_jit={level}) and the "
        f"micro-profile saw {recompilations} recompilation(s){cost}: the input shapes vary",
        evidence={"env.TF_XLA_FLAGS": raw, "profile.xla_recompilations": recompilations,
                  **({"profile.xla_compile_seconds": seconds} if cost else {})},
        fixes=(EnvFix("Turn global auto-clustering off", changes, Applicability.UNSAFE),),
    )


@check("XLA105", "auto-jit-ignored-on-cpu", Severity.WARNING)
def auto_jit_ignored_on_cpu(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds --tf_xla_auto_jit on (1, 2, fusible) where TensorFlow runs on the CPU (no GPU visible, or a
    CPU-only TensorFlow on a GPU host), without --tf_xla_cpu_global_jit.

    Why is this bad?
    The auto-jit level applies to GPU clusters only; on CPU, auto-clustering needs
    --tf_xla_cpu_global_jit as well. The user believes the job is XLA-compiled; it is not.

    Example:
    TF_XLA_FLAGS=--tf_xla_auto_jit=2 on a CPU-only node.

    Fix:
    Add --tf_xla_cpu_global_jit (or drop the auto-jit flag if XLA is not wanted on CPU).

    Fix safety:
    Unsafe: compiling the CPU graph with XLA changes which kernels run, and is not always faster.
    """
    raw = facts.env("TF_XLA_FLAGS")
    flags = effective_tf_xla_flags(raw)
    if not auto_jit_globally_on(flags):
        return
    gpus = tensorflow_gpus(facts)
    if gpus:
        return
    if "tf_xla_cpu_global_jit" in flags and parse_bool(flags["tf_xla_cpu_global_jit"]):
        return
    yield Finding(
        f"--tf_xla_auto_jit={flags['tf_xla_auto_jit']} without --tf_xla_cpu_global_jit where {gpus.cpu_only}: "
        "nothing is auto-clustered",
        evidence={"env.TF_XLA_FLAGS": raw, **gpus.evidence},
        fixes=(EnvFix("Add --tf_xla_cpu_global_jit",
                      (set_env("TF_XLA_FLAGS", f"{_tf_flags_base(facts)} --tf_xla_cpu_global_jit"),),
                      Applicability.UNSAFE),),
    )


@check("XLA106", "xla-devices-enabled", Severity.INFO)
def xla_devices_enabled(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds --tf_xla_enable_xla_devices in TF_XLA_FLAGS.

    Why is this bad?
    Since TF 2.2 TensorFlow no longer creates XLA_CPU/XLA_GPU devices; this flag brings them back for
    old code that places ops on /device:XLA_GPU. Every extra device is initialised at start-up, and
    placing ops on them compiles each op on its own, which is slower than auto-clustering or
    jit_compile=True.

    Example:
    TF_XLA_FLAGS="--tf_xla_enable_xla_devices --tf_xla_auto_jit=2"

    Fix:
    Remove the flag; use jit_compile=True on the functions to compile.

    Fix safety:
    Safe unless the code names XLA devices explicitly (then it fails loudly, not silently).
    """
    raw = facts.env("TF_XLA_FLAGS")
    if not raw:
        return
    for flag in split_flags(raw):
        if flag.name == "tf_xla_enable_xla_devices" and parse_bool(flag.value):
            yield Finding("TF_XLA_FLAGS brings back the deprecated XLA_CPU/XLA_GPU devices",
                          evidence={"env.TF_XLA_FLAGS": raw, "flag": flag.token},
                          fixes=(_without_xla_devices(facts),))
