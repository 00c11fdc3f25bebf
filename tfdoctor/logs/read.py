"""Read a log bounded in size and time: the last TAIL_BYTES of a regular file, or of standard input.

A log can be gigabytes, a pipe can stay open for ever (`tail -f`), and a path can name something that is
not a file (a FIFO would block the open, a device would never end). So: only regular files are read
(tfdoctor/facts/bounded.py's open_regular decides, as for every file a user names), without ever blocking
(/proc/kmsg is "regular" but would wait for ever); standard input is read until end of file, at most
STDIN_SCAN_BYTES in all and STDIN_SECONDS of waiting, saying so on stderr once it has waited
NOTICE_SECONDS; in both cases only the last TAIL_BYTES are kept, which is where the error that ended a
run is. Standard input closed or unreadable is a usage error, like a file that cannot be read.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO

TAIL_BYTES = 8 * 1024 * 1024
STDIN_SCAN_BYTES = 256 * 1024 * 1024
STDIN_SECONDS = 30.0
FILE_SECONDS = 30.0
# A pipe that stays open (a running job's `tail -f`) is read until STDIN_SECONDS; after NOTICE_SECONDS of
# waiting the user is told why nothing happens yet.
NOTICE_SECONDS = 2.0
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
    from tfdoctor.facts.bounded import InputFileError, open_regular, read_fd

    try:
        fd = open_regular(path, "--log")  # the one check for FIFOs, devices and directories
    except InputFileError as exc:
        raise LogReadError(f"{exc}; pipe anything else into --log -" if "regular file" in str(exc)
                           else str(exc)) from None
    try:
        skipped = max(0, os.fstat(fd).st_size - tail_bytes)
        os.lseek(fd, skipped, os.SEEK_SET)
        # Non-blocking and under a deadline: /proc/kmsg looks like a regular file but a read would wait
        # for the next kernel message for ever.
        data, _ = read_fd(fd, tail_bytes, time.monotonic() + FILE_SECONDS)
    except TimeoutError:
        raise LogReadError(f"cannot read --log {path}: it took longer than {FILE_SECONDS:g} s") from None
    except OSError as exc:
        raise LogReadError(f"cannot read --log {path}: {exc.strerror or exc}; pipe it into --log - "
                           "if it is a stream" if isinstance(exc, BlockingIOError)
                           else f"cannot read --log {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    return LogText(path, _decode(data, skipped), len(data), skipped)


def read_log_stdin(stream: BinaryIO | None = None, tail_bytes: int = TAIL_BYTES,
                   scan_bytes: int = STDIN_SCAN_BYTES, seconds: float = STDIN_SECONDS,
                   notice: Callable[[str], None] | None = None, notice_after: float = NOTICE_SECONDS) -> LogText:
    """Standard input until its end, at most `scan_bytes` and `seconds`; `notice` is told, once, when the
    input has stayed open `notice_after` seconds (a pipe from a job still running)."""
    if stream is None:
        if sys.stdin is None:  # started with standard input closed (`<&-`)
            raise LogReadError("--log -: standard input is closed; pipe a log into it "
                               "(tfdoctor explain --log - < train.log)")
        stream = sys.stdin.buffer
    try:
        if os.isatty(stream.fileno()):
            raise LogReadError("--log -: standard input is a terminal; pipe a log into it "
                               "(tfdoctor explain --log - < train.log)")
        fileno: int | None = stream.fileno()
    except (AttributeError, OSError, ValueError):
        fileno = None  # not a real file (tests pass BytesIO): read it as it comes
    import select

    started = time.monotonic()
    deadline = started + seconds
    notice_at = started + notice_after if notice is not None else None
    kept = bytearray()
    total = 0
    stopped = ""
    while True:
        if total >= scan_bytes:
            stopped = f"read the first {scan_bytes // (1024 * 1024)} MiB only"
            break
        now = time.monotonic()
        wait = deadline - now
        if wait <= 0:
            stopped = f"stopped waiting for more input after {seconds:g} s"
            break
        if notice_at is not None:
            wait = min(wait, max(0.0, notice_at - now))
        try:
            if fileno is not None:
                try:
                    ready, _, _ = select.select([fileno], [], [], wait)
                except (OSError, ValueError):
                    ready = [fileno]  # not selectable (a regular file on some platforms): just read
                if not ready:
                    if notice is not None and notice_at is not None and time.monotonic() >= notice_at:
                        notice(f"tfdoctor: standard input is still open after {notice_after:g} s; reading it "
                               f"until it ends, at most {seconds:g} s in all (a log still being written is "
                               "explained as far as it goes)\n")
                        notice_at = None
                    continue
                chunk = os.read(fileno, _CHUNK)
            else:
                chunk = stream.read(_CHUNK)
        except (OSError, ValueError) as exc:  # closed or unreadable (EBADF, EIO)
            reason = getattr(exc, "strerror", None) or exc
            raise LogReadError(f"--log -: cannot read standard input: {reason}") from None
        if not chunk:
            break
        total += len(chunk)
        kept += chunk
        if len(kept) > tail_bytes:
            del kept[: len(kept) - tail_bytes]
    skipped = total - len(kept)
    return LogText("standard input", _decode(bytes(kept), skipped), len(kept), skipped, stopped)


def _tell(message: str) -> None:
    from tfdoctor.terminal import write

    write(message, err=True)


def read_log(path: str) -> LogText:
    """`-` reads standard input; anything else must name a regular file."""
    if path == "-":
        return read_log_stdin(notice=_tell)
    if not path.strip():
        raise LogReadError("--log needs a file name (or - for standard input)")
    return read_log_file(path)
