"""The `tfdoctor` command's entry point (and `python -m tfdoctor`'s): the command line, imported with the
cyclic garbage collector paused, then frozen.

Importing click and the command line makes tens of thousands of long-lived objects and no garbage. The
collector would walk them over and over while they are made, and once more when the interpreter exits;
gc.freeze() puts them out of its reach. The pre-job hook takes about a tenth less on a 2-CPU node
(benchmarks/check_speed_ab.py). The collector is on again before any command runs: a long `tune` or
`lint` collects its garbage as usual. Only this entry point does it: code that imports tfdoctor.cli
(tests, tools embedding it) keeps its collector as it set it.

The pre-job hook's own forms of `check` do not import the command line at all: tfdoctor/hook.py parses
them without click and runs the function the click command runs, with the collector paused throughout.
"""

from __future__ import annotations

import gc
from collections.abc import Callable


def load_cli() -> Callable[..., None]:
    """tfdoctor.cli.main, imported with the collector off; everything alive then is frozen."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        from tfdoctor.cli import main
    finally:
        gc.freeze()
        if enabled:
            gc.enable()
    return main


def main() -> None:
    import sys

    # The pre-job hook's forms of `check` skip click (tfdoctor/hook.py); every other command line goes
    # through it. The collector stays paused for the hook's short run: it makes no garbage worth a walk.
    from tfdoctor.hook import parse_check

    options = parse_check(sys.argv[1:])
    if options is not None:
        from tfdoctor.hook import run

        gc.disable()
        run(options)
    load_cli()()
