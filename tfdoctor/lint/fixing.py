"""`tfdoctor lint --fix` / `--diff`: apply the edits findings carry, like ruff.

Only `safe` fixes by default (prefetch, parallel map, turning an OOM report off), `unsafe` ones too
with `--unsafe-fixes`; `manual` fixes have no edits. No edit resizes a layer or otherwise changes what
a model computes: rules that would (layer sizes) only give advice. Overlapping edits in one file keep
the first; a result that would not parse is not written. Notebooks are not rewritten (their edits
count lines of the joined cells).
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tfdoctor.lint.rule import Edit, LintFinding, LintRuleSpec
from tfdoctor.lint.runner import lint_text
from tfdoctor.lint.source import decode_source
from tfdoctor.lint.target import Target, TargetsByFile, file_target
from tfdoctor.model import Applicability


@dataclass
class FileFix:
    """A source file before and after `lint --fix`, and the findings fixed."""

    path: Path
    before: str
    after: str
    fixed: list[LintFinding] = field(default_factory=list)
    original: bytes = b""  # the file's bytes that were linted: written over only if they are still there

    def diff(self, display: str) -> str:
        return "".join(difflib.unified_diff(self.before.splitlines(keepends=True), self.after.splitlines(keepends=True),
                                            f"a/{display}", f"b/{display}"))


def fixable(finding: LintFinding, unsafe: bool) -> bool:
    fix = finding.fix
    if fix is None or not fix.edits or finding.cell is not None:
        return False
    return fix.applicability is Applicability.SAFE or (unsafe and fix.applicability is Applicability.UNSAFE)


def apply_edits(text: str, edits: Iterable[Edit]) -> str:
    """Apply non-overlapping edits (1-based lines, 1-based character columns), last first."""
    starts = _line_starts(text)

    def offset(line: int, column: int) -> int:
        return starts[line - 1] + column - 1 if line - 1 < len(starts) else len(text)

    spans = sorted(((offset(e.line, e.column), offset(e.end_line, e.end_column), e.text) for e in edits),
                   reverse=True)
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


def _line_starts(text: str) -> list[int]:
    starts, at = [0], 0
    for line in text.splitlines(keepends=True):
        at += len(line)
        starts.append(at)
    return starts


def plan_fixes(findings: Iterable[LintFinding], unsafe: bool, paths: dict[str, Path],
               rules: list[LintRuleSpec], target: Target | TargetsByFile | None = None
               ) -> tuple[list[FileFix], list[str]]:
    """The new text of every file with applicable fixes, and one line per file left alone (and why).

    Fixes whose edits touch the same text cannot go in one pass: like ruff, the file is linted again
    and fixed again (at most `_ROUNDS` times) until nothing applicable is left.
    """
    files = sorted({f.path for f in findings if fixable(f, unsafe)})
    plans, problems = [], []
    for display in files:
        path = paths.get(display, Path(display))
        try:
            original = _read_source(path)
            before = decode_source(original)
        except Exception as exc:  # unreadable now: the file changed under us
            problems.append(f"{display}: not fixed: {exc}")
            continue
        text, fixed = before, []
        # Edits are positions in the text that was linted: lint the text read now (it may have changed
        # since the report was made), and write only if the file still holds it (write_fix).
        release = file_target(target, path)  # its folder's pins write AUTOTUNE as that release spells it
        current = lint_text(before, rules, display, release).findings
        for _ in range(_ROUNDS):
            chosen = _non_overlapping([f for f in current if fixable(f, unsafe)])
            if not chosen:
                break
            after = apply_edits(text, [e for f in chosen for e in f.fix.edits])  # type: ignore[union-attr]
            try:
                ast.parse(after)
            except SyntaxError as exc:
                problems.append(f"{display}: not fixed: the edits would not parse ({exc.msg}, line {exc.lineno})")
                break
            text, fixed = after, fixed + chosen
            current = lint_text(text, rules, display, release).findings
        if fixed:
            plans.append(FileFix(path, before, text, fixed, original))
    return plans, problems


_ROUNDS = 10


def _non_overlapping(found: list[LintFinding]) -> list[LintFinding]:
    chosen, taken = [], []
    for finding in sorted(found, key=lambda f: (f.line, f.column)):
        spans = [((e.line, e.column), (e.end_line, e.end_column)) for e in finding.fix.edits]  # type: ignore[union-attr]
        if any(_overlap(a, b) for a in spans for b in taken):
            continue  # another fix touches the same text: the next round applies this one
        taken += spans
        chosen.append(finding)
    return chosen


def _overlap(a: tuple[tuple[int, int], tuple[int, int]], b: tuple[tuple[int, int], tuple[int, int]]) -> bool:
    # Insertions at the same point overlap too: their order would be arbitrary.
    return not (a[1] < b[0] or b[1] < a[0])


class FixNotWritten(Exception):
    """A planned fix that was not written, and why (a link, a file changed since it was linted…)."""


def write_fix(plan: FileFix) -> None:
    """Write the fixed text back in the file's own encoding (its PEP 263 cookie or BOM kept).

    Issue 24, item 6: the new text goes to a temporary file in the same folder, then replaces the file
    in one rename, so a reader (or a kill) sees the old file or the new one, never a part. Never
    through a link: a symbolic link or a file with other hard links is left alone (writing it would
    change, or silently split from, a file elsewhere). Only over the text that was linted: a file
    changed since (an editor saved it) is left alone, checked again right before the rename.
    """
    import io
    import os
    import stat
    import tokenize

    from tfdoctor.fixes.write import WriteError, write_bytes

    path = plan.path
    try:
        status = os.lstat(path)
    except OSError as exc:
        raise FixNotWritten(f"cannot read it now: {exc.strerror or exc}") from None
    if stat.S_ISLNK(status.st_mode):
        raise FixNotWritten("a symbolic link: the fix would write the file it points to (fix that file)")
    if not stat.S_ISREG(status.st_mode):
        raise FixNotWritten("not a regular file")
    if status.st_nlink > 1:
        raise FixNotWritten(f"it has {status.st_nlink} hard links: the other names would keep the old text")
    data = _read_source(path)
    if data != plan.original:
        raise FixNotWritten("it changed since it was linted (run lint --fix again)")
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    out = plan.after.encode("utf-8" if encoding == "utf-8-sig" else encoding)
    if data.startswith(b"\xef\xbb\xbf") and not out.startswith(b"\xef\xbb\xbf"):
        out = b"\xef\xbb\xbf" + out

    def still_as_linted() -> None:
        now = os.lstat(path)
        if (now.st_ino, now.st_size, now.st_mtime_ns) != (status.st_ino, status.st_size, status.st_mtime_ns):
            raise FixNotWritten("it changed since it was linted (run lint --fix again)")

    # Over the file the user asked to fix (force), keeping its mode, checked once more just before.
    try:
        write_bytes(path, out, force=True, mode=stat.S_IMODE(status.st_mode), before_replace=still_as_linted)
    except WriteError as exc:
        raise FixNotWritten(str(exc)) from None


def _read_source(path: Path) -> bytes:
    """A file about to be fixed, read with the bound linting used (it may have changed since)."""
    from tfdoctor.facts.bounded import read_input_file
    from tfdoctor.lint.source import SOURCE_LIMIT

    return read_input_file(path, SOURCE_LIMIT, "source file", timeout=10.0)
