"""Usage metering: counts per account, day and operation, buffered and flushed in batches.

Counting must not add a store write to every request, so counts gather in memory
and are flushed every few seconds (and before a usage read or shutdown).
"""

from __future__ import annotations

import threading
from collections import Counter
from datetime import date, timedelta

from ..domain.clock import Clock, utcnow
from ..domain.errors import InvalidError
from ..domain.models import Principal, UsageCount
from ..ports.usage import UsageStore


class UsageMeter:
    def __init__(self, store: UsageStore, clock: Clock = utcnow, flush_every_s: float = 5.0) -> None:
        self.store = store
        self.clock = clock
        self.flush_every_s = flush_every_s
        self._pending: Counter[tuple[str, str, str, bool]] = Counter()
        self._lock = threading.Lock()
        self._last_flush = clock()

    def record(self, account_id: str, operation: str, *, billable: bool = True) -> None:
        now = self.clock()
        with self._lock:
            self._pending[(account_id, now.date().isoformat(), operation, billable)] += 1
            due = (now - self._last_flush).total_seconds() >= self.flush_every_s
        if due:
            self.flush()

    def flush(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, Counter()
            self._last_flush = self.clock()
        for (account_id, day, operation, billable), count in pending.items():
            self.store.increment(account_id, day, operation, billable, count)

    def counts(self, principal: Principal, since: str | None = None) -> list[UsageCount]:
        if since is None:
            since_day = (self.clock().date() - timedelta(days=30)).isoformat()
        else:
            try:
                since_day = date.fromisoformat(since[:10]).isoformat()
            except ValueError:
                raise InvalidError("since must be a date like 2026-11-01", field="since") from None
        self.flush()
        return self.store.counts(principal.account_id, since_day)
