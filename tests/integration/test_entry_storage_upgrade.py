"""A data dir written before migrations 14 and 15 opens with its entries' words in the contentless keyword
index and its history beside the entries (adapters/embedded/entries.py): the same search answers, the same
history, every old version readable, and no copy of an entry's current version left in ``entry_history``."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from agentmem.adapters.embedded import database
from agentmem.adapters.embedded.entry_words import add_scope_function
from agentmem.adapters.embedded.migrations import MIGRATIONS
from agentmem.bootstrap import build_container
from agentmem.services.entries import SaveRequest
from agentmem.settings import Settings

# the migrations these tests undo: the contentless index, then the history beside the entry
CONTENTLESS = next(n for n, m in enumerate(MIGRATIONS, start=1) if isinstance(m, str) and "content = ''" in m
                   and "entries_fts" in m)
BESIDE = CONTENTLESS + 1

QUERIES = ("refund", "flight booking", "passport", "allergy", "invoice paid", "nothing-matches-this")


def _fill(tmp_path: Path) -> tuple[Any, Any, list[datetime]]:
    moment = [datetime(2026, 11, 20, 9, 0, tzinfo=UTC)]
    container = build_container(Settings(data_dir=tmp_path, embedder="none"), clock=lambda: moment[0])
    _, secret = container.keys.create_account("acme")
    account = container.keys.authenticate("Bearer " + secret)
    container.memories.create(account, "handbook")
    entries = container.entries
    texts = ["Refunds are paid within 14 days.", "The flight booking needs a passport number.",
             "Ana has a peanut allergy.", "Invoices are paid monthly.", "Refunding a booking takes a week."]
    for n, text in enumerate(texts):
        entries.save(account, "handbook", f"note-{n}", SaveRequest(content=text, description=f"Note {n}"))
        entries.save(account, "handbook", f"mine-{n}", SaveRequest(content=text + " (mine)", description="Mine"),
                     user="ana")
    moment[0] += timedelta(days=1)
    for n in range(0, 5, 2):  # replaced, some twice
        entries.save(account, "handbook", f"note-{n}", SaveRequest(content=texts[n] + " Updated."))
        entries.save(account, "handbook", f"note-{n}", SaveRequest(content=texts[n] + " Updated again.",
                                                                  description=f"Note {n}, again"))
    entries.delete(account, "handbook", "note-1")
    entries.save(account, "handbook", "note-1", SaveRequest(content="Created again.", description="Again"))
    entries.delete(account, "handbook", "note-3")
    return container, account, moment


def _seen(container: Any, account: Any) -> dict[str, Any]:
    entries = container.entries
    names = [f"note-{n}" for n in range(5)]
    return {
        "search": {(q, user): [(r.entry.name, r.entry.version, round(r.score, 9)) for r in
                                entries.search(account, "handbook", q, user=user, limit=20, mode="keyword")]
                   for q in QUERIES for user in (None, "ana")},
        "history": {name: [(h.version, h.operation, h.content, h.description, h.changed_at, h.keep_until)
                           for h in entries.history(account, "handbook", name)] for name in names},
        "versions": {(name, h.version): entries.read(account, "handbook", name, version=h.version).content
                     for name in names for h in entries.history(account, "handbook", name)
                     if h.operation != "delete"},
    }


def _as_before_the_migrations(path: Path) -> None:
    """Turn the database back into the layout migration 13 left: an FTS5 table with its own copy of the text,
    and a history row for every version, the current ones too."""
    db = sqlite3.connect(path)
    add_scope_function(db)
    db.executescript(
        "BEGIN;"
        "INSERT INTO entry_history (account_id, memory, layer_user, name, version, operation, content_hash, "
        "updated_by, changed_at, description, content, keep_until, category, importance, visibility, created_at, "
        "expires_at) SELECT account_id, memory, layer_user, name, version, operation, content_hash, updated_by, "
        "updated_at, description, content, keep_until, category, importance, visibility, created_at, expires_at "
        "FROM entries;"
        "ALTER TABLE entries DROP COLUMN operation; ALTER TABLE entries DROP COLUMN keep_until;"
        "DROP TABLE entries_fts;"
        "CREATE VIRTUAL TABLE entries_fts USING fts5(scope, name, description, content, "
        "tokenize = 'porter unicode61 remove_diacritics 0');"
        "INSERT INTO entries_fts (rowid, scope, name, description, content) SELECT rowid, "
        "entry_scope(account_id, memory, layer_user), name, description, content FROM entries "
        "WHERE conversation IS NULL;"
        f"PRAGMA user_version = {CONTENTLESS - 1};"
        "COMMIT;"
    )
    db.close()


def test_an_older_data_dir_opens_with_the_same_answers_and_history(tmp_path: Path) -> None:
    # Given a data dir with entries saved, replaced, deleted and created again, in the layout before the
    # migrations (the text also in the keyword index, every version also in the history)
    container, account, moment = _fill(tmp_path / "data")
    before = _seen(container, account)
    assert before["search"][("refund", None)] and before["history"]["note-0"][0][1] == "update"
    _as_before_the_migrations(tmp_path / "data" / "agentmem.db")
    # When it is opened again
    reopened = build_container(Settings(data_dir=tmp_path / "data", embedder="none"), clock=lambda: moment[0])
    principal = account  # the same key, kept in the data dir
    after = _seen(reopened, principal)
    # Then searches, histories and old versions read as they did
    assert after == before
    db = sqlite3.connect(tmp_path / "data" / "agentmem.db")
    assert db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    # And the history holds no copy of a current version, which the entry row answers for
    assert db.execute(
        "SELECT count(*) FROM entry_history h JOIN entries e ON h.account_id = e.account_id AND h.memory = e.memory "
        "AND h.layer_user = e.layer_user AND h.name = e.name AND h.version = e.version").fetchone()[0] == 0
    # And the keyword index keeps no text of its own
    assert db.execute("SELECT count(*) FROM sqlite_schema WHERE name = 'entries_fts_content'").fetchone()[0] == 0
    db.close()
    # And a save after the upgrade keeps the replaced version in the history
    reopened.entries.save(principal, "handbook", "note-0", SaveRequest(content="After the upgrade."))
    history = reopened.entries.history(principal, "handbook", "note-0")
    assert [h.version for h in history] == [4, 3, 2, 1]
    assert history[1].content == before["history"]["note-0"][0][2]


def test_a_data_dir_written_with_whole_page_index_leaves_answers_the_same_after_the_leaf_size_changes(
    tmp_path: Path, monkeypatch: Any
) -> None:
    # Given a data dir written before the keyword index's leaves were made smaller (migration 19: its segments
    # hold leaves of FTS5's default size)
    smaller = next(n for n, m in enumerate(MIGRATIONS, start=1) if isinstance(m, str) and "'pgsz'" in m)
    monkeypatch.setattr(database, "MIGRATIONS", MIGRATIONS[: smaller - 1])
    container, account, moment = _fill(tmp_path / "data")
    before = _seen(container, account)
    path = tmp_path / "data" / "agentmem.db"
    assert _leaf_size(path) is None
    monkeypatch.setattr(database, "MIGRATIONS", MIGRATIONS)
    # When it is opened again
    reopened = build_container(Settings(data_dir=tmp_path / "data", embedder="none"), clock=lambda: moment[0])
    # Then the index writes smaller leaves from now on, and searches, histories and old versions read as they did
    assert _leaf_size(path) == 2000
    assert _seen(reopened, account) == before
    # And entries saved after it are found beside those indexed before it, the index whole
    entries = reopened.entries
    entries.save(account, "handbook", "note-5", SaveRequest(content="Refunds over 500 need a manager.",
                                                            description="Refund limit"))
    entries.save(account, "handbook", "note-0", SaveRequest(content="Refunds are paid within 10 days."))
    found = [r.entry.name for r in entries.search(account, "handbook", "refund", limit=20, mode="keyword")]
    assert sorted(found) == ["note-0", "note-4", "note-5"]  # (note-4: "Refunding a booking takes a week.")
    db = sqlite3.connect(path)
    db.execute("INSERT INTO entries_fts (entries_fts, rank) VALUES ('integrity-check', 0)")
    # And merging the segments written before and after it into one changes no answer
    after = _seen(reopened, account)
    db.execute("INSERT INTO entries_fts (entries_fts) VALUES ('optimize')")
    db.commit()
    db.close()
    assert _seen(reopened, account) == after


def _leaf_size(path: Path) -> int | None:
    """The keyword index's 'pgsz' setting, None while it is FTS5's default."""
    db = sqlite3.connect(path)
    try:
        row = db.execute("SELECT v FROM entries_fts_config WHERE k = 'pgsz'").fetchone()
    finally:
        db.close()
    return None if row is None else int(row[0])
