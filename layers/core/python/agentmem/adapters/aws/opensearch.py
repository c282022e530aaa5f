"""The semantic index on OpenSearch Serverless (a VECTORSEARCH collection), through opensearch-py with SigV4.

A vector search collection does not accept documents under ids of our choosing (``PUT <index>/_doc/<id>``
is refused; OpenSearch assigns ``_id``). So our id is a keyword field, ``doc_id``, and:

- ``upsert`` looks up the ``_id`` of every copy holding that ``doc_id``, then sends one ``_bulk``: a
  ``delete`` for each, and an ``index`` of the new document;
- ``delete`` does the same without the ``index``.

Search lags writes by the collection's refresh interval, so a copy indexed moments before the next
change of the same ``doc_id`` may be missed and survive; queries then keep only the highest ``version``
of each ``doc_id``, the next change sweeps every copy, and recall re-reads every hit from the store
(SPEC §6.2) — a stale copy can cost a candidate slot, never return stale or deleted content. The same
calls work on any OpenSearch cluster.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import boto3
from opensearchpy import OpenSearch, RequestsHttpConnection
from opensearchpy.exceptions import RequestError
from opensearchpy.helpers.signer import AWSV4SignerAuth

from ...observability import logger
from ...ports.search_index import (
    DOCUMENT_FIELDS,
    TEXT_BOOST,
    TEXT_FIELDS,
    FieldType,
    Filters,
    SearchHit,
    SearchIndex,
    check_document,
    check_filters,
    filter_values,
)

DEFAULT_INDEX = "agentmem"
SERVICE = "aoss"
VECTOR_FIELD = "vector"
ID_FIELD = "doc_id"
MAX_COPIES = 100  # copies of one doc_id swept per change; more than a handful means something is wrong
TIMEOUT_S = 5.0  # recall falls back to keyword search when the index is slow (SPEC §6.2)
_AOSS_HOST = re.compile(r"^[a-z0-9-]+\.([a-z0-9-]+)\.aoss(?:-fips)?\.amazonaws\.com$")

_FIELD_MAPPINGS: Mapping[FieldType, dict[str, Any]] = {
    "text": {"type": "text"},
    "keyword": {"type": "keyword"},
    "text+keyword": {"type": "text", "fields": {"keyword": {"type": "keyword", "ignore_above": 256}}},
    "float": {"type": "float"},
    "long": {"type": "long"},
    "date": {"type": "date"},
}


def index_body(dimension: int) -> dict[str, Any]:
    """Settings and mapping of the index: strict fields of ``DOCUMENT_FIELDS``, ``doc_id``, and a faiss
    HNSW ``knn_vector`` scored by inner product (the embedder's unit vectors make it cosine)."""
    properties: dict[str, Any] = {ID_FIELD: {"type": "keyword"}}
    properties.update({name: dict(_FIELD_MAPPINGS[kind]) for name, kind in DOCUMENT_FIELDS.items()})
    properties[VECTOR_FIELD] = {
        "type": "knn_vector",
        "dimension": dimension,
        "method": {
            "name": "hnsw",
            "engine": "faiss",
            "space_type": "innerproduct",
            "parameters": {"ef_construction": 128, "m": 16},
        },
    }
    return {"settings": {"index": {"knn": True}}, "mappings": {"dynamic": "strict", "properties": properties}}


def _keyword_path(name: str) -> str:
    """The field a keyword filter reads: ``name`` is text with a ``name.keyword`` sub-field."""
    return f"{name}.keyword" if DOCUMENT_FIELDS.get(name) == "text+keyword" else name


def region_of(endpoint: str) -> str | None:
    """The region in an OpenSearch Serverless endpoint (``https://<id>.<region>.aoss.amazonaws.com``)."""
    match = _AOSS_HOST.match(urlsplit(endpoint).hostname or "")
    return match.group(1) if match else None


class OpenSearchIndex(SearchIndex):
    def __init__(self, client: OpenSearch, *, dimension: int, index: str = DEFAULT_INDEX) -> None:
        self.client = client
        self.index = index
        self._dimension = dimension

    @classmethod
    def connect(
        cls,
        endpoint: str,
        *,
        dimension: int,
        index: str = DEFAULT_INDEX,
        region: str | None = None,
        credentials: Any = None,
        boto3_session: boto3.session.Session | None = None,
        timeout_s: float = TIMEOUT_S,
    ) -> OpenSearchIndex:
        """A client for ``endpoint`` signing every request with SigV4 for the ``aoss`` service.

        Credentials and region come from the session (the function's role in Lambda) unless given.
        """
        session = boto3_session or boto3.session.Session()
        region = region or region_of(endpoint) or session.region_name
        if not region:
            raise ValueError("no AWS region for the OpenSearch endpoint: set AWS_REGION")
        credentials = credentials or session.get_credentials()
        if credentials is None:
            raise ValueError("no AWS credentials to sign OpenSearch requests with")
        client = OpenSearch(
            hosts=[endpoint],
            http_auth=AWSV4SignerAuth(credentials, region, SERVICE),
            connection_class=RequestsHttpConnection,
            verify_certs=True,
            timeout=timeout_s,
            max_retries=2,
            retry_on_timeout=False,
            pool_maxsize=10,
        )
        return cls(client, dimension=dimension, index=index)

    @property
    def dimension(self) -> int:
        return self._dimension

    def mapping(self) -> dict[str, Any]:
        return index_body(self._dimension)

    def setup(self) -> None:
        if self.client.indices.exists(index=self.index):
            return
        try:
            self.client.indices.create(index=self.index, body=self.mapping())
            logger.info("search index created", extra={"index": self.index, "dimension": self._dimension})
        except RequestError as error:
            if error.error != "resource_already_exists_exception":  # another process created it first
                raise

    def upsert(self, doc_id: str, fields: Mapping[str, Any], vector: Sequence[float]) -> None:
        check_document(fields)
        self._check_vector(vector)
        document = {**fields, ID_FIELD: doc_id, VECTOR_FIELD: [float(x) for x in vector]}
        actions: list[dict[str, Any]] = [{"delete": {"_id": _id}} for _id in self._copies(doc_id)]
        actions += [{"index": {}}, document]
        self._bulk(actions)

    def delete(self, doc_id: str) -> None:
        copies = self._copies(doc_id)
        if copies:
            self._bulk([{"delete": {"_id": _id}} for _id in copies])

    def query(
        self, text: str | None, vector: Sequence[float] | None, filters: Filters, k: int
    ) -> list[SearchHit]:
        check_filters(filters)
        if k <= 0 or (vector is None and not text):
            return []
        response = self.client.search(index=self.index, body=self.query_body(text, vector, filters, k))
        best: dict[str, SearchHit] = {}
        for hit in response.get("hits", {}).get("hits", []):
            source = dict(hit.get("_source") or {})
            doc_id = str(source.pop(ID_FIELD, hit.get("_id")))
            source.pop(VECTOR_FIELD, None)
            current = best.get(doc_id)
            if current is None or int(source.get("version") or 0) > int(current.fields.get("version") or 0):
                best[doc_id] = SearchHit(doc_id=doc_id, score=float(hit.get("_score") or 0.0), fields=source)
        return sorted(best.values(), key=lambda h: (-h.score, h.doc_id))[:k]

    def query_body(
        self, text: str | None, vector: Sequence[float] | None, filters: Filters, k: int
    ) -> dict[str, Any]:
        terms = [{"terms": {_keyword_path(name): filter_values(value)}} for name, value in filters.items()]
        clauses: list[dict[str, Any]] = []
        if vector is not None:
            self._check_vector(vector)
            knn: dict[str, Any] = {"vector": [float(x) for x in vector], "k": k}
            if terms:
                knn["filter"] = {"bool": {"filter": terms}}  # faiss filters while it searches
            clauses.append({"knn": {VECTOR_FIELD: knn}})
        if text:
            fields = [f"{name}^{TEXT_BOOST.get(name, 1.0):g}" for name in TEXT_FIELDS]
            clauses.append({"multi_match": {"query": text, "fields": fields}})
        query: dict[str, Any] = {"bool": {"should": clauses, "minimum_should_match": 1, "filter": terms}}
        # Room for stale copies of a doc_id (see the module's docstring), which the dedup drops.
        return {"size": k * 2, "query": query, "_source": {"excludes": [VECTOR_FIELD]}}

    # -- helpers --------------------------------------------------------------------------------------
    def _copies(self, doc_id: str) -> list[str]:
        body = {"size": MAX_COPIES, "_source": False, "query": {"term": {ID_FIELD: doc_id}}}
        response = self.client.search(index=self.index, body=body)
        return [str(hit["_id"]) for hit in response.get("hits", {}).get("hits", [])]

    def _bulk(self, actions: list[dict[str, Any]]) -> None:
        response = self.client.bulk(body=actions, index=self.index)
        if not response.get("errors"):
            return
        failures = []
        for item in response.get("items", []):
            for action, result in item.items():
                if action == "delete" and result.get("status") == 404:
                    continue  # already gone: what a delete wants
                if int(result.get("status", 200)) >= 300:
                    failures.append(f"{action}: {result.get('error')}")
        if failures:
            raise RuntimeError(f"OpenSearch bulk request failed: {'; '.join(failures[:5])}")

    def _check_vector(self, vector: Sequence[float]) -> None:
        if len(vector) != self._dimension:
            raise ValueError(f"a vector has {self._dimension} dimensions, not {len(vector)}")
