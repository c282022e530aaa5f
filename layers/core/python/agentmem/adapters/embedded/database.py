"""One SQLite database file shared by threads and processes.

Each thread gets its own connection (WAL lets readers run beside the writer). The file, its ``-wal`` and
``-shm`` and the directory holding them are the owner's alone (0600, 0700: ``private_files``).
Writes run in ``BEGIN IMMEDIATE`` transactions, which take the database's write
lock up front: a version check and the write it guards happen under one lock,
so two processes sharing a data directory cannot lose an update. Each one copies the generations of what
processes keep in memory into the file they share before it commits (``generations.py``).

What is deleted leaves no copy in the files (docs/security.md): every connection runs with ``secure_delete``, so
SQLite overwrites deleted rows and freed pages with zeros instead of leaving them in free space, and ``scrub``
(after a purge or an erasure) merges the full-text indexes, whose deletes are otherwise only markers beside the
old postings, and empties the WAL, which still holds the pages as they were before.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ...domain.text import index_text
from .entry_words import add_scope_function
from .generations import SUFFIX as GENERATIONS_SUFFIX
from .generations import Generations
from .migrations import MIGRATIONS, statements
from .private_files import DIR_MODE, FILE_MODE, make_private_dirs, open_private_file, tighten

BUSY_TIMEOUT_MS = 30_000


class Database:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        self._setup_lock = threading.Lock()
        self._migrated = False
        self._private = False
        self._generations: Generations | None = None

    @property
    def generations(self) -> Generations:
        """The generations of the keys and memories this data dir's processes keep (read without a query)."""
        if self._generations is None:
            self._make_private()
        assert self._generations is not None
        return self._generations

    def connection(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            self._make_private()
            conn = sqlite3.connect(self.path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
            conn.row_factory = sqlite3.Row
            # a writer waits for another's transaction (BEGIN IMMEDIATE) instead of failing with "locked"
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            # readers run beside the one writer, and a commit appends its pages to the log instead of
            # rewriting the file: the cost of a write is the pages it appends (bench/entries.py counts them)
            conn.execute("PRAGMA journal_mode = WAL")
            # with WAL, NORMAL syncs at checkpoints, not at every commit: a process crash loses nothing, a
            # power cut at most the last commits (the norm for WAL; FULL would add an fsync to every save)
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")  # messages reference their conversation
            # a deleted row is overwritten with zeros, and so is a page freed (no erased text left in free space);
            # bench/entries.py measured what it costs a save (docs/security.md)
            conn.execute("PRAGMA secure_delete = ON")
            # The page size stays SQLite's 4 KiB: measured on the 10,000-entry benchmark, 1 and 2 KiB pages wrote
            # fewer bytes but more pages a save, 8 KiB fewer pages but twice the bytes, and none saved faster.
            # wal_autocheckpoint stays at 1,000 pages: 10,000 left the save's p50 where it was (its mean and p99, which
            # the checkpoints make, moved within the noise of the loaded machine it was measured on).
            # cache_size and mmap_size stay SQLite's defaults (2 MB of cache a connection, no mapping): a 32 or 64 MB
            # cache and a 256 MB mapping, each against the defaults on two stores saving in turn in one process,
            # left a save's CPU time where it was (its reads find their pages cached; the time is the COMMIT's).
            # the journal's full-text index holds a message's words without stop words (domain/text.py)
            conn.create_function("index_text", 1, index_text, deterministic=True)
            add_scope_function(conn)  # the entries' keyword index removes many layers' rows in one statement
            self._local.conn = conn
            self._migrate(conn)
        return conn

    def _make_private(self) -> None:
        """The directory 0700 and the database 0600 before SQLite opens it (SQLite gives its -wal and -shm
        files the database's mode); what an earlier version left open is closed."""
        with self._setup_lock:
            if self._private:
                return
            make_private_dirs(self.path.parent)
            tighten(self.path.parent, DIR_MODE)
            with contextlib.suppress(FileExistsError):
                os.close(open_private_file(self.path, os.O_RDWR | os.O_EXCL))
            tighten(self.path, FILE_MODE)
            for companion in ("-wal", "-shm", "-journal"):
                tighten(self.path.with_name(self.path.name + companion), FILE_MODE)
            self._generations = Generations(self.path.with_name(self.path.name + GENERATIONS_SUFFIX))
            self._private = True

    def setup(self) -> None:
        """Open the database and run the migrations it has not seen yet (idempotent, process-safe)."""
        self.connection()

    def _migrate(self, conn: sqlite3.Connection) -> None:
        with self._setup_lock:
            if self._migrated:
                return
            conn.execute("BEGIN IMMEDIATE")
            try:
                done = conn.execute("PRAGMA user_version").fetchone()[0]
                for number, script in enumerate(MIGRATIONS[done:], start=done + 1):
                    if callable(script):
                        script(conn)
                        conn.execute(f"PRAGMA user_version = {number}")
                        continue
                    for statement in statements(script):
                        conn.execute(statement)
                    conn.execute(f"PRAGMA user_version = {number}")
                self.generations.publish(conn)  # what the database holds, whatever the file held before
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            self._migrated = True

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction holding the database's write lock from its start. Before it commits, the generations
        it leaves are copied to the shared file (``generations.py``: before, not after, so that no process keeps
        an answer the commit changed)."""
        conn = self.connection()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
            self.generations.publish(conn)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A consistent snapshot for several reads."""
        conn = self.connection()
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    def scrub(self, *, entries: bool = True, messages: bool = True) -> bool:
        """Leave no copy of deleted rows in the files: merge the full-text index of the entries and of the
        journal's messages (contentless FTS5: a row leaves them as a delete marker beside its old postings) into
        one segment each, which drops the postings of deleted rows and frees their pages, zeroed by
        ``secure_delete``; then copy the WAL into the database and truncate it to nothing. An index whose rows
        were not deleted is left as it is (a merge rewrites the whole index: ``bench/scrub.py``). Whether the WAL
        was emptied: the checkpoint waits for readers of older snapshots as long as for a writer
        (``BUSY_TIMEOUT_MS``); one still reading after that leaves the WAL to the next checkpoint."""
        tables = [table for table, wanted in (("entries_fts", entries), ("messages_fts", messages)) if wanted]
        if tables:
            with self.write() as conn:
                for table in tables:
                    conn.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")
        busy = self.connection().execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        return not busy

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
