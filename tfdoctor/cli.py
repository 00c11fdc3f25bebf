"""The command line: parse options, call the engine, pick a renderer. Nothing else lives here.

Exit codes and the usage error live in `tfdoctor/usage.py`, below every command (0 nothing at or
above --fail-on, 1 something was, 2 usage error, 3 tfdoctor failed; also in the README).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from tfdoctor import __version__
from tfdoctor.gather import GatherOptions, gather_options
from tfdoctor.gather import build_report as _build_report
from tfdoctor.gather import deadline as _deadline
from tfdoctor.gather import started_machine as _started_machine
from tfdoctor.usage import EXIT_FINDINGS, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, UsageError, install_section_page_writer
from tfdoctor.usage import emit as _emit
from tfdoctor.usage import project_config as _config
from tfdoctor.usage import split_codes as _split_codes

# Commands beyond the core live in their own modules and are imported only when invoked, so that
# `tfdoctor check` (the pre-job hook) pays for none of them. One line per command: "name": "module:attr".
LAZY_COMMANDS: dict[str, str] = {
    "compare": "tfdoctor.fleet.command:compare",
    "lint": "tfdoctor.lint.cli:lint",
    "tune": "tfdoctor.tune.cli:tune",
    "profile": "tfdoctor.profile.cli:profile",
    "report": "tfdoctor.report.html.command:report",
}


def _write_section_page(path: str, force: bool, section: str, *inputs: Any, **options: Any) -> None:
    """The report's page writer for the commands below it (tfdoctor.usage.write_section_page), imported
    only when one of them writes --html."""
    from tfdoctor.report.html.command import write_named_section

    write_named_section(path, force, section, *inputs, **options)


install_section_page_writer(_write_section_page)


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *LAZY_COMMANDS])

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in LAZY_COMMANDS:
            import importlib

            module, _, attr = LAZY_COMMANDS[name].partition(":")
            return getattr(importlib.import_module(module), attr)
        return super().get_command(ctx, name)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="tfdoctor")
def cli() -> None:
    """Find what in this machine and environment will make TensorFlow slow or broken — before the job
    starts — and write a script that fixes what can be fixed.

    Exit codes: 0 nothing at or above --fail-on; 1 something was; 2 usage error; 3 tfdoctor failed."""


@cli.command()
@gather_options
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--fail-on", type=click.Choice(["error", "warning", "info", "never"]), default=None,
              help="Exit 1 when a finding is at or above this level (default: error, or the config's).")
@click.option("-v", "--verbose", is_flag=True, help="Also list passed, not-applicable and not-checked checks.")
@click.option("-q", "--quiet", is_flag=True,
              help="Pre-job hook form: nothing when healthy, one line per finding at or above --fail-on.")
@click.option("--list-checks", is_flag=True, help="List every registered check and exit.")
def check(select: tuple[str, ...], ignore: tuple[str, ...], facts_file: str | None, root: str | None,
          python: str | None, timeout: float | None, fmt: str, fail_on: str | None, verbose: bool,
          quiet: bool, list_checks: bool) -> None:
    """Check this machine (or recorded facts) and report findings."""
    from tfdoctor.check_command import CheckOptions, run_check

    if list_checks:
        _emit(_list_checks(), wrap=True)  # laid out for the terminal by listing(); wrap: a plugin's long error
        return
    gather = GatherOptions(facts_file, root, python, timeout, _split_codes(select), _split_codes(ignore))
    run_check(CheckOptions(gather, fmt, fail_on, verbose, quiet))


def _list_checks() -> str:
    from tfdoctor.registry import load_registry
    from tfdoctor.terminal import listing, wrap_width

    registry = load_registry()
    lines = listing([(f"{s.code:<9}{s.severity.label:<9}{s.name:<44}", s.summary) for s in registry.checks],
                    wrap_width())
    lines += [f"plugin error: {e}" for e in registry.errors]
    return "\n".join(lines) + "\n"


@cli.command()
@click.argument("code", required=False)
@click.option("--all", "all_checks", is_flag=True, help="Document every check, as Markdown (docs/checks.md).")
@click.option("--log", "log_path", metavar="FILE",
              help="Explain the known messages in a log (- for standard input; the last 8 MiB are read) and "
                   "run the checks that diagnose their cause.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="With --log: the report's form.")
@click.option("--facts", "facts_file", metavar="FILE", help="With --log: judge recorded facts instead of this machine.")
@click.option("--root", metavar="DIR", help="With --log: read file-based facts under DIR instead of /.")
@click.option("--python", metavar="PATH", help="With --log: inspect this interpreter's Python environment.")
@click.option("--timeout", type=float, metavar="S", help="With --log: total seconds for gathering facts.")
def explain(code: str | None, all_checks: bool, log_path: str | None = None, fmt: str = "text",
            facts_file: str | None = None, root: str | None = None, python: str | None = None,
            timeout: float | None = None) -> None:
    """Show the documentation of one check (what, why, example, fix, fix safety), or explain a log.

    With --log: exit 1 when a recognised message points to an error finding on this machine (or in the
    --facts), 0 otherwise, 2 when the log cannot be read."""
    if log_path is not None:
        if code or all_checks:
            raise UsageError("--log explains a log: give it without a check code or --all")
        _explain_log(log_path, fmt, GatherOptions(facts_file, root, python, timeout, (), ()))
        return
    if fmt != "text" or facts_file or root or python or timeout is not None:
        raise UsageError("--format, --facts, --root, --python and --timeout go with --log FILE")
    from tfdoctor.registry import load_registry

    registry = load_registry()
    if all_checks:
        from tfdoctor.report.check_docs import render_check_docs

        _emit(render_check_docs(registry.checks), kind="exact")
        return
    if not code:
        raise UsageError("name a check code (tfdoctor explain THR101), or use --all")
    spec: Any = registry.check_by_code(code)
    if spec is None:  # lint rules share the code space and the docstring format
        from tfdoctor.lint.rule import load_lint_rules

        spec = load_lint_rules().by_code(code)
    if spec is None:
        raise UsageError(f"no check has the code {code!r} (see tfdoctor check --list-checks)")
    from tfdoctor.report.check_docs import knowledge_lines

    cited = "".join(f"\n{line}\n" for line in knowledge_lines(spec.doc))
    _emit(f"{spec.code} {spec.name} ({spec.severity.label})\n\n{spec.doc}\n{cited}", wrap=True)


def _explain_log(log_path: str, fmt: str, opts: GatherOptions) -> None:
    """Read the log, find the known messages, run only the checks they relate to, and say what it means."""
    from tfdoctor.logs.explanation import ERROR, explain_sightings
    from tfdoctor.logs.messages import find_messages
    from tfdoctor.logs.read import LogReadError, read_log

    try:
        log = read_log(log_path)
    except LogReadError as exc:
        raise UsageError(str(exc)) from None
    sightings = find_messages(log.text)
    codes = tuple(dict.fromkeys(code for s in sightings for code in s.message.checks))
    results: list[Any] = []
    facts_meta = None
    if codes:
        report = _build_report(GatherOptions(opts.facts_file, opts.root, opts.python, opts.timeout, codes, ()),
                               _config())
        results, facts_meta = report.results, report.facts.meta
    elif opts.facts_file:  # nothing to check, but a bad --facts is still a usage error
        from tfdoctor.facts import Facts, FactsFileError

        try:
            facts_meta = Facts.load(opts.facts_file).meta
        except FactsFileError as exc:
            raise UsageError(str(exc)) from None
    explained = explain_sightings(sightings, results)
    from tfdoctor.logs.unrecognised import unrecognised

    unknown = unrecognised(log.text, (n for s in sightings for n in s.lines))
    if fmt == "json":
        from tfdoctor.logs.render import render_json

        _emit(render_json(log, explained, facts_meta, unknown), kind="json")
    else:
        from tfdoctor.logs.render import render_text

        _emit(render_text(log, explained, checked=bool(codes), unknown=unknown), wrap=True)
    if any(item.crashed for item in explained):
        raise SystemExit(EXIT_INTERNAL)
    raise SystemExit(EXIT_FINDINGS if any(item.verdict == ERROR for item in explained) else EXIT_OK)


@cli.command()
@click.option("-o", "--output", metavar="FILE",
              help="Write the facts here instead of standard output (- is standard output); %h host name, %N node "
                   "name, %j job id.")
@click.option("--by-host", metavar="DIR", help="Write the facts to DIR/<node name>.json (DIR is created).")
@click.option("--force", is_flag=True, help="Overwrite FILE if it exists.")
@click.option("--root", metavar="DIR", help="Read every file-based fact under DIR instead of /.")
@click.option("--python", metavar="PATH", help="Inspect the Python environment of this interpreter.")
@click.option("--timeout", type=float, metavar="S", help="Total seconds for gathering facts.")
def collect(output: str | None, by_host: str | None, force: bool, root: str | None, python: str | None,
            timeout: float | None) -> None:
    """Write the machine's facts as JSON (secrets redacted), for bug reports and for --facts replay."""
    from tfdoctor.engine import gather_facts
    from tfdoctor.registry import load_registry

    if output and by_host:
        raise UsageError("give -o FILE or --by-host DIR, not both")
    if by_host:
        try:
            Path(by_host).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"--by-host {by_host}: cannot create the folder: {exc.strerror or exc}") from None
        output = str(Path(by_host)).replace("%", "%%") + "/%N.json"
    config = _config()
    opts = GatherOptions(None, root, python, timeout, (), ())
    probed = _started_machine(opts, config)  # before the registry: --python's interpreter starts meanwhile
    facts = gather_facts(load_registry().probes, probed, deadline=_deadline(opts, config))
    text = facts.dumps() + "\n"  # redacted: Facts.dumps is the one way facts are written
    if output:
        from tfdoctor.fixes.write import WriteError, write_file
        from tfdoctor.fleet.output_name import OutputNameError, expand_output

        try:
            target = expand_output(output, str(facts.meta.get("hostname", "host")), os.environ)
            write_file(target, text, force=force)
        except (WriteError, OutputNameError) as exc:
            raise UsageError(str(exc)) from None
        _emit(f"tfdoctor: facts written to {target}\n", err=True)
    else:
        _emit(text, kind="json")


@cli.command()
@gather_options
@click.option("--write", "write_path", metavar="FILE",
              help="Write the environment fixes as a script (- for standard output).")
@click.option("--print", "print_script", is_flag=True,
              help='Print the script, for eval "$(tfdoctor fix --print)".')
@click.option("--write-python", metavar="FILE", help="Write in-process fixes as a Python file.")
@click.option("--write-launcher", metavar="FILE",
              help="Write a launcher that binds the command (each local rank) to its GPU's NUMA node.")
@click.option("--format", "fmt", type=click.Choice(["sh", "fish", "taskprolog"]), default=None,
              help="Script language (default sh); taskprolog: `export NAME=value` lines for a Slurm TaskProlog.")
@click.option("--shell", type=click.Choice(["sh", "fish"]), default=None, help="Same as --format (sh or fish).")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply fixes that may change numerics or speed.")
@click.option("--fail-on", type=click.Choice(["error", "warning", "info", "never"]), default=None,
              help="Exit 1 when a finding at or above this level is left unfixed (by what this command wrote or "
                   "printed); the script then ends with `false`, so eval \"$(tfdoctor fix --print …)\" fails too. "
                   "Default: never.")
@click.option("--force", is_flag=True, help="Overwrite existing files.")
@click.option("-q", "--quiet", is_flag=True,
              help="Batch-script form: standard error says only what needs attention (administrator steps and "
                   "fixes left out for warnings and errors); an info finding's fix left out on purpose, and the "
                   "'written to' line, are not repeated at every job start.")
@click.option("--validate", is_flag=True,
              help="Measure each fix with the micro-profile (interleaved runs); drop fixes measured slower.")
@click.option("--validate-workload", type=click.Choice(["cnn", "matmul", "pyfunc"]), default="cnn",
              show_default=True, help="The micro-profile workload --validate measures with (matmul shows "
              "thread-count changes best).")
def fix(select: tuple[str, ...], ignore: tuple[str, ...], facts_file: str | None, root: str | None,
        python: str | None, timeout: float | None, write_path: str | None, print_script: bool,
        write_python: str | None, fmt: str | None, shell: str | None, unsafe_fixes: bool, force: bool,
        write_launcher: str | None = None, validate: bool = False, validate_workload: str = "cnn",
        quiet: bool = False, fail_on: str | None = None) -> None:
    """Write (or print) a script with the fixes for what `check` finds; admin steps are shown."""
    from tfdoctor.fixes.plan import plan_fixes
    from tfdoctor.fixes.write import WriteError, write_file

    for option, value in (("--write", write_path), ("--write-python", write_python),
                          ("--write-launcher", write_launcher)):
        if value is not None and not value.strip():
            raise UsageError(f"{option} needs a file name")
    if fmt and shell and fmt != shell:
        raise UsageError(f"--format {fmt} and --shell {shell} disagree; give one of them")
    config = _config()
    opts = GatherOptions(facts_file, root, python, timeout, _split_codes(select), _split_codes(ignore))
    report = _build_report(opts, config)
    plan = plan_fixes(report.findings(), unsafe=unsafe_fixes)
    if validate:
        from tfdoctor.profile.validate import validate_fixes

        plan = validate_fixes(plan, live=not (facts_file or root), workload=validate_workload)
    header = f"tfdoctor {__version__} fixes for {report.facts.meta.get('hostname', 'this host')}"
    # A TaskProlog prepend needs the current value: the task's environment is the prolog's own on a live
    # run, the recorded one when replaying --facts.
    recorded = report.facts.peek("env.variables") if facts_file else None
    if isinstance(recorded, dict):  # a hand-edited file may hold numbers or lists: only strings are values
        recorded = {name: value for name, value in recorded.items() if isinstance(value, str)}
    language = fmt or shell or "sh"
    target = write_path if write_path and write_path != "-" else None
    script = _render_env(plan, header, language, recorded if isinstance(recorded, dict) else os.environ, target)
    from tfdoctor.fixes.outcome import failing_line, python_notes, unfixed

    left = unfixed(report.findings(), plan, fail_on, wrote_python=bool(write_python))
    if left and language != "taskprolog":
        script += failing_line(left, fail_on or "never")
    try:
        if write_path:
            write_file(write_path, script, force=force)
            if not quiet:
                from tfdoctor.fixes.render_sh import source_command

                how = f"; apply it: {source_command(write_path, language)}" if language != "taskprolog" else ""
                _emit(f"tfdoctor: {len(plan.env)} environment change(s) written to {write_path}{how}\n", err=True)
        if write_python:
            from tfdoctor.fixes.render_python import render_python

            write_file(write_python, render_python(plan, header), force=force)
            if not quiet:
                _emit(f"tfdoctor: {len(plan.python)} in-process fix(es) written to {write_python}\n", err=True)
        if write_launcher:
            from tfdoctor.fixes.render_launcher import write_launcher_file

            _emit(write_launcher_file(report.facts, write_launcher, force), err=True)
    except WriteError as exc:
        raise UsageError(str(exc)) from None
    if print_script or (not write_path and not write_python and not write_launcher):
        _emit(script, kind="exact")
    from tfdoctor.terminal import fit, safe, wrap_width

    # The notes' indented lines are an administrator's commands: broken where sh joins them again.
    notes = safe(_plan_notes(plan, quiet) + python_notes(plan, bool(write_python), quiet))
    _emit(fit(notes, wrap_width(err=True), commands_from=4), err=True)
    if left:
        _emit(f"tfdoctor: {len(left)} finding(s) at or above --fail-on {fail_on} left unfixed: "
              f"{', '.join(sorted({f.code for f in left}))}\n", err=True, wrap=True)
        raise SystemExit(EXIT_FINDINGS)


def _render_env(plan: Any, header: str, shell: str, environ: Any, target: str | None = None) -> str:
    if shell == "taskprolog":
        from tfdoctor.fixes.render_taskprolog import render_taskprolog

        rendered = render_taskprolog(plan, environ)
        _emit("".join(note + "\n" for note in rendered.notes), err=True)
        return rendered.text
    if shell == "fish":
        from tfdoctor.fixes.render_fish import render_fish

        return render_fish(plan, header, target)
    from tfdoctor.fixes.render_sh import render_sh

    return render_sh(plan, header, target)


def _plan_notes(plan: Any, quiet: bool = False) -> str:
    """Admin steps and skipped fixes go to stderr, so `eval "$(tfdoctor fix --print)"` never runs them."""
    return "".join(line + "\n" for line in plan.notes(quiet))


def main(argv: list[str] | None = None) -> None:
    from tfdoctor.usage import leave, run_guarded, start_run

    start_run()
    from tfdoctor.facts.bounded import guard_signals

    guard_signals()  # SIGTERM/SIGHUP/SIGQUIT leave like ^C: children's groups ended, exit 128 + n
    leave(run_guarded(lambda: _click_main(argv)))


def _click_main(argv: list[str] | None) -> None:
    """click's own errors as tfdoctor's: a usage error exits 2, an abort 3, ^C 130 (the rest: run_guarded)."""
    try:
        returned = cli.main(args=argv, prog_name="tfdoctor", standalone_mode=False)
    except click.exceptions.Abort as exc:
        if isinstance(exc.__cause__, KeyboardInterrupt):
            raise KeyboardInterrupt from None  # ^C: exit 130 (run_guarded), as documented
        _emit("tfdoctor: aborted\n", err=True)
        raise SystemExit(EXIT_INTERNAL) from None
    except click.ClickException as exc:
        import io

        shown = io.StringIO()  # click's message quotes the value given: shown through the one output path
        exc.show(file=shown)
        _emit(shown.getvalue(), err=True)
        raise SystemExit(EXIT_USAGE if isinstance(exc, click.UsageError) else EXIT_INTERNAL) from None
    raise SystemExit(returned if isinstance(returned, int) else EXIT_OK)
