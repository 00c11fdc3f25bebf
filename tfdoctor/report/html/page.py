"""The page: sections assembled into one HTML document, with every string redacted and escaped."""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from tfdoctor.facts.redact import redact_text, redact_value
from tfdoctor.terminal import safe


@dataclass(frozen=True)
class Section:
    """One section of the report page: its anchor, title and HTML body."""

    id: str  # the anchor, also what the browser tests look for: <section id="report-ID">
    title: str
    body: str  # HTML, built only from text()/value()/table() and figure divs
    plots: int = 0  # how many plotly figures the body holds


def text(value: object) -> str:
    """A value as page text: each secret in it redacted (the one redactor), its control characters shown as
    escapes (a copied command must not carry them into a terminal), then HTML-escaped."""
    return html.escape(safe(redact_text(str(value))), quote=True)


def value(name: str, data: Any) -> str:
    """A fact or evidence value under its name (a secret-named key redacts the whole value)."""
    cleaned = redact_value(data, name)
    shown = cleaned if isinstance(cleaned, str) else json.dumps(cleaned, sort_keys=True, default=str)
    return html.escape(safe(shown), quote=True)


def table(header: Sequence[str], rows: Iterable[Sequence[str]], css: str = "") -> str:
    """A table whose cells are already-escaped HTML (callers pass text()/value() output)."""
    head = "".join(f"<th>{text(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f'<table class="{css}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def copyable(command: str) -> str:
    """A command with a copy button (the button copies exactly the text shown)."""
    shown = text(command)
    button = f'<button type="button" class="copy" data-copy="{shown}">Copy</button>'
    return f'<div class="cmd"><pre>{shown}</pre>{button}</div>'


def render_page(sections: Sequence[Section], title: str, subtitle: str, plotly_js: str = "") -> str:
    nav = "".join(f'<a href="#report-{s.id}">{text(s.title)}</a>' for s in sections)
    body = "".join(f'<section id="report-{s.id}"><h2>{text(s.title)}</h2>{s.body}</section>' for s in sections)
    # plotly's bundle once, in the head, before any figure's script runs; a page without plots carries none.
    script = f"<script>{plotly_js}</script>" if plotly_js else ""
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{text(title)}</title><style>{_STYLE}</style>{script}</head>"
        f'<body><header><h1>{text(title)}</h1><p class="sub">{text(subtitle)}</p><nav>{nav}</nav></header>'
        f"<main>{body}</main><script>{_COPY_SCRIPT}</script></body></html>\n"
    )


_STYLE = """
:root{--err:#b3261e;--warn:#a15c00;--info:#0b57d0;--ok:#146c2e;--muted:#5f6368;--line:#dadce0}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#202124;background:#fff}
header{padding:16px 24px;border-bottom:1px solid var(--line);background:#f8f9fa}
header h1{margin:0;font-size:22px} .sub{margin:4px 0 8px;color:var(--muted)}
nav a{margin-right:16px;color:var(--info);text-decoration:none} main{padding:8px 24px 48px;max-width:1200px}
section{margin-top:24px} h2{border-bottom:2px solid var(--line);padding-bottom:4px} h3{margin:18px 0 6px}
table{border-collapse:collapse;margin:6px 0 12px;width:100%} th,td{border:1px solid var(--line);padding:4px 8px;
text-align:left;vertical-align:top} th{background:#f1f3f4} td.num{text-align:right;font-variant-numeric:tabular-nums}
.finding{border-left:4px solid var(--line);padding:6px 12px;margin:10px 0;background:#fafafa}
.finding.error{border-color:var(--err)} .finding.warning{border-color:var(--warn)}
.finding.info{border-color:var(--info)}
.badge{display:inline-block;border-radius:10px;padding:0 8px;font-size:12px;color:#fff;background:var(--muted)}
.badge.error{background:var(--err)} .badge.warning{background:var(--warn)} .badge.info{background:var(--info)}
.badge.passed{background:var(--ok)} code,pre{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12.5px}
.cmd{display:flex;gap:8px;align-items:flex-start;margin:4px 0} .cmd pre{flex:1;margin:0;padding:6px 8px;
background:#f1f3f4;border-radius:4px;white-space:pre-wrap;word-break:break-all}
button.copy{cursor:pointer;border:1px solid var(--line);background:#fff;border-radius:4px;padding:4px 10px}
.counts span{margin-right:14px} .differs{background:#fde7e9} .odd{font-weight:600} .muted{color:var(--muted)}
dl.summary{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px} dl.summary dt{color:var(--muted)}
.plot{min-height:360px} .scroll{overflow-x:auto;max-width:100%} .scroll table{width:auto}
.scroll td{max-width:28em;overflow-wrap:anywhere} span.node{white-space:nowrap}
ol.next li{margin:8px 0} .warn-note{border-left:4px solid var(--warn);padding:4px 10px;background:#fff8e1}
details.group{margin:6px 0} details.group summary{cursor:pointer;font-weight:600}
"""

# Clipboard access needs a secure context; a report opened from a file may not have one, so fall
# back to a selected textarea. Nothing here may throw on load (the browser test counts console errors).
_COPY_SCRIPT = """
document.querySelectorAll('button.copy').forEach(function(button){
  button.addEventListener('click', function(){
    var value = button.getAttribute('data-copy');
    function fallback(){var area=document.createElement('textarea');area.value=value;document.body.appendChild(area);
      area.select();try{document.execCommand('copy');}catch(e){}document.body.removeChild(area);}
    if (navigator.clipboard && window.isSecureContext){navigator.clipboard.writeText(value).catch(fallback);}
    else {fallback();}
    button.textContent='Copied';setTimeout(function(){button.textContent='Copy';},1500);
  });
});
"""
