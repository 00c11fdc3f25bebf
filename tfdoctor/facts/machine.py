"""The one door through which probes reach the machine.

Every file a probe reads goes through `Machine.path`, which maps an absolute path under `root`; tests
build a fake machine as a directory tree and pass it as `--root`. The environment is passed in, not
read from `os.environ` by the probes, for the same reason.

Under a root, `path` resolves every symbolic link itself, re-rooting absolute targets and stopping `..`
at the root, so no link inside the tree leads out of it (a fake tree's `/etc/x -> /etc/shadow` reads the
tree's /etc/shadow, never the host's). Reads are bounded (tfdoctor.facts.bounded): FIFOs and devices are
not read, and a file larger than its limit is unknown, not loaded.
"""

from __future__ import annotations

import errno
import functools
import os
from collections.abc import Callable, Mapping

from tfdoctor.facts import Unknown
from tfdoctor.records import field, record

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import TypeVar
    T = TypeVar("T")

PROBE_FILE_LIMIT = 4 * 1024 * 1024  # /proc/cpuinfo of 512 CPUs is ~1 MB; nothing a probe reads needs more
_MAX_LINKS = 40


@record(frozen=True)
class Machine:
    """The machine probes read: a root ("/" or a fake tree), its environment, the interpreter to inspect, a
    time limit."""

    root: str | os.PathLike[str] = "/"  # a string or a path: probes join it as a string
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    python: str | None = None  # another interpreter to inspect (--python); None: this one
    timeout: float = 2.0  # seconds any single subprocess or probe may take

    @functools.cached_property
    def is_live(self) -> bool:
        """True when probing the real machine (root "/"): syscalls such as sched_getaffinity apply.
        Cached (every probe read asks): a frozen instance's root does not change."""
        return os.fspath(self.root) == "/"

    def path(self, absolute: str | os.PathLike[str]) -> str:
        """Where the machine's `absolute` path is on this host: itself on the live machine, else under root with
        every link resolved inside it. A string: pathlib costs the pre-job hook more than its reads."""
        text = os.fspath(absolute)
        if not text.startswith("/"):
            raise ValueError(f"probe paths are absolute, got {text!r}")
        if self.is_live:
            return text
        root = os.fspath(self.root).rstrip("/")
        inside = confined(root, text)
        return root + inside if inside != "/" else root

    def unroot(self, path: str | os.PathLike[str]) -> str:
        """The machine path of a file found under root (fake trees report paths as the machine sees them)."""
        text = os.fspath(path)
        if self.is_live:
            return text
        root = os.fspath(self.root).rstrip("/")
        if text == root:
            return "/"
        if text.startswith(root + "/"):
            return text[len(root):]
        return text

    def read_text(self, absolute: str, limit: int = PROBE_FILE_LIMIT) -> str | Unknown:
        """A whole text file, or Unknown saying why not (missing, unreadable, a FIFO or device, larger
        than `limit`)."""
        from tfdoctor.facts.bounded import SpecialFileError, read_probe_file

        try:
            read = read_probe_file(self.path(absolute), limit)
            if read.truncated:
                return Unknown(f"{absolute} is larger than {limit // 1024} KB: not read")
            return read.data.decode("utf-8", errors="surrogateescape")
        except SpecialFileError as exc:
            return Unknown(f"{absolute} {exc.args[0]}: not read")
        except FileNotFoundError:
            return Unknown(f"{absolute} does not exist")
        except PermissionError:
            return Unknown(f"{absolute} is not readable (permission denied)")
        except IsADirectoryError:
            return Unknown(f"{absolute} is a directory")
        except OSError as exc:
            return Unknown(f"{absolute} could not be read: {exc.strerror or exc}")

    def read_parsed(self, absolute: str, parse: Callable[[str], T], problem: str = "is malformed") -> T | Unknown:
        """A file run through a pure parser; Unknown when it cannot be read, or when the parser raises
        ValueError ("<path> <problem>")."""
        text = self.read_text(absolute)
        if isinstance(text, Unknown):
            return text
        try:
            return parse(text)
        except ValueError:
            return Unknown(f"{absolute} {problem}")

    def exists(self, absolute: str) -> bool:
        try:
            return os.path.exists(self.path(absolute))
        except OSError:
            return False

    def listdir(self, absolute: str) -> list[str] | Unknown:
        try:
            return sorted(os.listdir(self.path(absolute)))
        except FileNotFoundError:
            return Unknown(f"{absolute} does not exist")
        except OSError as exc:
            return Unknown(f"{absolute} could not be listed: {exc.strerror or exc}")


def confined(root: str, path: str) -> str:
    """`path` (absolute, as the machine sees it) with every link under `root` resolved inside `root`:
    an absolute target is re-rooted, `..` stops at the root, a loop (more than 40 links) is OSError(ELOOP).
    Returns the machine path; the caller joins it under root."""
    root = root.rstrip("/")
    parts = [p for p in path.split("/") if p and p != "."]
    resolved: list[str] = []
    hops = 0
    while parts:
        part = parts.pop(0)
        if part == "..":
            if resolved:
                resolved.pop()
            continue
        host = root + "/" + "/".join([*resolved, part])
        if os.path.islink(host):
            hops += 1
            if hops > _MAX_LINKS:  # never hand the OS a link to follow: it could lead out of the root
                raise OSError(errno.ELOOP, "too many levels of symbolic links", path)
            try:
                target = os.readlink(host)
            except OSError:
                resolved.append(part)
                continue
            if target.startswith("/"):
                resolved = []
            parts = [p for p in target.split("/") if p and p != "."] + parts
            continue
        resolved.append(part)
    return "/" + "/".join(resolved)
