"""What every command that looks at a machine shares: its options, and the Report they lead to.

Below every command (`tfdoctor/cli.py` and the lazily loaded ones), like `tfdoctor/usage.py`, so that
`check`, `fix`, `explain --log` and `report` gather facts the same way without importing each other.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from tfdoctor.records import value_tuple
from tfdoctor.usage import UsageError

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import Any

DEFAULT_TIMEOUT = 5.0


@value_tuple
class GatherOptions:
    """The options every command that looks at a machine shares (--facts, --root, --python, --timeout, …)."""

    facts_file: str | None
    root: str | None
    python: str | None
    timeout: float | None
    select: tuple[str, ...]
    ignore: tuple[str, ...]


def gather_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The options every command that looks at a machine shares."""
    import click  # only the command line's modules declare options: the hook's fast path never does

    options = [
        click.option("--select", multiple=True, metavar="CODES",
                     help="Only these checks (comma-separated codes or prefixes, e.g. THR,CPU002)."),
        click.option("--ignore", multiple=True, metavar="CODES", help="Skip these checks (codes or prefixes)."),
        click.option("--facts", "facts_file", metavar="FILE",
                     help="Replay facts collected earlier (tfdoctor collect) instead of probing."),
        click.option("--root", metavar="DIR", help="Read every file-based fact under DIR instead of /."),
        click.option("--python", metavar="PATH",
                     help="Inspect the Python environment of this interpreter instead of tfdoctor's own (a bare "
                          "name such as python3 is looked up on PATH)."),
        click.option("--timeout", type=float, metavar="S",
                     help=f"Total seconds for gathering facts (default {DEFAULT_TIMEOUT:g}); a probe still "
                          "running then is abandoned and its facts are unknown."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def build_report(opts: GatherOptions, config: Any) -> Any:
    from tfdoctor.engine import gather_facts, run_checks
    from tfdoctor.facts import Facts, FactsFileError
    from tfdoctor.registry import load_registry, select_checks

    probed = None if opts.facts_file else started_machine(opts, config)
    registry = load_registry()
    select = opts.select or config.select
    ignore = opts.ignore + config.ignore
    unknown = [c for c in (*select, *opts.ignore) if not any(s.code.startswith(c) for s in registry.checks)]
    if unknown:
        raise UsageError(f"no check code starts with {', '.join(unknown)} (see tfdoctor check --list-checks)")
    checks = select_checks(registry.checks, select, ignore)
    if opts.facts_file:
        if opts.root or opts.python:
            raise UsageError("--facts replays recorded facts; it cannot be combined with --root or --python")
        try:
            facts = Facts.load(opts.facts_file)
        except FactsFileError as exc:
            raise UsageError(str(exc)) from None
    else:
        facts = gather_facts(registry.probes, probed, deadline=deadline(opts, config))
    # The checks get the --timeout budget again, of their own: probes that used theirs must not leave none.
    return run_checks(checks, facts, registry.errors, deadline=deadline(opts, config))


def timeout_seconds(opts: GatherOptions, config: Any) -> float:
    from tfdoctor.config import MAX_TIMEOUT

    timeout = opts.timeout if opts.timeout is not None else (config.timeout or DEFAULT_TIMEOUT)
    if not 0 < timeout <= MAX_TIMEOUT:  # also refuses nan, which would abandon every probe at once
        raise UsageError(f"--timeout must be a positive number of seconds, at most {MAX_TIMEOUT:g}")
    return timeout


def deadline(opts: GatherOptions, config: Any) -> float:
    import time

    return time.monotonic() + timeout_seconds(opts, config)


def started_machine(opts: GatherOptions, config: Any) -> Any:
    """machine(), with --python's snapshot already started: call it before the registry is loaded, so the other
    interpreter starts up while the checks and probes are imported (python_env.prestart)."""
    probed = machine(opts, config)
    if probed.python:
        from tfdoctor.facts.probes.python_env import prestart

        prestart(probed)
    return probed


def _given_path(option: str, value: str) -> str:
    """The path an option was given, refused when it is empty (it would mean the current folder) or relative
    to a current folder that is gone (os.path.abspath raises there)."""
    if not value:
        raise UsageError(f"{option} was given an empty path")
    if not os.path.isabs(value):
        try:
            os.getcwd()
        except OSError as exc:
            raise UsageError(f"{option} {value}: a relative path, and the current folder cannot be read "
                             f"({exc.strerror or exc}): give an absolute one") from None
    return value


def machine(opts: GatherOptions, config: Any) -> Any:
    from tfdoctor.facts.machine import Machine

    # Strings, not pathlib: importing it costs the pre-job hook ~2 ms (tests/support/hook_imports.py).
    root = "/"
    if opts.root is not None:
        root = os.path.realpath(_given_path("--root", opts.root))
        if not os.path.isdir(root):
            raise UsageError(f"--root {opts.root}: no such directory")
    python = None
    if opts.python is not None:
        # A bare name (python3) is looked up on PATH, as the shell would; ./python is the current folder's.
        if opts.python and "/" not in opts.python:
            from tfdoctor.usage import on_path

            found = on_path(opts.python)
            if found is None:
                raise UsageError(f"--python {opts.python}: not found on PATH (./{opts.python} for the one in "
                                 "this folder)")
            candidate = found
        else:
            candidate = os.path.abspath(_given_path("--python", opts.python))
        if not os.path.exists(candidate):
            raise UsageError(f"--python {opts.python}: no such file")
        if os.path.isdir(candidate) or not os.access(candidate, os.X_OK):
            raise UsageError(f"--python {opts.python}: not an executable interpreter")
        python = candidate
    return Machine(root=root, environ=dict(os.environ), python=python, timeout=timeout_seconds(opts, config))
