"""The ConversationStore port on every backend: the journal, its records and its counters (SPEC §4.1, §4.3, §4.6).

These tests talk to the store itself: how an append numbers and turns its messages, that a retried
append stores nothing twice, that concurrent appenders (two processes' worth) never lose, duplicate or
reorder a message, that the journal reads back whole, and the record's fold marks and threshold.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from agentmem.domain.clock import iso
from agentmem.domain.conversations import AppendResult, ConversationRef, Message, MessageDraft
from agentmem.domain.errors import ConflictError, NotFoundError, VersionConflictError
from agentmem.ports.conversations import ConversationStore
from contract_world import World, twin_container
from test_contract_concurrency import run_threads

THRESHOLDS = (32_000, 40)


def store(world: World) -> ConversationStore:
    return world.container.stores.conversations


def now(world: World) -> str:
    return iso(world.clock())


def conv(world: World, key: str = "c1", user: str | None = "ana", agent: str = "support") -> ConversationRef:
    return ConversationRef(world.account.account_id, agent, user, key)


def user(content: str, client_id: str | None = None, tokens: int = 0) -> MessageDraft:
    return MessageDraft("user", content, client_id=client_id, tokens=tokens)


def assistant(content: str, client_id: str | None = None, tokens: int = 0) -> MessageDraft:
    return MessageDraft("assistant", content, client_id=client_id, tokens=tokens)


def call(call_id: str, name: str, arguments: dict[str, Any], content: str = "") -> MessageDraft:
    return MessageDraft("tool_call", content, tool_name=name, tool_call_id=call_id, arguments=arguments)


def result(call_id: str, value: Any, content: str = "") -> MessageDraft:
    return MessageDraft("tool_result", content, tool_call_id=call_id, result=value)


def append(
    world: World, ref: ConversationRef, *drafts: MessageDraft, on: ConversationStore | None = None,
    thresholds: tuple[int, int] = THRESHOLDS, surface: str = "agent", window_messages: int | None = None,
) -> AppendResult:
    return (on or store(world)).append(ref, list(drafts), now=now(world), surface=surface, thresholds=thresholds,
                                       window_messages=window_messages)


def fill(world: World, ref: ConversationRef, count: int, *, tokens: int = 100,
         thresholds: tuple[int, int] = THRESHOLDS) -> None:
    """``count`` messages of ``tokens`` each, one turn of a user message and an answer per two."""
    for n in range(count):
        draft = user(f"question {n}", tokens=tokens) if n % 2 == 0 else assistant(f"answer {n}", tokens=tokens)
        append(world, ref, draft, thresholds=thresholds)


def journal(world: World, ref: ConversationRef, *, on: ConversationStore | None = None) -> list[Message]:
    """The whole journal, read page by page."""
    found: list[Message] = []
    while True:
        page = (on or store(world)).messages(ref, after=found[-1].seq if found else 0, limit=500)
        if not page:
            return found
        found += page


def seqs(messages: list[Message]) -> list[int]:
    return [m.seq for m in messages]


# -- append: numbering, turns, the record ---------------------------------------------------------------
def test_appends_number_messages_after_the_newest_and_a_user_message_opens_a_turn(world: World) -> None:
    # Given a conversation that starts with the assistant's greeting
    ref = conv(world)
    first = append(world, ref, assistant("Hello! How can I help?", tokens=7), window_messages=12)

    # When a turn with a tool call follows, and then another user message
    second = append(
        world, ref, user("Where is my refund?", tokens=5), call("t1", "lookup_order", {"order": 42}),
        result("t1", {"status": "refunded"}), assistant("It was refunded yesterday.", tokens=6), surface="test",
    )
    third = append(world, ref, user("Thanks!", tokens=2))

    # Then the greeting is seq 1 in turn 1, the turn's rows follow in turn 2, and the next user message opens turn 3
    assert [(m.seq, m.turn, m.role) for m in first.messages + second.messages + third.messages] == [
        (1, 1, "assistant"), (2, 2, "user"), (3, 2, "tool_call"), (4, 2, "tool_result"), (5, 2, "assistant"),
        (6, 3, "user"),
    ]
    assert (first.added, second.added, third.added) == (1, 4, 1)
    # and the record moved with them, keeping the window setting and naming the latest surface
    record = third.record
    assert (record.last_seq, record.last_turn, record.unfolded_messages, record.unfolded_tokens) == (6, 3, 6, 20)
    assert (record.window_messages, record.surface, record.folded_through, record.due_since) == (12, "agent", 0, None)
    assert second.record.surface == "test"
    assert record.ref == ref and record.created_at == first.record.created_at
    assert record.updated_at > first.record.updated_at
    assert store(world).get(ref) == record
    assert store(world).get(conv(world, "never")) is None


def test_a_conversation_that_starts_with_a_user_message_starts_in_turn_1(world: World) -> None:
    # Given / When a conversation's first append is a user message and its answer
    appended = append(world, conv(world), user("Hi"), assistant("Hello"))

    # Then both are in turn 1
    assert [(m.seq, m.turn) for m in appended.messages] == [(1, 1), (2, 1)]
    assert appended.record.last_turn == 1


def test_conversations_are_numbered_apart(world: World) -> None:
    # Given two conversations of ana's with the same agent, and bob's with the same key
    # When each gets messages
    append(world, conv(world, "c1"), user("one"), assistant("two"))
    other = append(world, conv(world, "c2"), user("three"))
    bobs = append(world, conv(world, "c1", user="bob"), user("four"))

    # Then each numbers its own from 1
    assert (other.messages[0].seq, bobs.messages[0].seq) == (1, 1)
    assert [m.content for m in journal(world, conv(world, "c1"))] == ["one", "two"]


# -- idempotent retries ---------------------------------------------------------------------------------
def test_a_retried_append_adds_nothing_and_returns_the_stored_messages(world: World) -> None:
    # Given an append of two messages with client ids
    ref = conv(world)
    original = append(world, ref, user("Where is my refund?", "cid-1", tokens=5), assistant("Looking.", "cid-2", 3))

    # When the same append is retried (the first reply was lost)
    retried = append(world, ref, user("Where is my refund?", "cid-1", tokens=5), assistant("Looking.", "cid-2", 3))

    # Then nothing is added: the stored messages come back as stored, and the record has not moved
    assert retried.added == 0
    assert retried.messages == original.messages
    assert retried.record == original.record
    assert journal(world, ref) == original.messages


def test_a_batch_mixing_old_and_new_client_ids_adds_only_the_new_ones(world: World) -> None:
    # Given a stored message with client id "a"
    ref = conv(world)
    stored = append(world, ref, user("first", "a", tokens=1)).messages[0]

    # When a batch repeats "a" between a new client id and a message without one
    mixed = append(world, ref, assistant("second", "b", tokens=2), user("first", "a", tokens=1),
                   assistant("third", tokens=4))

    # Then only the two new ones are stored, numbered after the newest; "a" comes back as stored
    assert mixed.added == 2
    assert [(m.seq, m.content, m.client_id) for m in mixed.messages] == [
        (2, "second", "b"), (1, "first", "a"), (3, "third", None),
    ]
    assert mixed.messages[1] == stored
    assert (mixed.record.last_seq, mixed.record.unfolded_messages, mixed.record.unfolded_tokens) == (3, 3, 7)
    assert seqs(journal(world, ref)) == [1, 2, 3]


def test_a_message_without_a_client_id_is_stored_every_time(world: World) -> None:
    # Given / When the same message without a client id is appended twice
    ref = conv(world)
    append(world, ref, user("same"))
    again = append(world, ref, user("same"))

    # Then both are stored
    assert again.added == 1
    assert [m.content for m in journal(world, ref)] == ["same", "same"]


# -- concurrency ----------------------------------------------------------------------------------------
CLIENT_ATTEMPTS = 4  # an append sent this many times at most on a 409 "try again"


def append_as_a_client_does(world: World, ref: ConversationRef, *drafts: MessageDraft,
                            on: ConversationStore) -> AppendResult:
    """An append, sent again on the 409 "too many writers at once; try again" as the error asks (its messages'
    client ids make that safe): a writer can lose every race for the store's patience when the machine is
    starved, which is the answer, not a loss."""
    for attempt in range(1, CLIENT_ATTEMPTS + 1):
        try:
            return append(world, ref, *drafts, on=on)
        except ConflictError:
            if attempt == CLIENT_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


def test_concurrent_appenders_in_two_processes_lose_duplicate_and_reorder_nothing(world: World) -> None:
    # Given one conversation, and eight writers of 250 messages each, half of them in a second process
    ref = conv(world)
    stores = [store(world), twin_container(world.container, world.clock).stores.conversations]
    returned: dict[str, int] = {}
    lock = threading.Lock()

    def writer(n: int) -> None:
        on = stores[n % 2]
        for i in range(250):
            appended = append_as_a_client_does(world, ref, user(f"writer {n} message {i}", f"w{n}-{i:03d}", tokens=1),
                                               on=on)
            assert appended.added == 1
            with lock:
                returned[appended.messages[0].client_id or ""] = appended.messages[0].seq

    # When they all append at once, one message per append
    run_threads(8, writer)

    # Then the journal holds exactly 2,000 messages, seq 1..2000, no duplicate, no gap
    messages = journal(world, ref)
    assert seqs(messages) == list(range(1, 2001))
    assert len({m.client_id for m in messages}) == 2000
    # each with the seq its append returned, and each writer's messages in the order it appended them
    assert {m.client_id: m.seq for m in messages} == returned
    for n in range(8):
        own = [m.client_id for m in messages if m.client_id is not None and m.client_id.startswith(f"w{n}-")]
        assert own == [f"w{n}-{i:03d}" for i in range(250)]
    record = store(world).get(ref)
    assert record is not None and (record.last_seq, record.unfolded_messages, record.unfolded_tokens) == (
        2000, 2000, 2000,
    )

    # When every writer re-sends all its messages with their client ids, at once again
    added: list[int] = []

    def resender(n: int) -> None:
        on = stores[n % 2]
        for start in range(0, 250, 25):
            drafts = [user(f"writer {n} message {i}", f"w{n}-{i:03d}", tokens=1) for i in range(start, start + 25)]
            appended = append_as_a_client_does(world, ref, *drafts, on=on)
            assert [m.seq for m in appended.messages] == [returned[d.client_id or ""] for d in drafts]
            with lock:
                added.append(appended.added)

    run_threads(8, resender)

    # Then nothing was added
    assert sum(added) == 0
    assert seqs(journal(world, ref)) == list(range(1, 2001))
    again = store(world).get(ref)
    assert again is not None and again.last_seq == 2000 and again.unfolded_messages == 2000


# -- reading the journal back ---------------------------------------------------------------------------
def test_the_journal_reads_back_whole_and_in_order_page_by_page(world: World) -> None:
    # Given 2,500 messages, appended forty at a time, with tool calls and results among them
    ref = conv(world)
    sent: list[Message] = []
    for batch in range(0, 2500, 40):
        drafts: list[MessageDraft] = []
        for n in range(batch, min(batch + 40, 2500)):
            kind = n % 4
            if kind == 0:
                drafts.append(user(f"question {n}", f"m{n}", tokens=n % 7))
            elif kind == 1:
                drafts.append(call(f"t{n}", "lookup", {"n": n, "nested": {"list": [n, "x", None, True]}}))
            elif kind == 2:
                drafts.append(result(f"t{n - 1}", [{"row": n}, "ok", 1.5]))
            else:
                drafts.append(assistant(f"answer {n}", f"m{n}", tokens=3))
        sent += append(world, ref, *drafts).messages

    # When it is read back 100 at a time, each page after the last one's newest seq
    pages: list[list[Message]] = []
    after = 0
    while page := store(world).messages(ref, after=after, limit=100):
        pages.append(page)
        after = page[-1].seq

    # Then it comes back in 25 full pages, every message whole and in order, as the appends returned them
    assert [len(p) for p in pages] == [100] * 25
    assert [m for p in pages for m in p] == sent
    assert seqs(sent) == list(range(1, 2501))
    assert sent[1].arguments == {"n": 1, "nested": {"list": [1, "x", None, True]}}
    assert sent[2].result == [{"row": 2}, "ok", 1.5]
    # and a page from the middle, a short last page and a page past the end are what they say
    assert seqs(store(world).messages(ref, after=1234, limit=3)) == [1235, 1236, 1237]
    assert seqs(store(world).messages(ref, after=2490, limit=100)) == list(range(2491, 2501))
    assert store(world).messages(ref, after=2500, limit=100) == []
    assert store(world).messages(conv(world, "never"), after=0, limit=100) == []


def test_the_tail_is_the_newest_messages_in_order(world: World) -> None:
    # Given twelve messages
    ref = conv(world)
    fill(world, ref, 12)

    # When the tail of five, and of more than there are, is read
    # Then it is the newest five in order, or all of them
    assert seqs(store(world).tail(ref, 5)) == [8, 9, 10, 11, 12]
    assert [m.content for m in store(world).tail(ref, 2)] == ["question 10", "answer 11"]
    assert seqs(store(world).tail(ref, 50)) == list(range(1, 13))
    assert store(world).tail(conv(world, "never"), 5) == []


def test_tool_messages_are_the_call_and_the_result_of_one_tool_call_id(world: World) -> None:
    # Given two tool calls with their results, the second with large arguments
    ref = conv(world)
    big = {"query": "é" * 20_000, "filters": [{"field": "status", "in": ["open", "closed"]}]}
    append(world, ref, user("Check my orders"), call("t1", "list_orders", {"user": "ana"}, "listing"),
           result("t1", {"orders": [1, 2]}, "2 orders"), call("t2", "search", big), result("t2", "nothing found"),
           assistant("You have two orders."))

    # When the rows of "t2" are asked for
    rows = store(world).tool_messages(ref, "t2")

    # Then they are the call and the result, whole, in order; an unknown id has none
    assert [(m.seq, m.role, m.tool_name) for m in rows] == [(4, "tool_call", "search"), (5, "tool_result", None)]
    assert (rows[0].arguments, rows[1].result) == (big, "nothing found")
    first = store(world).tool_messages(ref, "t1")
    assert [(m.content, m.arguments, m.result) for m in first] == [
        ("listing", {"user": "ana"}, None), ("2 orders", None, {"orders": [1, 2]}),
    ]
    assert store(world).tool_messages(ref, "t9") == []
    assert store(world).tool_messages(conv(world, "c2"), "t1") == []


# -- journal search candidates --------------------------------------------------------------------------
def _search_world(world: World) -> None:
    """ana's two conversations with "support", and messages about refunds everywhere else."""
    append(world, conv(world, "c1"), user("Where is my refund?"), assistant("Refunds take 14 days."))
    append(world, conv(world, "c2"), user("What is the refund policy?"),
           call("t1", "lookup_refund_policy", {"q": "policy"}), result("t1", {"days": 30}, "30 days"),
           assistant("This order is nonrefundable."))
    append(world, conv(world, "c1", user="bob"), user("bob wants a refund"))
    append(world, conv(world, "c1", user=None), user("the account asks about a refund"))
    append(world, conv(world, "c1", agent="helper"), user("refund via another agent"))
    other = ConversationRef(world.other.account_id, "support", "ana", "c1")
    append(world, other, user("refund in another account"))


def hits(world: World, *words: str, user: str | None = "ana", **kwargs: Any) -> list[tuple[str, int]]:
    found = store(world).search_candidates(world.account.account_id, "support", user, list(words), **kwargs)
    return [(h.conversation, h.message.seq) for h in found]


def test_search_finds_the_messages_holding_a_word_starting_with_a_query_word_best_first(world: World) -> None:
    # Given ana's conversations c1 and c2 with "support", and refunds talked about by others
    _search_world(world)

    # When ana's messages with "support" are searched for "refund"
    # Then her messages holding a word that starts with it are found, by relevance, and nobody else's
    # ("nonrefundable" does not start with it; the tool name "lookup_refund_policy" holds "refund")
    assert sorted(hits(world, "refund")) == [("c1", 1), ("c1", 2), ("c2", 1), ("c2", 2)]
    found = store(world).search_candidates(world.account.account_id, "support", "ana", ["refund"])
    assert [h.score for h in found] == sorted((h.score for h in found), reverse=True)
    assert {h.message.tool_name for h in found} >= {"lookup_refund_policy"}
    # and any of several words finds, a word prefix finds, and case does not matter
    # (function words such as "where" are not indexed: they would match almost every message)
    assert sorted(hits(world, "days", "polic")) == [("c1", 2), ("c2", 1), ("c2", 2), ("c2", 3)]
    assert hits(world, "where") == []
    assert hits(world, "nonref") == [("c2", 4)]
    assert hits(world, "fund", "zzz") == []
    assert hits(world) == []


def test_search_keeps_to_one_conversation_one_user_one_agent_and_one_account(world: World) -> None:
    # Given the same conversations
    _search_world(world)

    # When the search names one conversation, the account's conversations, another agent, or bob
    # Then it finds only there
    assert sorted(hits(world, "refund", conversation="c1")) == [("c1", 1), ("c1", 2)]
    assert hits(world, "refund", conversation="c9") == []
    assert hits(world, "refund", user=None) == [("c1", 1)]
    assert hits(world, "refund", user="bob") == [("c1", 1)]
    assert [(h.conversation, h.message.content) for h in store(world).search_candidates(
        world.account.account_id, "helper", "ana", ["refund"])] == [("c1", "refund via another agent")]
    assert [h.message.content for h in store(world).search_candidates(
        world.other.account_id, "support", "ana", ["refund"])] == ["refund in another account"]


def test_search_returns_at_most_limit_candidates_newest_first(world: World) -> None:
    # Given thirty messages about refunds
    ref = conv(world)
    for n in range(30):
        append(world, ref, user(f"refund number {n}"))

    # When at most five are asked for
    # Then the newest five come back
    assert [seq for _, seq in hits(world, "refund", limit=5)] == [30, 29, 28, 27, 26]


def test_search_matches_unicode_words(world: World) -> None:
    # Given messages in French, German and Japanese-with-spaces
    ref = conv(world)
    append(world, ref, user("La crème brûlée était délicieuse"), assistant("Das Heizöl ist teuer"),
           user("東京 タワー"))

    # When searched by lower-cased words (as the domain's query words are)
    # Then accents and case are honoured, and a prefix matches
    assert hits(world, "crème") == [("c1", 1)]
    assert hits(world, "creme") == []
    assert hits(world, "heiz") == [("c1", 2)]
    assert hits(world, "東京") == [("c1", 3)]


# -- folding, the threshold, forgetting -----------------------------------------------------------------
def test_mark_folded_moves_the_mark_only_from_where_the_pass_found_it(world: World) -> None:
    # Given ten messages of 100 tokens
    ref = conv(world)
    fill(world, ref, 10)

    # When a pass folds the first six
    folded = store(world).mark_folded(ref, expected_folded_through=0, folded_through=6, folded_tokens=600,
                                      folded_messages=6, now=now(world), thresholds=THRESHOLDS)

    # Then the mark is at 6 and the counters hold the other four
    assert (folded.folded_through, folded.unfolded_messages, folded.unfolded_tokens) == (6, 4, 400)
    assert store(world).get(ref) == folded

    # When a second pass that also started from 0 tries to move it
    with pytest.raises(VersionConflictError) as conflict:
        store(world).mark_folded(ref, expected_folded_through=0, folded_through=8, folded_tokens=800,
                                 folded_messages=8, now=now(world), thresholds=THRESHOLDS)

    # Then it is refused naming the current mark, and nothing moved
    assert conflict.value.current_version == 6
    after = store(world).get(ref)
    assert after is not None and (after.folded_through, after.unfolded_messages, after.unfolded_tokens) == (6, 4, 400)
    # and new messages count on top of what is unfolded
    appended = append(world, ref, user("more", tokens=50))
    assert (appended.record.unfolded_messages, appended.record.unfolded_tokens) == (5, 450)


def test_crossing_a_threshold_makes_the_conversation_due_until_a_fold_brings_it_under(world: World) -> None:
    # Given thresholds of 1,000 tokens or 5 messages, and five messages of 100 tokens (not over either)
    ref = conv(world)
    small = (1_000, 5)
    fill(world, ref, 5, thresholds=small)
    record = store(world).get(ref)
    assert record is not None and record.due_since is None

    # When a sixth message crosses the message threshold, and a seventh follows
    crossing_time = now(world)
    crossing = store(world).append(ref, [user("six", tokens=100)], now=crossing_time, surface="agent",
                                   thresholds=small)
    later = append(world, ref, assistant("seven", tokens=100), thresholds=small)

    # Then the conversation is due since the crossing append, and stays so
    assert crossing.record.due_since == crossing_time
    assert later.record.due_since == crossing_time

    # When a pass folds four (three messages left, still under 1,000 tokens)
    folded = store(world).mark_folded(ref, expected_folded_through=0, folded_through=4, folded_tokens=400,
                                      folded_messages=4, now=now(world), thresholds=small)

    # Then it is no longer due
    assert folded.due_since is None


def test_crossing_the_token_threshold_makes_it_due_and_a_fold_still_over_it_keeps_it_due(world: World) -> None:
    # Given thresholds of 1,000 tokens or 40 messages
    ref = conv(world)
    limits = (1_000, 40)

    # When one message of 600 tokens, then one of 500 are appended
    first = append(world, ref, user("long", tokens=600), thresholds=limits)
    second = append(world, ref, assistant("longer", tokens=500), thresholds=limits)

    # Then only the second (1,100 tokens) made it due
    assert first.record.due_since is None and second.record.due_since is not None

    # When a pass folds only 50 tokens' worth, leaving it over
    folded = store(world).mark_folded(ref, expected_folded_through=0, folded_through=0, folded_tokens=50,
                                      folded_messages=0, now=now(world), thresholds=limits)

    # Then it stays due since the same time
    assert folded.due_since == second.record.due_since


def test_due_conversations_are_the_ones_over_their_threshold_longest_first_in_every_account(world: World) -> None:
    # Given conversations that crossed their threshold in this order: ana's c2, globex's c1, ana's c1, then
    # bob's c3 that stayed under it
    over = (10, 40)
    other = ConversationRef(world.other.account_id, "support", None, "c1")
    crossed = {}
    for ref in (conv(world, "c2"), other, conv(world, "c1")):
        crossed[ref] = append(world, ref, user("big", tokens=11), thresholds=over).record.due_since
    append(world, conv(world, "c3", user="bob"), user("small", tokens=5), thresholds=over)
    cutoff = now(world)

    def due(before: str, limit: int = 100) -> list[ConversationRef]:
        return [r.ref for r in store(world).due_conversations(before, limit=limit)]

    # When the sweep asks which are due before now, before the third crossing, and at most two
    # Then they come oldest first, whatever their account
    assert due(cutoff) == [conv(world, "c2"), other, conv(world, "c1")]
    assert due(crossed[conv(world, "c1")] or "") == [conv(world, "c2"), other]
    assert due(cutoff, limit=2) == [conv(world, "c2"), other]

    # When the first is folded back under its threshold
    store(world).mark_folded(conv(world, "c2"), expected_folded_through=0, folded_through=1, folded_tokens=11,
                             folded_messages=1, now=now(world), thresholds=over)

    # Then it is no longer due
    assert due(now(world)) == [other, conv(world, "c1")]


def test_forget_through_only_moves_forward_and_takes_the_forgotten_off_the_counters(world: World) -> None:
    # Given ten messages of 100 tokens, the first three folded
    ref = conv(world)
    fill(world, ref, 10)
    store(world).mark_folded(ref, expected_folded_through=0, folded_through=3, folded_tokens=300,
                             folded_messages=3, now=now(world), thresholds=THRESHOLDS)

    # When the checkpoint is deleted, covering up to 6
    forgotten = store(world).forget_through(ref, 6, now=now(world))

    # Then messages up to 6 are forgotten, and the unfolded counters hold only 7..10
    assert (forgotten.forgotten_through, forgotten.folded_through) == (6, 3)
    assert (forgotten.unfolded_messages, forgotten.unfolded_tokens) == (4, 400)

    # When an older mark comes in, it changes nothing; a newer one moves on
    assert store(world).forget_through(ref, 4, now=now(world)).forgotten_through == 6
    unchanged = store(world).get(ref)
    assert unchanged is not None and (unchanged.unfolded_messages, unchanged.unfolded_tokens) == (4, 400)
    moved = store(world).forget_through(ref, 8, now=now(world))
    assert (moved.forgotten_through, moved.unfolded_messages, moved.unfolded_tokens) == (8, 2, 200)
    # and the journal itself keeps every message
    assert seqs(journal(world, ref)) == list(range(1, 11))


# -- listing, delete, purge, erasure --------------------------------------------------------------------
def test_conversations_are_listed_per_agent_and_user_newest_first(world: World) -> None:
    # Given ana's c1, c2, c3 with "support" (c1 written to last), bob's, the account's and another agent's
    for key in ("c1", "c2", "c3"):
        append(world, conv(world, key), user("hello"))
    append(world, conv(world, "c1"), user("again"))
    append(world, conv(world, "b1", user="bob"), user("hello"))
    append(world, conv(world, "a1", user=None), user("hello"))
    append(world, conv(world, "h1", agent="helper"), user("hello"))

    def keys(user: str | None = "ana", agent: str = "support") -> list[str]:
        return [r.ref.key for r in store(world).list_conversations(world.account.account_id, agent, user)]

    # When they are listed / Then each listing holds its own, the latest written first
    assert keys() == ["c1", "c3", "c2"]
    assert keys("bob") == ["b1"]
    assert keys(None) == ["a1"]
    assert keys(agent="helper") == ["h1"]
    assert store(world).list_conversations(world.other.account_id, "support", "ana") == []


def test_delete_keeps_the_journal_and_purge_removes_it(world: World) -> None:
    # Given ana's c1 with three messages, and c2
    ref = conv(world)
    append(world, ref, user("Remember the blue plan"), assistant("Noted."), user("Thanks"))
    append(world, conv(world, "c2"), user("other"))

    # When c1 is deleted
    deleted = store(world).delete(ref, now=now(world))

    # Then it leaves the listing but not the store: its record and journal remain, and search still finds it
    assert deleted.deleted_at is not None
    listed = store(world).list_conversations(world.account.account_id, "support", "ana")
    assert [r.ref.key for r in listed] == ["c2"]
    everything = store(world).list_conversations(world.account.account_id, "support", "ana", include_deleted=True)
    assert sorted(r.ref.key for r in everything) == ["c1", "c2"]
    assert store(world).get(ref) == deleted
    assert seqs(journal(world, ref)) == [1, 2, 3]
    assert hits(world, "blue") == [("c1", 1)]
    with pytest.raises(NotFoundError):
        store(world).delete(conv(world, "never"), now=now(world))

    # When it is purged
    removed = store(world).purge(ref)

    # Then its record, journal and search rows are gone, and c2 is untouched
    assert removed == 3
    assert store(world).get(ref) is None
    assert store(world).messages(ref, after=0, limit=100) == []
    assert store(world).tail(ref, 10) == []
    assert hits(world, "blue") == []
    assert ref not in store(world).refs_of_user(world.account.account_id, "ana")
    assert [m.content for m in journal(world, conv(world, "c2"))] == ["other"]
    assert store(world).purge(ref) == 0


def test_a_purged_conversation_starts_again_from_seq_1(world: World) -> None:
    # Given a conversation purged after two messages
    ref = conv(world)
    append(world, ref, user("old", "cid-1"), assistant("old answer"))
    store(world).purge(ref)

    # When its key is used again, retrying an old client id
    again = append(world, ref, user("new", "cid-1"))

    # Then it is a new conversation: nothing of the old one is found or counted
    assert (again.added, again.messages[0].seq, again.messages[0].turn, again.record.last_seq) == (1, 1, 1, 1)
    assert [m.content for m in journal(world, ref)] == ["new"]
    assert hits(world, "old") == []


def test_refs_of_a_user_and_of_an_agent_are_every_conversation_they_are_in(world: World) -> None:
    # Given ana's conversations with two agents (one deleted), bob's, the account's, and another account's
    account = world.account.account_id
    refs = [conv(world, "c1"), conv(world, "c2"), conv(world, "h1", agent="helper"), conv(world, "b1", user="bob"),
            conv(world, "a1", user=None)]
    for ref in refs:
        append(world, ref, user("hello"))
    store(world).delete(conv(world, "c2"), now=now(world))
    append(world, ConversationRef(world.other.account_id, "support", "ana", "x1"), user("hello"))

    # When the conversations of ana, and of "support", are asked for
    # Then each holds its own, deleted or not, and nothing of another account
    assert set(store(world).refs_of_user(account, "ana")) == set(refs[:3])
    assert set(store(world).refs_of_user(account, "bob")) == {refs[3]}
    assert set(store(world).refs_of_agent(account, "support")) == {refs[0], refs[1], refs[3], refs[4]}
    assert set(store(world).refs_of_agent(account, "helper")) == {refs[2]}
    assert store(world).refs_of_user(account, "carol") == []


# -- content round-trips --------------------------------------------------------------------------------
def test_unicode_and_50000_character_content_round_trips_exactly(world: World) -> None:
    # Given messages with every kind of text: emoji and joiners, combining marks, right-to-left, CJK,
    # line and paragraph separators, tabs and carriage returns, and content at the 50,000-character limit
    ref = conv(world)
    mixed = "👩‍👩‍👧 é (e\u0301) שלום 中文 \u2028\u2029 tab\there\r\nend ﷽ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 \\ \" '"
    large = ("Ωmega ünïcödé 日本語 🚀 " * 3000)[:50_000]
    arguments = {"text": mixed, "nested": {"ключ": ["значение", 1, 2.5, None, False]}, "": "empty key"}
    sent = append(
        world, ref, user(mixed, "üñí-cödé"), assistant(large), call("t-ü", "tool.name", arguments, mixed),
        result("t-ü", {"echo": mixed, "list": ["🚀"]}), assistant(" leading and trailing spaces  \n"),
    ).messages

    # When the journal is read back
    read = journal(world, ref)

    # Then every message is exactly as sent
    assert read == sent
    assert len(read[1].content) == 50_000 and read[1].content == large
    assert (read[0].content, read[0].client_id) == (mixed, "üñí-cödé")
    assert read[2].arguments == arguments and read[2].tool_call_id == "t-ü"
    assert read[3].result == {"echo": mixed, "list": ["🚀"]}
    assert read[4].content == " leading and trailing spaces  \n"
    assert store(world).tail(ref, 5) == sent


def test_messages_at_reads_the_seqs_that_exist_as_a_page_read_finds_them(world: World) -> None:
    # Given a conversation of five messages
    ref = conv(world)
    append(world, ref, *[user(f"message {n}") for n in range(1, 6)])
    whole = {m.seq: m for m in store(world).messages(ref, after=0, limit=10)}
    # When some seqs are read at once, with repeats, one past the end and one that cannot be
    found = store(world).messages_at(ref, [4, 2, 2, 9, 0])
    # Then exactly the existing ones come back, as the journal holds them
    assert found == {2: whole[2], 4: whole[4]}
    assert store(world).messages_at(conv(world, "nobody-here"), [1]) == {}
    assert store(world).messages_at(ref, []) == {}


def test_messages_of_reads_the_seqs_of_several_conversations_of_one_pair_at_once(world: World) -> None:
    # Given two conversations of one agent and user, and one of another user with the same key
    first, second, other = conv(world, "c1"), conv(world, "c2"), conv(world, "c1", user="bo")
    append(world, first, *[user(f"first {n}") for n in range(1, 4)])
    append(world, second, *[assistant(f"second {n}") for n in range(1, 3)])
    append(world, other, user("not ana's"))
    whole = {(key, m.seq): m for key, ref in (("c1", first), ("c2", second))
             for m in store(world).messages(ref, after=0, limit=10)}
    # When seqs of both are read at once, with repeats, seqs past the end, a seq that cannot be and a conversation
    # that is not there
    found = store(world).messages_of(world.account.account_id, "support", "ana",
                                     {"c1": [3, 1, 1, 7, 0], "c2": [2], "nobody-here": [1]})
    # Then exactly the existing ones of that agent and user come back, as the journal holds them
    assert found == {("c1", 1): whole[("c1", 1)], ("c1", 3): whole[("c1", 3)], ("c2", 2): whole[("c2", 2)]}
    assert store(world).messages_of(world.account.account_id, "support", "bo", {"c2": [1]}) == {}
    assert store(world).messages_of(world.account.account_id, "support", "ana", {}) == {}
