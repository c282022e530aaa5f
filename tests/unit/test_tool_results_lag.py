"""What a search tool tells the model when the semantic index is behind (domain/tool_results.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from agentmem.domain.tool_results import journal_search_result, search_result

HIT = SimpleNamespace(conversation="c1", seq=3, role="user", snippet="refund by card", score=0.8,
                      created_at="2026-01-01T09:00:00.000000Z", snippet_start=0, snippet_end=14)


@pytest.mark.parametrize(("lag", "told"), [
    (None, None), (0, None),
    (1, "(The search index has not caught up with 1 message yet: until it does, those are found by their words "
        "only.)"),
    (40, "(The search index has not caught up with 40 messages yet: until it does, those are found by their "
         "words only.)"),
])
def test_the_journal_tool_tells_the_model_when_the_index_is_behind(lag: int | None, told: str | None) -> None:
    for hits in ([HIT], []):
        result, text = journal_search_result("refund", hits, "hybrid", None, lag)
        assert result["index_lag"] == lag
        assert (text.splitlines()[-1] == told) if told else "caught up" not in text


def test_the_memory_tool_tells_the_model_when_the_index_is_behind_and_nothing_when_it_is_not() -> None:
    result, text = search_result("refund", [], "hybrid", None, 12)
    assert result["index_lag"] == 12 and text.splitlines() == [
        "No entry matches 'refund'.",
        "(The search index has not caught up with 12 entries yet: until it does, those are found by their words "
        "only.)"]
    assert search_result("refund", [], "keyword", None, None)[1] == "No entry matches 'refund'."
    assert search_result("refund", [], "hybrid", None, 0)[1] == "No entry matches 'refund'."
