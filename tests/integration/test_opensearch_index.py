"""The OpenSearch Serverless adapter against a small fake OpenSearch of our own, and against a real cluster
when ``OPENSEARCH_URL`` is set (none can be had offline).

The fake is an HTTP server that records every request and answers the calls the adapter makes the way
OpenSearch does: ``HEAD``/``PUT <index>``, ``POST <index>/_search`` (a ``term`` on ``doc_id``; any other
query answers every document), ``POST <index>/_bulk`` (``index`` without an id — a vector collection
assigns them — and ``delete``), ``DELETE <index>``.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pytest
from agentmem.adapters.aws.opensearch import OpenSearchIndex, index_body, region_of
from agentmem.adapters.embedded.embedder import HashingEmbedder
from botocore.credentials import Credentials

DIMENSION = 16
CREDENTIALS = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
FIELDS = {
    "kind": "entry", "account": "acct_1", "memory": "company", "user": "", "name": "refund-policy",
    "description": "How refunds work", "content": "Refunds are paid back within 14 days.", "category": "note",
    "importance": 0.5, "version": 1, "updated_at": "2026-03-02T09:00:00.000000Z",
}
DOC = "entry/acct_1/company//refund-policy"


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def ndjson(self) -> list[Any]:
        return [json.loads(line) for line in self.body.decode().splitlines() if line.strip()]


@dataclass
class FakeOpenSearch:
    requests: list[Recorded] = field(default_factory=list)
    indices: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> {"body", "docs": {_id: source}}
    fail_bulk: bool = False

    def answer(self, method: str, path: str, body: bytes) -> tuple[int, Any]:
        parts = [p for p in path.split("/") if p]
        index = parts[0] if parts else ""
        action = parts[1] if len(parts) > 1 else None
        if action is None and method == "HEAD":
            return (200 if index in self.indices else 404), None
        if action is None and method == "PUT":
            if index in self.indices:
                return 400, {"error": {"type": "resource_already_exists_exception"}, "status": 400}
            self.indices[index] = {"body": json.loads(body), "docs": {}}
            return 200, {"acknowledged": True, "shards_acknowledged": True, "index": index}
        if action is None and method == "DELETE":
            self.indices.pop(index, None)
            return 200, {"acknowledged": True}
        if index not in self.indices:
            return 404, {"error": {"type": "index_not_found_exception"}, "status": 404}
        docs: dict[str, Any] = self.indices[index]["docs"]
        if action == "_search":
            query = json.loads(body or b"{}").get("query", {})
            wanted = query.get("term", {}).get("doc_id")
            found = [(i, s) for i, s in docs.items() if wanted is None or s.get("doc_id") == wanted]
            hits = [{"_index": index, "_id": i, "_score": 1.0, "_source": s} for i, s in found]
            return 200, {"took": 1, "timed_out": False, "hits": {"total": {"value": len(hits)}, "hits": hits}}
        if action == "_bulk":
            lines = [json.loads(line) for line in body.decode().splitlines() if line.strip()]
            items, errors, position = [], False, 0
            while position < len(lines):
                verb, meta = next(iter(lines[position].items()))
                position += 1
                if self.fail_bulk:
                    errors = True
                    items.append({verb: {"status": 429, "error": {"type": "too_many_requests"}}})
                elif verb == "index":
                    assert "_id" not in meta, "a vector collection refuses ids of our choosing"
                    new_id = uuid.uuid4().hex
                    docs[new_id] = lines[position]
                    items.append({"index": {"_id": new_id, "status": 201, "result": "created"}})
                elif verb == "delete":
                    gone = docs.pop(meta["_id"], None)
                    items.append({"delete": {"_id": meta["_id"], "status": 200 if gone else 404,
                                             "result": "deleted" if gone else "not_found"}})
                if verb == "index":
                    position += 1
            return 200, {"took": 1, "errors": errors, "items": items}
        return 400, {"error": {"type": "unsupported_by_fake", "reason": f"{method} {path}"}}


@pytest.fixture
def fake() -> Iterator[tuple[FakeOpenSearch, str]]:
    state = FakeOpenSearch()

    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            path = urlsplit(self.path).path
            state.requests.append(Recorded(self.command, self.path, dict(self.headers.items()), body))
            status, answer = state.answer(self.command, path, body)
            payload = b"" if answer is None else json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _serve

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield state, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def index(fake: tuple[FakeOpenSearch, str]) -> OpenSearchIndex:
    _, url = fake
    return OpenSearchIndex.connect(
        url, dimension=DIMENSION, index="agentmem", region="eu-west-1", credentials=CREDENTIALS
    )


def vector(seed: float) -> list[float]:
    return [seed] * DIMENSION


def test_setup_creates_the_index_with_a_knn_vector_and_text_and_keyword_fields(
    fake: tuple[FakeOpenSearch, str], index: OpenSearchIndex
) -> None:
    state, _ = fake
    # When the index is set up twice
    index.setup()
    index.setup()
    # Then it was created once (a HEAD, a PUT, a HEAD), with the mapping recall needs
    sent = [(r.method, r.path) for r in state.requests]
    assert sent == [("HEAD", "/agentmem"), ("PUT", "/agentmem"), ("HEAD", "/agentmem")]
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
        assert properties[text]["type"] == "text"
    for keyword in ("account", "memory", "user", "doc_id", "kind", "category"):
        assert properties[keyword] == {"type": "keyword"}
    assert properties["name"]["fields"]["keyword"]["type"] == "keyword"
    assert body["mappings"]["dynamic"] == "strict"


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


def test_upsert_indexes_a_new_document_then_replaces_every_copy(
    fake: tuple[FakeOpenSearch, str], index: OpenSearchIndex
) -> None:
    state, _ = fake
    index.setup()
    # When an entry is indexed
    index.upsert(DOC, FIELDS, vector(0.25))
    search, bulk = state.requests[-2:]
    # Then the adapter looked for copies of our doc_id, and indexed one document without an id of ours
    assert (search.method, search.path) == ("POST", "/agentmem/_search")
    assert search.json() == {"size": 100, "_source": False, "query": {"term": {"doc_id": DOC}}}
    assert (bulk.method, bulk.path) == ("POST", "/agentmem/_bulk")
    assert bulk.ndjson() == [{"index": {}}, {**FIELDS, "doc_id": DOC, "vector": vector(0.25)}]
    first_id = next(iter(state.indices["agentmem"]["docs"]))
    # When it changes
    index.upsert(DOC, {**FIELDS, "version": 2, "content": "Refunds take 30 days now."}, vector(0.5))
    # Then the old copy is deleted and the new one indexed, in one bulk request
    actions = state.requests[-1].ndjson()
    assert actions[0] == {"delete": {"_id": first_id}}
    assert actions[1] == {"index": {}}
    assert actions[2]["version"] == 2 and actions[2]["doc_id"] == DOC
    docs = list(state.indices["agentmem"]["docs"].values())
    assert [d["version"] for d in docs] == [2]


def test_delete_removes_every_copy_and_sends_nothing_when_there_is_none(
    fake: tuple[FakeOpenSearch, str], index: OpenSearchIndex
) -> None:
    state, _ = fake
    index.setup()
    index.upsert(DOC, FIELDS, vector(0.25))
    # Given a second, stale copy, as a write racing the refresh interval can leave
    docs = state.indices["agentmem"]["docs"]
    docs["stale"] = {**FIELDS, "doc_id": DOC}
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


def test_a_query_filters_inside_the_knn_search_and_keeps_the_newest_copy_of_each_document(
    fake: tuple[FakeOpenSearch, str], index: OpenSearchIndex
) -> None:
    state, _ = fake
    index.setup()
    docs = state.indices["agentmem"]["docs"]
    docs["a"] = {**FIELDS, "doc_id": DOC, "version": 1}
    docs["b"] = {**FIELDS, "doc_id": DOC, "version": 3, "content": "newest"}
    docs["c"] = {**FIELDS, "doc_id": "entry/acct_1/company//other", "name": "other"}
    hits = index.query("refund", vector(0.1), {"account": "acct_1", "user": ["", "ana"], "name": "refund-policy"}, 5)
    body = state.requests[-1].json()
    terms = [
        {"terms": {"account": ["acct_1"]}}, {"terms": {"user": ["", "ana"]}},
        {"terms": {"name.keyword": ["refund-policy"]}},
    ]
    assert body["size"] == 10
    assert body["_source"] == {"excludes": ["vector"]}
    assert body["query"]["bool"]["filter"] == terms
    knn, text = body["query"]["bool"]["should"]
    assert knn == {"knn": {"vector": {"vector": vector(0.1), "k": 5, "filter": {"bool": {"filter": terms}}}}}
    assert text == {"multi_match": {"query": "refund", "fields": ["name^2", "description^2", "content^1"]}}
    # (the fake scores every hit 1.0: ties go by doc_id)
    assert [(h.doc_id, h.fields["version"]) for h in hits] == [("entry/acct_1/company//other", 1), (DOC, 3)]
    assert all("vector" not in h.fields and "doc_id" not in h.fields for h in hits)


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
@pytest.mark.skipif(not os.environ.get("OPENSEARCH_URL"), reason="OPENSEARCH_URL is not set: no real cluster")
def test_against_a_real_cluster() -> None:
    """OPENSEARCH_URL: an OpenSearch Serverless endpoint (signed with the environment's AWS credentials),
    or any OpenSearch cluster URL (``https://user:password@host:9200``)."""
    from opensearchpy import OpenSearch

    url = os.environ["OPENSEARCH_URL"]
    embedder = HashingEmbedder(DIMENSION)
    name = f"agentmem-test-{uuid.uuid4().hex[:8]}"
    if region_of(url):
        index = OpenSearchIndex.connect(url, dimension=DIMENSION, index=name)
    else:
        client = OpenSearch(hosts=[url], verify_certs=False, ssl_show_warn=False, timeout=30)
        index = OpenSearchIndex(client, dimension=DIMENSION, index=name)
    index.setup()
    try:
        index.upsert(DOC, FIELDS, embedder.embed_one("refunds are paid back"))
        index.upsert(DOC, {**FIELDS, "version": 2}, embedder.embed_one("refunds are paid back"))
        other = "entry/acct_1/company//shipping"
        index.upsert(other, {**FIELDS, "name": "shipping", "content": "Parcels leave in two days."},
                     embedder.embed_one("parcels leave in two days"))

        def query() -> list[Any]:
            return index.query(None, embedder.embed_one("refunds"), {"account": "acct_1"}, 5)

        deadline = time.monotonic() + 90  # search lags writes by the refresh interval
        hits = query()
        while time.monotonic() < deadline and (len(hits) < 2 or hits[0].fields.get("version") != 2):
            time.sleep(2)
            hits = query()
        assert hits[0].doc_id == DOC and hits[0].fields["version"] == 2
        index.delete(DOC)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and DOC in {h.doc_id for h in query()}:
            time.sleep(2)
        assert DOC not in {h.doc_id for h in query()}
    finally:
        index.client.indices.delete(index=name)
