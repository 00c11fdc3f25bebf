"""A notebook cell as IPython reads it, one output line per input line (issue 25, item 6).

IPython turns a cell into Python in three stages (`IPython.core.inputtransformer2.TransformerManager`):
cleanup (leading empty lines, the common indentation of a pasted block, `>>>` and `In [1]:` prompts),
the cell magic (`%%name` on the first line takes the whole cell), then token transforms, earliest first:
`x = %magic`, `x = !cmd`, an escape (`%`, `!`, `!!`, `?`, `??`, `,`, `;`, `/`) as the first token of a
logical line, and `obj?` as its last token. A line continued with a backslash belongs to the magic.

The linter needs the same decisions but its own output: each special line becomes `pass` (or
`lhs = None` for an assignment) at its indentation, and its continuation lines become empty, so
positions map back to the cell. When IPython is installed its own transformers make the decisions
(`_IPythonCell`); otherwise `_scan` does, a linear scanner of brackets, strings and comments that the
tests hold to IPython's answers on the same cells. Cells too large for IPython's re-tokenising loop
(quadratic in the number of magics) use the scanner too.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass

Line = tuple[str, int]  # (Python text, characters stripped from the start of the source line)

# Cell magics that run their body as Python (IPython transforms the body as a cell of its own).
PYTHON_BODY_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "memit"})
ESCAPE_SINGLES = frozenset("!?%,;/")
_LOOP_LIMIT = 500  # IPython's TRANSFORM_LOOP_LIMIT: past it IPython gives up on the cell
_NESTED_CELL_MAGICS = 10  # `%%time` inside `%%capture`…: deeper than this, the rest is blanked
# IPython re-tokenises the whole cell after each special line it finds; above these sizes the linear
# scanner decides instead (same answers on ordinary cells, see tests/test_lint_notebook_ipython.py).
IPYTHON_MAX_LINES = 2_000
IPYTHON_MAX_LINE = 2_000
_NAME = re.compile(r"[A-Za-z_]")
_HELP_TARGET = re.compile(r"(%{0,2}(?!\d)[\w*]+(\.(?!\d)[\w*]+|\[-?[0-9]+\])*)(\?\??)$")
_HELP_WINDOW = 256  # characters before the `?` that the help pattern may see: keeps its search linear
# Where IPython's four token transforms can find something, in the text: an escape (`%` `!` `?` `,` `;` `/`)
# as the first token of a line, `%` or `!` as the token right after an `=` (`x = %who`, `x = !ls`), or `?`
# as the last token of a line (`obj?`); tokens are separated by white space and backslash continuations
# only. A cell where none of them occurs is Python as it is and is not re-tokenised (issue 39, item 7: that
# was a third of lint's CPU on notebook repositories; a `%` formatting a string or a `!=` no longer counts).
# The scanner (`_scan`) finds nothing where this finds nothing, either.
_MAYBE_SPECIAL = re.compile(r"^[ \t\f]*[%!?,;/]|=[^\S\n]*(?:\\\n[^\S\n]*)*[%!]|\?[^\S\n]*(?:\\\n[^\S\n]*)*$",
                            re.MULTILINE)
_CLASSIC_PS1 = re.compile(r"^[ \t]*>>>[ \t]?")
_CLASSIC_PS2 = re.compile(r"^[ \t]*\.\.\.[ \t]?")
_CLASSIC_ANY_LINE = re.compile(r"^[ \t]*>>>", re.MULTILINE)
_IPYTHON_PROMPT = re.compile(r"^(((\[nav\]|\[ins\])? )?In \[\d+\]: |[ \t]*\.{3,}: ?)")


def cell_transformer() -> Callable[[list[str]], list[Line]]:
    """IPython's transformers when IPython is importable, else the scanner."""
    try:
        from IPython.core import inputtransformer2
    except Exception:  # not installed, or broken: the scanner gives the same answers on ordinary cells
        return transform_cell
    return lambda lines: transform_cell(lines, _IPythonCell(inputtransformer2))


def transform_cell(source: list[str], ipython: _IPythonCell | None = None) -> list[Line]:
    """One (text, shift) per source line."""
    out: list[Line] = [("", 0)] * len(source)
    start = 0
    for _ in range(_NESTED_CELL_MAGICS):
        while start < len(source) and not source[start].strip():
            start += 1  # IPython drops leading empty lines; they stay empty here
        if start >= len(source):
            return out
        lines, shifts, joined = _cleanup(source[start:])
        first = lines[0]
        if first.startswith("%%") and not re.match(r"%%\w+\?", first):
            if first[2:].rstrip().partition(" ")[0] in PYTHON_BODY_MAGICS:
                start += 1  # `%%time`: the body is a cell of its own
                continue
            return out  # `%%bash`, `%%writefile`: not Python
        fits = ipython is not None and len(lines) <= IPYTHON_MAX_LINES and \
            max(map(len, lines)) <= IPYTHON_MAX_LINE
        if not _MAYBE_SPECIAL.search(joined):
            specials: list[Special] = []  # nothing for IPython to transform
        else:
            specials = ipython.specials(lines) if fits else _scan(lines)  # type: ignore[union-attr]
        out[start:] = zip(lines, shifts, strict=True)
        for special in specials:
            replacement = lines[special.line][: special.column] + ("None" if special.assigns else "pass")
            out[start + special.line] = (replacement, shifts[special.line])
            for extra in range(special.line + 1, special.end + 1):
                out[start + extra] = ("", 0)
        return out
    return out


def _cleanup(lines: list[str]) -> tuple[list[str], list[int], str]:
    """IPython's cleanup transforms, line for line: the pasted indentation, then prompts. Also the cleaned
    lines joined by newlines (`lines` come from `str.splitlines`, so they hold no line break)."""
    joined = "\n".join(lines)
    if _NO_MARGIN.search(joined):  # a line starts with neither space nor tab: dedent only empties blank lines
        cleaned = _BLANK.sub("", joined).split("\n") if _BLANK.search(joined) else list(lines)
    else:
        cleaned = textwrap.dedent(joined).split("\n")
    if len(cleaned) != len(lines):  # a line break dedent saw differently (\r, \x0c): leave the cell as is
        cleaned = list(lines)
    cleaned = _strip_prompts(cleaned, "\n".join(cleaned))
    if cleaned == lines:
        return cleaned, [0] * len(lines), joined
    shifts = [len(old) - len(new) if new and old.endswith(new) else 0 for old, new in zip(lines, cleaned, strict=True)]
    return cleaned, shifts, "\n".join(cleaned)


# textwrap.dedent's own patterns: a line of spaces and tabs only (emptied), and a line whose first character
# is neither (then no margin is common to all lines, and dedent changes nothing else).
_BLANK = re.compile(r"^[ \t]+$", re.MULTILINE)
_NO_MARGIN = re.compile(r"^[^ \t\n]", re.MULTILINE)


def _strip_prompts(lines: list[str], joined: str) -> list[str]:
    if _CLASSIC_ANY_LINE.search(joined):  # doctest-style paste
        stripped = [_CLASSIC_PS2.sub("", _CLASSIC_PS1.sub("", line, count=1), count=1) for line in lines]
        if stripped != lines:
            lines = textwrap.dedent("\n".join(stripped)).split("\n")
    if _IPYTHON_PROMPT.match(lines[0]) or (len(lines) > 1 and _IPYTHON_PROMPT.match(lines[1])):
        lines = [_IPYTHON_PROMPT.sub("", line, count=1) for line in lines]
    return lines


class CellError(ValueError):
    """IPython's transformers fail on the cell (its tokenizer raises): the notebook is SRC002, not a crash."""


@dataclass(frozen=True)
class Special:
    """IPython syntax found in a cell: lines `line`..`end` (0-based); an assignment keeps `lhs = `."""

    line: int
    end: int
    column: int
    assigns: bool = False


class _IPythonCell:
    """IPython's own token transformers decide where the special syntax is and how far it goes."""

    def __init__(self, module) -> None:
        self.module = module
        self.kinds = (module.MagicAssign, module.SystemAssign, module.EscapedCommand, module.HelpEnd)

    def specials(self, lines: list[str]) -> list[Special]:
        work = [line + "\n" for line in lines]
        found: list[Special] = []
        for _ in range(_LOOP_LIMIT):
            try:
                tokens = self.module.make_tokens_by_line(work)
                candidates = [c for c in (kind.find(tokens) for kind in self.kinds) if c is not None]
            except Exception as exc:  # IndentationError from the tokenizer: IPython cannot run the cell either
                raise CellError(f"IPython cannot read this cell: {type(exc).__name__}: {str(exc)[:200]}") from None
            for candidate in sorted(candidates, key=self.module.TokenTransformBase.sortby):
                try:
                    changed = candidate.transform(work)
                except Exception:  # SyntaxError: IPython tries the next candidate (an assert too)
                    continue
                line = candidate.start_line
                end = line + len(work) - len(changed)
                assigns = isinstance(candidate, (self.module.MagicAssign, self.module.SystemAssign))
                special = Special(line, end, candidate.start_col, assigns)
                found.append(special)
                replacement = work[line][: candidate.start_col] + ("None" if assigns else "pass") + "\n"
                work = [*work[:line], replacement, *["\n"] * (end - line), *work[end + 1:]]
                break
            else:
                return found
        return found


def _continued_end(lines: list[str], line: int) -> int:
    """The last line of a backslash-continued line (IPython's find_end_of_continued_line)."""
    while line + 1 < len(lines) and lines[line].endswith("\\"):
        line += 1
    return line


@dataclass
class _Logical:
    """One logical line as the scanner saw it."""

    line: int
    end: int
    column: int  # of its first token
    assign: tuple[int, int] | None  # (line, column) of the first character after its first `=` at depth 0
    help_end: bool  # its last token is `?`
    tokens: int  # how many tokens, roughly (IPython's HelpEnd needs more than one)


def _scan(lines: list[str]) -> list[Special]:
    """IPython's token transforms decided by a linear scan (no tokenizer, no backtracking pattern).

    The first instance of each kind is tried in position order, as IPython's loop does; an instance
    whose transform IPython would reject (a `?` after something that is not a name, `/` alone) stays
    and blocks the later ones of its kind, as it does in IPython.
    """
    found: list[Special] = []
    blocked: set[str] = set()
    covered = -1
    for logical in _logical_lines(lines):
        if logical.line <= covered:
            continue
        for kind, special, valid in _candidates(lines, logical):
            if kind in blocked or special.line <= covered:
                continue
            if not valid:
                blocked.add(kind)
                continue
            found.append(special)
            covered = special.end
            if len(found) >= _LOOP_LIMIT:
                return found
            break
    return found


def _candidates(lines: list[str], logical: _Logical):
    """(kind, special, would IPython's transform accept it), earliest first as IPython sorts them."""
    found = []
    first = lines[logical.line]
    stripped = first[logical.column:]
    if logical.help_end and logical.tokens > 1:
        content = "\n".join(lines[logical.line: logical.end + 1])[logical.column:].rstrip()
        window = content[-_HELP_WINDOW:]
        found.append(((logical.line, logical.column, 5), "help",
                      Special(logical.line, logical.end, logical.column), bool(_HELP_TARGET.search(window))))
    escape = stripped[:1]
    if escape in ESCAPE_SINGLES and not stripped.startswith(("%=", "!=", "//", "/=")):
        end = _continued_end(lines, logical.line)
        valid = not (escape == "/" and not stripped[1:].partition(" ")[0])
        found.append(((logical.line, logical.column, 10), "escape", Special(logical.line, end, logical.column), valid))
    elif logical.assign is not None:
        line, column = logical.assign
        rest = lines[line][column:]
        after = rest.lstrip(" \t")
        at = column + len(rest) - len(after)
        if after.startswith("%") and _NAME.match(after[1:2]):
            found.append(((line, at, 10), "magic-assign",
                          Special(line, _continued_end(lines, line), at, True), True))
        elif after.startswith("!") and not lines[line].strip().startswith("="):
            found.append(((line, at, 10), "system-assign",
                          Special(line, _continued_end(lines, line), at, True), True))
    return [(kind, special, valid) for _, kind, special, valid in sorted(found, key=lambda f: f[0])]


_OPEN, _CLOSE = frozenset("([{"), frozenset(")]}")
_NOT_ASSIGN_BEFORE = frozenset("=!<>+-*/%&|^@:~")


def _logical_lines(lines: list[str]):
    """Logical lines of a cell: brackets, strings (also triple-quoted, across lines), comments and
    backslashes followed character by character. A line that starts with an escape is opaque (its
    brackets and quotes are not Python) up to its backslash continuation."""
    index = 0
    total = len(lines)
    while index < total:
        text = lines[index]
        column = len(text) - len(text.lstrip(" \t\x0c"))
        if column == len(text) or text[column] == "#":
            index += 1  # blank or comment-only: its own (token-less) logical line
            continue
        if text[column] in ESCAPE_SINGLES and not text.startswith(("%=", "!=", "//", "/="), column):
            end = _continued_end(lines, index)
            tail = lines[end].rstrip()  # `%magic?` asks for help: IPython's HelpEnd, tokenised as Python
            help_end = tail.endswith("?") and not any(c in tail for c in "#'\"")
            yield _Logical(index, end, column, None, help_end, 2)
            index = end + 1
            continue
        logical = _Logical(index, index, column, None, False, 0)
        index = _follow(lines, index, column, logical) + 1
        yield logical


def _follow(lines: list[str], index: int, column: int, logical: _Logical) -> int:
    """Walk one Python logical line from (index, column); fill `logical`; return its last line."""
    depth = 0
    quote = ""  # the open string's delimiter: ', ", ''' or \"\"\"
    last = ""  # the last significant character outside strings and comments on the current line
    prev = ""
    while True:
        text = lines[index]
        comment = False
        at = column
        length = len(text)
        while at < length:
            char = text[at]
            if quote:
                if char == "\\":
                    at += 2
                    continue
                if text.startswith(quote, at):
                    at += len(quote)
                    quote = ""
                    last = "'"
                    logical.tokens += 1
                    continue
                at += 1
                continue
            if char in "'\"":
                quote = char * 3 if text.startswith(char * 3, at) else char
                at += len(quote)
                continue
            if char == "#":
                comment = True
                break
            if char in _OPEN:
                depth += 1
            elif char in _CLOSE:
                depth = max(depth - 1, 0)
            elif char == "=" and depth == 0 and logical.assign is None and prev not in _NOT_ASSIGN_BEFORE \
                    and not text.startswith("=", at + 1):
                logical.assign = (index, at + 1)
            if char not in " \t":
                if not (prev.isalnum() or prev == "_") or not (char.isalnum() or char == "_"):
                    logical.tokens += 1
                last = char
            prev = char if char not in " \t" else " "
            at += 1
        continued = not comment and text.endswith("\\")
        if quote and len(quote) == 1 and not text.endswith("\\"):
            quote = ""  # an unterminated one-line string ends with its line (a tokenizer error)
        if index + 1 >= len(lines) or not (depth > 0 or quote or continued):
            logical.end = index
            logical.help_end = last == "?" and not comment
            return index
        index, column, prev, last = index + 1, 0, " ", ""
