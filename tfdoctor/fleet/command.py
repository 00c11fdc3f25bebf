"""`tfdoctor compare FILES...`: the odd node out, from facts files collected on every node."""

from __future__ import annotations

import sys

import click

from tfdoctor.usage import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, UsageError, check_output, write_section_page
from tfdoctor.usage import emit as _emit
from tfdoctor.usage import split_codes as _split_codes


@click.command()
@click.argument("files", nargs=-1, metavar="FILES...")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option("--check", "run_checks", is_flag=True,
              help="Also run every check on each file and add one summary of the findings.")
@click.option("--fail-on", type=click.Choice(["error", "warning", "info", "never"]), default="error",
              show_default=True, help="With --check: exit 1 when a node has a finding at or above this level.")
@click.option("--select", multiple=True, metavar="CODES", help="With --check: only these checks.")
@click.option("--ignore", multiple=True, metavar="CODES", help="With --check: skip these checks.")
@click.option("--html", "html_path", metavar="FILE",
              help="Also write the comparison as a self-contained HTML page (the fleet section of tfdoctor report).")
@click.option("--force", is_flag=True, help="Overwrite the --html file.")
def compare(files: tuple[str, ...], fmt: str, run_checks: bool, fail_on: str, select: tuple[str, ...],
            ignore: tuple[str, ...], html_path: str | None = None, force: bool = False) -> None:
    """Compare facts files from many nodes (tfdoctor collect -o facts/%h.json on each): for every fact
    that differs, which nodes hold which value, and which nodes are off the majority.

    Exit codes: 0 every node agrees (and, with --check, no finding at or above --fail-on); 1 some node
    differs, a file could not be read, or --check found something; 2 no readable file."""
    from tfdoctor.fleet.compare import compare as compare_nodes
    from tfdoctor.fleet.compare import load_nodes
    from tfdoctor.fleet.render import render_json, render_table
    from tfdoctor.model import Severity

    if not files:
        raise UsageError("compare needs facts files (from tfdoctor collect), e.g. tfdoctor compare facts/*.json")
    check_output(html_path, force)
    nodes, unreadable = load_nodes(files)
    comparison = compare_nodes(nodes, unreadable)
    summary = None
    if run_checks:
        from tfdoctor.fleet.checks_summary import summarize_checks
        from tfdoctor.registry import load_registry, select_checks

        registry = load_registry()
        summary = summarize_checks(nodes, select_checks(registry.checks, _split_codes(select), _split_codes(ignore)))
    if fmt == "json":
        _emit(render_json(comparison, summary), kind="json")
    else:
        _emit(render_table(comparison, summary, color=None if sys.stdout.isatty() else False), kind="styled")
    if html_path is not None and nodes:
        write_section_page(html_path, force, "fleet", comparison)
    if not nodes:
        for bad in unreadable:
            _emit(f"tfdoctor: {bad.source}: {bad.error}\n", err=True)
        raise SystemExit(EXIT_USAGE)
    threshold = None if fail_on == "never" else Severity.parse(fail_on)
    failed = bool(comparison.differences or unreadable or (summary and summary.failing_nodes(threshold)))
    raise SystemExit(EXIT_FINDINGS if failed else EXIT_OK)
