"""The message table of `tfdoctor explain --log` (tfdoctor/knowledge/log_messages.toml) is consistent: every
row compiles, names checks that exist, cites where its wording comes from, and is tested line by line
against real message text — each example matches its own row and no other."""

from __future__ import annotations

import re

import pytest

from tfdoctor import knowledge
from tfdoctor.logs.messages import find_messages, known_messages
from tfdoctor.registry import load_registry

try:
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse  # type: ignore[no-redef]

MESSAGES = known_messages()
IDS = [m.id for m in MESSAGES]


def test_the_table_knows_at_least_forty_distinct_messages():
    assert len(MESSAGES) >= 40
    assert len(set(IDS)) == len(IDS), "duplicate ids"
    assert len({m.pattern.pattern for m in MESSAGES}) == len(MESSAGES), "two rows share a pattern"


def test_every_related_code_is_a_registered_check():
    codes = {spec.code for spec in load_registry().checks}
    unknown = {m.id: [c for c in m.checks if c not in codes] for m in MESSAGES}
    assert {k: v for k, v in unknown.items() if v} == {}


@pytest.mark.parametrize("message", MESSAGES, ids=IDS)
def test_row_is_complete_and_cites_its_source(message):
    assert message.examples, "every row needs at least one real line"
    assert message.meaning.strip() and message.advice.strip() and message.origin.strip()
    assert re.match(r"^https://\S+$", message.source), message.source
    # Not-harmless messages must lead somewhere: a check that diagnoses them, or advice (always present).
    assert message.harmless or message.checks or message.advice


@pytest.mark.parametrize("message", MESSAGES, ids=IDS)
def test_pattern_starts_with_fixed_words_and_stays_within_a_line(message):
    first_op, _ = sre_parse.parse(message.pattern.pattern)[0]
    assert first_op is sre_parse.LITERAL, "start the pattern with the message's words (fast scanning)"
    assert r"\s" not in message.pattern.pattern, r"use [ \t], not \s: a match must not run into the next line"


@pytest.mark.parametrize("message", MESSAGES, ids=IDS)
def test_each_example_line_is_recognised_by_its_row_and_no_other(message):
    for example in message.examples:
        found = find_messages(example)
        assert [s.message.id for s in found] == [message.id], example
        assert (found[0].line, found[0].count, found[0].text) == (1, 1, example)


def test_examples_in_one_log_are_each_found_once_with_their_line_numbers():
    lines = [example for m in MESSAGES for example in m.examples]
    found = {s.message.id: s for s in find_messages("\n".join(lines) + "\n")}
    assert set(found) == set(IDS)
    for message in MESSAGES:
        assert found[message.id].count == len(message.examples)
        assert found[message.id].line == lines.index(message.examples[0]) + 1


def test_a_malformed_row_is_a_knowledge_error(monkeypatch):
    table = knowledge.table("log_messages")
    broken = knowledge.Table(table.name, table.title, table.sources, table.taken,
                             ({**table.rows[0], "pattern": "Could not ("},), table.data)
    monkeypatch.setattr(knowledge, "table", lambda name: broken)
    known_messages.cache_clear()
    try:
        with pytest.raises(knowledge.KnowledgeError, match="pattern does not compile"):
            known_messages()
    finally:
        monkeypatch.undo()
        known_messages.cache_clear()


@pytest.mark.parametrize(("pattern", "prefix"), [
    (r"Could not load dynamic library '(?!libcupti)[^']+'", "Could not load dynamic library '"),
    (r"Unknown flags? in XLA_FLAGS:", "Unknown flag"),  # the optional s is not part of every match
    (r"numpy\.core\.(_multiarray_umath|multiarray) failed", "numpy.core."),
    (r"ab+c", "ab"),
    (r"a*b", ""),
    (r"\d+ threads", ""),
])
def test_literal_prefix_is_what_every_match_starts_with(pattern, prefix):
    from tfdoctor.logs.messages import literal_prefix

    assert literal_prefix(pattern) == prefix
