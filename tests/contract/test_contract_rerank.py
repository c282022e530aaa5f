"""Search beyond the two lists (SPEC §4.1, §6.2) on every backend: a message borrows evidence from the one before
and after it, ``mode=deep`` re-reads the fused top with the query through a ``Reranker`` (journal search and
entry recall alike), the answer says which stages ran, and a reranker that is missing, fails, hangs or answers
garbage leaves the fused order standing with the reason named, never an error."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest
from agentmem.domain.agents import Attachment
from agentmem.domain.conversations import MessageDraft
from agentmem.domain.errors import InvalidError
from agentmem.domain.recall import RERANK_FUSED_SHARE, keep_fused
from agentmem.ports.reranker import Reranker
from agentmem.services.agents import AgentSettings
from agentmem.services.conversations import JournalPage
from agentmem.services.recall import Reranking
from contract_world import World

SMALL_TALK = [
    "morning! did you sleep ok?", "yeah not bad, the neighbours were quiet for once",
    "I finally finished that book about the lighthouse keeper", "was it any good?",
    "the ending was a bit rushed honestly", "haha they always are",
]


def steady(world: World) -> None:
    """The semantic side given all the time it needs: on a loaded machine its 300 ms deadline could make one
    search of a pair answer by words and the other hybrid, and the pair would differ for that reason alone."""
    if world.container.entries.semantic is not None:
        world.container.entries.semantic.deadline_s = 120.0


def journal(world: World) -> None:
    """A conversation where a question and its answer are two messages, the answer holding none of its words."""
    steady(world)
    world.container.agents.put(world.account, "support", AgentSettings())
    lines = [
        *SMALL_TALK,
        "what time does the pharmacy on Rua Augusta shut on weekdays?",
        "Seven in the evening, except Sundays when it stays dark all day.",
        *SMALL_TALK[::-1],
    ]
    drafts = [MessageDraft("user" if n % 2 == 0 else "assistant", line) for n, line in enumerate(lines)]
    world.container.conversations.append(world.account, "support", "errands", drafts)


def search(world: World, query: str, **options: Any) -> JournalPage:
    page: JournalPage = world.container.conversations.search_page(world.account, "support", query, **options)
    return page


def test_the_answer_after_a_question_is_found_with_it(world: World) -> None:
    # Given a question about the pharmacy, answered in the next message in other words
    journal(world)
    # When hybrid search asks about the pharmacy's hours
    page = search(world, "pharmacy hours on weekdays")
    seqs = [h.seq for h in page.items]
    # Then the question is found by its words, and the answer beside it is found with it
    if page.fallback is None:
        assert seqs[:1] == [7] and 8 in seqs, [(h.seq, h.snippet) for h in page.items]
        assert page.stages[:4] == ("keyword", "semantic", "neighbours", "fusion")
    else:  # no semantic side (the AWS world has no index): it answered by the word rules, and says so
        assert (seqs, page.mode, page.stages) == ([7], "keyword", ("keyword",))
    # and keyword mode keeps the word rules: only what holds a word of the query
    assert [h.seq for h in search(world, "pharmacy hours on weekdays", mode="keyword").items] == [7]


class Reversing(Reranker):
    """Prefers what the fusion put last: whatever it re-orders shows in the page."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        self.calls.append((query, len(passages)))
        return [(n + 1) / len(passages) for n in range(len(passages))]


def test_deep_mode_reorders_the_fused_top_by_the_reranker_and_says_so(world: World) -> None:
    journal(world)
    fused = search(world, "pharmacy neighbours book", min_score=0.0, limit=50)  # deep reads the fused top whole
    reranker = Reversing()
    # (no neighbours' share of the model's scores here: it would move a message beside its neighbour)
    world.container.conversations.reranking = Reranking(lambda: reranker, deadline_s=30.0, neighbour_share=0.0)
    deep = search(world, "pharmacy neighbours book", mode="deep", limit=50)
    # Then the reranker read the fused top with the query, and its order is the page's
    assert reranker.calls == [("pharmacy neighbours book", len(fused.items))]
    assert [h.seq for h in deep.items] == [h.seq for h in fused.items][::-1]
    scores = [h.score for h in deep.items]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
    assert deep.stages[-1] == "rerank" and deep.fallback in (None, "not_configured", "index_unavailable")
    assert deep.mode == ("deep" if deep.fallback is None else "keyword")
    # and a search in another mode never calls it
    search(world, "pharmacy", mode="hybrid")
    assert len(reranker.calls) == 1


def test_deep_journal_search_keeps_a_share_of_each_candidate_s_fused_score(world: World) -> None:
    """The model (late interaction over a sentence model's token states) breaks the fusion's near-ties more than
    it overturns its order: each score it gives keeps RERANK_FUSED_SHARE of the candidate's fused score."""
    journal(world)
    fused = search(world, "pharmacy neighbours book", min_score=0.0, limit=50, conversation="errands")
    assert len(fused.items) > 3

    class ByAHair(Reranker):  # prefers what the fusion put last, each by a hair
        def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
            return [0.5 + 0.001 * n for n in range(len(passages))]

    world.container.conversations.reranking = Reranking(lambda: ByAHair(), deadline_s=30.0, neighbour_share=0.0)
    deep = search(world, "pharmacy neighbours book", mode="deep", limit=50, conversation="errands")
    order = [h.seq for h in fused.items]
    kept = keep_fused({seq: 0.5 + 0.001 * n for n, seq in enumerate(order)},
                      {h.seq: h.score for h in fused.items}, RERANK_FUSED_SHARE)
    expected = sorted(order, key=lambda seq: (-kept[seq], order.index(seq)))
    # Then the page is in that order: one of the fusion's best first (of two it scores alike, the model's choice),
    # where the model alone would reverse the fused order
    assert [h.seq for h in deep.items] == expected
    score = {h.seq: h.score for h in fused.items}
    assert score[expected[0]] == fused.items[0].score
    if fused.fallback is None:
        assert expected != order[::-1]
    else:  # no semantic side (the AWS world has no index): the words' scores, shown at most 1, are all 1 here
        assert set(score.values()) == {1.0} and expected == order[::-1]
    assert deep.stages[-1] == "rerank"


class Failing(Reranker):
    def __init__(self, how: str) -> None:
        self.how = how
        self.release = threading.Event()

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        if self.how == "raise":
            raise RuntimeError("the model is gone")
        if self.how == "hang":
            self.release.wait(30)
        if self.how == "short":
            return [0.5]
        if self.how == "nan":
            return [float("nan")] * len(passages)
        if self.how == "range":
            return [7.0] * len(passages)
        if self.how == "unread":  # None is not a score: only rerank_within may leave a passage unread
            return [None] * len(passages)  # type: ignore[list-item]
        return [0.5] * len(passages)


@pytest.mark.parametrize(("how", "reason"), [("raise", "rerank_unavailable"), ("hang", "rerank_timeout"),
                                             ("short", "rerank_unavailable"), ("nan", "rerank_unavailable"),
                                             ("range", "rerank_unavailable"), ("unread", "rerank_unavailable"),
                                             ("none", "rerank_not_configured")])
def test_a_reranker_that_fails_leaves_the_fused_order_and_names_why(world: World, how: str, reason: str) -> None:
    journal(world)
    fused = search(world, "pharmacy neighbours book")
    failing = Failing(how)
    deadline_s = 0.1 if how == "hang" else 30.0
    world.container.conversations.reranking = Reranking(lambda: None if how == "none" else failing,
                                                        deadline_s=deadline_s)
    try:
        started = time.monotonic()
        deep = search(world, "pharmacy neighbours book", mode="deep")
        assert time.monotonic() - started < 5  # a hanging model costs the deadline, not the hang
    finally:
        failing.release.set()
    # Then the page is the fused one, answered as hybrid (or by words), with the reason named
    assert [h.seq for h in deep.items] == [h.seq for h in fused.items]
    assert "rerank" not in deep.stages
    if fused.fallback is None:
        assert (deep.mode, deep.fallback) == ("hybrid", reason)
    else:  # no semantic side here: its reason is said first
        assert (deep.mode, deep.fallback) == ("keyword", fused.fallback)


class ReadingTheFirstThree(Reranker):
    """A model whose budget runs out after the fused top three: it scores them in reverse, the rest unread."""

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        raise AssertionError("the stage asks within its budget")

    def rerank_within(self, query: str, passages: Sequence[str], budget_s: float | None) -> list[float | None]:
        assert budget_s == 0.05
        return [[0.2, 0.5, 0.9][n] if n < 3 else None for n in range(len(passages))]


def test_a_budget_cut_reorders_what_was_read_and_keeps_the_fused_place_of_the_rest(world: World) -> None:
    journal(world)
    fused = search(world, "pharmacy neighbours book", min_score=0.0, limit=50)
    assert len(fused.items) > 3
    world.container.conversations.reranking = Reranking(lambda: ReadingTheFirstThree(), deadline_s=30.0,
                                                        budget_s=0.05)
    deep = search(world, "pharmacy neighbours book", mode="deep", limit=50)
    order = [h.seq for h in fused.items]
    # Then the three read are in the model's order in the places they held, the rest where the fusion put them
    assert [h.seq for h in deep.items][:3] == [order[2], order[1], order[0]]
    assert [h.seq for h in deep.items][3:] == order[3:]
    assert [h.score for h in deep.items][3:] == [h.score for h in fused.items][3:]
    # and the answer says the stage ran over part of them
    assert deep.stages[-1] == "rerank"
    if fused.fallback is None:
        assert (deep.mode, deep.fallback) == ("deep", "rerank_partial")
    else:  # no semantic side here: its reason is said first
        assert (deep.mode, deep.fallback) == ("keyword", fused.fallback)


def test_a_budget_that_reads_nothing_leaves_the_fused_order_as_a_timeout(world: World) -> None:
    journal(world)
    fused = search(world, "pharmacy neighbours book")

    class ReadingNothing(Reranker):
        def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
            raise AssertionError("the stage asks within its budget")

        def rerank_within(self, query: str, passages: Sequence[str], budget_s: float | None
                          ) -> list[float | None]:
            return [None] * len(passages)

    world.container.conversations.reranking = Reranking(lambda: ReadingNothing(), deadline_s=30.0)
    deep = search(world, "pharmacy neighbours book", mode="deep")
    assert [h.seq for h in deep.items] == [h.seq for h in fused.items] and "rerank" not in deep.stages
    assert deep.fallback == ("rerank_timeout" if fused.fallback is None else fused.fallback)


# --- entry recall: the same stage over a memory's entries -------------------------------------------------


def entries(world: World) -> None:
    """Entries of which several hold the query's words, so the fused order has a top to re-read."""
    steady(world)
    for name, content in [
        ("refunds", "Refunds go back to the original card within 30 days of purchase."),
        ("refund-exceptions", "Gift cards are never refunded; store credit instead."),
        ("shipping", "Orders ship within two days; refunds of shipping costs only for damaged parcels."),
        ("greeting", "Greet the customer by first name."),
    ]:
        world.save(name, content, description=f"the policy on {name}")


def test_deep_entry_recall_reorders_the_fused_top_by_the_reranker_and_says_so(world: World) -> None:
    # Given entries found by the query, and the order hybrid recall gives them with no cut-off
    entries(world)
    fused = world.container.entries.search_page(world.account, world.memory, "refunds card", min_score=0.0)
    assert len(fused.items) >= 2
    # When a deep recall asks the same with a reranker that prefers what came last
    reranker = Reversing()
    world.container.entries.reranking = Reranking(lambda: reranker, deadline_s=30.0)
    deep = world.container.entries.search_page(world.account, world.memory, "refunds card", mode="deep")
    # Then the reranker read each candidate's name, description and content with the query, and its order stands
    assert reranker.calls == [("refunds card", len(fused.items))]
    assert [r.entry.name for r in deep.items] == [r.entry.name for r in fused.items][::-1]
    scores = [r.score for r in deep.items]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
    assert deep.stages[-1] == "rerank" and deep.stages[0] == "keyword"
    assert deep.mode == ("deep" if deep.fallback is None else "keyword")
    # and the other modes never call it
    world.container.entries.search_page(world.account, world.memory, "refunds card", mode="hybrid")
    assert len(reranker.calls) == 1


@pytest.mark.parametrize(("how", "reason"), [("raise", "rerank_unavailable"), ("hang", "rerank_timeout"),
                                             ("range", "rerank_unavailable"), ("unread", "rerank_unavailable"),
                                             ("none", "rerank_not_configured")])
def test_deep_entry_recall_with_a_failing_reranker_answers_as_hybrid_and_names_why(
        world: World, how: str, reason: str) -> None:
    entries(world)
    fused = world.container.entries.search_page(world.account, world.memory, "refunds card")
    failing = Failing(how)
    world.container.entries.reranking = Reranking(lambda: None if how == "none" else failing,
                                                  deadline_s=0.1 if how == "hang" else 30.0)
    try:
        deep = world.container.entries.search_page(world.account, world.memory, "refunds card", mode="deep")
    finally:
        failing.release.set()
    # Then the page is hybrid's, with hybrid's cut-off, and the reason is named
    assert [r.entry.name for r in deep.items] == [r.entry.name for r in fused.items]
    assert "rerank" not in deep.stages
    if fused.fallback is None:
        assert (deep.mode, deep.fallback) == ("hybrid", reason)
    else:  # no semantic side here: its reason is said first
        assert (deep.mode, deep.fallback) == ("keyword", fused.fallback)


def test_deep_recall_over_an_agents_memories_and_an_unknown_mode(world: World) -> None:
    # Given an agent that reads the memory
    entries(world)
    world.container.agents.put(world.account, "support", AgentSettings(memories=(Attachment(world.memory),)))
    reranker = Reversing()
    world.container.entries.reranking = Reranking(lambda: reranker, deadline_s=30.0)
    ctx = world.container.agent_memory.context(world.account, "support")
    # When the agent's recall asks deep, the same stage reads its candidates
    deep = world.container.agent_memory.search(ctx, "refunds card", mode="deep")
    assert reranker.calls and deep.stages[-1] == "rerank"
    # And a mode that does not exist is a 400 naming the field, on entries and journals alike
    journal(world)
    for ask in (lambda: world.container.entries.search_page(world.account, world.memory, "refund", mode="deeper"),
                lambda: search(world, "pharmacy", mode="deeper")):
        with pytest.raises(InvalidError) as caught:
            ask()
        assert caught.value.details["field"] == "mode"
