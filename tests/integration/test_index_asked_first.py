"""A conversation searched while its messages still wait to be embedded is embedded first (adapters/embedded/
asked_first.py): the indexer's next batches are its queued messages, before the rest of a large import, whichever
process searched it; the rest of the queue is still drained whole."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from agentmem.adapters.embedded import asked_first
from agentmem.adapters.embedded.asked_first import AskedFirst
from agentmem.adapters.embedded.vector_index import SqliteVectorIndex
from agentmem.bootstrap import Container, build_container
from agentmem.domain.conversations import MessageDraft
from agentmem.domain.models import Principal
from agentmem.services.agents import AgentSettings
from agentmem.services.entries import SaveRequest
from agentmem.settings import Settings

TOPICS = {"a": "the printer on the third floor jams", "b": "my sister's wedding in Porto",
          "c": "the quarterly invoices"}


def make(tmp_path: Path) -> tuple[Container, Principal, SqliteVectorIndex]:
    container = build_container(Settings(data_dir=tmp_path))
    _, secret = container.keys.create_account("acme")
    account = container.keys.authenticate("Bearer " + secret)
    container.agents.put(account, "support", AgentSettings())
    index = container.search_index
    assert isinstance(index, SqliteVectorIndex)
    index.background = True  # as beside agentmem serve's indexer: a query does not drain a backlog itself
    return container, account, index


def import_three(container: Container, account: Principal, per: int = 30) -> None:
    """An import: three conversations of ``per`` messages each, queued in the order a, b, c."""
    for key, topic in TOPICS.items():
        drafts = [MessageDraft("user" if n % 2 == 0 else "assistant", f"Note {n} about {topic}.") for n in range(per)]
        container.conversations.append(account, "support", key, drafts, user="ana")


def lag_of(container: Container, account: Principal, key: str) -> int | None:
    container.search_index._lags.clear()  # type: ignore[attr-defined]  # (a count is kept half a second)
    page = container.conversations.search_page(account, "support", TOPICS[key], user="ana", conversation=key)
    return page.index_lag


def test_the_conversation_searched_while_behind_is_embedded_before_the_rest_of_the_import(tmp_path: Path) -> None:
    container, account, index = make(tmp_path)
    import_three(container, account)
    # Given the last conversation of an import searched while all 90 messages are queued
    assert lag_of(container, account, "c") == 30
    # When the indexer applies one conversation's worth of the queue
    assert index.catch_up(30) == 30
    # Then that conversation's messages are the ones embedded, and a search of it finds them by meaning
    assert (lag_of(container, account, "c"), lag_of(container, account, "a"), lag_of(container, account, "b")) == (
        0, 30, 30)
    page = container.conversations.search_page(account, "support", "invoices for the quarter", user="ana",
                                               conversation="c", mode="semantic")
    assert page.mode == "semantic" and page.index_lag == 0 and page.items
    # (a and b were searched behind too: the later asked goes first)
    assert index.asked.wanted() == [index.db.connection().execute(
        "SELECT id FROM conversations WHERE key = 'b'").fetchone()[0], index.db.connection().execute(
        "SELECT id FROM conversations WHERE key = 'a'").fetchone()[0]]
    # and the rest of the queue is drained whole: every message has its vector, and the notes are gone
    index.catch_up()
    assert index.pending() == 0
    assert index.db.connection().execute(
        "SELECT count(DISTINCT source) FROM vectors WHERE kind = 'message'").fetchone()[0] == 90
    assert index.asked.wanted() == [] and not index.asked.path.exists()
    assert [lag_of(container, account, key) for key in TOPICS] == [0, 0, 0]


def test_a_search_in_another_process_puts_its_conversation_first_for_the_indexer(tmp_path: Path) -> None:
    """``agentmem serve --workers N``: the indexer runs in one process, and a search in another tells it."""
    container, account, index = make(tmp_path)
    import_three(container, account)
    other = build_container(Settings(data_dir=tmp_path))  # another process's container on the same data dir
    assert isinstance(other.search_index, SqliteVectorIndex) and other.search_index is not index
    other.search_index.background = True  # (as its thread that follows the indexer sets it)
    assert lag_of(other, account, "b") == 30
    index.catch_up(30)
    assert (lag_of(other, account, "b"), lag_of(container, account, "a")) == (0, 30)


def test_a_search_across_conversations_or_one_caught_up_puts_nothing_first(tmp_path: Path) -> None:
    container, account, index = make(tmp_path)
    import_three(container, account)
    page = container.conversations.search_page(account, "support", "wedding", user="ana")  # across the journal
    assert page.index_lag == 90 and index.asked.wanted() == []
    index.catch_up(30)  # the queue in the order it came: a first
    assert (lag_of(container, account, "a"), lag_of(container, account, "b")) == (0, 30)
    assert len(index.asked.wanted()) == 1  # b, behind; a caught up is not noted
    page = container.conversations.search_page(account, "support", "x", user="ana", conversation="none-such")
    assert page.index_lag == 0 and len(index.asked.wanted()) == 1


def test_the_notes_are_the_latest_asked_kept_a_while_and_a_bad_file_is_only_order_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked = AskedFirst(tmp_path / "agentmem.db.asked")
    for conversation in range(1, 21):
        asked.ask(conversation)
    # the latest asked first, at most ASKED_MOST; the file is its owner's alone
    assert asked.wanted() == list(range(20, 20 - asked_first.ASKED_MOST, -1))
    assert stat.S_IMODE(os.stat(asked.path).st_mode) == 0o600
    assert AskedFirst(asked.path).wanted() == asked.wanted()  # what another process reads
    asked.done(20)
    assert asked.wanted()[0] == 19
    # a note past ASKED_KEPT_S is dropped, and with none left the file goes
    monkeypatch.setattr(asked_first, "ASKED_KEPT_S", -1.0)
    assert asked.wanted() == [] and not asked.path.exists()
    # a file that does not read is no note at all, never an error
    monkeypatch.setattr(asked_first, "ASKED_KEPT_S", 30.0)
    asked.path.write_text("{not json")
    assert AskedFirst(asked.path).wanted() == []
    asked.path.write_text(json.dumps(["a list"]))
    assert AskedFirst(asked.path).wanted() == []


def test_a_conversations_queued_messages_are_the_same_read_from_either_side(tmp_path: Path) -> None:
    """Counted and picked from the smaller side (the queue, or the conversation's messages): the same either way."""
    from agentmem.adapters.embedded.vector_index import _queued_in

    container, account, index = make(tmp_path)
    import_three(container, account)
    index.catch_up(45)  # a, and half of b
    container.conversations.append(account, "support", "a", [MessageDraft("user", "One more about the printer.")],
                                   user="ana")
    conn = index.db.connection()
    for key, queued in (("a", 1), ("b", 15), ("c", 30)):
        (conversation,) = conn.execute("SELECT id FROM conversations WHERE key = ?", (key,)).fetchone()
        by_queue, by_messages = _queued_in(0, 1, 'c.id = ?'), _queued_in(1, 0, 'c.id = ?')
        assert by_queue != by_messages
        for plan in (by_queue, by_messages):
            assert conn.execute(f"SELECT count(*) {plan}", (conversation,)).fetchone()[0] == queued
        picked = [conn.execute(f"SELECT q.id, q.source {plan} ORDER BY q.id LIMIT 10", (conversation,)).fetchall()
                  for plan in (by_queue, by_messages)]
        assert picked[0] == picked[1] and len(picked[0]) == min(queued, 10)
    # and so for a search across the user's journal (the conditions name no one conversation)
    journal = "c.account_id IN (?) AND c.agent IN (?) AND c.user_key IN (?)"
    for plan in (_queued_in(0, 1, journal), _queued_in(1, 0, journal)):
        assert conn.execute(f"SELECT count(*) {plan}", (account.account_id, "support", "ana")).fetchone()[0] == 46
        assert conn.execute(f"SELECT count(*) {plan}", (account.account_id, "support", "bo")).fetchone()[0] == 0
    # and a search's lag says the same, whichever side its count read (46 queued in all)
    index._lags.clear()
    assert container.conversations.search_page(account, "support", "notes", user="ana").index_lag == 46


def test_a_note_that_cannot_be_written_fails_no_search_and_the_queue_still_drains(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    container, account, index = make(tmp_path)
    import_three(container, account)
    index.asked.path.mkdir()  # (a file that cannot be read or written where the note goes)
    assert lag_of(container, account, "c") == 30  # answered, and said how far behind
    assert index.asked.wanted() == [] and "could not be noted" in caplog.text
    assert index.catch_up() == 90 and index.pending() == 0
    assert AskedFirst(tmp_path / "missing" / "agentmem.db.asked").wanted() == []
    AskedFirst(tmp_path / "missing" / "agentmem.db.asked").ask(1)  # (nowhere to write: said, not raised)


def test_a_write_just_made_is_found_by_meaning_at_once_behind_another_import(tmp_path: Path) -> None:
    """Read your writes on a busy server: behind an import's backlog (perhaps another tenant's), a query applies
    the few changes queued of its own scope (an entry just saved in the layers it searches, a message just appended
    to the conversation it names), and leaves the rest to the indexer."""
    container, account, index = make(tmp_path)
    import_three(container, account)  # 90 queued, more than a query applies itself
    container.memories.create(account, "company")
    container.entries.save(account, "company", "vpn", SaveRequest("Connect to the VPN before opening the wiki.",
                                                                  "Access"))
    container.conversations.append(account, "support", "d", [MessageDraft("user", "My flight to Oslo is on Friday.")],
                                   user="ana")
    entries = {"kind": "entry", "account": account.account_id, "memory": "company", "user": "",
               "embedder": index.embedder.name}
    vector = container.embedder.embed_one("VPN before the wiki")  # type: ignore[union-attr]
    assert [h.fields["name"] for h in index.query(None, vector, entries, 5)] == ["vpn"]
    page = container.conversations.search_page(account, "support", "flight to Oslo", user="ana", conversation="d",
                                               mode="semantic")
    assert (page.mode, page.index_lag) == ("semantic", 0) and [h.seq for h in page.items] == [1]
    assert index.pending() == 90  # the import's backlog is the indexer's
    # a conversation with more than that queued is the indexer's too (put first), and a search across the journal
    # applies nothing of it
    assert lag_of(container, account, "c") == 30
    container.conversations.search_page(account, "support", "invoices", user="ana")
    assert index.pending() == 90


def test_a_query_of_another_worker_waiting_for_the_catch_up_lock_says_so_to_the_indexer(tmp_path: Path) -> None:
    """Between two of the indexer's batches, a query of another process that waits for the catch-up lock (to apply a
    few changes of its own) is let in first: while it waits, every process on the data dir reads its wish."""
    import struct
    import threading
    import time

    _, _, index = make(tmp_path)  # the indexer's process
    other = build_container(Settings(data_dir=tmp_path)).search_index  # another worker's
    assert isinstance(other, SqliteVectorIndex)
    got: list[bool] = []

    def take() -> None:
        with other._drain_lock(5.0) as held:
            got.append(held)

    def wished() -> float:
        return float(struct.unpack("<d", index._wanted_map()[0:8])[0])

    with index._drain_lock(True):  # the indexer in the middle of a batch
        waiting = threading.Thread(target=take)
        waiting.start()
        for _ in range(400):
            if wished() > time.time():
                break
            time.sleep(0.005)
        assert wished() > time.time()  # the indexer reads that a query waits
    index.yield_to_waiting(most=5.0)  # before its next batch: the query goes first
    waiting.join(5)
    assert got == [True] and wished() == 0.0  # it had the lock, and its wish is withdrawn
