"""The last item this process saw of recently used entries: what lets a write skip its read.

A save that must keep fields it does not give (description, category, expiry, ``created_at``) and a
delete that snapshots the deleted entry into history must know the stored item. When this process has
just read or written the entry, its copy is offered to the write, which is then conditioned on that
exact copy (version, ``updated_at`` and content hash). A stale copy can therefore never be written over:
the condition fails, the transaction returns the item as it is (``ALL_OLD``), and the write decides
again from that. The cache only ever saves a round trip; it never answers a caller.

Beside each entry it keeps the name's last version item as last seen (``V#{name}``, what a create of the
name continues after), for the same reason: a create conditioned on a stale one fails and learns it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

from .models import EntryRow

MAX_ITEMS = 256


@dataclass(frozen=True)
class Snapshot:
    """The stored item as last seen (None: absent). ``fresh`` when it was just read from the table."""

    row: EntryRow | None
    fresh: bool


class SnapshotCache:
    """A small LRU of entry items by key, shared by the threads of one store."""

    def __init__(self, max_items: int = MAX_ITEMS) -> None:
        self._items: OrderedDict[tuple[str, str], EntryRow | None] = OrderedDict()
        self._last_versions: OrderedDict[tuple[str, str], int] = OrderedDict()
        self._lock = threading.Lock()
        self._max = max_items

    def get(self, key: tuple[str, str]) -> Snapshot | None:
        with self._lock:
            if key not in self._items:
                return None
            self._items.move_to_end(key)
            return Snapshot(self._items[key], fresh=False)

    def put(self, key: tuple[str, str], row: EntryRow | None) -> None:
        with self._lock:
            self._items[key] = row
            self._items.move_to_end(key)
            while len(self._items) > self._max:
                self._items.popitem(last=False)

    def last_version(self, key: tuple[str, str]) -> int | None:
        """The entry's name's last version item as last seen (None: none seen, or seen absent)."""
        with self._lock:
            return self._last_versions.get(key)

    def keep_last_version(self, key: tuple[str, str], version: int | None) -> None:
        with self._lock:
            if version is None:
                self._last_versions.pop(key, None)
                return
            self._last_versions[key] = version
            self._last_versions.move_to_end(key)
            while len(self._last_versions) > self._max:
                self._last_versions.popitem(last=False)

    def forget(self, keys: Iterable[tuple[str, str]]) -> None:
        """Drop what this process saw of these entries (a purge removed them)."""
        with self._lock:
            for key in keys:
                self._items.pop(key, None)
                self._last_versions.pop(key, None)
