"""An in-memory search index: documents and vectors in a dict, searched by brute force, word by word.

The embedded backend's own semantic index is ``vector_index.SqliteVectorIndex`` (vectors in the database, fed by
the store's change queue). This one implements the port as OpenSearch does — documents addressed by id, text and
vector queries with filters — and stands in for it where the AWS indexer and journal are tested without a cluster.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from ...ports.search_index import (
    TEXT_BOOST,
    TEXT_FIELDS,
    Filters,
    SearchHit,
    SearchIndex,
    check_document,
    check_filters,
    holds,
)

_WORD = re.compile(r"\w+", re.UNICODE)


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class InMemorySearchIndex(SearchIndex):
    def __init__(self, dimension: int) -> None:
        self._dimension = dimension
        self._docs: dict[str, tuple[dict[str, Any], list[float]]] = {}
        self._lock = threading.Lock()

    @property
    def dimension(self) -> int:
        return self._dimension

    def setup(self) -> None:
        """Nothing to create: the index is a dict."""

    def upsert(self, doc_id: str, fields: Mapping[str, Any], vector: Sequence[float]) -> None:
        check_document(fields)
        self._check_vector(vector)
        with self._lock:
            self._docs[doc_id] = (dict(fields), [float(x) for x in vector])

    def delete(self, doc_id: str) -> None:
        with self._lock:
            self._docs.pop(doc_id, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._docs)

    def get(self, doc_id: str) -> Mapping[str, Any] | None:
        """The stored fields of a document (tests and the rebuild check use it)."""
        with self._lock:
            found = self._docs.get(doc_id)
        return dict(found[0]) if found else None

    def query(
        self, text: str | None, vector: Sequence[float] | None, filters: Filters, k: int
    ) -> list[SearchHit]:
        check_filters(filters)
        if vector is not None:
            self._check_vector(vector)
        if k <= 0:
            return []
        with self._lock:
            candidates = [
                (doc_id, fields, vec) for doc_id, (fields, vec) in self._docs.items() if holds(fields, filters)
            ]
        scores: dict[str, float] = {}
        if vector is not None:
            nearest = sorted(
                ((sum(a * b for a, b in zip(vec, vector, strict=True)), doc_id) for doc_id, _, vec in candidates),
                key=lambda pair: (-pair[0], pair[1]),
            )[:k]
            scores.update({doc_id: score for score, doc_id in nearest})
        if text:
            query_words = set(_words(text))
            for doc_id, fields, _ in candidates:
                score = self._text_score(query_words, fields)
                if score > 0:
                    scores[doc_id] = scores.get(doc_id, 0.0) + score
        by_id = {doc_id: fields for doc_id, fields, _ in candidates}
        ranked = sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))[:k]
        return [SearchHit(doc_id, score, dict(by_id[doc_id])) for doc_id, score in ranked]

    @staticmethod
    def _text_score(query_words: set[str], fields: Mapping[str, Any]) -> float:
        """Each query word found in a field (as a word or the start of one) adds that field's weight."""
        score = 0.0
        for name in TEXT_FIELDS:
            value = fields.get(name)
            if not value:
                continue
            field_words = _words(str(value))
            for word in query_words:
                if any(candidate.startswith(word) for candidate in field_words):
                    score += TEXT_BOOST.get(name, 1.0)
        return score

    def _check_vector(self, vector: Sequence[float]) -> None:
        if len(vector) != self._dimension:
            raise ValueError(f"a vector has {self._dimension} dimensions, not {len(vector)}")
