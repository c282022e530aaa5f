"""pynamodb models of the single table's items, and their binding to one table and one client.

The models below name no table: ``bind_models`` makes subclasses whose ``Meta.table_name`` is the
configured table, and hands every one of them the same boto3 client (made with ``client_config()``,
its endpoint from ``AWS_ENDPOINT_URL_DYNAMODB`` as botocore reads it), so several tables (one per test)
can live side by side in one process.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar, cast

from pynamodb.attributes import BooleanAttribute, NumberAttribute, UnicodeAttribute, UnicodeSetAttribute
from pynamodb.connection import Connection
from pynamodb.indexes import GlobalSecondaryIndex, IncludeProjection, KeysOnlyProjection
from pynamodb.models import Model

from .table import (
    BY_DUE,
    BY_LAYER_UPDATED,
    BY_MEMORY_EXPIRY,
    BY_TOOL_CALL,
    ENTRY_LISTING_ATTRIBUTES,
    TTL_ATTRIBUTE,
)


class TableRow(Model):
    """Any item of the table: string keys PK and SK. Queried alone, it reads keys only."""

    class Meta:
        table_name: str | None = None  # set by bind_models
        host = None

    pk = UnicodeAttribute(hash_key=True, attr_name="PK")
    sk = UnicodeAttribute(range_key=True, attr_name="SK")


class ByLayerUpdated(GlobalSecondaryIndex["EntryRow"]):  # type: ignore[no-untyped-call]
    class Meta:
        index_name = BY_LAYER_UPDATED
        projection = IncludeProjection(ENTRY_LISTING_ATTRIBUTES)

    pk = UnicodeAttribute(hash_key=True, attr_name="PK")
    lu_sk = UnicodeAttribute(range_key=True)


class ByMemoryExpiry(GlobalSecondaryIndex["EntryRow"]):  # type: ignore[no-untyped-call]
    class Meta:
        index_name = BY_MEMORY_EXPIRY
        projection = KeysOnlyProjection()

    mx_pk = UnicodeAttribute(hash_key=True)
    mx_sk = UnicodeAttribute(range_key=True)


class ByDue(GlobalSecondaryIndex["MemoryRow"]):  # type: ignore[no-untyped-call]
    class Meta:
        index_name = BY_DUE
        projection = KeysOnlyProjection()

    due_pk = UnicodeAttribute(hash_key=True)
    due_sk = UnicodeAttribute(range_key=True)


class AgentsByDue(GlobalSecondaryIndex["AgentRow"]):  # type: ignore[no-untyped-call]
    """The by_due index read from the agents' side (``due_pk`` ``TRASH#G``)."""

    class Meta:
        index_name = BY_DUE
        projection = KeysOnlyProjection()

    due_pk = UnicodeAttribute(hash_key=True)
    due_sk = UnicodeAttribute(range_key=True)


class EntryRow(TableRow):
    """One live (or expired, not yet removed) entry. ``user_id`` is absent in the account layer."""

    lu_sk = UnicodeAttribute(null=True)
    mx_pk = UnicodeAttribute(null=True)
    mx_sk = UnicodeAttribute(null=True)
    name = UnicodeAttribute()
    description = UnicodeAttribute()
    content = UnicodeAttribute(null=True)  # absent in list pages (the index leaves it out)
    category = UnicodeAttribute()
    importance = NumberAttribute()
    visibility = UnicodeAttribute()
    version = NumberAttribute()
    updated_by = UnicodeAttribute()
    created_at = UnicodeAttribute()
    updated_at = UnicodeAttribute()
    expires_at = UnicodeAttribute(null=True)
    conversation = UnicodeAttribute(null=True)
    content_hash = UnicodeAttribute()
    memory = UnicodeAttribute()
    user_id = UnicodeAttribute(null=True)
    ttl = NumberAttribute(null=True, attr_name=TTL_ATTRIBUTE)

    by_layer_updated = ByLayerUpdated()
    by_memory_expiry = ByMemoryExpiry()


class HistoryRow(TableRow):
    """A whole snapshot of one version of an entry, kept 30 days (``ttl`` at its keep time)."""

    name = UnicodeAttribute()
    version = NumberAttribute()
    operation = UnicodeAttribute()
    content_hash = UnicodeAttribute()
    updated_by = UnicodeAttribute()
    changed_at = UnicodeAttribute()
    description = UnicodeAttribute()
    content = UnicodeAttribute()
    keep_until = UnicodeAttribute()
    category = UnicodeAttribute()
    importance = NumberAttribute()
    visibility = UnicodeAttribute()
    created_at = UnicodeAttribute(null=True)
    expires_at = UnicodeAttribute(null=True)
    ttl = NumberAttribute(null=True, attr_name=TTL_ATTRIBUTE)


class LastVersionRow(TableRow):
    """The last version a name's entries reached, kept where the entry item may be gone (deleted, or removed
    by TTL once expired), so that the name's next entry continues after it: versions never repeat."""

    version = NumberAttribute()


class PinRow(TableRow):
    """An entry that qualifies for the pinned block, in the block's order (``layout.pin_sk``): what the order
    needs, and its expiry (TTL removes it with the entry)."""

    name = UnicodeAttribute()
    importance = NumberAttribute()
    updated_at = UnicodeAttribute()
    expires_at = UnicodeAttribute(null=True)
    ttl = NumberAttribute(null=True, attr_name=TTL_ATTRIBUTE)


class CounterRow(TableRow):
    """A layer's counter: how many counted entries (not checkpoints) it physically holds, expired or not.

    Its existence also records that the layer exists, so a purge finds every layer of a memory."""

    entries = NumberAttribute(default=0)
    rev = NumberAttribute(default=0)  # +1 on every change, so a recount can tell it raced nobody


class MemoryRow(TableRow):
    name = UnicodeAttribute()
    user_id = UnicodeAttribute(null=True)
    created_at = UnicodeAttribute()
    deleted_at = UnicodeAttribute(null=True)
    purge_after = UnicodeAttribute(null=True)
    due_pk = UnicodeAttribute(null=True)
    due_sk = UnicodeAttribute(null=True)
    entry_total = NumberAttribute(default=0)  # counted entries of every layer, expired or not
    expiry_seen = BooleanAttribute(null=True)  # some counted entry had an expiry: counts must look
    attached = UnicodeSetAttribute(null=True)  # agents attaching it (DynamoDB drops an emptied set)
    writable = UnicodeSetAttribute(null=True)  # those of them that attach it writable

    by_due = ByDue()


class AgentRow(TableRow):
    """An agent: the fields queries need, and its settings as one JSON document (``agent_settings``)."""

    name = UnicodeAttribute()
    user_id = UnicodeAttribute(null=True)
    version = NumberAttribute()
    settings = UnicodeAttribute()
    created_at = UnicodeAttribute()
    updated_at = UnicodeAttribute()
    deleted_at = UnicodeAttribute(null=True)
    purge_after = UnicodeAttribute(null=True)
    due_pk = UnicodeAttribute(null=True)
    due_sk = UnicodeAttribute(null=True)

    by_due = AgentsByDue()


class AccountRow(TableRow):
    """The account item, and (same fields) the item that holds its name unique."""

    account_id = UnicodeAttribute()
    name = UnicodeAttribute()
    created_at = UnicodeAttribute()


class KeyRow(TableRow):
    """An API key: under ``KEY#{hash}`` for the authorizer's GetItem, and in the account's key list."""

    key_id = UnicodeAttribute()
    account_id = UnicodeAttribute()
    kind = UnicodeAttribute()
    user_id = UnicodeAttribute(null=True)
    secret_hash = UnicodeAttribute()
    last4 = UnicodeAttribute()
    created_at = UnicodeAttribute()


class UsageRow(TableRow):
    uses = NumberAttribute(default=0)


class ConversationsByDue(GlobalSecondaryIndex["ConversationRow"]):  # type: ignore[no-untyped-call]
    """The by_due index read from the conversations' side (``due_pk`` ``DUE#C``)."""

    class Meta:
        index_name = BY_DUE
        projection = KeysOnlyProjection()

    due_pk = UnicodeAttribute(hash_key=True)
    due_sk = UnicodeAttribute(range_key=True)


class ByToolCall(GlobalSecondaryIndex["ToolPointerRow"]):  # type: ignore[no-untyped-call]
    class Meta:
        index_name = BY_TOOL_CALL
        projection = KeysOnlyProjection()

    pk = UnicodeAttribute(hash_key=True, attr_name="PK")
    tc_sk = UnicodeAttribute(range_key=True)


class ConversationRow(TableRow):
    """A conversation's record (``META``). ``rev`` moves on every write of it: an append is conditioned on
    the revision it computed from, so its counters, turn and seqs are never computed from a stale copy.
    ``incarnation`` tells this conversation from an earlier one purged under the same key (its sealed
    segments name it); ``purging`` marks a purge under way."""

    account_id = UnicodeAttribute()
    agent = UnicodeAttribute()
    user_id = UnicodeAttribute(null=True)
    key = UnicodeAttribute()
    incarnation = UnicodeAttribute()
    rev = NumberAttribute()
    created_at = UnicodeAttribute()
    updated_at = UnicodeAttribute()
    last_seq = NumberAttribute()
    last_turn = NumberAttribute()
    sealed_through = NumberAttribute(default=0)
    folded_through = NumberAttribute(default=0)
    forgotten_through = NumberAttribute(default=0)
    unfolded_tokens = NumberAttribute(default=0)
    unfolded_messages = NumberAttribute(default=0)
    window_messages = NumberAttribute(null=True)
    surface = UnicodeAttribute()
    due_since = UnicodeAttribute(null=True)
    deleted_at = UnicodeAttribute(null=True)
    purging = BooleanAttribute(null=True)
    passes = NumberAttribute(null=True)
    checkpoint_version = NumberAttribute(null=True)
    lines_by_hand = UnicodeAttribute(null=True)  # "<line id>@<when>", space-separated (absent: none)
    due_pk = UnicodeAttribute(null=True)
    due_sk = UnicodeAttribute(null=True)

    by_due = ConversationsByDue()


class MessageRow(TableRow):
    """One journal message while it is in the hot tail. ``arguments`` and ``result`` are JSON text;
    ``tc_sk`` (tool rows only) puts it in the by_tool_call index."""

    seq = NumberAttribute()
    turn = NumberAttribute()
    role = UnicodeAttribute()
    content = UnicodeAttribute()
    created_at = UnicodeAttribute()
    tool_name = UnicodeAttribute(null=True)
    tool_call_id = UnicodeAttribute(null=True)
    arguments = UnicodeAttribute(null=True)
    result = UnicodeAttribute(null=True)
    client_id = UnicodeAttribute(null=True)
    tokens = NumberAttribute(default=0)
    tc_sk = UnicodeAttribute(null=True)


class ClientIdRow(TableRow):
    """A client id the conversation holds, and the seq of its message: what makes a retried append idempotent."""

    seq = NumberAttribute()


class ToolPointerRow(TableRow):
    """Where a sealed tool row was (its seq), kept in the by_tool_call index after the row leaves the table."""

    seq = NumberAttribute(null=True)  # absent in index pages (keys only)
    tc_sk = UnicodeAttribute(null=True)

    by_tool_call = ByToolCall()


class ConversationRefRow(TableRow):
    """A conversation listed under its agent or its user: the keys say which."""


_M = TypeVar("_M", bound=Model)


def _bind(model: type[_M], table: str, region: str, client: Any) -> type[_M]:
    meta = type("Meta", (), {"table_name": table, "region": region, "host": None})
    bound = cast(type[_M], type(model.__name__, (model,), {"Meta": meta, "__module__": model.__module__}))
    # pynamodb makes its own botocore client; ours carries client_config() (retries, timeouts) and
    # the injected session's credentials. The connection uses the client it finds here.
    bound._get_connection().connection._client = client
    return bound


@dataclass(frozen=True)
class BoundModels:
    """The models bound to one table, and the connection transactions go through."""

    table: str
    entry: type[EntryRow]
    history: type[HistoryRow]
    last_version: type[LastVersionRow]
    counter: type[CounterRow]
    pin: type[PinRow]
    memory: type[MemoryRow]
    agent: type[AgentRow]
    account: type[AccountRow]
    key: type[KeyRow]
    usage: type[UsageRow]
    conversation: type[ConversationRow]
    message: type[MessageRow]
    client_id: type[ClientIdRow]
    tool_pointer: type[ToolPointerRow]
    conversation_ref: type[ConversationRefRow]
    row: type[TableRow]
    connection: Connection


def bind_models(table: str, region: str, client: Any) -> BoundModels:
    row = _bind(TableRow, table, region, client)
    return BoundModels(
        table=table,
        entry=_bind(EntryRow, table, region, client),
        history=_bind(HistoryRow, table, region, client),
        last_version=_bind(LastVersionRow, table, region, client),
        counter=_bind(CounterRow, table, region, client),
        pin=_bind(PinRow, table, region, client),
        memory=_bind(MemoryRow, table, region, client),
        agent=_bind(AgentRow, table, region, client),
        account=_bind(AccountRow, table, region, client),
        key=_bind(KeyRow, table, region, client),
        usage=_bind(UsageRow, table, region, client),
        conversation=_bind(ConversationRow, table, region, client),
        message=_bind(MessageRow, table, region, client),
        client_id=_bind(ClientIdRow, table, region, client),
        tool_pointer=_bind(ToolPointerRow, table, region, client),
        conversation_ref=_bind(ConversationRefRow, table, region, client),
        row=row,
        connection=row._get_connection().connection,
    )
