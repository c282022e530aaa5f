"""DynamoDB Streams → the search index (SPEC §4.1, §6.2): entries and journal messages.

Entries: every change of an entry upserts or deletes its document. Checkpoints (an item carrying
``conversation``, or a ``context.*`` name) are never indexed (SPEC §4.4). An entry already past its
``expires_at`` is deleted from the index rather than upserted. An entry is ``PK =
A#{account}#M#{memory}#{L | U#{user}}``, ``SK = E#{name}``, with its fields as attributes; a REMOVE needs
only the keys.

Journal messages (journal search, SPEC §4.1): a message row (``PK = C#{account}#{agent}#{L | U#{user}}#{key}``,
``SK = MSG#{seq}``) is indexed when it is written, as a document of kind ``message``
(``adapters/aws/journal_index.py``). Its REMOVE is skipped: a row leaves the table when its message is sealed
into S3, and the message stays in the journal, so it stays findable. A purge ends with the REMOVE of the
conversation's record (``SK = META``): that one deletes the documents of every message the record counted
(seq 1 to its ``last_seq``). Every other item of the table (history rows, counters, memories, keys, usage,
idempotency and reference items) is skipped. Items are read as the DynamoDB adapter lays them out
(``adapters/aws/dynamodb/layout.py``).

Records are applied in stream order and the batch stops at the first failure: that record and every
later one are reported (partial batch response: the event source mapping has
``ReportBatchItemFailures``) and come back in order, so nothing is applied twice or out of order.

A REMOVE made by TTL (``userIdentity.principalId = dynamodb.amazonaws.com``) is also handed, as the raw
old image, to ``on_ttl_removed`` when one is given — the DynamoDB entry store's hook that counts the
expired entry out of its layer's counter. It runs last for its record.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

from agentmem.adapters.aws.dynamodb import layout
from agentmem.adapters.aws.journal_index import MessageLocation, message_doc_id, message_fields, searchable_text
from agentmem.bootstrap import get_container
from agentmem.domain.clock import Clock, iso, parse_iso, utcnow
from agentmem.observability import logger, tracer
from agentmem.ports.embedder import Embedder
from agentmem.ports.search_index import SearchIndex, entry_doc_id
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import (
    DynamoDBRecord,
    DynamoDBRecordEventName,
)
from aws_lambda_powertools.utilities.typing import LambdaContext

CHECKPOINT_PREFIX = "context."
TTL_PRINCIPAL = "dynamodb.amazonaws.com"
Action = Literal["upsert", "delete", "skip"]
TtlHook = Callable[[dict[str, Any]], object]


class SkippedAfterFailureError(Exception):
    """An earlier record of the batch failed: this one waits for the retry, to keep the stream's order."""


@dataclass(frozen=True)
class EntryKey:
    account: str
    memory: str
    user_id: str | None  # None: the account layer
    name: str

    @property
    def doc_id(self) -> str:
        return entry_doc_id(self.account, self.memory, self.user_id, self.name)


def entry_key(keys: Mapping[str, Any]) -> EntryKey | None:
    """The entry a table key names, or None when the item is not an entry."""
    pk, sk = keys.get("PK"), keys.get("SK")
    if not isinstance(pk, str) or not isinstance(sk, str) or not sk.startswith(layout.ENTRY_PREFIX):
        return None
    try:
        layer = layout.parse_layer_pk(pk)
    except ValueError:
        return None
    if layout.layer_pk(layer) != pk:  # not a layer's partition after all
        return None
    return EntryKey(layer.account_id, layer.memory, layer.user_id, sk[len(layout.ENTRY_PREFIX) :])


def _plain(value: Any) -> Any:
    """DynamoDB numbers come back as Decimal."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value


def entry_fields(key: EntryKey, item: Mapping[str, Any]) -> dict[str, Any]:
    """The index document of an entry item (``DOCUMENT_FIELDS`` of the search index port)."""
    fields: dict[str, Any] = {
        "kind": "entry",
        "account": key.account,
        "memory": key.memory,
        "user": key.user_id if key.user_id is not None else "",
        "name": key.name,
        "description": str(item.get("description") or ""),
        "content": str(item.get("content") or ""),
        "category": str(item.get("category") or "note"),
        "importance": float(_plain(item.get("importance", 0.5))),
        "version": int(_plain(item.get("version", 0))),
    }
    for moment in ("updated_at", "expires_at"):
        if item.get(moment):
            fields[moment] = str(item[moment])
    return fields


def entry_text(fields: Mapping[str, Any]) -> str:
    """What the vector stands for: the name, the one-line description and the content."""
    return "\n".join(str(fields.get(name) or "") for name in ("name", "description", "content"))


def _is_checkpoint(key: EntryKey, item: Mapping[str, Any]) -> bool:
    return key.name.startswith(CHECKPOINT_PREFIX) or bool(item.get("conversation"))


def _expired(item: Mapping[str, Any], now: str) -> bool:
    expires = item.get("expires_at")
    return bool(expires) and iso(parse_iso(str(expires))) <= now


def _removed_by_ttl(record: DynamoDBRecord) -> bool:
    identity = record.user_identity
    return identity.get("type") == "Service" and identity.get("principalId") == TTL_PRINCIPAL


def conversation_item(keys: Mapping[str, Any]) -> tuple[MessageLocation, str] | None:
    """(the conversation, with seq 0, and the item's sort key) when the table key is a conversation's item."""
    pk, sk = keys.get("PK"), keys.get("SK")
    if not isinstance(pk, str) or not isinstance(sk, str) or not pk.startswith(layout.CONVERSATION_PREFIX):
        return None
    try:
        account_id, agent, user_id, key = layout.parse_conversation_pk(pk)
    except ValueError:
        return None
    return MessageLocation(account_id, agent, user_id, key, 0), sk


def index_journal_record(record: DynamoDBRecord, where: MessageLocation, sk: str, index: SearchIndex,
                         embedder: Embedder) -> Action:
    """A message row written: its document; the conversation's record removed (a purge): every message's
    document goes. Anything else of a conversation is skipped."""
    stream = record.dynamodb
    assert stream is not None
    removed = record.event_name == DynamoDBRecordEventName.REMOVE
    if sk == layout.META_SK and removed:
        last = int(_plain(stream.old_image.get("last_seq") or 0))
        for seq in range(1, last + 1):
            index.delete(message_doc_id(where.account_id, where.agent, where.user_id, where.key, seq))
        return "delete" if last else "skip"
    if not sk.startswith(layout.MESSAGE_PREFIX) or removed:
        return "skip"  # a removed row was sealed into the journal bucket (or purged: see the record)
    item = stream.new_image
    seq = layout.message_seq(sk)
    located = MessageLocation(where.account_id, where.agent, where.user_id, where.key, seq)
    text = searchable_text(str(item.get("content") or ""), item.get("tool_name"))
    doc_id = message_doc_id(located.account_id, located.agent, located.user_id, located.key, seq)
    index.upsert(doc_id, message_fields(located, text, str(item.get("created_at") or "")), embedder.embed_one(text))
    return "upsert"


def index_record(
    record: DynamoDBRecord, index: SearchIndex, embedder: Embedder, now: str, on_ttl_removed: TtlHook | None = None
) -> Action:
    """Apply one stream record to the index; returns what it did."""
    stream = record.dynamodb
    if stream is None:
        return "skip"
    key = entry_key(stream.keys)
    if key is None:
        conversation = conversation_item(stream.keys)
        if conversation is None:
            return "skip"
        return index_journal_record(record, *conversation, index, embedder)
    if record.event_name == DynamoDBRecordEventName.REMOVE:
        action: Action = "skip"
        if not key.name.startswith(CHECKPOINT_PREFIX):
            index.delete(key.doc_id)
            action = "delete"
        old_image = stream.get("OldImage")
        if on_ttl_removed is not None and _removed_by_ttl(record) and old_image:
            on_ttl_removed(dict(old_image))
        return action
    item = stream.new_image
    if _is_checkpoint(key, item):
        return "skip"
    if _expired(item, now):
        index.delete(key.doc_id)
        return "delete"
    fields = entry_fields(key, item)
    index.upsert(key.doc_id, fields, embedder.embed_one(entry_text(fields)))
    return "upsert"


def handle(
    event: dict[str, Any],
    index: SearchIndex,
    embedder: Embedder,
    *,
    context: LambdaContext | None = None,
    clock: Clock = utcnow,
    on_ttl_removed: TtlHook | None = None,
) -> dict[str, Any]:
    """Index a batch of stream records; the answer lists the records to retry (the first failure onwards)."""
    now = iso(clock())
    done: Counter[str] = Counter()
    failed = False

    def record_handler(record: DynamoDBRecord) -> None:
        nonlocal failed
        if failed:
            raise SkippedAfterFailureError(record.event_id)
        try:
            done[index_record(record, index, embedder, now, on_ttl_removed)] += 1
        except Exception:
            failed = True
            raise

    processor = BatchProcessor(event_type=EventType.DynamoDBStreams, raise_on_entire_batch_failure=False)
    response = process_partial_response(event, record_handler, processor, context)
    failures = response.get("batchItemFailures", [])
    logger.info("stream batch indexed", extra={**done, "failed": len(failures)})
    return dict(response)


def _from_container() -> tuple[SearchIndex, Embedder, TtlHook | None]:
    container = get_container()
    index = container.search_index
    if index is None:
        raise RuntimeError("no search index is configured: set AGENTMEM_OPENSEARCH_ENDPOINT")
    # the DynamoDB entry store keeps its layer counters right when TTL removes an expired entry
    hook = getattr(container.stores.entries, "on_ttl_removed", None)
    return index, container.embedder, hook if callable(hook) else None


def _lambda(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    index, embedder, on_ttl_removed = _from_container()
    return handle(event, index, embedder, context=context, on_ttl_removed=on_ttl_removed)


_instrumented = logger.inject_lambda_context(clear_state=True)(
    tracer.capture_lambda_handler(_lambda, capture_response=False)
)


def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    result: dict[str, Any] = _instrumented(event, context)
    return result
