"""Run the selected lint rules over files; contain every failure; apply `# tfdoctor: noqa`."""

from __future__ import annotations

import ast
import contextlib
import functools
import gc
import os
import traceback
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tfdoctor.lint.evidence import missing
from tfdoctor.lint.prefilter import Prefilter, prefilter_for
from tfdoctor.lint.rule import RUNNER_CODES, Hit, LintFinding, LintRuleSpec, SourceFix
from tfdoctor.lint.source import SourceError, SourceModule, read_source
from tfdoctor.lint.suppression import is_suppressed, suppressions
from tfdoctor.model import Severity


@dataclass
class LintReport:
    """What one lint run found, over which files, and what crashed or was suppressed."""

    rules: list[LintRuleSpec]
    findings: list[LintFinding] = field(default_factory=list)
    crashes: list[str] = field(default_factory=list)  # "path: SRC107 crashed: …"
    files: int = 0
    suppressed: int = 0
    prefiltered: int = 0  # files read but not parsed: no selected rule's triggers in them (lint/prefilter.py)
    unproven: int = 0  # hits dropped because they lacked the evidence their rule declares (lint/evidence.py)
    plugin_errors: list[str] = field(default_factory=list)

    def codes(self) -> list[str]:
        return [f.code for f in self.findings]

    def worst(self) -> Severity | None:
        return max((f.severity for f in self.findings), default=None)


def _locate(module: SourceModule, node: ast.AST) -> tuple[int, int, int, int]:
    pos = module.position(node)
    if isinstance(node, ast.Attribute):  # point at `.map`, not at the whole chain before it
        return pos.end_line, pos.end_column - len(node.attr), pos.end_line, pos.end_column
    return pos.line, pos.column, pos.end_line, pos.end_column


def lint_module(module: SourceModule, rules: Iterable[LintRuleSpec], report: LintReport) -> None:
    if not module.uses_tensorflow:
        return  # no TensorFlow, Keras or Horovod in the file: no rule applies
    try:
        _run_rules(module, rules, report)
    finally:
        module.release()


def _run_rules(module: SourceModule, rules: Iterable[LintRuleSpec], report: LintReport) -> None:
    table = suppressions(module.text)
    seen: set[tuple[str, int, int]] = set()
    for spec in rules:
        if spec.code in RUNNER_CODES:
            continue
        try:
            hits: list[Hit] = list(spec.func(module) or ())
        except Exception as exc:  # a rule bug costs that rule on that file, never the run
            where = traceback.extract_tb(exc.__traceback__)[-1]
            report.crashes.append(f"{module.path}: {spec.code} crashed: {type(exc).__name__}: {exc} "
                                  f"(at {where.filename.rsplit('/', 1)[-1]}:{where.lineno})")
            continue
        for hit in hits:
            grounds = _grounds(spec, hit)
            if grounds is None:
                report.unproven += 1
                continue
            line, column, end_line, end_column = _locate(module, hit.node)
            key = (spec.code, line, column)
            if key in seen:
                continue
            seen.add(key)
            if is_suppressed(table, line, spec.code):
                report.suppressed += 1
                continue
            fix, cell, raw_line = hit.fix, None, 0
            if module.cells is not None and 1 <= line <= len(module.cells):
                where = module.cells[line - 1]
                end = module.cells[end_line - 1] if 1 <= end_line <= len(module.cells) else where
                cell, raw_line = where.cell, where.raw_line
                line, end_line = where.line, end.line if end.cell == where.cell else where.line
                # IPython stripped a pasted indentation or prompt from the cell: columns of the cell's text
                column, end_column = column + where.shift, end_column + end.shift
                if fix is not None and fix.edits:  # edits count lines of the joined cells: not applicable
                    fix = SourceFix(fix.title)
            report.findings.append(LintFinding(
                module.path, line, column, end_line, end_column, spec.code, spec.name,
                hit.severity or spec.severity, hit.message, dict(hit.evidence), fix, cell, raw_line, grounds))


def _grounds(spec: LintRuleSpec, hit: Hit) -> dict[str, str] | None:
    """The evidence the hit shows for each kind its rule declares; None when it must be dropped: a kind is
    missing, and the hit is not an info that says why (issue 39, item 1: no evidence, no finding)."""
    if not spec.evidence:
        return dict(hit.grounds)
    lacking = missing(spec.evidence, hit.grounds)
    if lacking and ((hit.severity or spec.severity) is not Severity.INFO
                    or not all(hit.unproven.get(kind) for kind in lacking)):
        return None
    return {kind: hit.grounds.get(kind) or f"not shown: {hit.unproven[kind]}" for kind in spec.evidence}


def _report_source_error(error: SourceError, path: str, rules: list[LintRuleSpec], report: LintReport) -> None:
    spec = next((r for r in rules if r.code == error.code), None)
    if spec is not None:  # unless --ignore'd
        report.findings.append(LintFinding(path, error.line, error.column, error.line, error.column,
                                           spec.code, spec.name, spec.severity, error.message,
                                           cell=error.cell, raw_line=error.raw_line))


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector paused while one file is parsed and linted (issue 25).

    A file's tree is tens of thousands of objects that live exactly as long as the file is linted and
    hold no reference cycles (the module drops its analyses when the rules are done: `release`). While
    they are made, the collector runs every 700 allocations and walks them again at each older
    generation's collection: a sixth of `ast.parse`'s own time, and more while rules allocate with the
    tree alive. Reference counting frees the tree when the file is done; the few cycles a rule may
    leave are collected once the collector resumes, after the file, so memory stays bounded per file.
    """
    if not gc.isenabled():  # paused by the caller: theirs to resume
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def lint_file(path: Path, display: str, rules: list[LintRuleSpec], report: LintReport,
              prefilter: Prefilter | None = None) -> None:
    """Lint one file; with a `prefilter`, a file none of whose bytes can make a finding is not parsed."""
    report.files += 1
    with _collector_paused():
        _lint_file(path, display, rules, report, prefilter)  # its tree is freed on return, before the collector resumes


def _lint_file(path: Path, display: str, rules: list[LintRuleSpec], report: LintReport,
               prefilter: Prefilter | None) -> None:
    try:
        data = read_source(path)
        if prefilter is not None and not prefilter.may_fire(data):
            report.prefiltered += 1
            return
        module = SourceModule.from_bytes(data, path, display)
    except SourceError as error:
        _report_source_error(error, display, rules, report)
        return
    lint_module(module, rules, report)


_PARALLEL_FROM = 64  # files: below this, starting worker processes costs more than it saves


def lint_paths(files: Iterable[Path], rules: list[LintRuleSpec], plugin_errors: Iterable[str] = (),
               jobs: int | None = None, walked: Iterable[Path] = ()) -> LintReport:
    """Lint files; many files are shared out to one worker process per usable CPU.

    `walked`: those of `files` found by walking a directory rather than named by the user: they are parsed
    only when a selected rule's triggers occur in them (issue 39, item 7; tfdoctor/lint/prefilter.py)."""
    report = LintReport(rules, plugin_errors=list(plugin_errors))
    files = list(files)
    found = frozenset(walked)
    prefilter = prefilter_for(rules) if found else None
    plan = [(path, prefilter if path in found else None) for path in files]
    _display_dir.cache_clear()  # links may have changed since the last run of this process
    workers = min(jobs or usable_cpus(), max(1, len(files) // 16))
    if workers > 1 and len(files) >= _PARALLEL_FROM:
        _lint_in_processes(plan, rules, report, workers)
    else:
        for path, skip in plan:
            lint_file(path, display_path(path), rules, report, skip)
    report.findings.sort(key=_order)
    return report


def _order(f: LintFinding) -> tuple:
    return (f.path, f.cell or 0, f.line, f.column, f.code)


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


Plan = list[tuple[Path, Prefilter | None]]  # each file, and the prefilter that applies to it (None: parse it)


def _lint_chunk(args: tuple[Plan, list[LintRuleSpec]]) -> LintReport:
    files, rules = args
    report = LintReport([])
    for path, prefilter in files:
        lint_file(path, display_path(path), rules, report, prefilter)
    return report


def _lint_in_processes(files: Plan, rules: list[LintRuleSpec], report: LintReport, workers: int) -> None:
    import multiprocessing

    # Chunks interleaved by size order would be better balanced; round-robin is close enough and stable.
    chunks = [files[i::workers * 4] for i in range(workers * 4)]
    try:
        context = multiprocessing.get_context("fork")
    except ValueError:  # no fork (Windows, some macOS setups): one process
        for path, prefilter in files:
            lint_file(path, display_path(path), rules, report, prefilter)
        return
    # The forked workers share the parent's heap copy-on-write; a collection in a worker would touch (and
    # so copy) every tracked object it inherited. Frozen objects are left out of collections (the gc
    # module's advice for forking servers).
    gc.freeze()
    try:
        with context.Pool(workers) as pool:
            for part in pool.imap_unordered(_lint_chunk, [(c, rules) for c in chunks if c]):
                report.findings += part.findings
                report.crashes += part.crashes
                report.files += part.files
                report.suppressed += part.suppressed
                report.prefiltered += part.prefiltered
                report.unproven += part.unproven
    finally:
        gc.unfreeze()
    report.crashes.sort()


def lint_text(text: str, rules: list[LintRuleSpec], path: str = "<string>") -> LintReport:
    """Lint source held in memory (tests, editors)."""
    report = LintReport(rules)
    report.files = 1
    with _collector_paused():
        _lint_text(text, path, rules, report)  # its tree is freed on return, before the collector resumes
    report.findings.sort(key=_order)
    return report


def _lint_text(text: str, path: str, rules: list[LintRuleSpec], report: LintReport) -> None:
    try:
        module = SourceModule.from_text(text, path)
    except SourceError as error:
        _report_source_error(error, path, rules, report)
        return
    lint_module(module, rules, report)


def display_path(path: Path) -> str:
    """Relative to the current directory when below it (what editors and SARIF viewers resolve)."""
    if not path.is_absolute():
        return path.as_posix()
    cwd = _cwd()
    # Worked out once per folder, with string operations per file (issue 25: pathlib's arithmetic on every
    # file was 3 % of lint time).
    directory, name = os.path.split(os.fspath(path))
    folder = _display_dir(directory, cwd, False)
    if folder is not None:
        return folder + name
    if os.path.islink(path):  # a symbolic link to the file itself: shown where it points
        try:
            return path.resolve().relative_to(cwd).as_posix()
        except ValueError:
            return path.as_posix()
    folder = _display_dir(directory, cwd, True)
    return path.as_posix() if folder is None else folder + name


@functools.lru_cache(maxsize=4096)
def _display_dir(directory: str, cwd: Path, resolve: bool) -> str | None:
    """How the files of `directory` are shown: its path below `cwd` with a trailing slash ("" for `cwd`
    itself), or None when it is not below it (as written, or with its links resolved when `resolve`)."""
    try:
        below = (Path(directory).resolve() if resolve else Path(directory)).relative_to(cwd).as_posix()
    except ValueError:
        return None
    return "" if below == "." else below + "/"


_CWD: tuple[str, Path] | None = None


def _cwd() -> Path:
    """The resolved current directory, resolved again only when it changes."""
    global _CWD
    raw = os.getcwd()
    if _CWD is None or _CWD[0] != raw:
        _CWD = (raw, Path(raw).resolve())
    return _CWD[1]
