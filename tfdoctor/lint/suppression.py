"""`# tfdoctor: noqa` comments: the whole line, or `# tfdoctor: noqa: SRC101, SRC103` for some codes.

Only real comments count (a string that contains the text does not): the text is tokenized, but only
for files that mention the marker at all, which keeps the common case at one substring search.
"""

from __future__ import annotations

import io
import re
import tokenize

_MARKER = "tfdoctor:"
_NOQA = re.compile(r"#\s*tfdoctor:\s*noqa(?::\s*(?P<codes>[A-Za-z]+[0-9]+(?:\s*,?\s*[A-Za-z]+[0-9]+)*))?",
                   re.IGNORECASE)
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
        codes = match.group("codes")
        line = token.start[0]
        if codes is None:
            found[line] = ALL
        else:
            found[line] = found.get(line, frozenset()) | frozenset(c.upper() for c in re.split(r"[\s,]+", codes) if c)
    return found


def is_suppressed(table: dict[int, frozenset[str]], line: int, code: str) -> bool:
    codes = table.get(line)
    if not codes:
        return False
    return codes is ALL or "*" in codes or any(code.startswith(c) for c in codes)
