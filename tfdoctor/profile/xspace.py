"""Reading the TensorFlow Profiler's XSpace (`*.xplane.pb`) without importing TensorFlow.

The protobuf classes are generated code that ships in the TensorFlow wheel
(tensorflow/tsl/profiler/protobuf/xplane_pb2.py); it needs only `google.protobuf`, so it is loaded
from its file path — `importlib.util.find_spec("tensorflow")` locates the package without running its
`__init__`. When it cannot be loaded (no TensorFlow beside tfdoctor, a protobuf runtime that rejects
the generated code) the XSpace facts are unknown with that reason; the timing facts do not need it.

`summarize_xspace` is pure: it turns a parsed XSpace into plain facts, so tests build a small XSpace
with device planes and check what comes out (including "GPU present, no device events").
"""

from __future__ import annotations

import bisect
import importlib.util
import re
import statistics
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any

from tfdoctor.facts import Unknown
from tfdoctor.profile.breakdown import step_breakdown
from tfdoctor.profile.stats import quantile

XPLANE_RELATIVE = ("tsl", "profiler", "protobuf", "xplane_pb2.py")
# Lines of a device plane that TensorFlow derives from the kernels (they repeat the kernels' time).
DERIVED_LINES = ("XLA Modules", "XLA Ops", "TensorFlow Ops", "TensorFlow Name Scope", "Steps", "Source",
                 "Framework Name Scope", "Framework Ops", "XLA TraceMe", "Launch Stats", "Sparse Core")
# A TensorFlow op on a host thread is recorded as "op_name:OpType".
OP_EVENT = re.compile(r"^(?P<name>[^\s:][^\s]*?):(?P<type>[A-Za-z_][A-Za-z0-9_]*)$")
INPUT_OP_TYPES = frozenset({"IteratorGetNext", "IteratorGetNextAsOptional", "IteratorGetNextSync",
                            "MultiDeviceIteratorGetNextFromShard"})
# The wait for a batch: the eager call, and the op's own event (TensorFlow 2.21 records the op inside a
# tf.function as "IteratorGetNextOp::DoCompute" on a tf_data_iterator_get_next line, with no name:Type).
INPUT_EVENT_PREFIXES = ("EagerLocalExecute: IteratorGetNext", "IteratorGetNext")
STEP_EVENT = "tfdoctor_step"  # a step window the workload process found in a script (workload_main.ScriptSteps)
XLA_HOST_OP_TYPES = frozenset({"_XlaRun", "XlaLaunch", "_XlaCompile", "XlaLaunchV2"})
LOW_PRECISION = re.compile(r"(fp16|f16|half|bf16|bfloat16|h884|h1688|h16816|hmma|s16816gemm_f16)", re.IGNORECASE)
PS = 1e-12


@lru_cache(maxsize=1)
def xplane_module() -> ModuleType | Unknown:
    """The generated XSpace module from the installed TensorFlow wheel, loaded by path."""
    try:
        spec = importlib.util.find_spec("tensorflow")
    except (ImportError, ValueError) as exc:
        return Unknown(f"cannot locate TensorFlow: {exc}")
    if spec is None or not spec.submodule_search_locations:
        return Unknown("TensorFlow is not installed beside tfdoctor; the XSpace protos ship in its wheel")
    for location in spec.submodule_search_locations:
        path = Path(location, *XPLANE_RELATIVE)
        if path.is_file():
            break
    else:
        return Unknown(f"{'/'.join(XPLANE_RELATIVE)} is not in this TensorFlow installation")
    try:
        loader_spec = importlib.util.spec_from_file_location("tfdoctor_xplane_pb2", path)
        assert loader_spec is not None and loader_spec.loader is not None
        module = importlib.util.module_from_spec(loader_spec)
        loader_spec.loader.exec_module(module)
    except Exception as exc:  # ImportError (no protobuf), VersionError, descriptor clashes
        return Unknown(f"cannot load {path}: {type(exc).__name__}: {exc}")
    return module


def find_xspace_files(logdir: str | Path) -> list[Path]:
    """The newest run's *.xplane.pb files under a TensorBoard logdir (plugins/profile/<run>/)."""
    runs = sorted(Path(logdir).glob("plugins/profile/*/"), key=lambda p: p.name)
    if not runs:
        return []
    return sorted(runs[-1].glob("*.xplane.pb"))


# A short profile of a real GPU job is tens of MB; past this, parsing would cost more memory than the
# profile is worth to a summary.
XSPACE_LIMIT = 512 * 1024 * 1024


def load_xspace(path: str | Path) -> Any:
    """A parsed XSpace message; raises ValueError with a readable reason."""
    module = xplane_module()
    if isinstance(module, Unknown):
        raise ValueError(module.reason)
    from tfdoctor.facts.bounded import InputFileError, read_input_file

    space = module.XSpace()
    try:
        space.ParseFromString(read_input_file(path, XSPACE_LIMIT, "profile", timeout=60.0))
    except InputFileError as exc:
        raise ValueError(str(exc)) from None
    except Exception as exc:  # google.protobuf.message.DecodeError
        raise ValueError(f"{path} is not an XSpace: {exc}") from None
    return space


# -- pure summary --------------------------------------------------------------------------------


def _stat_value(stat: Any, names: dict[int, str]) -> Any:
    kind = stat.WhichOneof("value")
    if kind == "ref_value":
        return names.get(stat.ref_value)
    return getattr(stat, kind) if kind else None


def _events(plane: Any) -> Iterator[tuple[Any, Any, str, int, int]]:
    """(line, event, event name, start ps, end ps) over every event of a plane."""
    metadata = plane.event_metadata
    for line in plane.lines:
        base = line.timestamp_ns * 1000
        for event in line.events:
            name = metadata[event.metadata_id].name if event.metadata_id in metadata else ""
            start = base + event.offset_ps
            yield line, event, name, start, start + event.duration_ps


def _merged_length(intervals: Iterable[tuple[int, int]]) -> int:
    total, current_start, current_end = 0, None, None
    for start, end in sorted(intervals):
        if current_end is None or start > current_end:
            if current_end is not None:
                total += current_end - current_start  # type: ignore[operator]
            current_start, current_end = start, end
        else:
            current_end = max(current_end, end)
    if current_end is not None:
        total += current_end - current_start  # type: ignore[operator]
    return total


def _overlap(interval: tuple[int, int], windows: list[tuple[int, int]]) -> tuple[int, int] | None:
    """The part of interval inside the first step window it overlaps (windows sorted, disjoint)."""
    index = max(0, bisect.bisect_right(windows, (interval[0], interval[0])) - 1)
    for start, end in windows[index:index + 2]:
        low, high = max(interval[0], start), min(interval[1], end)
        if low < high:
            return low, high
    return None


def is_device_plane(name: str) -> bool:
    return name.startswith(("/device:GPU:", "/device:TPU:", "/device:CUSTOM:"))


def _merge(intervals: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Disjoint, sorted intervals covering the same time."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


Window = tuple[float, float, int] | tuple[float, float, int, int]  # start, end, group[, step number]


def step_spans(windows: Sequence[Window], warmup: int, gap_is_input: bool,
               waits: Iterable[tuple[float, float]] = ()) -> tuple[list[tuple[float, float]], list[float]]:
    """The timed steps and the input wait of each, from step windows (start, end, group) in time order.

    A step runs from its window's start to the next window's start (the last one of a group to its own
    end): the time between two step calls belongs to a step. Its input wait is the union of the gap after
    its window (when `gap_is_input`: a loop fetches its next batch between the step calls) and the
    `waits` (IteratorGetNext) inside it. The first `warmup` windows (tracing, first iterations) are not
    timed. Any one unit (picoseconds of a trace, seconds of a clock)."""
    timed = windows[warmup:]
    merged = _merge(waits)
    starts = [start for start, _ in merged]
    spans: list[tuple[float, float]] = []
    inputs: list[float] = []
    for index, (start, end, group, *_number) in enumerate(timed):
        following = timed[index + 1] if index + 1 < len(timed) else None
        stop = following[0] if following is not None and following[2] == group and following[0] >= end else end
        parts = [(end, stop)] if gap_is_input and stop > end else []
        first = max(0, bisect.bisect_right(starts, start) - 1)
        for low, high in merged[first:]:
            if low >= stop:
                break
            if high > start:
                parts.append((max(low, start), min(high, stop)))
        spans.append((start, stop))
        inputs.append(_merged_length(parts))
    return spans, inputs


def _step_windows(host_planes: list[Any], step_source: str | None,
                  script: bool) -> tuple[list[tuple[int, int, int, int]], str | None]:
    """(start, end, group, step number) of the step markers, else of the workload process's marks for
    `step_source`; and which of the two (None: neither).

    A built-in workload's marker holds its whole step, fetch included: each is its own group (the step
    ends where its marker ends). In a script the markers of one name are the steps, the name most of
    them have (Keras 2's fit marks "train" steps, and "test" ones for its validation; all of them when no
    name has half), grouped by their `epoch_num` (a step does not run on into the next epoch)."""
    markers: dict[str, list[tuple[int, int, int, int]]] = defaultdict(list)
    marks: list[tuple[int, int, int, int]] = []
    for plane in host_planes:
        stat_names = {k: v.name for k, v in plane.stat_metadata.items()}
        for _line, event, name, start, end in _events(plane):
            if not event.stats or end <= start:
                continue
            stats = {stat_names.get(s.metadata_id): _stat_value(s, stat_names) for s in event.stats}
            if "step_num" in stats and stats.get("_r") == 1:
                same = markers[name if script else ""]
                number, epoch = stats["step_num"], stats.get("epoch_num")
                group = (epoch if isinstance(epoch, int) else 0) if script else len(same)
                same.append((start, end, group, number if isinstance(number, int) else len(same)))
            elif (name == STEP_EVENT and step_source is not None and str(stats.get("source")) == step_source
                  and "abandoned" not in stats):
                group, number = stats.get("group"), stats.get("n")
                marks.append((start, end, group if isinstance(group, int) else 0,
                              number if isinstance(number, int) else 0))
    if markers:
        common = max(markers.values(), key=len)
        if 2 * len(common) < sum(len(same) for same in markers.values()):  # names that vary per step
            common = [marker for same in markers.values() for marker in same]
        return sorted(common), "markers"
    if marks:
        return sorted(marks), step_source
    return [], None


def summarize_xspace(space: Any, top: int = 10, *, script: bool = False, warmup: int = 0,
                     step_source: str | None = None, gap_is_input: bool = False) -> dict[str, Any]:
    """Plain facts from one XSpace: devices, steps, input wait, host/device time, top ops, XLA.

    Steps come from the step markers (`Trace(..., step_num=n, _r=1)`), else from the workload process's
    marks of `step_source` in a `script` (`gap_is_input`: the time between them is input); the first
    `warmup` of them are not timed. In a script a step runs from its marker's start to the next one's
    and the time between two markers is input (the loop fetches its batch there); a built-in
    workload's marker holds its whole step."""
    host_planes = [p for p in space.planes if p.name.startswith("/host:")]
    device_planes = [p for p in space.planes if is_device_plane(p.name)]

    windows, source = _step_windows(host_planes, step_source if script else None, script)
    if source == "markers":
        gap_is_input = script
    waits: list[tuple[int, int]] = []
    host_ops: dict[str, int] = defaultdict(int)
    host_op_intervals: list[tuple[int, int]] = []
    xla_clusters: set[str] = set()
    raw_ops: list[tuple[str, int, int]] = []
    for plane in host_planes:
        for _line, _event, name, start, end in _events(plane):
            match = OP_EVENT.match(name)
            op_type = match.group("type") if match else None
            if op_type in INPUT_OP_TYPES or name.startswith(INPUT_EVENT_PREFIXES):
                waits.append((start, end))
            if op_type and "::" not in name:
                if op_type in XLA_HOST_OP_TYPES:
                    xla_clusters.add(match.group("name"))  # type: ignore[union-attr]
                raw_ops.append((op_type, start, end))
    spans, inputs = step_spans(windows, warmup, gap_is_input, waits)  # type: ignore[arg-type]
    int_spans = [(int(a), int(b)) for a, b in spans]
    for op_type, start, end in raw_ops:
        clipped = _overlap((start, end), int_spans) if windows else (start, end)
        if clipped:
            host_ops[op_type] += clipped[1] - clipped[0]
            host_op_intervals.append(clipped)

    device_facts = []
    device_ops: dict[str, int] = defaultdict(int)
    device_intervals: list[tuple[int, int]] = []
    for plane in device_planes:
        count = 0
        busy: list[tuple[int, int]] = []
        for line, _event, name, start, end in _events(plane):
            if line.name == "XLA Modules":
                xla_clusters.add(name.split("(", 1)[0])
            if line.name in DERIVED_LINES:
                continue
            count += 1
            busy.append((start, end))
            device_ops[name] += end - start
        device_intervals.extend(busy)
        device_facts.append({"name": plane.name, "events": count, "busy_seconds": _merged_length(busy) * PS})

    total_step_ps = sum(stop - start for start, stop in spans)
    steps = step_summary([(stop - start) * PS for start, stop in spans])
    steps["excluded_warmup"] = min(warmup, len(windows))
    summary: dict[str, Any] = {
        "planes": sorted(p.name for p in space.planes),
        "hostnames": list(space.hostnames),
        "device_planes": device_facts,
        # None when there is no accelerator plane at all (a CPU run): nothing to capture.
        "device_activity_captured": (any(d["events"] > 0 for d in device_facts) if device_facts else None),
        "steps": steps,
        "step_source": source,
        "input_share": (min(1.0, sum(inputs) / total_step_ps) if total_step_ps else None),
        "host_op_seconds": _merged_length(host_op_intervals) * PS,
        "device_seconds": _merged_length(device_intervals) * PS,
        "top_ops": _top_ops(host_ops, device_ops, top),
        "low_precision_share": _low_precision_share(device_ops),
        "xla_clusters": sorted(xla_clusters),
        "errors": list(space.errors),
        "warnings": list(space.warnings),
        "breakdown": step_breakdown(space, _breakdown_windows(windows[warmup:], int_spans)),
    }
    return summary


def _breakdown_windows(timed: list[tuple[int, int, int, int]],
                       spans: list[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """The timed steps for the breakdown, as the step times count them (so its categories add up to them)."""
    return [(number, start, stop) for (_s, _e, _g, number), (start, stop) in zip(timed, spans, strict=True)]


def step_summary(seconds: list[float]) -> dict[str, Any]:
    """Median and spread of step times; spread = (p90 - p10) / median, robust to one slow step."""
    if not seconds:
        return {"count": 0, "median_seconds": None, "spread": None}
    ordered = sorted(seconds)
    median = statistics.median(ordered)

    high, low = quantile(ordered, 0.9), quantile(ordered, 0.1)
    spread = (high - low) / median if median > 0 and high is not None and low is not None else None
    return {"count": len(ordered), "median_seconds": median, "min_seconds": ordered[0],
            "max_seconds": ordered[-1], "spread": spread}


def _top_ops(host: dict[str, int], device: dict[str, int], top: int) -> list[dict[str, Any]]:
    rows = [("host", k, v) for k, v in host.items()] + [("device", k, v) for k, v in device.items()]
    totals = {"host": sum(host.values()) or 1, "device": sum(device.values()) or 1}
    rows.sort(key=lambda r: -r[2])
    return [{"where": where, "op": name, "seconds": ps * PS, "share": ps / totals[where]}
            for where, name, ps in rows[:top]]


def _low_precision_share(device_ops: dict[str, int]) -> float | None:
    """Share of device kernel time in float16/bfloat16 kernels (by kernel name); None without kernels.
    Host traces record no dtypes, so a CPU run leaves this to the workload's dtype policy."""
    total = sum(device_ops.values())
    if not total:
        return None
    return sum(v for k, v in device_ops.items() if LOW_PRECISION.search(k)) / total
