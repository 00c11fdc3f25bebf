"""`tfdoctor check` itself: options in, report out, exit code. No click here.

The command line (tfdoctor/cli.py) parses `check`'s options with click and calls `run_check`; the pre-job
hook's fast path (tfdoctor/hook.py) parses the hook's own forms without importing click and calls the
same function. Both therefore behave the same, byte for byte.
"""

from __future__ import annotations

import sys

from tfdoctor.gather import GatherOptions
from tfdoctor.records import record
from tfdoctor.usage import EXIT_FINDINGS, EXIT_INTERNAL, EXIT_OK, emit

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import NoReturn


@record(frozen=True)
class CheckOptions:
    """`check`'s options as parsed (by click or by the hook's parser)."""

    gather: GatherOptions
    fmt: str = "text"
    fail_on: str | None = None
    verbose: bool = False
    quiet: bool = False


def run_check(options: CheckOptions) -> NoReturn:
    from tfdoctor.engine import should_fail
    from tfdoctor.gather import build_report
    from tfdoctor.usage import project_config

    config = project_config()
    report = build_report(options.gather, config)
    level = options.fail_on or config.fail_on
    if options.fmt == "json":
        from tfdoctor.report.json_report import render_json

        emit(render_json(report), kind="json")
    elif options.quiet:
        from tfdoctor.model import Severity
        from tfdoctor.report.text import render_quiet

        host = multi_node_host(report) if report.findings() or report.crashed() else None
        emit(render_quiet(report, None if level == "never" else Severity.parse(level), host))
        emit(abandoned_note(), err=True)
    else:
        from tfdoctor.report.text import render_text
        from tfdoctor.terminal import is_terminal, wrap_width

        color = None if is_terminal(sys.stdout) else False
        emit(render_text(report, verbose=options.verbose, color=color, width=wrap_width()), kind="styled")
    if report.crashed() and level != "never":
        raise SystemExit(EXIT_INTERNAL)
    raise SystemExit(EXIT_FINDINGS if should_fail(report, level) else EXIT_OK)


def multi_node_host(report: object) -> str | None:
    """The host name the hook's lines carry when the job spans several nodes (their outputs land in one
    file): SLURM_NNODES or SLURM_JOB_NUM_NODES above 1, or an MPI world on several hosts. None otherwise,
    and a single-node job's lines stay as they are."""
    from tfdoctor.derive.nodes import spans_several_nodes

    facts = report.facts  # type: ignore[attr-defined]

    def env(name: str) -> str | None:
        try:
            return facts.env(name)
        except Exception:  # env.variables unknown or malformed (NotChecked): no launcher to read
            return None

    if not spans_several_nodes(env):
        return None
    host = facts.meta.get("hostname")
    return host if isinstance(host, str) and host else None


def abandoned_note() -> str:
    """The hook must not pass silently for want of time: say which probes ran out of it (on stderr)."""
    from tfdoctor.usage import abandoned_since_start

    abandoned = abandoned_since_start()
    if not abandoned:
        return ""
    return (f"tfdoctor: not checked: probe(s) {', '.join(sorted(abandoned))} did not finish within the "
            "--timeout budget; raise --timeout to check them\n")
