"""The pins a DynamoDB layer counter keeps for the pinned block (``context_index.py``), on DynamoDB Local.

The context build of a layer too large to read whole takes its pinned block's candidates from the layer's counter:
one attribute per entry that qualifies, written in the transaction of every save, delete and removal that changes
it. These tests hold every path that changes a pin to it, and the counters written before pins were kept (no
``pins_tracked``) to their one-time backfill.
"""

from __future__ import annotations

from typing import Any

import pytest
from agentmem.adapters.aws.dynamodb import DynamoDBStores, context_index, layout
from agentmem.adapters.aws.dynamodb.entries import DynamoEntryStore
from agentmem.domain.models import EntryDraft, Visibility
from agentmem.ports.entries import EntryStore
from dynamodb_layer import LAYER, T0
from test_dynamodb_counters import EXPIRES, KEEP, LATER

T1 = "2026-03-02T09:00:01.000000Z"

def save(stores: DynamoDBStores, name: str, *, visibility: Visibility = "shared", category: str | None = None,
         importance: float | None = None, expires_at: str | None = None, now: str = T0) -> None:
    draft = EntryDraft(name=name, content=f"{name} content", description=name, visibility=visibility,
                       category=category, importance=importance, expires_at=expires_at)
    stores.entries.save(LAYER, draft, expected_version=None, now=now, keep_history_until=KEEP, layer_limit=500)


def pins(stores: DynamoDBStores) -> dict[str, tuple[float, str, str | None]] | None:
    return stores.entries.index.counters([LAYER], consistent=True)[LAYER].pins


def counter_item(stores: DynamoDBStores) -> dict[str, Any]:
    key = {"PK": {"S": layout.memory_pk(LAYER.account_id, LAYER.memory)}, "SK": {"S": layout.counter_sk(None)}}
    item: dict[str, Any] = stores.client.get_item(TableName=stores.models.table, Key=key, ConsistentRead=True)["Item"]
    return item


def as_before_pins_were_kept(stores: DynamoDBStores) -> None:
    """The counter as a version that kept no pins left it: no pin attributes, no ``pins_tracked``."""
    item = counter_item(stores)
    gone = [name for name in item if name.startswith(layout.PIN_PREFIX) or name == layout.PINS_TRACKED]
    stores.client.update_item(
        TableName=stores.models.table, Key={"PK": item["PK"], "SK": item["SK"]},
        UpdateExpression="REMOVE " + ", ".join(f"#a{n}" for n in range(len(gone))),
        ExpressionAttributeNames={f"#a{n}": name for n, name in enumerate(gone)},
    )


def candidates(store: EntryStore, now: str = T1) -> list[str]:
    with store.context_reads():
        return [e.name for e in store.pinning_candidates(LAYER, now, limit=10)]


def test_every_save_and_delete_keeps_the_pins_of_the_entries_that_qualify(stores: DynamoDBStores) -> None:
    # Given a counter that keeps pins (the first build marked it)
    save(stores, "plain")
    stores.entries.index.backfill_pins(LAYER, T0)
    assert pins(stores) == {}

    # When entries become pinnable, change, stop qualifying and go
    save(stores, "policy", visibility="read_only")
    save(stores, "profile", category="user_profile", importance=0.9)
    save(stores, "low", category="user_profile", importance=0.5)
    assert set(pins(stores) or {}) == {"policy", "profile"}
    save(stores, "profile", category="user_profile", importance=0.8, now=T1)
    assert (pins(stores) or {})["profile"] == (0.8, T1, None)
    save(stores, "policy", visibility="shared", now=T1)  # no longer read_only
    save(stores, "low", category="user_profile", importance=0.75, now=T1)
    assert set(pins(stores) or {}) == {"profile", "low"}
    stores.entries.delete(LAYER, "low", expected_version=None, now=T1, keep_history_until=KEEP, updated_by="api")

    # Then the counter holds exactly the pins of the entries that qualify now, with their order's keys
    assert pins(stores) == {"profile": (0.8, T1, None)}


def test_a_ttl_removal_takes_its_pin_off_but_not_the_pin_of_a_later_save(stores: DynamoDBStores) -> None:
    # Given two pinned entries that expire, removed by TTL; one name saved again before the stream's record came
    save(stores, "flash", visibility="read_only", expires_at=EXPIRES)
    save(stores, "again", visibility="read_only", expires_at=EXPIRES)
    stores.entries.index.backfill_pins(LAYER, T0)
    images = {}
    for name in ("flash", "again"):
        key = {"PK": {"S": layout.layer_pk(LAYER)}, "SK": {"S": layout.entry_sk(name)}}
        images[name] = stores.client.delete_item(TableName=stores.models.table, Key=key, ReturnValues="ALL_OLD")
    save(stores, "again", visibility="read_only", now=LATER)

    # When the hook gets both removals
    for image in images.values():
        assert stores.entries.space.on_ttl_removed(dict(image["Attributes"])) is True

    # Then the removed entry's pin is gone and the new entry's stays
    assert pins(stores) == {"again": (0.5, LATER, None)}


def test_expired_slots_given_back_take_their_pins_with_them(stores: DynamoDBStores) -> None:
    save(stores, "flash", visibility="read_only", expires_at=EXPIRES)
    save(stores, "kept", visibility="read_only")
    stores.entries.index.backfill_pins(LAYER, T0)
    stores.entries.space.free(LAYER, LATER)
    assert set(pins(stores) or {}) == {"kept"}


def test_a_large_layer_offers_its_pinned_entries_from_its_counter_never_an_expired_one(
    stores: DynamoDBStores, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a layer larger than one read, with pinned entries old and new, one of them expired
    monkeypatch.setattr(context_index, "INDEX_READ", 2)
    for n in range(6):
        save(stores, f"note-{n}", now=T1)
    save(stores, "old-policy", visibility="read_only")
    save(stores, "profile", category="user_profile", importance=0.9)
    save(stores, "gone", visibility="read_only", expires_at=EXPIRES)

    # When a build after the expiry asks for the candidates (the counter has no pins yet: the first build keeps them)
    first = candidates(stores.entries, LATER)
    item = counter_item(stores)

    # Then they are the live pinned entries in the block's order, and the counter now keeps them
    assert first == ["profile", "old-policy"]
    assert item[layout.PINS_TRACKED] == {"BOOL": True}
    assert {n for n in item if n.startswith(layout.PIN_PREFIX)} == {"pin:old-policy", "pin:profile", "pin:gone"}
    # and a new process, reading them from the counter alone, offers the same
    other = DynamoEntryStore(stores.models)
    assert candidates(other, LATER) == first


def test_a_counter_written_before_pins_were_kept_is_filled_once_unless_a_write_races_it(
    stores: DynamoDBStores, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a large layer with a pinned entry, its counter as an older version left it
    monkeypatch.setattr(context_index, "INDEX_READ", 2)
    for n in range(4):
        save(stores, f"note-{n}")
    save(stores, "policy", visibility="read_only")
    as_before_pins_were_kept(stores)
    assert pins(stores) is None

    # When a save lands between the backfill's read of the counter and its write
    reads = stores.entries.index
    counters = reads.counters

    def raced(layers: Any, *, consistent: bool = False) -> Any:
        found = counters(layers, consistent=consistent)
        save(stores, "profile", category="user_profile", importance=0.9, now=T1)
        return found

    monkeypatch.setattr(reads, "counters", raced)
    reads.backfill_pins(LAYER, T1)
    monkeypatch.setattr(reads, "counters", counters)

    # Then the counter is not marked (its pins may miss the racing save), and the next build fills it right
    assert pins(stores) is None
    assert candidates(DynamoEntryStore(stores.models)) == ["profile", "policy"]
    assert set(pins(stores) or {}) == {"profile", "policy"}
