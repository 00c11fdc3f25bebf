"""The spinner `profile` and `fix --validate` show on stderr while a workload runs."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def progress_display(enabled: bool) -> Iterator[Callable[[str], None]]:
    """A spinner with the current phase on stderr (nothing when stderr is not a terminal)."""
    if not enabled or not sys.stderr.isatty():
        yield lambda _message: None
        return
    from rich.console import Console

    console = Console(stderr=True)
    with console.status("starting") as status:
        yield lambda message: status.update(message)
