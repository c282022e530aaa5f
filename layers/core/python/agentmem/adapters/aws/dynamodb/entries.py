"""Entries on DynamoDB: versions checked by conditional writes, history and counters in the same transaction.

Round trips (requests to DynamoDB) of each operation of the store:

- ``save``: ONE ``TransactWriteItems`` — the entry Put (conditioned on the stored item being exactly the
  one the save was decided from — version, ``updated_at``, content hash — or absent), its history row
  Put, and on a create the layer counter (``entries < 500``) and the memory's total. Versions of a name
  never repeat: a create also checks (or takes over) the name's last version item ``V#{name}``, which a
  delete writes and an entry that may expire keeps up to date (TTL removes the entry item, not it), and
  continues after it. A cancelled transaction returns the stored items (``ALL_OLD``), so a conflict needs
  no second read.
  * a create (``version=0``, or no version and a new name): 1 request;
  * a create of a name whose entry is gone (deleted, or expired and removed) by a process that did not
    see it go: the create fails returning the name's last version, then lands after it: 2 transactions;
  * a save of an entry this process read or wrote lately (``SnapshotCache``; the entry service reads
    before most saves): 1 request, with or without a version;
  * ``version=N`` of an entry this process has not seen: ``GetItem`` + transaction, 2 requests;
  * no version, an existing entry this process has not seen: the create attempt fails returning the
    item, then the update: 2 transactions;
  * a version that does not match: ``VersionConflictError`` from the item the failed transaction (or
    the read) returned — never retried; a last-writer-wins save that lost a race tries again from the
    returned item (one more transaction per race lost);
  * a create into a full layer: + one query of the by_memory_expiry index, one transaction per 90
    expired entries removed, a ``GetItem`` and a COUNT query checking the counter, and the retry.
- ``delete``: ONE transaction (entry Delete conditioned like a save, history row, the name's last version,
  counters) when the entry is in the cache; else ``GetItem`` + transaction.
- ``purge_layer``: a consistent ``GetItem`` of the layer's counter, one consistent keys-only ``Query`` of
  the layer's partition (entries, history rows, last versions and pin items share it: a purge forgets them all) per
  MB of it, one ``BatchWriteItem`` per 25 items found (pynamodb's ``batch_write``, which resends
  unprocessed items), ONE transaction deleting
  the counter (conditioned on its ``rev`` as read) and taking what it held off the memory's
  ``entry_total``, then one more ``Query`` confirming the partition is empty. An empty or unknown layer:
  ``GetItem`` + ``Query``, 2 requests. A write racing the purge (the counter's condition fails, or the
  last query finds items) costs one more round of the same.
- ``get``: one consistent ``GetItem``.
- ``list_layer``: one ``Query`` of the by_layer_updated index per page (more only when expired rows,
  filtered out, leave the page short).
- ``history``: one consistent ``Query`` of the entry's history rows.
- ``search_candidates``: one consistent ``Query`` per layer per MB of the layer's entries.
- ``existing_names``: one ``BatchGetItem`` per 100 names.
- ``prefetch`` (a context build, inside ``context_reads``): each layer's first read (``context_index.py``): one
  ``Query`` of the by_layer_updated index for its newest 101 entries, or to its end for a user's layer beside
  the account's and for an account layer shadowed by many names; of the layers too large to read whole last
  time, the counters (one ``BatchGetItem``), a count of the by_memory_expiry index and a ``Query`` of the best
  pin items each, and the user's names looked up (``existing_names``); and the named entries' consistent
  ``GetItem`` (one ``BatchGetItem`` when there are several), all sent at once on the store's threads; the
  build's ``index_page``, ``index_count``, ``pinning_candidates``, ``get`` and ``get_many`` calls then wait for
  those answers instead of reading.
- A save or delete of an entry that qualifies for the pinned block (before or after) puts or deletes its pin
  items in its transaction (one or two more actions, no more requests).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from functools import partial
from itertools import islice
from typing import Any, Generic, TypeVar, cast

from pynamodb.expressions.condition import Condition

from ....domain.context import PINNED_MAX, best_for_pinning, qualifies_for_pinning
from ....domain.cursor import decode_cursor, encode_cursor
from ....domain.errors import ConflictError, InvalidError, LayerFullError, NotFoundError, VersionConflictError
from ....domain.models import Entry, EntryDraft, HistoryItem, Layer, Page
from ....ports.entries import EntryStore, context_memo
from . import context_index, layout
from .context_index import ContextHints, Counter, LayerIndexReads, LayerRead
from .entry_rows import (
    from_raw,
    history_row,
    is_counted,
    is_live,
    last_version_row,
    live_filter,
    merged_row,
    pin_row,
    to_entry,
    to_history_item,
    version_of,
)
from .io_threads import IoThreads
from .layer_space import LayerSpace, count_in_layer, count_in_memory, memory_is_live
from .models import BoundModels, EntryRow, HistoryRow, LastVersionRow
from .snapshots import Snapshot, SnapshotCache
from .transactions import Cancelled, WriteSet

_K = TypeVar("_K")
_T = TypeVar("_T")

MAX_WRITE_ATTEMPTS = 120  # with the backoff below, several seconds of contention before a save gives up


def _back_off(attempt: int) -> None:
    """Exponential backoff with full jitter (2 ms doubling, at most 100 ms): writers that keep colliding
    spread out instead of retrying in lockstep, so none of them starves."""
    time.sleep(random.uniform(0, min(0.1, 0.002 * 2 ** min(attempt, 6))))


def _stored_exactly(row: EntryRow | None) -> Condition:
    """The condition that the stored item is still ``row`` (the very write it was read from)."""
    if row is None:
        return EntryRow.sk.does_not_exist()
    return cast(Condition, (
        (EntryRow.version == row.version)
        & (EntryRow.updated_at == row.updated_at)
        & (EntryRow.content_hash == row.content_hash)
    ))


def _decode_listing_cursor(cursor: str) -> tuple[str, str]:
    value = decode_cursor(cursor)
    if not (isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value)):
        raise InvalidError("cursor is not one this service gave out", field="cursor")
    return value[0], value[1]


BATCH_GET = 100  # BatchGetItem's limit


class DynamoEntryStore(EntryStore):
    candidates_are_whole_layers = True  # search_candidates reads each layer whole (no word index in DynamoDB)

    def __init__(self, models: BoundModels, cache: SnapshotCache | None = None) -> None:
        self.models = models
        self.cache = cache or SnapshotCache()
        self.space = LayerSpace(models)
        # a context build's reads, sent at once (prefetch): per layer a listing, and a counter and an expired count
        self.threads = IoThreads(16)
        self.index = LayerIndexReads(models)
        self.hints = ContextHints()
        self.on_ttl_removed = self.space.on_ttl_removed  # the stream indexer's hook for TTL deletions

    # -- writes -----------------------------------------------------------------------------------------
    def save(
        self,
        layer: Layer,
        draft: EntryDraft,
        *,
        expected_version: int | None,
        now: str,
        keep_history_until: str,
        layer_limit: int,
    ) -> tuple[Entry, bool]:
        key = (layout.layer_pk(layer), layout.entry_sk(draft.name))
        snapshot = self.cache.get(key)
        if snapshot is None:
            # a create needs nothing stored: try it as one, the condition tells if it is not
            snapshot = Snapshot(None, fresh=False) if expected_version in (None, 0) else self._read(key)
        last_version = self.cache.last_version(key)  # the name's last version item, as believed (None: absent)
        freed = False
        for attempt in range(MAX_WRITE_ATTEMPTS):
            stored = snapshot.row
            live = stored if stored is not None and is_live(stored, now) else None
            current = int(live.version) if live is not None else 0
            if expected_version is not None and expected_version != current:
                if not snapshot.fresh:
                    snapshot = self._read(key)
                    continue
                raise VersionConflictError(
                    _conflict_message(draft.name, current, expected_version), current_version=current
                )
            if live is None and draft.description is None:
                if not snapshot.fresh:
                    snapshot = self._read(key)
                    continue
                raise InvalidError("description is required when the entry is new", field="description")
            # versions never repeat: the entry item's (expired or not), or what the name last reached
            after = int(stored.version) if stored is not None else last_version or 0
            row = merged_row(self.models, layer, draft, live, now, after=after)
            writes = WriteSet(self.models.connection)
            writes.put("entry", row, _stored_exactly(stored), all_old=True)
            self._keep_version(writes, layer, row, creating=stored is None, believed=last_version)
            writes.put("history", history_row(
                self.models, layer, row, "create" if live is None else "update", int(row.version), row.updated_by,
                now, keep_history_until,
            ))
            self._repin(writes, stored, row)
            delta = int(is_counted(row)) - int(stored is not None and is_counted(stored))
            if stored is None or delta:
                # a new item also registers its layer (a counter, even at 0), so a purge finds it
                count_in_layer(writes, self.models, layer, delta, limit=layer_limit if delta > 0 else None)
            expiring = row.expires_at is not None and is_counted(row)
            if delta or expiring:
                count_in_memory(writes, self.models, layer, delta, expiring=expiring, require_live=True)
            else:
                memory_is_live(writes, self.models, layer)
            try:
                writes.commit()
            except Cancelled as cancelled:
                if cancelled.contended:
                    _back_off(attempt)  # others kept the entry busy: wait a moment, then decide again
                    snapshot = self._read(key)
                    continue
                if cancelled.failed("last_version"):
                    # the name reached another version than believed: continue after the one it did
                    last_version = version_of(self.models, cancelled.old_item("last_version"))
                    self.cache.keep_last_version(key, last_version)
                if cancelled.failed("entry"):
                    # someone else wrote first: decide again from the item as it is now
                    snapshot = Snapshot(from_raw(self.models, cancelled.old_item("entry")), fresh=True)
                    self.cache.put(key, snapshot.row)
                    if attempt >= 2:
                        _back_off(attempt)
                    continue
                if cancelled.failed("last_version"):
                    continue
                if cancelled.failed("memory"):
                    raise NotFoundError(f"no memory named {layer.memory!r}") from None
                if cancelled.failed("counter"):
                    if not freed:
                        freed = True
                        self.space.free(layer, now)
                        continue
                    held = self.space.counted(cancelled.old_item("counter"))
                    raise LayerFullError(
                        f"this layer already holds {held} entries, the most it may; "
                        "delete one or use another layer",
                        limit=layer_limit,
                    ) from None
                raise
            self.cache.put(key, row)
            if stored is None or row.expires_at is not None:
                self.cache.keep_last_version(key, int(row.version) if row.expires_at is not None else None)
            return to_entry(row, with_content=False), live is None
        raise ConflictError(f"entry {draft.name!r} is being changed by too many writers at once; try again")

    def _repin(self, writes: WriteSet, stored: EntryRow | None, row: EntryRow | None) -> None:
        """The write's actions on the entry's pin item (``context_index.py``): the stored version's goes and the
        new one's comes, when either qualifies for the pinned block (their keys differ: ``updated_at`` moves)."""
        old = pin_row(self.models, stored) if stored is not None else None
        new = pin_row(self.models, row) if row is not None else None
        if old is not None and (new is None or new.sk != old.sk):
            writes.delete("unpin", old)
        if new is not None:
            writes.put("pin", new)

    def _keep_version(
        self, writes: WriteSet, layer: Layer, row: EntryRow, *, creating: bool, believed: int | None
    ) -> None:
        """The save's action on the name's last version item. An entry that may expire keeps its version
        there too (TTL removes the entry item, not that one); a new entry continues after the item as
        believed, on the condition that it still holds it, and takes it over (no expiry: the entry holds it).
        A failed condition returns the item, so the next try knows the version without a read."""
        mark = last_version_row(self.models, layer, row.name, int(row.version))
        if not creating:
            if row.expires_at is not None:
                writes.put("last_version", mark)
            return
        held = LastVersionRow.sk.does_not_exist() if believed is None else LastVersionRow.version == believed
        if row.expires_at is not None:
            writes.put("last_version", mark, held, all_old=True)
        elif believed is None:
            writes.check("last_version", self.models.last_version, mark.pk, mark.sk, held, all_old=True)
        else:
            writes.delete("last_version", mark, held, all_old=True)

    def delete(
        self,
        layer: Layer,
        name: str,
        *,
        expected_version: int | None,
        now: str,
        keep_history_until: str,
        updated_by: str,
        memory_live: bool = False,
    ) -> Entry:
        key = (layout.layer_pk(layer), layout.entry_sk(name))
        snapshot = self.cache.get(key)
        if snapshot is None or (snapshot.row is not None and snapshot.row.content is None):
            snapshot = self._read(key)
        for _attempt in range(MAX_WRITE_ATTEMPTS):
            stored = snapshot.row
            live = stored if stored is not None and is_live(stored, now) else None
            if live is None or (expected_version is not None and expected_version != int(live.version)):
                if not snapshot.fresh:
                    snapshot = self._read(key)
                    continue
                if live is None:
                    raise NotFoundError(f"no entry named {name!r} in this layer")
                current = int(live.version)
                raise VersionConflictError(
                    _conflict_message(name, current, expected_version or 0), current_version=current
                )
            writes = WriteSet(self.models.connection)
            writes.delete("entry", live, _stored_exactly(live), all_old=True)
            writes.put("history", history_row(
                self.models, layer, live, "delete", int(live.version) + 1, updated_by, now, keep_history_until,
            ))
            # the delete is a version of its own, and the next entry of the name continues after it
            writes.put("last_version", last_version_row(self.models, layer, name, int(live.version) + 1))
            self._repin(writes, live, None)
            if is_counted(live):
                count_in_layer(writes, self.models, layer, -1)
                count_in_memory(writes, self.models, layer, -1, require_live=memory_live)
            elif memory_live:
                memory_is_live(writes, self.models, layer)
            try:
                writes.commit()
            except Cancelled as cancelled:
                if cancelled.contended:
                    snapshot = self._read(key)
                    continue
                if cancelled.failed("entry"):
                    snapshot = Snapshot(from_raw(self.models, cancelled.old_item("entry")), fresh=True)
                    self.cache.put(key, snapshot.row)
                    continue
                if cancelled.failed("memory"):
                    raise NotFoundError(f"no memory named {layer.memory!r}") from None
                raise
            self.cache.put(key, None)
            self.cache.keep_last_version(key, int(live.version) + 1)
            return to_entry(live, with_content=False)
        raise ConflictError(f"entry {name!r} is being changed by too many writers at once; try again")

    def forget_history(self, layer: Layer, name: str) -> int:
        pk = layout.layer_pk(layer)
        keys = [(item.pk, item.sk) for item in self.models.history.query(
            pk, HistoryRow.sk.startswith(layout.history_prefix(name)), consistent_read=True,
            attributes_to_get=["PK", "SK"],
        )]
        if keys:
            with self.models.history.batch_write() as batch:
                for hash_key, range_key in keys:
                    batch.delete(self.models.history(hash_key, range_key))
        return len(keys)

    def purge_layer(self, layer: Layer) -> int:
        """Delete the layer's partition (entries, checkpoints, expired entries TTL has not removed yet, and
        history rows) in batches, then its counter with the memory's total (see ``LayerSpace.drop_counter``).

        The batches are not conditional: an entry written after the partition was read survives them. Such
        a write is caught afterwards: a create (or delete) moved the counter on, so its conditional delete
        fails, and an update of an entry left a history row that the confirming query finds; either way
        the purge goes round again. ``entry_total`` loses what the counter held (counted entries, expired
        or not, and TTL removals the stream has not counted out yet): that keeps it the sum of the
        memory's counters, whatever the partition held."""
        pk = layout.layer_pk(layer)
        counter = self.space.read_counter(layer)
        removed = 0
        for _attempt in range(MAX_WRITE_ATTEMPTS):
            keys = [(item.pk, item.sk) for item in self.models.row.query(
                pk, consistent_read=True, attributes_to_get=["PK", "SK"],
            )]
            if not keys and counter is None:
                return removed
            if keys:
                with self.models.row.batch_write() as batch:
                    for hash_key, range_key in keys:
                        batch.delete(self.models.row(hash_key, range_key))
                entries = [key for key in keys if key[1].startswith(layout.ENTRY_PREFIX)]
                self.cache.forget(entries)
                removed += len(entries)
            if counter is None:
                counter = self.space.read_counter(layer)  # a save raced the purge: it made a counter again
                if counter is None:
                    continue
            try:
                self.space.drop_counter(layer, counter)
            except Cancelled:
                counter = self.space.read_counter(layer)  # a write moved it on: delete what it made too
                continue
            counter = None
        raise ConflictError("this layer is being written by too many writers at once; try the purge again")

    # -- reads ------------------------------------------------------------------------------------------
    def _read(self, key: tuple[str, str]) -> Snapshot:
        try:
            row: EntryRow | None = self.models.entry.get(key[0], key[1], consistent_read=True)
        except self.models.entry.DoesNotExist:
            row = None
        self.cache.put(key, row)
        return Snapshot(row, fresh=True)

    def _read_batch(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Snapshot]:
        """``_read`` of many keys: one consistent BatchGetItem per 100."""
        rows: dict[tuple[str, str], EntryRow | None] = dict.fromkeys(keys)
        for start in range(0, len(keys), BATCH_GET):
            for found in self.models.entry.batch_get(keys[start : start + BATCH_GET], consistent_read=True):
                rows[(found.pk, found.sk)] = found
        for key, kept in rows.items():
            self.cache.put(key, kept)
        return {key: Snapshot(kept, fresh=True) for key, kept in rows.items()}

    def get(self, layer: Layer, name: str, now: str) -> Entry | None:
        key = (layout.layer_pk(layer), layout.entry_sk(name))
        memo = context_memo()
        ahead = memo.pop(("get", id(self), key), None) if memo is not None else None
        row = ahead.result().row if ahead is not None else self._read(key).row
        return to_entry(row, with_content=True) if row is not None and is_live(row, now) else None

    def get_many(self, keys: Sequence[tuple[Layer, str]], now: str) -> dict[tuple[Layer, str], Entry]:
        """One consistent BatchGetItem per 100 keys (``_read_batch``; pynamodb retries what comes back unprocessed)."""
        by_key = {(layout.layer_pk(layer), layout.entry_sk(name)): (layer, name) for layer, name in keys}
        found: dict[tuple[Layer, str], Entry] = {}
        wanted = []
        memo = context_memo()
        for key in by_key:  # those ``prefetch`` read are answered from its reads
            ahead = memo.pop(("get", id(self), key), None) if memo is not None else None
            if ahead is None:
                wanted.append(key)
            elif (row := ahead.result().row) is not None and is_live(row, now):
                found[by_key[key]] = to_entry(row, with_content=True)
        for key, snapshot in self._read_batch(wanted).items():
            if (row := snapshot.row) is not None and is_live(row, now):
                found[by_key[key]] = to_entry(row, with_content=True)
        return found

    def layers(self, account_id: str, memory: str) -> list[tuple[str | None, int]]:
        """The memory partition's counters (one consistent query): a counter records that its layer exists."""
        found: list[tuple[str | None, int]] = []
        for row in self.models.counter.query(
            layout.memory_pk(account_id, memory), self.models.counter.sk.startswith(layout.COUNTER_PREFIX),
            consistent_read=True,
        ):
            held = int(row.entries or 0)
            if held > 0:
                found.append((layout.user_of_suffix(row.sk[len(layout.COUNTER_PREFIX):]), held))
        return sorted(found, key=lambda layer: (layer[0] is not None, layer[0] or ""))

    def list_layer(self, layer: Layer, now: str, *, limit: int, cursor: str | None) -> Page:
        after = None
        if cursor:
            after = EntryRow.lu_sk < layout.listing_sk(*_decode_listing_cursor(cursor))
        rows = list(self.models.entry.by_layer_updated.query(
            layout.layer_pk(layer), range_key_condition=after, filter_condition=live_filter(now),
            scan_index_forward=False, limit=limit + 1, page_size=limit + 1,
        ))
        items = [to_entry(r, with_content=False) for r in rows[:limit]]
        more = len(rows) > limit
        return Page(items=items, next_cursor=encode_cursor([items[-1].updated_at, items[-1].name]) if more else None)

    # -- what a context build reads: only what it shows (context_index.py) ------------------------------
    def index_page(
        self, layer: Layer, now: str, *, limit: int, cursor: str | None, shadowed_by: Layer | None = None
    ) -> Page:
        read, hidden = self._shadowed_read(layer, shadowed_by, now)
        start = int(cursor) if cursor else 0  # (a cursor of this build's own pages)
        while True:
            shown = [e for e in read.rows if e.name not in hidden]
            if len(shown) > start + limit or read.complete:
                break
            self.index.more(layer, now, read)
        more = len(shown) > start + limit
        return Page(items=shown[start : start + limit], next_cursor=str(start + limit) if more else None)

    def index_count(self, layer: Layer, now: str, *, shadowed_by: Layer | None = None) -> int:
        read, hidden = self._shadowed_read(layer, shadowed_by, now)
        if read.complete:
            return sum(1 for e in read.rows if e.name not in hidden)
        held = self._counter(layer).entries
        expired = self._memo_or(("expired", id(self), layer, now), lambda: self.index.expired(layer, now))
        return max(0, held - expired - (self._shadowed(layer, hidden, read, now) if hidden else 0))

    def _shadowed_read(self, layer: Layer, shadowed_by: Layer | None, now: str) -> tuple[LayerRead, set[str]]:
        """The layer's read so far, and the names of ``shadowed_by`` (the user's layer, read to its end). With more
        of those than ``SHADOW_LOOKUPS``, the layer is read to its end too (one request per MB): looking each up
        would cost more (the next build sends that read ahead)."""
        read = self._layer_read(layer, now)
        if shadowed_by is None:
            return read, set()
        hidden = self._names(shadowed_by, now)
        many = len(hidden) > context_index.SHADOW_LOOKUPS
        if many and not read.complete:
            self.index.more(layer, now, read, to_the_end=True)
        self.hints.read_whole(layer, many)
        self.hints.saw_shadows(layer, () if many else sorted(hidden))
        return read, hidden

    def pinning_candidates(self, layer: Layer, now: str, *, limit: int) -> list[Entry]:
        read = self._layer_read(layer, now)
        if read.complete:
            return best_for_pinning((e for e in read.rows if qualifies_for_pinning(e)), limit)
        counter = self._counter(layer)
        if not counter.tracked:  # a layer from before the pin items: given them once
            return self.index.backfill_pins(layer, now, limit)
        return self._memo_or(("pins", id(self), layer, now, limit), lambda: self.index.pins(layer, now, limit))

    def prefetch(self, layers: Sequence[Layer], now: str, *, entries: Sequence[tuple[Layer, str]] = ()) -> None:
        memo = context_memo()
        if memo is None:
            return  # outside a context build nothing would keep the answers
        layers = list(dict.fromkeys(layers))
        large = []
        for layer in layers:
            listing = ("index", id(self), layer, now)
            if listing in memo:
                continue
            # a user's layer beside the account's (whose names it shadows: all are needed), or a layer whose
            # shadows were many last time, is read to its end; any other, its first entries
            shadowing = layer.user_id is not None and Layer(layer.account_id, layer.memory, None) in layers
            if shadowing or self.hints.whole(layer):
                memo[listing] = self.threads.submit(partial(self.index.whole, layer, now))
                continue
            memo[listing] = self.threads.submit(partial(self._first_read, layer, now))
            if self.hints.large(layer) and ("counter", id(self), layer) not in memo:
                large.append(layer)
        self._send_counts(large, now)
        for layer in large:  # the names of the user's layer that shadowed it last time, looked up in it
            names = self.hints.shadows(layer)
            if names and ("shadow", id(self), layer) not in memo:
                memo[("shadow", id(self), layer)] = (
                    set(names), self.threads.submit(partial(self.existing_names, layer, names, now))
                )
        keys = [key for key in dict.fromkeys((layout.layer_pk(layer), layout.entry_sk(name)) for layer, name in entries)
                if ("get", id(self), key) not in memo]
        if len(keys) == 1:
            memo[("get", id(self), keys[0])] = self.threads.submit(partial(self._read, keys[0]))
        elif keys:  # one BatchGetItem (per 100) for them all, each key answered from it
            read = self.threads.submit(partial(self._read_batch, keys))
            for key in keys:
                memo[("get", id(self), key)] = _PartOf(read, key)

    def _send_counts(self, layers: Sequence[Layer], now: str) -> None:
        """Start, in this build, what counts layers too large to read whole and what pins their entries: their
        counters (one BatchGetItem), expired counts and pin items, those not started yet."""
        memo = context_memo()
        if memo is None:
            return
        layers = [layer for layer in layers if ("counter", id(self), layer) not in memo]
        if not layers:
            return
        counters = self.threads.submit(partial(self.index.counters, layers))
        for layer in layers:
            memo[("counter", id(self), layer)] = _PartOf(counters, layer)
            memo[("expired", id(self), layer, now)] = self.threads.submit(partial(self.index.expired, layer, now))
            memo[("pins", id(self), layer, now, PINNED_MAX)] = self.threads.submit(
                partial(self.index.pins, layer, now, PINNED_MAX)
            )

    def _counter(self, layer: Layer) -> Counter:
        """The layer's counter in this build (sent ahead with the others, or read now)."""
        return self._memo_or(("counter", id(self), layer), lambda: self.index.counters([layer])[layer])

    def _first_read(self, layer: Layer, now: str) -> LayerRead:
        read = self.index.first(layer, now)
        self.hints.saw(layer, read)
        return read

    def _layer_read(self, layer: Layer, now: str) -> LayerRead:
        """The layer's rows read so far in this build (its first read, sent ahead or made now). When it is not
        read whole, what counts every such layer of the build is sent at once (unless it was sent ahead)."""
        read = self._memo_or(("index", id(self), layer, now), lambda: self._first_read(layer, now))
        if not read.complete:
            self._send_counts(self._not_read_whole(now), now)
        return read

    def _not_read_whole(self, now: str) -> list[Layer]:
        """The layers of this build whose first reads (all sent together) did not reach their end."""
        memo = context_memo() or {}
        keys = [key for key in memo if len(key) == 4 and key[0] == "index" and key[1] == id(self) and key[3] == now]
        return [key[2] for key in keys if not self._memo_or(key, lambda: LayerRead(complete=True)).complete]

    def _names(self, layer: Layer, now: str) -> set[str]:
        """Every live name of the layer (a user's layer, whose copies shadow the account's): read to its end."""
        read = self._layer_read(layer, now)
        if not read.complete:
            self.index.more(layer, now, read, to_the_end=True)
        return {e.name for e in read.rows}

    def _shadowed(self, layer: Layer, hidden: set[str], read: LayerRead, now: str) -> int:
        """How many of ``hidden`` (the user's layer's names) are live in ``layer``: those among its rows read so
        far, and the others looked up by key (those the last build looked up were sent ahead)."""
        seen = {e.name for e in read.rows} & hidden
        rest = hidden - seen
        memo = context_memo()
        ahead = memo.pop(("shadow", id(self), layer), None) if memo is not None else None
        asked, found = (ahead[0], ahead[1].result()) if ahead is not None else (set(), set())
        found = (found & rest) | (self.existing_names(layer, sorted(rest - asked), now) if rest - asked else set())
        return len(seen) + len(found)

    def _memo_or(self, key: tuple[Any, ...], read: Callable[[], _T]) -> _T:
        """This build's answer under ``key`` (sent ahead, or read before), or ``read()``'s, kept for the build."""
        memo = context_memo()
        if memo is None:
            return read()
        if key in memo:
            known = memo[key]
            if isinstance(known, Future | _PartOf):
                known = memo[key] = known.result()
            return cast(_T, known)
        found = memo[key] = read()
        return found

    def history(self, layer: Layer, name: str, now: str, *, limit: int | None = None) -> list[HistoryItem]:
        # newest first: the key orders an entry's runs by creation, each run's versions in order
        rows = self.models.history.query(
            layout.layer_pk(layer), HistoryRow.sk.startswith(layout.history_prefix(name)),
            filter_condition=HistoryRow.keep_until > now, consistent_read=True, scan_index_forward=False,
            page_size=limit,
        )
        return [to_history_item(r) for r in islice(rows, limit)]

    def existing_names(self, layer: Layer, names: Sequence[str], now: str) -> set[str]:
        pk = layout.layer_pk(layer)
        keys = [(pk, layout.entry_sk(n)) for n in dict.fromkeys(names)]
        rows = self.models.entry.batch_get(keys, consistent_read=True, attributes_to_get=["name", "expires_at"])
        return {r.name for r in rows if is_live(r, now)}

    def search_candidates(
        self, layers: Sequence[Layer], words: Sequence[str], whole: str, now: str, *, limit: int | None = None
    ) -> list[Entry]:
        # Every live entry of the layers (without checkpoints) is a candidate, whatever the limit; the domain
        # ranks them.
        # A word filter in DynamoDB would save no read capacity (filters apply after the read).
        if not words and not whole:
            return []
        found: list[Entry] = []
        for layer in layers:
            rows = self.models.entry.query(
                layout.layer_pk(layer), EntryRow.sk.startswith(layout.ENTRY_PREFIX),
                filter_condition=EntryRow.conversation.does_not_exist() & live_filter(now), consistent_read=True,
            )
            found += [to_entry(r, with_content=True) for r in rows]
        return found


class _PartOf(Generic[_K, _T]):
    """One key's answer of a batch read sent ahead (``prefetch``): ``result()`` as a single read's future."""

    def __init__(self, batch: Future[dict[_K, _T]], key: _K) -> None:
        self.batch = batch
        self.key = key

    def result(self) -> _T:
        return self.batch.result()[self.key]


def _conflict_message(name: str, current: int, sent: int) -> str:
    if current == 0:
        return f"entry {name!r} does not exist (you sent version {sent})"
    if sent == 0:
        return f"entry {name!r} already exists at version {current} (you asked that it must not exist)"
    return f"entry {name!r} is at version {current} (you sent {sent}); read it again and retry"
