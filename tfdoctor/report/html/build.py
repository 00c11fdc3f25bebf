"""From the inputs the user named to the page: each input read, checked and turned into its section."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tfdoctor.report.html.page import Section, render_page
from tfdoctor.report.html.plots import PlottingUnavailable, plotly_bundle


class ReportInputError(Exception):
    """An input file is missing, unreadable or not what its option says: a usage error (exit 2)."""


@dataclass(frozen=True)
class ReportInputs:
    """What a report page is built from: a check report, profiles, tune results and facts files."""

    check: Any = None  # the engine's Report of this machine or of --facts; None: no check section
    profiles: tuple[Mapping[str, Any], ...] = ()  # documents of `profile --format json` / `--compare`
    tune: tuple[str, ...] = ()  # results files (one section each; normally one)
    compare: tuple[str, ...] = ()  # facts files of a fleet


def _profile(documents: tuple[Mapping[str, Any], ...]) -> Section:
    from tfdoctor.report.html.profile_section import is_profile, is_verdict, profile_section

    for document in documents:
        if not isinstance(document, Mapping) or not (is_profile(document) or is_verdict(document)):
            raise ReportInputError("a --profile file must hold the JSON of `tfdoctor profile --format json` "
                                   "or of `tfdoctor profile --compare A B --format json`")
    return profile_section(documents)


def _tune(path: str) -> Section:
    from tfdoctor.report.html.tune_section import tune_section
    from tfdoctor.tune.results import ResultsError, load_results, load_summary
    from tfdoctor.tune.space import Space

    try:
        header, records = load_results(path)
        summary = load_summary(path)
        Space.from_json(header["space"])
    except ResultsError as exc:
        raise ReportInputError(str(exc)) from None
    except (KeyError, TypeError, ValueError, AttributeError):
        raise ReportInputError(f"{path}: the header line is incomplete: not a tfdoctor tune results file") from None
    records, source, summary, pending = _shared_records(header, records, path, summary)
    return tune_section(header, records, source, summary=summary, pending=pending)


def _shared_records(header: Mapping[str, Any], records: list[Any], path: str, summary: Any = None,
                    ) -> tuple[list[Any], str, Any, str | None]:
    """A worker's file of a shared tune: one study, one conclusion, whichever worker's file is read. The study's
    trials (every worker's, the odd nodes' left out) with the verdict its writer recorded in the study and the
    confirmation and verification runs it rests on; what this file's worker measured is a detail of the
    source line. Before the verdict is written (the writer still running, or killed), no verdict is drawn from
    this file's partial runs: `pending` says so. The study unreadable: the file's records and why.
    (records, source, summary, pending)."""
    from tfdoctor.tune.results import ResultsError, check_owner
    from tfdoctor.tune.search import SEARCH_PHASES
    from tfdoctor.tune.shared import StorageError, load_shared_study, recorded_study
    from tfdoctor.tune.space import Space

    found = recorded_study(header)
    if found is None:
        return records, path, summary, None
    try:
        # The report is drawn from other people's files; the storage a header names is opened (a database
        # connected to) only for a file of this user's own, as --resume.
        check_owner(path, "the shared study it names is opened only from a results file of your own")
        study = load_shared_study(header, Space.from_json(header["space"]))
    except (StorageError, ResultsError) as exc:
        return records, f"{path} (its shared study could not be read: {exc}; this file's trials only)", summary, None
    shared = study.records
    left_out = (f"; the trials of {', '.join(sorted(study.excluded))} left out (unlike the other nodes)"
                if study.excluded else "")
    worker = header["shared"].get("worker") if isinstance(header["shared"].get("worker"), str) else None
    mine = (f"; this file's worker {worker} measured {study.measured_by.get(worker, 0)} of them"
            if worker is not None else "")
    source = f"{path} with study {found[1]!r} ({len(shared)} trials of every worker{left_out}{mine})"
    if study.summary is not None:
        return ([*shared, *study.runs], f"{source}; the study's verdict, written by worker {study.writer}",
                study.summary, None)
    if summary is not None:  # this file's worker wrote the verdict, and the study was not told (its storage lost)
        own = [r for r in records if r.phase not in SEARCH_PHASES]
        return [*shared, *own], f"{source}; the verdict written by this file's worker", summary, None
    from tfdoctor.fixes.quoting import sh_quote

    return (shared, source, None, "The study's verdict is not written yet: its writer is still confirming the "
            f"leaders, or stopped before its verdict (then `tfdoctor tune --resume {sh_quote(path)}` finishes it).")


def _fleet(paths: tuple[str, ...]) -> Section:
    from tfdoctor.fleet.compare import compare, load_nodes
    from tfdoctor.report.html.fleet_section import fleet_section

    nodes, unreadable = load_nodes(paths)
    if not nodes:
        reasons = "; ".join(f"{u.source}: {u.error}" for u in unreadable)
        raise ReportInputError(f"--compare: no readable facts file ({reasons})")
    return fleet_section(compare(nodes, unreadable))


def with_profile(report: Any, documents: tuple[Mapping[str, Any], ...]) -> Any:
    """The check report with its PROF checks run again on the profile the page includes (the first run
    given), so the Check section never says "profile was not collected" beside a profile."""
    from tfdoctor.engine import Report, run_checks
    from tfdoctor.facts import Facts, from_jsonable
    from tfdoctor.registry import load_registry

    run = next((d["profile"] for d in documents if isinstance(d, Mapping) and isinstance(d.get("profile"), Mapping)),
               None)
    codes = {r.code for r in report.results if r.code.startswith("PROF")}
    if run is None or not codes:
        return report
    facts = Facts({**report.facts.sections, "profile": from_jsonable(dict(run))}, report.facts.meta)
    rerun = {r.code: r for r in run_checks([c for c in load_registry().checks if c.code in codes], facts).results}
    return Report([rerun.get(r.code, r) for r in report.results], facts, list(report.plugin_errors))


def page_host(inputs: ReportInputs, local: str) -> str:
    """Whose page this is: the checked facts' host (a --facts file from another machine names that
    machine), else the fleet's size, else this host."""
    if inputs.check is not None:
        return str(inputs.check.facts.meta.get("hostname") or local)
    if inputs.compare and not inputs.profiles and not inputs.tune:
        return f"{len(inputs.compare)} nodes"
    return local


def build_sections(inputs: ReportInputs) -> list[Section]:
    builders: list[Callable[[], Section]] = []
    if inputs.check is not None:
        from tfdoctor.report.html.check_section import check_section
        from tfdoctor.report.html.next_section import next_section

        checked = with_profile(inputs.check, inputs.profiles)
        builders.append(lambda: next_section(checked))
        builders.append(lambda: check_section(checked))
    if inputs.profiles:
        builders.append(lambda: _profile(inputs.profiles))
    builders.extend((lambda p=p: _tune(p)) for p in inputs.tune)
    if inputs.compare:
        builders.append(lambda: _fleet(inputs.compare))
    if not builders:
        raise ReportInputError("nothing to report: give --facts, --profile, --tune or --compare, "
                               "or leave out --no-check")
    try:
        return [build() for build in builders]
    except PlottingUnavailable as exc:
        raise ReportInputError(str(exc)) from None


def build_report_page(inputs: ReportInputs, title: str, subtitle: str) -> str:
    return _page(build_sections(inputs), title, subtitle)


def section_page(section: Section, title: str, subtitle: str) -> str:
    return _page([section], title, subtitle)


def _page(sections: list[Section], title: str, subtitle: str) -> str:
    try:
        bundle = plotly_bundle() if any(s.plots for s in sections) else ""
    except PlottingUnavailable as exc:
        raise ReportInputError(str(exc)) from None
    return render_page(sections, title, subtitle, bundle)
