"""The one door through which probes reach the machine.

Every file a probe reads goes through `Machine.path`, which maps an absolute path under `root`; tests
build a fake machine as a directory tree and pass it as `--root`. The environment is passed in, not
read from `os.environ` by the probes, for the same reason.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from tfdoctor.facts import Unknown

T = TypeVar("T")


@dataclass(frozen=True)
class Machine:
    root: Path = Path("/")
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    python: str | None = None  # another interpreter to inspect (--python); None: this one
    timeout: float = 2.0  # seconds any single subprocess or probe may take

    @property
    def is_live(self) -> bool:
        """True when probing the real machine (root "/"): syscalls such as sched_getaffinity apply."""
        return self.root == Path("/")

    def path(self, absolute: str | os.PathLike[str]) -> Path:
        text = os.fspath(absolute)
        if not text.startswith("/"):
            raise ValueError(f"probe paths are absolute, got {text!r}")
        if self.is_live:
            return Path(text)
        return self.root / text.lstrip("/")

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

    def read_text(self, absolute: str) -> str | Unknown:
        """A whole text file, or Unknown saying why not (missing, unreadable, not text)."""
        target = self.path(absolute)
        try:
            return target.read_text(encoding="utf-8", errors="surrogateescape")
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
            return self.path(absolute).exists()
        except OSError:
            return False

    def listdir(self, absolute: str) -> list[str] | Unknown:
        try:
            return sorted(os.listdir(self.path(absolute)))
        except FileNotFoundError:
            return Unknown(f"{absolute} does not exist")
        except OSError as exc:
            return Unknown(f"{absolute} could not be listed: {exc.strerror or exc}")
