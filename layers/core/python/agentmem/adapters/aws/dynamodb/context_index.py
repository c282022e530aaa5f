"""What a context build reads of a layer on DynamoDB: only what the memory index and the pinned block show.

A layer's entries are read newest first from the by_layer_updated index, ``INDEX_READ`` at a time, only as
far as the index shows them (``LayerRead``). A layer read to its end answers everything from those rows, as a
small layer always is. Of a layer that is not, the build reads no more than that:

- **its count** from the layer's counter item (``CounterRow.entries``: its entries, expired or not), less its
  expired entries that TTL has not removed yet (a count of the by_memory_expiry index, keys only), less those
  a user's copy shadows (the user's layer's names looked up in this layer: ``existing_names``). The user's
  layer itself is read whole, for those names; when it holds more than ``SHADOW_LOOKUPS``, the layer it
  shadows is read whole too, which costs less than looking each up;
- **its pinned block's candidates** from its pin items: each entry that qualifies for the pinned block has one
  in its layer's partition (``P#…``, ``layout.pin_sk``), keyed in the block's order (importance, then newest,
  then name) and holding what that order needs and the expiry, written in the transaction of every save and
  delete that changes it (the old one goes, the new one comes), with the entry's TTL. One Query reads the best
  few; the block's entries' content is then read by key (``get_many``).

A layer whose counter is not marked ``pins_tracked`` holds entries saved before the pin items were kept: the first
build that needs its pins reads the layer once with a consistent query, writes the missing pin items (each on the
condition that its entry is still as read), takes off the pin items no entry holds, and marks the counter
(``backfill_pins``).

Within one build (``EntryStore.context_reads``) each layer's reads are kept in the build's memo; ``prefetch``
starts them at once, with the counters (one BatchGetItem), expired counts and pin items of layers that were too
large to read whole last time, and the shadow lookups of the names the user's layer had then (``ContextHints``). A
first build sends those of every layer its first reads found large at once, when the first of them is asked.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

from pynamodb.attributes import BooleanAttribute
from pynamodb.expressions.operand import Path

from ....domain.context import best_for_pinning
from ....domain.models import Entry, Layer
from . import layout
from .entry_rows import live_filter, pin_row, to_entry
from .layer_space import counter_of
from .models import BoundModels, CounterRow, EntryRow, PinRow
from .transactions import Cancelled, WriteSet

INDEX_READ = 100  # entries of a layer one request reads for the index (its first read, and each after)
SHADOW_LOOKUPS = 16  # a user's names looked up one by one in the account's layer; more: that layer is read whole
PIN_CHANGES_A_WRITE = 50  # pin items one transaction writes, each with its entry's condition (100 actions)
HINTS_KEPT = 4096  # layers whose last build's shape this process remembers


@dataclass
class LayerRead:
    """A layer's live entries without checkpoints, newest first, as far as they were read; ``complete``: to
    its end."""

    rows: list[Entry] = field(default_factory=list)
    complete: bool = False


@dataclass(frozen=True)
class Counter:
    """A layer's counter item as read: its count, and whether each qualifying entry has its pin item."""

    entries: int
    tracked: bool

    @staticmethod
    def from_item(item: dict[str, Any] | None) -> Counter:
        if not item:
            return Counter(0, True)  # no counter: an empty layer, whose pins are known (none)
        return Counter(int(item.get("entries", {}).get("N", "0")),
                       item.get(layout.PINS_TRACKED, {}).get("BOOL", False))


class ContextHints:
    """What this process saw of a layer at its last build: whether it was read whole, and the names of the
    user's layer that shadow it. Only a guess for ``prefetch``: a wrong one costs a request, never an answer."""

    def __init__(self) -> None:
        self._large: OrderedDict[Layer, None] = OrderedDict()
        self._whole: OrderedDict[Layer, None] = OrderedDict()
        self._shadows: OrderedDict[Layer, tuple[str, ...]] = OrderedDict()
        self._lock = threading.Lock()

    def large(self, layer: Layer) -> bool:
        with self._lock:
            return layer in self._large

    def saw(self, layer: Layer, read: LayerRead) -> None:
        with self._lock:
            if read.complete:
                self._large.pop(layer, None)
            else:
                _keep(self._large, layer, None)

    def whole(self, layer: Layer) -> bool:
        """Whether the layer was read to its end last time though it is large (its shadows were many)."""
        with self._lock:
            return layer in self._whole

    def read_whole(self, layer: Layer, whole: bool) -> None:
        with self._lock:
            if whole:
                _keep(self._whole, layer, None)
            else:
                self._whole.pop(layer, None)

    def shadows(self, layer: Layer) -> tuple[str, ...]:
        with self._lock:
            return self._shadows.get(layer, ())

    def saw_shadows(self, layer: Layer, names: Sequence[str]) -> None:
        with self._lock:
            _keep(self._shadows, layer, tuple(names))


def _keep(kept: OrderedDict[Any, Any], key: Any, value: Any) -> None:
    kept[key] = value
    kept.move_to_end(key)
    while len(kept) > HINTS_KEPT:
        kept.popitem(last=False)


class LayerIndexReads:
    """The reads above, against one table."""

    def __init__(self, models: BoundModels) -> None:
        self.models = models

    # -- a layer's listing, newest first ----------------------------------------------------------
    def first(self, layer: Layer, now: str) -> LayerRead:
        read = LayerRead()
        self.more(layer, now, read)
        return read

    def more(self, layer: Layer, now: str, read: LayerRead, *, to_the_end: bool = False) -> None:
        """Read the next ``INDEX_READ`` entries of the layer into ``read`` (pages of its by_layer_updated index
        until that many live ones came, or its end); ``to_the_end``: all the rest, one request per MB."""
        after = None
        if read.rows:
            last = read.rows[-1]
            after = EntryRow.lu_sk < layout.listing_sk(last.updated_at, last.name)
        limit = None if to_the_end else INDEX_READ + 1  # (one more tells whether more follow)
        # checkpoints (which the index holds for the layer's own listing) and expired entries are left out
        rows = list(self.models.entry.by_layer_updated.query(
            layout.layer_pk(layer), range_key_condition=after,
            filter_condition=EntryRow.conversation.does_not_exist() & live_filter(now),
            scan_index_forward=False, limit=limit, page_size=limit,
        ))
        read.rows += [to_entry(r, with_content=False) for r in rows]
        read.complete = limit is None or len(rows) < limit

    def whole(self, layer: Layer, now: str) -> LayerRead:
        read = LayerRead()
        self.more(layer, now, read, to_the_end=True)
        return read

    # -- the counter ------------------------------------------------------------------------------
    def counters(self, layers: Sequence[Layer], *, consistent: bool = False) -> dict[Layer, Counter]:
        """The layers' counters, one BatchGetItem per 100."""
        keys = {(layout.memory_pk(layer.account_id, layer.memory), layout.counter_sk(layer.user_id)): layer
                for layer in dict.fromkeys(layers)}
        found: dict[Layer, Counter] = dict.fromkeys(keys.values(), Counter.from_item(None))
        wanted = [{"PK": {"S": pk}, "SK": {"S": sk}} for pk, sk in keys]
        while wanted:
            request = {self.models.table: {"Keys": wanted[:100], "ConsistentRead": consistent}}
            answer = self.models.connection.dispatch("BatchGetItem", {"RequestItems": request})
            for item in answer.get("Responses", {}).get(self.models.table, []):
                found[keys[(item["PK"]["S"], item["SK"]["S"])]] = Counter.from_item(item)
            wanted = wanted[100:] + answer.get("UnprocessedKeys", {}).get(self.models.table, {}).get("Keys", [])
        return found

    def expired(self, layer: Layer, now: str) -> int:
        """How many of the layer's counted entries have expired and are still held (TTL has not removed them)."""
        return int(self.models.entry.by_memory_expiry.count(
            layout.memory_pk(layer.account_id, layer.memory), EntryRow.mx_sk < layout.up_to(now),
            filter_condition=EntryRow.pk == layout.layer_pk(layer),
        ))

    # -- the pins ---------------------------------------------------------------------------------
    def pins(self, layer: Layer, now: str, limit: int) -> list[Entry]:
        """The layer's best ``limit`` live entries for the pinned block, without their content, from their pin
        items (one Query: they are stored in the block's order)."""
        rows = self.models.pin.query(
            layout.layer_pk(layer), PinRow.sk.startswith(layout.PIN_PREFIX),
            filter_condition=live_filter(now, PinRow.expires_at),
            limit=limit, page_size=limit,
        )
        return [_pinned_entry(layer, r.name, float(r.importance), r.updated_at, r.expires_at) for r in rows]

    def backfill_pins(self, layer: Layer, now: str, limit: int) -> list[Entry]:
        """Give each qualifying entry of a layer whose counter is not ``pins_tracked`` its pin item, take off any
        pin item no entry holds, and mark the counter (one consistent query of the entries and one of the pins,
        once per layer); each write is conditioned on the entry being as read (a save since writes its own).
        Returns the best ``limit`` candidates as read."""
        rows = list(self.models.entry.query(
            layout.layer_pk(layer), EntryRow.sk.startswith(layout.ENTRY_PREFIX),
            filter_condition=EntryRow.conversation.does_not_exist(), consistent_read=True,
        ))
        held = {p.sk: p for p in self.models.pin.query(
            layout.layer_pk(layer), PinRow.sk.startswith(layout.PIN_PREFIX), consistent_read=True,
        )}
        by_name = {r.name: r for r in rows}
        wanted = {pin.sk: (pin, by_name[pin.name]) for r in rows if (pin := pin_row(self.models, r)) is not None}
        changes: list[tuple[EntryRow | None, str, PinRow, bool]] = [
            (row, row.name, pin, True) for sk, (pin, row) in wanted.items() if sk not in held
        ]
        changes += [(by_name.get(pin.name), pin.name, pin, False) for sk, pin in held.items() if sk not in wanted]
        for start in range(0, len(changes), PIN_CHANGES_A_WRITE):
            self._write_pins(layer, changes[start:start + PIN_CHANGES_A_WRITE])
        with suppress(Cancelled):
            writes = WriteSet(self.models.connection)
            writes.update("counter", counter_of(self.models, layer),
                          [Path(BooleanAttribute(attr_name=layout.PINS_TRACKED)).set(True)], CounterRow.sk.exists())
            writes.commit()
        return best_for_pinning(
            (to_entry(pin_row_of, with_content=False) for _, (_, pin_row_of) in wanted.items()
             if pin_row_of.expires_at is None or pin_row_of.expires_at > now), limit)

    def _write_pins(self, layer: Layer, changes: Sequence[tuple[EntryRow | None, str, PinRow, bool]]) -> None:
        """Put (``True``) or delete pin items, each on the condition that its entry is as read (absent: still
        absent): in one transaction, or one by one when a condition fails."""
        writes = WriteSet(self.models.connection)
        for n, (row, name, pin, put) in enumerate(changes):
            unchanged = EntryRow.version == row.version if row is not None else EntryRow.sk.does_not_exist()
            writes.check(f"entry{n}", self.models.entry, layout.layer_pk(layer), layout.entry_sk(name), unchanged)
            if put:
                writes.put(f"pin{n}", pin)
            else:
                writes.delete(f"pin{n}", pin)
        try:
            writes.commit()
        except Cancelled:
            if len(changes) > 1:
                for change in changes:
                    self._write_pins(layer, [change])


def _pinned_entry(layer: Layer, name: str, importance: float, updated_at: str, expires_at: str | None) -> Entry:
    """A pinned block candidate as its pin knows it: what the block is ordered by, no content (the build reads
    the entries it keeps by key)."""
    return Entry(
        name=name, description="", content=None, category="", importance=importance, visibility="read_only",
        version=0, updated_by="system", created_at=updated_at, updated_at=updated_at, expires_at=expires_at,
        memory=layer.memory, user_id=layer.user_id,
    )
