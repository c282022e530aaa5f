"""The one DynamoDB table of agentmem: its key schema, indexes, TTL and stream, defined once.

The CDK stack mirrors these constants (``TABLE_KEYS``, ``INDEXES``, ``TTL_ATTRIBUTE``, ``STREAM_VIEW``);
``create_table`` makes the same table on an emulator or a fresh account (``serve --create-resources``).

Indexes (all sparse: an item is in an index only when it carries the index's sort key):

- ``by_layer_updated`` — ``PK`` (the layer) + ``lu_sk`` (``{updated_at}#{name, inverted}``): a layer's
  entries newest first without their content (list pages, the memory index, the pinned block).
- ``by_memory_expiry`` — ``mx_pk`` (the memory) + ``mx_sk`` (``{expires_at}#{layer}#{name}``): counted
  entries that expire, so counts can leave out what has expired and a full layer can free its
  expired slots without reading the layer.
- ``by_due`` — ``due_pk`` (``TRASH`` for memories, ``TRASH#G`` for agents, ``DUE#C`` for conversations) +
  ``due_sk`` (``{purge_after}#{account}#{name}``, or ``{due_since}#{conversation key}``): trashed memories
  and agents by the time they are purged, and conversations over their summary threshold by the time they
  went over, so each store's sweep is a query of its own partition, not a scan.
- ``by_tool_call`` — ``PK`` (the conversation) + ``tc_sk`` (``{hash of the tool call id}#{seq}``): the
  journal rows of one tool call (the call and its result), on the row while it is hot and on a small
  pointer item once the row is sealed into S3, so ``tool_messages`` reads a few keys, not the journal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ....settings import Settings

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

PARTITION_KEY = "PK"
SORT_KEY = "SK"
TTL_ATTRIBUTE = "ttl"  # epoch seconds; DynamoDB deletes the item some time after it passes
STREAM_VIEW = "NEW_AND_OLD_IMAGES"
BILLING_MODE = "PAY_PER_REQUEST"

BY_LAYER_UPDATED = "by_layer_updated"
BY_MEMORY_EXPIRY = "by_memory_expiry"
BY_DUE = "by_due"
BY_TOOL_CALL = "by_tool_call"

# what a list page shows of an entry: everything but the content
ENTRY_LISTING_ATTRIBUTES = [
    "name", "description", "category", "importance", "visibility", "version", "updated_by", "created_at",
    "updated_at", "expires_at", "conversation", "content_hash", "memory", "user_id",
]

TABLE_KEYS: list[dict[str, str]] = [
    {"AttributeName": PARTITION_KEY, "KeyType": "HASH"},
    {"AttributeName": SORT_KEY, "KeyType": "RANGE"},
]

INDEXES: list[dict[str, Any]] = [
    {
        "IndexName": BY_LAYER_UPDATED,
        "KeySchema": [
            {"AttributeName": PARTITION_KEY, "KeyType": "HASH"},
            {"AttributeName": "lu_sk", "KeyType": "RANGE"},
        ],
        "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ENTRY_LISTING_ATTRIBUTES},
    },
    {
        "IndexName": BY_MEMORY_EXPIRY,
        "KeySchema": [
            {"AttributeName": "mx_pk", "KeyType": "HASH"},
            {"AttributeName": "mx_sk", "KeyType": "RANGE"},
        ],
        "Projection": {"ProjectionType": "KEYS_ONLY"},
    },
    {
        "IndexName": BY_DUE,
        "KeySchema": [
            {"AttributeName": "due_pk", "KeyType": "HASH"},
            {"AttributeName": "due_sk", "KeyType": "RANGE"},
        ],
        "Projection": {"ProjectionType": "KEYS_ONLY"},
    },
    {
        "IndexName": BY_TOOL_CALL,
        "KeySchema": [
            {"AttributeName": PARTITION_KEY, "KeyType": "HASH"},
            {"AttributeName": "tc_sk", "KeyType": "RANGE"},
        ],
        "Projection": {"ProjectionType": "KEYS_ONLY"},
    },
]

# every key attribute of the table and its indexes is a string
KEY_ATTRIBUTES = sorted({key["AttributeName"] for key in TABLE_KEYS} | {
    key["AttributeName"] for index in INDEXES for key in index["KeySchema"]
})


def table_definition(table_name: str) -> dict[str, Any]:
    """CreateTable's arguments for the table named ``table_name``."""
    return {
        "TableName": table_name,
        "BillingMode": BILLING_MODE,
        "AttributeDefinitions": [{"AttributeName": name, "AttributeType": "S"} for name in KEY_ATTRIBUTES],
        "KeySchema": TABLE_KEYS,
        "GlobalSecondaryIndexes": INDEXES,
        "StreamSpecification": {"StreamEnabled": True, "StreamViewType": STREAM_VIEW},
    }


def create_table(settings: Settings, client: DynamoDBClient) -> bool:
    """Create the table ``settings.table`` (indexes, stream, TTL) unless it exists; True when it was created.

    ``client`` is a boto3 DynamoDB client made with ``client_config()``.
    """
    table_name = settings.table
    try:
        client.create_table(**table_definition(table_name))
    except client.exceptions.ResourceInUseException:
        return False
    client.get_waiter("table_exists").wait(TableName=table_name, WaiterConfig={"Delay": 1, "MaxAttempts": 120})
    client.update_time_to_live(
        TableName=table_name, TimeToLiveSpecification={"Enabled": True, "AttributeName": TTL_ATTRIBUTE}
    )
    return True
