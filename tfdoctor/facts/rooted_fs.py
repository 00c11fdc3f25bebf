"""Symlink-aware file access under --root.

A CUDA installation is made of absolute symlinks (/usr/local/cuda -> /usr/local/cuda-12.2). Under a
fake root the operating system would follow such a link out of the fake tree into the real one, so
links are resolved here by hand, each absolute target re-rooted. On the live machine this is plain
os.path.realpath.
"""

from __future__ import annotations

import os
import posixpath

from tfdoctor.facts.machine import Machine

_MAX_LINKS = 40
READ_LIMIT = 16 * 1024 * 1024  # ld.so.cache of a large image is ~1 MB


class RootedFs:
    def __init__(self, machine: Machine) -> None:
        self.machine = machine
        self._live = machine.is_live
        self._root = os.fspath(machine.root).rstrip("/")
        self._real: dict[str, str | None] = {}  # one probe run sees one file system: resolve each path once

    def _host(self, path: str) -> str:
        return path if self._live else self._root + "/" + path.lstrip("/")

    def realpath(self, path: str) -> str | None:
        """The machine path with every link resolved; None for a loop. Missing parts stay as written."""
        if path not in self._real:
            self._real[path] = os.path.realpath(path) if self._live else self._resolve(path)
        return self._real[path]

    def _resolve(self, path: str) -> str | None:
        parts = [p for p in posixpath.normpath(path).split("/") if p]
        resolved = "/"
        hops = 0
        while parts:
            part = parts.pop(0)
            if part == "..":
                resolved = posixpath.dirname(resolved) or "/"
                continue
            candidate = posixpath.join(resolved, part)
            host = self._host(candidate)
            if os.path.islink(host):
                hops += 1
                if hops > _MAX_LINKS:
                    return None
                target = os.readlink(host)
                if target.startswith("/"):
                    resolved = "/"
                    parts = [p for p in target.split("/") if p] + parts
                else:
                    parts = [p for p in target.split("/") if p] + parts
                continue
            resolved = candidate
        return resolved

    def host_path(self, path: str) -> str:
        return self._host(self.realpath(path) or path)

    def exists(self, path: str) -> bool:
        real = self.realpath(path)
        return real is not None and os.path.exists(self._host(real))

    def is_file(self, path: str) -> bool:
        real = self.realpath(path)
        return real is not None and os.path.isfile(self._host(real))

    def is_dir(self, path: str) -> bool:
        real = self.realpath(path)
        return real is not None and os.path.isdir(self._host(real))

    def is_link(self, path: str) -> bool:
        return os.path.islink(self._host(path))

    def is_broken_link(self, path: str) -> bool:
        return self.is_link(path) and not self.exists(path)

    def listdir(self, path: str) -> list[str]:
        if self.realpath(path) is None:  # a loop: the unresolved path could lead out of the root
            return []
        try:
            return sorted(os.listdir(self.host_path(path)))
        except OSError:
            return []

    def read_text(self, path: str, limit: int = READ_LIMIT) -> str | None:
        data = self.read_bytes(path, limit)
        return None if data is None else data.decode("utf-8", errors="replace")

    def read_bytes(self, path: str, limit: int = READ_LIMIT) -> bytes | None:
        """The file's bytes; None when missing, a loop, a FIFO or device, or larger than `limit`."""
        from tfdoctor.facts.bounded import read_probe_file

        if self.realpath(path) is None:
            return None
        try:
            read = read_probe_file(self.host_path(path), limit)
        except OSError:
            return None
        return None if read.truncated else read.data

    def is_executable(self, path: str) -> bool:
        return self.is_file(path) and os.access(self.host_path(path), os.X_OK)
