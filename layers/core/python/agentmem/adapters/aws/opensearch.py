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

A long journal message (``domain/passages.py``: longer than a passage) is searched by its passages too, as on
the embedded backend. Its document holds them as **nested documents** (``passages``: ``start``, ``end`` and a
``vector`` each, with the same k-NN method as the message's), not as documents of their own: a purge deletes a
conversation's documents by id (Serverless has no delete-by-query) and a message's nested passages go with it;
and a k-NN query over a nested field answers each message once, by its nearest passage, where documents per
passage would fill the k nearest with the passages of a few long messages. A journal query by meaning
(``query_body``) asks for the nearest messages by their whole vector *or* by a passage's (a nested ``knn`` that
names the passage in ``inner_hits``); each hit's score is then the embedded index's, ``passage_score`` of its
whole text's cosine and its best passage's (``domain/recall.py``), and the hit names that passage (``passage``:
its place among the message's passages; ``passage_start``/``passage_end``: its offsets), from which journal
search shows it as the snippet.

A vector query's score is the cosine similarity (what recall calibrates), read back from OpenSearch's score
for the ``innerproduct`` space (``1 + ip`` when ``ip >= 0``, else ``1 / (1 - ip)``).
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
from ...domain.recall import passage_score
from ...observability import logger
from ...ports.search_index import (
    DOCUMENT_FIELDS,
    MESSAGE_KIND,
    FieldType,
    Filters,
    SearchHit,
    SearchIndex,
    check_document,
    check_filters,
    filter_values,
)
from .journal_index import PassageDocument, PassageVector

DEFAULT_INDEX = "agentmem"
SERVICE = "aoss"
VECTOR_FIELD = "vector"
PASSAGES_FIELD = "passages"  # a long message's passages, nested: start, end, vector
PASSAGE_VECTOR = f"{PASSAGES_FIELD}.{VECTOR_FIELD}"
# the least score a k-NN match of unit vectors has in the innerproduct space (1 / (1 - ip), ip >= -1): a journal
# hit's score less its passage's below this is a message not matched by its whole vector
LEAST_KNN_SCORE = 0.5
MAX_KNN_SCORE = 2.0 + 1e-6  # ... and the most (1 + ip, ip <= 1)
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
    fields[VECTOR_FIELD] = _vector_mapping(dimension)
    fields[PASSAGES_FIELD] = {
        "type": "nested",
        "properties": {"start": {"type": "long"}, "end": {"type": "long"}, VECTOR_FIELD: _vector_mapping(dimension)},
    }
    return fields


def _vector_mapping(dimension: int) -> dict[str, Any]:
    return {
        "type": "knn_vector",
        "dimension": dimension,
        "method": {
            "name": "hnsw",
            "engine": "faiss",  # the engine that filters while it searches (efficient k-NN filtering)
            "space_type": "innerproduct",
            "parameters": {"ef_construction": 128, "m": 16},
        },
    }


def cosine_of(score: float) -> float:
    """The inner product (the cosine of unit vectors) a k-NN score of the ``innerproduct`` space stands for."""
    cosine = score - 1.0 if score >= 1.0 else 1.0 - 1.0 / score if score > 0 else -1.0
    return min(cosine, 1.0)


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
    """What cannot change in place (OpenSearch answers a mapping with defaults of its own filled in); a nested
    field's own fields are compared too."""
    if any(mapped.get(key) != wanted.get(key) for key in ("type", "analyzer", "dimension")):
        return True
    inner, wanted_inner = mapped.get("properties") or {}, wanted.get("properties") or {}
    return any(name not in inner or _differs(inner[name], spec) for name, spec in wanted_inner.items())


def _missing(error: Exception) -> bool:
    return isinstance(error, NotFoundError) and error.error == INDEX_MISSING


def _journal(filters: Filters) -> bool:
    """A query for journal messages only (filtered on their kind)."""
    kind = filters.get("kind")
    return kind == MESSAGE_KIND or (isinstance(kind, list | tuple) and list(kind) == [MESSAGE_KIND])


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
        self.upsert_with_passages([(doc_id, fields, vector, ()) for doc_id, fields, vector in docs])

    def upsert_with_passages(self, docs: Sequence[PassageDocument]) -> None:
        """``upsert_many`` of documents each with a long message's passages (``journal_index.upsert_documents``),
        nested in its document: one lookup and one bulk for them all, as without."""
        latest: dict[str, dict[str, Any]] = {}
        for doc_id, fields, vector, parts in docs:
            check_document(fields)
            self._check_vector(vector)
            if parts and fields.get("kind") != MESSAGE_KIND:
                raise ValueError("only a journal message's document holds passages")
            document = {**fields, ID_FIELD: doc_id, VECTOR_FIELD: [float(x) for x in vector]}
            if parts:
                document[PASSAGES_FIELD] = [self._passage(part) for part in parts]
            latest.pop(doc_id, None)  # a later one of the same doc_id wins, in its own place
            latest[doc_id] = document
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
            source.pop(PASSAGES_FIELD, None)
            score = float(hit.get("_score") or 0.0)
            if vector is not None and not text:
                score = self._semantic_score(hit, score, source)
            current = best.get(doc_id)
            if current is None or int(source.get("version") or 0) > int(current.fields.get("version") or 0):
                best[doc_id] = SearchHit(doc_id=doc_id, score=score, fields=source)
        return sorted(best.values(), key=lambda h: (-h.score, h.doc_id))[:k]

    @staticmethod
    def _semantic_score(hit: Mapping[str, Any], score: float, fields: dict[str, Any]) -> float:
        """A vector query's hit as a cosine. A journal message found by a passage (its nearest, in ``inner_hits``)
        is scored as the embedded index scores it, ``passage_score`` of its whole text's cosine and that
        passage's, and names the passage in ``fields``; its whole text's score is the hit's less the passage's
        (a ``bool`` adds the scores of the clauses that matched), none when only the passage matched."""
        inner = ((hit.get("inner_hits") or {}).get(PASSAGES_FIELD) or {}).get("hits", {}).get("hits") or []
        if not inner:  # one clause matched; both when over one match's best (some k-NN releases drop inner hits)
            return cosine_of(score / 2 if score > MAX_KNN_SCORE else score)
        nearest = max(inner, key=lambda h: float(h.get("_score") or 0.0))
        part = float(nearest.get("_score") or 0.0)
        whole = score - part
        at = (nearest.get("_nested") or {}).get("offset")
        if isinstance(at, int):
            fields["passage"] = at
        found = nearest.get("fields") or {}
        for name in ("start", "end"):
            value = found.get(f"{PASSAGES_FIELD}.{name}")
            if isinstance(value, list) and value and isinstance(value[0], int):
                fields[f"passage_{name}"] = value[0]
        return passage_score(cosine_of(whole) if whole >= LEAST_KNN_SCORE else None, [cosine_of(part)])

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
            if not text and _journal(filters):
                return self._journal_vector_body(knn, inner, terms, k)
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
        return {"size": k * 2, "query": query, "_source": {"excludes": [VECTOR_FIELD, PASSAGES_FIELD]}}

    @staticmethod
    def _journal_vector_body(knn: dict[str, Any], inner: dict[str, Any], terms: list[dict[str, Any]],
                             k: int) -> dict[str, Any]:
        """Journal messages by meaning: the k nearest by their whole vector, or by a passage's (a nested ``knn``
        whose filter, on the message's own fields, filters while it searches; it answers each message once, by
        its nearest passage, which ``inner_hits`` names). ``ignore_unmapped``: an index set up before passages
        answers by the whole vectors until its mapping gains them."""
        nested = {"nested": {
            "path": PASSAGES_FIELD, "score_mode": "max", "ignore_unmapped": True,
            "query": {"knn": {PASSAGE_VECTOR: dict(inner)}},
            "inner_hits": {"size": 1, "_source": False,
                           "fields": [f"{PASSAGES_FIELD}.start", f"{PASSAGES_FIELD}.end"]},
        }}
        query = {"bool": {"should": [knn, nested], "minimum_should_match": 1, "filter": terms}}
        # a message found by either clause, and room for stale copies (see the module's docstring)
        return {"size": k * 3, "query": query, "_source": {"excludes": [VECTOR_FIELD, PASSAGES_FIELD]}}

    # -- helpers --------------------------------------------------------------------------------------
    def _passage(self, part: PassageVector) -> dict[str, Any]:
        self._check_vector(part.vector)
        if not 0 <= part.start < part.end:
            raise ValueError(f"a passage runs from {part.start} to {part.end}")
        return {"start": part.start, "end": part.end, VECTOR_FIELD: [float(x) for x in part.vector]}

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
