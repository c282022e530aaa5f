"""The fusion of recall's two lists (domain/recall.py): modes, calibration, the importance boost, the cut-off."""

from __future__ import annotations

import pytest
from agentmem.domain.errors import InvalidError
from agentmem.domain.recall import (
    Calibration,
    Signals,
    asks_for_latest,
    check_min_score,
    check_mode,
    fuse,
    semantic_relevance,
    toward_latest,
)
from hypothesis import given
from hypothesis import strategies as st

CAL = Calibration(floor=0.1, ceiling=0.6, keyword_weight=0.5, importance_boost=0.1, min_score=0.12)


def test_keyword_mode_keeps_every_keyword_match_in_the_keyword_order() -> None:
    candidates = {"a": Signals(keyword=3.0), "b": Signals(keyword=0.1), "c": Signals(semantic=0.9)}
    assert [k for k, _ in fuse(candidates, "keyword", CAL)] == ["a", "b"]  # the semantic-only one is no keyword hit


def test_hybrid_puts_what_both_sides_found_above_what_one_did() -> None:
    candidates = {"words": Signals(keyword=2.0, semantic=0.1), "both": Signals(keyword=2.0, semantic=0.5),
                  "meaning": Signals(semantic=0.55)}
    ranked = fuse(candidates, "hybrid", CAL)
    assert ranked[0][0] == "both" and {k for k, _ in ranked} == set(candidates)
    assert all(0 < score <= 1 for _, score in ranked)


def test_a_weak_semantic_match_is_not_padded_in() -> None:
    candidates = {"near": Signals(semantic=0.5), "unrelated": Signals(semantic=0.12)}
    assert [k for k, _ in fuse(candidates, "hybrid", CAL)] == ["near"]
    assert [k for k, _ in fuse(candidates, "semantic", CAL)] == ["near"]
    assert [k for k, _ in fuse(candidates, "semantic", CAL, min_score=0.0)] == ["near", "unrelated"]


def test_importance_breaks_what_is_otherwise_equal() -> None:
    candidates = {"low": Signals(keyword=1.0, semantic=0.4, importance=0.1),
                  "high": Signals(keyword=1.0, semantic=0.4, importance=0.9)}
    assert [k for k, _ in fuse(candidates, "hybrid", CAL)] == ["high", "low"]


def test_rrf_fusion_ranks_by_places_in_both_lists() -> None:
    rrf = Calibration(fusion="rrf", min_score=0.0)
    candidates = {"first-of-both": Signals(keyword=5.0, semantic=0.9), "second": Signals(keyword=4.0, semantic=0.8),
                  "only-words": Signals(keyword=4.5)}
    ranked = fuse(candidates, "hybrid", rrf)
    assert ranked[0][0] == "first-of-both" and ranked[0][1] == pytest.approx(1.0, abs=0.06)


def test_semantic_relevance_is_calibrated_between_floor_and_ceiling() -> None:
    assert semantic_relevance(0.05, CAL) == 0.0
    assert semantic_relevance(0.35, CAL) == pytest.approx(0.5)
    assert semantic_relevance(0.9, CAL) == 1.0


@pytest.mark.parametrize("value", ["auto", "HYBRID", ""])
def test_an_unknown_mode_is_refused(value: str) -> None:
    with pytest.raises(InvalidError):
        check_mode(value)
    assert check_mode(None) == "hybrid"


@pytest.mark.parametrize("value", [-0.01, 1.01, float("nan"), float("inf")])
def test_min_score_is_a_number_from_0_to_1(value: float) -> None:
    with pytest.raises(InvalidError):
        check_min_score(value)
    assert check_min_score(0.3) == 0.3


# --- journals: duplicates, common words and an absolute keyword scale ------------------------------------------


def test_only_the_best_ranked_of_identical_candidates_is_kept() -> None:
    from agentmem.domain.recall import first_of_each

    ranked = [("a", 0.9), ("copy-of-a", 0.8), ("b", 0.7), ("another-copy-of-a", 0.6), ("c", 0.5)]
    text = {"a": "ok", "copy-of-a": "ok", "another-copy-of-a": "ok", "b": "thanks", "c": "bye"}
    assert first_of_each(ranked, text.__getitem__) == [("a", 0.9), ("b", 0.7), ("c", 0.5)]
    assert first_of_each([], text.__getitem__) == []


def test_a_rough_marker_keeps_the_same_candidates_and_asks_the_exact_one_only_where_two_share_it() -> None:
    from agentmem.domain.recall import first_of_each
    from agentmem.domain.text import folded, folded_head

    long = "The migration plan, step by step: " + "copy the table, check the counts, swap the names. " * 40
    text = {"a": long, "copy-of-a": long.upper().replace(" ", "  \n"), "b": long + " And roll back if it fails.",
            "c": "bye", "d": "Bye"}
    ranked = [("a", 0.9), ("copy-of-a", 0.8), ("b", 0.7), ("c", 0.6), ("d", 0.5)]
    asked: list[str] = []

    def same(key: str) -> str:
        asked.append(key)
        return folded(text[key])

    # Given a rough marker (the folded first words), When duplicates are dropped, Then the same are kept as by the
    # exact marker alone: a copy in other case and spacing goes, a longer text that starts alike stays
    kept = first_of_each(ranked, same, lambda key: folded_head(text[key]))
    assert kept == first_of_each(ranked, lambda key: folded(text[key])) == [("a", 0.9), ("b", 0.7), ("c", 0.6)]
    # and the exact marker was asked only of those whose first words another shares
    assert asked == ["a", "copy-of-a", "b", "c", "d"]  # (each once: "b" against the kept "a" already asked)
    asked.clear()
    assert first_of_each([("a", 0.9), ("c", 0.6)], same, lambda key: folded_head(text[key])) == [("a", 0.9),
                                                                                                   ("c", 0.6)]
    assert asked == []


@given(st.text(alphabet=st.sampled_from("aB ß\n\tİ\u00a0x"), max_size=400), st.integers(1, 80))
def test_a_texts_folded_head_is_the_start_of_its_folding(text: str, size: int) -> None:
    from agentmem.domain.text import folded, folded_head

    assert folded_head(text, size) == folded(text)[:size]


def test_a_word_most_messages_hold_is_not_embedded_while_a_telling_word_remains() -> None:
    from agentmem.domain.recall import without_common_words

    counts = {"caroline": 600, "identity": 3}
    assert without_common_words("What is Caroline's identity?", 1000, counts) == "what is s identity"
    # a word held by at most a fifth of the messages stays; so does everything when only common words are left
    assert without_common_words("What is Caroline's identity?", 1000, {"caroline": 200, "identity": 3}) == \
        "What is Caroline's identity?"
    assert without_common_words("Caroline?", 1000, {"caroline": 600}) == "Caroline?"
    # and a journal too small for a share to mean anything is not read for them
    assert without_common_words("What is Caroline's identity?", 100, {"caroline": 60, "identity": 1}) == \
        "What is Caroline's identity?"


def test_a_name_the_conversation_calls_someone_by_is_not_embedded_at_any_size() -> None:
    from agentmem.domain.recall import without_common_words

    # a journal of any size (the common words' share waits for 200 messages; a name called is known at once)
    assert without_common_words("What did Rosa decide about the hens?", 40, {"rosa": 8, "hens": 2},
                                left_out={"rosa"}) == "what did decide about the hens"
    # both reasons at once; and a question of nothing else keeps everything
    assert without_common_words("Did Rosa tell Caroline?", 1000, {"caroline": 600, "rosa": 3, "tell": 5},
                                left_out={"rosa"}) == "did tell"
    assert without_common_words("Rosa?", 40, {"rosa": 8}, left_out={"rosa"}) == "Rosa?"


def test_words_left_out_of_a_question_leave_a_telling_word_or_nothing_is_left_out() -> None:
    from agentmem.domain.recall import without_words

    assert without_words("What did Rosa decide?", {"rosa"}) == "what did decide"
    assert without_words("What did Rosa decide?", set()) == "What did Rosa decide?"
    assert without_words("What did Rosa decide?", {"tomasz"}) == "What did Rosa decide?"  # none of them there
    assert without_words("Rosa and Kwame?", {"rosa", "kwame"}) == "Rosa and Kwame?"


def test_the_bm25_scale_is_the_sum_of_the_words_idf() -> None:
    import math

    from agentmem.domain.recall import bm25_scale

    assert bm25_scale(0, {"x": 0}) is None and bm25_scale(100, {}) is None
    rare, half = bm25_scale(1000, {"lgbtq": 2}), bm25_scale(1000, {"caroline": 500})
    assert rare == pytest.approx(math.log(998.5 / 2.5)) and half == pytest.approx(1e-6)
    assert bm25_scale(1000, {"lgbtq": 2, "caroline": 500}) == pytest.approx(rare + half)


def test_read_against_its_scale_a_match_on_a_common_word_alone_is_weak() -> None:
    # Given a best keyword match that only holds a word every message holds (score 0.1 of a scale of 5)
    candidates = {"common-only": Signals(keyword=0.1), "meant": Signals(keyword=0.05, semantic=0.3)}
    # Then against the best of the answer it reads as a full match; against the scale it does not
    assert fuse(candidates, "hybrid", CAL)[0][0] == "common-only"
    ranked = fuse(candidates, "hybrid", CAL, keyword_scale=5.0)
    assert [k for k, _ in ranked] == ["meant"]
    # a score above the scale (a longer message holding words twice) still reads as at most a full match
    assert fuse({"x": Signals(keyword=9.0)}, "keyword", CAL, keyword_scale=5.0) == [("x", 1.0)]


# --- neighbours (journal search) -------------------------------------------------------------------------------


def test_a_message_borrows_a_share_of_its_better_neighbours_keyword_score() -> None:
    from agentmem.domain.recall import lend_neighbours

    scores = {("c", 1): 3.0, ("c", 2): 0.0, ("c", 3): 6.0, ("d", 2): 9.0}
    lent = lend_neighbours(scores, [("c", 1), ("c", 2), ("c", 3), ("c", 4), ("c", 5), ("c", 9)], 1 / 3)
    # the answer between two hits borrows from the better one; another conversation's seq 2 lends nothing; a
    # message two steps from a hit borrows half as much (seq 5 from 3; 1 and 3 from each other); seq 9, nothing
    assert lent == {("c", 1): 4.0, ("c", 2): 2.0, ("c", 3): 6.5, ("c", 4): 2.0, ("c", 5): 1.0}


def test_the_neighbours_of_the_best_keyword_hits_are_read_once_each() -> None:
    from agentmem.domain.recall import neighbours_to_read

    keyword = {("c", 5): 9.0, ("c", 7): 8.0, ("d", 1): 7.0, ("c", 20): 0.1}
    wanted = neighbours_to_read(keyword, known=set(keyword) | {("c", 4)}, top=3)
    # seq 6 sits between two hits and is asked for once; seq 0 does not exist; the weakest hit's are not read
    assert wanted == {"c": [6, 8], "d": [2]}


def test_a_message_borrows_a_share_of_its_neighbours_fused_score_then_the_cut_off() -> None:
    from agentmem.domain.recall import lend_ranked

    ranked = [(("c", 5), 0.9), (("c", 9), 0.2), (("c", 7), 0.15)]
    seats = [seat for seat, _ in ranked] + [("c", 6), ("c", 4), ("c", 20)]
    out = lend_ranked(ranked, seats, 0.2, 0.12)
    # seq 6 (between two hits, no evidence of its own) and 4 borrow 0.2 of the answer's 0.9 and pass the cut-off,
    # below the answer; 7, two steps from the answer, borrows half that (0.09) and rises above 9, which borrows
    # half of 0.2 of 7's; seq 20, with nothing of its own and no neighbour found, is left out
    assert out == [(("c", 5), 0.915), (("c", 7), 0.24), (("c", 9), 0.215), (("c", 6), 0.18), (("c", 4), 0.18)]
    # a score never goes above 1, and two lent past it keep the order of what they were lent (1.4 before 1.375)
    assert lend_ranked([(("c", 1), 1.0), (("c", 2), 0.95)], [("c", 1), ("c", 2)], 0.2, 0.0)[0][1] == 1.0
    assert lend_ranked([(("c", 1), 0.9), (("c", 2), 0.95)], [("c", 1), ("c", 2)], 0.5, 0.0) == [
        (("c", 2), 1.0), (("c", 1), 1.0)]


def test_a_candidate_borrows_from_the_best_other_matches_of_its_conversation() -> None:
    from agentmem.domain.recall import lend_conversation

    scores = {("c", 10): 0.5, ("c", 14): 0.6, ("c", 25): 0.3, ("c", 90): 0.2, ("d", 12): 0.8, ("e", 3): 0.6}
    lent = lend_conversation(scores, 0.3, best=3)
    # each of c's reads the three best of the others of c, its own left out
    assert lent[("c", 10)] == pytest.approx(0.5 + 0.3 * (0.6 + 0.3 + 0.2) / 3)
    assert lent[("c", 14)] == pytest.approx(0.6 + 0.3 * (0.5 + 0.3 + 0.2) / 3)
    assert lent[("c", 90)] == pytest.approx(0.2 + 0.3 * (0.6 + 0.5 + 0.3) / 3)
    # a conversation of one match lends nothing and borrows nothing
    assert lent[("d", 12)] == 0.8 and lent[("e", 3)] == 0.6
    # a match in the conversation that holds several overtakes an equal stray one in another
    assert lent[("c", 14)] > lent[("e", 3)] + 0.09
    # two equal scores in one conversation each read the other's
    assert lend_conversation({("c", 1): 0.4, ("c", 2): 0.4}, 0.3, best=1) == {("c", 1): pytest.approx(0.52),
                                                                             ("c", 2): pytest.approx(0.52)}
    assert lend_conversation(scores, 0.0) == scores


def test_a_fused_ranking_s_conversations_order_what_passed_the_cut_off_and_let_nothing_else_pass() -> None:
    from agentmem.domain.recall import lend_ranked

    ranked = [(("far", 1), 0.3), (("near", 5), 0.25), (("near", 8), 0.25), (("near", 26), 0.1)]
    seats = [seat for seat, _ in ranked]
    without = lend_ranked(ranked, seats, 0.0, 0.12)
    assert [seat for seat, _ in without] == [("far", 1), ("near", 5), ("near", 8)]
    within = lend_ranked(ranked, seats, 0.0, 0.12, 0.9)
    # the two matches of one conversation rise above the stray one (each reads the other and 26); seq 26, under the
    # cut-off, lends to them but is no hit for being in the right conversation
    assert within == [(("near", 5), 0.355), (("near", 8), 0.355), (("far", 1), 0.3)]


# --- aspects: a question naming several things -------------------------------------------------------------------


@pytest.mark.parametrize(("question", "expected"), [
    ("Which came first: booking the flights for the wedding, or sorting out the cancelled Lisbon flight?",
     ["booking the flights for the wedding", "sorting out the cancelled Lisbon flight"]),
    ("Did the rehearsal come up before or after I'd booked the Lisbon hotel?",
     ["Did the rehearsal come up", "I'd booked the Lisbon hotel"]),
    ("Put these in order: paying the kiln invoice, refunding Beatriz, paying for the stall.",
     ["paying the kiln invoice", "refunding Beatriz", "paying for the stall."]),
    # a name alone is read with the question's head: alone it would find every message naming her
    ("Whose parcel arrived first, Amara's or Henrik's?",
     ["Whose parcel arrived first", "Whose parcel arrived first Amara's", "Whose parcel arrived first Henrik's"]),
    # a head that only frames the question names nothing: it is no aspect and lends nothing
    ("Which came first, the move or the wedding?", ["the move", "the wedding"]),
    ("What happened first: the leak or the storm?", ["the leak", "the storm"]),
    # "and" inside one side of "before or after" is part of that side, not one more thing
    ("Did Max get his exam results before or after Lena and Matthias became a couple?",
     ["Did Max get his exam results", "Lena and Matthias became a couple"]),
    # a yes-or-no question whether one thing came before or after another: its two sides, each an event
    ("Did we ship the beta before the audit?", ["Did we ship the beta", "the audit"]),
    ("Did we call the plumber right after the leak?", ["Did we call the plumber", "the leak"]),
    ("Was the vote after Ama was born?", ["Was the vote", "Ama was born"]),
    # a list asked for in order without a colon: the frame is cut off, "and" ends one more thing
    ("In what order did we fix the login bug, the billing page and the cache?",
     ["we fix the login bug", "the billing page", "the cache"]),
    ("What was the sequence of the outage, the rollback and the post-mortem?",
     ["the outage", "the rollback", "the post-mortem"]),
])
def test_a_question_naming_things_to_tell_apart_is_searched_by_each(question: str, expected: list[str]) -> None:
    from agentmem.domain.recall import aspects

    assert aspects(question) == expected


@pytest.mark.parametrize("question", [
    "How much did the greenhouse produce this year, and from how many plants?",  # two things of one event
    "Why did the weekly cleanup never run, and when had we set it up?",
    "What did we decide about the Postgres upgrade?",
    "Is it 1,000 or more?",  # one telling word: nothing to tell apart
    "",
    # "before" / "after" as a time, not a second event: only a yes-or-no question is cut there
    "How long after the interview did she hear back?",
    "What did we decide after the meeting?",
    "What did we decide about the order of the talks?",  # "order" without a list
    "Did the order ship?",
])
def test_a_question_naming_one_thing_is_one_aspect(question: str) -> None:
    from agentmem.domain.recall import aspects

    assert aspects(question) == []


def test_aspects_are_at_most_four() -> None:
    from agentmem.domain.recall import aspects

    assert len(aspects("Order these: red apples, green pears, blue plums, ripe figs, sour limes, sweet dates")) == 4


def test_an_aspects_nearest_reads_as_near_as_the_whole_questions() -> None:
    from agentmem.domain.recall import as_near_as

    # a few words are nearer to no message than a question: the aspect's cosines are raised in proportion, so its
    # nearest reads as near as the whole question's nearest, and its order stays
    assert as_near_as({"a": 0.3, "b": 0.15, "c": -0.1}, 0.6) == pytest.approx({"a": 0.6, "b": 0.3, "c": -0.2})
    # never lowered, never raised past the question's own nearest: a question that matches nothing still does not
    assert as_near_as({"a": 0.5, "b": 0.2}, 0.4) == {"a": 0.5, "b": 0.2}
    assert as_near_as({"a": 0.1}, 0.0) == {"a": 0.1}
    assert as_near_as({}, 0.5) == {}


def test_rankings_of_the_aspects_take_turns_and_stay_best_first() -> None:
    from agentmem.domain.recall import best_of

    whole = [("a1", 0.9), ("a2", 0.85), ("a3", 0.8), ("b1", 0.3)]
    aspect_a = [("a2", 0.95), ("a1", 0.9)]
    aspect_b = [("b1", 0.5), ("a3", 0.2)]
    # each ranking's first is in the top three, whatever the scores; each candidate once, at its best place
    ranked = best_of([whole, aspect_a, aspect_b])
    assert [k for k, _ in ranked] == ["a2", "a1", "b1", "a3"]
    scores = [s for _, s in ranked]
    assert scores == sorted(scores, reverse=True) and scores[0] == 0.95
    # one ranking is itself
    assert best_of([whole]) == whole


def test_every_search_takes_deep_and_nothing_else_beyond_the_four_modes() -> None:
    assert [check_mode(mode) for mode in (None, "keyword", "semantic", "deep")] == [
        "hybrid", "keyword", "semantic", "deep"]
    with pytest.raises(InvalidError) as caught:
        check_mode("deeper")
    assert "hybrid, keyword, semantic, deep" in str(caught.value)


def test_deep_across_conversations_lends_each_candidate_its_conversation_s_evidence() -> None:
    from collections.abc import Sequence

    from agentmem.ports.reranker import Reranker
    from agentmem.services.recall import Reranking

    class Fixed(Reranker):
        def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
            return [{"a1": 0.6, "b1": 0.55, "b5": 0.5, "b9": 0.5}[p] for p in passages]

    head = [(("a", 1), 0.5), (("b", 1), 0.5), (("b", 5), 0.4), (("b", 9), 0.4)]
    texts = [f"{c}{s}" for (c, s), _ in head]
    reranking = Reranking(lambda: Fixed(), deadline_s=30.0)
    # the model's own order, the stray match first; messages four apart lend each other nothing as neighbours
    alone = reranking.run("q", head, texts, neighbours=True)
    assert [seat for seat, _ in alone.ranked] == [("a", 1), ("b", 1), ("b", 5), ("b", 9)]
    # across conversations, b's first match reads b's other two: 0.55 + 0.4 × (0.5 + 0.5) / 3 = 0.683 > 0.6
    across = reranking.run("q", head, texts, neighbours=True, conversations=0.4)
    assert [seat for seat, _ in across.ranked][:2] == [("b", 1), ("b", 5)]
    assert across.ranked[0][1] == pytest.approx(0.683333, abs=1e-6)


@pytest.mark.parametrize(("question", "latest"), [
    ("What's the dog walker's door code now?", True),
    ("What time did my flight actually leave in the end?", True),
    ("What base salary did Aisha end up signing for?", True),
    ("How many DAGs does Fernway have at the latest count?", True),
    ("Which blood pressure medicine is Tomasz taking currently?", True),
    ("When did Aisha sign her contract?", False),
    ("Who knows the code?", False),  # ("now" as a part of another word does not count)
    ("What did we decide about the nightly run?", False),
])
def test_a_question_about_how_things_stand_now_is_told_apart(question: str, latest: bool) -> None:
    assert asks_for_latest(question) is latest


def test_toward_latest_lifts_the_later_of_close_candidates_and_keeps_scores_best_first_within_0_and_1() -> None:
    times = {"old": ("2026-01-05T10:00:00Z", 2), "new": ("2026-03-01T09:00:00Z", 40),
             "mid": ("2026-02-01T00:00:00Z", 9), "far": ("2026-03-02T00:00:00Z", 41)}
    ranked = [("old", 1.0), ("mid", 0.9), ("new", 0.95), ("far", 0.2)]
    out = toward_latest(ranked, times.__getitem__, among=3, share=0.15)
    # the newest of the first three passes the oldest (ordered by its raised score even past 1), the fourth stays
    assert [key for key, _ in out] == ["new", "old", "mid", "far"]
    assert [score for _, score in out] == [1.0, 1.0, 0.975, 0.2]
    # a candidate far behind is not lifted past a strong one
    assert [k for k, _ in toward_latest([("old", 0.8), ("new", 0.5)], times.__getitem__, share=0.15)] == ["old", "new"]
    # fewer than two: nothing to order
    assert toward_latest([("old", 0.3)], times.__getitem__) == [("old", 0.3)]


def test_the_model_s_score_keeps_a_share_of_the_fused_score_so_near_ties_go_the_fusion_s_way() -> None:
    from agentmem.domain.recall import RERANK_FUSED_SHARE, keep_fused

    fused = {"a": 0.9, "b": 0.45, "c": 0.2}
    # the model prefers b to a by a hair: the fusion's clear preference for a wins
    near = keep_fused({"a": 0.60, "b": 0.62, "c": 0.1}, fused, RERANK_FUSED_SHARE)
    assert near["a"] == pytest.approx((0.60 + 0.15 * 1.0) / 1.15) and near["b"] == pytest.approx((0.62 + 0.075) / 1.15)
    assert sorted(near, key=lambda k: -near[k]) == ["a", "b", "c"]
    # a clear preference of the model's overturns the fusion's order
    far = keep_fused({"a": 0.30, "b": 0.80, "c": 0.1}, fused, RERANK_FUSED_SHARE)
    assert sorted(far, key=lambda k: -far[k]) == ["b", "a", "c"]
    # no share, or no fused score to read, leaves the model's scores as they were
    assert keep_fused({"a": 0.3}, fused, 0.0) == {"a": 0.3}
    assert keep_fused({"a": 0.3}, {"a": 0.0}, RERANK_FUSED_SHARE) == {"a": 0.3}


@given(st.dictionaries(st.integers(0, 30), st.tuples(st.floats(0, 1), st.floats(0, 2)), min_size=1),
       st.floats(0, 1))
def test_a_score_that_keeps_a_share_of_the_fused_one_stays_from_0_to_1_and_keeps_the_model_s_order_among_equals(
    rows: dict[int, tuple[float, float]], share: float,
) -> None:
    from agentmem.domain.recall import keep_fused

    kept = keep_fused({k: model for k, (model, _) in rows.items()}, {k: f for k, (_, f) in rows.items()}, share)
    assert set(kept) == set(rows) and all(-1e-9 <= v <= 1 + 1e-9 for v in kept.values())
    for a in rows:
        for b in rows:
            if rows[a][1] == rows[b][1] and rows[a][0] > rows[b][0]:
                assert kept[a] > kept[b] - 1e-12


def test_deep_keeps_the_fused_share_it_is_asked_to_and_only_then() -> None:
    from collections.abc import Sequence

    from agentmem.ports.reranker import Reranker
    from agentmem.services.recall import Reranking

    class Hair(Reranker):  # prefers the fused second to the first, by a hair
        def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
            return [{"a1": 0.60, "a9": 0.62}[p] for p in passages]

    head = [(("a", 1), 0.9), (("a", 9), 0.45)]
    reranking = Reranking(lambda: Hair(), deadline_s=30.0)
    alone = reranking.run("q", head, ["a1", "a9"], neighbours=True)
    assert [seat for seat, _ in alone.ranked] == [("a", 9), ("a", 1)]
    kept = reranking.run("q", head, ["a1", "a9"], neighbours=True, fused=0.15)
    assert [seat for seat, _ in kept.ranked] == [("a", 1), ("a", 9)]
    assert kept.ranked[0][1] == pytest.approx(0.75 / 1.15, abs=1e-6)
