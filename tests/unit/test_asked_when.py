"""A question that asks when is answered by a message that says a time (domain/asked_when.py)."""

from __future__ import annotations

import pytest
from agentmem.domain.asked_when import WHEN_AMONG, WHEN_SHARE, asks_when, says_a_time, toward_times
from hypothesis import given
from hypothesis import strategies as st


@pytest.mark.parametrize(("question", "when"), [
    ("On what date was Jurek buried?", True),
    ("When does Amara's job in Trondheim begin?", True),
    ("How long did the novel take to reach Henrik?", True),
    ("What time does the pharmacy shut?", True),
    ("How many days did Lena wait for the results?", True),
    ("Until when was the plumber's code good for?", True),
    ("What did Rosa decide about the chickens' water?", False),
    ("Who built the new fence panels?", False),
    ("Which came first: the fox or the fence?", False),
    ("When am I supposed to hear back?", True),
    ("So the parcel came, but when?", True),
    ("What is the whenua of the marae?", False),  # ("when" inside another word does not count)
    ("What was the voucher code easyJet gave me when they cancelled my flight?", False),  # (a clause's "when")
    ("How many boxes did Sunil count when he emptied the flat?", False),
])
def test_a_question_that_asks_when_is_told_apart(question: str, when: bool) -> None:
    assert asks_when(question) is when


@pytest.mark.parametrize(("text", "time"), [
    ("The funeral is Thursday, 3 July, at Rakowicki.", True),
    ("your book arrived on Tuesday. 3 months in the post", True),
    ("ok I changed it. 15 July out, 29 July back", True),
    ("see you at 7pm", True),
    ("the standup moved to 09:30", True),
    ("deploy window is 2026-03-05", True),
    ("it's on the 21st", True),
    ("we did it yesterday", True),
    ("let's meet next week", True),
    ("the lease ends 31/08/2026", True),
    ("she said May 3 works", True),
    ("she said she can do May 3", True),
    ("back on 3 May", True),
    ("it took 12 days", True),
    ("flight BA2490 boards at gate B12", False),
    ("I may come, I am not sure", False),
    ("the sun is out and the sea is warm", False),
    ("a week of rain", False),
    ("Aisling. she's a vet nurse at the animal hospital", False),
])
def test_a_message_that_says_a_time_is_told_apart(text: str, time: bool) -> None:
    assert says_a_time(text) is time


def test_a_message_that_says_a_time_is_read_by_its_start() -> None:
    assert not says_a_time("words " * 400 + "on Tuesday")


TEXTS = {"plan": "we'll sort the funeral with the priest", "date": "The funeral is Thursday, 3 July",
         "chat": "so sorry about Jurek", "late": "it's at 11 o'clock"}


def test_of_the_fused_top_a_message_that_says_a_time_rises_by_the_share() -> None:
    ranked = [("plan", 0.70), ("date", 0.65), ("chat", 0.30)]
    raised = toward_times(ranked, TEXTS.__getitem__)
    assert [key for key, _ in raised] == ["date", "plan", "chat"]
    assert dict(raised)["date"] == pytest.approx(0.65 + WHEN_SHARE) and dict(raised)["plan"] == 0.70
    # a message further behind than the share stays behind
    assert [key for key, _ in toward_times([("plan", 0.9), ("date", 0.5)], TEXTS.__getitem__)] == ["plan", "date"]
    # only the fused top is read
    far = [(f"x{n}", 1.0 - n / 1000) for n in range(WHEN_AMONG)] + [("late", 0.5)]
    text = {**{f"x{n}": "nothing timely" for n in range(WHEN_AMONG)}, "late": TEXTS["late"]}
    assert toward_times(far, text.__getitem__) == far


def test_what_each_candidate_says_of_time_is_read_once_for_every_view_that_ranks_it() -> None:
    read: list[str] = []

    def text_of(key: str) -> str:
        read.append(key)
        return TEXTS[key]

    said: dict[str, bool] = {}
    first = toward_times([("plan", 0.70), ("date", 0.65)], text_of, said=said)
    again = toward_times([("date", 0.8), ("chat", 0.6), ("plan", 0.5)], text_of, said=said)  # another view
    assert sorted(read) == ["chat", "date", "plan"]  # each text read once
    assert [key for key, _ in first] == ["date", "plan"] and dict(again)["date"] == pytest.approx(0.8 + WHEN_SHARE)
    assert said == {"plan": says_a_time(TEXTS["plan"]), "date": True, "chat": says_a_time(TEXTS["chat"])}


@given(st.lists(st.tuples(st.sampled_from(sorted(TEXTS)), st.floats(0, 1)), unique_by=lambda p: p[0]))
def test_the_same_candidates_come_back_best_first_each_raised_by_the_share_at_most(
    ranked: list[tuple[str, float]],
) -> None:
    ranked.sort(key=lambda pair: -pair[1])
    raised = toward_times(ranked, TEXTS.__getitem__)
    assert sorted(key for key, _ in raised) == sorted(key for key, _ in ranked)
    scores = [score for _, score in raised]
    assert scores == sorted(scores, reverse=True)
    before = dict(ranked)
    assert all(before[key] <= score <= before[key] + WHEN_SHARE + 1e-9 for key, score in raised)
