"""Where a long message is cut into passages (domain/passages.py): the one rule both backends index by."""

from __future__ import annotations

import itertools

import pytest
from agentmem.domain.passages import MAX_PASSAGES, PASSAGE_CHARS, WHOLE_CHARS, Passage, best_passage, passages
from agentmem.domain.search import Query

PROSE = " ".join(f"Sentence number {i} talks about topic {i} at some length, so that it fills the line."
                 for i in range(40))


def test_a_short_message_is_one_passage_itself() -> None:
    text = "We moved the standup to 9:30. Nobody liked 9."
    assert passages(text) == [Passage(0, len(text))]
    assert passages("x" * WHOLE_CHARS) == [Passage(0, WHOLE_CHARS)]
    assert passages("") == [Passage(0, 0)]


def test_a_long_message_is_cut_between_sentences_into_overlapping_passages_that_cover_it() -> None:
    found = passages(PROSE)
    assert len(found) > 1
    covered = set()
    for passage in found:
        piece = passage.of(PROSE)
        assert 0 <= passage.start < passage.end <= len(PROSE)
        assert len(piece) <= PASSAGE_CHARS
        assert piece.startswith("Sentence number") and piece.endswith("line.")  # whole sentences only
        covered.update(range(passage.start, passage.end))
    assert all(i in covered for i, c in enumerate(PROSE) if not c.isspace())
    # each passage after the first starts inside the one before: a sentence at a boundary is whole in one
    assert all(b.start < a.end for a, b in itertools.pairwise(found))
    assert found == sorted(found)


def test_a_code_block_that_fits_is_never_cut_and_list_items_are_cut_only_between_lines() -> None:
    code = "```python\n" + "\n".join(f"    total += price[{i}] * quantity[{i}]" for i in range(10)) + "\n```"
    items = "\n".join(f"- step {i}: run the migration for table number {i} and check the counts" for i in range(12))
    text = PROSE[:700] + "\n\n" + code + "\n\n" + items + "\n\n" + PROSE[:400]
    found = passages(text)
    start = text.index("```python")
    end = text.index("```", start + 3) + 3
    assert any(p.start <= start and end <= p.end for p in found)  # the block whole in one passage
    assert not any(start < p.start < end or start < p.end < end for p in found)  # and cut by none
    line_starts = {0} | {i + 1 for i, c in enumerate(text) if c == "\n"}
    for passage in found:
        piece = passage.of(text)
        if piece.startswith("- step"):
            assert passage.start in line_starts
        if "- step" in piece and piece.rstrip().endswith("counts"):
            assert passage.end == len(text) or text[passage.end] == "\n"


def test_a_numbered_heading_is_not_a_sentence_end() -> None:
    text = PROSE[:650] + "\n\n**2. Checkout** is the right answer if you want to delete code. " + PROSE[:300]
    assert not any(p.of(text).endswith("**2.") for p in passages(text))


def test_a_run_without_spaces_is_cut_anywhere_and_a_huge_message_has_a_bounded_number_of_passages() -> None:
    blob = "a" * (PASSAGE_CHARS * 3 + 10)
    found = passages(blob)
    assert [p.end - p.start for p in found][:3] == [PASSAGE_CHARS] * 3
    huge = PROSE * 40
    many = passages(huge)
    assert len(many) == MAX_PASSAGES
    assert many[-1].end == len(huge.rstrip())


@pytest.mark.parametrize("text", ["🎉" * 2000, "\x00\x01 " * 900, "日本語の文章です。" * 300, "\n\n\n" * 500])
def test_any_text_is_cut_into_passages_within_it(text: str) -> None:
    for passage in passages(text):
        assert 0 <= passage.start <= passage.end <= len(text)


def test_the_passage_shown_is_the_one_holding_most_query_words_the_semantic_one_winning_a_tie() -> None:
    text = PROSE[:900] + " The invoice for Porto was paid by card on Friday. " + PROSE[:900]
    found = passages(text)

    held = Query("invoice porto").held_at(text)
    assert {word for _, word in held} == {"invoice", "porto"}
    shown = best_passage(text, held)
    assert shown is not None and "The invoice for Porto was paid" in shown.of(text)
    assert best_passage(text, [], found[-1]) == found[-1]
    assert best_passage("short text", held) is None
    # the passages a caller has cut already are the ones chosen from (the same choice)
    assert best_passage(text, held, cut=found) == shown and best_passage(text, held, cut=found[-1:]) == found[-1]
