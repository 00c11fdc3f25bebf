"""Writing files the user asked for: atomically, and never over an existing file without --force.

The name `-` means standard output, everywhere a file is written (`collect -o -`, `fix --write -`,
`tune --write -`, …), as the convention goes; no file named `-` is ever created."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

STDOUT = "-"


class WriteError(Exception):
    pass


def _refuse_special(target: Path) -> None:
    """Outputs are regular files (or standard output): a FIFO, a device or a socket at the name — or a link
    to one — is never replaced, --force or not (`report -o /dev/full --force` as root must not replace the
    machine's /dev/full with a file)."""
    import stat

    from tfdoctor.facts.bounded import file_kind

    for status in (os.lstat, os.stat):
        try:
            mode = status(target).st_mode
        except OSError:
            continue  # absent (or a dangling link): a new regular file is written
        if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
            raise WriteError(f"{target} is {file_kind(mode)}: tfdoctor writes only regular files "
                             "(or standard output: -)")


def write_file(path: str | os.PathLike[str], text: str, force: bool = False, mode: int = 0o644) -> None:
    """Write to a temporary file beside the target, then link (no --force: fails if the target
    appeared meanwhile) or replace (--force). A reader never sees half a script. `-`: standard output."""
    if os.fspath(path) == STDOUT:
        from tfdoctor.terminal import write  # closed or full: exit 4 (tfdoctor/terminal.py)

        write(text, kind="exact")
        return
    write_bytes(path, text.encode("utf-8", "surrogateescape"), force, mode)


def write_bytes(path: str | os.PathLike[str], data: bytes, force: bool = False, mode: int = 0o644,
                before_replace: Callable[[], None] | None = None) -> None:
    """`write_file` for bytes already encoded (a script rewritten in its own encoding: `lint --fix`).

    `before_replace` runs right before an existing file is replaced (with `force`), after the new
    content is safely on disk: it raises to keep the file (it changed since it was read), and then
    nothing is replaced and the temporary file is removed.
    """
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        raise WriteError(f"{target} is a directory")
    _refuse_special(target)
    if target.exists() and not force:
        raise WriteError(f"{target} exists; add --force to overwrite it")
    if not folder.is_dir():
        raise WriteError(f"cannot write {target}: folder {folder} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=folder)
    except OSError as exc:
        raise WriteError(f"cannot write in {folder}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        if force:
            if before_replace is not None:
                before_replace()
            os.replace(tmp, target)
        else:
            try:
                os.link(tmp, target)
            except FileExistsError:
                raise WriteError(f"{target} exists; add --force to overwrite it") from None
            except OSError:
                # File systems without hard links: a last existence check, then rename.
                if target.exists():
                    raise WriteError(f"{target} exists; add --force to overwrite it") from None
                os.replace(tmp, target)
    except OSError as exc:
        raise WriteError(f"cannot write {target}: {exc.strerror or exc}") from None
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)
