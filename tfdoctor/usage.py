"""What every command shares with its user: exit codes, the usage error, code lists, where output goes.

It sits below every command (`tfdoctor/cli.py` and the lazily loaded ones: tune, profile, lint,
compare), so a command module never imports `tfdoctor.cli` and the package has no import cycle.

Exit codes (also in the README):
  0  nothing at or above the --fail-on level
  1  something was
  2  usage error: bad option, bad input file, malformed configuration, refusing to overwrite
  3  tfdoctor itself failed
  4  its output could not be written (standard output or error closed, or on a full device)
  130  interrupted by SIGINT (^C); 128 + n for SIGTERM (143), SIGHUP (129), SIGQUIT (131) once tfdoctor
       has started a child or runs a command line (every child's group is ended first)
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import Any

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
EXIT_OUTPUT = 4  # tfdoctor.terminal.EXIT_OUTPUT
EXIT_SIGINT = 130  # 128 + SIGINT, as a shell reports a process ^C ended


class UsageError(Exception):
    """Bad input the user can correct: exit 2 with a one-line message, never a traceback.

    Not a click exception: the pre-job hook's fast path (tfdoctor/hook.py) raises and shows it without
    importing click; `run_guarded` turns it into exit 2 for every command."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def format_message(self) -> str:
        return self.message

    def show(self, file: Any = None) -> None:
        from tfdoctor.facts.redact import redact_text
        from tfdoctor.terminal import safe

        emit(f"tfdoctor: error: {safe(redact_text(self.format_message()))}\n", err=True)


def split_codes(values: Iterable[str]) -> tuple[str, ...]:
    """`--select THR,cpu002 --select NUMA` → ("THR", "CPU002", "NUMA")."""
    codes = []
    for value in values:
        codes.extend(part.strip().upper() for part in value.split(",") if part.strip())
    return tuple(codes)


def on_path(name: str) -> str | None:
    """A command name without a slash as the shell finds it: the first executable file of that name on PATH
    (`--python python3`). Not shutil.which: it costs the pre-job hook an import (fnmatch)."""
    if not name or "/" in name:
        return None
    for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
        candidate = os.path.join(folder or ".", name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return os.path.abspath(candidate)
    return None


def check_output(path: str | None, force: bool, option: str = "--html") -> None:
    """Refuse an output that exists (or an empty name) before the work that would fill it, not after."""
    if path is None:
        return
    if not path:
        raise UsageError(f"{option} needs a file name (or - for standard output)")
    if path != "-" and os.path.exists(path) and not force:
        raise UsageError(f"{path} exists; add --force to overwrite it")


# The page `tune`, `compare` and `profile` write with --html FILE is drawn by the report package, which sits
# above them (it reads their results to draw them): none of them imports it. A command names its section
# and hands over the section's inputs; the command line (tfdoctor/cli.py) installs the report's writer.
SectionPageWriter = Callable[..., None]  # (path, force, section, *inputs, **options)
_section_page_writer: SectionPageWriter | None = None


def install_section_page_writer(writer: SectionPageWriter) -> None:
    global _section_page_writer
    _section_page_writer = writer


def write_section_page(path: str, force: bool, section: str, *inputs: Any, **options: Any) -> None:
    """Write one section of `tfdoctor report` alone as a page: "tune", "fleet" or "profile"."""
    if _section_page_writer is None:
        raise RuntimeError("no HTML section writer installed (tfdoctor.cli installs the report's)")
    _section_page_writer(path, force, section, *inputs, **options)


def emit(text: str, err: bool = False, wrap: bool = False, kind: str = "text") -> None:
    """Every command's output goes out here (tfdoctor.terminal.write): plain text has its control characters
    shown as escapes; wrap=True fits it to the terminal; kind "styled", "json" or "exact" for rich's
    rendering, JSON and scripts."""
    if not text:  # the pre-job hook on a healthy node: nothing to print, nothing to import
        return
    from tfdoctor.terminal import write

    write(text, err, wrap, kind)


def project_config() -> Any:
    """The [tool.tfdoctor] configuration found from the current directory up; malformed → exit 2."""
    from tfdoctor.config import Config, ConfigError, find_config_file, load_config

    warnings: list[str] = []
    try:
        here: str | None = os.getcwd()
    except OSError as exc:  # a job started in a folder removed since (a cleaned scratch folder)
        here = None
        warnings.append(f"the current folder cannot be read ({exc.strerror or exc}): no [tool.tfdoctor] "
                        "configuration is looked for")
    path = find_config_file(here, warnings) if here else None  # a file another user could have planted is skipped
    emit("".join(f"tfdoctor: warning: {line}\n" for line in warnings), err=True)
    try:
        config = load_config(path) if path else Config()
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    return config


_run_mark = 0


def start_run() -> None:
    """Only this invocation's abandoned probes count (tests call main() many times in one process)."""
    global _run_mark
    from tfdoctor.facts.abandoned import abandoned_mark

    _run_mark = abandoned_mark()


def abandoned_since_start() -> list[str]:
    from tfdoctor.facts.abandoned import abandoned_probes

    return list(abandoned_probes(since=_run_mark))


def run_guarded(body: Callable[[], object]) -> int:
    """Run a command's body and return its exit code: SystemExit's code, 2 for a usage error, 130 on ^C,
    128 + n for SIGTERM/SIGHUP/SIGQUIT once a handler is installed (`bounded.guard_signals`), 0 on a closed
    pipe, 4 when standard output or error cannot be written (closed, a full device: said on the other one
    when it works), 3 with a one-line message (never a traceback) for anything else."""
    from tfdoctor.terminal import OutputLost

    try:
        return _guarded(body)
    except OutputLost as exc:
        try:  # noqa: SIM105 (contextlib costs the pre-job hook an import)
            emit(f"tfdoctor: {exc}\n", err=exc.stream == "output")
        except (OutputLost, OSError):
            pass
        return EXIT_OUTPUT


def _guarded(body: Callable[[], object]) -> int:
    from tfdoctor.terminal import OutputLost

    try:
        body()
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_INTERNAL
    except UsageError as exc:
        exc.show()
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_SIGINT
    except BrokenPipeError:
        return EXIT_OK
    except OutputLost:
        raise
    except Exception as exc:
        if os.environ.get("TFDOCTOR_DEBUG"):
            raise
        from tfdoctor.facts.redact import excerpt

        emit(f"tfdoctor: internal error: {type(exc).__name__}: {excerpt(str(exc), 300)}\n"
             "tfdoctor: set TFDOCTOR_DEBUG=1 for the traceback, and please report it.\n", err=True)
        return EXIT_INTERNAL
    except BaseException as exc:
        bounded = sys.modules.get("tfdoctor.facts.bounded")  # not imported: no handler was installed
        if bounded is not None and isinstance(exc, bounded.Interrupted):
            return 128 + exc.signum  # SIGTERM 143, SIGHUP 129, SIGQUIT 131: what a shell reports for the signal
        raise
    return EXIT_OK


def leave(code: int) -> None:
    bounded = sys.modules.get("tfdoctor.facts.bounded")  # not imported: no child was started
    if bounded is not None:
        bounded.end_children()  # a child of an abandoned probe (a --python that ignores SIGTERM) must not outlive us
    if abandoned_since_start():
        # A probe stuck in C code (a hung driver call) would hold the interpreter at shutdown.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
