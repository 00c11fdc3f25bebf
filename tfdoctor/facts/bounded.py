"""Bounded reads: every file tfdoctor reads and every subprocess output it collects has a size limit that
fits what it reads, and a time limit.

- `read_input_file(path, limit, what)` — a file the user named (--facts, compare, --space, --resume, a
  config): it must be a regular file. It is opened non-blocking, so a FIFO is refused at once instead of
  waiting forever for a writer; a device (/dev/zero) or a directory is refused; more than `limit` bytes is
  refused. Raises InputFileError with one line to show (exit 2).
- `read_probe_file(host_path, limit, deadline)` — a file a probe reads under /proc, /sys, /etc or a fake
  root: FIFOs and devices are refused the same way, and more than `limit` bytes is cut off (the caller
  learns it was cut).
- `run_bounded(argv, timeout, limit)` — a subprocess whose standard output and error are read up to `limit`
  bytes each; a process that floods past the limit or outlives the timeout is ended with its process group.
- `track(process)` / `end_group(process)` / `end_children()` — every child runs in a session of its own and
  is ended with its whole group: SIGTERM, then SIGKILL after GRACE_SECONDS; whatever is still tracked when
  tfdoctor leaves is ended then.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterable, Mapping, Sequence

from tfdoctor.records import value_tuple

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:  # subprocess, selectors and signal cost the pre-job hook ~5 ms; only run_bounded needs them
    import subprocess
    from typing import IO

MB = 1024 * 1024
CHUNK = 64 * 1024


class InputFileError(Exception):
    """A file that must be a regular, readable file of bounded size and is not (a usage error)."""


def file_kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "not a regular file"


def read_fd(fd: int, limit: int, deadline: float | None, expect: int = 0) -> tuple[bytes, bool]:
    """Up to `limit` bytes; True when there was more. A deadline stops reading between chunks. `expect`: the
    size the file says it has (fstat), read in one piece (a notebook of megabytes in 64 KB chunks, joined,
    costs it twice in page faults)."""
    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError("reading took longer than the time allowed")
        try:
            chunk = os.read(fd, min(max(CHUNK, expect + 1 - size), limit + 1 - size))
        except BlockingIOError:
            # The fd stays non-blocking: a regular file never says this, a kernel interface that only looks
            # like one (/proc/kmsg) does, where a blocking read would wait for ever.
            raise BlockingIOError(11, "it has nothing to read now and would wait (not an ordinary file)") from None
        if not chunk:
            return b"".join(chunks), False
        chunks.append(chunk)
        size += len(chunk)
    data = b"".join(chunks)
    return data[:limit], True


def open_regular(path: str | os.PathLike[str], what: str) -> int:
    """A non-blocking fd on `path` (a FIFO cannot hold the open, a /proc file cannot hold a read), or
    InputFileError unless it is a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise InputFileError(f"cannot read {what} {os.fspath(path)}: no such file") from None
    except IsADirectoryError:
        raise InputFileError(f"{what} {os.fspath(path)} is a directory, not a regular file") from None
    except OSError as exc:
        raise InputFileError(f"cannot read {what} {os.fspath(path)}: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise InputFileError(f"{what} {os.fspath(path)} is {file_kind(mode)}, not a regular file")
        # Left non-blocking: reading a regular file is unaffected, and a /proc file that would block for
        # ever (/proc/kmsg) fails at once instead (see read_fd).
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_input_file(path: str | os.PathLike[str], limit: int, what: str, timeout: float = 30.0) -> bytes:
    """The whole content of a regular file of at most `limit` bytes, or InputFileError."""
    fd = open_regular(path, what)
    try:
        expect = os.fstat(fd).st_size
        if expect > limit:
            raise InputFileError(f"{what} {os.fspath(path)} is larger than {_size(limit)}, the most tfdoctor reads")
        data, more = read_fd(fd, limit, time.monotonic() + timeout, expect)
    except TimeoutError:
        raise InputFileError(f"cannot read {what} {os.fspath(path)}: it took longer than {timeout:g} s") from None
    except OSError as exc:
        raise InputFileError(f"cannot read {what} {os.fspath(path)}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if more:
        raise InputFileError(f"{what} {os.fspath(path)} is larger than {_size(limit)}, the most tfdoctor reads")
    return data


# Facts are a few levels deep; a file nested hundreds deep (a 900-deep list) is not facts, and every walk
# over it (redaction, comparison, rendering) would run out of stack.
JSON_DEPTH_LIMIT = 64


def json_too_deep(value: object, limit: int = JSON_DEPTH_LIMIT) -> bool:
    """Whether parsed JSON nests lists and objects more than `limit` deep (walked without recursion)."""
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Iterable[object] = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth >= limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _size(limit: int) -> str:
    return f"{limit // MB} MB" if limit >= MB else f"{limit // 1024} KB"


@value_tuple
class ProbeRead:
    """What a bounded read of a probe's file returned, and whether the file held more."""

    data: bytes
    truncated: bool  # the file held more than the limit


def read_probe_file(host_path: str | os.PathLike[str], limit: int, deadline: float | None = None) -> ProbeRead:
    """A file a probe reads, at most `limit` bytes. Raises OSError as open() would (FileNotFoundError,
    PermissionError, IsADirectoryError), and SpecialFileError for FIFOs, devices and sockets."""
    fd = os.open(host_path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(21, "Is a directory")
        if not stat.S_ISREG(mode):
            raise SpecialFileError(file_kind(mode))
        data, more = read_fd(fd, limit, deadline)
    finally:
        os.close(fd)
    return ProbeRead(data, more)


def read_tail(handle: IO[bytes], limit: int) -> bytes:
    """The last `limit` bytes of an open regular file (a command's captured output): a log of any length
    costs `limit` bytes of memory, and the end of it is where a result or an error is."""
    handle.seek(0, os.SEEK_END)
    size = handle.tell()
    handle.seek(max(0, size - limit))
    return handle.read(limit)


class SpecialFileError(OSError):
    """A FIFO, device or socket where a file was expected: never read (it could block or never end)."""

    def __init__(self, kind: str) -> None:
        super().__init__(f"is {kind}, not a regular file")
        self.kind = kind


@value_tuple
class Bounded:
    """A finished subprocess's exit code and its output, each cut at its limit."""

    returncode: int
    stdout: bytes
    stderr: bytes
    flooded: bool  # an output passed its limit: the process was killed


def run_bounded(argv: Sequence[str], timeout: float, limit: int, env: Mapping[str, str] | None = None,
                cwd: str | None = None) -> Bounded:
    """Run argv (stdin from /dev/null) and collect at most `limit` bytes of each output stream.

    Raises subprocess.TimeoutExpired after `timeout` seconds (the process group killed first), and
    OSError when the program cannot start."""
    started = time.monotonic()
    return finish_bounded(start_bounded(argv, env, cwd), argv, started + timeout, timeout, limit)


def start_bounded(argv: Sequence[str], env: Mapping[str, str] | None = None,
                  cwd: str | None = None) -> subprocess.Popen[bytes]:
    """run_bounded's first half: the child started (stdin from /dev/null, a session of its own, tracked), for
    finish_bounded to collect. Raises OSError when the program cannot start."""
    import subprocess

    return track(subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=dict(env) if env is not None else None, cwd=cwd,
                                  start_new_session=True))


def finish_bounded(process: subprocess.Popen[bytes], argv: Sequence[str], deadline: float, timeout: float,
                   limit: int) -> Bounded:
    """run_bounded's second half: at most `limit` bytes of each stream until the child ends, or until
    `deadline` (time.monotonic()), when its group is killed and subprocess.TimeoutExpired(argv, timeout) raised."""
    import selectors
    import subprocess

    buffers: dict[int, list[bytes]] = {}
    sizes: dict[int, int] = {}
    flooded = False
    assert process.stdout is not None and process.stderr is not None
    out_fd, err_fd = process.stdout.fileno(), process.stderr.fileno()
    with selectors.DefaultSelector() as selector:
        for stream in (process.stdout, process.stderr):
            selector.register(stream, selectors.EVENT_READ)
            buffers[stream.fileno()] = []
            sizes[stream.fileno()] = 0
        open_streams = 2
        while open_streams:
            left = deadline - time.monotonic()
            if left <= 0:
                _kill(process)
                raise subprocess.TimeoutExpired(list(argv), timeout)
            ready = selector.select(min(left, 0.5))
            if not ready and process.poll() is not None:
                # The child is gone and its pipes are quiet: something it left in its group holds them open
                # (`daemon &`). Stop here; end_group below ends what it left.
                break
            for key, _ in ready:
                fd = key.fd
                chunk = os.read(fd, CHUNK)
                if not chunk:
                    selector.unregister(key.fileobj)
                    open_streams -= 1
                    continue
                room = limit - sizes[fd]
                buffers[fd].append(chunk[:room])
                sizes[fd] += min(len(chunk), room)
                if len(chunk) > room:
                    flooded = True
                    _kill(process)
                    open_streams = 0
                    break
    try:
        code = process.wait(max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        _kill(process)
        raise subprocess.TimeoutExpired(list(argv), timeout) from None
    finally:
        process.stdout.close()
        process.stderr.close()
    end_group(process)  # what it left running in its group (a daemon, a stuck grandchild) ends with it
    return Bounded(code, b"".join(buffers[out_fd]), b"".join(buffers[err_fd]), flooded)


def _kill(process: subprocess.Popen[bytes]) -> None:
    """The process and everything it started (its own session): a flood or a hang ends here."""
    end_group(process)


# Every child tfdoctor starts runs in a session of its own (start_new_session=True: its group id is its pid),
# is tracked here until its whole group has been ended, and is ended at the latest when tfdoctor leaves —
# also when a probe still running it was abandoned at the --timeout deadline (its thread never returns).
GRACE_SECONDS = 0.5
_children: set[subprocess.Popen[bytes]] = set()
_registered = False


def track(process: subprocess.Popen[bytes]) -> subprocess.Popen[bytes]:
    """Remember a child started with start_new_session=True, so end_children() can end its group."""
    global _registered
    if not _registered:
        import atexit

        atexit.register(end_children)
        _registered = True
    guard_signals()
    _children.add(process)
    return process


class Interrupted(BaseException):
    """SIGTERM, SIGHUP or SIGQUIT arrived (Slurm's time limit or scancel, a closed ssh session, `timeout`):
    raised in the main thread like KeyboardInterrupt for SIGINT, so every `finally` and `except BaseException`
    on the way out runs (a trial's group is ended, the results file says the tune was interrupted) and the
    command leaves with 128 + the signal's number. A BaseException: `except Exception` does not swallow it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        import signal

        return signal.Signals(self.signum).name


LEAVING_SIGNALS = ("SIGTERM", "SIGHUP", "SIGQUIT")
_interrupted: list[int] = []  # the first leaving signal received; later ones wait for its cleanup to finish
_guarded_pid: list[int] = []  # the process that installed the handlers


def _raise_interrupted(signum: int, _frame: object) -> None:
    if _guarded_pid and os.getpid() != _guarded_pid[0]:
        # A forked child that inherited the handler (lint's pool workers, which Pool.terminate ends with
        # SIGTERM): it dies by the signal, as it would have without tfdoctor's handler.
        import signal

        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    if _interrupted:
        return  # already leaving: a second SIGTERM must not cut the first one's cleanup short
    _interrupted.append(signum)
    raise Interrupted(signum)


def guard_signals() -> None:
    """Turn the signals that end a batch job's process into Interrupted in the main thread (from any other
    thread this does nothing: Python delivers signals to the main thread only). A signal this process was
    told to ignore stays ignored (`nohup` sets SIGHUP to SIG_IGN), and a handler someone else installed is
    kept."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return
    _guarded_pid[:] = [os.getpid()]
    for name in LEAVING_SIGNALS:
        number = getattr(signal, name, None)
        if number is not None and signal.getsignal(number) is signal.SIG_DFL:
            signal.signal(number, _raise_interrupted)


def _group_alive(process: subprocess.Popen[bytes]) -> bool:
    process.poll()  # reap the leader if it has exited: a zombie still counts as a member of its group
    try:
        os.killpg(process.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # the pid's group is someone else's now: not ours to signal
        return False
    return True


def _signal_group(process: subprocess.Popen[bytes], sig: int) -> None:
    try:
        os.killpg(process.pid, sig)
    except (ProcessLookupError, PermissionError):
        import contextlib  # here: the pre-job hook that starts no child never imports it

        with contextlib.suppress(OSError):
            process.send_signal(sig)


def end_group(process: subprocess.Popen[bytes], grace: float = GRACE_SECONDS) -> None:
    """SIGTERM to the child's whole process group, SIGKILL to what is left after `grace` seconds (a child
    that ignores SIGTERM, a grandchild it left behind), then the leader reaped."""
    import contextlib
    import signal
    import subprocess

    if _group_alive(process):
        _signal_group(process, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and _group_alive(process):
            time.sleep(0.02)
        # SIGKILL cannot be ignored: no need to watch the group die (its orphans are reaped by init).
        if _group_alive(process):
            _signal_group(process, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(2.0)
    _children.discard(process)


def end_children() -> None:
    """End every tracked child's group that is still running (tfdoctor is leaving)."""
    for process in list(_children):
        end_group(process)


def find_helper(name: str, search_path: str) -> str | None:
    """The absolute path of the program `name` in the absolute folders of `search_path` (a PATH), None if
    none has it. A relative entry (`.`, empty, `bin`) is skipped: it names whatever folder the command
    runs in, where anyone who can write there could plant `sh` or `env` (as the numactl lookup does)."""
    for folder in search_path.split(":"):
        if not folder.startswith("/"):
            continue
        candidate = os.path.join(folder, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


class RangeReader:
    """Reads of chosen byte ranges of one regular file (an ELF's headers and dynamic section, never the
    gigabyte around them): each read at most `limit` bytes, all of them together at most `budget`, none
    after `deadline`. Opened like read_probe_file (FIFOs, devices and sockets refused); use as a context
    manager. Raises OSError (SpecialFileError, IsADirectoryError…) on open and TimeoutError or
    BudgetExceeded while reading."""

    def __init__(self, host_path: str | os.PathLike[str], budget: int, limit: int = CHUNK,
                 deadline: float | None = None) -> None:
        self._fd = os.open(host_path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        try:
            status = os.fstat(self._fd)
            if stat.S_ISDIR(status.st_mode):
                raise IsADirectoryError(21, "Is a directory")
            if not stat.S_ISREG(status.st_mode):
                raise SpecialFileError(file_kind(status.st_mode))
            os.set_blocking(self._fd, True)
        except BaseException:
            os.close(self._fd)
            raise
        self.status = status  # the open file's own stat: what a cache keys on
        self.size = status.st_size
        self.left = budget
        self.limit = limit
        self.deadline = deadline

    def __call__(self, offset: int, size: int) -> bytes:
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise TimeoutError("reading took longer than the time allowed")
        size = min(size, self.limit)
        if size > self.left:
            raise BudgetExceeded(f"more than the {self.left + size} bytes allowed")
        # Past the end (a crafted header's offset, up to 2**64) reads nothing rather than overflowing pread.
        data = os.pread(self._fd, size, offset) if 0 <= offset < self.size else b""
        self.left -= len(data)
        return data

    def close(self) -> None:
        os.close(self._fd)

    def __enter__(self) -> RangeReader:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class BudgetExceeded(OSError):
    """A RangeReader asked for more bytes in all than it was allowed."""
