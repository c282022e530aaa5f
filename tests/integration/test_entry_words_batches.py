"""The entries' keyword index is brought up to date in batches (adapters/embedded/entry_words.py): a write notes
the entry, with the words the index holds of it, and the index takes every entry noted when a search is about
to read it or when ``BATCH`` are waiting. Whatever the writes (creates, updates of the words or not, deletes,
expiries, checkpoints, a rowid used again, purges) and wherever the catch-ups fall, the index then holds every
entry exactly as a fresh index of the stored rows would, and a search sees every write at once."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import crash_writer  # tests/support: the crash check compares the index with one built afresh
import pytest
from agentmem.adapters.embedded.database import Database
from agentmem.adapters.embedded.entries import SqliteEntryStore
from agentmem.adapters.embedded.entry_words import BATCH, PENDING
from agentmem.domain.models import EntryDraft, Layer

NOW = "2026-12-01T10:00:00Z"
LATER = "2026-12-01T11:00:00Z"
KEEP = "2027-01-01T00:00:00Z"
LAYERS = [Layer("acct", "handbook", None), Layer("acct", "handbook", "ana"), Layer("acct", "notes", None)]
WORDS = ["refund", "flight", "passport", "allergy", "invoice", "kettle", "train", "hotel", "visa", "badge"]


@pytest.fixture
def store(tmp_path: Path) -> SqliteEntryStore:
    return SqliteEntryStore(Database(tmp_path / "agentmem.db"))


def _save(store: SqliteEntryStore, layer: Layer, name: str, text: str, **fields: object) -> None:
    store.save(layer, EntryDraft(name=name, content=text, description=f"About {text.split()[0]}", **fields),
               expected_version=None, now=NOW, keep_history_until=KEEP, layer_limit=500)


def _waiting(store: SqliteEntryStore) -> int:
    return int(store.db.connection().execute(f"SELECT count(*) FROM {PENDING}").fetchone()[0])


def _index_matches_the_rows(store: SqliteEntryStore) -> None:
    db = sqlite3.connect(f"file:{store.db.path}?mode=ro", uri=True)
    try:
        report = crash_writer.Report()
        held, afresh = crash_writer._indexed_words(db, report)
    finally:
        db.close()
    assert report.problems == []
    assert held == afresh


def _found(store: SqliteEntryStore, layer: Layer, word: str) -> set[str]:
    return {e.name for e in store.search_candidates([layer], [word], "", NOW)}


def test_any_writes_with_catch_ups_anywhere_leave_the_index_as_a_fresh_one(store: SqliteEntryStore) -> None:
    rng = random.Random(20261203)
    for step in range(600):
        layer = rng.choice(LAYERS)
        name = f"n{rng.randrange(40)}"
        text = " ".join(rng.sample(WORDS, 3))
        action = rng.random()
        try:
            if action < 0.55:
                _save(store, layer, name, text)
            elif action < 0.65:  # only what the index does not hold changes: nothing is noted
                _save(store, layer, name, text, importance=rng.random())
            elif action < 0.75:
                _save(store, layer, f"ckpt-{name}", text, conversation="c1")  # a checkpoint: never indexed
            elif action < 0.85:
                store.delete(layer, name, expected_version=None, now=NOW, keep_history_until=KEEP,
                             updated_by="api")
            elif action < 0.9:
                _save(store, layer, name, text, expires_at=LATER)
            elif action < 0.93:
                store.purge_expired(LATER)
            elif action < 0.95:
                store.purge_layer(layer)
            else:  # a search: it brings the index up to date before it reads it
                word = rng.choice(WORDS)
                expected = {e.name for e in store.list_layer(layer, NOW, limit=500, cursor=None).items
                            if e.conversation is None and word in (store.get(layer, e.name, NOW).content or "")}
                assert _found(store, layer, word) == expected, step
        except Exception as error:  # a delete of a name not there: the store's answer, nothing written
            if type(error).__name__ != "NotFoundError":
                raise
        assert _waiting(store) < BATCH  # the write that fills the batch brings the index up to date
    _index_matches_the_rows(store)


def test_a_search_finds_every_write_at_once_and_leaves_nothing_waiting(store: SqliteEntryStore) -> None:
    layer = LAYERS[0]
    _save(store, layer, "a", "refund within days")
    _save(store, layer, "b", "flight booking")
    assert _waiting(store) == 2
    assert _found(store, layer, "refund") == {"a"}
    assert _waiting(store) == 0
    _save(store, layer, "a", "kettle descaling")  # its words change: the old ones are no longer found
    store.delete(layer, "b", expected_version=None, now=NOW, keep_history_until=KEEP, updated_by="api")
    assert (_found(store, layer, "refund"), _found(store, layer, "kettle"), _found(store, layer, "flight")) == (
        set(), {"a"}, set())
    _index_matches_the_rows(store)


def test_a_rowid_used_again_by_a_new_entry_loses_the_old_entrys_words(store: SqliteEntryStore) -> None:
    layer = LAYERS[0]
    _save(store, layer, "old", "passport renewal")
    assert _found(store, layer, "passport") == {"old"}  # indexed
    store.delete(layer, "old", expected_version=None, now=NOW, keep_history_until=KEEP, updated_by="api")
    _save(store, layer, "new", "hotel check-in")  # SQLite gives it the rowid the deleted row had
    rowids = store.db.connection().execute("SELECT rowid FROM entries").fetchall()
    assert len(rowids) == 1
    assert (_found(store, layer, "passport"), _found(store, layer, "hotel")) == (set(), {"new"})
    _index_matches_the_rows(store)


def test_a_batch_is_indexed_by_the_write_that_fills_it_and_a_name_saved_again_waits_once(
        store: SqliteEntryStore) -> None:
    layer = LAYERS[0]
    for n in range(BATCH - 1):
        _save(store, layer, f"e{n}", f"badge number {n}")
    assert _waiting(store) == BATCH - 1
    for again in range(5):  # the same entry changed again: still one entry waiting
        _save(store, layer, "e0", f"visa office {again}")
    assert _waiting(store) == BATCH - 1
    _save(store, layer, "last", "train pass")
    assert _waiting(store) == 0
    _index_matches_the_rows(store)
    assert _found(store, layer, "visa") == {"e0"} and _found(store, layer, "badge") == {
        f"e{n}" for n in range(1, BATCH - 1)}


def test_a_purge_with_entries_waiting_removes_their_words_as_the_index_holds_them(store: SqliteEntryStore) -> None:
    from agentmem.adapters.embedded.memories import purge_memory_rows

    handbook, ana, notes = LAYERS
    _save(store, handbook, "indexed", "refund policy")
    _save(store, notes, "indexed", "refund notes")
    assert _found(store, handbook, "refund") == {"indexed"}  # both indexed now
    _save(store, handbook, "indexed", "kettle policy")  # its words change, waiting
    _save(store, handbook, "new", "flight policy")  # created, waiting: the index holds nothing of it
    _save(store, ana, "mine", "refund for ana")
    _save(store, notes, "indexed", "hotel notes")
    assert _waiting(store) == 4
    store.purge_layer(handbook)
    with store.db.write() as conn:
        purge_memory_rows(conn, "acct", "notes")
    _index_matches_the_rows(store)
    assert (_found(store, handbook, "policy"), _found(store, ana, "refund"), _found(store, notes, "notes")) == (
        set(), {"mine"}, set())
