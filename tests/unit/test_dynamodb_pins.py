"""The pin items of DynamoDB layers (``context_index.py``), on DynamoDB Local.

The context build of a layer too large to read whole takes its pinned block's candidates from its pin items: one
per entry that qualifies, in the block's order, written in the transaction of every save and delete that changes
it. These tests hold every path that changes a pin to it, and the layers saved before pin items were kept (no
``pins_tracked`` on their counter) to their one-time backfill.
"""

from __future__ import annotations

from typing import Any

import pytest
from agentmem.adapters.aws.dynamodb import DynamoDBStores, context_index, layout
from agentmem.adapters.aws.dynamodb.entries import DynamoEntryStore
from agentmem.adapters.aws.dynamodb.models import PinRow
from agentmem.ports.entries import EntryStore
from dynamodb_layer import LAYER, T0
from test_dynamodb_counters import EXPIRES, KEEP, LATER, save

T1 = "2026-03-02T09:00:01.000000Z"


def pins(stores: DynamoDBStores) -> list[tuple[str, float, str]]:
    """The layer's pin items, in key order: (name, importance, updated_at)."""
    rows = stores.models.pin.query(layout.layer_pk(LAYER), PinRow.sk.startswith(layout.PIN_PREFIX),
                                   consistent_read=True)
    return [(r.name, float(r.importance), r.updated_at) for r in rows]


def tracked(stores: DynamoDBStores) -> bool:
    return stores.entries.index.counters([LAYER], consistent=True)[LAYER].tracked


def candidates(store: EntryStore, now: str = T1) -> list[str]:
    with store.context_reads():
        return [e.name for e in store.pinning_candidates(LAYER, now, limit=10)]


def as_before_pins_were_kept(stores: DynamoDBStores) -> None:
    """The layer as a version that kept no pin items left it: none, and no ``pins_tracked`` on its counter."""
    for pin in stores.models.pin.query(layout.layer_pk(LAYER), PinRow.sk.startswith(layout.PIN_PREFIX)):
        pin.delete()
    key = {"PK": {"S": layout.memory_pk(LAYER.account_id, LAYER.memory)}, "SK": {"S": layout.counter_sk(None)}}
    stores.client.update_item(TableName=stores.models.table, Key=key, UpdateExpression="REMOVE #t",
                              ExpressionAttributeNames={"#t": layout.PINS_TRACKED})


def test_pin_keys_order_as_the_pinned_block_does() -> None:
    keys = [layout.pin_sk(1.0, T0, "b"), layout.pin_sk(0.9, T1, "a"), layout.pin_sk(0.9, T0, "a"),
            layout.pin_sk(0.9, T0, "b"), layout.pin_sk(0.7000001, LATER, "z"), layout.pin_sk(0.7, LATER, "a"),
            layout.pin_sk(0.0, LATER, "a"), layout.pin_sk(-0.0, T0, "a")]
    assert keys == sorted(keys)


def test_every_save_and_delete_keeps_the_pin_items_of_the_entries_that_qualify(stores: DynamoDBStores) -> None:
    # When entries become pinnable, change, stop qualifying and go
    save(stores, "plain")
    save(stores, "policy", visibility="read_only")
    save(stores, "profile", category="user_profile", importance=0.9)
    save(stores, "low", category="user_profile", importance=0.5)
    assert [p[0] for p in pins(stores)] == ["profile", "policy"]
    save(stores, "profile", category="user_profile", importance=0.8, now=T1)
    assert pins(stores) == [("profile", 0.8, T1), ("policy", 0.5, T0)]
    save(stores, "policy", visibility="shared", now=T1)  # no longer read_only
    save(stores, "low", category="user_profile", importance=0.75, now=T1)
    assert [p[0] for p in pins(stores)] == ["profile", "low"]
    stores.entries.delete(LAYER, "low", expected_version=None, now=T1, keep_history_until=KEEP, updated_by="api")

    # Then the layer holds exactly one pin item per entry that qualifies now, with its order's keys
    assert pins(stores) == [("profile", 0.8, T1)]


def test_a_large_layer_offers_its_pinned_entries_from_its_pin_items_never_an_expired_one(
    stores: DynamoDBStores, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a layer larger than one read, with pinned entries old and new, one of them expired
    monkeypatch.setattr(context_index, "INDEX_READ", 2)
    for n in range(6):
        save(stores, f"note-{n}", now=T1)
    save(stores, "old-policy", visibility="read_only")
    save(stores, "profile", category="user_profile", importance=0.9)
    save(stores, "gone", visibility="read_only", expires_at=EXPIRES)
    # (its first build marks the counter: every entry already had its pin item)
    assert candidates(stores.entries, LATER) == ["profile", "old-policy"] and tracked(stores)

    # When a new process builds, reading them from the pin items alone
    monkeypatch.setattr(context_index.LayerIndexReads, "backfill_pins", None)  # (it must not be needed)
    other = DynamoEntryStore(stores.models)

    # Then it offers the live pinned entries in the block's order
    assert candidates(other, LATER) == ["profile", "old-policy"]


def test_a_layer_from_before_pin_items_gets_them_once(stores: DynamoDBStores, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a large layer with pinned entries, as a version that kept no pin items left it, and a stray pin item
    monkeypatch.setattr(context_index, "INDEX_READ", 2)
    for n in range(4):
        save(stores, f"note-{n}")
    save(stores, "policy", visibility="read_only")
    save(stores, "profile", category="user_profile", importance=0.9)
    as_before_pins_were_kept(stores)
    stray = stores.models.pin(layout.layer_pk(LAYER), layout.pin_sk(1.0, T0, "long-gone"))
    stray.name, stray.importance, stray.updated_at = "long-gone", 1.0, T0
    stray.save()
    assert not tracked(stores)

    # When a build asks for its candidates
    first = candidates(DynamoEntryStore(stores.models))

    # Then they are right, the layer has exactly its pin items, and its counter is marked
    assert first == ["profile", "policy"]
    assert [p[0] for p in pins(stores)] == ["profile", "policy"] and tracked(stores)


def test_a_backfill_leaves_alone_a_pin_a_save_wrote_meanwhile(
    stores: DynamoDBStores, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a layer from before pin items, whose pinned entry is saved again while the backfill runs
    save(stores, "policy", visibility="read_only")
    as_before_pins_were_kept(stores)
    reads = stores.entries.index
    write_pins = reads._write_pins

    def raced(layer: Any, changes: Any) -> None:
        save(stores, "policy", visibility="read_only", now=T1)  # after the backfill read the entry
        write_pins(layer, changes)

    monkeypatch.setattr(reads, "_write_pins", raced)
    reads.backfill_pins(LAYER, T1, 10)

    # Then the save's pin item stands, and the backfill's (of the version it read) was refused
    assert pins(stores) == [("policy", 0.5, T1)]
