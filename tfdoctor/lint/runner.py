"""Run the selected lint rules over files; contain every failure; apply `# tfdoctor: noqa`."""

from __future__ import annotations

import ast
import contextlib
import functools
import gc
import os
import time
import traceback
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tfdoctor.lint.evidence import missing
from tfdoctor.lint.prefilter import Prefilter, prefilter_for
from tfdoctor.lint.rule import RUNNER_CODES, Hit, LintFinding, LintRuleSpec, SourceFix
from tfdoctor.lint.source import SourceError, SourceModule, read_source
from tfdoctor.lint.suppression import is_suppressed, suppressions
from tfdoctor.lint.target import Target, TargetsByFile, file_target, for_notebook, run_target
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
    # info hits without their evidence, of a rule whose table keeps that tier off by default: code → count
    held_back_by: dict[str, int] = field(default_factory=dict)
    plugin_errors: list[str] = field(default_factory=list)
    target: Target | None = None  # the TensorFlow release the code was linted for; None: not known
    # files linted for another release than `target`: their folder's own pins, a notebook's own cells
    own_target: int = 0

    def codes(self) -> list[str]:
        return [f.code for f in self.findings]

    @property
    def held_back(self) -> int:
        return sum(self.held_back_by.values())

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
            if spec.quiet_unproven and hit.unproven:
                # on again with the rule's exact code or --preview
                report.held_back_by[spec.code] = report.held_back_by.get(spec.code, 0) + 1
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


def lint_file(path: Path, display: str | None, rules: list[LintRuleSpec], report: LintReport,
              prefilter: Prefilter | None = None, target: Target | TargetsByFile | None = None) -> None:
    """Lint one file; with a `prefilter`, a file none of whose bytes can make a finding is not parsed.
    `display`: how findings name the file; None: `display_path(path)`, worked out only for a file parsed."""
    report.files += 1
    with _collector_paused():
        # its tree is freed on return, before the collector resumes
        _lint_file(path, display, rules, report, prefilter, target)


def _lint_file(path: Path, display: str | None, rules: list[LintRuleSpec], report: LintReport,
               prefilter: Prefilter | None, target: Target | TargetsByFile | None) -> None:
    applying = rules
    try:
        data = read_source(path)
        notebook = None
        if prefilter is not None:
            if path.suffix == ".ipynb":
                fired, notebook = prefilter.firing_notebook(data)
            else:
                fired = prefilter.firing(data)
            if not fired:
                report.prefiltered += 1
                return
            applying = prefilter.rules_for(rules, fired)  # the others cannot fire here (prefilter.py)
        display = display or display_path(path)
        module = SourceModule.from_bytes(data, path, display, notebook)
        _set_target(module, file_target(target, path), report)
    except SourceError as error:
        _report_source_error(error, display or display_path(path), rules, report)
        return
    lint_module(module, applying, report)


def _set_target(module: SourceModule, target: Target | None, report: LintReport) -> None:
    """The release `module` is linted for: its folder's (`target`), unless it is a notebook that says
    otherwise; counted when it is not the run's."""
    module.target = target
    if module.environment is not None:
        module.target = for_notebook(module.environment, target)
    if module.target != report.target:
        report.own_target += 1


_PARALLEL_FROM = 64  # files: below this, starting worker processes costs more than it saves
# CPU seconds this process lints on its own, when the caller did not ask for a number of processes, before it
# forks the others for the rest (issue 39, item 7). A fork and what a worker copies of this process' memory
# cost about 0.02 s of CPU each (0.06 s when many pages are touched: benchmarks/lint_speed_others.py), so a
# tree linted in under this never pays for one, and a larger one pays a few percent to halve its wait.
SPILL_AFTER = 0.5


def lint_paths(files: Iterable[Path], rules: list[LintRuleSpec], plugin_errors: Iterable[str] = (),
               jobs: int | None = None, walked: Iterable[Path] = (),
               target: Target | TargetsByFile | None = None) -> LintReport:
    """Lint files; many files are shared out between this process and one more process per usable CPU.

    `jobs`: how many processes lint (1: this one alone). None: this process lints alone and forks the others
    only once it has linted for SPILL_AFTER seconds of CPU with files left (a small tree is linted without
    any other process).

    `walked`: those of `files` found by walking a directory rather than named by the user: they are parsed
    only when a selected rule's triggers occur in them (issue 39, item 7; tfdoctor/lint/prefilter.py).

    `target`: the TensorFlow release the code runs on (tfdoctor/lint/target.py), or the release of each file
    (TargetsByFile: each file's nearest pins); None: not known."""
    report = LintReport(rules, plugin_errors=list(plugin_errors), target=run_target(target))
    files = list(files)
    found = frozenset(walked)
    prefilter = prefilter_for(rules) if found else None
    plan = [(path, prefilter if path in found else None) for path in files]
    _display_dir.cache_clear()  # links may have changed since the last run of this process
    workers = min(jobs or usable_cpus(), max(1, len(files) // 16))
    if workers > 1 and len(files) >= _PARALLEL_FROM and hasattr(os, "fork"):
        rest = plan if jobs else _lint_for(SPILL_AFTER, plan, rules, report, target)
        if len(rest) >= _SPILL_FROM:
            _lint_in_processes(rest, rules, report, workers, target)
        else:
            _lint_for(None, rest, rules, report, target)
    else:
        _lint_for(None, plan, rules, report, target)
    report.findings.sort(key=_order)
    return report


_SPILL_FROM = 16  # files left after SPILL_AFTER: fewer are linted here, without forking for them


def _lint_for(seconds: float | None, plan: Plan, rules: list[LintRuleSpec], report: LintReport,
              target: Target | TargetsByFile | None = None) -> Plan:
    """Lint `plan` in order in this process until it has used `seconds` of CPU (None: all of it); the rest."""
    start = time.process_time()
    for index, (path, prefilter) in enumerate(plan):
        lint_file(path, None, rules, report, prefilter, target)
        if seconds is not None and time.process_time() - start > seconds:
            return plan[index + 1:]
    return []


def _order(f: LintFinding) -> tuple:
    return (f.path, f.cell or 0, f.line, f.column, f.code)


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


Plan = list[tuple[Path, Prefilter | None]]  # each file, and the prefilter that applies to it (None: parse it)


def _lint_in_processes(plan: Plan, rules: list[LintRuleSpec], report: LintReport, workers: int,
                       target: Target | TargetsByFile | None = None) -> None:
    """Lint `plan` in this process and `workers - 1` forked ones, sharing chunks of it as they go.

    The chunks are numbered bytes in a pipe that every process reads one at a time (a read of one byte takes
    one chunk, whoever reads it), so a process that drew large files takes fewer chunks. A forked process
    has the plan and the rules already (fork copies them): it only sends its report back, pickled, through a
    pipe of its own. A process that fails to send its report back costs nothing: its chunks are linted here again.
    """
    import pickle

    count = min(len(plan), 8 * workers, 255)
    chunks = [plan[i::count] for i in range(count)]  # interleaved: each chunk a sample of the whole tree
    tokens, feed = os.pipe()
    os.write(feed, bytes(range(count)))  # at most 255 bytes: a pipe holds them without a reader
    os.close(feed)  # drained, the pipe reads as empty for every process
    children: list[tuple[int, int]] = []
    taken: set[int] = set()
    try:
        children = _fork(workers - 1, tokens, chunks, rules, target)
        while (token := os.read(tokens, 1)):
            taken.add(token[0])
            for path, prefilter in chunks[token[0]]:
                lint_file(path, None, rules, report, prefilter, target)
        for pid, pipe in children:
            with os.fdopen(pipe, "rb") as stream:
                data = stream.read()
            _, status = os.waitpid(pid, 0)
            try:
                part, done = pickle.loads(data) if status == 0 else (None, ())
            except Exception:  # cut short: the process died while sending
                part, done = None, ()
            if part is None:
                continue
            taken.update(done)
            report.findings += part.findings
            report.crashes += part.crashes
            report.files += part.files
            report.suppressed += part.suppressed
            report.prefiltered += part.prefiltered
            report.own_target += part.own_target
            report.unproven += part.unproven
            for code, held in part.held_back_by.items():  # not `count`: it is the number of chunks
                report.held_back_by[code] = report.held_back_by.get(code, 0) + held
    finally:
        os.close(tokens)
    for index in sorted(set(range(count)) - taken):  # a forked process' chunks, lost with it
        for path, prefilter in chunks[index]:
            lint_file(path, None, rules, report, prefilter, target)
    report.crashes.sort()


def _fork(count: int, tokens: int, chunks: list[Plan], rules: list[LintRuleSpec],
          target: Target | TargetsByFile | None) -> list[tuple[int, int]]:
    """Fork `count` processes that lint the chunks they draw from `tokens`; (pid, read end of its report)."""
    import pickle

    children = []
    # A forked process shares this one's heap copy-on-write; a collection there would touch (and so copy)
    # every tracked object it inherited. Frozen objects are left out of collections (the gc module's advice
    # for forking servers); they are unfrozen here once the processes are started.
    gc.freeze()
    try:
        for _ in range(count):
            reader, writer = os.pipe()
            pid = os.fork()
            if pid == 0:  # the forked process: lint, send the report, leave without running anything else
                status = 1
                try:
                    os.close(reader)
                    for _, other in children:
                        os.close(other)
                    part, done = LintReport([], target=run_target(target)), []
                    while (token := os.read(tokens, 1)):
                        done.append(token[0])
                        for path, prefilter in chunks[token[0]]:
                            lint_file(path, None, rules, part, prefilter, target)
                    with os.fdopen(writer, "wb") as stream:
                        stream.write(pickle.dumps((part, done), protocol=pickle.HIGHEST_PROTOCOL))
                    status = 0
                finally:
                    os._exit(status)  # no atexit handlers, no flushing of buffers this process inherited
            os.close(writer)
            children.append((pid, reader))
    finally:
        gc.unfreeze()
    return children


def lint_text(text: str, rules: list[LintRuleSpec], path: str = "<string>", target: Target | None = None
              ) -> LintReport:
    """Lint source held in memory (tests, editors)."""
    report = LintReport(rules, target=target)
    report.files = 1
    with _collector_paused():
        _lint_text(text, path, rules, report, target)  # its tree is freed on return, before the collector resumes
    report.findings.sort(key=_order)
    return report


def _lint_text(text: str, path: str, rules: list[LintRuleSpec], report: LintReport, target: Target | None) -> None:
    try:
        module = SourceModule.from_text(text, path)
    except SourceError as error:
        _report_source_error(error, path, rules, report)
        return
    _set_target(module, target, report)
    lint_module(module, rules, report)


def display_path(path: Path) -> str:
    """Relative to the current directory when below it (what editors and SARIF viewers resolve)."""
    if not path.is_absolute():
        return path.as_posix()
    cwd = _cwd()
    # Worked out once per folder, with string operations (issue 25: pathlib's arithmetic on every file was 3 %
    # of lint time; issue 39: pathlib's on every folder outside the current one, 2 % of lint's instructions
    # on a large repository linted from outside it, by callgrind).
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
    """How the files of `directory` (absolute, as os.path.split gives it) are shown: its path below `cwd` with a
    trailing slash ("" for `cwd` itself), or None when it is not below it (as written, or with its links
    resolved when `resolve`). Lexical, as Path.relative_to is: a `..` in `directory` is kept."""
    if resolve:
        directory = os.path.realpath(directory)
    top = os.fspath(cwd)
    if directory == top:
        return ""
    prefix = top if top.endswith(os.sep) else top + os.sep  # the current directory may be the root
    if not directory.startswith(prefix):
        return None
    below = directory[len(prefix):]
    return (below if os.sep == "/" else below.replace(os.sep, "/")) + "/"


_CWD: tuple[str, Path] | None = None


def _cwd() -> Path:
    """The resolved current directory, resolved again only when it changes."""
    global _CWD
    raw = os.getcwd()
    if _CWD is None or _CWD[0] != raw:
        _CWD = (raw, Path(raw).resolve())
    return _CWD[1]
