"""A question that asks for a sequence across the conversation (domain/timeline.py): which questions ask it, the
words left out of the search, and the asker's own messages first among the best."""

from __future__ import annotations

import pytest
from agentmem.domain.text import query_words
from agentmem.domain.timeline import (
    TIMELINE_AMONG,
    asks_for_timeline,
    asks_in_first_person,
    timeline_topic,
    toward_own,
)


@pytest.mark.parametrize("question", [
    "Can you list the order in which I brought up the parts of the garden plan?",
    "In what order did we fix the login bug, the cache and the docs?",
    "walk me through the kitchen renovation",
    "Take me through how the boiler repair went, start to finish",
    "How did my savings plan change over time?",
    "What were the stages of the visa application?",
    "Tell me the whole story of the dog's vet visits",
    "Everything that happened with the landlord since March?",
    "Step by step, what did we try on the flaky test?",
    "Trace the release history of the app",
    "how has the budget evolved",
    "From the moment she called to the funeral, how did it all unfold?",
    "Remind me what happened with the van, from my first breakdown to selling it",
])
def test_questions_that_ask_for_a_sequence(question: str) -> None:
    assert asks_for_timeline(question)


@pytest.mark.parametrize("question", [
    "When did I move to Porto?",
    "Which came first, the wedding or the move?",  # (two named things: domain/recall.py aspects)
    "What did we decide about the cache?",
    "How much was the hotel in Lisbon?",
    "Is my order 4471 shipped yet?",
    "What's the wifi password now?",
    "What did the stack trace say about my null pointer?",  # (a trace, not tracing)
    "I'm saving in order to buy a car: what did we decide?",  # (in order to)
    "What's the progress on my visa?",  # (how it stands: domain/recall.py toward_latest)
    "Find me flights from Lisbon to Berlin",
])
def test_questions_that_do_not(question: str) -> None:
    assert not asks_for_timeline(question)


@pytest.mark.parametrize(("question", "words"), [
    ("Can you list the order in which I brought up different aspects of developing my budget tracker throughout "
     "our conversations, in order? Mention ONLY and ONLY three items.", ["developing", "budget", "tracker"]),
    ("In what order did things happen with the designer hire? List five steps.", ["things", "happen", "designer",
                                                                                  "hire"]),
    ("Walk me through everything that happened with the movers, step by step", ["movers"]),
    ("Please take me through my son's school applications from start to finish.", ["son", "school",
                                                                                    "applications"]),
])
def test_the_words_that_only_ask_for_a_sequence_are_left_out(question: str, words: list[str]) -> None:
    assert query_words(timeline_topic(question)) == words


def test_a_question_that_is_only_its_frame_is_kept_whole() -> None:
    question = "Can you list, in order, everything that happened?"
    assert timeline_topic(question) == question


def test_the_first_person() -> None:
    assert asks_in_first_person("walk me through the move")
    assert asks_in_first_person("What did we try, in order?")
    assert asks_in_first_person("trace my flights")
    assert not asks_in_first_person("Trace their mum's hip operation from the first date to walking again")
    assert not asks_in_first_person("What were the stages of Aisha's hiring?")  # ("I" within a word is not one)


def test_the_askers_own_messages_come_first_among_the_best_and_the_answer_stays_best_first() -> None:
    ranked = [("tool", 0.7), ("assistant", 0.6), ("user-1", 0.5), ("tool-2", 0.45), ("user-2", 0.4)]
    out = toward_own(ranked, lambda key: key.startswith("user"))
    assert [key for key, _ in out] == ["user-1", "user-2", "tool", "assistant", "tool-2"]
    scores = [score for _, score in out]
    assert scores == sorted(scores, reverse=True) and scores[0] == 0.5  # (no score is raised)


def test_only_the_best_are_reordered_and_a_small_lead_is_kept() -> None:
    ranked = [(f"other-{n}", 1.0 - n / 1000) for n in range(TIMELINE_AMONG)] + [("user-far", 0.1)]
    out = toward_own(ranked, lambda key: key.startswith("user"))
    assert out[-1][0] == "user-far"  # (past the best TIMELINE_AMONG: as it was)
    close = [("tool", 0.95), ("user", 0.3), ("assistant", 0.2)]  # (a weak message of the asker's stays weak)
    assert [key for key, _ in toward_own(close, lambda key: key == "user")] == ["tool", "user", "assistant"]
    assert toward_own([], lambda key: True) == []
