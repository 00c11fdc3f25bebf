"""`tfdoctor lint PATH...`: the click command. Registered lazily in tfdoctor/cli.py's LAZY_COMMANDS."""

from __future__ import annotations

import click

from tfdoctor.usage import EXIT_FINDINGS, EXIT_INTERNAL, EXIT_OK, UsageError
from tfdoctor.usage import emit as _emit
from tfdoctor.usage import project_config as _config
from tfdoctor.usage import split_codes as _split_codes


@click.command()
@click.argument("paths", nargs=-1, metavar="PATH...")
@click.option("--select", multiple=True, metavar="CODES",
              help="Only these rules (comma-separated codes or prefixes, e.g. SRC1,SRC002).")
@click.option("--ignore", multiple=True, metavar="CODES", help="Skip these rules (codes or prefixes).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "sarif"]), default="text", show_default=True)
@click.option("--fail-on", type=click.Choice(["error", "warning", "info", "never"]), default=None,
              help="Exit 1 when a finding is at or above this level (default: error, or the config's).")
@click.option("--show-fixes", is_flag=True, help="Text format: print each finding's fix under it.")
@click.option("--list-rules", is_flag=True, help="List every registered lint rule and exit.")
def lint(paths: tuple[str, ...], select: tuple[str, ...], ignore: tuple[str, ...], fmt: str,
         fail_on: str | None, show_fixes: bool, list_rules: bool) -> None:
    """Statically check training scripts (files, or directories of *.py) for TensorFlow performance
    anti-patterns. Nothing is imported or run. Suppress one line with `# tfdoctor: noqa: SRC101`."""
    from tfdoctor.lint.files import MissingPath, python_files
    from tfdoctor.lint.rule import load_lint_rules
    from tfdoctor.lint.runner import lint_paths
    from tfdoctor.registry import select_checks

    registry = load_lint_rules()
    if list_rules:
        _emit("".join(f"{r.code:<9}{r.severity.label:<9}{r.name:<40}{r.summary}\n" for r in registry.rules))
        return
    if not paths:
        raise UsageError("lint needs at least one file or directory (e.g. tfdoctor lint train.py)")
    config = _config()
    selected_codes, ignored_codes = _split_codes(select), _split_codes(ignore)
    unknown = [c for c in (*selected_codes, *ignored_codes) if not any(r.code.startswith(c) for r in registry.rules)]
    if unknown:
        raise UsageError(f"no lint rule code starts with {', '.join(unknown)} (see tfdoctor lint --list-rules)")
    # The config's select/ignore name checks; only its entries for lint rules apply here.
    ignored = ignored_codes + tuple(c for c in config.ignore if c.startswith("SRC"))
    rules = select_checks(registry.rules, selected_codes, ignored)  # type: ignore[arg-type]
    try:
        files = list(python_files(paths))
    except MissingPath as exc:
        raise UsageError(str(exc)) from None
    report = lint_paths(files, rules, registry.errors)  # type: ignore[arg-type]
    if fmt == "json":
        from tfdoctor.lint.render_json import render_json

        _emit(render_json(report))
    elif fmt == "sarif":
        from tfdoctor.lint.render_sarif import render_sarif

        _emit(render_sarif(report))
    else:
        from tfdoctor.lint.render_text import render_summary, render_text

        _emit(render_text(report, show_fixes=show_fixes))
        _emit(render_summary(report), err=True)
    level = fail_on or config.fail_on
    if report.crashes and level != "never":
        raise SystemExit(EXIT_INTERNAL)
    worst = report.worst()
    from tfdoctor.model import Severity

    failed = level != "never" and worst is not None and worst >= Severity.parse(level)
    raise SystemExit(EXIT_FINDINGS if failed else EXIT_OK)
