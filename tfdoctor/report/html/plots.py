"""plotly, loaded only when a section draws: an optional extra (`pip install '<tfdoctor checkout>[report]'`)."""

from __future__ import annotations

from typing import Any


def plot_text(value: object) -> str:
    """A string from an input file as plotly must get it to show it as text: redacted, then its markup
    characters as entities. plotly draws its own pseudo-HTML in labels, ticks and hover text (`<a href>`
    becomes a link, `<span style="background:url(…)">` makes the browser fetch), and decodes &lt; &gt; &amp;
    back into the characters they stand for."""
    from tfdoctor.facts.redact import redact_text

    return redact_text(str(value)).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class PlottingUnavailable(Exception):
    """plotly (or optuna, for a tune) is not installed: the caller turns it into a usage error."""


def require(module: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise PlottingUnavailable(
            f"this report section needs {module.split('.')[0]}, which is not installed: pip install "
            "'<tfdoctor checkout>[report]' (the folder of your tfdoctor clone) installs plotly and optuna"
        ) from None


def plotly_bundle() -> str:
    offline = require("plotly.offline")
    return str(offline.get_plotlyjs())


def figure_div(figure: Any, div_id: str, height: int = 380) -> str:
    """A figure as a div plus the script that draws it; the bundle itself is inlined once by the page."""
    figure.update_layout(height=height, margin={"l": 60, "r": 20, "t": 50, "b": 50}, template="plotly_white")
    return '<div class="plot">' + figure.to_html(
        full_html=False, include_plotlyjs=False, div_id=div_id, config={"displaylogo": False, "responsive": True}
    ) + "</div>"
