"""`tfdoctor report -o report.html`: one self-contained page from a check, a profile, a tune and a fleet."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from tfdoctor.gather import gather_options
from tfdoctor.usage import EXIT_OK, UsageError, check_output

if TYPE_CHECKING:
    from tfdoctor.report.html.page import Section


@click.command()
@click.option("-o", "--output", metavar="FILE", required=True, help="The HTML file to write (- for standard output).")
@click.option("--force", is_flag=True, help="Overwrite FILE if it exists.")
@click.option("--profile", "profiles", multiple=True, metavar="FILE",
              help="JSON of `tfdoctor profile --format json` or of `profile --compare … --format json` (repeatable).")
@click.option("--tune", "tune_file", metavar="FILE", help="A `tfdoctor tune` results file (JSON lines).")
@click.option("--compare", "compare_files", multiple=True, metavar="FACTS",
              help="Facts files of a fleet (tfdoctor collect on each node); more may follow as arguments.")
@click.option("--no-check", is_flag=True, help="Leave out the check section (no probing of this machine).")
@click.argument("more_compare", nargs=-1, metavar="[FACTS...]")
@gather_options
def report(output: str, force: bool, profiles: tuple[str, ...], tune_file: str | None,
           compare_files: tuple[str, ...], no_check: bool, more_compare: tuple[str, ...], **gather: Any) -> None:
    """Write one self-contained HTML page (no network needed to view it; secrets redacted as in
    `tfdoctor collect`): the check of this machine (or of --facts FILE), and the profile, tune and fleet
    sections for the files given.

    \b
    tfdoctor report -o report.html
    tfdoctor report -o report.html --facts facts.json --profile profile.json --tune tune.jsonl
    tfdoctor report -o fleet.html --no-check --compare facts/*.json

    Exit codes: 0 written; 2 usage error (a bad or unreadable input, FILE exists without --force, the
    plotting extra missing); 3 tfdoctor failed."""
    from tfdoctor.report.html.build import ReportInputError, ReportInputs, build_report_page, page_host

    if more_compare and not compare_files:
        raise UsageError(f"unexpected argument {more_compare[0]!r}: facts files of a fleet follow --compare")
    check_output(output, force, "-o")  # before any probing
    inputs = ReportInputs(
        check=None if no_check else _check_report(gather),
        profiles=tuple(read_json_file(p, "--profile") for p in profiles),
        tune=(tune_file,) if tune_file else (),
        compare=(*compare_files, *more_compare),
    )
    try:
        html = build_report_page(inputs, title=f"tfdoctor report — {page_host(inputs, socket.gethostname())}",
                                 subtitle=time.strftime("%Y-%m-%d %H:%M %Z"))
    except ReportInputError as exc:
        raise UsageError(str(exc)) from None
    write_page(output, html, force)
    raise SystemExit(EXIT_OK)


def _check_report(gather: dict[str, Any]) -> Any:
    """The same Report `tfdoctor check` builds, with the same options and configuration."""
    from tfdoctor.gather import GatherOptions, build_report
    from tfdoctor.usage import project_config, split_codes

    opts = GatherOptions(gather["facts_file"], gather["root"], gather["python"], gather["timeout"],
                         split_codes(gather["select"]), split_codes(gather["ignore"]))
    return build_report(opts, project_config())


def write_named_section(path: str, force: bool, section: str, *inputs: Any, **options: Any) -> None:
    """The writer behind tfdoctor.usage.write_section_page (tfdoctor.cli installs it): `tune`, `compare`
    and `profile` sit below the report, so they name their section and hand over its inputs."""
    build: Callable[..., Section]
    if section == "tune":
        from tfdoctor.report.html.tune_section import tune_section

        build, title = tune_section, "tfdoctor tune"
    elif section == "fleet":
        from tfdoctor.report.html.fleet_section import fleet_section

        build, title = fleet_section, "tfdoctor compare"
    elif section == "profile":
        from tfdoctor.report.html.profile_section import profile_section

        build, title = profile_section, "tfdoctor profile"
    else:
        raise ValueError(f"no HTML section named {section!r} (tune, fleet or profile)")
    write_section_page(path, force, lambda: build(*inputs, **options), title)


def write_section_page(path: str, force: bool, build: Callable[[], Section], title: str) -> None:
    """One section alone as a page: what `profile`, `compare` and `tune` write with --html FILE."""
    from tfdoctor.report.html.build import ReportInputError, section_page
    from tfdoctor.report.html.plots import PlottingUnavailable

    try:
        html = section_page(build(), title, time.strftime("%Y-%m-%d %H:%M %Z"))
    except (ReportInputError, PlottingUnavailable) as exc:
        raise UsageError(str(exc)) from None
    write_page(path, html, force)


def write_page(output: str, html: str, force: bool) -> None:

    from tfdoctor.fixes.write import WriteError, write_file

    if output == "-":
        from tfdoctor.terminal import write

        write(html, kind="exact")  # the page escaped every value already
        return
    if not output:
        raise UsageError("-o needs a file name (or - for standard output)")
    try:
        write_file(output, html, force=force)
    except WriteError as exc:
        raise UsageError(str(exc)) from None
    from tfdoctor.usage import emit

    emit(f"tfdoctor: report written to {output}\n", err=True)


PROFILE_JSON_LIMIT = 64 * 1024 * 1024  # a profile's JSON is kilobytes; a larger file is not one


def read_json_file(path: str, what: str) -> Any:
    from tfdoctor.facts.bounded import JSON_DEPTH_LIMIT, InputFileError, json_too_deep, read_input_file

    try:
        raw = read_input_file(path, PROFILE_JSON_LIMIT, what)
        data = json.loads(raw.decode("utf-8"))
    except InputFileError as exc:
        raise UsageError(str(exc)) from None
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise UsageError(f"{what} {path}: not JSON") from None
    if json_too_deep(data):
        raise UsageError(f"{what} {path}: values nested more than {JSON_DEPTH_LIMIT} levels deep")
    return data
