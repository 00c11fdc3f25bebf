"""The recorded facts files of tests/snapshots/, read the way a test damages one by hand: the JSON tree (a
fresh copy at each call, free to edit), a fact at a path replaced, and the result as Facts or as a file to
pass to `--facts`."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tfdoctor.facts import Facts

SNAPSHOTS = Path(__file__).resolve().parents[1] / "snapshots"


def snapshot_tree(snapshot: str | Path) -> dict[str, Any]:
    """The facts file `snapshot` (a path, or a name relative to tests/snapshots/) as its JSON tree."""
    return json.loads((SNAPSHOTS / snapshot).read_text(encoding="utf-8"))  # an absolute path replaces the base


def set_fact(tree: dict[str, Any], path: str | Sequence[Any], value: object) -> None:
    """Put `value` at `path` under the tree's "sections": dotted ("env.variables.X", where a number indexes a
    list) or a sequence of keys (for a key holding a dot)."""
    keys = path.split(".") if isinstance(path, str) else list(path)
    node = tree["sections"]
    for key in keys[:-1]:
        node = node[_key(node, key)]
    node[_key(node, keys[-1])] = value


def _key(node: object, key: Any) -> Any:
    return int(key) if isinstance(node, list) else key


def edited_tree(snapshot: str | Path, edits: Mapping[str | tuple[Any, ...], object]) -> dict[str, Any]:
    """The tree of `snapshot` with each fact of `edits` (a path as `set_fact` takes it -> value) replaced."""
    tree = snapshot_tree(snapshot)
    for path, value in edits.items():
        set_fact(tree, path, value)
    return tree


def edited_facts(snapshot: str | Path, edits: Mapping[str | tuple[Any, ...], object]) -> Facts:
    """Facts as `--facts` reads them from `snapshot` with each fact of `edits` replaced."""
    return Facts.from_json(edited_tree(snapshot, edits))


def edited_file(snapshot: str | Path, edits: Mapping[str | tuple[Any, ...], object], to: Path) -> Path:
    """`snapshot` with each fact of `edits` replaced, written to `to` (for the command line's `--facts`)."""
    to.write_text(json.dumps(edited_tree(snapshot, edits)), encoding="utf-8")
    return to
