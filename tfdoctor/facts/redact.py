"""Redaction for facts that leave the machine (`tfdoctor collect`): bug reports, fleet files.

A value is replaced when its variable's name says secret (TOKEN, PASSWORD, KEY, …) or when the value
itself looks like one (credentials in a URL, a bearer token, a well-known key format). Paths and
numbers, which are what tfdoctor needs, are left alone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

REDACTED = "<redacted>"

SECRET_NAME = re.compile(r"(TOKEN|SECRET|PASSW|PASSPHRASE|PWD$|API_?KEY|PRIVATE|CREDENTIAL|AUTH|COOKIE|SESSION)",
                         re.IGNORECASE)
URL_CREDENTIALS = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<userinfo>[^/@\s:]+:[^/@\s]+)@")
SECRET_VALUE = re.compile(
    r"(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|AKIA[0-9A-Z]{16}|xox[abpr]-[A-Za-z0-9-]{10,}"
    r"|sk-[A-Za-z0-9_-]{20,}|hf_[A-Za-z0-9]{20,}|glpat-[A-Za-z0-9_-]{20,}|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]+"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----|[Bb]earer\s+[A-Za-z0-9._~+/-]{16,})"
)


def redact_value(value: str) -> str:
    if SECRET_VALUE.search(value):
        return REDACTED
    return URL_CREDENTIALS.sub(lambda m: f"{m.group('scheme')}{REDACTED}@", value)


def redact(value: Any, name: str = "") -> Any:
    """Redact a JSON-able tree; `name` is the key the value sits under."""
    if isinstance(value, str):
        if name and SECRET_NAME.search(name):
            return REDACTED
        return redact_value(value)
    if isinstance(value, Mapping):
        return {k: redact(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v, name) for v in value]
    return value
