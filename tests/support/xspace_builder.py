"""One plane of a synthetic XSpace built event by event, its event and stat names numbered as the profiler
numbers them: for the XSpace summary's tests (the GPU traces shaped like TensorFlow's: gpu_xspace.py)."""

from __future__ import annotations

from typing import Any

from support.gpu_xspace import MS


class PlaneBuilder:
    def __init__(self, plane: Any) -> None:
        self.plane = plane
        self.names: dict[str, int] = {}
        self.stats: dict[str, int] = {}

    def meta(self, name: str) -> int:
        if name not in self.names:
            self.names[name] = len(self.names) + 1
            self.plane.event_metadata[self.names[name]].id = self.names[name]
            self.plane.event_metadata[self.names[name]].name = name
        return self.names[name]

    def stat(self, name: str) -> int:
        if name not in self.stats:
            self.stats[name] = len(self.stats) + 1
            self.plane.stat_metadata[self.stats[name]].id = self.stats[name]
            self.plane.stat_metadata[self.stats[name]].name = name
        return self.stats[name]

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
