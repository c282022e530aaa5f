"""The DynamoDB table's keys and global secondary indexes, as the CDK declares them.

The adapter's table module (``agentmem.adapters.aws.dynamodb.table``) is the one definition: this
module only turns its constants into what the CDK construct needs, so the deployed table is the table
the adapter (and ``agentmem serve --backend aws --create-resources``) expects. No CDK import.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from agentmem.adapters.aws.dynamodb import table as adapter_table

Projection = Literal["ALL", "KEYS_ONLY", "INCLUDE"]
KeyType = Literal["S", "N"]


@dataclass(frozen=True)
class GlobalIndex:
    name: str
    partition_key: str
    sort_key: str | None
    projection: Projection = "ALL"
    non_key_attributes: tuple[str, ...] = ()
    partition_key_type: KeyType = "S"
    sort_key_type: KeyType = "S"


PARTITION_KEY: str = adapter_table.PARTITION_KEY
SORT_KEY: str = adapter_table.SORT_KEY
TTL_ATTRIBUTE: str = adapter_table.TTL_ATTRIBUTE
STREAM_VIEW: str = adapter_table.STREAM_VIEW
BILLING_MODE: str = adapter_table.BILLING_MODE


def _key(schema: list[dict[str, str]], kind: str) -> str | None:
    return next((key["AttributeName"] for key in schema if key["KeyType"] == kind), None)


def _index(definition: dict[str, Any]) -> GlobalIndex:
    partition_key = _key(definition["KeySchema"], "HASH")
    assert partition_key is not None, definition
    projection = definition["Projection"]
    return GlobalIndex(
        name=definition["IndexName"],
        partition_key=partition_key,
        sort_key=_key(definition["KeySchema"], "RANGE"),
        projection=projection["ProjectionType"],
        non_key_attributes=tuple(projection.get("NonKeyAttributes", ())),
    )


def _table_keys_match() -> None:
    keys = adapter_table.TABLE_KEYS
    if _key(keys, "HASH") != PARTITION_KEY or _key(keys, "RANGE") != SORT_KEY:
        raise ValueError(f"the adapter's TABLE_KEYS {keys} disagree with PARTITION_KEY/SORT_KEY")


_table_keys_match()
TABLE_GSIS: tuple[GlobalIndex, ...] = tuple(_index(index) for index in adapter_table.INDEXES)


def gsi_names() -> tuple[str, ...]:
    return tuple(index.name for index in TABLE_GSIS)
