"""The DynamoDB layer counters, and versions, when TTL removes entries behind their back (DynamoDB Local).

TTL deletes an expired item some time after it expires, without the transaction that counts an entry
out. The stream's hook counts it out; a full layer recounts itself if the hook has not run. The name's
version is not lost with the item: an entry that may expire keeps it in the name's last version item.
"""

from __future__ import annotations

from typing import Any

import pytest
from agentmem.adapters.aws.dynamodb import DynamoDBStores, create_table, layout
from agentmem.adapters.aws.dynamodb.entries import DynamoEntryStore
from agentmem.adapters.aws.dynamodb.table import BY_DUE, BY_LAYER_UPDATED, BY_MEMORY_EXPIRY, BY_TOOL_CALL, TTL_ATTRIBUTE
from agentmem.domain.errors import LayerFullError
from agentmem.domain.models import EntryDraft
from agentmem.settings import Settings
from dynamodb_layer import LAYER, T0

LATER = "2026-03-02T12:00:00.000000Z"
EXPIRES = "2026-03-02T10:00:00.000000Z"
KEEP = "2026-04-02T09:00:00.000000Z"


def save(stores: DynamoDBStores, name: str, *, now: str = T0, limit: int = 500, **fields: Any) -> None:
    """Save ``name`` into the layer; ``fields``: the draft's others (expires_at, visibility, category, ...)."""
    draft = EntryDraft(name=name, content=f"{name} content", description=name, **fields)
    stores.entries.save(LAYER, draft, expected_version=None, now=now, keep_history_until=KEEP, layer_limit=limit)


def remove_as_ttl_would(stores: DynamoDBStores, name: str) -> dict[str, object]:
    """Delete the item outside any transaction, as TTL does; returns its old image (what the stream carries)."""
    key = {"PK": {"S": layout.layer_pk(LAYER)}, "SK": {"S": layout.entry_sk(name)}}
    old = stores.client.delete_item(TableName=stores.models.table, Key=key, ReturnValues="ALL_OLD")
    return dict(old["Attributes"])


def test_an_entry_removed_by_ttl_leaves_its_version_for_the_next(stores: DynamoDBStores) -> None:
    # Given "flash" saved to expire, changed twice (version 3), and removed by TTL after it expired
    for _ in range(3):
        save(stores, "flash", expires_at=EXPIRES)
    remove_as_ttl_would(stores, "flash")

    # When another process (nothing of it in memory) creates the name again, and changes it
    other = DynamoEntryStore(stores.models)
    draft = EntryDraft(name="flash", content="flash again", description="flash")
    again, created = other.save(LAYER, draft, expected_version=0, now=LATER, keep_history_until=KEEP, layer_limit=500)
    changed, _ = other.save(LAYER, draft, expected_version=None, now=LATER, keep_history_until=KEEP, layer_limit=500)

    # Then it continues at 4, then 5, never 1 again
    assert (created, again.version, changed.version) == (True, 4, 5)


def entry_count(stores: DynamoDBStores, now: str) -> int:
    record = stores.memories.get_memory(LAYER.account_id, LAYER.memory, now)
    assert record is not None
    return record.entry_count


def test_the_table_is_made_once_with_its_indexes_ttl_and_stream(adapters_table: DynamoDBStores) -> None:
    # Given the table the adapter made
    stores = adapters_table
    settings = Settings(backend="aws", table=stores.models.table)

    # When it is asked for again
    # Then it is left as it is
    assert create_table(settings, stores.client) is False
    described = stores.client.describe_table(TableName=settings.table)["Table"]
    assert {i["IndexName"] for i in described["GlobalSecondaryIndexes"]} == {
        BY_LAYER_UPDATED, BY_MEMORY_EXPIRY, BY_DUE, BY_TOOL_CALL,
    }
    assert described["StreamSpecification"] == {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}
    ttl = stores.client.describe_time_to_live(TableName=settings.table)["TimeToLiveDescription"]
    assert ttl["AttributeName"] == TTL_ATTRIBUTE


def test_an_entry_removed_by_ttl_is_counted_out_by_the_stream_hook(stores: DynamoDBStores) -> None:
    # Given two entries, one of which expired and was then removed by TTL
    save(stores, "lasting")
    save(stores, "flash", expires_at=EXPIRES)
    old_image = remove_as_ttl_would(stores, "flash")
    assert entry_count(stores, LATER) == 2  # the counters still hold the removed entry

    # When the stream hands the removal to the hook
    changed = stores.entries.space.on_ttl_removed(old_image)

    # Then the counts are right again; a record of anything but a counted entry changes nothing
    assert changed is True
    assert entry_count(stores, LATER) == 1
    assert stores.entries.space.on_ttl_removed({"SK": {"S": "H#flash#x"}}) is False


def test_a_full_layer_recounts_when_ttl_removed_entries_behind_its_back(stores: DynamoDBStores) -> None:
    # Given a layer limit of 3, filled with one entry that expired and that TTL removed without the hook
    save(stores, "one")
    save(stores, "two")
    save(stores, "flash", expires_at=EXPIRES)
    remove_as_ttl_would(stores, "flash")

    # When a new name is saved after the expiry
    save(stores, "three", now=LATER, limit=3)

    # Then it lands (the counter learnt the layer holds 2), the count is 3, and a fourth new name is refused
    assert entry_count(stores, LATER) == 3
    with pytest.raises(LayerFullError):
        save(stores, "four", now=LATER, limit=3)


def test_expired_entries_give_their_slots_back_in_one_go(stores: DynamoDBStores) -> None:
    # Given a layer limit of 3, filled with entries that have all expired (TTL has not removed them yet)
    for name in ("a", "b", "c"):
        save(stores, name, expires_at=EXPIRES)

    # When three new names are saved after the expiry
    for name in ("d", "e", "f"):
        save(stores, name, now=LATER, limit=3)

    # Then they all land, the expired entries are gone from the table, and the count is 3
    assert entry_count(stores, LATER) == 3
    assert stores.entries.get(LAYER, "a", T0) is None
    with pytest.raises(LayerFullError):
        save(stores, "g", now=LATER, limit=3)
