"""TF_XLA_FLAGS and XLA_FLAGS parsed the way TensorFlow and XLA parse them (pure).

Both variables hold space-separated `--name=value` (or bare `--name` for booleans) tokens. TensorFlow
reads them with ParseFlagsFromEnvAndDieIfUnknown: a token it does not know aborts the process at the
first XLA use, so a misspelt flag is not a silent no-op but a crashed job.
"""

from __future__ import annotations

from tfdoctor.derive.tf_xla_known import TF_XLA_KNOWN
from tfdoctor.facts.parse import flag_tokens
from tfdoctor.records import value_tuple

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from tfdoctor.derive.release_knowledge import RegisteredFlags
    from tfdoctor.facts import Facts
    from tfdoctor.model import EnvFix

TF_XLA_BOOLEAN = frozenset({"tf_xla_cpu_global_jit", "tf_xla_enable_xla_devices", "tf_xla_clustering_debug",
                            "tf_xla_compile_on_demand", "tf_xla_async_compilation",
                            "tf_xla_always_defer_compilation", "tf_mlir_enable_mlir_bridge"})
AUTO_JIT_LEVELS = ("-1", "0", "1", "2", "fusible")
INTEGER_FLAGS = ("tf_xla_min_cluster_size", "tf_xla_max_cluster_size", "tf_xla_clustering_fuel")

# A selection of XLA's debug options that users set by hand; XLA has hundreds, so an unknown --xla_ flag
# is reported only when it is within a typo of one of these.
XLA_COMMON = frozenset({
    "xla_dump_to", "xla_dump_hlo_as_text", "xla_dump_hlo_as_proto", "xla_dump_hlo_as_html",
    "xla_dump_hlo_pass_re", "xla_dump_hlo_module_re", "xla_dump_include_timestamp", "xla_dump_max_hlo_modules",
    "xla_gpu_cuda_data_dir", "xla_gpu_autotune_level", "xla_gpu_enable_triton_gemm",
    "xla_gpu_enable_latency_hiding_scheduler", "xla_gpu_enable_command_buffer", "xla_gpu_graph_level",
    "xla_gpu_strict_conv_algorithm_picker", "xla_gpu_deterministic_ops", "xla_gpu_enable_fast_min_max",
    "xla_gpu_force_compilation_parallelism", "xla_gpu_enable_cudnn_fmha",
    "xla_gpu_enable_highest_priority_async_stream",
    "xla_gpu_all_reduce_combine_threshold_bytes", "xla_gpu_enable_async_all_reduce",
    "xla_cpu_multi_thread_eigen", "xla_cpu_enable_fast_math", "xla_cpu_use_thunk_runtime",
    "xla_cpu_max_isa", "xla_cpu_parallel_codegen_split_count", "xla_backend_optimization_level",
    "xla_llvm_disable_expensive_passes", "xla_force_host_platform_device_count", "xla_hlo_profile",
    "xla_enable_dumping", "xla_disable_hlo_passes", "xla_dump_disable_metadata", "xla_dump_fusion_visualization",
})


@value_tuple
class Flag:
    """One token of XLA_FLAGS or TF_XLA_FLAGS, split into its name and value."""

    token: str  # as written
    name: str  # without the leading dashes; "" when the token does not start with "--"
    value: str | None  # None for a bare boolean flag


def split_flags(text: str) -> list[Flag]:
    """Tokens of a flags variable (facts.parse.flag_tokens), each split into its name and value."""
    flags = []
    for token in flag_tokens(text):
        if not token.startswith("--"):
            flags.append(Flag(token, "", None))
            continue
        name, sep, value = token[2:].partition("=")
        flags.append(Flag(token, name, value if sep else None))
    return flags


def closest(name: str, known: frozenset[str]) -> str | None:
    import difflib  # only needed for an unknown flag: kept off the start-up path

    match = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.8)
    return match[0] if match else None


def parse_bool(value: str | None) -> bool | None:
    """A boolean flag's value as TensorFlow's flag parser reads it; None when it rejects it."""
    if value is None:
        return True
    lowered = value.strip().lower()
    if lowered in ("true", "1"):
        return True
    if lowered in ("false", "0"):
        return False
    return None


def auto_jit_valid(value: str | None) -> bool:
    if value is None:
        return False
    text = value.strip()
    # Newer TF also accepts "single-gpu(N)": auto-clustering on one device only.
    return text in AUTO_JIT_LEVELS or (text.startswith("single-gpu(") and text.endswith(")")
                                       and text[11:-1].isdigit())


def effective_tf_xla_flags(text: str | None) -> dict[str, str | None]:
    """The last value of every well-formed flag (later tokens override earlier ones)."""
    if not text:
        return {}
    return {f.name: f.value for f in split_flags(text) if f.name}


def auto_jit_globally_on(flags: dict[str, str | None]) -> bool:
    value = flags.get("tf_xla_auto_jit")
    return value is not None and value.strip() in ("1", "2", "fusible")


TRUTHY = ("true", "1", "yes", "y", "on")


def _respelt(flag: Flag, known: frozenset[str], registered: RegisteredFlags | None) -> Flag | None:
    """The flag as the user meant it: itself when it is registered (or, with no list for the release, when
    tfdoctor knows it or knows nothing close), its close spelling, or None to drop it (a flag of another
    release, or nothing close: the variable aborts on it as written)."""
    if registered is not None:
        if flag.name in registered.names:
            return flag
        if flag.name in registered.elsewhere:
            return None  # a removed or newer flag: another flag's spelling is not what was meant
        suggestion = closest(flag.name, known & registered.names) or closest(flag.name, registered.names)
        if suggestion is None:
            return None
    elif flag.name in known:
        return flag
    else:
        suggestion = closest(flag.name, known)
        if suggestion is None:
            return flag  # unknown to tfdoctor, perhaps not to this TensorFlow: left alone
    return Flag(f"--{suggestion}" + (f"={flag.value}" if flag.value is not None else ""), suggestion, flag.value)


def _correct_tf_flag(flag: Flag, registered: RegisteredFlags | None = None) -> str | None:
    """The token TensorFlow will accept for what the user meant; None to drop it."""
    respelt = _respelt(flag, TF_XLA_KNOWN, registered)
    if respelt is None:
        return None
    flag = respelt
    if flag.name == "tf_xla_auto_jit" and not auto_jit_valid(flag.value):
        return None  # TensorFlow's default (off) rather than a guess at the level meant
    if flag.name in TF_XLA_BOOLEAN and parse_bool(flag.value) is None:
        return f"--{flag.name}=true" if (flag.value or "").strip().lower() in TRUTHY else None
    if flag.name in INTEGER_FLAGS and not (flag.value or "").lstrip("-").isdigit():
        return None
    return flag.token


def _correct_xla_flag(flag: Flag, registered: RegisteredFlags | None = None) -> str | None:
    if not flag.name.startswith("xla_"):
        return None
    if registered is None and flag.name not in XLA_COMMON and not closest(flag.name, XLA_COMMON):
        return flag.token  # one of XLA's hundreds of flags tfdoctor does not list
    respelt = _respelt(flag, XLA_COMMON, registered)
    return respelt.token if respelt is not None else None


def corrected_flag_variables(tf_raw: str | None, xla_raw: str | None, tf_registered: RegisteredFlags | None = None,
                             xla_registered: RegisteredFlags | None = None) -> tuple[str, str]:
    """TF_XLA_FLAGS and XLA_FLAGS as they should read: bare words dropped, each flag moved to the variable
    that parses it, misspellings corrected, invalid values dropped, and, where the installed release's
    flag list is known (`tf_registered`, `xla_registered`), flags it does not register dropped. "" means
    "unset it"."""
    tf_flags = [f for f in split_flags(tf_raw or "") if f.name and not f.name.startswith("xla_")]
    tf_flags += [f for f in split_flags(xla_raw or "") if f.name.startswith("tf_")]
    xla_flags = [f for f in split_flags(xla_raw or "") if f.name and not f.name.startswith("tf_")]
    xla_flags += [f for f in split_flags(tf_raw or "") if f.name.startswith("xla_")]
    tf_tokens = [t for f in tf_flags if (t := _correct_tf_flag(f, tf_registered))]
    xla_tokens = [t for f in xla_flags if (t := _correct_xla_flag(f, xla_registered))]
    return " ".join(tf_tokens), " ".join(xla_tokens)


def corrected_values(facts: Facts) -> tuple[str, str]:
    """corrected_flag_variables of the facts' two variables, judged against the installed release's lists."""
    from tfdoctor.derive.release_knowledge import registered_tf_xla_flags, registered_xla_flags

    tf_raw, xla_raw = facts.env("TF_XLA_FLAGS"), facts.env("XLA_FLAGS")
    if not tf_raw and not xla_raw:
        return "", ""
    # Either variable may hold the other's flags (they are moved): both lists are wanted.
    return corrected_flag_variables(tf_raw, xla_raw, registered_tf_xla_flags(facts), registered_xla_flags(facts))


def corrected_fix(facts: Facts, title: str) -> EnvFix:
    """One fix shared by XLA101-103 and XLA108: both variables as they should read (corrected_values).
    Every finding proposes the same values, so the fix plan merges them instead of letting one finding's
    edit undo another's."""
    from tfdoctor.model import EnvFix, set_env, unset_env

    tf_raw, xla_raw = facts.env("TF_XLA_FLAGS"), facts.env("XLA_FLAGS")
    tf_value, xla_value = corrected_values(facts)
    changes = []
    for name, raw, value in (("TF_XLA_FLAGS", tf_raw, tf_value), ("XLA_FLAGS", xla_raw, xla_value)):
        if (raw or "") == value:
            continue
        changes.append(set_env(name, value) if value else unset_env(name))
    return EnvFix(title, tuple(changes))
