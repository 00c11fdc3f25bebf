"""The one redactor: everything tfdoctor prints or records goes through it (reports in every format, `-v`
reasons, `collect`, the comments of fix scripts, errors that quote a file or an interpreter's stderr).

Only the values a fix script sets are exempt: they must be exactly what the job needs.

Two entry points:
  redact_text(text)   free text (a message, a reason, an error line): each secret inside it is replaced,
                      the rest stays readable.
  redact_value(tree)  a JSON-able tree (facts, a report): a string under a secret-looking key is replaced
                      whole; a string holding a well-known token format is replaced whole; a string
                      holding JSON (TF_CONFIG) is redacted key by key and written back as JSON; any other
                      string goes through redact_text.

And `excerpt(text)`: a short, single-line, redacted quotation of a file or of a process's output, for
errors (never more than EXCERPT_CHARS characters of someone else's file in a message).

What is left alone on purpose: paths, versions, host names, GPU UUIDs, hashes (in wheel paths, RECORD
files) — what tfdoctor needs and what is not a credential. tests/test_facts_redact.py holds the corpus of both.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import Any

REDACTED = "<redacted>"
EXCERPT_CHARS = 120

# A key or variable name that says its value is a secret.
SECRET_NAME = re.compile(
    r"(TOKEN|SECRET|PASSW|PASSPHRASE|PWD$|API_?KEY|ACCESS_?KEY|PRIVATE|CREDENTIAL|AUTH|COOKIE|SESSION|SIGNATURE"
    r"|(^|[_.-])(KEY|PW|PASS)$)",
    re.IGNORECASE)
# Free text written by a person (a Slurm job comment): tfdoctor needs none of it, and it may hold anything.
FREE_TEXT_NAME = re.compile(r"(COMMENT|DESCRIPTION)$", re.IGNORECASE)

# Well-known credential formats, each specific enough not to match a path, a version or a hash.
TOKEN_FORMATS = re.compile(
    r"(?<![A-Za-z0-9])("
    r"(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}"          # AWS access key ids
    r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,}"          # GitHub
    r"|gl(?:pat|dt|rt|ptt|cbt|ft|imt|agent|oas|soat)-[A-Za-z0-9_-]{20,}"  # GitLab
    r"|GR1348941[A-Za-z0-9_-]{20,}"                                       # GitLab runner registration
    r"|xox[abposr]-[A-Za-z0-9-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{10,}"       # Slack
    r"|sk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}|sk_(?:live|test)_[A-Za-z0-9]{16,}"  # OpenAI, Anthropic, Stripe
    r"|hf_[A-Za-z0-9]{30,}|npm_[A-Za-z0-9]{36}|pypi-AgE[A-Za-z0-9_-]{50,}"     # Hugging Face, npm, PyPI
    r"|AIza[0-9A-Za-z_-]{35}"                                             # Google API keys
    r")")
# JWTs (header.payload.signature). Matched from the start of the run of base64url characters the header
# ends (never from inside it), so a long run with no '.eyJ' after it is scanned once, not once per 'eyJ' in
# it; _jwt_spans then finds where the token starts inside that run.
JWT_RUN = re.compile(
    r"(?<![A-Za-z0-9_-])(?P<head>[A-Za-z0-9_-]{11,})\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*")
JWT_START = re.compile(r"(?<![A-Za-z0-9])eyJ")
PRIVATE_KEY_BLOCK = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----.*?(-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|\Z)", re.DOTALL)
# "Bearer <token>", and any scheme after "Authorization:" (Basic, Token, Digest…).
AUTH_SCHEME = re.compile(
    r"(?P<scheme>\b[Bb]earer|\b[Aa]uthorization\s*[:=]\s*[A-Za-z]+)(?P<space>\s+)[A-Za-z0-9._~+/=-]{8,}")
# scheme://userinfo@ — the userinfo is replaced whole (a token is often the user name alone). A scheme is
# at most 32 characters and starts where a run of scheme characters starts, so `a-a-a-…` costs one scan,
# not one per letter. `scheme:/userinfo@` (one slash: a path normaliser, as --root's, folded the two) is
# taken for the network schemes below only, so a path list such as `lib:/opt@2` stays as it is. The password
# after the user's colon may hold a `/` (SQLAlchemy takes `postgresql://u:pa/ss@db`); the user may not, so
# `git+https://host/repo@v1` keeps its path. The password is at most 256 characters: each match is bounded.
URL_CREDENTIALS = re.compile(
    r"(?P<scheme>(?<![a-zA-Z0-9+.-])(?P<name>[a-zA-Z][a-zA-Z0-9+.-]{0,31}):(?P<slashes>//?))"
    r"(?P<userinfo>[^/?#@\s:]+(?::[^?#@\s]{0,256})?|:[^?#@\s]{1,256})@")
NETWORK_SCHEMES = frozenset({
    "http", "https", "ftp", "ftps", "sftp", "ssh", "git", "git+https", "git+ssh", "git+http", "svn", "hg",
    "s3", "gs", "hdfs", "webhdfs", "redis", "rediss", "postgres", "postgresql", "mysql", "mongodb",
    "mongodb+srv", "amqp", "amqps", "ws", "wss", "grpc", "grpcs", "smb", "nfs", "ldap", "ldaps"})
# ?token=… &api_key=… ;sig=… in a URL's query.
QUERY_SECRET = re.compile(r"(?P<lead>[?&;](?P<key>[A-Za-z0-9_.-]+)=)(?P<value>[^&#;\s\"']+)")
QUERY_SECRET_KEYS = re.compile(r"^(key|sig|code|x-amz-credential|x-amz-security-token)$", re.IGNORECASE)
# A command-line flag: --password=…, -api_key=…, --token … (a flag inside TF_XLA_FLAGS, a job name, a
# quoted command). A flag starts after a separator (never inside `a-a-a`), its name is at most 100
# characters; the separated form takes a value that is not itself a flag.
FLAG = re.compile(
    r"(?<![\w.-])--?(?P<key>[A-Za-z_][\w.-]{0,99})(?:=|[ \t]+(?!-))"
    r"(?P<value>\"[^\"\n]*\"|'[^'\n]*'|[^\s&;,'\"]+)")
# NAME=value in free text, or "name": "value" in JSON quoted inside text.
ASSIGNMENT = re.compile(
    r"(?P<lead>(?<![\w.-])(?P<key>[A-Za-z_][\w.-]*)\s*=\s*)(?P<value>\"[^\"]*\"|'[^']*'|[^\s&;,'\"]+)"
    r"|(?P<jlead>\"(?P<jkey>[^\"\\]{1,100})\"\s*:\s*)(?P<jvalue>\"(?:[^\"\\]|\\.)*\")")


# Mappings whose keys name Python modules or distributions (python.modules {"secrets": "/usr/lib/python3.11"},
# python.distributions {"google-auth": {...}}): such a key is the name of a module, not of a variable, and
# says nothing about its value (which still goes through the token formats like any string).
NAME_KEYED = frozenset({"modules", "distributions", "watched"})


def is_secret_name(name: str) -> bool:
    return bool(SECRET_NAME.search(name))


def _secret_spans(text: str) -> list[tuple[int, int]]:
    """Where the secrets are in `text` (start, end), sorted and merged; only the secret part of each
    match (the password of a URL, the value of password=…), so the rest stays readable."""
    spans: list[tuple[int, int]] = []
    spans += [m.span() for m in PRIVATE_KEY_BLOCK.finditer(text)]
    spans += [m.span("userinfo") for m in URL_CREDENTIALS.finditer(text)
              if m.group("slashes") == "//" or m.group("name").lower() in NETWORK_SCHEMES]
    spans += [m.span("value") for m in QUERY_SECRET.finditer(text)
              if is_secret_name(m.group("key")) or QUERY_SECRET_KEYS.match(m.group("key"))]
    spans += [(m.end("space"), m.end()) for m in AUTH_SCHEME.finditer(text)]
    spans += [m.span() for m in TOKEN_FORMATS.finditer(text)]
    spans += _jwt_spans(text)
    for m in FLAG.finditer(text):
        if is_secret_name(m.group("key")):
            start, end = m.span("value")
            quoted = m.group("value")[:1] in ("'", '"')
            spans.append((start + quoted, end - quoted))
    for m in ASSIGNMENT.finditer(text):
        if m.group("key") is not None and is_secret_name(m.group("key")):
            start, end = m.span("value")
            quoted = m.group("value")[:1] in ("'", '"')
            spans.append((start + quoted, end - quoted))
        elif m.group("jkey") is not None and is_secret_name(m.group("jkey")):
            start, end = m.span("jvalue")
            spans.append((start + 1, end - 1))
    merged: list[tuple[int, int]] = []
    for start, end in sorted(s for s in spans if s[1] > s[0]):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _jwt_spans(text: str) -> list[tuple[int, int]]:
    spans = []
    for m in JWT_RUN.finditer(text):
        head = m.group("head")
        start = JWT_START.search(head)  # the first one: a later 'eyJ' leaves fewer characters before the '.'
        if start is not None and len(head) - start.end() >= 8:
            spans.append((m.start() + start.start(), m.end()))
    return spans


def _has_token(value: str) -> bool:
    return bool(TOKEN_FORMATS.search(value) or PRIVATE_KEY_BLOCK.search(value) or AUTH_SCHEME.search(value)
                or _jwt_spans(value))


def redact_text(text: str) -> str:
    """Each secret inside free text replaced by <redacted>; everything else as it was."""
    if not text:
        return text
    out, last = [], 0
    for start, end in _secret_spans(text):
        out += [text[last:start], REDACTED]
        last = end
    out.append(text[last:])
    return "".join(out)


def redact_in_context(before: str, text: str) -> str:
    """`text` redacted as it would be right after `before` and a space: a value a parser split from its flag
    (`--token`, `abc`) is still recognised as that flag's value."""
    joined = f"{before} {text}" if before else text
    offset = len(joined) - len(text)
    out, last = [], offset
    for start, end in _secret_spans(joined):
        if end <= offset:
            continue
        out += [joined[last:max(start, offset)], REDACTED]
        last = end
    out.append(joined[last:])
    return "".join(out)


def _redact_split_list(items: list[str]) -> list[str] | None:
    """A probe may have split a path list on ':' before we see it (LD_LIBRARY_PATH), cutting a URL with
    credentials into pieces no pattern recognises: look at the list joined again, and redact every item
    a secret overlaps. None when nothing in the joined list is secret."""
    joined = ":".join(items)
    spans = _secret_spans(joined)
    if not spans:
        return None
    # One sweep: items and spans (sorted, merged, so their ends rise too) both go left to right, so 5,000
    # credential-bearing entries cost 5,000 steps, not 5,000 × 5,000 (11 s).
    out, offset, first = [], 0, 0
    for item in items:
        end = offset + len(item)
        while first < len(spans) and spans[first][1] <= offset:
            first += 1  # ends before this item: before every later one too
        overlaps = first < len(spans) and spans[first][0] < max(end, offset + 1)
        out.append(REDACTED if overlaps else item)
        offset = end + 1
    return out


def _secret_key(name: str) -> bool:
    return bool(name) and (is_secret_name(name) or bool(FREE_TEXT_NAME.search(name)))


def _redact_string(value: str, name: str) -> str:
    if _secret_key(name):
        return REDACTED if value else value
    if _has_token(value):
        # A value that is (or carries) a credential goes whole: splitting it into "safe" parts risks a leak.
        return REDACTED
    stripped = value.strip()
    if stripped[:1] in ("{", "[") and len(stripped) <= 1_000_000:
        embedded = _redact_json_string(stripped)
        if embedded is not None:
            return embedded
    return redact_text(value)


def _redact_json_string(text: str) -> str | None:
    """A variable holding JSON (TF_CONFIG, a cluster spec): redacted key by key, written back compactly.
    None when it is not JSON (then it is treated as text)."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    redacted = redact_value(data)
    if redacted == data:
        return text
    return json.dumps(redacted, separators=(",", ":"), ensure_ascii=False)


def redact_value(value: Any, name: str = "") -> Any:
    """A JSON-able tree with every secret replaced; `name` is the key the value sits under. Under a
    secret-looking key everything goes, a whole table included ({"auth": {...}})."""
    if isinstance(value, (Mapping, list, tuple, int, float)) and not isinstance(value, bool) and _secret_key(name):
        return REDACTED
    if isinstance(value, str):
        return _redact_string(value, name)
    if isinstance(value, Mapping):
        if name in NAME_KEYED:
            return {k: redact_value(v) for k, v in value.items()}
        return {k: redact_value(v, str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        if len(value) > 1 and all(isinstance(v, str) for v in value):
            split = _redact_split_list(list(value))
            if split is not None:
                return [item if item == REDACTED else redact_value(item, name) for item in split]
        if len(value) > 1 and all(isinstance(v, Mapping) and isinstance(v.get("dir"), str) for v in value):
            # Records of a split path list (cuda_libs.ld_library_path_dirs: {dir, state}): their entries
            # joined again, as above, so a URL with credentials cut on ':' is redacted in every record.
            split = _redact_split_list([v["dir"] for v in value])
            if split is not None:
                value = [{**v, "dir": REDACTED} if d == REDACTED else v for v, d in zip(value, split, strict=True)]
        return [redact_value(v, name) for v in value]
    return value


# The name `collect` used first; kept so plugins written against it keep working.
redact = redact_value


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """A short, single-line, redacted quotation (of a file's line, of a process's last stderr line)."""
    line = " ".join(text.split())
    cut = line[: limit * 4]  # redact before cutting, on a bounded piece: a token cut in half is not recognised
    shown = redact_text(cut)
    if len(shown) > limit or len(line) > len(cut):
        shown = shown[:limit].rstrip() + "…"
    return shown
