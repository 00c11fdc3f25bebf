"""`[tool.tfdoctor.lint]` (pyproject.toml) or `[lint]` (tfdoctor.toml): lint's own settings.

    [tool.tfdoctor.lint]
    include-tests = false   # lint test files (test_*.py, *_test.py, tests/) found in directories
    preview = false         # also run the preview rules
    target-tensorflow = "2.15"   # the release the code runs on, or "installed" (default: the pins, else not known)

Flags override the file (`--include-tests`, `--preview`, `--target-tensorflow`). A wrong type is a
ConfigError (exit 2).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from tfdoctor.config import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

KNOWN = {"include-tests", "preview", "target-tensorflow"}
FLAGS = {"include-tests", "preview"}


@dataclass(frozen=True)
class LintSettings:
    """The [tool.tfdoctor.lint] settings in force."""

    include_tests: bool = False
    preview: bool = False
    target_tensorflow: str | None = None  # a release ("2.15") or "installed"; checked where it is used


def load_lint_settings(source: str | None) -> LintSettings:
    """Read the lint table of the configuration file `tfdoctor.config` found (None: defaults)."""
    if source is None:
        return LintSettings()
    path = Path(source)
    from tfdoctor.config import CONFIG_FILE_LIMIT
    from tfdoctor.facts.bounded import InputFileError, read_input_file

    try:
        data = tomllib.loads(read_input_file(path, CONFIG_FILE_LIMIT, "configuration").decode("utf-8"))
    except (InputFileError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:  # load_config vetted it
        raise ConfigError(f"cannot read {path}: {exc}") from None
    table = data.get("tool", {}).get("tfdoctor", {}) if path.name == "pyproject.toml" else data
    table = table.get("lint", {}) if isinstance(table, dict) else {}
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.tfdoctor.lint] must be a table")
    unknown = sorted(set(table) - KNOWN)
    if unknown:
        raise ConfigError(f"{path}: unknown lint key(s) {', '.join(unknown)} (known: {', '.join(sorted(KNOWN))})")
    for key in FLAGS & set(table):
        if not isinstance(table[key], bool):
            raise ConfigError(f"{path}: lint {key} must be true or false")
    target = table.get("target-tensorflow")
    if target is not None and not isinstance(target, str):
        raise ConfigError(f'{path}: lint target-tensorflow must be a release in quotes (e.g. "2.15") or "installed"')
    return LintSettings(include_tests=table.get("include-tests", False), preview=table.get("preview", False),
                        target_tensorflow=target)
