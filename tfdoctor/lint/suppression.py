"""`# tfdoctor: noqa` comments: the whole line, or `# tfdoctor: noqa: SRC101, SRC103` for some codes.

Only real comments count (a string that contains the text does not): the text is tokenized, but only
for files that mention the marker at all, which keeps the common case at one substring search.
"""

from __future__ import annotations

import io
import re
import tokenize

_MARKER = "tfdoctor:"
# Linear on any comment (issue 24, item 4): the codes are split off by hand, not by a repeated group
# whose separators (`\s*,?\s*`) could match the same run of blanks in many ways.
_NOQA = re.compile(r"#\s*tfdoctor:\s*noqa(?P<rest>:.*)?", re.IGNORECASE)
_CODE = re.compile(r"[A-Za-z]+[0-9]+")
_SEPARATORS = re.compile(r"[\s,]+")
ALL = frozenset({"*"})


def suppressions(text: str) -> dict[int, frozenset[str]]:
    """line → codes suppressed there (`ALL` for a bare noqa). Codes match by prefix, like --ignore."""
    if _MARKER not in text:
        return {}
    found: dict[int, frozenset[str]] = {}
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return {}
    for token in tokens:
        if token.type != tokenize.COMMENT:
            continue
        match = _NOQA.search(token.string)
        if match is None:
            continue
        codes = _codes(match.group("rest"))
        line = token.start[0]
        if not codes:
            found[line] = ALL
        else:
            found[line] = found.get(line, frozenset()) | codes
    return found


def _codes(rest: str | None) -> frozenset[str]:
    """`: SRC101, SRC103 because …` → {SRC101, SRC103}: the leading words that look like codes."""
    codes = []
    for word in _SEPARATORS.split(rest[1:].strip()) if rest else ():
        if not _CODE.fullmatch(word):
            break
        codes.append(word.upper())
    return frozenset(codes)


def is_suppressed(table: dict[int, frozenset[str]], line: int, code: str) -> bool:
    codes = table.get(line)
    if not codes:
        return False
    return codes is ALL or "*" in codes or any(code.startswith(c) for c in codes)
