"""The entries' keyword index (``entries_fts``): the scope token of a layer, and how rows leave the index.

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
# remove many layers' rows at once
SCOPE_FUNCTION = "entry_scope"


@lru_cache(maxsize=4096)  # every save of a layer asks again
def scope_token(account_id: str, memory: str, user_key: str) -> str:
    """One FTS token per layer, so a search only walks its own layers' postings."""
    raw = f"{account_id}\x1f{memory}\x1f{user_key}".encode()
    return "l" + hashlib.blake2b(raw, digest_size=10).hexdigest()


def index_words(conn: sqlite3.Connection, rowid: int, scope: str, name: str, description: str, content: str) -> None:
    conn.execute(
        "INSERT INTO entries_fts (rowid, scope, name, description, content) VALUES (?, ?, ?, ?, ?)",
        (rowid, scope, name, description, content),
    )


def forget_words(conn: sqlite3.Connection, rowid: int, scope: str, name: str, description: str, content: str) -> None:
    """Remove one entry's row from the index: the values must be those it was indexed with."""
    conn.execute(
        "INSERT INTO entries_fts (entries_fts, rowid, scope, name, description, content) "
        "VALUES ('delete', ?, ?, ?, ?, ?)",
        (rowid, scope, name, description, content),
    )


def forget_words_where(conn: sqlite3.Connection, where: str, params: Sequence[object]) -> None:
    """Remove from the index every indexed entry (checkpoints are not) that ``where`` selects, in one statement,
    before those rows are deleted."""
    conn.execute(
        f"INSERT INTO entries_fts (entries_fts, rowid, scope, name, description, content) "
        f"SELECT 'delete', rowid, {SCOPE_FUNCTION}(account_id, memory, layer_user), name, description, content "
        f"FROM entries WHERE ({where}) AND conversation IS NULL",
        tuple(params),
    )


def add_scope_function(conn: sqlite3.Connection) -> None:
    conn.create_function(SCOPE_FUNCTION, 3, scope_token, deterministic=True)
