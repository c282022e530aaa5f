"""The word rules of SPEC §6.1 as agentmem.domain.search ranks them, on hand-built entries."""

from __future__ import annotations

from dataclasses import replace

import pytest
from agentmem.domain.models import Entry
from agentmem.domain.search import Query, query_words


def entry(
    name: str,
    description: str = "Something",
    content: str = "Nothing here.",
    *,
    importance: float = 0.5,
    updated_at: str = "2026-03-02T09:00:00.000000Z",
    user_id: str | None = None,
) -> Entry:
    return Entry(
        name=name,
        description=description,
        content=content,
        category="note",
        importance=importance,
        visibility="private" if user_id else "shared",
        version=1,
        updated_by="api",
        created_at="2026-03-01T09:00:00.000000Z",
        updated_at=updated_at,
        memory="company",
        user_id=user_id,
    )


def names(query: str, *entries: Entry, limit: int = 100) -> list[str]:
    return [r.entry.name for r in Query(query).rank(entries, limit)]


# -- what a query's words are -----------------------------------------------------------------------------


def test_query_words_are_distinct_lowercase_and_in_order() -> None:
    # Given / When / Then: punctuation splits words, repeats count once
    assert query_words("Refund POLICY refund, policy!") == ["refund", "policy"]
    assert query_words("eu.shipping_rules-v2") == ["eu", "shipping", "rules", "v2"]
    assert query_words("Größe café 日本") == ["größe", "café", "日本"]
    assert query_words("🚀 -- ??") == []


# -- what matches -----------------------------------------------------------------------------------------


def test_any_word_of_the_query_is_enough_to_match() -> None:
    # Given one entry per word, and one with neither
    refund = entry("a", content="We refund orders.")
    shipping = entry("b", content="Shipping is free.")
    neither = entry("c", content="Open on Sundays.")

    # When / Then
    assert sorted(names("refund shipping", refund, shipping, neither)) == ["a", "b"]
    assert Query("refund shipping").score(neither) is None


@pytest.mark.parametrize(
    ("text", "matches"),
    [
        ("refund", True),
        ("refunds", True),
        ("refunded", True),
        ("Refunding", True),
        ("REFUND", True),
        ("(refund)", True),
        ("non-refundable", True),  # "-" separates words
        ("auto_refund", True),  # "_" separates words
        ("v2refund", False),
        ("prerefund", False),
        ("refun", False),
        ("re fund", False),
    ],
)
def test_a_query_word_matches_words_it_starts_but_not_words_it_is_inside(text: str, matches: bool) -> None:
    # Given content holding one form of the word
    candidate = entry("x", description="Other", content=f"About {text} here.")

    # When / Then
    assert (Query("refund").score(candidate) is not None) is matches


def test_words_are_matched_in_the_name_and_description_too() -> None:
    # Given the word only in a name (joined with -) or only in a description
    in_name = entry("refund-policy", description="Money", content="Text.")
    in_description = entry("terms", description="Refunds explained", content="Text.")

    # When / Then
    assert sorted(names("refund", in_name, in_description)) == ["refund-policy", "terms"]


def test_the_whole_query_in_the_name_or_description_matches_even_inside_a_word() -> None:
    # Given "fund" only inside words: in a description, and in content
    in_description = entry("a", description="Refunds schedule")
    in_content = entry("b", content="The refunds team.")

    # When / Then: the description holds the whole query, the content only holds it inside a word
    assert names("fund", in_description, in_content) == ["a"]


def test_a_query_without_words_matches_by_the_whole_query_only() -> None:
    # Given an emoji in a description, and in content
    in_description = entry("launch", description="Launch 🚀 plan")
    in_content = entry("party", content="Party 🚀 tonight")

    # When / Then
    assert names("🚀", in_description, in_content) == ["launch"]


def test_the_whole_query_ignores_case_and_runs_of_spaces() -> None:
    # Given a description holding the phrase in capitals
    candidate = entry("a", description="THE REFUND POLICY")

    # When the query spaces the phrase out
    # Then it still counts as the whole query
    whole = Query("refund    policy").score(candidate)
    words_only = Query("policy refund").score(candidate)
    assert whole is not None and words_only is not None
    assert whole > words_only


def test_an_entry_without_content_is_matched_on_its_name_and_description() -> None:
    # Given a listing entry (content left out)
    listed = replace(entry("refund-policy"), content=None)

    # When / Then
    assert names("refund", listed) == ["refund-policy"]
    assert names("shipping", listed) == []


# -- how matches rank -------------------------------------------------------------------------------------


def test_more_query_words_held_rank_higher_whatever_the_tie_breakers() -> None:
    # Given entries holding 3, 2 and 1 of the words, the fewer words the newer and more important
    three = entry("three", content="refund order europe", importance=0.0, updated_at="2026-01-01T00:00:00.000000Z")
    two = entry("two", content="refund order", importance=0.5, updated_at="2026-02-01T00:00:00.000000Z")
    one = entry("one", content="refund", importance=1.0, updated_at="2026-03-01T00:00:00.000000Z")

    # When / Then
    assert names("refund order europe", one, two, three) == ["three", "two", "one"]


def test_two_words_in_the_content_beat_one_word_in_the_name() -> None:
    # Given one word in a name, and two in content
    name_only = entry("refund", description="Other")
    content_two = entry("x", description="Other", content="refund order")

    # When / Then: the number of words held comes first
    assert names("refund order", name_only, content_two) == ["x", "refund"]


def test_a_word_in_the_name_or_description_counts_more_than_in_the_content() -> None:
    # Given the same word in a name, a description and content; the content one wins every tie-breaker
    in_name = entry("warranty", description="Terms", importance=0.1)
    in_description = entry("terms", description="Warranty terms", importance=0.1)
    in_content = entry(
        "faq",
        description="Questions",
        content="The warranty lasts.",
        importance=1.0,
        updated_at="2027-01-01T00:00:00.000000Z",
    )

    # When
    query = Query("warranty")
    scores = {e.name: query.score(e) for e in (in_name, in_description, in_content)}

    # Then the name counts at least as much as the description, and both more than the content
    assert scores["faq"] is not None and scores["terms"] is not None and scores["warranty"] is not None
    assert scores["warranty"] >= scores["terms"] > scores["faq"]
    assert names("warranty", in_content, in_name, in_description)[-1] == "faq"


def test_repeating_a_word_raises_the_score_less_than_holding_it_in_the_name_or_another_word() -> None:
    # Given one entry holding "refund" in its name and three times in its content, one in its name only,
    # and one holding it three times in content only
    both = entry("refund", description="Other", content="refund refund refund")
    name_only = entry("refund", description="Other", content="Text.")
    content_only = entry("other", description="Other", content="refund refund refund")
    two_words = entry("x", description="Other", content="refund order")
    query = Query("refund")

    # When / Then: BM25 counts repeats a little, within the notch of words held in the name
    both_score, name_score, content_score = (query.score(e) for e in (both, name_only, content_only))
    assert both_score is not None and name_score is not None and content_score is not None
    assert both_score > name_score > content_score
    # and no repeat ever weighs as much as one more word of the query
    assert names("refund order", both, two_words)[0] == "x"


def test_the_whole_query_ranks_above_the_same_words_apart() -> None:
    # Given both words in both descriptions, one as the phrase; the other newer and more important
    phrase = entry("phrase", description="The refund policy", importance=0.1)
    apart = entry(
        "apart", description="Policy on each refund", importance=0.9, updated_at="2027-01-01T00:00:00.000000Z"
    )

    # When / Then
    assert names("refund policy", apart, phrase) == ["phrase", "apart"]


def test_equal_scores_rank_by_importance_then_newest() -> None:
    # Given three entries that hold the word the same way
    old_important = entry("old-important", content="refund", importance=0.9, updated_at="2026-01-01T00:00:00.000000Z")
    new_plain = entry("new-plain", content="refund", importance=0.5, updated_at="2026-03-01T00:00:00.000000Z")
    old_plain = entry("old-plain", content="refund", importance=0.5, updated_at="2026-02-01T00:00:00.000000Z")

    # When / Then
    assert names("refund", old_plain, new_plain, old_important) == ["old-important", "new-plain", "old-plain"]


def test_rank_returns_at_most_limit_results_best_first() -> None:
    # Given 12 matching entries, one better than the rest
    candidates = [entry(f"e{n:02d}", content="refund") for n in range(11)]
    candidates.append(entry("best", description="refund order", content="refund order"))

    # When / Then
    ranked = Query("refund order").rank(candidates, 10)
    assert len(ranked) == 10
    assert ranked[0].entry.name == "best"
    assert [r.score for r in ranked] == sorted((r.score for r in ranked), reverse=True)


def test_ranked_results_carry_the_entry_whole() -> None:
    # Given a user's entry
    own = entry("mine", content="refund me", user_id="ana")

    # When / Then
    (result,) = Query("refund").rank([own], 10)
    assert (result.entry.content, result.entry.memory, result.entry.user_id) == ("refund me", "company", "ana")
    assert result.score > 0


def test_read_against_a_full_match_one_word_of_a_long_question_is_not_a_full_keyword_match() -> None:
    from agentmem.domain.recall import Calibration, Signals, fuse

    # Given a question whose words only an unrelated entry shares one of, and the meant entry found by meaning
    query = Query("who is his next of kin if something happens")
    (only,) = query.rank([entry("health.appointments", "Upcoming appointments",
                                "Podiatrist every 8 weeks, next one 3 February.")], 10)
    candidates = {"health.appointments": Signals(keyword=only.score),
                  "family.daughter": Signals(semantic=0.35)}
    calibration = Calibration(floor=0.1, ceiling=0.6, keyword_weight=0.5, importance_boost=0.1, min_score=0.12)
    # Then read against the best of the answer the one shared word outweighs the meaning; against a full match
    # of the question it does not
    assert fuse(candidates, "hybrid", calibration)[0][0] == "health.appointments"
    ranked = fuse(candidates, "hybrid", calibration, keyword_scale=query.full_match())
    assert ranked[0][0] == "family.daughter"
    # an entry holding every word still reads as a full match, and a query without words has no scale
    every = Query("refund order")
    (full,) = every.rank([entry("refunds", content="refund order")], 10)
    assert fuse({"refunds": Signals(keyword=full.score)}, "keyword", calibration,
                keyword_scale=every.full_match()) == [("refunds", 1.0)]
    assert Query("?!").full_match() is None
