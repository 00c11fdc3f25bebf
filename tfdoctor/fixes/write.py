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


SYSTEM_TREES = ("/dev", "/proc", "/sys")  # the kernel's names: never replaced, whatever is there now


def _refuse_outside(target: Path) -> None:
    """`--force` replaces a link itself, never what it points to: but only a link to a file in the target's
    own folder (`latest.json -> run3.json`). A link elsewhere (`out -> /etc/cron.d/x`) says someone meant the
    output to land there, and nothing under /dev, /proc or /sys is replaced (as root, `--force` onto
    /dev/stdout while stdout is a file would have replaced the machine's /dev/stdout link with a file)."""
    absolute = Path(os.path.abspath(target))
    for place in (absolute, Path(os.path.realpath(absolute.parent)) / absolute.name):
        for tree in SYSTEM_TREES:
            if place == Path(tree) or Path(tree) in place.parents:
                raise WriteError(f"{target} is under {tree}: tfdoctor does not replace the kernel's files "
                                 "(- writes to standard output)")
    if os.path.islink(target):
        pointed = Path(os.path.realpath(target))
        if pointed.parent != Path(os.path.realpath(absolute.parent)):
            raise WriteError(f"{target} is a link to {pointed}, outside its folder: tfdoctor does not replace "
                             "it (remove the link, or write to another name)")


def current_umask() -> int:
    """This process's umask, read without changing it (/proc/self/status, Linux 4.7+); else set and put
    back at once."""
    from tfdoctor.facts.bounded import read_probe_file

    try:
        for line in read_probe_file("/proc/self/status", 1 << 16).data.splitlines():
            if line.startswith(b"Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _keep_mode_and_owner(tmp: str, target: Path, mode: int) -> None:
    """The new file's mode: that of the regular file it replaces (a 0600 file stays private, its owner
    too where this process may set it; the execute bits `mode` asks for are added where it had read bits),
    else `mode` as the umask leaves it (0644 under umask 022, 0600 under 077)."""
    try:
        old = os.stat(target) if os.path.isfile(target) and not os.path.islink(target) else None
    except OSError:
        old = None
    if old is None:
        os.chmod(tmp, mode & ~current_umask() & 0o777)
        return
    import contextlib

    with contextlib.suppress(OSError):  # not ours to give away (not root): the file is the writer's
        os.chown(tmp, old.st_uid, old.st_gid)
    # A launcher stays runnable, by whoever could read the file it replaces (0640 becomes 0750).
    os.chmod(tmp, (old.st_mode & 0o777) | (mode & 0o111 & (old.st_mode & 0o444) >> 2))


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
    _refuse_outside(target)
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
        _keep_mode_and_owner(tmp, target, mode)
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
