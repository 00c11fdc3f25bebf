"""Terminal tables that fit the terminal: its width (COLUMNS, else the terminal's, else 80 for a pipe),
and whether a table fits it as laid out or must fold some columns into one.

rich wraps a cell at its spaces when the console is as wide as the terminal; given a fixed width wider
than the terminal, it lays out lines the terminal then breaks mid-word. So every table is rendered at
`terminal_width()`, and a table of many narrow columns (the tune table's parameters) folds them into one
"settings" cell when rich's measurement says they cannot all fit.
"""

from __future__ import annotations

import shutil
from typing import Any

FALLBACK_COLUMNS = 80
MIN_COLUMNS = 40  # below this nothing reads well; rich then folds what it must


def terminal_width() -> int:
    """COLUMNS when set, else the terminal's width, else 80 (output to a file or a pipe)."""
    return max(MIN_COLUMNS, shutil.get_terminal_size((FALLBACK_COLUMNS, 24)).columns)


def fits(console: Any, table: Any) -> bool:
    """True when `table` can be drawn at the console's width without folding a cell's words."""
    from rich.measure import Measurement

    # Measured without the console's limit: rich clamps a table's measurement to the width it is given.
    unbounded = console.options.update(width=10_000, max_width=10_000)
    return Measurement.get(console, unbounded, table).maximum <= console.width
