"""What reaches the person: the one place output is made safe for a terminal, fitted to its width and
written to a stream. Every command writes through `write` (tfdoctor.usage.emit is it); every renderer
passes each value that came from the machine, a file or a child process through `safe` first.

- `safe(text)`: control characters are shown, never obeyed. C0 (but newline and tab), DEL, C1, lone
  surrogates and the bidirectional overrides become visible escapes (`\\x1b`, `\\x9b`, `\\u202e`,
  `\\udcff`), so an OSC 52 sequence in an environment value cannot write the reader's clipboard, a CSI 2J
  cannot clear the screen, and the reader sees that something odd was there. One character class,
  searched once: linear in the text.
- `json_safe(text)`: JSON text keeps its exact values; json.dumps leaves DEL and C1 raw (only C0 must be
  escaped in JSON), so they are written as \\u escapes, which decode to the same string.
- `terminal_width()`, `wrap_width()`, `fit()`: COLUMNS, else the terminal's width, else 80; output to a
  pipe or a file is not wrapped (grep and the goldens see one line per row), output to a terminal is:
  each line too long breaks at spaces, continued under its own indent plus two.
- `write(text, err)`: a character the stream's encoding cannot show (an ISO-8859-1 locale and the ✗
  glyph) falls back to ASCII (glyphs) or a backslash escape; a closed or full stream raises
  `OutputLost`, which run_guarded turns into exit 4 with a message on the other stream.

Imported by the pre-job hook: standard library only, and nothing heavy at import time.
"""

from __future__ import annotations

import os
import re
import sys

FALLBACK_COLUMNS = 80
MIN_COLUMNS = 40  # below this nothing reads well; rich then folds what it must
EXIT_OUTPUT = 4  # the output could not be written (standard output or error closed or full)


# C0 but tab and newline, DEL, C1, the bidirectional controls (text shown in another order than stored),
# lone surrogates: one character class, so a search is one linear pass and a clean value is returned as it is.
# Compiled at first use: the pre-job hook on a healthy node prints nothing and pays for none of it.
CONTROL_CLASS = "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
_compiled: dict[str, re.Pattern[str]] = {}


def _pattern(expression: str) -> re.Pattern[str]:
    if expression not in _compiled:
        _compiled[expression] = re.compile(expression)
    return _compiled[expression]


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe(text: str) -> str:
    """`text` with every control character shown as an escape; newline and tab kept."""
    control = _pattern(CONTROL_CLASS)
    return control.sub(_escape, text) if control.search(text) else text


def safe_line(text: str) -> str:
    """As `safe`, and a value that must stay on one line (a --quiet line, a table cell) shows \\n and \\t too."""
    return safe(text).replace("\n", "\\n").replace("\t", "\\t")


def json_safe(text: str) -> str:
    """JSON text as json.dumps(ensure_ascii=False) wrote it, with DEL and C1 as \\u escapes (same values)."""
    return _pattern("[\x7f-\x9f]").sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def markup_safe(text: str) -> str:
    """A value for a rich string that is read as markup: safe, and its [brackets] not taken as styles."""
    from rich.markup import escape

    return escape(safe(text))


# Glyphs and what an encoding that cannot show them gets instead.
ASCII_GLYPHS = {"✗": "x", "✓": "+", "‼": "!!", "…": "...", "—": "--", "–": "-", "→": "->", "≥": ">=", "≤": "<=",
                "×": "x", "·": "-", "±": "+/-", "µ": "u", "°": " deg", "─": "-", "│": "|", "━": "-", "┃": "|"}
_ASCII_TABLE = {ord(k): v for k, v in ASCII_GLYPHS.items()}


def encodable(text: str, encoding: str | None) -> str:
    """`text` as `encoding` can write it: glyphs in ASCII, anything else still unwritable as an escape."""
    encoding = encoding or "utf-8"
    try:
        text.encode(encoding)
        return text
    except (UnicodeEncodeError, LookupError):
        pass
    text = text.translate(_ASCII_TABLE)
    try:
        return text.encode(encoding, "backslashreplace").decode(encoding)
    except LookupError:
        return text.encode("ascii", "backslashreplace").decode("ascii")


def terminal_width() -> int:
    """COLUMNS when set, else the terminal's width, else 80 (output to a file or a pipe)."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return max(MIN_COLUMNS, int(columns))
    for stream in (sys.stdout, sys.stderr):
        try:
            return max(MIN_COLUMNS, os.get_terminal_size(stream.fileno()).columns or FALLBACK_COLUMNS)
        except (AttributeError, OSError, ValueError):
            continue
    return FALLBACK_COLUMNS


def is_terminal(stream: object) -> bool:
    try:
        return bool(stream is not None and stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):
        return False


def wrap_width(err: bool = False) -> int | None:
    """The width to wrap at for this stream: the terminal's (COLUMNS first) when it is one, else None."""
    return terminal_width() if is_terminal(sys.stderr if err else sys.stdout) else None


def fit_line(line: str, width: int) -> list[str]:
    """One line broken at spaces to `width` columns, continued under its indent plus two; a word longer
    than the width is cut."""
    if len(line) <= width:
        return [line]
    import textwrap

    indent = line[: len(line) - len(line.lstrip(" "))]
    following = indent + "  " if len(indent) + 2 < width // 2 else ""
    wrapper = textwrap.TextWrapper(width=width, initial_indent=indent, subsequent_indent=following,
                                   break_long_words=True, break_on_hyphens=False, expand_tabs=False,
                                   replace_whitespace=False, drop_whitespace=True)
    return wrapper.wrap(line[len(indent):]) or [line[:width]]


def fit_command(line: str, width: int) -> list[str]:
    """A shell command to copy, fitted to `width`: broken only at a space outside quotes, each broken line
    ending in ` \\` (sh joins them again); a quoted word longer than the width stays whole, since a
    backslash-newline inside single quotes would become part of the value."""
    if len(line) <= width:
        return [line]
    indent = line[: len(line) - len(line.lstrip(" "))]
    words: list[str] = []
    current, quote = "", ""
    for char in line[len(indent):]:
        if char in "'\"" and (not quote or quote == char):
            quote = "" if quote else char
        if char == " " and not quote:
            if current:
                words.append(current)
            current = ""
            continue
        current += char
    if current:
        words.append(current)
    if quote:  # an apostrophe in prose, not a quoted word: wrapped as text
        return fit_line(line, width)
    lines, now = [], indent
    for word in words:
        candidate = f"{now} {word}" if now.strip() else now + word
        if now.strip() and len(candidate) + 2 > width:
            lines.append(now + " \\")
            now = indent + "  " + word
        else:
            now = candidate
    lines.append(now)
    return lines


def fit(text: str, width: int | None, commands_from: int | None = None) -> str:
    """Every line of `text` fitted to `width` (None: as it is). Lines holding escape sequences were laid
    out by rich at the width already and are left alone; with `commands_from`, a line indented by at least
    that many spaces is a command to copy (fit_command)."""
    if width is None:
        return text
    out = []
    for line in text.split("\n"):
        if "\x1b" in line:
            out.append(line)
        elif commands_from is not None and line.startswith(" " * commands_from):
            out.extend(fit_command(line, width))
        else:
            out.extend(fit_line(line, width))
    return "\n".join(out)


def listing(rows: list[tuple[str, str]], width: int | None) -> list[str]:
    """A list of (fixed columns, text) rows: one line each for a pipe (width None); on a terminal the text
    wraps under itself when at least 30 columns are left beside the fixed ones, else it goes on the lines
    below them, indented by 4 (a list of checks on an 80-column terminal)."""
    if width is None:
        return [head + text for head, text in rows]
    lines: list[str] = []
    for head, text in rows:
        if width - len(head) >= 30:
            wrapped = fit_line(" " * len(head) + text, width)
            lines.append(head + wrapped[0][len(head):])
            lines.extend(" " * len(head) + part.strip() for part in wrapped[1:])
        else:
            lines.append(head.rstrip())
            lines.extend(fit_line("    " + text, width))
    return lines


def fits(console: object, table: object) -> bool:
    """True when `table` can be drawn at the console's width without folding a cell's words."""
    from rich.measure import Measurement

    # Measured without the console's limit: rich clamps a table's measurement to the width it is given.
    options = console.options.update(width=10_000, max_width=10_000)  # type: ignore[attr-defined]
    return Measurement.get(console, options, table).maximum <= console.width  # type: ignore[arg-type,attr-defined]


class OutputLost(Exception):
    """Standard output or error is closed or cannot be written (a full device): nothing to show it on."""

    def __init__(self, stream: str, reason: str) -> None:
        super().__init__(f"cannot write to standard {stream}: {reason}")
        self.stream = stream


def _lost(err: bool, reason: str) -> OutputLost:
    # What is still buffered would fail again when the interpreter flushes the stream at exit (and
    # change the exit code to 120): the descriptor is pointed at /dev/null instead.
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 2 if err else 1)
        os.close(null)
    except OSError:
        pass
    return OutputLost("error" if err else "output", reason)


TEXT, STYLED, JSON, EXACT = "text", "styled", "json", "exact"


def write(text: str, err: bool = False, wrap: bool = False, kind: str = TEXT) -> None:
    """Write `text` to standard output (error with err=True) and flush. What is written depends on `kind`:

    - "text" (plain text for people): every control character shown as an escape (`safe`); wrap=True
      fits it to the terminal when the stream is one;
    - "styled": rich's rendering, its own escape sequences kept (the renderer passed each value through
      `safe` and laid it out at the width);
    - "json": exact values, DEL and C1 as \\u escapes (`json_safe`);
    - "exact": as given (a script for eval, a diff for patch), but `safe` when the stream is a terminal:
      there a person reads it, and a file name in a diff header may hold anything.

    BrokenPipeError passes through (a reader that stopped: `| head`)."""
    if not text:
        return
    stream = sys.stderr if err else sys.stdout
    if stream is None:  # the descriptor was closed before Python started (`>&-`)
        raise OutputLost("error" if err else "output", "it is closed")
    if kind == TEXT:
        text = safe(text)
        if wrap:
            text = fit(text, wrap_width(err))
    elif kind == JSON:
        text = json_safe(text)
    elif kind == EXACT and is_terminal(stream):  # for eval or patch through a pipe; a person reads this copy
        text = safe(text)
    try:
        try:
            stream.write(text)
        except UnicodeEncodeError:
            stream.write(encodable(text, getattr(stream, "encoding", None)))
        stream.flush()
    except BrokenPipeError:
        raise
    except (OSError, ValueError) as exc:  # EBADF, ENOSPC, EIO; ValueError: the stream object was closed
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise _lost(err, reason) from None
