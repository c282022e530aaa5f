"""A question that asks when, in journal search (domain/asked_when.py), on every backend: of the messages about
what it asks, the one that says a time is raised above the one that only talks about it, in ``hybrid`` and
``deep`` (its model reads the fused top so raised); keyword mode keeps the words' order, and so does a question
that does not ask when. The AWS contract world has no semantic index: its searches answer by words and say so,
and nothing is raised."""

from __future__ import annotations

from typing import Any

import pytest
from agentmem.services import conversations as conversations_module
from agentmem.services.conversations import JournalPage
from contract_world import World

TALK: list[tuple[Any, str]] = [
    ("user", "morning tata. how did you sleep?"),
    ("assistant", "Badly. The priest came about the funeral, with the choir."),
    ("user", "that sounds right"),
    ("assistant", "Aisling can stay with the dog?"),
    ("user", "yes she'll manage, the dog loves her"),
    ("assistant", "She is a good girl. Bring a warm coat, it rains."),
    ("user", "what did the priest say about the choir?"),
    ("assistant", "It is Thursday, 3 July, at Rakowicki. The funeral mass at 11."),
    ("user", "did you eat something?"),
    ("assistant", "Soup. Mrs Nowak brought soup and cabbage. Jurek would have laughed at all this fuss."),
    ("user", "good. call me if you need anything"),
    ("assistant", "I will. Go to work, son."),
]
DATED = 8  # the seq of the message that says when
QUESTION = "When is Jurek's funeral?"


def journal(world: World) -> None:
    world.converse("support", "tata", TALK)


def search(world: World, **options: Any) -> JournalPage:
    return world.journal_page("support", QUESTION, "tata", **options)


def test_the_message_that_says_when_is_raised_above_the_one_that_talks_about_it(
    world: World, monkeypatch: pytest.MonkeyPatch,
) -> None:
    journal(world)
    page = search(world)
    seqs = [h.seq for h in page.items]
    keyword = [h.seq for h in search(world, mode="keyword").items]
    if page.fallback is not None:  # no semantic side (the AWS world): the words answer, as keyword mode does
        assert (page.mode, seqs) == ("keyword", keyword)
        return
    # Then the funeral's date comes first
    assert seqs[:1] == [DATED], [(h.seq, h.score, h.snippet) for h in page.items]
    # and it is this rule that put it there: without it, the priest's visit about the funeral leads
    monkeypatch.setattr(conversations_module, "asks_when", lambda question: False)
    assert [h.seq for h in search(world).items][:2] == [2, DATED]


def test_keyword_mode_and_a_question_not_asking_when_are_not_raised(
    world: World, monkeypatch: pytest.MonkeyPatch,
) -> None:
    journal(world)

    def pages() -> list[list[tuple[int, float]]]:
        other = world.container.conversations.search_page(world.account, "support", "the funeral and the choir",
                                                          conversation="tata")
        return [[(h.seq, h.score) for h in page.items] for page in (search(world, mode="keyword"), other)]

    with_rule = pages()
    monkeypatch.setattr(conversations_module, "toward_times", lambda ranked, text_of: 1 / 0)  # (never called)
    assert pages() == with_rule and with_rule[0] and with_rule[1]
