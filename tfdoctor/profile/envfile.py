"""The environment an `env.sh` produces, and environment changes applied to a mapping.

An env.sh is shell code (tfdoctor writes `case` guards for path prepends; users write `$(nproc)`), so
tfdoctor does not re-implement sh: it sources the file in `sh -c '. FILE; env -0'` under a timeout and
reads the NUL-separated result. What sh itself adds (PWD, SHLVL, _) is taken out by diffing against
the same shell run without the file.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from tfdoctor.model import EnvChange, EnvOp

ENV_FILE_TIMEOUT = 10.0


class EnvFileError(Exception):
    """The file cannot be read or sourcing it fails; the message is one line for the user."""


def _shell_environment(environ: Mapping[str, str], script: str, cwd: str, arg: str,
                       timeout: float) -> dict[str, str]:
    from tfdoctor.facts.bounded import find_helper, run_bounded
    from tfdoctor.facts.redact import excerpt

    search_path = environ.get("PATH", "")
    shell, env = find_helper("sh", search_path), find_helper("env", search_path)
    if shell is None or env is None:
        raise EnvFileError(f"cannot find {'sh' if shell is None else 'env'} in an absolute folder of PATH "
                           "(relative entries are not used)")
    try:
        # An environment is at most a few MB (the kernel's ARG_MAX bounds what a child can receive).
        done = run_bounded([shell, "-c", script, "sh", arg, env], timeout=timeout, limit=8 * 1024 * 1024,
                           env=environ, cwd=cwd)
    except subprocess.TimeoutExpired:
        raise EnvFileError(f"sourcing {arg} did not finish within {timeout:g} s") from None
    except OSError as exc:
        raise EnvFileError(f"cannot run sh: {exc.strerror or exc}") from None
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        detail = f": {excerpt(message[-1])}" if message else ""
        raise EnvFileError(f"sourcing {arg} failed (exit {done.returncode}){detail}")
    result = {}
    for entry in done.stdout.split(b"\0"):
        if not entry:
            continue
        name, sep, value = entry.partition(b"=")
        if sep:
            result[os.fsdecode(name)] = os.fsdecode(value)
    return result


def environment_from_file(path: str | os.PathLike[str], base: Mapping[str, str],
                          timeout: float = ENV_FILE_TIMEOUT) -> dict[str, str]:
    """`base` as it is after sourcing the file: variables set, changed and unset by it."""
    from tfdoctor.facts.bounded import InputFileError, open_regular

    target = Path(path)
    try:  # the one check for files a user names: missing, a FIFO (sh would wait on it), a device, a folder
        os.close(open_regular(target, "--env"))
    except InputFileError as exc:
        raise EnvFileError(str(exc)) from None
    absolute = str(target.resolve())
    cwd = str(target.resolve().parent)
    # "$2" is env by its absolute path: the file may change PATH, and `.` on it is the file's own folder.
    before = _shell_environment(base, '"$2" -0', cwd, absolute, timeout)
    # Sourced with its output sent away: an echo in the file must not corrupt the env -0 stream.
    after = _shell_environment(base, '. "$1" >/dev/null || exit $?; "$2" -0', cwd, absolute, timeout)
    environ = {k: v for k, v in base.items() if k in after or k not in before}
    for name, value in after.items():
        if before.get(name) != value:
            environ[name] = value
    return environ


def environment_diff(base: Mapping[str, str], changed: Mapping[str, str]) -> dict[str, str | None]:
    """name -> new value (None: unset) for every variable that differs."""
    diff: dict[str, str | None] = {k: v for k, v in changed.items() if base.get(k) != v}
    diff.update({k: None for k in base if k not in changed})
    return dict(sorted(diff.items()))


def apply_changes(environ: Mapping[str, str], changes: tuple[EnvChange, ...] | list[EnvChange]) -> dict[str, str]:
    """What sourcing the rendered script would do to `environ` (same semantics as render_sh)."""
    result = dict(environ)
    for change in changes:
        if change.op is EnvOp.SET:
            result[change.name] = change.value or ""
        elif change.op is EnvOp.UNSET:
            result.pop(change.name, None)
        else:
            entry = change.value or ""
            current = result.get(change.name, "")
            if entry not in current.split(":"):
                result[change.name] = f"{entry}:{current}" if current else entry
    return result
