"""What `profile` and `fix --validate` show on stderr while a workload runs: a spinner with the current
phase on a terminal; without one (a CI or batch log), one line per phase and a "still …" line every
PLAIN_INTERVAL seconds, so a long run shows it is alive without flooding the log."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

PLAIN_INTERVAL = 30.0  # seconds between two "still …" lines in a log


@contextmanager
def progress_display(enabled: bool, interval: float = PLAIN_INTERVAL) -> Iterator[Callable[[str], None]]:
    """A spinner with the current phase on stderr; plain lines at a slow rate when stderr is no terminal."""
    if not enabled:
        yield lambda _message: None
        return
    if not sys.stderr.isatty():
        with _plain_lines(interval) as say:
            yield say
        return
    from rich.console import Console

    console = Console(stderr=True)
    with console.status("starting") as status:
        yield lambda message: status.update(message)


@contextmanager
def _plain_lines(interval: float) -> Iterator[Callable[[str], None]]:
    from tfdoctor.terminal import OutputLost
    from tfdoctor.usage import emit

    state = {"phase": "", "since": time.monotonic()}
    done = threading.Event()

    def line(text: str) -> None:
        with suppress(OutputLost, OSError):  # a log that cannot be written is no reason to stop the run
            emit(f"tfdoctor profile: {text}\n", err=True)

    def say(message: str) -> None:
        state["phase"], state["since"] = message, time.monotonic()
        line(message)

    def beat() -> None:
        while not done.wait(interval):
            if state["phase"]:
                line(f"still {state['phase']} ({time.monotonic() - state['since']:.0f} s)")

    ticker = threading.Thread(target=beat, name="tfdoctor-progress", daemon=True)
    ticker.start()
    try:
        yield say
    finally:
        done.set()
        ticker.join(timeout=5)
