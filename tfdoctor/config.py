"""Configuration from `[tool.tfdoctor]` in pyproject.toml or from tfdoctor.toml; flags override it.

The nearest file wins, searching from the current directory upward; tfdoctor.toml beats a pyproject in
the same folder. A malformed file is a ConfigError (exit 2), never a silent default.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

FAIL_ON = ("error", "warning", "info", "never")
KNOWN_KEYS = {"select", "ignore", "fail-on", "timeout", "lint"}  # lint: tfdoctor/lint/settings.py


class ConfigError(Exception):
    pass


@dataclass(frozen=True)
class Config:
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    fail_on: str = "error"
    timeout: float | None = None
    source: str | None = None  # the file it came from
    notes: tuple[str, ...] = field(default=())


def find_config_file(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        for name in ("tfdoctor.toml", "pyproject.toml"):
            candidate = folder / name
            if candidate.is_file():
                if name == "pyproject.toml" and not _mentions_tfdoctor(candidate):
                    continue
                return candidate
    return None


def _mentions_tfdoctor(path: Path) -> bool:
    try:
        return "[tool.tfdoctor" in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def _codes(value: object, key: str, path: Path) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{path}: '{key}' must be a list of check codes, e.g. [\"THR\", \"CPU002\"]")
    return tuple(v.strip().upper() for v in value if v.strip())


def load_config(path: Path) -> Config:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    except RecursionError:  # arrays or tables nested deeper than the parser follows
        raise ConfigError(f"{path} is not valid TOML: nested too deeply") from None
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(f"{path}: 'tool' must be a table")
    table = tool.get("tfdoctor", {} if path.name == "pyproject.toml" else data)
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.tfdoctor] must be a table")
    unknown = sorted(set(table) - KNOWN_KEYS)
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(KNOWN_KEYS))})")
    fail_on = table.get("fail-on", "error")
    if fail_on not in FAIL_ON:
        raise ConfigError(f"{path}: fail-on must be one of {', '.join(FAIL_ON)}, not {fail_on!r}")
    timeout = table.get("timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
        raise ConfigError(f"{path}: timeout must be a positive number of seconds")
    return Config(
        select=_codes(table.get("select", []), "select", path),
        ignore=_codes(table.get("ignore", []), "ignore", path),
        fail_on=fail_on,
        timeout=float(timeout) if timeout is not None else None,
        source=str(path),
    )
