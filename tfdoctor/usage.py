"""What every command shares with its user: exit codes, the usage error, code lists, where output goes.

It sits below every command (`tfdoctor/cli.py` and the lazily loaded ones: tune, profile, lint,
compare), so a command module never imports `tfdoctor.cli` and the package has no import cycle.

Exit codes (also in the README):
  0  nothing at or above the --fail-on level
  1  something was
  2  usage error: bad option, bad input file, malformed configuration, refusing to overwrite
  3  tfdoctor itself failed
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import click

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


class UsageError(click.ClickException):
    """Bad input the user can correct: exit 2 with a one-line message, never a traceback."""

    exit_code = EXIT_USAGE

    def show(self, file: Any = None) -> None:
        from tfdoctor.facts.redact import redact_text

        click.echo(f"tfdoctor: error: {redact_text(self.format_message())}", err=True)


def split_codes(values: Iterable[str]) -> tuple[str, ...]:
    """`--select THR,cpu002 --select NUMA` → ("THR", "CPU002", "NUMA")."""
    codes = []
    for value in values:
        codes.extend(part.strip().upper() for part in value.split(",") if part.strip())
    return tuple(codes)


def emit(text: str, err: bool = False) -> None:
    stream = sys.stderr if err else sys.stdout
    stream.write(text)
    stream.flush()


def project_config() -> Any:
    """The [tool.tfdoctor] configuration found from the current directory up; malformed → exit 2."""
    from tfdoctor.config import Config, ConfigError, find_config_file, load_config

    warnings: list[str] = []
    path = find_config_file(Path.cwd(), warnings)  # a file another user could have planted is skipped
    emit("".join(f"tfdoctor: warning: {line}\n" for line in warnings), err=True)
    try:
        config = load_config(path) if path else Config()
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    return config
