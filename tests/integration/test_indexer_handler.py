"""The stream indexer: DynamoDB Streams records (DynamoDB JSON, as Lambda delivers them) → the search index.

The index is the embedded in-process one, injected, or the OpenSearch adapter against the fake OpenSearch
(``fake_opensearch.py``); the records follow the table layout the handler documents, which is the DynamoDB
adapter's (``adapters/aws/dynamodb/layout.py``): PK ``A#{account}#M#{memory}#{L | U#{user}}``, SK ``E#{name}``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import pytest
from agentmem.adapters.aws.opensearch import OpenSearchIndex
from agentmem.adapters.embedded.embedder import HashingEmbedder
from agentmem.adapters.embedded.search_index import InMemorySearchIndex
from agentmem.bootstrap import set_container
from boto3.dynamodb.types import TypeSerializer
from botocore.credentials import Credentials
from fake_opensearch import serve
from moto_server import FakeLambdaContext

from functions.indexer.handler import count_ttl_removals, entry_text, handle, lambda_handler

EMBEDDER = HashingEmbedder(32)
NOW = "2026-03-02T09:00:00.000000Z"
SERIALIZER = TypeSerializer()


class FixedClock:
    def __call__(self) -> Any:
        from agentmem.domain.clock import parse_iso

        return parse_iso(NOW)


def ddb(item: Mapping[str, Any]) -> dict[str, Any]:
    return {k: SERIALIZER.serialize(Decimal(str(v)) if isinstance(v, float) else v) for k, v in item.items()}


def entry_item(name: str, *, user: str | None = None, version: int = 1, **extra: Any) -> dict[str, Any]:
    return {
        "PK": f"A#acct_1#M#company#{'L' if user is None else 'U#' + user}",
        "SK": f"E#{name}",
        "name": name,
        "memory": "company",
        "user_id": user,
        "description": f"About {name}",
        "content": f"The {name} note: refunds are paid back within 14 days.",
        "category": "fact",
        "importance": 0.75,
        "version": version,
        "updated_at": "2026-03-01T10:00:00.000000Z",
        **extra,
    }


def record(
    event: str, item: Mapping[str, Any], *, old: Mapping[str, Any] | None = None, seq: int = 1, ttl: bool = False
) -> dict[str, Any]:
    keys = {"PK": item["PK"], "SK": item["SK"]}
    stream: dict[str, Any] = {
        "ApproximateCreationDateTime": 1772442000,
        "Keys": ddb(keys),
        "SequenceNumber": f"{seq:021d}",
        "SizeBytes": 256,
        "StreamViewType": "NEW_AND_OLD_IMAGES",
    }
    if event != "REMOVE":
        stream["NewImage"] = ddb(item)
    if old is not None or event == "REMOVE":
        stream["OldImage"] = ddb(old if old is not None else item)
    made: dict[str, Any] = {
        "eventID": f"event-{seq}",
        "eventName": event,
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": "us-east-1",
        "dynamodb": stream,
        "eventSourceARN": "arn:aws:dynamodb:us-east-1:123456789012:table/agentmem/stream/2026-03-01T00:00:00.000",
    }
    if ttl:
        made["userIdentity"] = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}
    return made


def batch(*records: dict[str, Any]) -> dict[str, Any]:
    return {"Records": list(records)}


@pytest.fixture
def index() -> InMemorySearchIndex:
    return InMemorySearchIndex(EMBEDDER.dimension)


def run(index: InMemorySearchIndex, *records: dict[str, Any]) -> dict[str, Any]:
    return handle(batch(*records), index, EMBEDDER, clock=FixedClock())


def test_an_inserted_entry_is_indexed_with_its_fields_and_vector(index: InMemorySearchIndex) -> None:
    # When a new account-layer entry and a user's entry arrive on the stream
    answer = run(index, record("INSERT", entry_item("refund-policy"), seq=1),
                 record("INSERT", entry_item("diet", user="ana"), seq=2))
    # Then both are in the index, under their own layer, with every field the mapping has
    assert answer == {"batchItemFailures": []}
    account_doc = index.get("entry/acct_1/company//refund-policy")
    assert account_doc == {
        "kind": "entry", "account": "acct_1", "memory": "company", "user": "", "name": "refund-policy",
        "description": "About refund-policy",
        "content": "The refund-policy note: refunds are paid back within 14 days.",
        "category": "fact", "importance": 0.75, "version": 1, "updated_at": "2026-03-01T10:00:00.000000Z",
        "embedder": "HashingEmbedder:32",  # the embedder that wrote the vector
    }
    assert (index.get("entry/acct_1/company/ana/diet") or {})["user"] == "ana"
    # And a search by meaning finds them
    hits = index.query(None, EMBEDDER.embed_one(entry_text(account_doc)), {"user": ""}, 1)
    assert [hit.doc_id for hit in hits] == ["entry/acct_1/company//refund-policy"]


def test_a_modified_entry_replaces_its_document_and_a_removed_one_leaves(index: InMemorySearchIndex) -> None:
    first = entry_item("refund-policy")
    second = entry_item("refund-policy", version=2, content="Refunds now take 30 days.")
    run(index, record("INSERT", first, seq=1))
    run(index, record("MODIFY", second, old=first, seq=2))
    assert (index.get("entry/acct_1/company//refund-policy") or {})["content"] == "Refunds now take 30 days."
    assert (index.get("entry/acct_1/company//refund-policy") or {})["version"] == 2
    run(index, record("REMOVE", second, seq=3))
    assert index.get("entry/acct_1/company//refund-policy") is None
    assert len(index) == 0


def test_a_replayed_batch_leaves_the_same_index(index: InMemorySearchIndex) -> None:
    records = [record("INSERT", entry_item("a"), seq=1), record("MODIFY", entry_item("a", version=2), seq=2),
               record("INSERT", entry_item("b"), seq=3), record("REMOVE", entry_item("b"), seq=4)]
    run(index, *records)
    once = index.get("entry/acct_1/company//a")
    run(index, *records)
    assert index.get("entry/acct_1/company//a") == once and len(index) == 1


def test_checkpoints_and_every_other_item_of_the_table_are_skipped(index: InMemorySearchIndex) -> None:
    checkpoint = entry_item("context.3f2a9c", user="ana", conversation="order-42")
    flagged = entry_item("summary-note", user="ana", conversation="order-42")
    others = [
        {"PK": "A#acct_1#M#company#L", "SK": "H#refund-policy#2026-03-01T10:00:00.000000Z#0000000001"},  # history
        {"PK": "A#acct_1#M#company", "SK": "C#L", "entries": 3},  # layer counter
        {"PK": "A#acct_1", "SK": "M#company", "name": "company"},  # memory
        {"PK": "A#acct_1", "SK": "ACCOUNT", "name": "acme"},  # account
        {"PK": "KEY#abc", "SK": "KEY", "account_id": "acct_1"},  # key
        {"PK": "A#acct_1", "SK": "U#2026-03-02#entries.save#1", "count": 7},  # usage
        {"PK": "E#odd", "SK": "E#odd"},  # an entry-like sort key under a key that is not a layer
        {"PK": "A#acct_1#X#company#L", "SK": "E#odd"},
    ]
    answer = run(index, record("INSERT", checkpoint, seq=1), record("INSERT", flagged, seq=2),
                 record("REMOVE", checkpoint, seq=3),
                 *[record("INSERT", item, seq=10 + n) for n, item in enumerate(others)])
    assert answer == {"batchItemFailures": []}
    assert len(index) == 0


def test_an_entry_already_expired_is_removed_not_indexed(index: InMemorySearchIndex) -> None:
    run(index, record("INSERT", entry_item("promo"), seq=1))
    expired = entry_item("promo", version=2, expires_at="2026-03-01T00:00:00Z")
    run(index, record("MODIFY", expired, seq=2))
    assert index.get("entry/acct_1/company//promo") is None
    later = entry_item("promo", version=3, expires_at="2026-04-01T00:00:00Z")
    run(index, record("MODIFY", later, seq=3))
    assert (index.get("entry/acct_1/company//promo") or {})["expires_at"] == "2026-04-01T00:00:00Z"


class FlakyIndex(InMemorySearchIndex):
    """Fails every write of one document, as an index that times out would."""

    def upsert(self, doc_id: str, fields: Mapping[str, Any], vector: Any) -> None:
        if doc_id.endswith("/broken"):
            raise TimeoutError("the index timed out")
        super().upsert(doc_id, fields, vector)


def test_the_batch_stops_at_a_failing_record_and_reports_it_and_the_rest_for_retry() -> None:
    # Given an index that times out on one document, in the middle of a batch
    index = FlakyIndex(EMBEDDER.dimension)
    answer = run(index, record("INSERT", entry_item("fine"), seq=1), record("INSERT", entry_item("broken"), seq=2),
                 record("INSERT", entry_item("after"), seq=3))
    # Then the records from the failure on come back (in stream order), and none of them was applied
    assert answer == {"batchItemFailures": [{"itemIdentifier": f"{2:021d}"}, {"itemIdentifier": f"{3:021d}"}]}
    assert index.get("entry/acct_1/company//fine") is not None
    assert index.get("entry/acct_1/company//after") is None


def test_an_entry_removed_by_ttl_is_also_counted_out_through_the_hook(index: InMemorySearchIndex) -> None:
    # Given an indexed entry and a checkpoint
    promo, checkpoint = entry_item("promo", user="ana"), entry_item("context.3f2a9c", user="ana", conversation="c1")
    run(index, record("INSERT", promo, seq=1))
    removed: list[dict[str, Any]] = []
    # When TTL removes both, and an API delete removes another entry
    answer = handle(
        batch(record("REMOVE", promo, seq=2, ttl=True), record("REMOVE", checkpoint, seq=3, ttl=True),
              record("REMOVE", entry_item("deleted"), seq=4)),
        index, EMBEDDER, clock=FixedClock(), on_ttl_removed=removed.append,
    )
    # Then the entry left the index, and the hook got the raw old image of each TTL removal only
    assert answer == {"batchItemFailures": []}
    assert index.get("entry/acct_1/company/ana/promo") is None
    assert [image["SK"] for image in removed] == [{"S": "E#promo"}, {"S": "E#context.3f2a9c"}]
    assert removed[0]["importance"] == {"N": "0.75"}


@pytest.fixture
def wired(index: InMemorySearchIndex) -> Iterator[InMemorySearchIndex]:
    stores = SimpleNamespace(entries=SimpleNamespace())  # an entry store without a TTL hook (the embedded one)
    set_container(SimpleNamespace(search_index=index, embedder=EMBEDDER, stores=stores))  # type: ignore[arg-type]
    yield index
    set_container(None)


def test_the_lambda_entry_point_indexes_through_the_container(wired: InMemorySearchIndex) -> None:
    answer = lambda_handler(batch(record("INSERT", entry_item("refund-policy"))), FakeLambdaContext("agentmem-indexer"))
    assert answer == {"batchItemFailures": []}
    assert wired.get("entry/acct_1/company//refund-policy") is not None


def test_the_lambda_entry_point_says_what_is_missing_from_the_container() -> None:
    # an index without an embedder, or neither an index nor a TTL hook: nothing this function can do
    stores = SimpleNamespace(entries=SimpleNamespace())
    cases = [(SimpleNamespace(search_index=InMemorySearchIndex(32), embedder=None, stores=stores), "no embedder"),
             (SimpleNamespace(search_index=None, embedder=None, stores=stores), "no search index is configured")]
    for container, message in cases:
        set_container(container)  # type: ignore[arg-type]
        try:
            with pytest.raises(RuntimeError, match=message):
                lambda_handler(batch(record("INSERT", entry_item("x"))), FakeLambdaContext("agentmem-indexer"))
        finally:
            set_container(None)


def test_without_a_search_index_the_function_only_counts_ttl_removals() -> None:
    # Given a deployment without a collection: no index, no embedder, the DynamoDB entry store's TTL hook
    removed: list[dict[str, Any]] = []
    stores = SimpleNamespace(entries=SimpleNamespace(on_ttl_removed=removed.append))
    set_container(SimpleNamespace(search_index=None, embedder=None, stores=stores))  # type: ignore[arg-type]
    try:
        # When the stream delivers TTL removals (and, were the filter to let one by, an API delete and an insert)
        answer = lambda_handler(
            batch(record("REMOVE", entry_item("promo", user="ana"), seq=1, ttl=True),
                  record("REMOVE", entry_item("deleted"), seq=2), record("INSERT", entry_item("new"), seq=3),
                  record("REMOVE", entry_item("old-news"), seq=4, ttl=True)),
            FakeLambdaContext("agentmem-indexer"),
        )
    finally:
        set_container(None)
    # Then each TTL removal is counted out through the hook, in order, and nothing else happens
    assert answer == {"batchItemFailures": []}
    assert [image["SK"] for image in removed] == [{"S": "E#promo"}, {"S": "E#old-news"}]


def test_without_a_search_index_a_failing_count_is_retried_with_the_records_after_it() -> None:
    counted: list[str] = []

    def hook(image: dict[str, Any]) -> None:
        if image["SK"] == {"S": "E#b"}:
            raise ConnectionError("table unreachable")
        counted.append(image["SK"]["S"])

    answer = count_ttl_removals(
        batch(*(record("REMOVE", entry_item(name), seq=seq, ttl=True) for seq, name in enumerate("abc", 1))), hook,
    )
    assert counted == ["E#a"]
    assert answer == {"batchItemFailures": [{"itemIdentifier": f"{2:021d}"}, {"itemIdentifier": f"{3:021d}"}]}


def message_item(seq: int, content: str, **extra: Any) -> dict[str, Any]:
    return {"PK": "C#acct_1#support#U#ana#order-42", "SK": f"MSG#{seq:012d}", "seq": seq, "turn": 1, "role": "user",
            "content": content, "created_at": "2026-03-02T09:00:00.000000Z", "tokens": 3, **extra}


def test_journal_messages_are_indexed_kept_when_their_rows_are_sealed_and_deleted_with_their_record(
    index: InMemorySearchIndex,
) -> None:
    # Given two message rows written, a tool call among them, and the record and a client id item beside them
    meta = {"PK": "C#acct_1#support#U#ana#order-42", "SK": "META", "last_seq": 2, "rev": 2}
    client_id = {"PK": "C#acct_1#support#U#ana#order-42", "SK": "CID#c-1", "seq": 1}
    call = message_item(2, "", role="tool_call", tool_name="lookup_refund", tool_call_id="t1")
    answer = run(index, record("INSERT", message_item(1, "Where is my refund?"), seq=1), record("INSERT", call, seq=2),
                 record("INSERT", meta, seq=3), record("INSERT", client_id, seq=4))

    # Then each message is a document of kind "message" with the message's own fields (its text: the content and
    # the tool name), nothing else is
    assert answer == {"batchItemFailures": []}
    assert len(index) == 2
    assert index.get("message/acct_1/support/ana/order-42/1") == {
        "kind": "message", "account": "acct_1", "agent": "support", "user": "ana", "conversation": "order-42",
        "seq": 1, "role": "user", "content": "Where is my refund?", "updated_at": "2026-03-02T09:00:00.000000Z",
        "embedder": EMBEDDER.name,
    }
    call_doc = index.get("message/acct_1/support/ana/order-42/2") or {}
    assert (call_doc["content"], call_doc["role"], call_doc["seq"]) == ("\nlookup_refund", "tool_call", 2)

    # When the rows leave the table (sealed into S3): the documents stay
    run(index, record("REMOVE", message_item(1, "Where is my refund?"), seq=5), record("REMOVE", call, seq=6))
    assert len(index) == 2

    # When the record is removed (the conversation purged): every message it counted leaves the index
    run(index, record("REMOVE", meta, seq=7))
    assert len(index) == 0


# -- on OpenSearch ----------------------------------------------------------------------------------------
CREDENTIALS = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")


def test_the_first_record_on_a_collection_without_the_index_creates_it_and_is_indexed() -> None:
    with serve() as (state, url):
        # Given a new collection: nothing has made the index
        index = OpenSearchIndex.connect(url, dimension=EMBEDDER.dimension, region="eu-west-1", credentials=CREDENTIALS)
        # When the first batch of the stream arrives: entries, a message, a change of the first entry, a delete
        answer = run_on(index, record("INSERT", entry_item("refund-policy"), seq=1),
                        record("INSERT", entry_item("diet", user="ana"), seq=2),
                        record("INSERT", message_item(1, "Where is my refund?"), seq=3),
                        record("MODIFY", entry_item("refund-policy", version=2), seq=4),
                        record("REMOVE", entry_item("diet", user="ana"), seq=5))
        # Then nothing failed: the index was created (with its mapping) before the first write
        assert answer == {"batchItemFailures": []}
        assert [(r.method, r.path) for r in state.requests[:2]] == [("GET", "/agentmem/_mapping"), ("PUT", "/agentmem")]
        assert state.requests[1].json()["mappings"]["properties"]["vector"]["dimension"] == EMBEDDER.dimension
        # and the batch went as one lookup and one bulk for its upserts, and one lookup for its delete (of an
        # entry written and removed within the batch: never sent, nothing to sweep)
        assert [r.path for r in state.requests[2:]] == ["/agentmem/_search", "/agentmem/_bulk", "/agentmem/_search"]
        docs = sorted(state.docs().values(), key=lambda d: d["doc_id"])
        assert [(d["doc_id"], d.get("version"), d["embedder"]) for d in docs] == [
            ("entry/acct_1/company//refund-policy", 2, EMBEDDER.name),
            ("message/acct_1/support/ana/order-42/1", None, EMBEDDER.name),
        ]
        # and a recall query finds the entry by meaning, and a journal query the message by its words
        mine = {"kind": "entry", "embedder": EMBEDDER.name}
        near = index.query(None, EMBEDDER.embed_one(entry_text(docs[0])), mine, 3)
        assert [h.doc_id for h in near] == ["entry/acct_1/company//refund-policy"]
        words = index.query("refund", None, {"kind": "message", "agent": "support", "conversation": "order-42"}, 3)
        assert [(h.fields["seq"], h.fields["role"]) for h in words] == [(1, "user")]


def test_an_index_that_refuses_every_write_fails_the_batch_from_its_first_record_after_one_more_try() -> None:
    with serve() as (state, url):
        index = OpenSearchIndex.connect(url, dimension=EMBEDDER.dimension, region="eu-west-1", credentials=CREDENTIALS)
        index.setup()
        state.fail_bulk = True
        sent = len(state.requests)
        answer = run_on(index, record("INSERT", entry_item("a"), seq=1), record("INSERT", entry_item("b"), seq=2))
        # (the batch's bulk, then the first record's alone: not one more per record)
        assert len(state.sent("POST", "/_bulk")) == 2 and len(state.requests) - sent == 4
        assert answer == {"batchItemFailures": [{"itemIdentifier": f"{1:021d}"}, {"itemIdentifier": f"{2:021d}"}]}
        # and the retry goes through
        state.fail_bulk = False
        assert run_on(index, record("INSERT", entry_item("a"), seq=1), record("INSERT", entry_item("b"), seq=2)) == {
            "batchItemFailures": []}
        assert len(state.docs()) == 2


def run_on(index: OpenSearchIndex, *records: dict[str, Any]) -> dict[str, Any]:
    return handle(batch(*records), index, EMBEDDER, clock=FixedClock())


class CountingEmbedder(HashingEmbedder):
    """Counts its calls and the texts each embeds."""

    def __init__(self, dimension: int) -> None:
        super().__init__(dimension)
        self.calls: list[int] = []

    def embed(self, texts: Any) -> list[list[float]]:
        self.calls.append(len(texts))
        return super().embed(texts)


def test_long_messages_are_indexed_with_their_passages_in_the_batch_s_one_bulk() -> None:
    from agentmem.domain.passages import passages

    long_text = " ".join(f"Sentence {n} of a long answer says something about the refund of order {n}."
                         for n in range(40))
    meta = {"PK": "C#acct_1#support#U#ana#order-42", "SK": "META", "last_seq": 3, "rev": 3}
    with serve() as (state, url):
        index = OpenSearchIndex.connect(url, dimension=EMBEDDER.dimension, region="eu-west-1", credentials=CREDENTIALS)
        index.setup()
        embedder = CountingEmbedder(EMBEDDER.dimension)
        # When a batch brings a short message, a long one, a long tool result and an entry
        answer = handle(batch(record("INSERT", message_item(1, "Where is my refund?"), seq=1),
                              record("INSERT", message_item(2, long_text, role="assistant"), seq=2),
                              record("INSERT", message_item(3, long_text, role="tool_result", tool_name="lookup"),
                                     seq=3),
                              record("INSERT", entry_item("refund-policy"), seq=4)),
                        index, embedder, clock=FixedClock())
        assert answer == {"batchItemFailures": []}
        # Then one embed call took every text (four wholes and the long ones' passages) and one bulk wrote them
        cut = passages(long_text)
        tool_cut = passages(f"{long_text}\nlookup")
        assert len(cut) > 2
        assert embedder.calls == [4 + len(cut) + len(tool_cut)]
        (bulk,) = state.sent("POST", "/_bulk")
        assert len([line for line in bulk.ndjson() if "index" in line]) == 4
        docs = {d["doc_id"]: d for d in state.docs().values()}
        long_doc = docs["message/acct_1/support/ana/order-42/2"]
        assert [(p["start"], p["end"]) for p in long_doc["passages"]] == [(p.start, p.end) for p in cut]
        assert long_doc["passages"][1]["vector"] == pytest.approx(EMBEDDER.embed_one(cut[1].of(long_text)))
        # (a tool row's passages are of its searchable text: the content and the tool's name)
        assert [(p["start"], p["end"]) for p in docs["message/acct_1/support/ana/order-42/3"]["passages"]] == [
            (p.start, p.end) for p in tool_cut]
        assert "passages" not in docs["message/acct_1/support/ana/order-42/1"]
        assert "passages" not in docs["entry/acct_1/company//refund-policy"]
        # When the conversation is purged (its record removed): its documents go by id, passages with them
        run_on(index, record("REMOVE", meta, seq=5))
        assert [d["doc_id"] for d in state.docs().values()] == ["entry/acct_1/company//refund-policy"]
