"""The embedded database leaves no copy of what an erasure removed (docs/security.md): not in the free space of a
page that still holds other rows, not in a page freed, not in the WAL, not in the full-text index's segments.

Two users' entries are saved in turn, so every page of the entries holds rows of both; erasing one leaves pages
that still hold the other's rows, where SQLite would otherwise keep the erased cells' bytes as free space."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

from agentmem.bootstrap import build_container
from agentmem.services.entries import SaveRequest
from agentmem.settings import Settings

MARK = "zqerasedpagemark"
KEPT = "zqkeptpagemark"
USER = "zqanauser7"


def _hits(data_dir: Path, word: str) -> dict[str, int]:
    found = {}
    for path in data_dir.rglob("*"):
        if path.is_file() and (hits := path.read_bytes().count(word.encode())):
            found[path.name] = hits
    return found


def test_an_erasure_leaves_no_byte_in_pages_that_other_rows_still_use(tmp_path: Path) -> None:
    container = build_container(Settings(data_dir=tmp_path, embedder="none"))
    _, secret = container.keys.create_account("acme")
    account = container.keys.authenticate("Bearer " + secret)
    container.memories.create(account, "handbook")
    # Given ana's and bob's entries saved in turn (each page holds both), with words of their own
    for n in range(60):
        for who, word in ((USER, MARK), ("bob", KEPT)):
            container.entries.save(account, "handbook", f"note-{n}", SaveRequest(
                content=f"{who} wrote {word}{n:03d}7 in note {n}. " * 8, description=f"{who}'s note {n}"), user=who)
    assert _hits(tmp_path, MARK) and _hits(tmp_path, KEPT)  # (the scan finds them: it can fail)

    # When ana is erased
    assert container.erasure.erase_user(account, USER)["entries"] == 60

    # Then none of her bytes is left in any file of the data dir, and all of bob's are
    assert _hits(tmp_path, MARK) == {}
    assert sum(_hits(tmp_path, KEPT).values()) >= 60 * 8
    # and her id is in no row but the vector index's removal log (a layer's key, which the server's processes
    # read to drop her vectors from what they hold in memory: docs/security.md)
    conn = sqlite3.connect(tmp_path / "agentmem.db")
    tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    holding = {table for table in tables if not table.startswith(("entries_fts", "messages_fts", "messages_vocab"))
               and any(USER in repr(row) for row in conn.execute(f"SELECT * FROM {table}"))}
    conn.close()
    assert holding <= {"vector_removals"}


def test_a_memory_purged_from_the_trash_leaves_no_byte_of_its_entries(tmp_path: Path) -> None:
    moment = [datetime(2026, 12, 1, 9, 0, tzinfo=UTC)]
    container = build_container(Settings(data_dir=tmp_path, embedder="none"), clock=lambda: moment[0])
    _, secret = container.keys.create_account("acme")
    account = container.keys.authenticate("Bearer " + secret)
    # Given a memory whose entries (one saved twice) carry a word of their own, and another memory's entries
    for memory, word in (("old-notes", MARK), ("handbook", KEPT)):
        container.memories.create(account, memory)
        for n in range(30):
            for _ in range(2):
                container.entries.save(account, memory, f"note-{n}", SaveRequest(
                    content=f"{word}{n:03d}7 noted. " * 8, description=f"note {n}"))
    assert _hits(tmp_path, MARK) and _hits(tmp_path, KEPT)
    # When the first goes to the trash, and the sweep purges it 30 days later
    container.memories.delete(account, "old-notes")
    assert _hits(tmp_path, MARK)  # (in the trash, it is all still there)
    moment[0] += timedelta(days=31)
    assert container.sweep()["memories_purged"] == 1
    # Then none of its bytes is left in any file of the data dir, and the other memory's are
    assert _hits(tmp_path, MARK) == {}
    assert sum(_hits(tmp_path, KEPT).values()) >= 30 * 8
