"""What the processes of one ``agentmem serve --workers N`` share besides the data: a small SQLite file in the
data dir (``serve.db``) holding the rate limits' token buckets (local/rate_limit.py) and the summary passes'
runs (jobs.py ``SharedRuns``), so a limit holds for the server as a whole and a pass runs once, whichever
worker a request reached.

It is coordination, not data: written with ``synchronous = OFF`` (a crash of the machine may lose its last
moments, which only resets a bucket or lets a pass run again), on every backend (``--backend aws`` too), and
never read by anything but the server's own processes. A connection per thread, opened after the fork.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .private_files import make_private_dirs, open_private_file

FILE_NAME = "serve.db"
BUSY_TIMEOUT_MS = 30_000

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS buckets (
        kind TEXT NOT NULL,
        name TEXT NOT NULL,
        tokens REAL NOT NULL,
        at REAL NOT NULL,
        PRIMARY KEY (kind, name)
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS buckets_by_age ON buckets(kind, at)",
    """CREATE TABLE IF NOT EXISTS job_runs (
        run_id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        state TEXT NOT NULL,
        output TEXT,
        error TEXT,
        holder INTEGER NOT NULL,
        lease_until REAL NOT NULL,
        finished INTEGER
    )""",
    "CREATE INDEX IF NOT EXISTS job_runs_running ON job_runs(name) WHERE state = 'running'",
    "CREATE INDEX IF NOT EXISTS job_runs_finished ON job_runs(finished) WHERE finished IS NOT NULL",
)


class ServerState:
    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / FILE_NAME
        self._local = threading.local()
        # one writer at a time in this process: only the workers contend for the file's lock (a writer finding
        # it taken sleeps a millisecond or more in SQLite's busy handler; a thread waiting here does not)
        self._writing = threading.Lock()

    def connection(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            make_private_dirs(self.path.parent)
            with contextlib.suppress(FileExistsError):
                os.close(open_private_file(self.path, os.O_RDWR | os.O_EXCL))
            conn = sqlite3.connect(self.path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000,
                                   check_same_thread=True)
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = OFF")
            for statement in _SCHEMA:
                conn.execute(statement)
            self._local.conn = conn
        return conn

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A transaction holding the file's write lock from its start: what it reads, no other process changes."""
        conn = self.connection()
        with self._writing:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def close(self) -> None:
        """Close this thread's connection."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
