"""The pre-job hook's fast path: `tfdoctor check` and its hook forms parsed without importing click.

Importing click (and the command line built on it) is a third of what the hook costs. `check` with
nothing but the options a job script uses — `-q/--quiet`, `-v/--verbose`, `--fail-on`, `--format`,
`--timeout`, `--select`, `--ignore`, `--facts`, `--root`, `--python` — is parsed here and runs the very
function the click command runs (tfdoctor/check_command.py). Anything else — another command, `--help`,
`--list-checks`, an unknown option, a missing or malformed value, `-qv` — returns None, and the full
command line parses it (with click's messages for what is wrong), so no form behaves differently.
"""

from __future__ import annotations

import gc
from collections.abc import Sequence

FLAGS = {"-q": "quiet", "--quiet": "quiet", "-v": "verbose", "--verbose": "verbose"}
CHOICES = {"--fail-on": ("error", "warning", "info", "never"), "--format": ("text", "json")}
VALUES = {"--timeout", "--facts", "--root", "--python"}
REPEATED = {"--select", "--ignore"}


def parse_check(argv: Sequence[str]) -> object | None:
    """CheckOptions for `check …` in one of the hook's forms, else None (the full command line parses it)."""
    if not argv or argv[0] != "check":
        return None
    flags = {"quiet": False, "verbose": False}
    values: dict[str, str] = {}
    repeated: dict[str, list[str]] = {"--select": [], "--ignore": []}
    args = list(argv[1:])
    while args:
        word = args.pop(0)
        if word in FLAGS:
            flags[FLAGS[word]] = True
            continue
        name, equals, value = word.partition("=")
        if name not in CHOICES and name not in VALUES and name not in REPEATED:
            return None
        if not equals:
            if not args or args[0].startswith("-"):
                return None
            value = args.pop(0)
        if name in CHOICES and value not in CHOICES[name]:
            return None
        if name in REPEATED:
            repeated[name].append(value)
        else:
            values[name] = value  # repeated once-options: the last one counts, as in click
    timeout = None
    if "--timeout" in values:
        try:
            timeout = float(values["--timeout"])
        except ValueError:
            return None
    from tfdoctor.check_command import CheckOptions
    from tfdoctor.gather import GatherOptions
    from tfdoctor.usage import split_codes

    gather = GatherOptions(values.get("--facts"), values.get("--root"), values.get("--python"), timeout,
                           split_codes(repeated["--select"]), split_codes(repeated["--ignore"]))
    return CheckOptions(gather, values.get("--format", "text"), values.get("--fail-on"), flags["verbose"],
                        flags["quiet"])


def run(options: object) -> None:
    """Run `check` as the command line would, and leave with its exit code."""
    from tfdoctor.check_command import CheckOptions, run_check
    from tfdoctor.usage import leave, run_guarded, start_run

    assert isinstance(options, CheckOptions)

    start_run()
    if options.gather.python:  # a child interpreter: SIGTERM/SIGHUP/SIGQUIT must end it too (exit 128 + n)
        from tfdoctor.facts.bounded import guard_signals

        guard_signals()
    code = run_guarded(lambda: run_check(options))  # ^C: 130, as for the command line's commands
    # The interpreter's exit collects garbage through every object the run made (finalize_modules), with
    # the collector paused since the start, so every one is still in the youngest generations: ~6 ms of a
    # ~65 ms hook on a 2-CPU node, a tenth of it. Frozen, they are out of the collector's reach; the exit
    # still frees each by its reference count, flushes the streams and runs the atexit functions.
    gc.freeze()
    leave(code)
