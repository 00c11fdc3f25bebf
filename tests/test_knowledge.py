"""The knowledge tables: every packaged table loads, names its sources and its date."""

from __future__ import annotations

import datetime

import pytest

from tfdoctor import knowledge


@pytest.mark.parametrize("name", knowledge.available())
def test_every_table_has_sources_and_a_date(name: str) -> None:
    table = knowledge.table(name)
    assert table.sources and all(s.strip() for s in table.sources)
    assert datetime.date(2015, 1, 1) <= table.taken <= datetime.date.today()
    assert name in knowledge.available()
    assert table.title in table.cite()


def test_a_missing_table_is_a_knowledge_error() -> None:
    with pytest.raises(knowledge.KnowledgeError, match="no-such-table"):
        knowledge.table("no-such-table")
