"""`explain --log` as text (for people) and JSON (schema: tfdoctor/schema/explain-log.schema.json).

A log line is echoed (redacted, shortened) so the reader sees which line was understood; secrets that
ended up in a log (a token in a URL) go through the same redactor as `collect`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from tfdoctor import __version__
from tfdoctor.facts.redact import excerpt
from tfdoctor.logs.explanation import ERROR, HARMLESS, INFO, UNCONFIRMED, WARNING, ExplainedMessage, counts
from tfdoctor.logs.read import LogText
from tfdoctor.logs.unrecognised import Unrecognised
from tfdoctor.model import Status

EXPLAIN_LOG_SCHEMA_VERSION = 1
ECHO_CHARS = 240
GLYPH = {ERROR: "✗", WARNING: "!", INFO: "i", UNCONFIRMED: "?", HARMLESS: "✓"}
HEADLINE = {
    ERROR: "the cause is on this machine",
    WARNING: "a likely cause is on this machine",
    INFO: "a related setting on this machine",
    UNCONFIRMED: "no check found its cause on this machine",
    HARMLESS: "harmless",
}


def source_line(url: str) -> str:
    """Where the message's wording was taken from, said as what it is: the code that prints it, or a
    thread (often another project's) that quotes it as printed — never a thread called its source."""
    if "/issues/" in url or "/pull/" in url or "/discussions/" in url:
        return f"quoted as printed in: {url}"
    return f"wording from the code that prints it: {url}"


def echo_line(text: str) -> str:
    return excerpt(text, ECHO_CHARS)


def _result_lines(explained: ExplainedMessage) -> list[str]:
    from tfdoctor.report.text import fix_lines

    lines: list[str] = []
    passed, unchecked, inapplicable = [], [], []
    for result in explained.results:
        if result.status is Status.FAILED:
            for finding in result.findings:
                severity = finding.severity.label if finding.severity else result.severity.label
                lines.append(f"    {finding.code} {finding.name} ({severity}): {finding.message}")
                for fix in finding.fixes:
                    lines.append(f"      fix ({fix.applicability.value}): {fix.title}")
                    lines.extend(f"        {step}" for step in fix_lines(fix))
        elif result.status is Status.PASSED:
            passed.append(result.code)
        elif result.status is Status.NOT_CHECKED:
            unchecked.append(f"{result.code} ({result.reason})")
        elif result.status is Status.NOT_APPLICABLE:
            inapplicable.append((result.code, result.reason))
        else:
            lines.append(f"    {result.code} {result.name}: check crashed: {result.reason}")
    if passed:
        lines.append(f"    checked, nothing found: {', '.join(passed)}")
    lines.extend(f"    not checked: {item}" for item in unchecked)
    for reason in dict.fromkeys(reason for _, reason in inapplicable):
        codes = ", ".join(code for code, why in inapplicable if why == reason)
        lines.append(f"    not applicable here: {codes} ({reason})")
    return lines


NO_GPU_HEADLINE = "there is no GPU on this machine"


def _advice(item: ExplainedMessage) -> str:
    message = item.sighting.message
    return message.without_gpu if item.without_gpu and message.without_gpu else message.advice


def _unrecognised_lines(unknown: Unrecognised | None, hint: bool = True) -> list[str]:
    if unknown is None:
        return []
    if not unknown.lines:
        return ["Every non-blank line was recognised."]
    out = [f"{unknown.lines} non-blank line(s) not recognised, {unknown.error_looking_total} of them look like "
           "errors" + (":" if unknown.error_looking else ".")]
    out += [f"    line {number}: {echo_line(text)}" for number, text in unknown.error_looking]
    if unknown.error_looking_total > len(unknown.error_looking):
        out.append(f"    … and {unknown.error_looking_total - len(unknown.error_looking)} more")
    if unknown.error_looking and hint:
        out.append("tfdoctor does not know these messages: docs/log-messages.md says how to add one.")
    return out


def render_text(log: LogText, explained: Sequence[ExplainedMessage], checked: bool,
                unknown: Unrecognised | None = None) -> str:
    out = [f"tfdoctor: {log.source}: {log.lines} line(s) read"
           + (f" (the last {log.bytes_read // 1024} KiB; {log.bytes_skipped // 1024} KiB before them skipped)"
              if log.bytes_skipped else "")
           + (f"; {log.stopped}" if log.stopped else "")
           + f", {len(explained)} known message(s)"]
    if not explained:
        out.append("No message tfdoctor knows was found (docs/log-messages.md lists them, and how to add one).")
        out += _unrecognised_lines(unknown, hint=False)
        return "\n".join(out) + "\n"
    for item in explained:
        message, sighting = item.sighting.message, item.sighting
        times = f" ({sighting.count}×)" if sighting.count > 1 else ""
        headline = NO_GPU_HEADLINE if item.without_gpu and item.verdict == UNCONFIRMED else HEADLINE[item.verdict]
        out += ["", f"{GLYPH[item.verdict]} {message.id} — line {sighting.line}{times}, from {message.origin}: "
                    f"{headline}",
                f"    > {echo_line(sighting.text)}",
                f"    means: {message.meaning}"]
        if item.verdict in (ERROR, WARNING, INFO):
            out.append("    on this machine:")
        out += _result_lines(item)
        if item.verdict in (UNCONFIRMED, HARMLESS) or not checked:
            out.append(f"    what to do: {_advice(item)}")
        out.append(f"    {source_line(message.source)}")
    tally = counts(explained)
    out += ["", "tfdoctor: " + ", ".join(f"{tally[v]} {v}" for v in (ERROR, WARNING, INFO, UNCONFIRMED, HARMLESS))]
    out += _unrecognised_lines(unknown)
    if any(item.results for item in explained):
        out.append("Run `tfdoctor explain CODE` for what a check looks at, `tfdoctor fix` to apply the safe fixes.")
    return "\n".join(out) + "\n"


def explanation_to_json(log: LogText, explained: Sequence[ExplainedMessage],
                        facts_meta: Mapping[str, Any] | None, unknown: Unrecognised | None = None) -> dict[str, Any]:
    document = {
        "schema_version": EXPLAIN_LOG_SCHEMA_VERSION,
        "tfdoctor_version": __version__,
        "log": {"source": log.source, "lines": log.lines, "bytes_read": log.bytes_read,
                "bytes_skipped": log.bytes_skipped, "stopped": log.stopped},
        "facts": ({k: facts_meta.get(k) for k in ("hostname", "collected_at", "root")}
                  if facts_meta is not None else None),
        "summary": counts(explained),
        "messages": [
            {
                "id": item.sighting.message.id,
                "origin": item.sighting.message.origin,
                "line": item.sighting.line,
                "count": item.sighting.count,
                "text": echo_line(item.sighting.text),
                "meaning": item.sighting.message.meaning,
                "harmless": item.sighting.message.harmless,
                "advice": _advice(item),
                "source": item.sighting.message.source,
                "verdict": item.verdict,
                "checks": [r.to_json() for r in item.results],
            }
            for item in explained
        ],
    }
    if unknown is not None:
        document["unrecognised"] = {
            "lines": unknown.lines, "error_looking_total": unknown.error_looking_total,
            "error_looking": [{"line": number, "text": echo_line(text)} for number, text in unknown.error_looking]}
    return document


def render_json(log: LogText, explained: Sequence[ExplainedMessage], facts_meta: Mapping[str, Any] | None,
                unknown: Unrecognised | None = None) -> str:
    return json.dumps(explanation_to_json(log, explained, facts_meta, unknown), indent=2, ensure_ascii=True) + "\n"
