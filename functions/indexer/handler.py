"""DynamoDB Streams → the search index (SPEC §4.1, §6.2): entries and journal messages.

Entries: every change of an entry upserts or deletes its document. Checkpoints (an item carrying
``conversation``, or a ``context.*`` name) are never indexed (SPEC §4.4). An entry already past its
``expires_at`` is deleted from the index rather than upserted. An entry is ``PK =
A#{account}#M#{memory}#{L | U#{user}}``, ``SK = E#{name}``, with its fields as attributes; a REMOVE needs
only the keys.

Journal messages (journal search, SPEC §4.1): a message row (``PK = C#{account}#{agent}#{L | U#{user}}#{key}``,
``SK = MSG#{seq}``) is indexed when it is written, as a document of kind ``message`` with the message's own
fields (``adapters/aws/journal_index.py``). Its REMOVE is skipped: a row leaves the table when its message is
sealed into S3, and the message stays in the journal, so it stays findable. A purge ends with the REMOVE of
the conversation's record (``SK = META``): that one deletes the documents of every message the record
counted (seq 1 to its ``last_seq``). Every other item of the table (history rows, counters, memories, keys,
usage, idempotency and reference items) is skipped. Items are read as the DynamoDB adapter lays them out
(``adapters/aws/dynamodb/layout.py``).

Every document records the embedder that made its vector (``embedder``: ``Embedder.name``), so a vector
query can keep to one embedder's vectors.

Records are read in stream order into one set of writes, the last change of a document winning, which goes
to the index together: one ``embed`` call, one ``upsert_many`` and one ``delete_many`` (on OpenSearch, a
lookup and a ``_bulk`` each) — a hundred records cost a few requests, not two hundred. A message longer than a
passage (``domain/passages.py``) is written with its passages nested in its document (OpenSearch): their texts
are embedded in the same call, and they go in the same bulk. When that fails, the
records' writes are applied one record at a time, in order, to find the failing one. The first use of the
index in a process creates it when it is missing (the OpenSearch adapter sets up before its first write).
The batch stops at the first failure: that record and every later one are reported (partial batch
response: the event source mapping has ``ReportBatchItemFailures``) and come back in order; the records
before it are applied, and every write is idempotent, so one applied again is harmless.

A REMOVE made by TTL (``userIdentity.principalId = dynamodb.amazonaws.com``) is also handed, as the raw
old image, to ``on_ttl_removed`` when one is given — the DynamoDB entry store's hook that counts the
expired entry out of its layer's counter. It runs last for its record: the writes gathered so far (its own
included) are applied first, and a record whose hook ran is never reported.

A deployment without a search collection (``agentmem:searchCollection=false``: no index configured) still
subscribes this function to the stream, filtered down to TTL removals: then it only hands each one to the hook
(``count_ttl_removals``), and a hook that fails has that record and the later ones retried.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from agentmem.adapters.aws.dynamodb import layout
from agentmem.adapters.aws.entry_documents import (
    CHECKPOINT_PREFIX,
    entry_fields,
    entry_key,
    entry_text,
    is_checkpoint,
    is_expired,
    plain,
)
from agentmem.adapters.aws.journal_index import (
    MessageLocation,
    message_doc_id,
    message_fields,
    searchable_text,
    upsert_documents,
)
from agentmem.bootstrap import get_container
from agentmem.domain.clock import Clock, iso, utcnow
from agentmem.invocation import entry_point
from agentmem.observability import logger
from agentmem.ports.embedder import Embedder
from agentmem.ports.search_index import SearchIndex, check_document
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import (
    DynamoDBRecord,
    DynamoDBRecordEventName,
)
from aws_lambda_powertools.utilities.typing import LambdaContext

TTL_PRINCIPAL = "dynamodb.amazonaws.com"
Action = Literal["upsert", "delete", "skip"]
TtlHook = Callable[[dict[str, Any]], object]


@dataclass(frozen=True)
class Upsert:
    """A document to write; ``text`` is what its vector stands for (embedded when the batch is applied)."""

    doc_id: str
    fields: Mapping[str, Any]
    text: str


@dataclass(frozen=True)
class Delete:
    doc_id: str


Write = Upsert | Delete


@dataclass(frozen=True)
class Plan:
    """What one record does to the index, and the old image to hand to the TTL hook (if any)."""

    action: Action
    writes: Sequence[Write] = ()
    ttl_image: dict[str, Any] | None = None


SKIP = Plan("skip")


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


def plan_journal_record(record: DynamoDBRecord, where: MessageLocation, sk: str, embedder: str) -> Plan:
    """A message row written: its document; the conversation's record removed (a purge): every message's
    document goes. Anything else of a conversation is skipped."""
    stream = record.dynamodb
    assert stream is not None
    removed = record.event_name == DynamoDBRecordEventName.REMOVE
    if sk == layout.META_SK and removed:
        last = int(plain(stream.old_image.get("last_seq") or 0))
        gone = [Delete(message_doc_id(where.account_id, where.agent, where.user_id, where.key, seq))
                for seq in range(1, last + 1)]
        return Plan("delete", gone) if gone else SKIP
    if not sk.startswith(layout.MESSAGE_PREFIX) or removed:
        return SKIP  # a removed row was sealed into the journal bucket (or purged: see the record)
    item = stream.new_image
    seq = layout.message_seq(sk)
    located = MessageLocation(where.account_id, where.agent, where.user_id, where.key, seq)
    text = searchable_text(str(item.get("content") or ""), item.get("tool_name"))
    fields = message_fields(located, text, str(item.get("created_at") or ""), role=str(item.get("role") or ""),
                            embedder=embedder)
    doc_id = message_doc_id(located.account_id, located.agent, located.user_id, located.key, seq)
    return Plan("upsert", [Upsert(doc_id, fields, text)])


def plan_record(record: DynamoDBRecord, now: str, embedder: str) -> Plan:
    """What one stream record does to the index."""
    stream = record.dynamodb
    if stream is None:
        return SKIP
    key = entry_key(stream.keys)
    if key is None:
        conversation = conversation_item(stream.keys)
        if conversation is None:
            return SKIP
        return plan_journal_record(record, *conversation, embedder)
    if record.event_name == DynamoDBRecordEventName.REMOVE:
        old_image = stream.get("OldImage")
        ttl_image = dict(old_image) if _removed_by_ttl(record) and old_image else None
        if key.name.startswith(CHECKPOINT_PREFIX):
            return Plan("skip", (), ttl_image)
        return Plan("delete", [Delete(key.doc_id)], ttl_image)
    item = stream.new_image
    if is_checkpoint(key, item):
        return SKIP
    if is_expired(item, now):
        return Plan("delete", [Delete(key.doc_id)])
    fields = entry_fields(key, item, embedder)
    return Plan("upsert", [Upsert(key.doc_id, fields, entry_text(fields))])


class RecordNotIndexedError(Exception):
    """The writes of the record at ``position`` (in the batch) failed; the records before it are applied."""

    def __init__(self, position: int) -> None:
        super().__init__(position)
        self.position = position


@dataclass
class PendingWrites:
    """The writes of the records read so far, the last of each document winning, applied together."""

    index: SearchIndex
    embedder: Embedder
    writes: dict[str, Write] = field(default_factory=dict)
    by_record: list[tuple[int, Sequence[Write]]] = field(default_factory=list)

    @property
    def first(self) -> int | None:
        """The position of the first record whose writes are not applied yet."""
        return self.by_record[0][0] if self.by_record else None

    def add(self, position: int, writes: Sequence[Write]) -> None:
        for write in writes:
            if isinstance(write, Upsert):
                check_document(write.fields)  # a bad record fails alone, before the batch's writes
        for write in writes:
            self.writes.pop(write.doc_id, None)
            self.writes[write.doc_id] = write
        if writes:
            self.by_record.append((position, writes))

    def apply(self) -> None:
        """All together; when that fails, record by record in stream order, to find the one that fails
        (``RecordNotIndexedError``) — a transient failure then passes, and an index that is down costs one
        more attempt, not one per record."""
        try:
            self._write(list(self.writes.values()))
        except Exception:
            logger.exception("stream batch not indexed together: retrying record by record")
            for position, writes in self.by_record:
                try:
                    self._write(writes)
                except Exception as error:
                    raise RecordNotIndexedError(position) from error
        self.writes.clear()
        self.by_record.clear()

    def _write(self, writes: Sequence[Write]) -> None:
        upserts = [w for w in writes if isinstance(w, Upsert)]
        deletes = [w.doc_id for w in writes if isinstance(w, Delete)]
        if upserts:  # a long message's passages are embedded in the same call, written in the same bulk
            upsert_documents(self.index, self.embedder, [(w.doc_id, w.fields, w.text) for w in upserts])
        if deletes:
            self.index.delete_many(deletes)


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
    records = [DynamoDBRecord(raw) for raw in event.get("Records", [])]
    pending = PendingWrites(index, embedder)
    actions: list[Action] = []
    failed_at: int | None = None
    for position, record in enumerate(records):
        try:
            plan = plan_record(record, now, embedder.name)
            pending.add(position, plan.writes)
            if plan.ttl_image is not None and on_ttl_removed is not None:
                pending.apply()  # the hook runs last for its record
                on_ttl_removed(plan.ttl_image)
        except RecordNotIndexedError as error:  # the records before it are applied; it and the rest wait
            logger.exception("stream record not indexed", extra={"event_id": records[error.position].event_id})
            return _answer(records, actions, error.position)
        except Exception:
            logger.exception("stream record not indexed", extra={"event_id": record.event_id})
            failed_at = position
            break
        actions.append(plan.action)
    try:
        pending.apply()  # every record read (before the one that failed, if one did)
    except RecordNotIndexedError as error:
        logger.exception("stream record not indexed", extra={"event_id": records[error.position].event_id})
        failed_at = error.position
    return _answer(records, actions, failed_at)


def _answer(records: Sequence[DynamoDBRecord], actions: Sequence[Action], failed_at: int | None) -> dict[str, Any]:
    """The partial batch response: the records from ``failed_at`` on are retried."""
    failures = [] if failed_at is None else [_item_identifier(record) for record in records[failed_at:]]
    logger.info("stream batch indexed", extra={**Counter(actions[:failed_at]), "failed": len(failures)})
    return {"batchItemFailures": failures}


def _item_identifier(record: DynamoDBRecord) -> dict[str, str]:
    """What the partial batch response names a record by: its sequence number."""
    stream = record.dynamodb
    sequence = stream.sequence_number if stream is not None else None
    return {"itemIdentifier": sequence or record.event_id or ""}


def count_ttl_removals(event: dict[str, Any], on_ttl_removed: TtlHook, *, clock: Clock = utcnow) -> dict[str, Any]:
    """Without a search index: hand every entry TTL removed to the hook, in stream order; the first that fails
    is reported with the records after it."""
    now = iso(clock())
    records = [DynamoDBRecord(raw) for raw in event.get("Records", [])]
    actions: list[Action] = []
    for position, record in enumerate(records):
        try:
            plan = plan_record(record, now, "")
            if plan.ttl_image is not None:
                on_ttl_removed(plan.ttl_image)
        except Exception:
            logger.exception("TTL removal not counted", extra={"event_id": record.event_id})
            return _answer(records, actions, position)
        actions.append("skip")  # nothing is indexed
    return _answer(records, actions, None)


def _from_container() -> tuple[SearchIndex | None, Embedder | None, TtlHook | None]:
    container = get_container()
    index = container.search_index
    embedder = container.embedder
    if index is not None and embedder is None:
        raise RuntimeError("no embedder is configured: the indexer writes a vector with every document")
    # the DynamoDB entry store keeps its layer counters right when TTL removes an expired entry
    hook = getattr(container.stores.entries, "on_ttl_removed", None)
    return index, embedder, hook if callable(hook) else None


def _lambda(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    index, embedder, on_ttl_removed = _from_container()
    if index is None or embedder is None:  # no collection: only TTL removals reach this function
        if on_ttl_removed is None:
            raise RuntimeError("no search index is configured (AGENTMEM_OPENSEARCH_ENDPOINT) and the entry "
                               "store counts no TTL removals: this function has nothing to do")
        return count_ttl_removals(event, on_ttl_removed)
    return handle(event, index, embedder, context=context, on_ttl_removed=on_ttl_removed)


_instrumented = entry_point(_lambda)


def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    result: dict[str, Any] = _instrumented(event, context)
    return result
