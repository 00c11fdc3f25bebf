"""Which library object a name in a script refers to, from its imports alone (no import is executed).

`import tensorflow as tf`, `from tensorflow import keras`, `from tensorflow.keras import layers`,
`import keras` (Keras 3) and `import tf_keras` all reach the same layers; rules compare *canonical*
names so that `tf.keras.layers.Conv2D`, `layers.Conv2D` and `keras.layers.Conv2D` match alike:
Keras lives under `keras.`, the rest of TensorFlow under `tf.`.
"""

from __future__ import annotations

import ast
import functools

# Longest first: the first matching prefix is rewritten. tf.data began as tf.contrib.data (TensorFlow 1.2 and 1.3,
# kept there deprecated in later 1.x releases): its Dataset and file datasets are tf.data's under an older name
# (map's `num_threads` and `output_buffer_size` are read where map is). Only those: the contrib module's own
# transformations (`tf.contrib.data.map_and_batch`) keep their names, which lint's tables use.
_CANONICAL_PREFIXES: tuple[tuple[str, str], ...] = (
    ("tensorflow.contrib.data.Dataset.", "tf.data.Dataset."),
    ("tensorflow.compat.v1.keras.", "keras."),
    ("tensorflow.compat.v2.keras.", "keras."),
    ("tensorflow.python.keras.", "keras."),
    ("tensorflow.keras.", "keras."),
    ("tf_keras.", "keras."),
    ("keras.src.", "keras."),
    ("tensorflow.compat.v1.", "tf."),
    ("tensorflow.compat.v2.", "tf."),
    ("tensorflow.", "tf."),
)
_CANONICAL_EXACT = {"tensorflow": "tf", "tensorflow.keras": "keras", "tf_keras": "keras",
                    **{f"tensorflow.contrib.data.{name}": f"tf.data.{name}"
                       for name in ("Dataset", "TFRecordDataset", "TextLineDataset", "FixedLengthRecordDataset")}}


@functools.lru_cache(maxsize=65536)  # the same few hundred names recur in every file of a corpus
def canonical(dotted: str) -> str:
    if dotted in _CANONICAL_EXACT:
        return _CANONICAL_EXACT[dotted]
    for prefix, replacement in _CANONICAL_PREFIXES:
        if dotted.startswith(prefix):
            return replacement + dotted[len(prefix):]
    return dotted


class ImportMap:
    """Local name → fully qualified dotted name, for every import anywhere in the module.

    Scripts import inside functions too (`def main(): import tensorflow as tf`); one table for the
    whole module is what a reader assumes, and a clash of one alias for two modules is rare enough.
    """

    def __init__(self, bindings: dict[str, str]) -> None:
        self.bindings = bindings

    @classmethod
    def from_imports(cls, nodes: list[ast.Import | ast.ImportFrom]) -> ImportMap:
        bindings: dict[str, str] = {}
        for node in nodes:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        bindings[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".", 1)[0]
                        bindings[top] = top
            elif node.module and not node.level:
                for alias in node.names:
                    if alias.name != "*":
                        bindings[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        return cls(bindings)

    def imports_module(self, prefix: str) -> bool:
        """Whether anything is imported from `prefix` (a canonical dotted module name)."""
        return any(canonical(v) == prefix or canonical(v).startswith(prefix + ".") for v in self.bindings.values())

    def qualified(self, node: ast.AST) -> str | None:
        """The canonical dotted name an expression refers to, or None when it is not an imported name."""
        # Asked for every call of every file (issue 25): the parts are gathered once, the base name
        # alone needs no join.
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        base = self.bindings.get(node.id)
        if base is None:
            return None
        if not parts:
            return canonical(base)
        parts.append(base)
        parts.reverse()
        return canonical(".".join(parts))

    def alias_for(self, canonical_module: str) -> str | None:
        """A local name bound to `canonical_module` (e.g. "tf"), to write fixes in the script's own terms."""
        for local, target in sorted(self.bindings.items()):
            if canonical(target) == canonical_module:
                return local
        return None
