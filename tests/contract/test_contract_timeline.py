"""A question that asks for a sequence across the conversation, in journal search (domain/timeline.py), on every
backend: the words that only ask for the sequence ("list the order", "items", "mention only three") are searched
by neither side, and in ``hybrid`` and ``deep`` the asker's own messages lead the best when the question is asked
in the first person. The AWS contract world has no semantic index: its searches answer by words, and the frame
is left out of those words all the same."""

from __future__ import annotations

from typing import Any

import pytest
from agentmem.domain.timeline import timeline_topic
from agentmem.services import conversations as conversations_module
from agentmem.services.conversations import JournalPage
from contract_world import World

# a shop's assistant: "order", "items" and "list" are in most of its answers; the lamp's three problems are told
# by the user, one a session
TALK: list[tuple[Any, str]] = [
    ("user", "hi, the desk lamp from my last order arrived with a cracked shade"),
    ("assistant", "Sorry about that. Your order list shows three items: the desk lamp, a shelf and a rug. I have "
                  "ordered a new shade for the lamp."),
    ("user", "thanks"),
    ("assistant", "Anything else on the order? I can list the items again or change the order of delivery."),
    ("user", "no that's all"),
    ("user", "the new shade fits but now the lamp flickers whenever the heating comes on"),
    ("assistant", "That sounds like the bulb. I added a spare bulb to your next order: it now lists four items."),
    ("user", "ok"),
    ("assistant", "Your order of four items ships on Friday; mention the order number if you call."),
    ("user", "the lamp's switch snapped off this morning, third problem with it"),
    ("assistant", "I have started a return for the lamp. The other items of the order stay as they are."),
    ("user", "great"),
]
PROBLEMS = [1, 6, 10]  # the seqs where the user brought up each of the lamp's problems
ORDER_ONLY = {4, 9}  # the shop's answers that hold the question's frame ("order", "list", "items") and no lamp
QUESTION = "Can you list the order in which I brought up the problems with the lamp? Mention only three items."


def journal(world: World) -> None:
    world.converse("shop", "lamp", TALK)


def search(world: World, question: str = QUESTION, **options: Any) -> JournalPage:
    return world.journal_page("shop", question, "lamp", **options)


def test_the_words_that_only_ask_for_a_sequence_are_not_searched(
    world: World, monkeypatch: pytest.MonkeyPatch,
) -> None:
    journal(world)
    seqs = [h.seq for h in search(world).items]
    # the lamp's last problem ("problem", "lamp") leads, and the answers that only hold "order" and "items" are
    # not in the first five
    assert seqs[0] == 10 and not ORDER_ONLY & set(seqs[:5]), seqs
    monkeypatch.setattr(conversations_module, "asks_for_timeline", lambda question: False)
    plain = [h.seq for h in search(world).items]
    assert plain[0] != 10 and ORDER_ONLY & set(plain[:5]), plain  # (as the question was asked: they are)


def test_the_steps_the_asker_brought_up_lead_and_it_is_the_rule_that_put_them_there(
    world: World, monkeypatch: pytest.MonkeyPatch,
) -> None:
    journal(world)
    page = search(world)
    seqs = [h.seq for h in page.items]
    if page.fallback is not None:  # no semantic side (the AWS world): the words answer, and nothing leans
        monkeypatch.setattr(conversations_module, "toward_own", lambda ranked, own: 1 / 0)  # (never called)
        assert page.mode == "keyword" and seqs == [h.seq for h in search(world).items]
        return
    assert sorted(seqs[:3]) == PROBLEMS, [(h.seq, round(h.score, 3)) for h in page.items]
    scores = [h.score for h in page.items]
    assert scores == sorted(scores, reverse=True)
    # without the asker's own first, the shop's answers about the lamp (a return, the order) come between
    monkeypatch.setattr(conversations_module, "toward_own", lambda ranked, own: ranked)
    assert sorted([h.seq for h in search(world).items][:3]) != PROBLEMS


def test_keyword_mode_searches_the_question_as_asked(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    journal(world)
    keyword = [(h.seq, h.score) for h in search(world, mode="keyword").items]
    monkeypatch.setattr(conversations_module, "timeline_topic", lambda question: 1 / 0)  # (never called)
    monkeypatch.setattr(conversations_module, "toward_own", lambda ranked, own: 1 / 0)
    assert [(h.seq, h.score) for h in search(world, mode="keyword").items] == keyword and keyword


def test_a_question_in_the_third_person_is_not_leaned_toward_the_users_messages(
    world: World, monkeypatch: pytest.MonkeyPatch,
) -> None:
    journal(world)
    monkeypatch.setattr(conversations_module, "toward_own", lambda ranked, own: 1 / 0)  # (never called)
    page = search(world, "Trace the problems with the lamp, step by step")
    assert page.items


def test_deep_s_model_reads_the_question_without_its_frame(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    journal(world)
    read: list[str] = []
    rerank = conversations_module.ConversationService._rerank

    def reading(self: Any, query: str, *args: Any, **kwargs: Any) -> Any:
        read.append(query)
        return rerank(self, query, *args, **kwargs)

    monkeypatch.setattr(conversations_module.ConversationService, "_rerank", reading)
    search(world, mode="deep")
    search(world, "When did the lamp first break?", mode="deep")
    assert read == [timeline_topic(QUESTION), "When did the lamp first break?"]
    assert "order" not in read[0] and "items" not in read[0] and "lamp" in read[0]
