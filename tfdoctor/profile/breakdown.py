"""Where a step's time goes, from the XSpace (pure): the GPU performance guides' first question.

Every picosecond of every step (the host's step markers, `Trace("train", step_num=n, _r=1)`) goes to
exactly one category, so the categories add up to the step time:

- device_compute  a GPU kernel is running (any stream, any GPU)
- communication   no kernel, but an NCCL kernel (all-reduce, all-gather…) is running
- copies          none of those, but a host↔device (or device↔device) memcpy is running
- input           the device is idle while the host waits for the next batch (IteratorGetNext)
- compilation     the device is idle while XLA compiles (_XlaCompile, GpuCompiler passes, ptxas)
- launch          the device is idle while the host launches work: CUDA launch calls (cudaLaunchKernel,
                  cuLaunchKernel, graph launches) and the host side of the ops that make them
- host_compute    the device is idle while TensorFlow ops run on the host
- other           none of these: Python between steps, synchronisation, untraced host work

The order above is the priority where activities overlap: device work hides the host work that runs
beside it (as in xprof's non-overlapped step events), and of the host reasons for an idle device the
more specific wins. Which event names belong to which category is data:
`tfdoctor/knowledge/trace_events.toml`.

The arithmetic is done in integer picoseconds (the XSpace's unit); milliseconds are derived at the end.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from tfdoctor.facts import Unknown

CATEGORIES = ("input", "launch", "host_compute", "device_compute", "copies", "communication", "compilation",
              "other")
# Where activities overlap, the step time goes to the first of these (see the module docstring).
PRIORITY = ("device_compute", "communication", "copies", "input", "compilation", "launch", "host_compute")
PS_PER_MS = 1_000_000_000
MAX_KERNEL_NAMES = 20
# Lines of a device plane that TensorFlow derives from the kernels (they repeat the kernels' time).
DERIVED_LINES = frozenset({"XLA Modules", "XLA Ops", "TensorFlow Ops", "TensorFlow Name Scope", "Steps", "Source",
                           "Framework Name Scope", "Framework Ops", "XLA TraceMe", "Launch Stats", "Sparse Core"})
OP_EVENT = re.compile(r"^(?P<name>[^\s:][^\s]*?):(?P<type>[A-Za-z_][A-Za-z0-9_]*)$")


@dataclass(frozen=True)
class Rule:
    """How a trace event is sorted into a step-time category (by name prefix, op type or pattern)."""

    category: str | None
    mark: str | None
    plane: str
    prefixes: tuple[str, ...]
    op_types: frozenset[str]
    pattern: re.Pattern[str] | None

    def matches(self, name: str, op_type: str | None) -> bool:
        if self.prefixes and name.lower().startswith(self.prefixes):
            return True
        if op_type is not None and op_type in self.op_types:
            return True
        return bool(self.pattern and self.pattern.search(name))


@lru_cache(maxsize=1)
def rules() -> tuple[Rule, ...]:
    from tfdoctor.knowledge import table

    return tuple(
        Rule(category=row.get("category"), mark=row.get("mark"), plane=row["plane"],
             prefixes=tuple(p.lower() for p in row.get("prefixes", ())), op_types=frozenset(row.get("op_types", ())),
             pattern=re.compile(row["pattern"], re.IGNORECASE) if "pattern" in row else None)
        for row in table("trace_events").rows
    )


def classify(name: str, plane: str) -> str | None:
    """The category of an event by its name alone (None: not a known kind of event)."""
    match = OP_EVENT.match(name)
    op_type = match.group("type") if match and "::" not in name else None
    for rule in rules():
        if rule.category and rule.plane == plane and rule.matches(name, op_type):
            return rule.category
    return None


def has_mark(name: str, mark: str) -> bool:
    return any(rule.mark == mark and rule.matches(name, None) for rule in rules())


# -- reading the planes ----------------------------------------------------------------------------


def _stats(event: Any, stat_names: dict[int, str]) -> dict[str, Any]:
    values = {}
    for stat in event.stats:
        kind = stat.WhichOneof("value")
        value = stat_names.get(stat.ref_value) if kind == "ref_value" else (getattr(stat, kind) if kind else None)
        values[stat_names.get(stat.metadata_id, "")] = value
    return values


def _line_events(plane: Any) -> Iterable[tuple[Any, list[tuple[str, int, int, dict[str, Any]]]]]:
    """(line, [(name, start ps, end ps, stats)]) for every line of a plane, events in time order."""
    metadata = plane.event_metadata
    stat_names = {key: value.name for key, value in plane.stat_metadata.items()}
    for line in plane.lines:
        base = line.timestamp_ns * 1000
        events = []
        for event in line.events:
            name = metadata[event.metadata_id].name if event.metadata_id in metadata else ""
            start = base + event.offset_ps
            events.append((name, start, start + event.duration_ps, _stats(event, stat_names)))
        events.sort(key=lambda e: (e[1], -e[2]))
        yield line, events


def step_windows(host_planes: Iterable[Any]) -> list[tuple[int, int, int]]:
    """(step number, start ps, end ps) of the host's step markers, in time order."""
    windows = []
    for plane in host_planes:
        for _line, events in _line_events(plane):
            for _name, start, end, stats in events:
                if "step_num" in stats and stats.get("_r") == 1 and end > start:
                    windows.append((int(stats["step_num"]), start, end))
    windows.sort(key=lambda w: w[1])
    return windows


def _host_spans(plane: Any) -> list[tuple[int, int, str]]:
    spans = []
    for _line, events in _line_events(plane):
        launches = [(start, end) for name, start, end, _ in events if classify(name, "host") == "launch"]
        launch_starts = [start for start, _ in launches]
        for name, start, end, stats in events:
            if "step_num" in stats:
                continue
            category = classify(name, "host")
            if category is None:
                # An op (or an eager dispatch) that makes a launch call is the host side of a launch.
                first = bisect.bisect_left(launch_starts, start)
                if any(s < end and e <= end for s, e in launches[first:first + 64]):
                    category = "launch"
                elif OP_EVENT.match(name) and "::" not in name:
                    category = "host_compute"
            if category is not None and end > start:
                spans.append((start, end, category))
    return spans


def _device_spans(plane: Any) -> tuple[list[tuple[int, int, str]], list[tuple[int, int, str]]]:
    """(categorised spans, kernels as (start, end, name))."""
    spans, kernels = [], []
    for line, events in _line_events(plane):
        if line.name in DERIVED_LINES or line.display_name in DERIVED_LINES:
            continue
        for name, start, end, stats in events:
            if end <= start:
                continue
            category = classify(name, "device") or ("copies" if "memcpy_details" in stats else "device_compute")
            spans.append((start, end, category))
            if category == "device_compute":
                kernels.append((start, end, name))
    return spans, kernels


# -- the arithmetic --------------------------------------------------------------------------------


def _split_by_step(spans: Iterable[tuple[int, int, Any]], windows: list[tuple[int, int, int]]
                   ) -> list[list[tuple[int, int, Any]]]:
    """Each span clipped to each step window it overlaps (windows in time order)."""
    starts = [start for _n, start, _e in windows]
    per_step: list[list[tuple[int, int, Any]]] = [[] for _ in windows]
    for start, end, value in spans:
        index = max(0, bisect.bisect_right(starts, start) - 1)
        while index < len(windows) and windows[index][1] < end:
            _n, low, high = windows[index]
            clipped = (max(start, low), min(end, high))
            if clipped[0] < clipped[1]:
                per_step[index].append((clipped[0], clipped[1], value))
            index += 1
    return per_step


def attribute(window: tuple[int, int], spans: list[tuple[int, int, str]]) -> dict[str, int]:
    """Picoseconds per category within one window: each instant to the highest-priority activity."""
    rank = {category: i for i, category in enumerate(PRIORITY)}
    edges: list[tuple[int, int, int]] = []
    for start, end, category in spans:
        edges.append((start, 1, rank[category]))
        edges.append((end, -1, rank[category]))
    edges.sort()
    active = [0] * len(PRIORITY)
    totals = dict.fromkeys(CATEGORIES, 0)
    position = window[0]
    for at, delta, index in edges:
        if at > position:
            busy = next((i for i, count in enumerate(active) if count), None)
            totals[PRIORITY[busy] if busy is not None else "other"] += at - position
            position = at
        active[index] += delta
    totals["other"] += window[1] - position
    return totals


def _ms(ps: float) -> float:
    return ps / PS_PER_MS


def step_breakdown(space: Any, windows: list[tuple[int, int, int]] | None = None) -> dict[str, Any] | Unknown:
    """The breakdown of the profile's steps (shape in docs/profile.md and schema/breakdown.schema.json):
    the step markers', or the given (step number, start ps, end ps) windows (steps found in a script)."""
    host_planes = [p for p in space.planes if p.name.startswith("/host:")]
    device_planes = [p for p in space.planes if p.name.startswith("/device:GPU:")]
    windows = step_windows(host_planes) if windows is None else windows
    if not windows:
        return Unknown("the profile has no steps (no step markers, Trace('train', step_num=n, _r=1), "
                       "none found in the script, or all warm-up); without steps there is no step time to break down")
    spans = [span for plane in host_planes for span in _host_spans(plane)]
    kernels: list[tuple[int, int, str]] = []
    for plane in device_planes:
        device, plane_kernels = _device_spans(plane)
        spans.extend(device)
        kernels.extend(plane_kernels)
    per_step = []
    totals = dict.fromkeys(CATEGORIES, 0)
    for (number, start, end), step_spans in zip(windows, _split_by_step(spans, windows), strict=True):
        ps = attribute((start, end), step_spans)
        assert sum(ps.values()) == end - start  # every instant went to exactly one category
        for category, value in ps.items():
            totals[category] += value
        per_step.append({"step": number, "step_ms": _ms(end - start),
                         "categories_ms": {c: _ms(ps[c]) for c in CATEGORIES}})
    count = len(windows)
    result: dict[str, Any] = {
        "step_ms": _ms(sum(end - start for _n, start, end in windows) / count),
        "categories_ms": {c: _ms(totals[c] / count) for c in CATEGORIES},
        "per_step": per_step,
    }
    result.update(_precision(kernels, windows))
    return result


def _precision(kernels: list[tuple[int, int, str]], windows: list[tuple[int, int, int]]) -> dict[str, Any]:
    """Share of the steps' kernel time in float16/bfloat16 kernels, and tensor-core kernels (by name)."""
    in_steps = [span for step in _split_by_step(kernels, windows) for span in step]
    total = sum(end - start for start, end, _ in in_steps)
    if not total:
        reason = Unknown("no GPU kernels ran inside the steps (a CPU run, or CUPTI captured nothing)")
        return {"half_precision_device_share": reason, "tensor_core_kernels": reason,
                "tensor_core_kernel_names": []}
    by_name: dict[str, int] = {}
    for start, end, name in in_steps:
        by_name[name] = by_name.get(name, 0) + end - start
    half = sum(ps for name, ps in by_name.items() if has_mark(name, "half_precision"))
    tensor_core = sorted((name for name in by_name if has_mark(name, "tensor_core")), key=lambda n: -by_name[n])
    return {"half_precision_device_share": half / total, "tensor_core_kernels": bool(tensor_core),
            "tensor_core_kernel_names": tensor_core[:MAX_KERNEL_NAMES]}
