"""The words' feedback in journal search (domain/feedback.py, stage ``feedback``) on every backend: a message that
holds none of the question's words, but the booking reference the best hit names, is found with it; the same
message with another reference is not; keyword mode never runs it, nor a search with a handful of candidates.
The AWS contract world has no semantic index: its searches answer by words and say so, with no feedback."""

from __future__ import annotations

from typing import Any

import pytest
from agentmem.domain.conversations import MessageDraft
from agentmem.services import conversations as conversations_module
from agentmem.services.agents import AgentSettings
from agentmem.services.conversations import JournalPage
from contract_world import World

TRIP: list[tuple[Any, str]] = [
    ("user", "can you find me a hotel in Lisbon for the conference? near LX Factory if possible"),
    ("assistant", "Booked: Hotel Ponte Vermelha, 16 to 20 March, reference PV-30917, paid at the hotel."),
    ("user", "thanks! also remind me to water the plants before I go"),
    ("assistant", "I'll remind you on the 15th."),
    ("user", "what's the weather going to be like in March there?"),
    ("assistant", "Mild, 17 degrees by day, some rain."),
    ("user", "ok. my sister wants to come for the weekend, is that a problem?"),
    ("assistant", "Not at all, the room is a double."),
    ("user", "forwarding you the email they sent: PV-30917, arrivals from 3pm, breakfast 7 to 10"),
    ("assistant", "Got it, from 3pm then."),
    ("user", "and the talk is on the 18th, right?"),
    ("assistant", "Yes, the 18th at 11."),
    ("user", "can you move my dentist appointment to April?"),
    ("assistant", "Moved to 4 April at 9:15."),
    ("user", "what do I owe the gym this month?"),
    ("assistant", "42 pounds, taken on the 1st."),
    ("user", "remind me to buy a present for Ana's birthday"),
    ("assistant", "I'll remind you a week before, on the 2nd."),
    ("user", "is the car due for its MOT?"),
    ("assistant", "In June; I'll book it in May."),
    ("user", "order more printer ink please"),
    ("assistant", "Ordered two black cartridges, arriving Friday."),
    ("user", "what's on my calendar tomorrow?"),
    ("assistant", "A call with the design team at 10 and nothing after 4."),
    ("user", "send the slides to Marta when they're done"),
    ("assistant", "I'll send them as soon as you save the final version."),
]
EMAIL = 9  # the seq of the hotel's email: it holds the reference, and no word of the question
QUESTION = "what time can I get into my room at the Lisbon hotel?"


def journal(world: World, key: str, reference: str) -> None:
    world.container.agents.put(world.account, "support", AgentSettings())
    talk = [(role, text.replace("email they sent: PV-30917", f"email they sent: {reference}")) for role, text in TRIP]
    world.container.conversations.append(world.account, "support", key,
                                         [MessageDraft(role, text) for role, text in talk])


def search(world: World, key: str, **options: Any) -> JournalPage:
    page: JournalPage = world.container.conversations.search_page(world.account, "support", QUESTION,
                                                                   conversation=key, **options)
    return page


def test_a_message_holding_what_the_best_hit_names_is_found_without_a_word_of_the_question(
    world: World, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # (the question asks when, and each email says a time, "from 3pm": what this test shows is what an email
    # shares with the booking, so the rule for questions asking when, domain/asked_when.py, is left out)
    monkeypatch.setattr(conversations_module, "asks_when", lambda question: False)
    # Given the hotel's email, which holds the booking reference the booking names and no word of the question,
    # and a twin conversation whose email holds another reference
    journal(world, "trip", "PV-30917")
    journal(world, "twin", "QX-88412")
    # When each is searched for when the room can be had
    page, twin = search(world, "trip"), search(world, "twin")
    if page.fallback is not None:  # no semantic side (the AWS world has no index): the words answer, and say so
        assert (page.mode, page.stages) == ("keyword", ("keyword",)) and EMAIL not in [h.seq for h in page.items]
        return
    # Then the request and the booking are the best hits, and the email is found by the reference it shares with
    # the booking
    seqs = [h.seq for h in page.items]
    assert set(seqs[:2]) == {1, 2} and EMAIL in seqs, [(h.seq, h.snippet) for h in page.items]
    assert page.stages == ("keyword", "semantic", "neighbours", "fusion", "feedback")
    # and the twin's email, which shares nothing with the booking, is not
    assert EMAIL not in [h.seq for h in twin.items], [(h.seq, h.snippet) for h in twin.items]


def test_keyword_mode_keeps_to_the_words_of_the_question(world: World) -> None:
    journal(world, "trip", "PV-30917")
    page = search(world, "trip", mode="keyword")
    assert page.stages == ("keyword",) and EMAIL not in [h.seq for h in page.items]


def test_deep_runs_the_feedback_before_the_model(world: World) -> None:
    journal(world, "trip", "PV-30917")
    page = search(world, "trip", mode="deep")
    if page.fallback not in (None, "rerank_not_configured", "rerank_partial"):
        return  # no semantic side: as above
    assert page.stages[:5] == ("keyword", "semantic", "neighbours", "fusion", "feedback")
    assert EMAIL in [h.seq for h in page.items]


def test_a_handful_of_candidates_gets_no_feedback(world: World) -> None:
    # Given the first twelve messages only: too few candidates to tell the topic's words from the telling ones
    world.container.agents.put(world.account, "support", AgentSettings())
    world.container.conversations.append(world.account, "support", "short",
                                         [MessageDraft(role, text) for role, text in TRIP[:12]])
    page = search(world, "short")
    assert "feedback" not in page.stages


def test_each_thing_an_order_question_names_gets_the_feedback_too_and_each_text_is_read_once(
        world: World, monkeypatch: Any) -> None:
    import agentmem.services.conversations as conversations
    from agentmem.domain import feedback

    # Given a question that names two things to tell apart (each searched as the question is: aspects)
    journal(world, "trip", "PV-30917")
    calls: list[tuple[frozenset[str], int]] = []
    read: list[str] = []

    def recorded(ranked: Any, text_of: Any, question: Any, **options: Any) -> Any:
        calls.append((frozenset(question), len(ranked)))

        def reading(key: Any) -> str:
            read.append(text_of(key))
            return str(text_of(key))

        return feedback.lend_feedback(ranked, reading, question, **options)

    monkeypatch.setattr(conversations, "lend_feedback", recorded)
    page = world.container.conversations.search_page(
        world.account, "support", "Did my sister ask to come before or after I got the hotel's arrival time?",
        conversation="trip")
    if page.fallback is not None:  # no semantic side: the words answer, and no feedback is asked for
        assert calls == []
        return
    # Then the whole question and each thing it names are given the feedback, each with its own words
    assert len(calls) == 3 and len({question for question, _ in calls}) == 3, calls
    assert any("sister" in q and "hotel" not in q for q, _ in calls[1:]), calls
    assert any("hotel" in q and "sister" not in q for q, _ in calls[1:]), calls
    # and no candidate's text is read twice for it
    assert len(read) == len(set(read)) > 0
