"""Which floating-point policy a job uses and what the hardware makes of it (pure, over facts).

tfdoctor cannot see the Keras policy a script sets at run time, so the user states it (documented in
docs/framework.md), first source wins:

1. `TFDOCTOR_MIXED_PRECISION` — the policy the training script sets (`mixed_float16`, `mixed_bfloat16`,
   `float32`, `float16`, `bfloat16`), e.g. exported by the job script next to the training command;
2. keras.json `"floatx"` other than float32 — Keras then makes every layer compute *and store* weights in
   that type (pure low precision, not mixed).

`TF_ENABLE_AUTO_MIXED_PRECISION` is a different mechanism (a graph rewrite) and is read separately.
Measured figures override the hardware tables: the micro-profile may record
`profile.mixed_precision_speedup` (float32 step time ÷ step time under `profile.mixed_precision_policy`).
"""

from __future__ import annotations

import re

from tfdoctor.derive.gpu_inventory import Gpu
from tfdoctor.derive.tensorflow_gpus import tensorflow_gpus
from tfdoctor.facts import Facts, NotChecked, Unknown
from tfdoctor.records import value_tuple

POLICY_VARIABLE = "TFDOCTOR_MIXED_PRECISION"
POLICIES = ("mixed_float16", "mixed_bfloat16", "float32", "float16", "bfloat16")
FLOAT16_POLICIES = ("mixed_float16", "float16")
BFLOAT16_POLICIES = ("mixed_bfloat16", "bfloat16")
CPU_BF16_FLAGS = ("avx512_bf16", "amx_bf16")

# Measured on this project's test machines (docs/framework.md): a CPU without float16 arithmetic runs
# float16 models this many times slower than float32; with avx512_bf16, bfloat16 runs 2.0× faster.
CPU_FLOAT16_SLOWDOWN = 7.1
CPU_BF16_SPEEDUP = 2.0


@value_tuple
class Policy:
    """The Keras mixed-precision policy the job declares, and the fact it was read from."""

    name: str
    source: str  # the fact it came from, e.g. "env.TFDOCTOR_MIXED_PRECISION"


class PolicyDeclarationError(ValueError):
    """TFDOCTOR_MIXED_PRECISION holds something that is not a Keras policy name."""


def declared_policy(facts: Facts) -> Policy | None:
    """The policy the user declared, or None. Raises PolicyDeclarationError for a misspelt name."""
    raw = facts.env(POLICY_VARIABLE)
    if raw is not None and raw.strip():
        name = raw.strip().lower()
        if name not in POLICIES:
            raise PolicyDeclarationError(raw)
        return Policy(name, f"env.{POLICY_VARIABLE}")
    config = facts.peek("keras.config")
    if isinstance(config, dict):
        floatx = config.get("floatx")
        if isinstance(floatx, str) and floatx in ("float16", "bfloat16"):
            return Policy(floatx, "keras.config.floatx")
    return None


def auto_mixed_precision_enabled(facts: Facts) -> bool:
    """TF_ENABLE_AUTO_MIXED_PRECISION as TensorFlow reads it ("1" or "true", case-insensitive)."""
    value = facts.env("TF_ENABLE_AUTO_MIXED_PRECISION")
    return value is not None and value.strip().lower() in ("1", "true")


_GTX16 = re.compile(r"GTX\s*16\d\d", re.IGNORECASE)


def has_tensor_cores(gpu: Gpu) -> bool:
    """Tensor cores arrived with Volta (7.0); Turing's GTX 16xx parts (7.5) were built without them."""
    if gpu.compute_capability is None:
        return False
    if gpu.compute_capability < (7, 0):
        return False
    return not (gpu.compute_capability == (7, 5) and _GTX16.search(gpu.name))


def has_bf16_tensor_cores(gpu: Gpu) -> bool:
    """bfloat16 tensor-core math needs Ampere (8.0) or newer."""
    return has_tensor_cores(gpu) and gpu.compute_capability is not None and gpu.compute_capability >= (8, 0)


def cpu_bf16_flags(facts: Facts) -> list[str]:
    flags = facts.get("cpu.cpuinfo.flags")
    if not isinstance(flags, list):
        raise NotChecked(f"cpu.cpuinfo.flags holds a JSON {type(flags).__name__}, not a list")
    return [f for f in CPU_BF16_FLAGS if f in flags]


def measured_speedup(facts: Facts, policy: str) -> float | None:
    """The micro-profile's measured float32 ÷ `policy` step-time ratio, when it measured that policy."""
    speedup = facts.peek("profile.mixed_precision_speedup")
    measured_policy = facts.peek("profile.mixed_precision_policy")
    if isinstance(speedup, Unknown) or speedup is None or isinstance(speedup, bool):
        return None
    if not isinstance(speedup, (int, float)) or measured_policy != policy:
        return None
    return float(speedup)


@value_tuple
class Recommendation:
    """The mixed policy `check` recommends for where TensorFlow computes, and why."""

    policy: str
    why: str  # e.g. "this CPU has avx512_bf16", "tensor cores"


def recommended_policy(facts: Facts, cpu_only: bool = False) -> Recommendation | None:
    """The mixed policy the MP checks recommend (MP102: mixed_float16 when every GPU TensorFlow can use
    has tensor cores; MP105: mixed_bfloat16 on a CPU with bfloat16 units, where no GPU is usable), or
    None (float32 stays best). `cpu_only`: judge the CPU even where a GPU is usable (--device cpu).
    Raises NotChecked when the facts it needs are unknown."""
    gpus = () if cpu_only else tensorflow_gpus(facts).gpus
    if gpus:
        return Recommendation("mixed_float16", "tensor cores") if all(has_tensor_cores(g) for g in gpus) else None
    bf16 = cpu_bf16_flags(facts)
    return Recommendation("mixed_bfloat16", f"this CPU has {', '.join(bf16)}") if bf16 else None


def set_policy_code(policy: str) -> str:
    return f'import tensorflow as tf\ntf.keras.mixed_precision.set_global_policy("{policy}")\n'
