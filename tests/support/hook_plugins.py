"""Plugins that misbehave, for the hook tests: loaded through a patched entry-point list."""

from __future__ import annotations

import threading

from tfdoctor.model import Severity
from tfdoctor.registry import check, probe


@probe("wedged")
def wedged(machine: object) -> dict[str, object]:
    threading.Event().wait()  # a driver call that never returns
    return {}


@check("ZZZ999", "always-crashes", Severity.ERROR)
def always_crashes(facts: object) -> None:
    """What it does: crashes."""
    raise RuntimeError("boom")
