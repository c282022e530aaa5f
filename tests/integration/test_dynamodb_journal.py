"""The DynamoDB conversation store with its journal sealed into S3: DynamoDB Local and moto's S3 server.

What only the AWS backend has, counted with botocore's event hooks (one count per HTTP request sent):
an append is one transaction when the process knows the conversation; concurrent appenders in two
processes number every message once; a seal cut short between its steps loses and doubles nothing; a
100,000-message conversation reads back whole in a few requests; and the stream indexer makes journal
messages searchable, keeps them findable once sealed, and forgets them when the conversation is purged.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

import boto3
import dynamodb_local
import pytest
from agentmem.adapters.aws.config import client_config
from agentmem.adapters.aws.dynamodb import DynamoDBStores, build_dynamodb_stores, layout
from agentmem.adapters.aws.dynamodb.conversation_rows import appended, message_row, meta_row, new_state
from agentmem.adapters.aws.dynamodb.conversations import DynamoConversationStore
from agentmem.adapters.aws.dynamodb.journal_sealing import JournalSealer
from agentmem.adapters.aws.s3 import S3BlobStore
from agentmem.adapters.embedded.embedder import HashingEmbedder
from agentmem.adapters.embedded.search_index import InMemorySearchIndex
from agentmem.domain.conversations import ConversationRef, Message, MessageDraft
from agentmem.settings import Settings
from moto_server import CREDENTIALS, REGION, MotoServer

from functions.indexer.handler import handle

THRESHOLDS = (32_000, 40)
NOW = "2026-03-02T09:00:00.000000Z"
EMBEDDER = HashingEmbedder(32)


class Requests:
    """HTTP requests sent by every client of one boto3 session, by ``service.Operation``."""

    def __init__(self, session: boto3.Session) -> None:
        self.sent: Counter[str] = Counter()
        self._lock = threading.Lock()
        session.events.register("before-send", self._before_send)

    def _before_send(self, event_name: str, **_: Any) -> None:
        _, service, operation = event_name.split(".", 2)
        with self._lock:
            self.sent[f"{service}.{operation}"] += 1

    @contextmanager
    def counting(self) -> Iterator[Counter[str]]:
        with self._lock:
            self.sent = Counter()
        yield self.sent


@dataclass
class Journal:
    """One table and one journal bucket; ``process()`` is another Lambda instance on them (its own clients
    and caches), counted on the same ``requests``."""

    moto: MotoServer
    settings: Settings
    bucket: str
    session: boto3.Session
    requests: Requests
    index: InMemorySearchIndex | None = None
    stream: bool = False
    stores: DynamoDBStores = field(init=False)

    def __post_init__(self) -> None:
        if not self.stream:
            client = self.session.client("dynamodb", endpoint_url=dynamodb_local.shared().endpoint,
                                         config=client_config())
            dynamodb_local.create_table(client, self.settings.table)  # without its stream (it says why)
        self.stores = self.process(create=self.stream)

    @property
    def store(self) -> DynamoConversationStore:
        return self.stores.conversations

    def process(self, *, create: bool = False) -> DynamoDBStores:
        s3 = self.session.client("s3", endpoint_url=self.moto.url, config=client_config())
        journal = S3BlobStore(self.bucket, boto3_client=s3)
        with mock.patch.dict(os.environ, dynamodb_local.shared().environment()):
            return build_dynamodb_stores(self.settings, self.session, create_missing_table=create, journal=journal,
                                         index=self.index)

    def s3(self) -> Any:
        return self.moto.client("s3")

    def objects(self, prefix: str = "journal/") -> list[str]:
        pages = self.s3().get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix)
        return [item["Key"] for page in pages for item in page.get("Contents", [])]

    def row_seqs(self, ref: ConversationRef) -> list[int]:
        """The seqs of the message rows in the table (the hot tail, and sealed rows not deleted yet)."""
        pk = layout.conversation_pk(ref.account_id, ref.agent, ref.user_id, ref.key)
        rows = self.stores.models.row.query(pk, self.stores.models.row.sk.startswith(layout.MESSAGE_PREFIX),
                                            consistent_read=True, attributes_to_get=["PK", "SK"])
        return [layout.message_seq(row.sk) for row in rows]


def make_journal(moto: MotoServer, index: InMemorySearchIndex | None = None, *, stream: bool = False,
                 ) -> Iterator[Journal]:
    suffix = uuid.uuid4().hex[:12]
    session = boto3.Session(region_name=REGION, aws_access_key_id=CREDENTIALS["aws_access_key_id"],
                            aws_secret_access_key=CREDENTIALS["aws_secret_access_key"])
    requests = Requests(session)
    journal = Journal(moto, Settings(backend="aws", table=f"agentmem-{suffix}"), f"journal-{suffix}", session,
                      requests, index, stream)
    assert S3BlobStore(journal.bucket, boto3_client=journal.s3()).ensure_bucket()
    try:
        yield journal
    finally:
        journal.stores.client.delete_table(TableName=journal.settings.table)


@pytest.fixture
def world(moto: MotoServer) -> Iterator[Journal]:
    yield from make_journal(moto)


REF = ConversationRef("acct_1", "support", "ana", "order-42")


def user(text: str, client_id: str | None = None, tokens: int = 3) -> MessageDraft:
    return MessageDraft("user", text, client_id=client_id, tokens=tokens)


def assistant(text: str, tokens: int = 5) -> MessageDraft:
    return MessageDraft("assistant", text, tokens=tokens)


def append(store: DynamoConversationStore, *drafts: MessageDraft, ref: ConversationRef = REF) -> Any:
    return store.append(ref, list(drafts), now=NOW, surface="agent", thresholds=THRESHOLDS)


def fill(store: DynamoConversationStore, count: int, *, ref: ConversationRef = REF, start: int = 0) -> None:
    """``count`` messages, 40 an append, every tenth a tool call with its result."""
    drafts: list[MessageDraft] = []
    for n in range(start, start + count):
        if n % 10 == 8:
            drafts.append(MessageDraft("tool_call", "", tool_name="lookup", tool_call_id=f"t{n}", arguments={"n": n}))
        elif n % 10 == 9:
            drafts.append(MessageDraft("tool_result", f"result {n}", tool_call_id=f"t{n - 1}", result={"n": n - 1}))
        else:
            drafts.append(user(f"question {n} about the order") if n % 2 == 0 else assistant(f"answer {n}"))
        if len(drafts) == 40:
            append(store, *drafts, ref=ref)
            drafts = []
    if drafts:
        append(store, *drafts, ref=ref)


def read_back(store: DynamoConversationStore, ref: ConversationRef = REF, page: int = 500) -> list[Message]:
    found: list[Message] = []
    while batch := store.messages(ref, after=found[-1].seq if found else 0, limit=page):
        found += batch
    return found


def seqs(messages: list[Message]) -> list[int]:
    return [m.seq for m in messages]


def dynamodb(counted: Counter[str]) -> dict[str, int]:
    return {k.split(".", 1)[1]: n for k, n in counted.items() if k.startswith("dynamodb.")}


def s3(counted: Counter[str]) -> dict[str, int]:
    return {k.split(".", 1)[1]: n for k, n in counted.items() if k.startswith("s3.")}


# -- one round trip --------------------------------------------------------------------------------------
def test_an_append_is_one_transaction_when_the_process_knows_the_conversation(world: Journal) -> None:
    store = world.store
    # Given a conversation this process has never seen: its first append reads the record (absent) and creates it
    with world.requests.counting() as counted:
        first = append(store, user("Where is my refund?", "c-1"), assistant("Looking."))
    assert dynamodb(counted) == {"GetItem": 1, "TransactWriteItems": 1}

    # When this process appends again (a warm Lambda)
    with world.requests.counting() as counted:
        second = append(store, user("Any news?", "c-2"))
    # Then that is one request: one transaction of the record, the message and its client id
    assert dynamodb(counted) == {"TransactWriteItems": 1} and not s3(counted)
    assert (second.added, second.messages[0].seq, second.record.last_seq) == (1, 3, 3)

    # When another process, which has not seen it, appends: a read, then one transaction
    other = world.process().conversations
    with world.requests.counting() as counted:
        append(other, assistant("It was refunded."))
    assert dynamodb(counted) == {"GetItem": 1, "TransactWriteItems": 1}

    # And the first process, its copy now stale, appends: the cancelled transaction returns the record, and the
    # second one lands — no read in between
    with world.requests.counting() as counted:
        fourth = append(store, user("Thanks"))
    assert dynamodb(counted) == {"TransactWriteItems": 2}
    assert fourth.messages[0].seq == 5

    # When a retry repeats a stored client id: the cancelled transaction names its seq, one read brings the
    # message back, and nothing is written
    with world.requests.counting() as counted:
        retried = append(store, user("Where is my refund?", "c-1"))
    assert retried.added == 0 and retried.messages == first.messages[:1]
    assert dynamodb(counted) == {"TransactWriteItems": 1, "BatchGetItem": 1}
    assert seqs(read_back(store)) == [1, 2, 3, 4, 5]


def test_reads_of_the_hot_tail_and_the_record_are_one_round(world: Journal) -> None:
    fill(world.store, 100)
    cold = world.process().conversations
    with world.requests.counting() as counted:
        tail = cold.tail(REF, 20)
    # the record and the newest rows, read at once
    assert seqs(tail) == list(range(81, 101))
    assert dynamodb(counted) == {"GetItem": 1, "Query": 1}
    with world.requests.counting() as counted:
        page = cold.messages(REF, after=40, limit=30)
    assert seqs(page) == list(range(41, 71))
    assert dynamodb(counted) == {"GetItem": 1, "Query": 1} and not s3(counted)


# -- concurrency -----------------------------------------------------------------------------------------
@pytest.mark.slow
def test_eight_writers_in_two_processes_number_2000_messages_once_each_while_a_third_seals(world: Journal) -> None:
    # Given two processes on one conversation with eight writers of 250 single-message appends, four in each,
    # and a third process sealing all but the newest 300 messages again and again meanwhile
    stores = [world.store, world.process().conversations]
    sealer = world.process().conversations
    returned: dict[str, int] = {}
    sealed: list[int] = []
    lock = threading.Lock()
    errors: list[BaseException] = []
    writing = threading.Event()

    def writer(n: int) -> None:
        try:
            for i in range(250):
                appended_now = append(stores[n % 2], user(f"writer {n} message {i}", f"w{n}-{i:03d}", tokens=1))
                with lock:
                    returned[f"w{n}-{i:03d}"] = appended_now.messages[0].seq
        except BaseException as error:
            errors.append(error)

    def seal() -> None:
        try:
            while writing.is_set():
                sealed.append(sealer.seal(REF, keep_hot=300))
                time.sleep(0.2)
        except BaseException as error:
            errors.append(error)

    # When they all run at once
    writing.set()
    with world.requests.counting() as counted:
        threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
        sealing = threading.Thread(target=seal)
        for thread in [*threads, sealing]:
            thread.start()
        for thread in threads:
            thread.join()
        writing.clear()
        sealing.join()

    # Then every append landed, and the journal holds seq 1..2000, each message once, with the seq its append
    # returned, and each writer's messages in the order it sent them — part from segments, part from rows
    assert not errors
    messages = read_back(world.process().conversations)
    assert seqs(messages) == list(range(1, 2001))
    assert {m.client_id: m.seq for m in messages} == returned
    for n in range(8):
        own = [m.client_id for m in messages if (m.client_id or "").startswith(f"w{n}-")]
        assert own == [f"w{n}-{i:03d}" for i in range(250)]
    record = world.store.get(REF)
    assert record is not None and (record.last_seq, record.unfolded_messages) == (2000, 2000)
    assert sum(sealed) > 0 and world.row_seqs(REF) == list(range(sum(sealed) + 1, 2001))
    # and a process's writers took turns rather than racing each other: most appends were one transaction
    assert counted["dynamodb.TransactWriteItems"] < 2 * 2000


# -- sealing ---------------------------------------------------------------------------------------------
class SealCutShortError(Exception):
    pass


def test_a_seal_cut_short_after_its_segments_loses_and_doubles_nothing(
    world: Journal, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given 3,000 messages, tool calls among them
    store = world.store
    fill(store, 3000)
    sent = read_back(store)

    # When a seal writes its segments and dies before it marks the rows sealed
    def die(self: JournalSealer, *args: Any) -> bool:
        raise SealCutShortError()

    with monkeypatch.context() as patched:
        patched.setattr(JournalSealer, "_mark", die)
        with pytest.raises(SealCutShortError):
            store.seal(REF, keep_hot=1500)

    # Then both the segments and the rows are there, and the journal reads back every message once, whole
    written = world.objects()
    assert [k.rsplit("/", 1)[1] for k in written] == ["000000000001-000000001000.jsonl.gz",
                                                       "000000001001-000000001500.jsonl.gz"]
    assert world.row_seqs(REF) == list(range(1, 3001))
    assert read_back(store) == sent
    assert read_back(world.process().conversations, page=3000) == sent

    # When the next seal runs (going further: it keeps only 500 hot)
    assert store.seal(REF, keep_hot=500) == 2500

    # Then it found the first segment written and went on; the rows it sealed are gone; and every message still
    # reads back once, from any process, whatever segments overlap
    names = [k.rsplit("/", 1)[1] for k in world.objects()]
    assert names == ["000000000001-000000001000.jsonl.gz", "000000001001-000000001500.jsonl.gz",
                     "000000001001-000000002000.jsonl.gz", "000000002001-000000002500.jsonl.gz"]
    assert world.row_seqs(REF) == list(range(2501, 3001))
    assert read_back(store) == sent
    assert read_back(world.process().conversations, page=777) == sent
    assert world.process().conversations.tail(REF, 600) == sent[-600:]
    # and a sealed tool call is still found by its id
    assert [(m.seq, m.role) for m in store.tool_messages(REF, "t18")] == [(19, "tool_call"), (20, "tool_result")]
    assert store.tool_messages(REF, "t18")[0].arguments == {"n": 18}


def test_a_seal_cut_short_after_its_mark_leaves_rows_the_next_seal_deletes(
    world: Journal, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given 2,000 messages, and a seal that dies after moving the mark, before deleting the rows
    store = world.store
    fill(store, 2000)
    sent = read_back(store)
    deleting = store.tail_rows.delete

    def die(pk: str, seqs: Any) -> None:
        seqs = list(seqs)
        if seqs:
            raise SealCutShortError()
        deleting(pk, seqs)

    with monkeypatch.context() as patched:
        patched.setattr(store.tail_rows, "delete", die)
        with pytest.raises(SealCutShortError):
            store.seal(REF, keep_hot=1000)

    # Then the sealed rows are still in the table, yet every message reads back once (from its segment)
    assert world.row_seqs(REF) == list(range(1, 2001))
    assert read_back(store) == sent

    # When a seal runs again with nothing new to seal, it deletes what the first left
    assert store.seal(REF, keep_hot=1000) == 0
    assert world.row_seqs(REF) == list(range(1001, 2001))
    assert read_back(store) == sent


def test_two_seals_at_once_seal_each_message_once(world: Journal) -> None:
    # Given 4,000 messages, and two processes sealing at once, one keeping 1,000 hot and one 1,500
    fill(world.store, 4000)
    sent = read_back(world.store)
    stores = [world.store, world.process().conversations]
    with ThreadPoolExecutor(2) as pool:
        sealed = list(pool.map(lambda pair: pair[0].seal(REF, keep_hot=pair[1]), zip(stores, (1000, 1500),
                                                                                     strict=True)))

    # Then between them they sealed 3,000: the further one counts from where the other stopped, if it did
    assert sum(sealed) == 3000
    assert world.row_seqs(REF) == list(range(3001, 4001))
    assert read_back(stores[0]) == sent and read_back(stores[1]) == sent


def test_every_kind_of_text_reads_back_exactly_once_sealed(world: Journal) -> None:
    # Given messages with line and paragraph separators, emoji, right-to-left text and 50,000 characters
    mixed = "👩‍👩‍👧 é (e\u0301) שלום 中文 \u2028\u2029 tab\there\r\nend \\ \" '"
    large = ("Ωmega ünïcödé 日本語 🚀 " * 3000)[:50_000]
    sent = append(world.store, user(mixed, "üñí-cödé"), assistant(large),
                  MessageDraft("tool_call", mixed, tool_name="tool.name", tool_call_id="t-ü",
                               arguments={"text": mixed, "": [None, 2.5, False]}),
                  MessageDraft("tool_result", "", tool_call_id="t-ü", result={"echo": mixed})).messages

    # When every message is sealed (none kept hot)
    assert world.store.seal(REF, keep_hot=0) == 4
    assert world.row_seqs(REF) == []

    # Then the journal, its tail and the tool call read back exactly as sent, from the segment
    reader = world.process().conversations
    assert read_back(reader) == sent and reader.tail(REF, 3) == sent[1:]
    assert reader.tool_messages(REF, "t-ü") == sent[2:]


def test_purge_removes_segments_rows_and_references_and_the_key_starts_again(world: Journal) -> None:
    # Given a sealed conversation
    store = world.store
    fill(store, 1200)
    assert store.seal(REF, keep_hot=100) == 1100
    assert world.objects()

    # When it is purged
    assert store.purge(REF) == 1200

    # Then nothing of it is left: no segment, no item of its partition, no reference
    assert world.objects() == []
    pk = layout.conversation_pk(REF.account_id, REF.agent, REF.user_id, REF.key)
    assert list(world.stores.models.row.query(pk, consistent_read=True)) == []
    assert store.refs_of_user(REF.account_id, "ana") == []
    # And a conversation started again under the key is a new one, however many old segments a crashed
    # purge might have left (none here)
    again = append(store, user("new start"))
    assert again.messages[0].seq == 1 and seqs(read_back(store)) == [1]


# -- 100,000 messages ------------------------------------------------------------------------------------
def write_conversation(journal: Journal, ref: ConversationRef, count: int) -> list[Message]:
    """The rows ``count`` appends of one message each would leave (numbered, turned and counted by the store's
    own append rules, one record at the end), written with BatchWriteItem on a few threads: what 2,500
    appends of 40 make, without 2,500 transactions."""
    models = journal.stores.models
    pk = layout.conversation_pk(ref.account_id, ref.agent, ref.user_id, ref.key)
    state = new_state(ref, NOW)
    messages: list[Message] = []
    for start in range(0, count, 40):
        drafts = [user(f"question {n}: where is refund {n}?", tokens=4) if n % 2 == 0 else assistant(f"answer {n}")
                  for n in range(start, min(start + 40, count))]
        state, batch = appended(state, drafts, now=NOW, surface="agent", thresholds=(10**9, 10**9),
                                window_messages=None)
        messages += batch
    items = [message_row(models, pk, m).serialize() for m in messages]
    client = journal.stores.client

    def write(chunk: list[dict[str, Any]]) -> None:
        pending = [{"PutRequest": {"Item": item}} for item in chunk]
        while pending:
            answer = client.batch_write_item(RequestItems={journal.settings.table: pending})
            pending = answer.get("UnprocessedItems", {}).get(journal.settings.table, [])

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(write, [items[i:i + 25] for i in range(0, len(items), 25)]))
    meta_row(models, state).save()
    return messages


@pytest.mark.slow
def test_a_100000_message_conversation_seals_and_reads_back_whole_in_few_requests(world: Journal) -> None:
    # Given a conversation of 100,000 messages
    sent = write_conversation(world, REF, 100_000)

    # When all but the newest 1,000 are sealed
    assert world.store.seal(REF, keep_hot=1000) == 99_000

    # Then they are in 99 segments of 1,000 and only the hot tail is left in the table
    assert len(world.objects()) == 99
    assert world.row_seqs(REF) == list(range(99_001, 100_001))

    # When another process reads the whole journal back in one call
    reader = world.process().conversations
    with world.requests.counting() as counted:
        whole = reader.messages(REF, after=0, limit=100_000)

    # Then every message is there, whole and in order, from 99 segment GETs, one LIST and two DynamoDB requests
    assert whole == sent
    assert s3(counted) == {"ListObjectsV2": 1, "GetObject": 99}
    assert dynamodb(counted) == {"GetItem": 1, "Query": 1}

    # When yet another process reads it page by page, 5,000 at a time
    pager = world.process().conversations
    with world.requests.counting() as counted:
        paged = read_back(pager, page=5000)

    # Then each segment is fetched once, and each page is one read of the record (+ the hot rows for the last)
    assert paged == sent
    assert s3(counted)["GetObject"] <= 150 and s3(counted)["ListObjectsV2"] == 1
    assert dynamodb(counted)["GetItem"] == 21 and dynamodb(counted).get("Query", 0) <= 2


# -- the stream indexer and journal search ---------------------------------------------------------------
def stream_records(journal: Journal, after: str | None) -> tuple[list[dict[str, Any]], str | None]:
    """The table's stream records after sequence number ``after``, as Lambda delivers them."""
    streams = journal.session.client("dynamodbstreams", endpoint_url=dynamodb_local.shared().endpoint,
                                     config=client_config())
    arn = journal.stores.client.describe_table(TableName=journal.settings.table)["Table"]["LatestStreamArn"]
    records: list[dict[str, Any]] = []
    for shard in streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]:
        iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard["ShardId"],
                                              ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
        while iterator:
            page = streams.get_records(ShardIterator=iterator, Limit=1000)
            records += page["Records"]
            if not page["Records"]:
                break
            iterator = page.get("NextShardIterator")
    records.sort(key=lambda r: int(r["dynamodb"]["SequenceNumber"]))
    if after is not None:
        records = [r for r in records if int(r["dynamodb"]["SequenceNumber"]) > int(after)]
    last = records[-1]["dynamodb"]["SequenceNumber"] if records else after
    for record in records:  # the Lambda event's shape: times in epoch seconds, the source's ARN
        record["dynamodb"]["ApproximateCreationDateTime"] = int(
            record["dynamodb"]["ApproximateCreationDateTime"].timestamp())
        record["eventSourceARN"] = arn
    return records, last


@pytest.fixture
def searchable(moto: MotoServer) -> Iterator[Journal]:
    yield from make_journal(moto, InMemorySearchIndex(EMBEDDER.dimension), stream=True)


def test_the_indexer_makes_journal_messages_searchable_keeps_them_once_sealed_and_forgets_a_purge(
    searchable: Journal,
) -> None:
    journal, index = searchable, searchable.index
    assert index is not None
    store = journal.store
    position: str | None = None

    def index_the_stream() -> None:
        nonlocal position
        records, position = stream_records(journal, position)
        assert handle({"Records": records}, index, EMBEDDER) == {"batchItemFailures": []}

    # Given ana's conversation with a refund question, a tool call, and more; bob's; and another agent's
    append(store, user("Where is my refund for order 42?"),
           MessageDraft("tool_call", "", tool_name="lookup_refund", tool_call_id="t1", arguments={"order": 42}),
           MessageDraft("tool_result", "refunded on Monday", tool_call_id="t1", result={"ok": True}),
           assistant("Your refund was paid on Monday."))
    fill(store, 1100, start=4)
    append(store, user("bob's refund"), ref=ConversationRef("acct_1", "support", "bob", "order-7"))
    append(store, user("refund via helper"), ref=ConversationRef("acct_1", "helper", "ana", "h1"))

    # When the stream is indexed
    index_the_stream()

    # Then each message row is a document of kind "message" (records, references and client ids are not)
    assert len(index) == 4 + 1100 + 2
    document = index.get("message/acct_1/support/ana/order-42/1")
    assert document is not None
    assert {k: document.get(k) for k in ("kind", "account", "agent", "user", "conversation", "seq", "role", "content",
                                         "updated_at")} == {
        "kind": "message", "account": "acct_1", "agent": "support", "user": "ana", "conversation": "order-42",
        "seq": 1, "role": "user", "content": "Where is my refund for order 42?", "updated_at": NOW,
    }
    assert str(document.get("embedder", "")).endswith(":32")  # the embedder that wrote it, and its dimension

    def found(*words: str, limit: int = 5) -> list[tuple[str, int]]:
        return [(h.conversation, h.message.seq)
                for h in store.search_candidates("acct_1", "support", "ana", list(words), limit=limit)]

    # and ana's journal search finds her messages through the index, newest first, read back whole
    assert found("paid") == [("order-42", 4)]
    hits = store.search_candidates("acct_1", "support", "ana", ["lookup_refund"])
    assert [(h.message.role, h.message.arguments) for h in hits] == [("tool_call", {"order": 42})]
    # (the index finds words as it splits them: "lookup_refund" is one word to it, so the tool call is found by
    # its name, not by "refund"; this in-process index matches word prefixes, OpenSearch whole words)
    assert found("refund") == [("order-42", 4), ("order-42", 3), ("order-42", 1)]

    # When most of it is sealed into S3 and the rows' removals come through the stream
    assert store.seal(REF, keep_hot=100) == 1004
    index_the_stream()

    # Then the sealed messages are still found (read back from their segments)
    assert len(index) == 4 + 1100 + 2
    assert found("paid") == [("order-42", 4)]
    assert store.search_candidates("acct_1", "support", "ana", ["paid"])[0].message.content == (
        "Your refund was paid on Monday.")

    # When the conversation is purged: before the indexer catches up, the stale documents are not returned
    assert store.purge(REF) == 1104
    assert found("paid") == []

    # and once the record's removal is indexed, its documents are gone too; the others stay
    index_the_stream()
    assert len(index) == 2
    assert index.get("message/acct_1/support/bob/order-7/1") is not None
