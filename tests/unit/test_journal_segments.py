"""Sealed journal segments and the conversation keys of the single table: pure rules, no AWS."""

from __future__ import annotations

import pytest
from agentmem.adapters.aws.dynamodb import layout
from agentmem.adapters.aws.dynamodb.journal_segments import (
    SEGMENT_MAX_MESSAGES,
    Segment,
    SegmentCutter,
    SegmentFormatError,
    decode_segment,
    encode_segment,
    journal_prefix,
    message_line,
    plan_reads,
    segment_key,
    segment_of,
)
from agentmem.adapters.aws.journal_index import (
    MessageLocation,
    WordMatcher,
    location_of,
    message_doc_id,
    message_fields,
)
from agentmem.domain.conversations import ConversationRef, Message

REF = ConversationRef("acct_1", "support", "ana", "order-42")


def message(seq: int, content: str = "hello", **extra: object) -> Message:
    return Message(seq=seq, turn=1, role="user", content=content, created_at="2026-03-02T09:00:00.000000Z",
                   **extra)  # type: ignore[arg-type]


def test_conversation_keys_read_back_and_the_account_never_shares_one_with_a_user() -> None:
    # Given the account's conversation and users whose ids look like the key parts ("-", "L", "U")
    for user in (None, "-", "L", "U", "ana@x.com:1"):
        pk = layout.conversation_pk("acct_1", "support", user, "order-42")
        # Then each key reads back to its own conversation
        assert layout.parse_conversation_pk(pk) == ("acct_1", "support", user, "order-42")
        assert layout.parse_agent_conversation_sk(layout.agent_conversation_sk(user, "order-42")) == (user, "order-42")
    assert layout.conversation_pk("a", "b", None, "k") != layout.conversation_pk("a", "b", "L", "k")
    assert layout.parse_user_conversation_sk(layout.user_conversation_sk("support", "k.1")) == ("support", "k.1")
    with pytest.raises(ValueError):
        layout.parse_conversation_pk("A#acct_1#M#company#L")


def test_message_keys_sort_by_seq_and_tool_keys_match_one_tool_call_id_only() -> None:
    assert sorted(layout.message_sk(n) for n in (10, 9, 100, 1)) == [layout.message_sk(n) for n in (1, 9, 10, 100)]
    assert layout.message_seq(layout.message_sk(123_456)) == 123_456
    # tool call ids may hold any character; one that starts another never shares its index prefix
    a, b = layout.tool_call_sk("a", 7), layout.tool_call_sk("a#1", 7)
    assert not b.startswith(layout.tool_key("a") + "#") and a.startswith(layout.tool_key("a") + "#")
    assert layout.seq_of_tool_call_sk(a) == 7


def test_a_segment_holds_at_most_1000_messages_or_about_a_megabyte() -> None:
    # Given 2,500 small messages, then three of 400,000 characters, then small ones again
    cutter = SegmentCutter()
    sizes = [10] * 2500 + [400_000] * 3 + [10] * 5
    segments = []
    for seq, size in enumerate(sizes, start=1):
        closed = cutter.add(message(seq, "x" * size))
        if closed:
            segments.append([m.seq for m, _ in closed])
    rest = cutter.close()
    assert rest is not None
    segments.append([m.seq for m, _ in rest])

    # Then the small ones go 1,000 a segment, and the large ones two a segment (a third would pass 1 MB)
    assert [(s[0], s[-1]) for s in segments] == [(1, 1000), (1001, 2000), (2001, 2502), (2503, 2508)]
    assert max(len(s) for s in segments) == SEGMENT_MAX_MESSAGES


def test_a_segment_reads_back_whole_and_the_same_messages_make_the_same_bytes() -> None:
    sent = [message(1, "Ωmega 🚀\u2028 \"quoted\""), message(2, "", tool_call_id="t-ü", tool_name="lookup",
                                                            arguments={"k": [1, None, True]}),
            message(3, "done", client_id="cid-1", tokens=7)]
    lines = [(m, message_line(m)) for m in sent]
    data = encode_segment(REF, "inc-1", lines)
    segment = segment_of(segment_key(REF, 1, 3))
    assert segment is not None and segment.key.startswith(journal_prefix(REF))
    read = decode_segment(data, segment)
    assert (read.incarnation, read.messages) == ("inc-1", sent)
    assert encode_segment(REF, "inc-1", lines) == data  # gzip without a timestamp
    # a segment whose messages are not the seqs its name says is refused
    with pytest.raises(SegmentFormatError):
        decode_segment(data, Segment(segment_key(REF, 1, 4), 1, 4))
    with pytest.raises(SegmentFormatError):
        decode_segment(b"not gzip", segment)


def test_the_journal_prefix_of_the_account_is_no_users() -> None:
    account = ConversationRef("acct_1", "support", None, "k")
    assert journal_prefix(account) == "journal/acct_1/support/~/k/"
    assert journal_prefix(ConversationRef("acct_1", "support", "-", "k")) == "journal/acct_1/support/-/k/"
    assert segment_of("journal/acct_1/support/~/k/notes.txt") is None


def test_reads_take_each_seq_once_from_the_segment_that_reaches_furthest() -> None:
    # Given the segments two seals left: one cut short at 1500, the next going on to 2500
    names = [(1, 1000), (1001, 1500), (1001, 2000), (2001, 2500)]
    segments = [Segment(segment_key(REF, a, b), a, b) for a, b in names]

    def plan(first: int, last: int, skip: set[str] | None = None) -> list[tuple[int, int]]:
        return [(s.first, s.last) for s in plan_reads(segments, first, last, skip)]

    # Then a read of everything takes three segments, never both that start at 1001
    assert plan(1, 2500) == [(1, 1000), (1001, 2000), (2001, 2500)]
    assert plan(1200, 1300) == [(1001, 2000)]
    # and one that cannot be read is replaced by another holding the same seqs, as far as there is one
    assert plan(1, 2500, {segments[2].key}) == [(1, 1000), (1001, 1500)]
    assert plan(2600, 2700) == []


def test_a_message_document_names_its_message_and_nothing_of_an_entry_matches_it() -> None:
    where = MessageLocation("acct_1", "support", None, "order-42", 12)
    fields = message_fields(where, "text", "2026-03-02T09:00:00.000000Z")
    assert location_of(fields) == where
    assert message_doc_id("acct_1", "support", None, "order-42", 12) == "message/acct_1/support//order-42/12"
    assert location_of({"kind": "entry", "memory": "company", "version": 3}) is None


def test_the_word_rule_matches_stems_and_word_starts_only() -> None:
    matcher = WordMatcher(["refund", "warehous"])
    assert matcher.matches("The Warehouses are full") and matcher.matches("lookup_refund_policy")
    assert matcher.matches("Refunding takes a week")  # by its stem
    assert not matcher.matches("nonrefundable") and not WordMatcher([]).matches("anything")
    # function words are not indexed on any backend: they match nothing
    assert not WordMatcher(["where"]).matches("Where is it?")
    assert matcher.held("refund the warehouse") == 2
