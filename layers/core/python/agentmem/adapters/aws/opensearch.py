"""The semantic index on OpenSearch Serverless (a VECTORSEARCH collection), through opensearch-py with SigV4.

The index is made by the code that uses it, never by hand: ``setup()`` creates it with its mapping when it
is missing (a ``resource_already_exists_exception`` is another process winning the race: success), or adds
the fields the mapping has gained since it was created. Writes run it once per process before their first
request; a query on a missing index answers no hits and runs it. So the first stream record on a new
collection creates the index, and a recall before that answers nothing rather than failing.

A vector search collection does not accept documents under ids of our choosing (``PUT <index>/_doc/<id>``
is refused; OpenSearch assigns ``_id``). So our id is a keyword field, ``doc_id``, and:

- ``upsert_many`` looks up the ``_id`` of every copy of its ``doc_id``\\ s (one ``terms`` query), then sends
  one ``_bulk``: a ``delete`` for each copy, and an ``index`` of each new document;
- ``delete_many`` does the same without the ``index``.

Search lags writes by the collection's refresh interval (Serverless has no ``refresh``; nothing here asks
for one), so a copy indexed moments before the next change of the same ``doc_id`` may be missed and
survive; queries then keep only the highest ``version`` of each ``doc_id``, the next change sweeps every
copy, and recall re-reads every hit from the store (SPEC §6.2) — a stale copy can cost a candidate slot,
never return stale or deleted content. The same calls work on any OpenSearch cluster.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import boto3
from opensearchpy import OpenSearch, RequestsHttpConnection
from opensearchpy.exceptions import NotFoundError, RequestError
from opensearchpy.helpers.signer import AWSV4SignerAuth

from ...domain.clock import TimeRange
from ...observability import logger
from ...ports.search_index import (
    DOCUMENT_FIELDS,
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
MAX_RESULT_WINDOW = 10_000  # OpenSearch's index.max_result_window: the most one search returns
IDS_PER_REQUEST = 100  # doc_ids looked up (and swept) per search + bulk pair
TIMEOUT_S = 5.0  # recall falls back to keyword search when the index is slow (SPEC §6.2)
TEXT_ANALYZER = "english"  # stemming (refunds → refund) and English stop words
# BM25 over the text fields, name above description above content (SPEC §6.1). ``most_fields`` adds the
# fields' scores, so a query word counts in every field that holds it and an entry holding more query words
# ranks higher, as the word rules (and the embedded index) count them; ``best_fields`` would score only the
# best field and ignore the words matched elsewhere.
MULTI_MATCH_FIELDS = ("name^3", "description^2", "content")
MULTI_MATCH_TYPE = "most_fields"
INDEX_MISSING = "index_not_found_exception"
ALREADY_EXISTS = "resource_already_exists_exception"
_AOSS_HOST = re.compile(r"^[a-z0-9-]+\.([a-z0-9-]+)\.aoss(?:-fips)?\.amazonaws\.com$")

_FIELD_MAPPINGS: Mapping[FieldType, dict[str, Any]] = {
    "text": {"type": "text", "analyzer": TEXT_ANALYZER},
    "keyword": {"type": "keyword"},
    "text+keyword": {
        "type": "text", "analyzer": TEXT_ANALYZER, "fields": {"keyword": {"type": "keyword", "ignore_above": 256}}
    },
    "float": {"type": "float"},
    "long": {"type": "long"},
    "date": {"type": "date"},
}

Document = tuple[str, Mapping[str, Any], Sequence[float]]


class IndexMissingError(Exception):
    """The index is not there (deleted after this process set it up)."""


def index_body(dimension: int) -> dict[str, Any]:
    """Settings and mapping of the index: strict fields of ``DOCUMENT_FIELDS``, ``doc_id``, and a faiss
    HNSW ``knn_vector`` scored by inner product (the embedder's unit vectors make it cosine)."""
    mappings = {"dynamic": "strict", "properties": properties(dimension)}
    return {"settings": {"index": {"knn": True}}, "mappings": mappings}


def properties(dimension: int) -> dict[str, Any]:
    fields: dict[str, Any] = {ID_FIELD: {"type": "keyword"}}
    fields.update({name: dict(_FIELD_MAPPINGS[kind]) for name, kind in DOCUMENT_FIELDS.items()})
    fields[VECTOR_FIELD] = {
        "type": "knn_vector",
        "dimension": dimension,
        "method": {
            "name": "hnsw",
            "engine": "faiss",  # the engine that filters while it searches (efficient k-NN filtering)
            "space_type": "innerproduct",
            "parameters": {"ef_construction": 128, "m": 16},
        },
    }
    return fields


def _keyword_path(name: str) -> str:
    """The field a keyword filter reads: ``name`` is text with a ``name.keyword`` sub-field."""
    return f"{name}.keyword" if DOCUMENT_FIELDS.get(name) == "text+keyword" else name


def filter_clauses(filters: Filters) -> list[dict[str, Any]]:
    """A ``term`` for one value, a ``terms`` for a list (any of them), a ``range`` for a time range (strictly
    between its bounds)."""
    clauses: list[dict[str, Any]] = []
    for name, value in filters.items():
        if isinstance(value, TimeRange):
            bounds = {op: bound for op, bound in (("gt", value.after), ("lt", value.before)) if bound is not None}
            if bounds:
                clauses.append({"range": {name: bounds}})
            continue
        path = _keyword_path(name)
        clauses.append({"term": {path: value}} if isinstance(value, str) else {"terms": {path: filter_values(value)}})
    return clauses


def region_of(endpoint: str) -> str | None:
    """The region in an OpenSearch Serverless endpoint (``https://<id>.<region>.aoss.amazonaws.com``)."""
    match = _AOSS_HOST.match(urlsplit(endpoint).hostname or "")
    return match.group(1) if match else None


def _differs(mapped: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    """What cannot change in place (OpenSearch answers a mapping with defaults of its own filled in)."""
    return any(mapped.get(key) != wanted.get(key) for key in ("type", "analyzer", "dimension"))


def _missing(error: Exception) -> bool:
    return isinstance(error, NotFoundError) and error.error == INDEX_MISSING


class OpenSearchIndex(SearchIndex):
    """One per process (the container makes it): whether the index is set up is remembered here."""

    def __init__(self, client: OpenSearch, *, dimension: int, index: str = DEFAULT_INDEX) -> None:
        self.client = client
        self.index = index
        self._dimension = dimension
        self._ready = False
        self._setup_lock = threading.Lock()

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

    # -- setup ----------------------------------------------------------------------------------------
    def setup(self) -> None:
        """Create the index with its mapping if missing, else add the fields it lacks. Safe to race: of two
        creates one wins, and the other's ``resource_already_exists_exception`` is success."""
        try:
            current = self.client.indices.get_mapping(index=self.index)
        except NotFoundError as error:
            if error.error != INDEX_MISSING:
                raise
            self._create()
        else:
            self._add_missing_fields(current)
        self._ready = True

    def _create(self) -> None:
        try:
            self.client.indices.create(index=self.index, body=self.mapping())
            logger.info("search index created", extra={"index": self.index, "dimension": self._dimension})
        except RequestError as error:
            if error.error != ALREADY_EXISTS:
                raise

    def _add_missing_fields(self, current: Mapping[str, Any]) -> None:
        """An index made before the mapping gained a field gets it (``PUT _mapping``); a field whose
        definition changed (an embedder of another dimension) cannot be changed in place: that is logged,
        and rebuilding the index from the table is the way out."""
        described: Mapping[str, Any] = next(iter(current.values())) if current else {}
        mapped: dict[str, Any] = dict(described.get("mappings", {}).get("properties", {}))
        wanted = properties(self._dimension)
        missing = {name: spec for name, spec in wanted.items() if name not in mapped}
        changed = sorted(name for name, spec in wanted.items() if name in mapped and _differs(mapped[name], spec))
        if changed:
            logger.warning("search index mapping differs", extra={"index": self.index, "fields": changed})
        if missing:
            self.client.indices.put_mapping(index=self.index, body={"properties": missing})
            logger.info("search index mapping extended", extra={"index": self.index, "fields": sorted(missing)})

    def _ensure_ready(self) -> None:
        if self._ready:
            return
        with self._setup_lock:
            if not self._ready:
                self.setup()

    # -- writes ---------------------------------------------------------------------------------------
    def upsert(self, doc_id: str, fields: Mapping[str, Any], vector: Sequence[float]) -> None:
        self.upsert_many([(doc_id, fields, vector)])

    def upsert_many(self, docs: Sequence[Document]) -> None:
        latest: dict[str, dict[str, Any]] = {}
        for doc_id, fields, vector in docs:
            check_document(fields)
            self._check_vector(vector)
            latest.pop(doc_id, None)  # a later one of the same doc_id wins, in its own place
            latest[doc_id] = {**fields, ID_FIELD: doc_id, VECTOR_FIELD: [float(x) for x in vector]}
        ids = list(latest)
        for start in range(0, len(ids), IDS_PER_REQUEST):
            chunk = ids[start : start + IDS_PER_REQUEST]
            self._write(chunk, [latest[doc_id] for doc_id in chunk])

    def delete(self, doc_id: str) -> None:
        self.delete_many([doc_id])

    def delete_many(self, doc_ids: Sequence[str]) -> None:
        ids = list(dict.fromkeys(doc_ids))
        for start in range(0, len(ids), IDS_PER_REQUEST):
            self._write(ids[start : start + IDS_PER_REQUEST], [])

    def _write(self, doc_ids: list[str], documents: list[dict[str, Any]]) -> None:
        """Sweep every copy of ``doc_ids`` and index ``documents``: one search and one bulk. An index
        deleted since this process set it up is set up again, once."""
        for attempt in (1, 2):
            self._ensure_ready()
            try:
                copies = self._copies(doc_ids)
                actions: list[dict[str, Any]] = [{"delete": {"_id": _id}} for _id in copies]
                for document in documents:
                    actions += [{"index": {}}, document]
                if actions:
                    self._bulk(actions)
                return
            except IndexMissingError:
                self._ready = False
                if attempt == 2:
                    raise

    # -- queries --------------------------------------------------------------------------------------
    def query(
        self, text: str | None, vector: Sequence[float] | None, filters: Filters, k: int
    ) -> list[SearchHit]:
        check_filters(filters)
        if k <= 0 or (vector is None and not text):
            return []
        body = self.query_body(text, vector, filters, k)
        try:
            response = self.client.search(index=self.index, body=body)
        except NotFoundError as error:
            if not _missing(error):
                raise
            self._set_up_after_missing()
            return []
        best: dict[str, SearchHit] = {}
        for hit in response.get("hits", {}).get("hits", []):
            source = dict(hit.get("_source") or {})
            doc_id = str(source.pop(ID_FIELD, hit.get("_id")))
            source.pop(VECTOR_FIELD, None)
            current = best.get(doc_id)
            if current is None or int(source.get("version") or 0) > int(current.fields.get("version") or 0):
                best[doc_id] = SearchHit(doc_id=doc_id, score=float(hit.get("_score") or 0.0), fields=source)
        return sorted(best.values(), key=lambda h: (-h.score, h.doc_id))[:k]

    def _set_up_after_missing(self) -> None:
        """A query found no index: nothing to answer, and the index is made for the next one. A failure
        here is the writer's to report (the indexer sets up before its first write): a query never fails
        for it."""
        self._ready = False
        try:
            self._ensure_ready()
        except Exception as error:  # the query still answers (no hits)
            logger.warning("search index setup failed", extra={"index": self.index, "error": repr(error)})

    def query_body(
        self, text: str | None, vector: Sequence[float] | None, filters: Filters, k: int
    ) -> dict[str, Any]:
        """``vector`` alone: a ``knn`` query with the filters inside it (faiss filters while it searches,
        so the k nearest are k that pass). ``text`` alone: a ``multi_match`` that must match, under the
        filters. Both: a ``bool`` that should match either, under the filters."""
        terms = filter_clauses(filters)
        knn: dict[str, Any] | None = None
        if vector is not None:
            self._check_vector(vector)
            inner: dict[str, Any] = {"vector": [float(x) for x in vector], "k": k}
            if terms:
                inner["filter"] = {"bool": {"filter": terms}}
            knn = {"knn": {VECTOR_FIELD: inner}}
        match = None
        if text:
            match = {"multi_match": {"query": text, "fields": list(MULTI_MATCH_FIELDS), "type": MULTI_MATCH_TYPE,
                                     "operator": "or"}}
        query: dict[str, Any]
        if knn is not None and match is None:
            query = knn
        elif knn is None and match is not None:
            query = {"bool": {"must": [match], "filter": terms}}
        else:
            query = {"bool": {"should": [knn, match], "minimum_should_match": 1, "filter": terms}}
        # Room for stale copies of a doc_id (see the module's docstring), which the dedup drops.
        return {"size": k * 2, "query": query, "_source": {"excludes": [VECTOR_FIELD]}}

    # -- helpers --------------------------------------------------------------------------------------
    def _copies(self, doc_ids: list[str]) -> list[str]:
        """The ``_id`` of every copy of ``doc_ids`` (one ``terms`` query)."""
        size = min(MAX_RESULT_WINDOW, MAX_COPIES * len(doc_ids))
        body = {"size": size, "_source": False, "query": {"terms": {ID_FIELD: doc_ids}}}
        try:
            response = self.client.search(index=self.index, body=body)
        except NotFoundError as error:
            if _missing(error):
                raise IndexMissingError(self.index) from error
            raise
        return [str(hit["_id"]) for hit in response.get("hits", {}).get("hits", [])]

    def _bulk(self, actions: list[dict[str, Any]]) -> None:
        response = self.client.bulk(body=actions, index=self.index)
        if not response.get("errors"):
            return
        failures, missing = [], False
        for item in response.get("items", []):
            for action, result in item.items():
                error = result.get("error") or {}
                if isinstance(error, dict) and error.get("type") == INDEX_MISSING:
                    missing = True
                elif action == "delete" and result.get("status") == 404:
                    continue  # already gone: what a delete wants
                if int(result.get("status", 200)) >= 300:
                    failures.append(f"{action}: {result.get('error')}")
        if missing:
            raise IndexMissingError(self.index)
        if failures:
            raise RuntimeError(f"OpenSearch bulk request failed: {'; '.join(failures[:5])}")

    def _check_vector(self, vector: Sequence[float]) -> None:
        if len(vector) != self._dimension:
            raise ValueError(f"a vector has {self._dimension} dimensions, not {len(vector)}")
