"""One plane of a synthetic XSpace built event by event, its event and stat names numbered as the profiler
numbers them: for the XSpace summary's tests (the GPU traces shaped like TensorFlow's: gpu_xspace.py)."""

from __future__ import annotations

from typing import Any

MS = 1_000_000_000  # picoseconds


def numbered(ids: dict[str, int], metadata: Any, name: str) -> int:
    """The id of `name` in a plane's event or stat metadata (`ids` holds those given so far), given the next
    number and recorded in `metadata` the first time, as the profiler numbers them."""
    if name not in ids:
        ids[name] = len(ids) + 1
        metadata[ids[name]].id = ids[name]
        metadata[ids[name]].name = name
    return ids[name]


class PlaneBuilder:
    def __init__(self, plane: Any) -> None:
        self.plane = plane
        self.names: dict[str, int] = {}
        self.stats: dict[str, int] = {}

    def meta(self, name: str) -> int:
        return numbered(self.names, self.plane.event_metadata, name)

    def stat(self, name: str) -> int:
        return numbered(self.stats, self.plane.stat_metadata, name)

    def line(self, name: str, line_id: int) -> Any:
        line = self.plane.lines.add()
        line.id, line.name, line.timestamp_ns = line_id, name, 1000
        return line

    def event(self, line: Any, name: str, start_ms: float, length_ms: float, **stats: int) -> Any:
        event = line.events.add()
        event.metadata_id = self.meta(name)
        event.offset_ps = int(start_ms * MS)
        event.duration_ps = int(length_ms * MS)
        for key, value in stats.items():
            stat = event.stats.add()
            stat.metadata_id = self.stat(key)
            stat.int64_value = value
        return event
