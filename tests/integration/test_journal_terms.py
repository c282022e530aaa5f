"""The embedded journal's search leaves out words so common that scoring them costs more than they tell
(adapters/embedded/conversations.py ``_telling``), once the journal is large, and scores a bounded window of
the newest messages holding its words, with the messages holding all of them found at any age."""

from __future__ import annotations

from pathlib import Path

import pytest
from agentmem.adapters.embedded import conversations as embedded
from agentmem.bootstrap import Container, build_container
from agentmem.domain.conversations import MessageDraft
from agentmem.domain.models import Principal
from agentmem.services.agents import AgentSettings
from agentmem.settings import Settings


def test_a_word_most_messages_hold_is_left_out_while_rarer_ones_remain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embedded, "SEARCH_TERM_MIN_MESSAGES", 50)
    container = build_container(Settings(data_dir=tmp_path, embedder="none"))
    _, secret = container.keys.create_account("acme")
    account = container.keys.authenticate("Bearer " + secret)
    container.agents.put(account, "support", AgentSettings())
    # Given 120 messages that all mention the meeting, one of which is about the dentist
    drafts = [MessageDraft("user", f"The meeting number {n} is on {'the dentist' if n == 77 else 'Monday'}.")
              for n in range(120)]
    for start in range(0, 120, 40):
        container.conversations.append(account, "support", f"c{start}", drafts[start:start + 40], user="ana")
    store = container.stores.conversations
    assert isinstance(store, embedded.SqliteConversationStore)
    # Then "meeting" is not worth scoring beside "dentist", and two common words are both kept, rarest first
    assert store._telling(["meeting", "dentist"])[:2] == (["dentist"], False)
    assert store._telling(["meeting", "monday"])[:2] == (["monday", "meeting"], True)
    # and the search finds the dentist message first, by the word that tells
    hits = store.search_candidates(account.account_id, "support", "ana", ["meeting", "dentist"], limit=10)
    assert [(h.conversation, h.message.seq) for h in hits] == [("c40", 38)]
    # and a query of common words only finds the messages holding them all
    both = store.search_candidates(account.account_id, "support", "ana", ["meeting", "monday"], limit=200)
    assert len(both) == 119 and ("c40", 38) not in [(h.conversation, h.message.seq) for h in both]
    # while a small journal scores every word
    monkeypatch.setattr(embedded, "SEARCH_TERM_MIN_MESSAGES", 1_000)
    assert store._telling(["meeting", "dentist"])[:2] == (["meeting", "dentist"], False)


def _journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[embedded.SqliteConversationStore, str, tuple[Container, Principal]]:
    monkeypatch.setattr(embedded, "SEARCH_TERM_MIN_MESSAGES", 50)
    monkeypatch.setattr(embedded, "SEARCH_TERM_SHARE", 0.9)
    monkeypatch.setattr(embedded, "SEARCH_SCORED", 20)  # each pass scores about 20 messages
    container = build_container(Settings(data_dir=tmp_path, embedder="none"))
    _, secret = container.keys.create_account("acme")
    account = container.keys.authenticate("Bearer " + secret)
    container.agents.put(account, "support", AgentSettings())
    store = container.stores.conversations
    assert isinstance(store, embedded.SqliteConversationStore)
    return store, account.account_id, (container, account)


def test_a_large_journal_scores_a_window_of_its_newest_messages_and_the_ones_holding_every_word(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, account_id, (container, account) = _journal(tmp_path, monkeypatch)
    # Given the oldest message holding both words, then 200 messages holding one of them each
    lines = ["Ana moved to Lisbon in May."] + [f"{'Lisbon' if n % 2 else 'Ana'} note {n}." for n in range(200)]
    drafts = [MessageDraft("user", line) for line in lines]
    for start in range(0, len(drafts), 40):
        container.conversations.append(account, "support", f"c{start:03d}", drafts[start:start + 40], user="ana")
    # When the words are searched with a page smaller than what holds them
    hits = store.search_candidates(account_id, "support", "ana", ["ana", "lisbon"], limit=10)
    found = [(h.conversation, h.message.seq) for h in hits]
    # Then the old message holding both comes first, and the rest are the newest window's
    assert found[0] == ("c000", 1)
    assert len(found) == 10
    assert all(conversation >= "c120" for conversation, _ in found[1:])


def test_a_window_too_sparse_is_widened_until_the_page_is_full(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store, account_id, (container, account) = _journal(tmp_path, monkeypatch)
    # Given a word held by 12 old messages, then 200 messages without it
    drafts = [MessageDraft("user", f"The dentist visit {n}." if n < 12 else f"Monday note {n}.") for n in range(212)]
    for start in range(0, len(drafts), 40):
        container.conversations.append(account, "support", f"c{start:03d}", drafts[start:start + 40], user="ana")
    monkeypatch.setattr(embedded, "SEARCH_SCORED", 1)  # a first window of the newest 1/12 of the ids holds none
    hits = store.search_candidates(account_id, "support", "ana", ["dentist"], limit=12)
    assert sorted(h.message.seq for h in hits) == list(range(1, 13))


def test_a_pair_holding_most_of_the_journal_gets_only_its_own_messages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, account_id, (container, account) = _journal(tmp_path, monkeypatch)
    # Given Ana's 150 messages about the invoice, and Bob's 60 that outscore hers (shorter, the word twice)
    ana = [MessageDraft("user", f"Ana asks about the invoice number {n} for the flat.") for n in range(150)]
    bob = [MessageDraft("user", "Invoice invoice.") for _ in range(60)]
    for start in range(0, 150, 40):
        container.conversations.append(account, "support", f"a{start:03d}", ana[start:start + 40], user="ana")
    for start in range(0, 60, 40):
        container.conversations.append(account, "support", f"b{start:03d}", bob[start:start + 40], user="bob")
    pair = store._pair_share(account_id, "support", "ana", 210)
    assert pair.share > embedded.SEARCH_UNSCOPED_SHARE  # her pair is searched without its token
    # When Ana searches, asking for more than the unscoped query's extra rows can hold beside Bob's
    hits = store.search_candidates(account_id, "support", "ana", ["invoice"], limit=50)
    # Then she gets a full page of her own messages, none of Bob's
    assert len(hits) == 50 and all(h.conversation.startswith("a") for h in hits)
    # and Bob gets only his
    bobs = store.search_candidates(account_id, "support", "bob", ["invoice"], limit=100)
    assert len(bobs) == 60 and all(h.conversation.startswith("b") for h in bobs)


def test_words_that_all_are_common_score_a_window_of_the_newest_messages_holding_them_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, account_id, (container, account) = _journal(tmp_path, monkeypatch)
    # Given 200 messages that all hold both words (the oldest is the shortest: BM25's best of them)
    lines = ["Meeting Monday."] + [f"The meeting number {n} is on Monday, as planned." for n in range(1, 200)]
    drafts = [MessageDraft("user", line) for line in lines]
    for start in range(0, len(drafts), 40):
        container.conversations.append(account, "support", f"c{start:03d}", drafts[start:start + 40], user="ana")
    assert store._telling(["meeting", "monday"])[1]  # (both common)
    # When they are searched, Then a page comes from the newest window of the messages holding both, as scoring
    # them all would cost a scan of nearly the whole journal
    hits = store.search_candidates(account_id, "support", "ana", ["meeting", "monday"], limit=10)
    assert len(hits) == 10 and all(h.conversation >= "c160" for h in hits)
    # and a page larger than the window holds widens it until it is full
    wide = store.search_candidates(account_id, "support", "ana", ["meeting", "monday"], limit=60)
    assert len(wide) == 60


def test_a_search_reads_each_words_count_from_the_vocabulary_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The vocabulary counts a term's messages by walking its list (milliseconds for a common word in a large
    journal): the exact count the search weighs words with and the count of the messages holding the word as the
    start of a longer one, which chooses the words worth scoring, come from one read, with the same values."""
    store, _, (container, account) = _journal(tmp_path, monkeypatch)
    drafts = [MessageDraft("user", f"Invoice {n}: {'taxi fare' if n % 3 else 'the tax'} in March.") for n in range(90)]
    for start in range(0, 90, 30):
        container.conversations.append(account, "support", f"c{start}", drafts[start:start + 30], user="ana")
    vocabulary = dict(store.db.connection().execute("SELECT term, doc FROM messages_vocab").fetchall())
    read: list[str] = []
    store.db.connection().set_trace_callback(lambda sql: read.append(sql) if "messages_vocab" in sql else None)
    try:
        # When the journal is searched for two words not counted before
        page = container.conversations.search_page(account, "support", "tax march", user="ana", mode="keyword")
    finally:
        store.db.connection().set_trace_callback(None)
    # Then each word's list was read once, for both counts, and the counts are the vocabulary's: "tax" held as
    # itself by 30 messages, and as the start of a word by those and the 60 that say "taxi"
    assert len(read) == 2 and page.items
    assert (store._word_counts["tax"][0], store._held_counts["tax"][0]) == (vocabulary["tax"], 90) == (30, 90)
    assert store._word_counts["march"][0] == store._held_counts["march"][0] == vocabulary["march"] == 90


def test_a_large_journal_matches_a_word_of_one_or_two_letters_as_itself_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """"m" (the stem of "MS") or "7" starts a large part of a large journal's vocabulary: counting those words
    and merging their lists took most of a second at a million messages, and a match on them tells nothing."""
    store, account_id, (container, account) = _journal(tmp_path, monkeypatch)
    monkeypatch.setattr(embedded, "SEARCH_TERM_SHARE", 5.0)  # (no word left out as common)
    lines = [f"Monday: order {100 + n} for {700 + n} euros, model MX-{100 + n}." for n in range(60)]
    lines.append("Ticket MS 7 is closed.")
    drafts = [MessageDraft("user", line) for line in lines]
    for start in range(0, len(drafts), 40):
        container.conversations.append(account, "support", f"c{start:03d}", drafts[start:start + 40], user="ana")
    read: list[str] = []
    store.db.connection().set_trace_callback(lambda sql: read.append(sql) if "messages_vocab" in sql else None)
    try:
        # When words of one letter or digit are searched
        hits = store.search_candidates(account_id, "support", "ana", ["ms", "7"], limit=20)
    finally:
        store.db.connection().set_trace_callback(None)
    # Then only the message holding them as words answers, not every message holding a word they start
    assert [(h.conversation, h.message.seq) for h in hits] == [("c040", 21)]
    # and their counts were read as words, not as the starts of words
    assert read and all("term >= " not in sql for sql in read)
    # while a word of three letters still finds the longer words it starts, at half weight
    mon = store.search_candidates(account_id, "support", "ana", ["mon"], limit=10)
    assert len(mon) == 10 and all(str(h.message.content).startswith("Monday") for h in mon)
    # and a small journal keeps the prefix rule for every word
    monkeypatch.setattr(embedded, "SEARCH_TERM_MIN_MESSAGES", 1_000)
    assert len(store.search_candidates(account_id, "support", "ana", ["m"], limit=10)) == 10
