"""What a context build reads of a layer on DynamoDB: only what the memory index and the pinned block show.

A layer's entries are read newest first from the by_layer_updated index, ``INDEX_READ`` at a time, only as
far as the index shows them (``LayerRead``). A layer read to its end answers everything from those rows, as a
small layer always is. Of a layer that is not, the build reads no more than that:

- **its count** from the layer's counter item (``CounterRow.entries``: its entries, expired or not), less its
  expired entries that TTL has not removed yet (a count of the by_memory_expiry index, keys only), less those
  a user's copy shadows (the user's layer's names looked up in this layer: ``existing_names``);
- **its pinned block's candidates** from the same counter item: it holds, for each entry that qualifies for
  the pinned block, an attribute ``pin:{name}`` with the entry's importance, ``updated_at`` and expiry
  (``layout.pin_value``), written in the transaction of every save, delete and removal that changes it. The
  block's entries' content is then read by key (``get_many``).

A counter written before the pins were kept has no ``pins_tracked``: the first build that needs its pins reads
the layer once with a consistent query, writes them, and marks it (``backfill_pins``), on the condition that no
write moved the counter's ``rev`` meanwhile (every change of a pin moves it).

Within one build (``EntryStore.context_reads``) each layer's reads are kept in the build's memo; ``prefetch``
starts them at once, with the counters (one BatchGetItem) and the expired counts of layers that were too large
to read whole last time, and the shadow lookups of the names the user's layer had then (``ContextHints``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pynamodb.attributes import BooleanAttribute
from pynamodb.expressions.operand import Path

from ....domain.context import best_for_pinning
from ....domain.models import Entry, Layer
from . import layout
from .entry_rows import live_filter, pin_of, to_entry
from .layer_space import counter_of, pin_actions
from .models import BoundModels, CounterRow, EntryRow
from .transactions import Cancelled, WriteSet

INDEX_READ = 100  # entries of a layer one request reads for the index (its first read, and each after)
SHADOW_LOOKUPS = 16  # a user's names looked up one by one in the account's layer; more: that layer is read whole
PIN_ACTIONS_A_WRITE = 100  # pins one update of a counter sets or removes (an update expression holds 4 KB)
HINTS_KEPT = 4096  # layers whose last build's shape this process remembers


@dataclass
class LayerRead:
    """A layer's live entries without checkpoints, newest first, as far as they were read; ``complete``: to
    its end."""

    rows: list[Entry] = field(default_factory=list)
    complete: bool = False


@dataclass(frozen=True)
class Counter:
    """A layer's counter item as read: its count, its ``rev``, and its pins (None: not kept for it yet)."""

    entries: int
    rev: int | None
    pins: dict[str, tuple[float, str, str | None]] | None

    @staticmethod
    def from_item(item: dict[str, Any] | None) -> Counter:
        if not item:
            return Counter(0, None, {})  # no counter: an empty layer, whose pins are known (none)
        pins = {
            name[len(layout.PIN_PREFIX):]: layout.parse_pin(value["S"])
            for name, value in item.items() if name.startswith(layout.PIN_PREFIX)
        }
        tracked = item.get(layout.PINS_TRACKED, {}).get("BOOL", False)
        return Counter(
            int(item.get("entries", {}).get("N", "0")),
            int(item["rev"]["N"]) if "rev" in item else None,
            pins if tracked else None,
        )


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
    def pinned(self, layer: Layer, counter: Counter, now: str, limit: int) -> list[Entry]:
        """The layer's best ``limit`` entries for the pinned block, without their content, from its counter's
        pins (read and kept first when the counter has none yet)."""
        pins = counter.pins if counter.pins is not None else self.backfill_pins(layer, now)
        return best_for_pinning((
            _pinned_entry(layer, name, importance, updated_at, expires_at)
            for name, (importance, updated_at, expires_at) in pins.items()
            if expires_at is None or expires_at > now
        ), limit)

    def backfill_pins(self, layer: Layer, now: str) -> dict[str, tuple[float, str, str | None]]:
        """The layer's pins read from its entries (one consistent query of its partition) and written to its
        counter, which is then marked ``pins_tracked``, unless a write moved the counter on meanwhile (the
        next build tries again). Returns the pins read."""
        counter = self.counters([layer], consistent=True)[layer]
        rows = self.models.entry.query(
            layout.layer_pk(layer), EntryRow.sk.startswith(layout.ENTRY_PREFIX),
            filter_condition=EntryRow.conversation.does_not_exist(), consistent_read=True,
        )
        values = {r.name: pin for r in rows if (pin := pin_of(r)) is not None}
        pins = {name: layout.parse_pin(value) for name, value in values.items()}
        if counter.rev is None:
            return pins  # no counter to keep them on: the layer has no entries (or is being purged)
        changes: dict[str, str | None] = dict(values)
        changes.update({name: None for name in (counter.pins or {}) if name not in values})
        self._write_pins(layer, changes, counter.rev)
        return pins

    def _write_pins(self, layer: Layer, changes: dict[str, str | None], rev: int) -> None:
        items = list(changes.items())
        chunks = [items[i:i + PIN_ACTIONS_A_WRITE] for i in range(0, len(items), PIN_ACTIONS_A_WRITE)] or [[]]
        counter = counter_of(self.models, layer)
        tracked = Path(BooleanAttribute(attr_name=layout.PINS_TRACKED))
        for n, chunk in enumerate(chunks):
            actions = [*pin_actions(dict(chunk)), CounterRow.rev.add(1)]
            if n == len(chunks) - 1:
                actions.append(tracked.set(True))
            writes = WriteSet(self.models.connection)
            writes.update("counter", counter, actions, CounterRow.rev == rev)
            try:
                writes.commit()
            except Cancelled:
                return  # a write changed the layer meanwhile: its pins are read again next time
            rev += 1


def _pinned_entry(layer: Layer, name: str, importance: float, updated_at: str, expires_at: str | None) -> Entry:
    """A pinned block candidate as its pin knows it: what the block is ordered by, no content (the build reads
    the entries it keeps by key)."""
    return Entry(
        name=name, description="", content=None, category="", importance=importance, visibility="read_only",
        version=0, updated_by="system", created_at=updated_at, updated_at=updated_at, expires_at=expires_at,
        memory=layer.memory, user_id=layer.user_id,
    )
