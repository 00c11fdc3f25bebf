"""LAY — data layout: keras.json's image_data_format against the hardware and the precision policy."""

from __future__ import annotations

from collections.abc import Iterator

from tfdoctor.derive.precision import FLOAT16_POLICIES, declared_policy
from tfdoctor.derive.tensorflow_gpus import tensorflow_gpus
from tfdoctor.facts import Facts
from tfdoctor.model import AdminFix, Applicability, Finding, PythonFix, Severity
from tfdoctor.registry import check


def _channels_first(facts: Facts) -> str | None:
    """keras.json's path when it sets channels_first, else None (a missing file means channels_last)."""
    config = facts.get("keras.config")
    if isinstance(config, dict) and config.get("image_data_format") == "channels_first":
        return str(facts.get("keras.path", "keras.json"))
    return None


def _layout_fixes(path: str) -> tuple[PythonFix | AdminFix, ...]:
    return (
        AdminFix(f"Set \"image_data_format\": \"channels_last\" in {path}", (),
                 text=f"edit {path}: set \"image_data_format\": \"channels_last\", and feed the model NHWC "
                      "tensors (batch, height, width, channels)"),
        PythonFix("Use channels_last in the training process",
                  'import tensorflow as tf\ntf.keras.backend.set_image_data_format("channels_last")\n',
                  Applicability.UNSAFE),
    )


@check("LAY101", "channels-first-without-gpu", Severity.WARNING)
def channels_first_without_gpu(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds keras.json setting `image_data_format` to `channels_first` (NCHW) where TensorFlow runs
    on the CPU: no NVIDIA GPU is visible, or the installed TensorFlow cannot use one (a CPU-only
    distribution such as tensorflow-cpu, or a build without CUDA, on a GPU host).

    Why is this bad?
    NCHW is a GPU layout. Older TensorFlow CPU kernels do not implement NCHW convolutions at all
    ("The Conv2D op currently only supports the NHWC tensor format on the CPU"); newer ones
    transpose around every convolution — 1.5× slower than channels_last here with TF 2.21.

    Example:
    ~/.keras/keras.json: {"image_data_format": "channels_first", ...} on a CPU-only node, or with
    tensorflow-cpu installed on a host with an A100.

    Fix:
    Set "image_data_format": "channels_last" and feed NHWC tensors.

    Fix safety:
    Unsafe: the model's input layout changes; a pipeline producing NCHW tensors and Flatten-ordered
    weights saved under channels_first must be converted too.
    """
    path = _channels_first(facts)
    if path is None:
        return
    gpus = tensorflow_gpus(facts)
    if gpus:
        return
    yield Finding(
        f"{path} sets image_data_format=channels_first but {gpus.cpu_only}: every convolution "
        "runs on the CPU in a CPU-unfriendly layout",
        evidence={"keras.config.image_data_format": "channels_first", "keras.path": path, **gpus.evidence},
        fixes=_layout_fixes(path),
    )


@check("LAY102", "channels-first-with-mixed-precision", Severity.WARNING)
def channels_first_with_mixed_precision(facts: Facts) -> Iterator[Finding]:
    """What it does:
    Finds keras.json's `channels_first` where TensorFlow runs on a GPU (a CUDA build with a visible
    GPU) and the declared policy computes in float16
    (TFDOCTOR_MIXED_PRECISION or keras.json floatx, see docs/framework.md) or where
    TF_ENABLE_AUTO_MIXED_PRECISION is on.

    Why is this bad?
    Tensor-core convolutions in float16 want NHWC; TensorFlow's layout optimizer then converts
    the NCHW model, inserting a transpose before and after every convolution.

    Example:
    keras.json channels_first, TFDOCTOR_MIXED_PRECISION=mixed_float16, one A100.

    Fix:
    Set "image_data_format": "channels_last".

    Fix safety:
    Unsafe: the model's input layout changes.
    """
    path = _channels_first(facts)
    if path is None or not tensorflow_gpus(facts):
        return
    from tfdoctor.derive.precision import PolicyDeclarationError, auto_mixed_precision_enabled

    try:
        policy = declared_policy(facts)
    except PolicyDeclarationError:
        policy = None  # MP001 reports the misspelt declaration
    evidence: dict[str, object] = {"keras.config.image_data_format": "channels_first", "keras.path": path}
    if policy is not None and policy.name in FLOAT16_POLICIES:
        evidence[policy.source] = policy.name
        how = f"the {policy.name} policy ({policy.source})"
    elif auto_mixed_precision_enabled(facts):
        evidence["env.TF_ENABLE_AUTO_MIXED_PRECISION"] = facts.env("TF_ENABLE_AUTO_MIXED_PRECISION")
        how = "TF_ENABLE_AUTO_MIXED_PRECISION"
    else:
        return
    yield Finding(
        f"{path} sets image_data_format=channels_first under {how}: float16 convolutions run NHWC, so "
        "every convolution is wrapped in transposes",
        evidence=evidence,
        fixes=_layout_fixes(path),
    )
