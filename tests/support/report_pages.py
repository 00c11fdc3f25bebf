"""A report page, or one section's body, as its reader sees it: the text without tags, entities or plotly's
bundle and figure scripts."""

from __future__ import annotations

import html
import re


def visible_text(page: str) -> str:
    """The page's text as in its tables, the markup's line breaks kept."""
    page = re.sub(r"<script>.*?</script>", "", page, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def visible_words(page: str) -> str:
    """The page's text with every run of white space one space: a sentence found whatever tags split it."""
    return " ".join(visible_text(page).split())
