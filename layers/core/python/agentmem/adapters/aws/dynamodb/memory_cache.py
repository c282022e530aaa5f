"""Memory records as this process last read them, kept a few seconds: every entry call looks its memory up
first, and through the API that lookup was one ``GetItem`` of every read, save, delete and list page.

What is kept is the record without counts (scope, owner, trash times): the owner of a memory never changes,
so the scope check is exact from a kept record. Only live records are kept: a memory in the trash is read
again each time, so a restore anywhere is seen at once. Every write this process makes to a memory item
(create, trash, restore, purge, an agent's own memory going or coming back) forgets it here.

What another process does is seen within ``MEMORY_CACHE_SECONDS``: a memory another instance moved to the
trash stays readable, listable and searchable on this one for at most that long. Writes do not wait for it:
the entry's transaction carries the condition that the memory is live (``DynamoEntryStore``), so a save or a
delete into a memory in the trash is refused at once, whatever this cache holds.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

from ....domain.models import MemoryRecord

MEMORY_CACHE_SECONDS = 5.0
MEMORY_CACHE_SIZE = 2048  # records; the oldest read goes first


class MemoryCache:
    def __init__(
        self, seconds: float = MEMORY_CACHE_SECONDS, size: int = MEMORY_CACHE_SIZE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.seconds = seconds
        self.size = size
        self.clock = clock
        self._records: OrderedDict[tuple[str, str], tuple[float, MemoryRecord]] = OrderedDict()

    def get(self, account_id: str, name: str) -> MemoryRecord | None:
        """The live record read less than ``seconds`` ago; None when there is none to trust."""
        key = (account_id, name)
        kept = self._records.get(key)
        if kept is None:
            return None
        if self.clock() >= kept[0]:
            self._records.pop(key, None)
            return None
        return kept[1]

    def keep(self, record: MemoryRecord) -> None:
        """Keep a record as just read; one in the trash is forgotten instead."""
        key = (record.account_id, record.name)
        if record.deleted_at is not None or self.seconds <= 0:
            self._records.pop(key, None)
            return
        self._records[key] = (self.clock() + self.seconds, record)
        self._records.move_to_end(key)
        while len(self._records) > self.size:
            self._records.popitem(last=False)

    def forget(self, account_id: str, name: str) -> None:
        self._records.pop((account_id, name), None)
