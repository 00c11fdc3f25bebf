"""Read a log bounded in size and time: the last TAIL_BYTES of a regular file, or of standard input.

A log can be gigabytes, a pipe can stay open for ever (`tail -f`), and a path can name something that is
not a file (a FIFO would block the open, a device would never end). So: only regular files are read
(tfdoctor/facts/bounded.py's open_regular decides, as for every file a user names); standard input is
read until end of file, at most
STDIN_SCAN_BYTES in all and STDIN_SECONDS of waiting; in both cases only the last TAIL_BYTES are kept,
which is where the error that ended a run is.
"""

from __future__ import annotations

import os
import re
import sys
import time
from dataclasses import dataclass
from typing import BinaryIO

TAIL_BYTES = 8 * 1024 * 1024
STDIN_SCAN_BYTES = 256 * 1024 * 1024
STDIN_SECONDS = 30.0
_CHUNK = 1024 * 1024
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class LogReadError(Exception):
    """The log cannot be read: a usage error (exit 2) with a one-line reason."""


@dataclass(frozen=True)
class LogText:
    """The text of a log as read (its tail when long), with how much was read and skipped."""

    source: str  # the path, or "standard input"
    text: str
    bytes_read: int
    bytes_skipped: int  # left out before the tail that was kept
    stopped: str = ""  # why reading standard input stopped before its end ("" when it ended)

    @property
    def lines(self) -> int:
        return self.text.count("\n") + (1 if self.text and not self.text.endswith("\n") else 0)


def _decode(data: bytes, skipped: int) -> str:
    text = data.decode("utf-8", errors="replace")
    if skipped:  # the tail starts inside a line: drop that partial line
        text = text.partition("\n")[2]
    # Progress bars rewrite their line with \r; colour codes would split a message's words.
    return _ANSI.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))


def read_log_file(path: str, tail_bytes: int = TAIL_BYTES) -> LogText:
    from tfdoctor.facts.bounded import InputFileError, open_regular

    try:
        fd = open_regular(path, "--log")  # the one check for FIFOs, devices and directories
    except InputFileError as exc:
        raise LogReadError(f"{exc}; pipe anything else into --log -" if "regular file" in str(exc)
                           else str(exc)) from None
    with os.fdopen(fd, "rb") as handle:
        try:
            skipped = max(0, os.fstat(fd).st_size - tail_bytes)
            handle.seek(skipped)
            data = handle.read(tail_bytes)
        except OSError as exc:
            raise LogReadError(f"cannot read --log {path}: {exc.strerror or exc}") from None
    return LogText(path, _decode(data, skipped), len(data), skipped)


def read_log_stdin(stream: BinaryIO | None = None, tail_bytes: int = TAIL_BYTES,
                   scan_bytes: int = STDIN_SCAN_BYTES, seconds: float = STDIN_SECONDS) -> LogText:
    stream = stream if stream is not None else sys.stdin.buffer
    try:
        if os.isatty(stream.fileno()):
            raise LogReadError("--log -: standard input is a terminal; pipe a log into it "
                               "(tfdoctor explain --log - < train.log)")
        fileno: int | None = stream.fileno()
    except (AttributeError, OSError, ValueError):
        fileno = None  # not a real file (tests pass BytesIO): read it as it comes
    import select

    deadline = time.monotonic() + seconds
    kept = bytearray()
    total = 0
    stopped = ""
    while True:
        if total >= scan_bytes:
            stopped = f"read the first {scan_bytes // (1024 * 1024)} MiB only"
            break
        wait = deadline - time.monotonic()
        if wait <= 0:
            stopped = f"stopped waiting for more input after {seconds:g} s"
            break
        if fileno is not None:
            try:
                ready, _, _ = select.select([fileno], [], [], wait)
            except (OSError, ValueError):
                ready = [fileno]  # not selectable (a regular file on some platforms): just read
            if not ready:
                continue
            chunk = os.read(fileno, _CHUNK)
        else:
            chunk = stream.read(_CHUNK)
        if not chunk:
            break
        total += len(chunk)
        kept += chunk
        if len(kept) > tail_bytes:
            del kept[: len(kept) - tail_bytes]
    skipped = total - len(kept)
    return LogText("standard input", _decode(bytes(kept), skipped), len(kept), skipped, stopped)


def read_log(path: str) -> LogText:
    """`-` reads standard input; anything else must name a regular file."""
    if path == "-":
        return read_log_stdin()
    if not path.strip():
        raise LogReadError("--log needs a file name (or - for standard input)")
    return read_log_file(path)
