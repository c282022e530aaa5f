"""Memories on DynamoDB: the memory item, its trash, attachments and entry counts.

The memory item (``A#{account}`` / ``M#{name}``) holds the name unique in the account whatever the
scope, the trash times (and the by_due index keys while trashed), the agents attaching it (a string
set: DynamoDB drops it when the last agent lets go, so "not attached" is ``attribute_not_exists``), and
``entry_total``, the counted entries of every layer (kept by the entries' transactions).

Round trips: ``get_memory(counts=False)`` one ``GetItem``; with counts, plus one ``BatchGetItem`` of the
two layer counters a viewer sees, plus one COUNT query of the by_memory_expiry index when an entry of
the memory ever had an expiry. ``list_memories``: one query of the account's memories, one
``BatchGetItem`` per 50 memories for a viewer, and the expiry query for memories that need it.
``trash_memory`` / ``restore_memory``: one conditional ``UpdateItem`` (and a ``GetItem`` for the answer).
``purge_due``: one query of the by_due index, then per memory its layers' items in batches.

``trash_actions``, ``restore_actions`` and ``purge_memory`` are shared with the agents' store, which trashes,
restores and purges an agent's own memory the same way.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future
from contextlib import suppress
from functools import partial

from pynamodb.exceptions import DeleteError, PutError, UpdateError
from pynamodb.expressions.update import Action

from ....domain.errors import AttachedError, ConflictError, NotFoundError
from ....domain.models import Layer, MemoryRecord
from ....ports.memories import MemoryStore
from . import layout
from .io_threads import IoThreads
from .memory_cache import MemoryCache
from .models import BoundModels, EntryRow, MemoryRow
from .table import BY_MEMORY_EXPIRY

CONDITION_FAILED = "ConditionalCheckFailedException"


def _record(row: MemoryRow, entry_count: int = 0, *, counts: bool = True) -> MemoryRecord:
    return MemoryRecord(
        account_id=row.pk[len("A#"):],
        name=row.name,
        user_id=row.user_id,
        created_at=row.created_at,
        deleted_at=row.deleted_at,
        purge_after=row.purge_after,
        entry_count=max(entry_count, 0),
        attached_to=tuple(sorted(row.attached or ())) if counts else (),
    )


def trash_actions(account_id: str, name: str, deleted_at: str, purge_after: str) -> list[Action]:
    """What moving a memory to the trash sets: its times, and its keys in the by_due index."""
    return [
        MemoryRow.deleted_at.set(deleted_at),
        MemoryRow.purge_after.set(purge_after),
        MemoryRow.due_pk.set(layout.TRASH),
        MemoryRow.due_sk.set(layout.due_sk(purge_after, account_id, name)),
    ]


def restore_actions() -> list[Action]:
    return [
        MemoryRow.deleted_at.remove(), MemoryRow.purge_after.remove(),
        MemoryRow.due_pk.remove(), MemoryRow.due_sk.remove(),
    ]


def purge_memory(models: BoundModels, row: MemoryRow) -> int:
    """Delete the memory's layers (entries, history), their counters, then the memory item last: a
    purge cut short leaves the trashed item behind, and the next ``purge_due`` finishes it. The item
    goes only while its ``purge_after`` is the one read (restored at the last moment: it stays).
    Returns how many entries were removed."""
    memory_pk = layout.memory_pk(row.pk[len("A#"):], row.name)
    counters = list(models.row.query(memory_pk, consistent_read=True))
    entries = 0
    with models.row.batch_write() as batch:
        for counter in counters:
            if counter.sk.startswith(layout.COUNTER_PREFIX):
                layer_pk = f"{memory_pk}#{counter.sk[len(layout.COUNTER_PREFIX):]}"
                for item in models.row.query(layer_pk, attributes_to_get=["PK", "SK"]):
                    entries += item.sk.startswith(layout.ENTRY_PREFIX)
                    batch.delete(item)
        for counter in counters:
            batch.delete(counter)
    unchanged = (
        MemoryRow.purge_after.does_not_exist() if row.purge_after is None else MemoryRow.purge_after == row.purge_after
    )
    try:
        row.delete(condition=unchanged)
    except DeleteError as error:
        if error.cause_response_code != CONDITION_FAILED:
            raise
    return entries


class DynamoMemoryStore(MemoryStore):
    """``cache``: the live memory records this process read lately (``memory_cache.py``); the agents' store
    shares it, so that its writes to an agent's own memory forget it too."""

    def __init__(self, models: BoundModels, cache: MemoryCache | None = None) -> None:
        self.models = models
        self.cache = cache or MemoryCache()
        self.threads = IoThreads()  # reads sent ahead (read_ahead(wait=False))
        self._reading: dict[tuple[str, str], Future[None]] = {}  # records on their way, by (account, name)
        self._reading_lock = threading.Lock()

    def _row(self, account_id: str, name: str) -> MemoryRow | None:
        try:
            return self.models.memory.get(
                layout.account_pk(account_id), layout.memory_sk(name), consistent_read=True
            )
        except self.models.memory.DoesNotExist:
            return None

    def create_memory(self, record: MemoryRecord) -> tuple[MemoryRecord, bool]:
        row = self.models.memory(layout.account_pk(record.account_id), layout.memory_sk(record.name))
        row.name = record.name
        row.user_id = record.user_id
        row.created_at = record.created_at
        row.entry_total = 0
        try:
            row.save(condition=MemoryRow.sk.does_not_exist())
        except PutError as error:
            if error.cause_response_code != CONDITION_FAILED:
                raise
            current = self.get_memory(record.account_id, record.name, record.created_at, include_purged=True)
            if current is None:  # purged between the two requests: make it afresh
                return self.create_memory(record)
            return current, False
        self.cache.forget(record.account_id, record.name)
        return _record(row), True

    def get_memory(
        self, account_id: str, name: str, now: str, *, viewer: str | None = None, counts: bool = True,
        include_purged: bool = False,
    ) -> MemoryRecord | None:
        if not counts and not include_purged:
            self._await_reads(account_id, (name,))
            kept = self.cache.get(account_id, name)  # live when kept: no trash times to look at
            if kept is not None:
                return kept
        row = self._row(account_id, name)
        if row is None:
            self.cache.forget(account_id, name)
            return None
        self.cache.keep(_record(row, counts=False))
        if not include_purged and row.purge_after is not None and row.purge_after <= now:
            return None
        if not counts:
            return _record(row, counts=False)
        return _record(row, self._entry_counts([row], viewer, now)[row.name])

    def read_ahead(self, account_id: str, names: Sequence[str], now: str, *, wait: bool = True) -> None:
        """The records of ``names`` this process does not keep, in one consistent BatchGetItem, kept as
        ``get_memory`` keeps them (a context build on a new instance: one request, not one per memory).
        ``wait=False``: sent on the store's threads; ``get_memory`` and a later ``read_ahead`` of those names
        wait for its answer instead of reading them again."""
        self._await_reads(account_id, names)
        missing = [n for n in dict.fromkeys(names) if self.cache.get(account_id, n) is None]
        if wait:
            if len(missing) >= 2:  # one record: get_memory's GetItem is the same one request
                self._read_many(account_id, missing)
            return
        if missing:
            read = self.threads.submit(partial(self._read_many, account_id, missing))
            with self._reading_lock:
                for name in missing:
                    self._reading[(account_id, name)] = read
            read.add_done_callback(partial(self._read_done, account_id, missing, read))

    def _read_many(self, account_id: str, names: Sequence[str]) -> None:
        keys = [(layout.account_pk(account_id), layout.memory_sk(n)) for n in names]
        for row in self.models.memory.batch_get(keys, consistent_read=True):
            self.cache.keep(_record(row, counts=False))

    def _read_done(self, account_id: str, names: Sequence[str], read: Future[None], _: Future[None]) -> None:
        with self._reading_lock:
            for name in names:
                if self._reading.get((account_id, name)) is read:
                    del self._reading[(account_id, name)]

    def _await_reads(self, account_id: str, names: Sequence[str]) -> None:
        """Wait for the reads of ``names`` sent ahead (``read_ahead(wait=False)``); one that failed is as if
        it had not been sent: the caller reads for itself, and a failure that lasts is its read's to report."""
        with self._reading_lock:
            reads = {self._reading[(account_id, n)] for n in names if (account_id, n) in self._reading}
        for read in reads:
            with suppress(Exception):
                read.result()

    def list_memories(
        self, account_id: str, now: str, *, trash: bool, user_id: str | None, include_account: bool
    ) -> list[MemoryRecord]:
        def in_scope(row: MemoryRow) -> bool:
            if include_account and row.user_id is None:
                return True
            if user_id is not None:
                return row.user_id == user_id
            return include_account and row.user_id is not None

        def in_state(row: MemoryRow) -> bool:
            if trash:
                return row.deleted_at is not None and row.purge_after is not None and row.purge_after > now
            return row.deleted_at is None

        rows = [
            row for row in self.models.memory.query(
                layout.account_pk(account_id), MemoryRow.sk.startswith(layout.MEMORY_PREFIX), consistent_read=True
            )
            if in_scope(row) and in_state(row)
        ]
        counts = self._entry_counts(rows, user_id, now)
        return [_record(row, counts[row.name]) for row in rows]

    def _entry_counts(self, rows: Sequence[MemoryRow], viewer: str | None, now: str) -> dict[str, int]:
        """Live counted entries of each memory in the layers ``viewer`` sees (every layer without one)."""
        if viewer is None:
            counts = {row.name: int(row.entry_total or 0) for row in rows}
        else:
            counts = {row.name: 0 for row in rows}
            by_pk = {layout.memory_pk(row.pk[len("A#"):], row.name): row.name for row in rows}
            keys = [(pk, layout.counter_sk(user)) for pk in by_pk for user in (None, viewer)]
            for counter in self.models.counter.batch_get(keys, consistent_read=True):
                counts[by_pk[counter.pk]] += int(counter.entries or 0)
        for row in rows:
            if row.expiry_seen:
                counts[row.name] -= self._expired(row, viewer, now)
        return counts

    def _expired(self, row: MemoryRow, viewer: str | None, now: str) -> int:
        """Counted entries past their expiry that TTL has not removed yet, in the layers ``viewer`` sees."""
        account_id = row.pk[len("A#"):]
        seen = None
        if viewer is not None:
            seen = EntryRow.pk.is_in(*(layout.layer_pk(Layer(account_id, row.name, u)) for u in (None, viewer)))
        return self.models.entry.count(
            layout.memory_pk(account_id, row.name), EntryRow.mx_sk < layout.up_to(now), filter_condition=seen,
            index_name=BY_MEMORY_EXPIRY,
        )

    def trash_memory(self, account_id: str, name: str, deleted_at: str, purge_after: str) -> MemoryRecord:
        self.cache.forget(account_id, name)
        row = self.models.memory(layout.account_pk(account_id), layout.memory_sk(name))
        try:
            row.update(
                actions=trash_actions(account_id, name, deleted_at, purge_after),
                # the attachments are re-checked by the write itself: an agent attaching meanwhile wins
                condition=MemoryRow.sk.exists() & MemoryRow.deleted_at.does_not_exist()
                & MemoryRow.attached.does_not_exist(),
            )
        except UpdateError as error:
            if error.cause_response_code != CONDITION_FAILED:
                raise
            current = self._row(account_id, name)
            if current is not None and current.deleted_at is None and current.attached:
                attached = sorted(current.attached)
                raise AttachedError(
                    f"memory {name!r} is attached to {', '.join(attached)}; detach it from them first",
                    attached_to=attached,
                ) from None
            raise NotFoundError(f"no memory named {name!r}") from None
        record = self.get_memory(account_id, name, deleted_at)
        assert record is not None
        return record

    def restore_memory(self, account_id: str, name: str, now: str) -> MemoryRecord:
        self.cache.forget(account_id, name)
        row = self._row(account_id, name)
        if row is None or (row.purge_after is not None and row.purge_after <= now):
            raise NotFoundError(f"no memory named {name!r} in the trash")
        if row.deleted_at is None:
            raise ConflictError(f"memory {name!r} is not in the trash")
        try:
            row.update(
                actions=restore_actions(),
                condition=MemoryRow.purge_after == row.purge_after,
            )
        except UpdateError as error:
            if error.cause_response_code != CONDITION_FAILED:
                raise
            raise NotFoundError(f"no memory named {name!r} in the trash") from None
        record = self.get_memory(account_id, name, now)
        assert record is not None
        return record

    def purge_due(self, now: str) -> int:
        purged = 0
        for due in self.models.memory.by_due.query(layout.TRASH, MemoryRow.due_sk < layout.up_to(now)):
            row = self._row(due.pk[len("A#"):], due.sk[len(layout.MEMORY_PREFIX):])
            if row is None or row.purge_after is None or row.purge_after > now:
                continue  # restored, or the index was behind
            self.cache.forget(row.pk[len("A#"):], row.name)
            purge_memory(self.models, row)
            purged += 1
        return purged

    def attach(self, account_id: str, memory: str, agent: str, writable: bool) -> None:
        row = self.models.memory(layout.account_pk(account_id), layout.memory_sk(memory))
        access = MemoryRow.writable.add({agent}) if writable else MemoryRow.writable.delete({agent})
        try:
            row.update(actions=[MemoryRow.attached.add({agent}), access], condition=MemoryRow.sk.exists())
        except UpdateError as error:
            if error.cause_response_code != CONDITION_FAILED:
                raise
            raise NotFoundError(f"no memory named {memory!r}") from None

    def detach(self, account_id: str, memory: str, agent: str) -> None:
        row = self.models.memory(layout.account_pk(account_id), layout.memory_sk(memory))
        try:
            row.update(
                actions=[MemoryRow.attached.delete({agent}), MemoryRow.writable.delete({agent})],
                condition=MemoryRow.sk.exists(),
            )
        except UpdateError as error:
            if error.cause_response_code != CONDITION_FAILED:
                raise
