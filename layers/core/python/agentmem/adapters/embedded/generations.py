"""What a process keeps in memory of the database's keys and memories, exact across every process on the data dir.

An entry read looked its key up and its memory's record before reading the entry: three statements, each a read
transaction of its own (two ``fcntl`` calls on the ``-shm`` file, and the statement). Keys and memory records
change seldom, so each process keeps the answers (``KeptAnswers``), and must drop one the moment another process
(a worker of ``agentmem serve --workers N``, an operator command) changes what it was read from.

The truth is in the database: ``cache_generation`` (migration 18) holds a generation per kind (keys, memories),
moved by triggers in the transaction of every change of its table, whichever path makes it. An answer is kept
with the generation read *in the same statement* (one snapshot), so it is as the database holds it for as long
as that generation is the committed one.

Reading the generation from the database on every request would cost one read transaction again, so each
process maps a small file beside the database (``agentmem.db-generations``, 8 bytes per kind, as ``serve.failures``
is kept): reading it costs no system call. ``Database.write`` copies the generations into it at the end of every
write transaction, *before* its COMMIT, while it holds the database's write lock (``publish``), and so does
the first connection of a process (the migrations' transaction). That order is what makes it exact:

* once a change's write returned, the file holds the generation it committed (or a later one), so no answer
  read before it is taken any more, by any process: every process reads the same file;
* between the copy and the COMMIT the file holds a generation that is not yet committed: an answer read then
  carries the previous one, which the file no longer holds, so it is read again at its next use;
* a transaction that rolls back after the copy (or a process that dies there) leaves the file ahead of the
  database: nothing kept matches it, so every lookup reads the database until the next write copies the
  committed generations again. The file is never behind what is committed: a kept answer is never stale.

``PRAGMA data_version`` was the other candidate: it is per connection (each thread has its own), moves on every
commit of any table (the usage counts' flush, every entry saved) and is itself a read transaction.

A generation slot is one aligned 8-byte ``memcpy`` in both directions (mmap slice), which a reader sees whole; a
value that did not match would only make it read the database.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Hashable
from pathlib import Path
from typing import Generic, TypeVar

from .private_files import map_private_file

SUFFIX = "-generations"  # beside the database file
KINDS = ("keys", "memories")  # cache_generation's columns, the file's slots in this order
SLOT = 8
KEPT_MOST = 10_000  # answers a process keeps per kind; past this it starts again (a flood cannot grow it)
READ_GENERATIONS = "SELECT " + ", ".join(KINDS) + " FROM cache_generation"

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Generations:
    """The file of generations one database's processes share, mapped into this process's memory."""

    def __init__(self, path: Path) -> None:
        self.path = path
        fd, self._map = map_private_file(path, SLOT * len(KINDS))
        os.close(fd)  # the mapping stays
        self._slots = {kind: (i * SLOT, (i + 1) * SLOT) for i, kind in enumerate(KINDS)}

    def current(self, kind: str) -> int:
        start, end = self._slots[kind]
        return int.from_bytes(self._map[start:end], "little")

    def publish(self, conn: sqlite3.Connection) -> None:
        """Copy the generations of the write transaction ``conn`` holds into the file, before its COMMIT."""
        row = conn.execute(READ_GENERATIONS).fetchone()
        for kind, value in zip(KINDS, row, strict=True):
            start, end = self._slots[kind]
            data = int(value).to_bytes(SLOT, "little")
            if self._map[start:end] != data:
                self._map[start:end] = data

    def close(self) -> None:
        self._map.close()


class KeptAnswers(Generic[K, V]):
    """Answers of one kind read from the database, each with the generation read in the same statement, given
    back while the shared file holds that generation. Only found things are kept: what was not found is asked
    again (a key made a moment later elsewhere is found at once)."""

    def __init__(self, generations: Generations, kind: str, most: int = KEPT_MOST) -> None:
        self._generations = generations
        self._kind = kind
        self._most = most
        self._kept: dict[K, tuple[int, V]] = {}
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        kept = self._kept.get(key)
        if kept is not None and kept[0] == self._generations.current(self._kind):
            return kept[1]
        return None

    def keep(self, key: K, generation: int, value: V) -> None:
        with self._lock:
            if len(self._kept) >= self._most:
                self._kept.clear()
            self._kept[key] = (generation, value)
