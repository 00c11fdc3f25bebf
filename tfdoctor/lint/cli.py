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
@click.option("--include-tests", is_flag=True, default=None,
              help="Also lint test files found in directories (test_*.py, *_test.py, tests/).")
@click.option("--preview", is_flag=True, default=None, help="Also run the preview rules (see --list-rules).")
@click.option("--fix", "fix", is_flag=True, help="Apply the safe fixes in place, then report what is left.")
@click.option("--unsafe-fixes", is_flag=True, help="With --fix or --diff: apply the unsafe fixes too.")
@click.option("--diff", "diff", is_flag=True, help="Print the fixes as a unified diff; change nothing.")
@click.option("--target-tensorflow", metavar="RELEASE", default=None,
              help="The TensorFlow release the code runs on (e.g. 2.15), or 'installed' for the one installed "
                   "here: what tf.data does by itself there decides SRC102 and SRC103 (default: what the "
                   "project's requirement files pin, else not known).")
def lint(paths: tuple[str, ...], select: tuple[str, ...], ignore: tuple[str, ...], fmt: str,
         fail_on: str | None, show_fixes: bool, list_rules: bool, include_tests: bool | None,
         preview: bool | None, fix: bool, unsafe_fixes: bool, diff: bool, target_tensorflow: str | None) -> None:
    """Statically check training scripts and notebooks (files, or directories of *.py and *.ipynb) for
    TensorFlow performance anti-patterns. Nothing is imported or run. Suppress one line with
    `# tfdoctor: noqa: SRC101`."""
    from pathlib import Path

    from tfdoctor.lint.files import MissingPath, python_files
    from tfdoctor.lint.rule import RUNNER_CODES, load_lint_rules, select_lint_rules
    from tfdoctor.lint.runner import lint_paths
    from tfdoctor.lint.settings import load_lint_settings

    registry = load_lint_rules()
    if list_rules:
        from tfdoctor.lint.evidence import describe
        from tfdoctor.terminal import listing, wrap_width

        # Each rule's evidence, as declared in its registration (issue 39, item 1); the runner's own codes
        # (syntax, reading errors) need none.
        held = "(its info findings without evidence: preview) "
        rows = [(f"{r.code:<9}{r.severity.label:<9}{r.name:<40}",
                 f"{'(preview) ' if r.preview else held if r.quiet_unproven else ''}{r.summary}"
                 + ("" if r.code in RUNNER_CODES else f" {describe(r.evidence)}")) for r in registry.rules]
        _emit("".join(line + "\n" for line in listing(rows, wrap_width())), wrap=True)
        return
    if fix and diff:
        raise UsageError("--fix writes the fixes and --diff only shows them: choose one")
    if not paths:
        raise UsageError("lint needs at least one file or directory (e.g. tfdoctor lint train.py)")
    config = _config()
    from tfdoctor.config import ConfigError

    try:
        settings = load_lint_settings(config.source)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    include_tests = settings.include_tests if include_tests is None else include_tests
    preview = settings.preview if preview is None else preview
    from tfdoctor.lint.target import resolve

    try:
        target = (resolve(target_tensorflow, "--target-tensorflow") if target_tensorflow is not None
                  else resolve(settings.target_tensorflow, f"target-tensorflow in {config.source}"))
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if target_tensorflow is None and settings.target_tensorflow is None:
        from tfdoctor.lint.pins import ProjectPins

        # the releases the project pins (requirements.txt, pyproject.toml, ...): each file its nearest folder's
        target = ProjectPins(paths)
    selected_codes, ignored_codes = _split_codes(select), _split_codes(ignore)
    unknown = [c for c in (*selected_codes, *ignored_codes) if not any(r.code.startswith(c) for r in registry.rules)]
    if unknown:
        raise UsageError(f"no lint rule code starts with {', '.join(unknown)} (see tfdoctor lint --list-rules)")
    # The config's select/ignore name checks; only its entries for lint rules apply here.
    ignored = ignored_codes + tuple(c for c in config.ignore if c.startswith("SRC"))
    rules = select_lint_rules(registry.rules, selected_codes, ignored, preview=bool(preview))
    try:
        files = list(python_files(paths, include_tests=bool(include_tests)))
    except MissingPath as exc:
        raise UsageError(str(exc)) from None
    # Files found by walking a directory are parsed only when a selected rule can fire on them; a file named
    # on the command line always is, so its syntax error is reported (pre-commit names files).
    named = {Path(p) for p in paths}
    walked = [f for f in files if f not in named]
    report = lint_paths(files, rules, registry.errors, walked=walked, target=target)
    if fix or diff:
        report = _apply_fixes(report, files, rules, registry.errors, write=fix, unsafe=unsafe_fixes, walked=walked,
                              target=target)
        if diff:
            raise SystemExit(EXIT_FINDINGS if report else EXIT_OK)
    if fmt == "json":
        from tfdoctor.lint.render_json import render_json

        _emit(render_json(report), kind="json")
    elif fmt == "sarif":
        from tfdoctor.lint.render_sarif import render_sarif

        _emit(render_sarif(report), kind="json")
    else:
        from tfdoctor.lint.render_text import render_summary, render_text

        _emit(render_text(report, show_fixes=show_fixes), wrap=True)
        _emit(render_summary(report), err=True, wrap=True)  # fitted to a terminal; a pipe gets one line
    level = fail_on or config.fail_on
    if report.crashes and level != "never":
        raise SystemExit(EXIT_INTERNAL)
    worst = report.worst()
    from tfdoctor.model import Severity

    failed = level != "never" and worst is not None and worst >= Severity.parse(level)
    raise SystemExit(EXIT_FINDINGS if failed else EXIT_OK)


def _apply_fixes(report, files, rules, plugin_errors, write: bool, unsafe: bool, walked=(), target=None):
    """--fix: write the fixes and return the report of a second lint (what is left); --diff: print the
    diffs and return whether there was any (the exit code says so, as ruff's does)."""
    from tfdoctor.lint.fixing import FixNotWritten, plan_fixes, write_fix
    from tfdoctor.lint.runner import display_path, lint_paths

    plans, problems = plan_fixes(report.findings, unsafe, {display_path(p): p for p in files}, rules, target)
    for problem in problems:
        _emit(f"tfdoctor lint: {problem}\n", err=True)
    if not write:
        _emit("".join(plan.diff(display_path(plan.path)) for plan in plans), kind="exact")
        count = sum(len(plan.fixed) for plan in plans)
        _emit(f"tfdoctor lint: {count} fix(es) in {len(plans)} file(s) would be applied\n", err=True)
        return bool(plans)
    from tfdoctor.facts.bounded import InputFileError

    written = []
    for plan in plans:
        try:
            write_fix(plan)
        except (OSError, InputFileError, FixNotWritten) as exc:  # a link; changed, removed or unwritable
            _emit(f"tfdoctor lint: {display_path(plan.path)}: not fixed: {exc}\n", err=True)
            continue
        written.append(plan)
    plans = written
    count = sum(len(plan.fixed) for plan in plans)
    _emit(f"tfdoctor lint: fixed {count} finding(s) in {len(plans)} file(s)\n", err=True)
    return lint_paths(files, rules, plugin_errors, walked=walked, target=target) if plans else report
