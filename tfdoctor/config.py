"""Configuration from `[tool.tfdoctor]` in pyproject.toml or from tfdoctor.toml; flags override it.

The nearest file wins, searching from the current directory upward; tfdoctor.toml beats a pyproject in
the same folder. A malformed file is a ConfigError (exit 2), never a silent default. A file another user
could have planted is skipped with a warning (`untrusted_because`; docs/security.md).
"""

from __future__ import annotations

import os
import sys

from tfdoctor.records import value_tuple

FAIL_ON = ("error", "warning", "info", "never")
CONFIG_FILE_LIMIT = 1024 * 1024
MAX_TIMEOUT = 86400.0  # a day: beyond it a deadline is no bound at all (and 1e300 overflows thread.join)
KNOWN_KEYS = {"select", "ignore", "fail-on", "timeout", "lint"}  # lint: tfdoctor/lint/settings.py


class ConfigError(Exception):
    pass


@value_tuple
class Config:
    """The [tool.tfdoctor] settings in force: the file's values, or the defaults when there is none."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    fail_on: str = "error"
    timeout: float | None = None
    source: str | None = None  # the file it came from
    notes: tuple[str, ...] = ()


def find_config_file(start: str | os.PathLike[str], warnings: list[str] | None = None) -> str | None:
    """The nearest trusted configuration file from the folder `start` (absolute) upward; an untrusted one is
    skipped (a line added to `warnings`). Strings, not pathlib: the pre-job hook looks on every run."""
    folder = os.fspath(start)
    while True:
        for name in ("tfdoctor.toml", "pyproject.toml"):
            candidate = os.path.join(folder, name)
            if os.path.isfile(candidate):
                if name == "pyproject.toml" and not _mentions_tfdoctor(candidate):
                    continue
                distrust = untrusted_because(candidate)
                if distrust:
                    if warnings is not None:
                        warnings.append(f"ignoring configuration {candidate}: {distrust}")
                    continue
                return candidate
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def untrusted_because(path: str | os.PathLike[str], uid: int | None = None) -> str | None:
    """Why a file must not be trusted (like git's safe.directory), or None.

    A configuration decides whether a pre-job hook fails: one planted by another user (a /tmp/tfdoctor.toml
    with fail-on = "never") must not silence every project below it. Trusted: a file owned by this user or
    root, in a folder that others cannot write to — or can, but with the sticky bit, which stops them from
    replacing a file they do not own."""
    import stat

    if not hasattr(os, "getuid"):  # not POSIX: no owners to compare
        return None
    uid = os.getuid() if uid is None else uid
    try:
        info = os.stat(path)
        parent = os.path.dirname(os.path.abspath(path))
        folder = os.stat(parent)
    except OSError as exc:
        return f"cannot check its owner: {exc.strerror or exc}"
    if info.st_uid not in (uid, 0):
        return f"it is owned by another user (uid {info.st_uid})"
    if folder.st_mode & stat.S_IWOTH and not folder.st_mode & stat.S_ISVTX:
        return f"its folder {parent} is writable by every user (and has no sticky bit)"
    return None


def _mentions_tfdoctor(path: str | os.PathLike[str]) -> bool:
    from tfdoctor.facts.bounded import InputFileError, read_input_file

    try:
        return b"[tool.tfdoctor" in read_input_file(path, CONFIG_FILE_LIMIT, "configuration")
    except InputFileError:
        return False


def _codes(value: object, key: str, path: str | os.PathLike[str]) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{path}: '{key}' must be a list of check codes, e.g. [\"THR\", \"CPU002\"]")
    return tuple(v.strip().upper() for v in value if v.strip())


def load_config(path: str | os.PathLike[str]) -> Config:
    # tomllib only here: the hook without a configuration file never imports the TOML parser.
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib

    from tfdoctor.facts.bounded import InputFileError, read_input_file

    try:
        data = tomllib.loads(read_input_file(path, CONFIG_FILE_LIMIT, "configuration").decode("utf-8"))
    except InputFileError as exc:
        raise ConfigError(str(exc)) from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    except RecursionError:  # arrays or tables nested deeper than the parser follows
        raise ConfigError(f"{path} is not valid TOML: nested too deeply") from None
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(f"{path}: 'tool' must be a table")
    table = tool.get("tfdoctor", {} if os.path.basename(path) == "pyproject.toml" else data)
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.tfdoctor] must be a table")
    unknown = sorted(set(table) - KNOWN_KEYS)
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(KNOWN_KEYS))})")
    fail_on = table.get("fail-on", "error")
    if fail_on not in FAIL_ON:
        raise ConfigError(f"{path}: fail-on must be one of {', '.join(FAIL_ON)}, not {fail_on!r}")
    timeout = table.get("timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not 0 < timeout <= MAX_TIMEOUT):
        raise ConfigError(f"{path}: timeout must be a positive number of seconds, at most {MAX_TIMEOUT:g}")
    return Config(
        select=_codes(table.get("select", []), "select", path),
        ignore=_codes(table.get("ignore", []), "ignore", path),
        fail_on=fail_on,
        timeout=float(timeout) if timeout is not None else None,
        source=str(path),
    )
