"""The OpenSearch Serverless adapter against a small fake OpenSearch of our own (``fake_opensearch.py``: strict
about the query DSL and the mapping, with OpenSearch's errors), and against a real cluster when
``OPENSEARCH_URL`` is set (none can be had offline).
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from agentmem.adapters.aws.journal_index import (
    MessageLocation,
    journal_filters,
    location_of,
    message_doc_id,
    message_fields,
)
from agentmem.adapters.aws.opensearch import OpenSearchIndex, index_body, region_of
from agentmem.adapters.embedded.embedder import HashingEmbedder
from botocore.credentials import Credentials
from fake_opensearch import FakeOpenSearch, serve
from opensearchpy.exceptions import RequestError

DIMENSION = 64
CREDENTIALS = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
EMBEDDER = HashingEmbedder(DIMENSION)
FIELDS = {
    "kind": "entry", "account": "acct_1", "memory": "company", "user": "", "name": "refund-policy",
    "description": "How refunds work", "content": "Refunds are paid back within 14 days.", "category": "note",
    "importance": 0.5, "version": 1, "updated_at": "2026-03-02T09:00:00.000000Z", "embedder": EMBEDDER.name,
}
DOC = "entry/acct_1/company//refund-policy"


@pytest.fixture
def fake() -> Iterator[tuple[FakeOpenSearch, str]]:
    with serve() as served:
        yield served


def connect(url: str, **options: Any) -> OpenSearchIndex:
    return OpenSearchIndex.connect(url, dimension=DIMENSION, index="agentmem", region="eu-west-1",
                                   credentials=CREDENTIALS, **options)


@pytest.fixture
def index(fake: tuple[FakeOpenSearch, str]) -> OpenSearchIndex:
    return connect(fake[1])


def vector(seed: float) -> list[float]:
    return [seed] * DIMENSION


def entry(name: str, description: str, content: str, **extra: Any) -> tuple[str, dict[str, Any], list[float]]:
    fields = {**FIELDS, "name": name, "description": description, "content": content, **extra}
    doc_id = f"entry/acct_1/{fields['memory']}/{fields['user']}/{name}"
    return doc_id, fields, EMBEDDER.embed_one(f"{name}\n{description}\n{content}")


def test_setup_creates_the_index_with_a_knn_vector_text_keyword_and_message_fields(
    fake: tuple[FakeOpenSearch, str], index: OpenSearchIndex
) -> None:
    state, _ = fake
    # When the index is set up twice
    index.setup()
    index.setup()
    # Then it was created once (a look, a create, a look), with the mapping recall and journal search need
    sent = [(r.method, r.path) for r in state.requests]
    assert sent == [("GET", "/agentmem/_mapping"), ("PUT", "/agentmem"), ("GET", "/agentmem/_mapping")]
    body = state.requests[1].json()
    assert body == index_body(DIMENSION)
    assert body["settings"]["index"]["knn"] is True
    properties = body["mappings"]["properties"]
    assert properties["vector"] == {
        "type": "knn_vector", "dimension": DIMENSION,
        "method": {"name": "hnsw", "engine": "faiss", "space_type": "innerproduct",
                   "parameters": {"ef_construction": 128, "m": 16}},
    }
    for text in ("name", "description", "content"):
        assert (properties[text]["type"], properties[text]["analyzer"]) == ("text", "english")
    for keyword in ("account", "memory", "user", "doc_id", "kind", "category", "agent", "conversation", "role",
                    "embedder"):
        assert properties[keyword] == {"type": "keyword"}
    assert properties["seq"] == {"type": "long"}
    assert properties["name"]["fields"]["keyword"]["type"] == "keyword"
    assert body["mappings"]["dynamic"] == "strict"


def test_setup_racing_from_two_threads_creates_one_index_and_both_succeed(fake: tuple[FakeOpenSearch, str]) -> None:
    state, url = fake
    # Given two processes that both find the index missing (their lookups wait for each other: long enough for
    # a thread that starts late on a loaded machine, within clients that wait longer still)
    state.race, state.race_wait_s = threading.Barrier(2), 30.0
    first, second = connect(url, timeout_s=60.0), connect(url, timeout_s=60.0)
    errors: list[BaseException] = []

    def set_up(index: OpenSearchIndex) -> None:
        try:
            index.setup()
        except BaseException as error:  # reported below
            errors.append(error)

    # When both set it up at once
    threads = [threading.Thread(target=set_up, args=(i,)) for i in (first, second)]
    for thread in threads:
        thread.start()
    for thread in threads:  # as long as the clients wait: a loaded machine may hold a thread past the race
        thread.join(timeout=90)
    # Then both tried to create it, one was told it already exists, and both succeeded
    assert not any(thread.is_alive() for thread in threads)
    assert errors == []
    assert len(state.sent("PUT", "/agentmem")) == 2
    assert list(state.indices) == ["agentmem"]
    # and both write to the one index
    first.upsert(*entry("a", "A", "first"))
    second.upsert(*entry("b", "B", "second"))
    assert len(state.docs()) == 2


def test_setup_adds_the_fields_an_older_index_lacks(fake: tuple[FakeOpenSearch, str], index: OpenSearchIndex) -> None:
    state, _ = fake
    # Given an index made before the mapping had the message fields
    old = index_body(DIMENSION)
    for name in ("agent", "conversation", "seq", "role", "embedder"):
        del old["mappings"]["properties"][name]
    index.client.indices.create(index="agentmem", body=old)
    # When a process sets it up
    index.setup()
    # Then the missing fields were added, and a message document can be written
    (put,) = state.sent("PUT", "/agentmem/_mapping")
    assert sorted(put.json()["properties"]) == ["agent", "conversation", "embedder", "role", "seq"]
    where = MessageLocation("acct_1", "support", "ana", "order-42", 1)
    index.upsert(message_doc_id("acct_1", "support", "ana", "order-42", 1),
                 message_fields(where, "Where is my refund?", "2026-03-02T09:00:00.000000Z", role="user"), vector(0.1))
    assert len(state.docs()) == 1


def test_every_request_is_signed_with_sigv4_for_aoss(fake: tuple[FakeOpenSearch, str], index: OpenSearchIndex) -> None:
    state, _ = fake
    index.setup()
    index.upsert(DOC, FIELDS, vector(0.25))
    assert state.requests
    for request in state.requests:
        authorization = request.headers["Authorization"]
        scheme, _, rest = authorization.partition(" ")
        parts = dict(part.strip().split("=", 1) for part in rest.split(","))
        access_key, day, region, service, terminal = parts["Credential"].split("/")
        assert scheme == "AWS4-HMAC-SHA256"
        assert (access_key, region, service, terminal) == ("AKIDEXAMPLE", "eu-west-1", "aoss", "aws4_request")
        assert day == request.headers["X-Amz-Date"][:8]
        assert {"host", "x-amz-date", "x-amz-content-sha256"} <= set(parts["SignedHeaders"].split(";"))
        # OpenSearch Serverless requires the payload's hash in a header
        assert request.headers["X-Amz-Content-SHA256"] == hashlib.sha256(request.body).hexdigest()
        assert len(parts["Signature"]) == 64


def test_the_first_write_creates_the_missing_index_then_an_upsert_replaces_every_copy(
    fake: tuple[FakeOpenSearch, str], index: OpenSearchIndex
) -> None:
    state, _ = fake
    # When an entry is indexed on a collection without the index
    index.upsert(DOC, FIELDS, vector(0.25))
    # Then the index was set up first, then the adapter looked for copies of our doc_id, and indexed one
    # document without an id of ours, asking for no refresh
    assert [(r.method, r.path) for r in state.requests] == [
        ("GET", "/agentmem/_mapping"), ("PUT", "/agentmem"), ("POST", "/agentmem/_search"), ("POST", "/agentmem/_bulk"),
    ]
    search, bulk = state.requests[-2:]
    assert search.json() == {"size": 100, "_source": False, "query": {"terms": {"doc_id": [DOC]}}}
    assert bulk.ndjson() == [{"index": {}}, {**FIELDS, "doc_id": DOC, "vector": vector(0.25)}]
    first_id = next(iter(state.docs()))
    # When it changes
    index.upsert(DOC, {**FIELDS, "version": 2, "content": "Refunds take 30 days now."}, vector(0.5))
    # Then the index is not looked up again, and the old copy is deleted and the new one indexed, in one bulk
    assert [r.path for r in state.requests[4:]] == ["/agentmem/_search", "/agentmem/_bulk"]
    actions = state.requests[-1].ndjson()
    assert actions[0] == {"delete": {"_id": first_id}}
    assert actions[1] == {"index": {}}
    assert actions[2]["version"] == 2 and actions[2]["doc_id"] == DOC
    assert [d["version"] for d in state.docs().values()] == [2]


def test_upsert_many_sends_one_lookup_and_one_bulk(fake: tuple[FakeOpenSearch, str], index: OpenSearchIndex) -> None:
    state, _ = fake
    index.setup()
    index.upsert(*entry("a", "A", "old a"))
    sent = len(state.requests)
    # When three documents are written together, one of them twice
    index.upsert_many([entry("a", "A", "new a"), entry("b", "B", "b"), entry("c", "C", "first c"),
                       entry("c", "C", "last c")])
    # Then one terms query found the copies of all of them, and one bulk replaced them (the last c winning)
    search, bulk = state.requests[sent:]
    assert search.json()["query"] == {"terms": {"doc_id": [
        "entry/acct_1/company//a", "entry/acct_1/company//b", "entry/acct_1/company//c",
    ]}}
    actions = bulk.ndjson()
    assert sum("delete" in a for a in actions) == 1 and sum("index" in a for a in actions) == 3
    assert sorted(d["content"] for d in state.docs().values()) == ["b", "last c", "new a"]
    # and nothing is written when one of them does not fit the mapping
    with pytest.raises(ValueError, match="not in the index mapping"):
        index.upsert_many([entry("d", "D", "d"), entry("e", "E", "e", colour="red")])
    assert len(state.docs()) == 3


def test_delete_removes_every_copy_and_sends_nothing_when_there_is_none(
    fake: tuple[FakeOpenSearch, str], index: OpenSearchIndex
) -> None:
    state, _ = fake
    index.setup()
    index.upsert(DOC, FIELDS, vector(0.25))
    # Given a second, stale copy, as a write racing the refresh interval can leave
    docs = state.docs()
    docs["stale"] = {**FIELDS, "doc_id": DOC, "vector": vector(0.25)}
    copies = sorted(docs)
    # When the entry is deleted
    index.delete(DOC)
    # Then one bulk request deletes both copies
    bulk = state.requests[-1]
    assert bulk.path == "/agentmem/_bulk"
    assert sorted(action["delete"]["_id"] for action in bulk.ndjson()) == copies
    assert docs == {}
    # And deleting it again only looks
    sent = len(state.requests)
    index.delete(DOC)
    assert [r.path for r in state.requests[sent:]] == ["/agentmem/_search"]


def test_a_query_on_a_missing_index_answers_nothing_and_creates_it(
    fake: tuple[FakeOpenSearch, str], index: OpenSearchIndex
) -> None:
    state, _ = fake
    # When the API queries a collection the indexer has not written to yet
    hits = index.query("refund", vector(0.1), {"account": "acct_1"}, 5)
    # Then it answers no hits rather than failing, and the index is there for the next query
    assert hits == []
    assert "agentmem" in state.indices
    assert index.query("refund", vector(0.1), {"account": "acct_1"}, 5) == []
    assert [(r.method, r.path) for r in state.requests] == [
        ("POST", "/agentmem/_search"), ("GET", "/agentmem/_mapping"), ("PUT", "/agentmem"),
        ("POST", "/agentmem/_search"),
    ]


def test_an_index_deleted_after_setup_is_set_up_again_by_the_next_write(
    fake: tuple[FakeOpenSearch, str], index: OpenSearchIndex
) -> None:
    state, _ = fake
    index.upsert(DOC, FIELDS, vector(0.25))
    index.client.indices.delete(index="agentmem")
    index.upsert(DOC, {**FIELDS, "version": 2}, vector(0.25))
    assert [d["version"] for d in state.docs().values()] == [2]


@pytest.fixture
def filled(index: OpenSearchIndex) -> OpenSearchIndex:
    index.upsert_many([
        entry("refund-policy", "How refunds work", "Refunds are paid back within 14 days."),
        entry("shipping", "Shipping times", "Parcels leave the warehouse in two days."),
        entry("ana-diet", "Ana's food", "Ana is vegetarian; no refunds on meals.", user="ana"),
        entry("holiday", "Office holidays", "Closed on public holidays.", memory="hr"),
    ])
    return index


def test_a_vector_query_filters_inside_the_knn_clause(
    fake: tuple[FakeOpenSearch, str], filled: OpenSearchIndex
) -> None:
    state, _ = fake
    query = EMBEDDER.embed_one("refunds paid back")
    hits = filled.query(None, query, {"account": "acct_1", "memory": "company", "user": ["", "bob"]}, 2)
    body = state.requests[-1].json()
    # Then the request is a knn query (no bool around it) with the filters inside it, size with room for copies
    assert body == {
        "size": 4, "_source": {"excludes": ["vector", "passages"]},
        "query": {"knn": {"vector": {"vector": query, "k": 2, "filter": {"bool": {"filter": [
            {"term": {"account": "acct_1"}}, {"term": {"memory": "company"}}, {"terms": {"user": ["", "bob"]}},
        ]}}}}},
    }
    # and the nearest documents that pass the filters come back, without ana's or the hr memory's
    assert [h.doc_id for h in hits] == ["entry/acct_1/company//refund-policy", "entry/acct_1/company//shipping"]
    assert all("vector" not in h.fields and "doc_id" not in h.fields for h in hits)


def test_a_text_query_is_a_multi_match_over_the_weighted_text_fields(
    fake: tuple[FakeOpenSearch, str], filled: OpenSearchIndex
) -> None:
    state, _ = fake
    hits = filled.query("refund", None, {"account": "acct_1", "name": ["refund-policy", "ana-diet", "shipping"]}, 5)
    body = state.requests[-1].json()
    assert body["query"] == {"bool": {
        "must": [{"multi_match": {"query": "refund", "fields": ["name^3", "description^2", "content"],
                                  "type": "most_fields", "operator": "or"}}],
        "filter": [{"term": {"account": "acct_1"}},
                   {"terms": {"name.keyword": ["refund-policy", "ana-diet", "shipping"]}}],
    }}
    # (the english analyzer stems: "refund" finds "refunds"; the name and description weigh more)
    assert [h.doc_id for h in hits] == ["entry/acct_1/company//refund-policy", "entry/acct_1/company/ana/ana-diet"]


def test_text_and_vector_together_are_a_bool_that_should_match_either(
    fake: tuple[FakeOpenSearch, str], filled: OpenSearchIndex
) -> None:
    state, _ = fake
    query = EMBEDDER.embed_one("parcels warehouse")
    hits = filled.query("holidays", query, {"memory": "company"}, 1)
    body = state.requests[-1].json()
    knn, match = body["query"]["bool"]["should"]
    assert knn == {"knn": {"vector": {"vector": query, "k": 1, "filter": {"bool": {"filter": [
        {"term": {"memory": "company"}}]}}}}}
    assert match["multi_match"]["query"] == "holidays"
    assert body["query"]["bool"]["minimum_should_match"] == 1
    assert body["query"]["bool"]["filter"] == [{"term": {"memory": "company"}}]
    # (the holiday entry matches the words, but it is in another memory)
    assert [h.doc_id for h in hits] == ["entry/acct_1/company//shipping"]


def test_vectors_of_another_embedder_are_not_returned_when_filtered_by_embedder(
    fake: tuple[FakeOpenSearch, str], index: OpenSearchIndex
) -> None:
    # Given the same entry's vector from two embedders (an index half way through a change of embedder)
    other = HashingEmbedder(DIMENSION)
    doc_id, fields, mine = entry("refund-policy", "How refunds work", "Refunds are paid back.")
    index.upsert_many([(doc_id, fields, mine),
                       ("entry/acct_1/company//old", {**fields, "name": "old", "embedder": "other-model:64"},
                        other.embed_one("refunds"))])
    # When a vector query keeps to one embedder's vectors
    hits = index.query(None, EMBEDDER.embed_one("refunds"), {"embedder": EMBEDDER.name}, 5)
    # Then only its documents come back
    assert [(h.doc_id, h.fields["embedder"]) for h in hits] == [(doc_id, EMBEDDER.name)]


def test_message_documents_carry_their_own_fields_and_a_journal_query_finds_them(
    fake: tuple[FakeOpenSearch, str], index: OpenSearchIndex
) -> None:
    state, _ = fake
    where = MessageLocation("acct_1", "support", "ana", "order-42", 7)
    fields = message_fields(where, "Where is my refund?", "2026-03-02T09:00:00.000000Z", role="user",
                            embedder=EMBEDDER.name)
    index.upsert_many([
        (message_doc_id("acct_1", "support", "ana", "order-42", 7), fields, EMBEDDER.embed_one("Where is my refund?")),
        *[entry("refund-policy", "How refunds work", "Refunds are paid back.")],
    ])
    (stored,) = [d for d in state.docs().values() if d["kind"] == "message"]
    assert {k: v for k, v in stored.items() if k != "vector"} == {
        "kind": "message", "account": "acct_1", "agent": "support", "user": "ana", "conversation": "order-42",
        "seq": 7, "role": "user", "content": "Where is my refund?", "updated_at": "2026-03-02T09:00:00.000000Z",
        "embedder": EMBEDDER.name, "doc_id": "message/acct_1/support/ana/order-42/7",
    }
    # When ana's journal is searched for "refunds" (the entry holding the word is not a message)
    hits = index.query("refunds", None, journal_filters("acct_1", "support", "ana", "order-42"), 10)
    assert [location_of(h.fields) for h in hits] == [where]
    assert index.query("refunds", None, journal_filters("acct_1", "support", "bob", None), 10) == []


def test_a_journal_query_bounded_in_time_sends_a_range_and_finds_only_that_window(
    fake: tuple[FakeOpenSearch, str], index: OpenSearchIndex
) -> None:
    from agentmem.domain.conversations import TimeRange

    state, _ = fake
    said = [(1, "Where is my refund?", "2026-01-10T09:00:00.000000Z"),
            (2, "The refund arrived, thanks.", "2026-02-10T09:00:00.000000Z"),
            (3, "Another refund question.", "2026-03-10T09:00:00.000000Z")]
    index.upsert_many([
        (message_doc_id("acct_1", "support", "ana", "order-42", seq),
         message_fields(MessageLocation("acct_1", "support", "ana", "order-42", seq), text, at, role="user",
                        embedder=EMBEDDER.name), EMBEDDER.embed_one(text))
        for seq, text, at in said
    ])
    february = {**journal_filters("acct_1", "support", "ana", None),
                "updated_at": TimeRange("2026-02-01T00:00:00.000000Z", "2026-03-01T00:00:00.000000Z")}
    # By words: a range clause among the filters, and only February's message
    hits = index.query("refund", None, february, 10)
    assert {"range": {"updated_at": {"gt": "2026-02-01T00:00:00.000000Z", "lt": "2026-03-01T00:00:00.000000Z"}}} in (
        state.requests[-1].json()["query"]["bool"]["filter"])
    assert [h.fields["seq"] for h in hits] == [2]
    # By meaning: the range inside both knn clauses' filters, the whole's and the passages' (faiss filters while it
    # searches)
    hits = index.query(None, EMBEDDER.embed_one("refund"), {**february, "embedder": EMBEDDER.name}, 10)
    whole, nested = state.requests[-1].json()["query"]["bool"]["should"]
    for knn in (whole["knn"]["vector"], nested["nested"]["query"]["knn"]["passages.vector"]):
        assert {"range": {"updated_at": {"gt": "2026-02-01T00:00:00.000000Z",
                                         "lt": "2026-03-01T00:00:00.000000Z"}}} in knn["filter"]["bool"]["filter"]
    assert [h.fields["seq"] for h in hits] == [2]
    # one bound alone
    later = {**journal_filters("acct_1", "support", "ana", None), "updated_at": TimeRange(after=said[0][2])}
    assert sorted(h.fields["seq"] for h in index.query("refund", None, later, 10)) == [2, 3]


def test_the_fake_refuses_what_opensearch_would(fake: tuple[FakeOpenSearch, str], index: OpenSearchIndex) -> None:
    index.setup()
    for body in (
        {"query": {"match_phrase": {"content": "refund"}}},  # a clause the adapter does not use
        {"query": {"bool": {"filter": [{"term": {"content": "refund"}}]}}},  # a term on a text field
        {"query": {"knn": {"vector": {"vector": [0.1, 0.2], "k": 3}}}},  # the wrong dimension
        {"query": {"match_all": {}}, "sort": ["version"]},
    ):
        with pytest.raises(RequestError) as refused:
            index.client.search(index="agentmem", body=body)
        assert refused.value.status_code == 400, body
    with pytest.raises(RequestError, match="resource_already_exists_exception"):
        index.client.indices.create(index="agentmem", body=index_body(DIMENSION))
    with pytest.raises(ValueError, match="dimensions"):
        index.query(None, [0.1], {}, 3)


def test_a_failed_bulk_request_raises(fake: tuple[FakeOpenSearch, str], index: OpenSearchIndex) -> None:
    state, _ = fake
    index.setup()
    state.fail_bulk = True
    with pytest.raises(RuntimeError, match="too_many_requests"):
        index.upsert(DOC, FIELDS, vector(0.25))


def test_the_region_comes_from_a_serverless_endpoint() -> None:
    assert region_of("https://abc123xyz.eu-central-1.aoss.amazonaws.com") == "eu-central-1"
    assert region_of("http://localhost:9200") is None
    endpoint = "https://abc123xyz.eu-central-1.aoss.amazonaws.com"
    index = OpenSearchIndex.connect(endpoint, dimension=DIMENSION, credentials=CREDENTIALS)
    auth = index.client.transport.kwargs["http_auth"]
    assert (auth.signer.region, auth.signer.service) == ("eu-central-1", "aoss")


# -- a real cluster ----------------------------------------------------------------------------------------
def _eventually(ask: Any, done: Any, seconds: float = 90) -> Any:
    """Search lags writes by the refresh interval (Serverless has no refresh to ask for): ask until done."""
    deadline = time.monotonic() + seconds
    answer = ask()
    while not done(answer) and time.monotonic() < deadline:
        time.sleep(2)
        answer = ask()
    return answer


@pytest.mark.skipif(not os.environ.get("OPENSEARCH_URL"), reason="OPENSEARCH_URL is not set: no real cluster")
def test_against_a_real_cluster() -> None:
    """OPENSEARCH_URL: an OpenSearch Serverless endpoint (signed with the environment's AWS credentials),
    or any OpenSearch cluster URL (``https://user:password@host:9200``). Makes and deletes its own index."""
    from opensearchpy import OpenSearch

    url = os.environ["OPENSEARCH_URL"]
    name = f"agentmem-test-{uuid.uuid4().hex[:8]}"
    if region_of(url):
        index = OpenSearchIndex.connect(url, dimension=DIMENSION, index=name)
    else:
        client = OpenSearch(hosts=[url], verify_certs=False, ssl_show_warn=False, timeout=30)
        index = OpenSearchIndex(client, dimension=DIMENSION, index=name)
    try:
        # a query before anything made the index answers nothing, and makes it (with our mapping)
        assert index.query("refund", EMBEDDER.embed_one("refund"), {"account": "acct_1"}, 5) == []
        mapping = index.client.indices.get_mapping(index=name)[name]["mappings"]
        assert mapping["properties"]["vector"]["type"] == "knn_vector"
        assert mapping["properties"]["content"]["analyzer"] == "english"
        assert mapping["properties"]["seq"]["type"] == "long"
        index.setup()  # again: nothing to do

        index.upsert(DOC, FIELDS, EMBEDDER.embed_one("refunds are paid back"))
        where = MessageLocation("acct_1", "support", "ana", "order-42", 3)
        message = message_doc_id("acct_1", "support", "ana", "order-42", 3)
        index.upsert_many([
            (DOC, {**FIELDS, "version": 2}, EMBEDDER.embed_one("refunds are paid back")),
            entry("shipping", "Shipping times", "Parcels leave the warehouse in two days."),
            ("entry/acct_1/company//old", {**FIELDS, "name": "old", "embedder": "other-model:64"},
             EMBEDDER.embed_one("refunds are paid back")),
            (message, message_fields(where, "Where is my refund?", "2026-03-02T09:00:00.000000Z", role="user",
                                     embedder=EMBEDDER.name), EMBEDDER.embed_one("Where is my refund?")),
        ])
        entries = {"kind": "entry", "account": "acct_1", "embedder": EMBEDDER.name}

        def by_vector() -> list[Any]:
            return index.query(None, EMBEDDER.embed_one("refunds"), entries, 5)

        hits = _eventually(by_vector, lambda h: len(h) == 2 and h[0].fields.get("version") == 2)
        assert [h.doc_id for h in hits] == [DOC, "entry/acct_1/company//shipping"]  # not the other embedder's
        assert hits[0].fields["version"] == 2
        # the english analyzer: "refund" finds "refunds"; the name and description weigh more than the content
        words = index.query("refund", None, {"kind": "entry", "memory": "company"}, 5)
        assert {h.doc_id for h in words} == {DOC, "entry/acct_1/company//old"}
        both = index.query("parcels", EMBEDDER.embed_one("refunds"), entries, 5)
        assert {h.doc_id for h in both} >= {DOC, "entry/acct_1/company//shipping"}
        anas = journal_filters("acct_1", "support", "ana", None)
        journal = _eventually(lambda: index.query("refunds", None, anas, 5), lambda h: len(h) == 1)
        assert [location_of(h.fields) for h in journal] == [where]
        # a long message's passages, nested: a query by meaning names the nearest (the nested knn, its filter on the
        # message's fields, and inner_hits as the real service answers them)
        long_id, long_fields, long_whole, parts = long_message()
        index.upsert_with_passages([(long_id, long_fields, long_whole, parts)])
        backup = EMBEDDER.embed_one("nightly backup Frankfurt replica encrypted vault key restore")
        by_passage = _eventually(lambda: index.query(None, backup, {**anas, "embedder": EMBEDDER.name}, 5),
                                 lambda h: any("passage" in hit.fields for hit in h))
        (found,) = [h for h in by_passage if h.doc_id == long_id]
        assert (found.fields["passage_start"], found.fields["passage_end"]) == (
            parts[found.fields["passage"]].start, parts[found.fields["passage"]].end)
        assert -1.0 <= found.score <= 1.0

        index.delete_many([DOC, message, long_id])
        remaining = _eventually(lambda: {h.doc_id for h in index.query("refund", None, {"account": "acct_1"}, 10)},
                                lambda ids: DOC not in ids and message not in ids)
        assert DOC not in remaining and message not in remaining
        assert _eventually(lambda: index.query(None, backup, anas, 5), lambda h: h == []) == []
    finally:
        index.client.indices.delete(index=name)


# -- long messages: passages nested in their document ---------------------------------------------------------------
PARAGRAPHS = [
    "The web tier runs on four containers behind the load balancer. Sessions moved to Redis, so sticky sessions "
    "are gone. Deploys take about six minutes end to end, and the health check runs every ten seconds.",
    "Logging goes to the central collector. Each service writes JSON lines with a request id, and dashboards "
    "group by it. Retention is fourteen days for debug lines and ninety days for errors.",
    "The nightly backup runs at two from the Frankfurt replica, never from the primary. It is encrypted with the "
    "vault key, copied to the second region, and a restore is tested on the first Monday of each month.",
    "Costs went down by a fifth since the move, most of it the smaller database and the reserved capacity for the "
    "containers. Next month we look at the content delivery contract and the storage bill.",
    "Open items: the search service still reads from the old cluster, two cron jobs have no owner, and the "
    "failover runbook is out of date. They are on the board with names, for Thursday's review.",
    "Security: the certificates renew by themselves now, the admin panel sits behind the single sign-on, and the "
    "last penetration test found two low issues, both fixed the same week.",
]
LONG = "\n\n".join(PARAGRAPHS)


def long_message(seq: int = 2, text: str = LONG) -> tuple[str, dict[str, Any], list[float], list[Any]]:
    from agentmem.adapters.aws.journal_index import PassageVector
    from agentmem.domain.passages import long_passages

    where = MessageLocation("acct_1", "support", "ana", "ops", seq)
    fields = message_fields(where, text, "2026-03-02T09:00:00.000000Z", role="assistant", embedder=EMBEDDER.name)
    parts = [PassageVector(p.start, p.end, EMBEDDER.embed_one(p.of(text))) for p in long_passages(text)]
    return message_doc_id("acct_1", "support", "ana", "ops", seq), fields, EMBEDDER.embed_one(text), parts


def test_a_long_message_is_written_with_its_passages_nested_in_its_document(
    fake: tuple[FakeOpenSearch, str], index: OpenSearchIndex
) -> None:
    from agentmem.domain.passages import passages

    state, _ = fake
    # Given a message longer than a passage, and a short one
    short_id, short_fields, short_vector = (message_doc_id("acct_1", "support", "ana", "ops", 1),
                                            message_fields(MessageLocation("acct_1", "support", "ana", "ops", 1),
                                                           "Where are we?", "2026-03-02T08:00:00.000000Z",
                                                           role="user", embedder=EMBEDDER.name),
                                            EMBEDDER.embed_one("Where are we?"))
    index.upsert_with_passages([long_message(), (short_id, short_fields, short_vector, [])])
    # Then one bulk wrote both documents, the long one holding each passage's offsets and vector
    (bulk,) = state.sent("POST", "/_bulk")
    assert len([line for line in bulk.ndjson() if "index" in line]) == 2
    stored = {d["seq"]: d for d in state.docs().values()}
    cut = passages(LONG)
    assert len(cut) > 1
    assert [(p["start"], p["end"]) for p in stored[2]["passages"]] == [(p.start, p.end) for p in cut]
    assert all(len(p["vector"]) == DIMENSION for p in stored[2]["passages"])
    assert "passages" not in stored[1]
    # and the mapping the index was made with has them nested, with the message vector's k-NN method
    mapping = index_body(DIMENSION)["mappings"]["properties"]["passages"]
    assert mapping["type"] == "nested"
    assert mapping["properties"]["vector"] == index_body(DIMENSION)["mappings"]["properties"]["vector"]
    assert (mapping["properties"]["start"], mapping["properties"]["end"]) == ({"type": "long"}, {"type": "long"})
    # an entry holds none
    with pytest.raises(ValueError, match="passages"):
        index.upsert_with_passages([(*entry("a", "A", "first"), long_message()[3])])


def test_a_journal_query_by_meaning_scores_a_long_message_by_its_best_passage_and_its_whole(
    fake: tuple[FakeOpenSearch, str], index: OpenSearchIndex
) -> None:
    from agentmem.domain.passages import passages
    from agentmem.domain.recall import passage_score

    state, _ = fake
    doc_id, fields, whole, parts = long_message()
    index.upsert_with_passages([(doc_id, fields, whole, parts)])
    question = EMBEDDER.embed_one("nightly backup Frankfurt replica encrypted vault key restore")
    filters = {**journal_filters("acct_1", "support", "ana", None), "embedder": EMBEDDER.name}
    (hit,) = index.query(None, question, filters, 5)
    # The request: the whole vector's knn or a nested knn on the passages (the filters inside both), naming the
    # nearest passage in inner_hits
    body = state.requests[-1].json()
    knn, nested = body["query"]["bool"]["should"]
    assert nested["nested"]["path"] == "passages" and nested["nested"]["score_mode"] == "max"
    assert nested["nested"]["query"]["knn"]["passages.vector"]["filter"] == knn["knn"]["vector"]["filter"]
    assert body["_source"] == {"excludes": ["vector", "passages"]}
    # The hit: each message once, named by its nearest passage (the backup paragraph), scored as the embedded
    # index scores it (0.3 of the best passage's cosine, 0.7 of the whole text's)
    cosines = [sum(a * b for a, b in zip(question, p.vector, strict=True)) for p in parts]
    nearest = max(range(len(parts)), key=lambda i: cosines[i])
    assert "nightly backup" in passages(LONG)[nearest].of(LONG)
    assert hit.fields["passage"] == nearest
    assert (hit.fields["passage_start"], hit.fields["passage_end"]) == (parts[nearest].start, parts[nearest].end)
    whole_cosine = sum(a * b for a, b in zip(question, whole, strict=True))
    assert hit.score == pytest.approx(passage_score(whole_cosine, [cosines[nearest]]), abs=1e-6)
    assert "passages" not in hit.fields and "vector" not in hit.fields


def test_a_vector_query_scores_are_cosines(fake: tuple[FakeOpenSearch, str], filled: OpenSearchIndex) -> None:
    # OpenSearch scores the innerproduct space 1 + ip (or 1 / (1 - ip)); recall calibrates a cosine
    query = EMBEDDER.embed_one("refunds paid back")
    hits = filled.query(None, query, {"memory": "company", "user": ""}, 3)
    expected = {doc_id: sum(a * b for a, b in zip(query, vector, strict=True))
                for doc_id, _, vector in (entry("refund-policy", "How refunds work", "Refunds are paid back within "
                                                "14 days."), entry("shipping", "Shipping times",
                                                                   "Parcels leave the warehouse in two days."))}
    assert {h.doc_id: round(h.score, 6) for h in hits} == {k: round(v, 6) for k, v in expected.items()}


def test_a_message_found_only_by_a_passage_is_scored_by_it(
    fake: tuple[FakeOpenSearch, str], index: OpenSearchIndex
) -> None:
    # Given a long message and a short one, and a query whose nearest whole vector is the short message's (k=1)
    doc_id, fields, whole, parts = long_message()
    short = message_fields(MessageLocation("acct_1", "support", "ana", "ops", 1), "The nightly backup.",
                           "2026-03-02T08:00:00.000000Z", role="user", embedder=EMBEDDER.name)
    index.upsert_with_passages([(doc_id, fields, whole, parts),
                                (message_doc_id("acct_1", "support", "ana", "ops", 1), short,
                                 EMBEDDER.embed_one("The nightly backup."), [])])
    question = EMBEDDER.embed_one("The nightly backup.")
    hits = index.query(None, question, {**journal_filters("acct_1", "support", "ana", None)}, 1)
    # Then the short one is first; the long one, found by its passage alone, is scored by that passage
    assert hits[0].fields["seq"] == 1 and hits[0].score == pytest.approx(1.0, abs=1e-6)
    both = {h.fields["seq"]: h for h in index.query(None, question, journal_filters("acct_1", "support", "ana",
                                                                                     None), 5)}
    assert set(both) == {1, 2} and "passage" in both[2].fields and "passage" not in both[1].fields


def test_setup_adds_the_nested_passages_to_an_index_made_before_them(
    fake: tuple[FakeOpenSearch, str], index: OpenSearchIndex
) -> None:
    state, _ = fake
    # Given an index made before messages had passages, holding a message indexed whole
    old = index_body(DIMENSION)
    del old["mappings"]["properties"]["passages"]
    index.client.indices.create(index="agentmem", body=old)
    doc_id, fields, whole, parts = long_message()
    index.client.bulk(body=[{"index": {}}, {**fields, "doc_id": doc_id, "vector": whole}], index="agentmem")
    # When a journal query by meaning runs before any process set the index up, it answers by the whole vectors
    # (the nested clause ignores the unmapped path)
    filters = journal_filters("acct_1", "support", "ana", None)
    (hit,) = index.query(None, EMBEDDER.embed_one("nightly backup"), filters, 5)
    assert "passage" not in hit.fields
    # When a process sets it up (the indexer does before its first write)
    index.setup()
    # Then the nested field was added, with nothing else, and the message written again holds its passages
    (put,) = state.sent("PUT", "/agentmem/_mapping")
    assert put.json() == {"properties": {"passages": index_body(DIMENSION)["mappings"]["properties"]["passages"]}}
    index.upsert_with_passages([(doc_id, fields, whole, parts)])
    (stored,) = state.docs().values()
    assert len(stored["passages"]) == len(parts)
    (hit,) = index.query(None, EMBEDDER.embed_one("nightly backup"), filters, 5)
    assert isinstance(hit.fields["passage"], int)


def test_deleting_a_message_by_id_removes_its_passages(
    fake: tuple[FakeOpenSearch, str], index: OpenSearchIndex
) -> None:
    state, _ = fake
    doc_id, fields, whole, parts = long_message()
    index.upsert_with_passages([(doc_id, fields, whole, parts)])
    # When the conversation is purged (its documents deleted by id, seq by seq)
    index.delete_many([doc_id, message_doc_id("acct_1", "support", "ana", "ops", 1)])
    # Then nothing of the message is left, and a query by a passage finds nothing
    assert state.docs() == {}
    assert index.query(None, parts[2].vector, journal_filters("acct_1", "support", "ana", None), 5) == []


def test_a_journal_hit_without_inner_hits_is_still_a_cosine() -> None:
    # (a k-NN release that drops inner hits: both clauses' scores added, nothing to split them by)
    fields: dict[str, Any] = {}
    both = OpenSearchIndex._semantic_score({"_score": 1.8 + 1.6}, 1.8 + 1.6, fields)
    assert both == pytest.approx(0.7) and fields == {}
    assert OpenSearchIndex._semantic_score({"_score": 1.8}, 1.8, fields) == pytest.approx(0.8)
    assert OpenSearchIndex._semantic_score({"_score": 0.8}, 0.8, fields) == pytest.approx(-0.25)
