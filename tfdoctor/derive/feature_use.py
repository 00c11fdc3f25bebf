"""Whether this job uses a feature whose breakage only matters when used: XLA on the GPU (pure).

A missing libdevice stops every XLA GPU compilation and nothing else; an image where nothing turns XLA
on trains without it. What turns it on, as far as the machine shows:

- TF_XLA_FLAGS with --tf_xla_auto_jit=1, 2 or fusible (auto-clustering for the whole process);
- XLA_FLAGS set at all (XLA's own options: nobody sets them for a job that never compiles);
- Keras from 2.11 on (keras 2.11-2.15, tf-keras, Keras 3): its optimizers default to jit_compile=True
  ("If True, the optimizer will use XLA compilation. If no GPU device is found, this flag will be
  ignored"), so every Model.fit on a GPU compiles its update step with XLA; Keras 3's Model.compile adds
  jit_compile="auto" for the whole train step. A Keras before 2.11 compiles nothing by default.

`tf.function(jit_compile=True)` in the code is not visible here: `tfdoctor lint` reads the script.
"""

from __future__ import annotations

from tfdoctor.derive.versions import version_tuple
from tfdoctor.derive.xla_flags import auto_jit_globally_on, effective_tf_xla_flags
from tfdoctor.facts import Facts

# keras.optimizers.Optimizer's jit_compile=True default arrived with Keras 2.11 (TensorFlow 2.11).
KERAS_OPTIMIZERS_JIT = (2, 11)

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import Any


def _watched_version(facts: Facts, name: str) -> tuple[int, ...]:
    watched = facts.peek("python.watched")
    record = watched.get(name) if isinstance(watched, dict) else None
    return version_tuple(record.get("version")) if isinstance(record, dict) else ()


def xla_in_use(facts: Facts) -> dict[str, Any]:
    """What turns XLA on for this job (evidence by fact), or {} when nothing seen does."""
    evidence: dict[str, Any] = {}
    tf_flags = facts.env("TF_XLA_FLAGS")
    if auto_jit_globally_on(effective_tf_xla_flags(tf_flags)):
        evidence["env.TF_XLA_FLAGS"] = tf_flags
    xla_flags = facts.env("XLA_FLAGS")
    if xla_flags and xla_flags.strip():
        evidence["env.XLA_FLAGS"] = xla_flags
    # The Keras the job imports: tf-keras when TF_USE_LEGACY_KERAS asks for it and it is installed, else keras.
    legacy = (facts.env("TF_USE_LEGACY_KERAS") or "").strip().lower() in ("1", "true", "yes")
    name = next((n for n in ("tf-keras", "tf_keras") if legacy and _watched_version(facts, n)), "keras")
    keras = _watched_version(facts, name)
    if keras[:2] >= KERAS_OPTIMIZERS_JIT:
        evidence[f"python.watched.{name}"] = (".".join(map(str, keras))
                                               + " (its optimizers compile with XLA on a GPU: jit_compile=True)")
    return evidence


__all__ = ["xla_in_use"]
