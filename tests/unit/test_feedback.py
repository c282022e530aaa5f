"""The words' feedback (domain/feedback.py): what the best hits say beside the question is lent to the candidates
that say it too, and nothing else moves."""

from __future__ import annotations

from agentmem.domain.feedback import FEEDBACK_AMONG, FEEDBACK_SHARE, bag_of, lend_feedback
from hypothesis import given
from hypothesis import strategies as st

HOTEL = "Booked: Hotel Ponte Vermelha, 16-20 March, reference PV-30917, paid at the hotel."
TICKET = '{"booking_ref": "PV-30917", "hotel": "Hotel Ponte Vermelha", "status": "confirmed"}'
FILLER = ["the weather was grey and the train ran late again"] * 12  # small talk: the topic's words only
QUESTION = {"lisbon", "book"}  # the question's stems: "when did I book the Lisbon hotel?" without "hotel"


def texts() -> dict[str, str]:
    return {"hotel": HOTEL, "ticket": TICKET, **{f"f{n}": line for n, line in enumerate(FILLER)}}


def test_the_message_holding_what_the_best_hit_says_rises_above_one_that_does_not() -> None:
    # Given the best hit names the booking reference, and the ticket that holds it too ranks under small talk
    ranked = [("hotel", 0.8), ("f0", 0.44), ("f1", 0.43), ("ticket", 0.4),
              *[(f"f{n}", 0.3 - n / 100) for n in range(2, 12)]]
    # When the feedback lends the best hits' words
    lent, ran = lend_feedback(ranked, texts().__getitem__, QUESTION)
    order = [key for key, _ in lent]
    # Then the ticket comes second, raised by what it shares with the best hit, and nothing that shares nothing moved
    assert ran and order[:2] == ["hotel", "ticket"]
    assert [key for key in order if key.startswith("f")] == [key for key, _ in ranked if key.startswith("f")]
    scores = dict(lent)
    assert all(scores[key] == score for key, score in ranked if key.startswith("f"))
    assert 0.4 < scores["ticket"] <= 0.4 + FEEDBACK_SHARE + 1e-9


def test_the_question_s_own_words_and_the_topic_s_lend_nothing() -> None:
    # Given candidates that share with the best hit only words the question holds, or words most of them hold
    said = {"a": "the lisbon booking is done", "b": "lisbon booking again", "c": "a lisbon booking for two",
            **{f"t{n}": "train delayed again" for n in range(6)}, "d": "train train train"}
    ranked = [("a", 0.9), ("t0", 0.5), ("b", 0.4), ("d", 0.35), *[(f"t{n}", 0.3) for n in range(1, 6)], ("c", 0.2)]
    # When the feedback runs with the question holding "lisbon" and "booking"
    lent, _ = lend_feedback(ranked, said.__getitem__, {"lisbon", "book"})
    # Then no other candidate gains ("done" is held by the best hit alone, "train" by most candidates): the order
    # stands and their scores too
    assert [key for key, _ in lent] == [key for key, _ in ranked]
    assert all(dict(lent)[key] == score for key, score in ranked if key != "a")


def test_too_few_candidates_or_no_share_change_nothing() -> None:
    assert lend_feedback([("hotel", 0.8)], texts().__getitem__, QUESTION) == ([("hotel", 0.8)], False)
    ranked = [("hotel", 0.8), ("ticket", 0.4)]
    assert lend_feedback(ranked, texts().__getitem__, QUESTION, share=0.0) == (ranked, False)


def test_only_the_fused_top_is_read_and_raised() -> None:
    # Given a ticket sharing the best hit's reference, placed past the candidates the feedback reads
    said = {"hotel": HOTEL, "ticket": TICKET, **{f"f{n}": FILLER[n % len(FILLER)] + f" {n}"
                                                  for n in range(FEEDBACK_AMONG)}}
    ranked = [("hotel", 0.9), *[(f"f{n}", 0.5 - n / 1000) for n in range(FEEDBACK_AMONG)], ("ticket", 0.3)]
    lent, _ = lend_feedback(ranked, said.__getitem__, QUESTION)
    # Then it keeps its score and its place: what the two sides ranked that low is not read
    assert lent[-1] == ("ticket", 0.3)


def test_a_long_message_is_read_by_its_start() -> None:
    far = "filler words " * 400 + "PV-30917"
    assert "pv" in bag_of("PV-30917 " + far) and "30917" in bag_of("PV-30917")
    assert "30917" not in bag_of(far)  # past the characters read


@given(scores=st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=0, max_size=30),
       picks=st.lists(st.integers(min_value=0, max_value=len(FILLER) + 1), min_size=30, max_size=30))
def test_the_feedback_only_raises_and_never_drops_or_adds_a_candidate(scores: list[float], picks: list[int]) -> None:
    pool = [HOTEL, TICKET, *FILLER]
    ranked = sorted(((f"k{n}", s) for n, s in enumerate(scores)), key=lambda pair: -pair[1])
    said = {f"k{n}": pool[picks[n]] for n in range(len(scores))}
    lent, ran = lend_feedback(ranked, said.__getitem__, QUESTION)
    before, after = dict(ranked), dict(lent)
    # the same candidates, best first, each raised by at most the share; unchanged when nothing was lent
    assert sorted(after) == sorted(before)
    assert [s for _, s in lent] == sorted((s for _, s in lent), reverse=True)
    assert all(before[k] - 1e-9 <= after[k] <= before[k] + FEEDBACK_SHARE + 1e-9 for k in before)
    if not ran:
        assert lent == ranked
