"""The throughput surface over two chosen parameters, as a heatmap: a self-contained HTML file (a table
with coloured cells and the values in tooltips) or a PNG written by hand (zlib + struct), so no plotting
library is needed. Each cell holds the best value measured with that pair, whatever the other
parameters were; an empty cell was never measured.
"""

from __future__ import annotations

import html
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tfdoctor.tune.results import TrialRecord
from tfdoctor.tune.space import Space

MAX_AXIS = 64  # an integer axis wider than this shows only the measured values


@dataclass(frozen=True)
class Heatmap:
    x: str
    y: str
    xs: tuple[Any, ...]
    ys: tuple[Any, ...]
    cells: dict[tuple[Any, Any], float]  # (x value, y value) -> best measured value
    maximize: bool

    def bounds(self) -> tuple[float, float]:
        values = list(self.cells.values())
        return (min(values), max(values)) if values else (0.0, 1.0)


def default_axes(space: Space) -> tuple[str, str]:
    names = space.names()
    preferred = ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS")
    if all(n in names for n in preferred):
        return preferred
    if len(names) < 2:
        raise ValueError("a heatmap needs two parameters; the space has fewer")
    return names[0], names[1]


def _axis(space: Space, name: str, records: Sequence[TrialRecord]) -> tuple[Any, ...]:
    p = space.by_name(name)
    if p.kind == "choice":
        return p.choices
    if p.size() <= MAX_AXIS:
        return tuple(range(p.low, p.high + 1))
    return tuple(sorted({r.params[name] for r in records if name in r.params}))


def heatmap(space: Space, records: Sequence[TrialRecord], x: str, y: str, maximize: bool = True) -> Heatmap:
    for name in (x, y):
        if name not in space.names():
            raise ValueError(f"{name} is not a parameter of the space ({', '.join(space.names())})")
    cells: dict[tuple[Any, Any], float] = {}
    for record in records:
        if not record.ok or record.phase == "current" or record.role == "current":
            continue
        key = (record.params.get(x), record.params.get(y))
        value = float(record.value)  # type: ignore[arg-type]
        old = cells.get(key)
        if old is None or (value > old if maximize else value < old):
            cells[key] = value
    return Heatmap(x, y, _axis(space, x, records), _axis(space, y, records), cells, maximize)


def _colour(fraction: float) -> tuple[int, int, int]:
    """Dark blue (worst) to yellow (best), through teal and green: readable and colour-blind safe."""
    stops = [(68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37)]
    fraction = min(1.0, max(0.0, fraction))
    position = fraction * (len(stops) - 1)
    index = min(int(position), len(stops) - 2)
    t = position - index
    a, b = stops[index], stops[index + 1]
    return tuple(round(a[i] + (b[i] - a[i]) * t) for i in range(3))  # type: ignore[return-value]


def _fraction(hm: Heatmap, value: float) -> float:
    low, high = hm.bounds()
    if high == low:
        return 1.0
    fraction = (value - low) / (high - low)
    return fraction if hm.maximize else 1.0 - fraction


def render_html(hm: Heatmap, title: str) -> str:
    esc = html.escape
    rows = []
    for y in reversed(hm.ys):
        cells = [f'<th scope="row">{esc(str(y))}</th>']
        for x in hm.xs:
            value = hm.cells.get((x, y))
            if value is None:
                cells.append('<td class="empty"></td>')
                continue
            r, g, b = _colour(_fraction(hm, value))
            ink = "#000" if (r * 299 + g * 587 + b * 114) / 1000 > 128 else "#fff"
            cells.append(f'<td style="background:rgb({r},{g},{b});color:{ink}" '
                         f'title="{esc(hm.x)}={esc(str(x))} {esc(hm.y)}={esc(str(y))}: {value:.4g}">'
                         f"{value:.3g}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    header = "<tr><th></th>" + "".join(f'<th scope="col">{esc(str(x))}</th>' for x in hm.xs) + "</tr>"
    low, high = hm.bounds()
    better = "higher" if hm.maximize else "lower"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 1.5em; }}
table {{ border-collapse: collapse; font-size: 11px; }}
td, th {{ border: 1px solid #ddd; min-width: 2.6em; height: 1.8em; text-align: center; padding: 0 2px; }}
td.empty {{ background: #f4f4f4; }}
caption {{ caption-side: bottom; padding-top: .6em; text-align: left; }}
</style></head><body>
<h1>{esc(title)}</h1>
<p>Best measured value for each pair ({better} is better; range {low:.4g} – {high:.4g}); an empty cell was
never measured. Rows: <b>{esc(hm.y)}</b>, columns: <b>{esc(hm.x)}</b>.</p>
<table>
<caption>{len(hm.cells)} of {len(hm.xs) * len(hm.ys)} pairs measured.</caption>
{header}
{chr(10).join(rows)}
</table></body></html>
"""


def render_png(hm: Heatmap, cell: int = 16) -> bytes:
    """Cells only (no labels): x left to right, y bottom to top, grey where nothing was measured."""
    width, height = len(hm.xs) * cell, len(hm.ys) * cell
    raw = bytearray()
    for y in reversed(hm.ys):
        row = bytearray()
        for x in hm.xs:
            value = hm.cells.get((x, y))
            rgb = (235, 235, 235) if value is None else _colour(_fraction(hm, value))
            row.extend(bytes(rgb) * (cell - 1) + bytes((255, 255, 255)))  # a one-pixel grid line
        for line in range(cell):
            raw.append(0)  # PNG filter type: none
            raw.extend(row if line < cell - 1 else bytes((255, 255, 255)) * width)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(bytes(raw), 9)) + \
        chunk(b"IEND", b"")
