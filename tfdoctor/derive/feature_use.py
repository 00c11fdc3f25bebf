"""Whether this job uses a feature whose breakage only matters when used: XLA on the GPU (pure).

A missing libdevice stops every XLA GPU compilation and nothing else; an image where nothing turns XLA
on trains without it. What turns it on, as far as the machine shows:

- TF_XLA_FLAGS with --tf_xla_auto_jit=1, 2 or fusible (auto-clustering for the whole process);
- XLA_FLAGS set at all (XLA's own options: nobody sets them for a job that never compiles);
- Keras 3 (TensorFlow 2.16+, unless TF_USE_LEGACY_KERAS=1 picks tf-keras): Model.compile's default
  jit_compile="auto" compiles train and predict steps with XLA whenever a GPU is present and no
  tf.distribute strategy is used (keras/src/trainers/trainer.py, `_resolve_auto_jit_compile`).

`tf.function(jit_compile=True)` in the code is not visible here: `tfdoctor lint` reads the script.
"""

from __future__ import annotations

from tfdoctor.derive.versions import version_tuple
from tfdoctor.derive.xla_flags import auto_jit_globally_on, effective_tf_xla_flags
from tfdoctor.facts import Facts

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
    keras = _watched_version(facts, "keras")
    legacy = (facts.env("TF_USE_LEGACY_KERAS") or "").strip().lower() in ("1", "true", "yes") and bool(
        _watched_version(facts, "tf-keras") or _watched_version(facts, "tf_keras"))
    if keras[:1] >= (3,) and not legacy:
        evidence["python.watched.keras"] = ".".join(map(str, keras)) + " (Model.compile's jit_compile=\"auto\")"
    return evidence


__all__ = ["xla_in_use"]
