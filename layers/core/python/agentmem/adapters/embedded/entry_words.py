"""The entries' keyword index (``entries_fts``): the scope token of a layer, how rows enter and leave the index,
and how the index is brought up to date in batches.

**Batches (migration 20).** A write does not touch the index. It notes the entry in ``entry_words_pending``, in
its own transaction, with the words the index holds of it (as the row stood at the index's last catch-up:
nothing for a new row or a checkpoint). ``catch_up`` then removes those words and indexes the rows as they are,
every entry noted at once, in one FTS5 segment: when a search is about to read the index (in that search's
process, whichever process wrote), when ``BATCH`` entries are waiting (the write that makes them so many does
it), and before a purge removes rows by their words. So a search sees every write at once, and a crash loses
nothing: the note commits with the write, or neither does. An entry changed again while it waits is noted once
(the words the index holds do not change until it catches up). A save paid for one FTS5 segment each (its
structure record, a leaf, its index row and the sizes, and the merges they bring): in a run of creates and
updates on this machine, a save's p50 CPU went from 138 to 89 µs (create) and 237 to 117 µs (update), SQLite's
LangGraph store taking 24–25 and 32–41 µs in the same runs (``bench/profile_entries.py``), and its WAL from 13.4
to 8.0 pages (create) and 15.0 to 12.1 (update).

Since migration 14 the index is contentless (FTS5 ``content=''``): it holds the words of an entry's name,
description and content, never a second copy of the text (the entry row has it). FTS5 then cannot look up what
to remove, so a row leaves the index by its ``'delete'`` command, given the very values it was indexed with: the
entry's row as stored, read in the same write transaction, before it changes. Only entries that are not
checkpoints (``conversation IS NULL``) are indexed, and only they may be removed: a ``'delete'`` of a row the
index never held would corrupt it.

What the index costs a save is mostly its COMMIT: FTS5 writes the transaction's postings as a new segment (a leaf
in ``entries_fts_data``, the structure record beside it, a row of ``entries_fts_idx``) and the row's sizes
(``entries_fts_docsize``), and merges segments now and then (the pages a merge frees are the "(free list)" of
``bench/entries.py``). Measured on an index of the benchmark's 10,000 entries, one update (delete and insert) a
transaction: ``detail=column`` changed neither the pages (7.9 -> 7.8 a transaction) nor the time; ``columnsize=0``
saves the sizes' page (6.9 pages, about 8 µs) but a contentless index then has no column sizes for bm25, which
ranks by them; the 'delete' and the insert in one multi-row statement cost the same in total (FTS5 writes its
pending postings at the statement's savepoint instead of at the COMMIT). What did help is smaller leaves (FTS5's
``pgsz``, migration 19): 2,000 bytes instead of 4,050 (a whole page) took the same transactions from 7.98 to 6.83
pages (3,000: 7.01; 1,500: 6.61; 1,000: 6.83), and from 8.23 to 7.54 with entries four times as long; through the
whole save, a create appends 13.4 pages instead of 14.5 and an update 13.7 instead of 14.6. 1,500 saved a little
more (12.6 and 13.5 pages) but made the search's candidate query 2-3% slower, as a common word's postings then
span more leaves; at 2,000 it ran as fast as at 4,050, within the noise of two stores searched in turn.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from functools import lru_cache

# The SQL function each connection has (database.py): the scope token of a row's layer, for statements that
# index or remove rows
SCOPE_FUNCTION = "entry_scope"
# the entries whose words the index does not hold as stored yet, with the words it holds of each (migration 20)
PENDING = "entry_words_pending"
# Entries waiting, at most: the write that makes them this many brings the index up to date. Measured with 16,
# 32, 64, 128 and 256 (3,200 updates, two stores in turns): the p50 of a save the same (111-115 µs), the mean
# 231, 220, 189, 182 and 171 µs; 64 keeps what one save or one search may have to index to about 2 ms.
BATCH = 64
_HELD = "CASE WHEN conversation IS NULL THEN {} END"  # a checkpoint's words are not held: all NULL
_MARK_CHANGING = (
    f"INSERT OR IGNORE INTO {PENDING} (entry, scope, name, description, content) SELECT rowid, "
    + ", ".join(_HELD.format(column) for column in (f"{SCOPE_FUNCTION}(account_id, memory, layer_user)", "name",
                                                     "description", "content"))
    + " FROM entries WHERE rowid = ?"
)


@lru_cache(maxsize=4096)  # every save of a layer asks again
def scope_token(account_id: str, memory: str, user_key: str) -> str:
    """One FTS token per layer, so a search only walks its own layers' postings."""
    raw = f"{account_id}\x1f{memory}\x1f{user_key}".encode()
    return "l" + hashlib.blake2b(raw, digest_size=10).hexdigest()


def mark_new(conn: sqlite3.Connection, rowid: int) -> None:
    """An entry row just inserted: its words go into the index at the next catch-up. (When its rowid is one a
    removed entry had and that entry's removal is still waiting, the row waiting keeps the words to remove.)"""
    conn.execute(f"INSERT OR IGNORE INTO {PENDING} (entry) VALUES (?)", (rowid,))


def mark_changing(conn: sqlite3.Connection, rowid: int) -> None:
    """An entry row about to change its words or go, in the write's transaction before it does: what the index
    holds of it is kept beside it, for the catch-up to remove. The index holds a row's words as they were at
    its last catch-up: as the row stands now if it is not waiting already (and not a checkpoint, which the
    index never holds), else as the row waiting says, which is kept (OR IGNORE)."""
    conn.execute(_MARK_CHANGING, (rowid,))


def catch_up(conn: sqlite3.Connection) -> None:
    """Bring the index up to date with every entry waiting, inside the caller's write transaction: the words it
    holds of each are removed, and the row's words as it is now indexed (unless it went, or is a checkpoint).
    One segment of the index for the whole batch."""
    conn.execute(
        "INSERT INTO entries_fts (entries_fts, rowid, scope, name, description, content) "
        f"SELECT 'delete', entry, scope, name, description, content FROM {PENDING} WHERE name IS NOT NULL"
    )
    conn.execute(
        "INSERT INTO entries_fts (rowid, scope, name, description, content) "
        f"SELECT e.rowid, {SCOPE_FUNCTION}(e.account_id, e.memory, e.layer_user), e.name, e.description, e.content "
        f"FROM {PENDING} p JOIN entries e ON e.rowid = p.entry WHERE e.conversation IS NULL"
    )
    conn.execute(f"DELETE FROM {PENDING}")


def catch_up_when_full(conn: sqlite3.Connection) -> None:
    """``catch_up`` once ``BATCH`` entries are waiting: the write that fills the batch indexes it."""
    if conn.execute(f"SELECT count(*) >= {BATCH} FROM {PENDING}").fetchone()[0]:
        catch_up(conn)


def is_behind(conn: sqlite3.Connection) -> bool:
    """Whether any entry is waiting for the index (read without a write lock: a search asks before it matches)."""
    return conn.execute(f"SELECT 1 FROM {PENDING} LIMIT 1").fetchone() is not None


def forget_words_where(conn: sqlite3.Connection, where: str, params: Sequence[object]) -> None:
    """Remove from the index every indexed entry (checkpoints are not) that ``where`` selects, in one statement,
    before those rows are deleted: after a catch-up, so that the index holds each as it is stored."""
    catch_up(conn)
    conn.execute(
        f"INSERT INTO entries_fts (entries_fts, rowid, scope, name, description, content) "
        f"SELECT 'delete', rowid, {SCOPE_FUNCTION}(account_id, memory, layer_user), name, description, content "
        f"FROM entries WHERE ({where}) AND conversation IS NULL",
        tuple(params),
    )


def add_scope_function(conn: sqlite3.Connection) -> None:
    conn.create_function(SCOPE_FUNCTION, 3, scope_token, deterministic=True)
