"""The counters behind the 500-per-layer limit and ``entry_count``, and how a full layer gets its room back.

A layer's counter (``A#{account}#M#{memory}`` / ``C#{layer}``) holds how many counted entries (not
checkpoints) the layer physically holds, expired or not yet removed; the memory item's ``entry_total``
holds the same over every layer. Both change in the transaction that creates or deletes an entry, so
the limit holds under concurrent creates: the create's transaction adds 1 only while ``entries < 500``.

Expired entries keep their slot until they are removed. A create that finds its layer full removes
the layer's expired entries (found through the by_memory_expiry index, counters down in the same
transaction) and checks the counter against the layer itself (TTL removes items without touching the
counters; ``on_ttl_removed`` is the stream's way to keep them right), then tries once more.

Purging a layer (``DynamoEntryStore.purge_layer``) deletes its counter and takes what the counter held off
the memory's total in one transaction, so ``entry_total`` stays the sum of the memory's layer counters.
A TTL removal the stream has not counted out yet is in that count; when its record comes, the hook finds
no counter and changes nothing (``must_exist``). Only a new save into the layer between the purge and
that record would make the hook count out an entry the new counter never held.
"""

from __future__ import annotations

from contextlib import suppress
from typing import Any

from pynamodb.expressions.condition import Condition
from pynamodb.expressions.update import Action

from ....domain.models import Layer
from . import layout
from .entry_rows import is_counted
from .models import BoundModels, CounterRow, EntryRow, MemoryRow
from .transactions import Cancelled, WriteSet

REMOVALS_PER_TRANSACTION = 90  # of the 100 actions a transaction may hold; two go to the counters


def counter_of(models: BoundModels, layer: Layer) -> CounterRow:
    """The layer's counter item's key, as a model to write."""
    return models.counter(layout.memory_pk(layer.account_id, layer.memory), layout.counter_sk(layer.user_id))


def count_in_layer(
    writes: WriteSet, models: BoundModels, layer: Layer, delta: int, *, limit: int | None = None,
    must_exist: bool = False,
) -> None:
    """Add ``delta`` to the layer's counter; with ``limit``, only while it holds fewer than that;
    ``must_exist``: only if the counter is there (an update would otherwise make a bare one)."""
    counter = counter_of(models, layer)
    condition: Condition | None = None
    if limit is not None:
        condition = CounterRow.entries.does_not_exist() | (CounterRow.entries < limit)
    if must_exist:
        condition = CounterRow.sk.exists() if condition is None else condition & CounterRow.sk.exists()
    writes.update("counter", counter, [CounterRow.entries.add(delta), CounterRow.rev.add(1)], condition, all_old=True)


def count_in_memory(
    writes: WriteSet, models: BoundModels, layer: Layer, delta: int, *, expiring: bool = False,
    require_live: bool = False,
) -> None:
    """Add ``delta`` to the memory's total (``expiring``: note that counts must look for expired entries).

    The memory must exist (an update would otherwise make a bare one); ``require_live``: and not be in
    the trash."""
    memory = models.memory(layout.account_pk(layer.account_id), layout.memory_sk(layer.memory))
    actions: list[Action] = []
    if delta:
        actions.append(MemoryRow.entry_total.add(delta))
    if expiring:
        actions.append(MemoryRow.expiry_seen.set(True))
    condition: Condition = MemoryRow.sk.exists()
    if require_live:
        condition &= MemoryRow.deleted_at.does_not_exist()
    writes.update("memory", memory, actions, condition)


def memory_is_live(writes: WriteSet, models: BoundModels, layer: Layer) -> None:
    """The write's condition that the layer's memory exists and is not in the trash, for a transaction that
    does not change the memory's total (which ``count_in_memory(require_live=True)`` conditions instead): the
    check is the write's own, so a memory trashed by another process refuses it at once, whatever this
    process's cache of memory records believes."""
    writes.check("memory", models.memory, layout.account_pk(layer.account_id), layout.memory_sk(layer.memory),
                 MemoryRow.sk.exists() & MemoryRow.deleted_at.does_not_exist())


class LayerSpace:
    def __init__(self, models: BoundModels) -> None:
        self.models = models

    def counted(self, raw_counter: dict[str, Any] | None) -> int:
        """The count of a counter item as a cancelled transaction returned it."""
        if not raw_counter:
            return 0
        return int(self.models.counter.from_raw_data(raw_counter).entries or 0)

    def free(self, layer: Layer, now: str) -> int:
        """Give a full layer back the slots of its expired entries; returns how many were removed."""
        removed = self._remove_expired(layer, now)
        self._recount(layer)
        return removed

    def _remove_expired(self, layer: Layer, now: str) -> int:
        pk = layout.layer_pk(layer)
        expired = [
            (row.pk, row.sk)
            for row in self.models.entry.by_memory_expiry.query(
                layout.memory_pk(layer.account_id, layer.memory), EntryRow.mx_sk < layout.up_to(now),
                filter_condition=EntryRow.pk == pk,
            )
        ]
        removed = 0
        for start in range(0, len(expired), REMOVALS_PER_TRANSACTION):
            pending = expired[start : start + REMOVALS_PER_TRANSACTION]
            while pending:
                writes = WriteSet(self.models.connection)
                for n, (hash_key, range_key) in enumerate(pending):
                    # still expired and still counted: the index may lag behind a newer save
                    still = (EntryRow.expires_at <= now) & EntryRow.conversation.does_not_exist()
                    writes.delete(f"entry{n}", self.models.entry(hash_key, range_key), still)
                count_in_layer(writes, self.models, layer, -len(pending))
                count_in_memory(writes, self.models, layer, -len(pending))
                try:
                    writes.commit()
                except Cancelled as cancelled:
                    if cancelled.failed("memory"):
                        return removed  # the memory is gone (purged): nothing to make room in
                    pending = [key for n, key in enumerate(pending) if not cancelled.failed(f"entry{n}")]
                    continue
                removed += len(pending)
                pending = []
        return removed

    def read_counter(self, layer: Layer) -> CounterRow | None:
        """The layer's counter as stored now (one consistent ``GetItem``); None when the layer has none."""
        try:
            return self.models.counter.get(
                layout.memory_pk(layer.account_id, layer.memory), layout.counter_sk(layer.user_id),
                consistent_read=True,
            )
        except self.models.counter.DoesNotExist:
            return None

    def drop_counter(self, layer: Layer, counter: CounterRow) -> None:
        """Delete the layer's counter as ``counter`` read it, taking what it held off the memory's total in
        the same transaction (one ``TransactWriteItems``). Raises ``Cancelled`` when a write changed the
        counter since it was read (its ``rev`` moved on): read it again and retry."""
        unchanged = CounterRow.rev.does_not_exist() if counter.rev is None else CounterRow.rev == counter.rev
        held = int(counter.entries or 0)
        writes = WriteSet(self.models.connection)
        writes.delete("counter", counter, unchanged)
        if held:
            count_in_memory(writes, self.models, layer, -held)
        try:
            writes.commit()
        except Cancelled as cancelled:
            if not held or not cancelled.failed("memory") or cancelled.failed("counter"):
                raise
            alone = WriteSet(self.models.connection)  # the memory item is gone (purged): no total to keep
            alone.delete("counter", counter, unchanged)
            alone.commit()

    def _recount(self, layer: Layer) -> None:
        """Make the counter agree with the layer when TTL removed entries behind its back."""
        memory_pk, counter_sk = layout.memory_pk(layer.account_id, layer.memory), layout.counter_sk(layer.user_id)
        try:
            counter = self.models.counter.get(memory_pk, counter_sk, consistent_read=True)
        except self.models.counter.DoesNotExist:
            return
        held = self.models.entry.count(
            layout.layer_pk(layer), EntryRow.sk.startswith(layout.ENTRY_PREFIX),
            filter_condition=EntryRow.conversation.does_not_exist(), consistent_read=True,
        )
        counted = int(counter.entries or 0)
        if held == counted:
            return
        writes = WriteSet(self.models.connection)
        # only if no write changed the counter since it was read (rev moves on every change)
        unchanged = CounterRow.rev.does_not_exist() if counter.rev is None else CounterRow.rev == counter.rev
        writes.update("counter", counter, [CounterRow.entries.set(held), CounterRow.rev.add(1)], unchanged)
        count_in_memory(writes, self.models, layer, held - counted)
        with suppress(Cancelled):  # someone changed the layer meanwhile: the caller's retry decides afresh
            writes.commit()

    def on_ttl_removed(self, old_image: dict[str, Any]) -> bool:
        """Count out an entry that TTL removed (a stream REMOVE record by ``dynamodb.amazonaws.com``).

        Returns whether a counter changed. The stream consumer calls this; nothing else removes an
        entry without counting it out in the same transaction."""
        if not old_image.get("SK", {}).get("S", "").startswith(layout.ENTRY_PREFIX):
            return False
        row = self.models.entry.from_raw_data(old_image)
        if not is_counted(row):
            return False
        layer = layout.parse_layer_pk(row.pk)
        writes = WriteSet(self.models.connection)
        # no counter: the layer was purged meanwhile, and the purge took the entry off with the counter
        count_in_layer(writes, self.models, layer, -1, must_exist=True)
        count_in_memory(writes, self.models, layer, -1)
        try:
            writes.commit()
        except Cancelled:
            return False  # the memory or the layer was purged meanwhile
        return True
