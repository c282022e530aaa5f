"""A small OpenSearch of our own (none can be had offline), strict about what it is sent.

An HTTP server that records every request and answers the calls the OpenSearch adapter makes the way
OpenSearch (Serverless) does, errors included, in OpenSearch's own error shape:

- ``HEAD``/``PUT``/``DELETE <index>``, ``GET``/``PUT <index>/_mapping``: a missing index is a 404
  ``index_not_found_exception``, a second create a 400 ``resource_already_exists_exception``;
- ``POST <index>/_search``: the body is checked against the query DSL for the clauses the adapter uses
  (``bool`` with ``must``/``should``/``filter``/``must_not``/``minimum_should_match``, ``multi_match``,
  ``knn`` with ``vector``/``k``/``filter``, ``term``, ``terms``, ``range`` with ``gt``/``gte``/``lt``/``lte``,
  ``match_all``, ``nested`` with ``path``/``query``/``score_mode``/``ignore_unmapped``/``inner_hits``; ``size``,
  ``_source``) and against the index's mapping (a ``term`` on a keyword field, a ``range`` on a date field, a
  ``knn`` on a ``knn_vector`` with its dimension — one inside a ``nested`` field only within a ``nested`` query
  of that path —, a ``nested`` query's path a field of type ``nested``); anything else is refused with a 400
  ``parsing_exception``, so a malformed query fails the test.
  Queries are evaluated: filters and ``term``\\ s match exactly, ``multi_match`` scores the query's words in
  the fields (lower-cased, English stop words dropped, a crude English stemmer, as the ``english`` analyzer
  would), ``knn`` ranks the documents that pass its filter by inner product (in the ``innerproduct`` space's
  score, ``1 + ip`` or ``1 / (1 - ip)``). A ``nested`` query runs its query on each nested object of ``path`` as
  a document of its own and scores the parent by its matching objects' scores (``score_mode``: ``avg`` by
  default, ``max``, ``min``, ``sum``, ``none``); a ``knn`` on a nested vector answers the k nearest *parents*,
  each by its nearest object (its ``filter`` on the parent's fields, as OpenSearch's k-NN pre-filters them), as
  the k-NN plugin does without ``expand_nested_docs``; ``inner_hits`` lists each parent's matching objects,
  best first (``size``, default 3; ``_source``: the object, or not; ``fields``: some of its fields), each with its
  ``_nested.offset``;
- ``POST <index>/_bulk``: action lines (``index`` without an ``_id`` — a vector collection assigns them —
  and ``delete``), every document checked against the strict mapping. With no index, each item fails with
  ``index_not_found_exception`` (the index is never made by a write, with a mapping of its own guessing);
- a ``refresh`` parameter anywhere is refused: Serverless has none.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

Answer = tuple[int, Any]
STOP_WORDS = frozenset((  # Lucene's English stop words
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not", "of",
    "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was", "will", "with",
))
MAX_RESULT_WINDOW = 10_000


class DslError(Exception):
    """A request body OpenSearch would refuse."""

    def __init__(self, reason: str, kind: str = "parsing_exception") -> None:
        super().__init__(reason)
        self.kind = kind


def error(status: int, kind: str, reason: str, **extra: Any) -> Answer:
    cause = {"type": kind, "reason": reason, **extra}
    return status, {"error": {"root_cause": [cause], **cause}, "status": status}


def index_not_found(index: str) -> Answer:
    return error(404, "index_not_found_exception", f"no such index [{index}]", index=index,
                 **{"resource.id": index, "resource.type": "index_or_alias", "index_uuid": "_na_"})


def analyze(text: str) -> set[str]:
    """Roughly the ``english`` analyzer: words, lower-cased, no stop words, stemmed."""
    words = re.findall(r"\w+", text.lower())
    return {stem(w) for w in words if w not in STOP_WORDS}


def stem(word: str) -> str:
    for suffix in ("'s", "ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _one_key(clause: Any, where: str) -> tuple[str, Any]:
    if not isinstance(clause, dict) or len(clause) != 1:
        raise DslError(f"[{where}] malformed query, expected a single object with one key, got {clause!r}")
    return next(iter(clause.items()))


def _moment(value: Any, path: str) -> datetime:
    """A date as OpenSearch's ``strict_date_optional_time`` reads it (a ``Z`` or an offset; none is UTC)."""
    if not isinstance(value, str):
        raise DslError(f"failed to parse date field [{value!r}] of [{path}]", "parse_exception")
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise DslError(f"failed to parse date field [{value}] of [{path}]", "parse_exception") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _check_keys(body: Mapping[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise DslError(f"[{where}] unknown field [{unknown[0]}]")


SCORE_MODES = ("avg", "max", "min", "sum", "none")


@dataclass
class Index:
    mapping: dict[str, Any]
    settings: dict[str, Any]
    docs: dict[str, dict[str, Any]] = field(default_factory=dict)
    # a nested query's scope: its objects as documents (``{path: object}``), each object's parent and place
    nested_path: str | None = None
    parent: Index | None = None
    parent_of: dict[str, tuple[str, int]] = field(default_factory=dict)
    # the inner hits of the search running, by parent document, then by inner hits' name
    inner_hits: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def properties(self) -> dict[str, Any]:
        props: dict[str, Any] = self.mapping.setdefault("properties", {})
        return props

    def spec(self, path: str) -> dict[str, Any] | None:
        """The mapping of ``path``: a field, a field of a nested one (``passages.vector``), or a multi-field
        (``name.keyword``)."""
        name, _, sub = path.partition(".")
        spec = self.properties.get(name)
        if spec is None or not sub:
            return spec
        found = (spec.get("properties") if spec.get("type") == "nested" else spec.get("fields") or {}) or {}
        inner = found.get(sub)
        return inner if isinstance(inner, dict) else None

    def field_type(self, path: str) -> str | None:
        spec = self.spec(path)
        return None if spec is None else str(spec.get("type"))

    def _nested_field(self, path: str) -> str | None:
        """The nested field ``path`` is inside of (None for a field of the document itself)."""
        name, _, sub = path.partition(".")
        return name if sub and (self.properties.get(name) or {}).get("type") == "nested" else None

    def value(self, doc_id: str, path: str) -> Any:
        """The value of ``path`` in a document (a nested scope's objects are ``{path: object}``)."""
        doc = self.docs[doc_id]
        if self._nested_field(path) is None:
            return doc.get(path.partition(".")[0])
        name, _, sub = path.partition(".")
        held = doc.get(name)
        return held.get(sub) if isinstance(held, dict) else None

    # -- documents --------------------------------------------------------------------------------------
    def check_document(self, source: Any) -> None:
        if not isinstance(source, dict):
            raise DslError("failed to parse", "mapper_parsing_exception")
        for name, value in source.items():
            spec = self.properties.get(name)
            if spec is None:
                if self.mapping.get("dynamic") == "strict":
                    raise DslError(f"mapping set to strict, dynamic introduction of [{name}] within [_doc] is "
                                   "not allowed", "strict_dynamic_mapping_exception")
                continue
            self._check_value(name, spec, value)

    def _check_value(self, name: str, spec: dict[str, Any], value: Any) -> None:
        kind = spec["type"]
        if kind == "nested":
            objects = value if isinstance(value, list) else [value]
            for held in objects:
                if not isinstance(held, dict):
                    raise DslError(f"object mapping for [{name}] tried to parse field [{name}] as object, but found a "
                                   "concrete value", "mapper_parsing_exception")
                for sub, inner in held.items():
                    sub_spec = spec.get("properties", {}).get(sub)
                    if sub_spec is None:
                        if self.mapping.get("dynamic") == "strict":
                            raise DslError(f"mapping set to strict, dynamic introduction of [{sub}] within [{name}] "
                                           "is not allowed", "strict_dynamic_mapping_exception")
                        continue
                    self._check_value(f"{name}.{sub}", sub_spec, inner)
        elif kind == "knn_vector":
            if not isinstance(value, list) or len(value) != spec["dimension"]:
                raise DslError(f"Vector dimension mismatch. Expected: {spec['dimension']}, Given: "
                               f"{len(value) if isinstance(value, list) else value!r}", "mapper_parsing_exception")
        elif not isinstance(value, int | float if kind in ("long", "float") else str):
            raise DslError(f"failed to parse field [{name}] of type [{kind}]", "mapper_parsing_exception")

    # -- queries ----------------------------------------------------------------------------------------
    def search(self, body: Mapping[str, Any]) -> list[tuple[str, float]]:
        _check_keys(body, {"size", "query", "_source"}, "search")
        size = body.get("size", 10)
        if not isinstance(size, int) or size < 0:
            raise DslError(f"[size] must be a non-negative integer, got {size!r}")
        if size > MAX_RESULT_WINDOW:
            raise DslError(f"Result window is too large, size must be <= {MAX_RESULT_WINDOW}",
                           "illegal_argument_exception")
        source = body.get("_source", True)
        if not (isinstance(source, bool) or (isinstance(source, list) and all(isinstance(s, str) for s in source))):
            if not isinstance(source, dict):
                raise DslError(f"[_source] malformed: {source!r}")
            _check_keys(source, {"includes", "excludes"}, "_source")
        self.inner_hits = {}
        scores = self.evaluate(body.get("query", {"match_all": {}}), set(self.docs))
        return sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))[:size]

    def evaluate(self, clause: Any, among: set[str]) -> dict[str, float]:
        """The documents of ``among`` matching ``clause``, with their scores."""
        kind, body = _one_key(clause, "query")
        if kind == "match_all":
            if body != {}:
                raise DslError("[match_all] takes no parameters here")
            return dict.fromkeys(among, 1.0)
        if kind == "term":
            path, value = _one_key(body, "term")
            if isinstance(value, dict):
                _check_keys(value, {"value"}, "term")
                value = value["value"]
            self._keyword(path, "term")
            return {i: 1.0 for i in among if value in self._values(i, path)}
        if kind == "terms":
            path, values = _one_key(body, "terms")
            if not isinstance(values, list):
                raise DslError("[terms] query does not support values that are not a list")
            self._keyword(path, "terms")
            return {i: 1.0 for i in among if set(values) & set(self._values(i, path))}
        if kind == "range":
            return self._range(body, among)
        if kind == "multi_match":
            return self._multi_match(body, among)
        if kind == "knn":
            return self._knn(body, among)
        if kind == "bool":
            return self._bool(body, among)
        if kind == "nested":
            return self._nested(body, among)
        raise DslError(f"unknown query [{kind}]")

    def _range(self, body: Any, among: set[str]) -> dict[str, float]:
        """A date field between bounds: the times compared as moments (a document without the field never
        matches), as OpenSearch reads them with the ``date`` type's default format."""
        path, bounds = _one_key(body, "range")
        if not isinstance(bounds, dict) or not bounds:
            raise DslError(f"[range] query malformed on [{path}]")
        _check_keys(bounds, {"gt", "gte", "lt", "lte"}, "range")
        if self.field_type(path) != "date":
            raise DslError(f"[range] on [{path}], which this fake only knows on date fields: "
                           f"{self.field_type(path)}", "query_shard_exception")
        limits = {op: _moment(value, path) for op, value in bounds.items()}
        tests = {"gt": lambda a, b: a > b, "gte": lambda a, b: a >= b, "lt": lambda a, b: a < b,
                 "lte": lambda a, b: a <= b}

        def within(doc_id: str) -> bool:
            value = self.value(doc_id, path)
            if not isinstance(value, str):
                return False
            held = _moment(value, path)
            return all(tests[op](held, limit) for op, limit in limits.items())

        return {i: 1.0 for i in among if within(i)}

    def _values(self, doc_id: str, path: str) -> list[Any]:
        value = self.value(doc_id, path)
        return value if isinstance(value, list) else [value]

    def _keyword(self, path: str, where: str) -> None:
        if self.field_type(path) != "keyword":
            raise DslError(f"[{where}] on [{path}], which is not a keyword field: {self.field_type(path)}",
                           "query_shard_exception")

    def _clauses(self, value: Any, where: str) -> list[Any]:
        if isinstance(value, dict):
            return [value]
        if not isinstance(value, list):
            raise DslError(f"[bool] malformed [{where}]")
        return value

    def _bool(self, body: Any, among: set[str]) -> dict[str, float]:
        if not isinstance(body, dict):
            raise DslError("[bool] malformed query")
        _check_keys(body, {"must", "should", "filter", "must_not", "minimum_should_match"}, "bool")
        must = self._clauses(body.get("must", []), "must")
        should = self._clauses(body.get("should", []), "should")
        filters = self._clauses(body.get("filter", []), "filter")
        must_not = self._clauses(body.get("must_not", []), "must_not")
        minimum = body.get("minimum_should_match", 0 if (must or filters) else 1)
        if not isinstance(minimum, int):
            raise DslError("[minimum_should_match] takes an integer here")
        if not (must or should or filters or must_not):
            return dict.fromkeys(among, 1.0)
        candidates = set(among)
        for clause in filters:
            candidates &= set(self.evaluate(clause, candidates))
        for clause in must_not:
            candidates -= set(self.evaluate(clause, candidates))
        scores = dict.fromkeys(candidates, 0.0)
        for clause in must:
            found = self.evaluate(clause, candidates)
            candidates &= set(found)
            scores = {i: scores[i] + found[i] for i in candidates}
        matched = dict.fromkeys(candidates, 0)
        for clause in should:
            for i, score in self.evaluate(clause, candidates).items():
                scores[i] += score
                matched[i] += 1
        required = min(minimum, len(should))
        return {i: scores[i] for i in candidates if matched[i] >= required}

    def _multi_match(self, body: Any, among: set[str]) -> dict[str, float]:
        if not isinstance(body, dict):
            raise DslError("[multi_match] malformed query")
        _check_keys(body, {"query", "fields", "type", "operator", "analyzer"}, "multi_match")
        query, fields = body.get("query"), body.get("fields")
        if not isinstance(query, str) or not isinstance(fields, list) or not fields:
            raise DslError("[multi_match] requires [query] and [fields]")
        kind = body.get("type", "best_fields")
        operator = str(body.get("operator", "or")).lower()
        if kind not in ("best_fields", "most_fields") or operator not in ("or", "and"):
            raise DslError(f"[multi_match] unsupported type [{kind}] or operator [{operator}]")
        if body.get("analyzer", "english") not in ("english", "standard"):
            raise DslError(f"[multi_match] analyzer [{body['analyzer']}] has not been configured",
                           "query_shard_exception")
        boosts: dict[str, float] = {}
        for spec in fields:
            name, _, boost = str(spec).partition("^")
            if self.field_type(name) != "text":
                raise DslError(f"[multi_match] on [{name}], which is not a text field", "query_shard_exception")
            boosts[name] = float(boost or 1.0)
        words = analyze(query)
        scores: dict[str, float] = {}
        for doc_id in among:
            per_field = {name: words & analyze(str(self.value(doc_id, name) or "")) for name in boosts}
            found = set().union(*per_field.values())
            if not found or (operator == "and" and found != words):
                continue
            field_scores = [boosts[name] * len(hit) for name, hit in per_field.items()]
            scores[doc_id] = sum(field_scores) if kind == "most_fields" else max(field_scores)
        return scores

    def _knn(self, body: Any, among: set[str]) -> dict[str, float]:
        path, spec = _one_key(body, "knn")
        if not isinstance(spec, dict):
            raise DslError("[knn] malformed query")
        _check_keys(spec, {"vector", "k", "filter"}, "knn")
        vector, k = spec.get("vector"), spec.get("k")
        mapped = self.spec(path) or {}
        if mapped.get("type") != "knn_vector":
            raise DslError(f"Field '{path}' is not knn_vector type.", "illegal_argument_exception")
        if self._nested_field(path) != self.nested_path:
            raise DslError(f"[knn] field [{path}] is inside the nested field [{self._nested_field(path)}]: query it "
                           "within a [nested] query of that path", "query_shard_exception")
        if not isinstance(vector, list) or not all(isinstance(x, int | float) for x in vector):
            raise DslError("[knn] requires a [vector] of numbers")
        if len(vector) != mapped["dimension"]:
            raise DslError(f"Query vector has invalid dimension: {len(vector)}. Dimension should be: "
                           f"{mapped['dimension']}", "illegal_argument_exception")
        if not isinstance(k, int) or k <= 0:
            raise DslError("[knn] requires k > 0")
        candidates = set(among)
        if "filter" in spec:
            if self.parent is None:
                candidates = set(self.evaluate(spec["filter"], candidates))
            else:  # within a nested query: the filter is on the parents' fields
                parents = {self.parent_of[i][0] for i in candidates}
                passed = set(self.parent.evaluate(spec["filter"], parents))
                candidates = {i for i in candidates if self.parent_of[i][0] in passed}
        scored = []
        for doc_id in candidates:
            stored = self.value(doc_id, path)
            if isinstance(stored, list):
                product = sum(a * b for a, b in zip(stored, vector, strict=True))
                scored.append((product + 1 if product >= 0 else 1 / (1 - product), doc_id))  # faiss innerproduct
        scored.sort(key=lambda p: (-p[0], p[1]))
        if self.parent is not None:  # the k nearest parents, each by its nearest object
            nearest: dict[str, tuple[float, str]] = {}
            for score, doc_id in scored:
                nearest.setdefault(self.parent_of[doc_id][0], (score, doc_id))
            scored = sorted(nearest.values(), key=lambda p: (-p[0], p[1]))
        return {doc_id: score for score, doc_id in scored[:k]}

    def _nested(self, body: Any, among: set[str]) -> dict[str, float]:
        if not isinstance(body, dict):
            raise DslError("[nested] malformed query")
        _check_keys(body, {"path", "query", "score_mode", "ignore_unmapped", "inner_hits"}, "nested")
        path, query = body.get("path"), body.get("query")
        if not isinstance(path, str) or query is None:
            raise DslError("[nested] requires 'path' and 'query' field")
        ignore = body.get("ignore_unmapped", False)
        if not isinstance(ignore, bool):
            raise DslError("[nested] [ignore_unmapped] must be a boolean")
        mode = body.get("score_mode", "avg")
        if mode not in SCORE_MODES:
            raise DslError(f"illegal score_mode [{mode}]", "illegal_argument_exception")
        inner = body.get("inner_hits")
        if inner is not None:
            _check_inner_hits(inner, path)
        if self.parent is not None:
            raise DslError("[nested] this fake nests one level only")
        spec = self.properties.get(path)
        if spec is None:
            if ignore:
                return {}
            raise DslError(f"[nested] failed to find nested object under path [{path}]", "query_shard_exception")
        if spec.get("type") != "nested":
            raise DslError(f"[nested] nested object under path [{path}] is not of nested type",
                           "query_shard_exception")
        scope = Index(self.mapping, self.settings, nested_path=path, parent=self)
        for parent in sorted(among):
            held = self.docs[parent].get(path)
            for offset, obj in enumerate(held if isinstance(held, list) else [] if held is None else [held]):
                scope.docs[f"{parent}#{offset}"] = {path: obj}
                scope.parent_of[f"{parent}#{offset}"] = (parent, offset)
        found = scope.evaluate(query, set(scope.docs))
        by_parent: dict[str, list[tuple[float, int]]] = {}
        for child, score in found.items():
            parent, offset = scope.parent_of[child]
            by_parent.setdefault(parent, []).append((score, offset))
        scores: dict[str, float] = {}
        for parent, matched in by_parent.items():
            values = [score for score, _ in matched]
            scores[parent] = {"avg": sum(values) / len(values), "max": max(values), "min": min(values),
                              "sum": sum(values), "none": 0.0}[mode]
            if inner is not None:
                self.inner_hits.setdefault(parent, {})[inner.get("name", path)] = _inner_hits(
                    parent, path, inner, matched, self.docs[parent][path])
        return scores


def _check_inner_hits(inner: Any, path: str) -> None:
    if not isinstance(inner, dict):
        raise DslError("[inner_hits] malformed")
    _check_keys(inner, {"size", "from", "_source", "fields", "name"}, "inner_hits")
    for key in ("size", "from"):
        if key in inner and (not isinstance(inner[key], int) or isinstance(inner[key], bool) or inner[key] < 0):
            raise DslError(f"[inner_hits] [{key}] must be a non-negative integer")
    if not isinstance(inner.get("_source", True), bool):
        raise DslError("[inner_hits] [_source] takes true or false here")
    fields = inner.get("fields", [])
    if not isinstance(fields, list) or not all(isinstance(f, str) and f.startswith(f"{path}.") for f in fields):
        raise DslError(f"[inner_hits] [fields] must list fields of [{path}]")


def _inner_hits(parent: str, path: str, inner: Mapping[str, Any], matched: list[tuple[float, int]],
                objects: Any) -> dict[str, Any]:
    """A parent's inner hits: its matching objects, best first, as OpenSearch lists them."""
    held = objects if isinstance(objects, list) else [objects]
    ranked = sorted(matched, key=lambda pair: (-pair[0], pair[1]))
    start = inner.get("from", 0)
    hits = []
    for score, offset in ranked[start : start + inner.get("size", 3)]:
        hit: dict[str, Any] = {"_id": parent, "_nested": {"field": path, "offset": offset}, "_score": score}
        if inner.get("_source", True):
            hit["_source"] = held[offset]
        wanted = {name: [held[offset][name.partition(".")[2]]] for name in inner.get("fields", [])
                  if name.partition(".")[2] in held[offset]}
        if wanted:
            hit["fields"] = wanted
        hits.append(hit)
    return {"hits": {"total": {"value": len(matched), "relation": "eq"},
                     "max_score": ranked[0][0] if ranked else None, "hits": hits}}


def _check_mapping(body: Any) -> None:
    if not isinstance(body, dict):
        raise DslError("[mappings] malformed")
    _check_keys(body, {"dynamic", "properties"}, "mappings")
    for name, spec in body.get("properties", {}).items():
        _check_field(name, spec)


def _check_field(name: str, spec: Any) -> None:
    kind = spec.get("type") if isinstance(spec, dict) else None
    allowed = {
        "text": {"type", "analyzer", "fields"}, "keyword": {"type", "ignore_above"}, "long": {"type"},
        "float": {"type"}, "date": {"type"}, "knn_vector": {"type", "dimension", "method"},
        "nested": {"type", "properties"},
    }
    if kind not in allowed:
        raise DslError(f"No handler for type [{kind}] declared on field [{name}]", "mapper_parsing_exception")
    _check_keys(spec, allowed[kind], name)
    if kind == "text" and spec.get("analyzer", "standard") not in ("english", "standard"):
        raise DslError(f"analyzer [{spec['analyzer']}] has not been configured in mappings", "mapper_parsing_exception")
    for sub, sub_spec in spec.get("fields", {}).items():
        _check_field(f"{name}.{sub}", sub_spec)
    if kind == "nested":
        if not isinstance(spec.get("properties", {}), dict):
            raise DslError(f"[{name}] malformed properties", "mapper_parsing_exception")
        for sub, sub_spec in spec.get("properties", {}).items():
            if isinstance(sub_spec, dict) and sub_spec.get("type") == "nested":
                raise DslError(f"[{name}.{sub}] this fake nests one level only", "mapper_parsing_exception")
            _check_field(f"{name}.{sub}", sub_spec)
    if kind == "knn_vector":
        method = spec.get("method", {})
        if method.get("engine") not in ("faiss", "lucene", "nmslib") or method.get("name") != "hnsw":
            raise DslError(f"[{name}] unsupported knn method {method!r}", "mapper_parsing_exception")


@dataclass
class FakeOpenSearch:
    requests: list[Recorded] = field(default_factory=list)
    indices: dict[str, Index] = field(default_factory=dict)
    fail_bulk: bool = False
    fail_with: int | None = None  # every request answered with this status (429: throttled, 5xx: failing)
    race: threading.Barrier | None = None  # lookups of a missing index wait for each other: a setup race
    race_wait_s: float = 5.0  # how long a lookup waits for the other at the race (then it goes on alone)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def docs(self, index: str = "agentmem") -> dict[str, dict[str, Any]]:
        return self.indices[index].docs

    def sent(self, method: str | None = None, suffix: str = "") -> list[Recorded]:
        return [r for r in self.requests if (method is None or r.method == method) and r.path.endswith(suffix)]

    def answer(self, method: str, url: str, body: bytes) -> Answer:
        if self.fail_with is not None:
            kind = "too_many_requests" if self.fail_with == 429 else "internal_server_error"
            return error(self.fail_with, kind, "injected fault")
        parts = urlsplit(url)
        if "refresh" in parse_qs(parts.query):
            return error(400, "illegal_argument_exception", "refresh is not supported on serverless collections")
        segments = [p for p in parts.path.split("/") if p]
        index = segments[0] if segments else ""
        action = segments[1] if len(segments) > 1 else None
        if self.race is not None and method == "GET" and action == "_mapping" and index not in self.indices:
            with suppress(threading.BrokenBarrierError):
                self.race.wait(timeout=self.race_wait_s)
        with self.lock:
            try:
                return self._answer(method, index, action, body)
            except DslError as refused:
                return error(400, refused.kind, str(refused), line=1, col=1)
            except (ValueError, KeyError, TypeError) as refused:
                return error(400, "parsing_exception", f"malformed request: {refused!r}", line=1, col=1)

    def _answer(self, method: str, index: str, action: str | None, body: bytes) -> Answer:
        if action is None and method == "HEAD":
            return (200 if index in self.indices else 404), None
        if action is None and method == "PUT":
            request = json.loads(body or b"{}")
            _check_keys(request, {"settings", "mappings"}, "create index")
            _check_mapping(request.get("mappings", {}))
            if index in self.indices:
                return error(400, "resource_already_exists_exception", f"index [{index}/abc123] already exists",
                             index=index, index_uuid="abc123")
            self.indices[index] = Index(mapping=request.get("mappings", {}), settings=request.get("settings", {}))
            return 200, {"acknowledged": True, "shards_acknowledged": True, "index": index}
        if action is None and method == "DELETE":
            if index not in self.indices:
                return index_not_found(index)
            del self.indices[index]
            return 200, {"acknowledged": True}
        if index not in self.indices:
            if action == "_bulk" and method in ("POST", "PUT"):
                return self._bulk_without_index(index, body)
            return index_not_found(index)
        target = self.indices[index]
        if action == "_mapping" and method == "GET":
            return 200, {index: {"mappings": target.mapping}}
        if action == "_mapping" and method == "PUT":
            request = json.loads(body)
            _check_mapping(request)
            for name, spec in request.get("properties", {}).items():
                if name in target.properties and target.properties[name] != spec:
                    return error(400, "illegal_argument_exception", f"mapper [{name}] cannot be changed")
                target.properties[name] = spec
            return 200, {"acknowledged": True}
        if action == "_search" and method in ("GET", "POST"):
            return 200, self._search(index, target, json.loads(body or b"{}"))
        if action == "_bulk" and method in ("POST", "PUT"):
            return self._bulk(target, body)
        return error(400, "parsing_exception", f"the fake does not serve {method} /{index}/{action}")

    def _search(self, name: str, index: Index, body: Mapping[str, Any]) -> dict[str, Any]:
        found = index.search(body)
        source = body.get("_source", True)
        hits = []
        for doc_id, score in found:
            hit: dict[str, Any] = {"_index": name, "_id": doc_id, "_score": score}
            if doc_id in index.inner_hits:
                hit["inner_hits"] = {key: {"hits": {**found_inner["hits"], "hits": [
                    {"_index": name, **h} for h in found_inner["hits"]["hits"]]}}
                    for key, found_inner in index.inner_hits[doc_id].items()}
            if source is not False:
                stored = index.docs[doc_id]
                if isinstance(source, list):
                    stored = {k: v for k, v in stored.items() if k in source}
                elif isinstance(source, dict):
                    includes, excludes = source.get("includes"), set(source.get("excludes", []))
                    stored = {k: v for k, v in stored.items() if k not in excludes and (not includes or k in includes)}
                hit["_source"] = stored
            hits.append(hit)
        return {"took": 1, "timed_out": False, "hits": {"total": {"value": len(hits), "relation": "eq"}, "hits": hits}}

    @staticmethod
    def _lines(body: bytes) -> list[Any]:
        text = body.decode()
        if not text.endswith("\n"):
            raise DslError("The bulk request must be terminated by a newline [\\n]", "illegal_argument_exception")
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def _actions(self, body: bytes) -> Iterator[tuple[str, dict[str, Any], Any]]:
        lines = self._lines(body)
        position = 0
        while position < len(lines):
            verb, meta = _one_key(lines[position], "bulk action")
            position += 1
            if verb not in ("index", "create", "delete") or not isinstance(meta, dict):
                raise DslError(f"Malformed action/metadata line [{position}], unknown action [{verb}]",
                               "illegal_argument_exception")
            _check_keys(meta, {"_index", "_id"}, f"bulk {verb}")
            source = None
            if verb in ("index", "create"):
                if "_id" in meta:
                    raise DslError("Document ID is not supported in create/index operation request",
                                   "illegal_argument_exception")  # a vector collection assigns ids
                if position >= len(lines):
                    raise DslError("Validation Failed: 1: no requests added;", "action_request_validation_exception")
                source = lines[position]
                position += 1
            elif "_id" not in meta:
                raise DslError("Validation Failed: 1: id is missing;", "action_request_validation_exception")
            yield verb, meta, source

    def _bulk_without_index(self, index: str, body: bytes) -> Answer:
        items = []
        for verb, meta, _ in self._actions(body):
            _, failure = index_not_found(index)
            items.append({verb: {"_index": index, "_id": meta.get("_id"), "status": 404, "error": failure["error"]}})
        return 200, {"took": 1, "errors": True, "items": items}

    def _bulk(self, index: Index, body: bytes) -> Answer:
        items, errors = [], False
        for verb, meta, source in self._actions(body):
            if self.fail_bulk:
                errors = True
                items.append({verb: {"status": 429, "error": {"type": "too_many_requests", "reason": "slow down"}}})
            elif verb == "delete":
                gone = index.docs.pop(meta["_id"], None)
                items.append({"delete": {"_id": meta["_id"], "status": 200 if gone else 404,
                                         "result": "deleted" if gone else "not_found"}})
            else:
                try:
                    index.check_document(source)
                except DslError as refused:
                    errors = True
                    items.append({verb: {"status": 400, "error": {"type": refused.kind, "reason": str(refused)}}})
                    continue
                new_id = uuid.uuid4().hex
                index.docs[new_id] = source
                items.append({verb: {"_id": new_id, "status": 201, "result": "created"}})
        return 200, {"took": 1, "errors": errors, "items": items}


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


@contextmanager
def serve() -> Iterator[tuple[FakeOpenSearch, str]]:
    """The fake on a free local port: (its state, its URL)."""
    state = FakeOpenSearch()

    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with state.lock:
                state.requests.append(Recorded(self.command, self.path, dict(self.headers.items()), body))
            status, answer = state.answer(self.command, self.path, body)
            payload = b"" if answer is None else json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=UTF-8")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _serve

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield state, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
