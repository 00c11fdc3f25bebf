"""The one validator and the quoting for everything tfdoctor writes into a script.

Every variable name that reaches a script (env.sh, env.fish, a TaskProlog's output, the launcher, a
Python fix file, tune's winner) passes `env_name`; every value is quoted by the function of the
script's language here (`sh_quote`, `fish_quote`); every comment line is `comment_text`. Files that
carry names into a script later (tune's space, resume and results files) are checked with `env_name`
when they are read, so a name like `X;touch /tmp/PWN` is refused at the door, not at the renderer.
"""

from __future__ import annotations

import re

from tfdoctor.facts.redact import redact_text

# POSIX: letters, digits and underscores, not starting with a digit. Nothing else is safe unquoted in
# `NAME=value`, `export NAME`, `set -gx NAME`, `${NAME}` or slurmstepd's `export NAME=value`.
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}")


class ScriptValueError(ValueError):
    """A name or value that cannot be written into a script safely."""


def is_env_name(name: object) -> bool:
    return isinstance(name, str) and ENV_NAME.fullmatch(name) is not None


def env_name(name: object, where: str = "") -> str:
    """`name` itself when it is a valid environment variable name; ScriptValueError otherwise."""
    if not is_env_name(name):
        shown = repr(name) if len(repr(name)) <= 60 else repr(name)[:57] + "..."
        raise ScriptValueError(f"{where + ': ' if where else ''}{shown} is not a valid environment variable name "
                               "(letters, digits and _, not starting with a digit)")
    assert isinstance(name, str)
    return name


def _value(value: str) -> str:
    if "\0" in value:  # no environment value can hold NUL, and shells disagree on what they do with one
        raise ScriptValueError("a value with a NUL character cannot be written into a script")
    return value


def sh_quote(value: str) -> str:
    """POSIX sh: single quotes, inside which nothing is special; a quote is closed, escaped, reopened."""
    return "'" + _value(value).replace("'", "'\\''") + "'"


# What a POSIX shell takes literally in a word: shlex.quote's set (letters, digits, _, and @%+=:,./-).
_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-")


def sh_word(value: str) -> str:
    """POSIX sh, for a command shown to a person: the word as it is when nothing in it is special to the
    shell (`/opt/venv/bin/python`), else sh_quote's form. What shlex.quote gives, with this module's quoting
    (and without importing shlex on the pre-job hook's path)."""
    return value if value and all(ch in _PLAIN for ch in value) else sh_quote(value)


def fish_quote(value: str) -> str:
    """fish: inside single quotes only backslash and the quote itself are special."""
    return "'" + _value(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


def comment_text(text: str) -> str:
    """One line, no control characters, secrets redacted: a comment must not be able to end early and
    start code, nor carry a token from a finding's message into a file that gets shared."""
    return "".join(ch if ch.isprintable() else " " for ch in redact_text(text)).strip()
