"""SRC101, SRC109, SRC111, SRC112: Keras layers — data layout, redundant biases, mixed precision."""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Iterator

from tfdoctor.lint.edits import add_keyword, replace_node
from tfdoctor.lint.keras_layers import (
    BATCH_NORM_LAYERS,
    CONV_LAYERS,
    DENSE_LAYERS,
    POOLING_LAYERS,
    layer_class,
    layer_index,
    mixed_precision_policy,
    under_policy,
)
from tfdoctor.lint.rule import Hit, SourceFix, lint_rule
from tfdoctor.lint.source import SourceModule, argument, constant, keyword
from tfdoctor.model import Applicability, Severity

_SET_FORMAT = frozenset({"keras.backend.set_image_data_format", "keras.config.set_image_data_format"})
_SOFTMAX_FUNCS = frozenset({"keras.activations.softmax", "tf.nn.softmax", "tf.math.softmax"})


@lint_rule("SRC101", "conv-channels-first", Severity.WARNING, triggers=[b"channels_first"])
def conv_channels_first(module: SourceModule) -> Iterator[Hit]:
    """Convolution or pooling layers use `data_format="channels_first"` (NCHW).

    What it does:
        Flags Keras convolution and pooling layers constructed with `data_format="channels_first"`, and
        `keras.backend.set_image_data_format("channels_first")` (or `keras.config.…`), which makes it
        the default for every layer.

    Why is this bad?
        On CPUs TensorFlow's convolutions are NHWC: NCHW is unsupported in older releases and measured
        1.5× slower here with TF 2.21. On GPUs with mixed precision, tensor cores want NHWC and cuDNN
        transposes around every NCHW convolution. `channels_last` is the layout both paths are tuned for.

    Example:
        x = layers.Conv2D(64, 3, padding="same", data_format="channels_first")(x)

    Fix:
        x = layers.Conv2D(64, 3, padding="same", data_format="channels_last")(x)

        and feed images as (batch, height, width, channels) (`tf.transpose(x, [0, 2, 3, 1])` once in the
        input pipeline if the data is stored NCHW).

    Fix safety:
        Manual (the edit is shown, `--fix --unsafe-fixes` does not apply it): on the same input tensor a
        channels_last layer computes something else, so the model's outputs change until every layer
        and the input pipeline agree on the layout; weights saved in one layout do not load into the
        other unchanged.
    """
    for call, cls in layer_index(module).constructors:
        if cls not in CONV_LAYERS and cls not in POOLING_LAYERS:
            continue
        arg = keyword(call, "data_format")
        if arg is not None and constant(arg.value) == "channels_first":
            yield Hit(arg, f"{cls.rsplit('.', 1)[-1]} with data_format=\"channels_first\" (NCHW)",
                      evidence={"layer": cls}, fix=SourceFix('Use data_format="channels_last"',
                      (replace_node(module, arg.value, '"channels_last"'),), Applicability.MANUAL))
    for call in module.calls_named(*_SET_FORMAT):
        value = argument(call, "data_format", 0)
        if value is not None and constant(value) == "channels_first":
            yield Hit(call, "image data format set to channels_first for every layer",
                      evidence={"call": module.call_name(call)},
                      fix=SourceFix('Use "channels_last"', (replace_node(module, value, '"channels_last"'),),
                                    Applicability.MANUAL))


def _conv_bn_pairs(module: SourceModule) -> Iterator[ast.Call]:
    """Constructor calls of convolutions whose output goes straight into a batch normalization."""
    if "BatchNormalization" not in module.text:
        return  # every batch normalization layer lint knows has this in its name: no walk needed
    index = layer_index(module)
    # Sequential([... Conv2D(...), BatchNormalization(), ...])
    for seq in [*module.nodes(ast.List), *module.nodes(ast.Tuple)]:
        for first, second in itertools.pairwise(seq.elts):
            if isinstance(first, ast.Call) and isinstance(second, ast.Call) and \
                    layer_class(module, first) in CONV_LAYERS and layer_class(module, second) in BATCH_NORM_LAYERS:
                yield first
    # model.add(Conv2D(...)); model.add(BatchNormalization())
    for body in _statement_lists(module):
        for first, second in itertools.pairwise(body):
            a, b = _added_layer(module, first), _added_layer(module, second)
            if a and b and a[0] == b[0] and layer_class(module, a[1]) in CONV_LAYERS and \
                    layer_class(module, b[1]) in BATCH_NORM_LAYERS:
                yield a[1]
    # BatchNormalization()(Conv2D(...)(x)), y = conv(x); y = bn(y), self.bn(self.conv(x))
    for call in module.calls:
        bn = index.applied_layer(call)
        if bn is None or layer_class(module, bn) not in BATCH_NORM_LAYERS or not call.args:
            continue
        conv = index.layer_of_value(call.args[0], call)
        if conv is not None and layer_class(module, conv) in CONV_LAYERS:
            yield conv


def _statement_lists(module: SourceModule) -> Iterator[list[ast.stmt]]:
    for node in [module.tree, *module.nodes(ast.FunctionDef), *module.nodes(ast.For), *module.nodes(ast.With),
                 *module.nodes(ast.If)]:
        yield node.body  # type: ignore[attr-defined]


def _added_layer(module: SourceModule, stmt: ast.stmt) -> tuple[str, ast.Call] | None:
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        call = stmt.value
        if isinstance(call.func, ast.Attribute) and call.func.attr == "add" and len(call.args) == 1 and \
                isinstance(call.args[0], ast.Call):
            return ast.dump(call.func.value), call.args[0]
    return None


@lint_rule("SRC109", "conv-bias-before-batch-norm", Severity.INFO, triggers=[b"BatchNormalization"])
def conv_bias_before_batch_norm(module: SourceModule) -> Iterator[Hit]:
    """A convolution with a bias feeds straight into BatchNormalization.

    What it does:
        Flags a Keras convolution that keeps its bias (`use_bias=True`, the default) when its output
        goes directly into `BatchNormalization`: adjacent in a `Sequential` list, consecutive
        `model.add()` calls, or applied functionally (`bn(conv(x))`, also through `self.` attributes).

    Why is this bad?
        Batch normalization subtracts the per-channel mean, so a per-channel bias added just before it
        cancels out: it is a weight that is stored, read, updated and all-reduced every step and never
        changes the output. It also costs a separate bias-add kernel where the convolution could have
        run alone.

    Example:
        x = layers.Conv2D(64, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)

    Fix:
        x = layers.Conv2D(64, 3, padding="same", use_bias=False)(x)

    Not flagged: a convolution with a nonlinear `activation` (the bias is applied before it and is not
    cancelled), and a layer given an explicit `name=` (named layers are how pretrained weights are loaded
    by name; the bias is then kept on purpose).

    Fix safety:
        Unsafe: the model computes the same function, but its checkpoints lose one variable per layer,
        so weights saved before the change no longer load by position.
    """
    seen: set[int] = set()
    for conv in _conv_bn_pairs(module):
        if id(conv) in seen:
            continue
        seen.add(id(conv))
        use_bias = keyword(conv, "use_bias")
        if use_bias is not None and constant(use_bias.value) is not True:
            continue
        activation = argument(conv, "activation")
        if activation is not None and constant(activation) not in (None, "linear"):
            continue  # conv → activation → BN: the bias shifts what the nonlinearity sees; it is not cancelled
        if keyword(conv, "name") is not None:
            continue  # a named layer is matched by name when pretrained weights are loaded: keep its variables
        if use_bias is not None:
            edit = replace_node(module, use_bias.value, "False")
        else:
            edit = add_keyword(module, conv, "use_bias=False")  # type: ignore[assignment]
        fix = SourceFix("Pass use_bias=False", (edit,) if edit else (), Applicability.UNSAFE if edit
                        else Applicability.MANUAL)
        cls = (layer_class(module, conv) or "").rsplit(".", 1)[-1]
        yield Hit(use_bias if use_bias is not None else conv.func,
                  f"{cls} has a bias that the BatchNormalization right after it cancels", evidence={"layer": cls},
                  fix=fix)


def _softmax_activation(module: SourceModule, call: ast.Call, cls: str) -> bool:
    if cls == "keras.layers.Softmax":
        return True
    activation = argument(call, "activation", 0 if cls == "keras.layers.Activation" else None)
    if activation is None:
        return False
    return constant(activation) == "softmax" or module.qualified(activation) in _SOFTMAX_FUNCS


def _float32_dtype(module: SourceModule, call: ast.Call) -> bool:
    dtype = argument(call, "dtype")
    if dtype is None:
        return False
    return constant(dtype) == "float32" or module.qualified(dtype) == "tf.float32"


@lint_rule("SRC111", "softmax-in-float16", Severity.WARNING, triggers=[b"mixed_float16"])
def softmax_in_float16(module: SourceModule) -> Iterator[Hit]:
    """Under the mixed_float16 policy a softmax layer computes in float16.

    What it does:
        When the script sets the global policy to `mixed_float16`, flags layers that apply a softmax
        (`activation="softmax"`, `Activation("softmax")`, `layers.Softmax()`) without
        `dtype="float32"`.

    Why is this bad?
        Softmax exponentiates: in float16 large logits overflow to inf and small probabilities underflow
        to zero, so the loss becomes NaN or its gradient vanishes. The mixed precision guide keeps the
        model's output in float32; better still, output logits and let the loss apply the softmax
        (`from_logits=True`), which is both stable and cheaper.

    Example:
        keras.mixed_precision.set_global_policy("mixed_float16")
        outputs = layers.Dense(10, activation="softmax")(x)

    Fix:
        outputs = layers.Dense(10, activation="softmax", dtype="float32")(x)

        or: `outputs = layers.Dense(10)(x)` with `SparseCategoricalCrossentropy(from_logits=True)`.

    Fix safety:
        Unsafe: it changes numerics (for the better); the float32 layer costs a cast.
    """
    policy = mixed_precision_policy(module)
    if policy is None or policy[0] != "mixed_float16":
        return
    for call, cls in layer_index(module).constructors:
        if not under_policy(module, policy[1], call):
            continue
        if _softmax_activation(module, call, cls) and not _float32_dtype(module, call):
            edit = add_keyword(module, call, 'dtype="float32"')
            yield Hit(call.func, f"{cls.rsplit('.', 1)[-1]} applies softmax in float16 under mixed_float16",
                      evidence={"policy": policy[0], "layer": cls},
                      fix=SourceFix('Pass dtype="float32" (or move the softmax into the loss: from_logits=True)',
                                    (edit,) if edit else (), Applicability.UNSAFE if edit else Applicability.MANUAL))


def _int_value(module: SourceModule, node: ast.AST | None) -> int | None:
    value = constant(node)
    if isinstance(node, ast.Name):
        return module.derived(_module_int_constants).get(node.id)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _module_int_constants(module: SourceModule) -> dict[str, int]:
    found: dict[str, int] = {}
    counts: dict[str, int] = {}
    for stmt in module.tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            name = stmt.targets[0].id
            counts[name] = counts.get(name, 0) + 1
            value = constant(stmt.value)
            if isinstance(value, int) and not isinstance(value, bool):
                found[name] = value
    return {k: v for k, v in found.items() if counts[k] == 1}  # reassigned names are not constants


_DATA_SIZED = re.compile(r"class|label|categor|vocab|output|target|action", re.IGNORECASE)


def _sized_by_the_data(module: SourceModule, call: ast.Call, size_node: ast.AST | None) -> bool:
    """An output layer: sized by a class count (`NUM_CLASSES`), with a softmax/sigmoid, or last in a
    Sequential list. Its size is fixed by the data; padding it changes the model's outputs."""
    name = size_node.id if isinstance(size_node, ast.Name) else size_node.attr if isinstance(size_node, ast.Attribute) \
        else ""
    if _DATA_SIZED.search(name):
        return True
    if constant(argument(call, "activation", 1)) in ("softmax", "sigmoid"):
        return True
    parent = module.parents.get(call)
    return isinstance(parent, (ast.List, ast.Tuple)) and parent.elts and parent.elts[-1] is call


@lint_rule("SRC112", "layer-size-not-multiple-of-8", Severity.INFO, triggers=[b"mixed_"])
def layer_size_not_multiple_of_8(module: SourceModule) -> Iterator[Hit]:
    """Under mixed precision a Dense or Conv size is not a multiple of 8.

    What it does:
        When the script sets a `mixed_float16` or `mixed_bfloat16` policy, flags `Dense(units)` and
        convolution `filters` given as literals (or module constants) that are not multiples of 8.
        Layers that compute in float32 (`dtype="float32"`) are skipped, and so are output layers, whose
        size the data fixes: sized by a name like `NUM_CLASSES`/`vocab_size`, with a softmax or sigmoid
        activation, or last in a `Sequential` list. A policy set inside a function counts from that call
        on (that function and what it calls), not for the whole file.

    Why is this bad?
        Tensor cores multiply tiles whose sides are multiples of 8 (float16); cuDNN and cuBLAS pick
        tensor-core kernels only when the matrix dimensions line up, otherwise they pad internally or
        fall back to slower kernels. NVIDIA's guidance and the TensorFlow mixed precision guide: make
        units, filters, vocabulary and batch sizes multiples of 8.

    Example:
        keras.mixed_precision.set_global_policy("mixed_float16")
        x = layers.Dense(1000, activation="relu")(x)   # fine: 1000 = 8 × 125
        x = layers.Dense(500, activation="relu")(x)    # 500 is not

    Fix:
        Round the size up to the next multiple of 8 (`layers.Dense(504)`); for an output layer whose
        size the data fixes, compute it in float32 (`dtype="float32"`) or pad the classes.

    Fix safety:
        Manual: it changes the model's capacity and its checkpoint shapes.
    """
    policy = mixed_precision_policy(module)
    if policy is None:
        return
    for call, cls in layer_index(module).constructors:
        if cls in DENSE_LAYERS:
            param, size_node = "units", argument(call, "units", 0)
        elif cls in CONV_LAYERS and "Depthwise" not in cls:
            param, size_node = "filters", argument(call, "filters", 0)
        else:
            continue
        size = _int_value(module, size_node)
        if size is None or size % 8 == 0 or _float32_dtype(module, call):
            continue
        if not under_policy(module, policy[1], call) or _sized_by_the_data(module, call, size_node):
            continue
        rounded = (size + 7) // 8 * 8
        yield Hit(size_node or call, f"{cls.rsplit('.', 1)[-1]} {param}={size} is not a multiple of 8 under "
                  f"{policy[0]}: tensor cores need multiples of 8", evidence={param: size, "policy": policy[0]},
                  fix=SourceFix(f"Use {param}={rounded} (or compute this layer in float32)"))
