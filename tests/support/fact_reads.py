"""Which fact paths the checks read, recorded while they run, and whether facts.schema.json declares
each one (issue 11, item 9: a check reading a fact no probe writes can never fire).

Reads are recorded in tests only — Facts.get/peek/env and the GPU device-record reader are wrapped for
the duration of `recorded_reads` — so the check path pays nothing. Any test with facts of its own can
call `assert_reads_in_schema(facts_list)`.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from tfdoctor.facts import Facts

SCHEMA = Path(__file__).resolve().parents[2] / "tfdoctor" / "schema" / "facts.schema.json"
ITEM = "[]"  # a path segment standing for every element of an array


@contextlib.contextmanager
def recording() -> Iterator[set[str]]:
    """Record every fact path read while the block runs."""
    from tfdoctor.checks import gpu_health

    reads: set[str] = set()
    get, peek, env, value = Facts.get, Facts.peek, Facts.env, gpu_health._value

    def recorded_get(self: Facts, path: str, *args: Any, **kwargs: Any) -> Any:
        reads.add(path)
        return get(self, path, *args, **kwargs)

    def recorded_peek(self: Facts, path: str, *args: Any, **kwargs: Any) -> Any:
        reads.add(path)
        return peek(self, path, *args, **kwargs)

    def recorded_env(self: Facts, name: str) -> Any:
        reads.add(f"env.variables.{name}")
        return env(self, name)

    def recorded_value(gpu: Any, *path: str, **kwargs: Any) -> Any:
        reads.add(".".join(("nvml", "devices", ITEM, *path)))
        return value(gpu, *path, **kwargs)

    Facts.get, Facts.peek, Facts.env = recorded_get, recorded_peek, recorded_env  # type: ignore[method-assign]
    gpu_health._value = recorded_value
    try:
        yield reads
    finally:
        Facts.get, Facts.peek, Facts.env = get, peek, env  # type: ignore[method-assign]
        gpu_health._value = value


def recorded_reads(facts_list: Iterable[Facts]) -> set[str]:
    """Every path any registered check reads over these facts."""
    from tfdoctor.engine import run_checks
    from tfdoctor.registry import load_registry

    checks = load_registry().checks
    with recording() as reads:
        for facts in facts_list:
            run_checks(checks, facts)
    return reads


def _resolve(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        target: Any = root
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _children(node: dict[str, Any], segment: str, root: dict[str, Any]) -> list[dict[str, Any]]:
    node = _resolve(node, root)
    found: list[dict[str, Any]] = []
    for branch in node.get("anyOf", []) + node.get("oneOf", []):
        found += _children(branch, segment, root)
    if segment == ITEM:
        if isinstance(node.get("items"), dict):
            found.append(node["items"])
        return found
    properties = node.get("properties", {})
    if segment in properties:
        found.append(properties[segment])
    elif isinstance(node.get("additionalProperties"), dict):  # a map: any key, values of one shape
        found.append(node["additionalProperties"])
    return found


def declared(path: str, schema: dict[str, Any] | None = None) -> bool:
    """Whether facts.schema.json names `path` (dotted, under "sections"), through anyOf, $ref and maps."""
    schema = schema or json.loads(SCHEMA.read_text())
    nodes = [schema["properties"]["sections"]]
    for segment in path.split("."):
        nodes = [child for node in nodes for child in _children(node, segment, schema)]
        if not nodes:
            return False
    return True


def undeclared(reads: Iterable[str]) -> list[str]:
    schema = json.loads(SCHEMA.read_text())
    return sorted(path for path in reads if not declared(path, schema))


def assert_reads_in_schema(facts_list: Iterable[Facts]) -> None:
    missing = undeclared(recorded_reads(facts_list))
    assert not missing, f"checks read fact paths that facts.schema.json does not declare: {missing}"
