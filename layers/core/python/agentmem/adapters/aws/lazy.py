"""Adapters made on first use: a Lambda's cold start pays only for the clients its first request needs.

The conversation store holds the journal bucket and the search index from the start, but an append or a
read of the hot tail touches neither; ``LazyBlobStore`` and ``LazySearchIndex`` make the S3 client or the
OpenSearch connection (and import opensearch-py) the first time one of their methods is called.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Generic, TypeVar

from ...ports.blobs import BlobInfo, BlobStore
from ...ports.search_index import Filters, SearchHit, SearchIndex

_A = TypeVar("_A")


class _Once(Generic[_A]):
    def __init__(self, make: Callable[[], _A]) -> None:
        self._make = make
        self._made: _A | None = None
        self._lock = threading.Lock()

    def __call__(self) -> _A:
        if self._made is None:
            with self._lock:
                if self._made is None:
                    self._made = self._make()
        return self._made


class LazyBlobStore(BlobStore):
    def __init__(self, make: Callable[[], BlobStore]) -> None:
        self._store = _Once(make)

    def put(self, key: str, data: bytes, *, if_none_match: bool = False) -> None:
        self._store().put(key, data, if_none_match=if_none_match)

    def get(self, key: str) -> bytes:
        return self._store().get(key)

    def delete(self, key: str) -> None:
        self._store().delete(key)

    def stat(self, key: str) -> BlobInfo:
        return self._store().stat(key)

    def list(self, prefix: str = "", *, start_after: str = "") -> Iterator[BlobInfo]:
        return self._store().list(prefix, start_after=start_after)

    def signed_url(
        self, key: str, *, method: str, expires_in_s: int, size: int | None = None, filename: str | None = None,
        content_type: str | None = None,
    ) -> str:
        return self._store().signed_url(key, method=method, expires_in_s=expires_in_s, size=size, filename=filename,
                                        content_type=content_type)

    def fits(self, key: str) -> bool:
        return self._store().fits(key)

    def delete_prefix(self, prefix: str) -> Sequence[str]:
        return self._store().delete_prefix(prefix)


class LazySearchIndex(SearchIndex):
    def __init__(self, make: Callable[[], SearchIndex]) -> None:
        self._index = _Once(make)

    @property
    def dimension(self) -> int:
        return self._index().dimension

    def setup(self) -> None:
        self._index().setup()

    def upsert(self, doc_id: str, fields: Mapping[str, Any], vector: Sequence[float]) -> None:
        self._index().upsert(doc_id, fields, vector)

    def upsert_many(self, docs: Sequence[tuple[str, Mapping[str, Any], Sequence[float]]]) -> None:
        self._index().upsert_many(docs)

    def delete(self, doc_id: str) -> None:
        self._index().delete(doc_id)

    def delete_many(self, doc_ids: Sequence[str]) -> None:
        self._index().delete_many(doc_ids)

    def query(
        self, text: str | None, vector: Sequence[float] | None, filters: Filters, k: int
    ) -> list[SearchHit]:
        return self._index().query(text, vector, filters, k)
