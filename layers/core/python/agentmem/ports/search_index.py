"""The semantic (vector + text) index behind recall (SPEC §6.2): OpenSearch Serverless on AWS, in-process embedded.

The index is a derived copy kept up to date asynchronously from the store's change stream; it may be
stale, and the authoritative store re-applies visibility and expiry to every candidate it returns.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..domain.clock import TimeRange
from ..domain.models import ACCOUNT_LAYER

FieldType = Literal["text", "keyword", "text+keyword", "float", "long", "date"]

# What a document may hold, and how each field is indexed. Both adapters refuse anything else, so a
# field that works embedded works on OpenSearch (whose mapping is strict).
DOCUMENT_FIELDS: Mapping[str, FieldType] = {
    "kind": "keyword",  # ENTRY_KIND or MESSAGE_KIND
    "account": "keyword",
    "memory": "keyword",  # entries
    "user": "keyword",  # the layer: the user id, or "" (ACCOUNT_LAYER) for the account layer
    "name": "text+keyword",
    "description": "text",
    "content": "text",  # an entry's content, a message's text
    "category": "keyword",
    "importance": "float",
    "version": "long",
    "updated_at": "date",  # a message's created_at
    "expires_at": "date",
    # journal messages (adapters/aws/journal_index.py)
    "agent": "keyword",
    "conversation": "keyword",
    "seq": "long",
    "role": "keyword",
    # the embedder that wrote the vector (``Embedder.name``): a vector query filters on it, so vectors of two
    # embedders are never compared
    "embedder": "keyword",
}
ENTRY_KIND = "entry"
MESSAGE_KIND = "message"
TEXT_FIELDS: tuple[str, ...] = tuple(k for k, v in DOCUMENT_FIELDS.items() if v in ("text", "text+keyword"))
KEYWORD_FIELDS: tuple[str, ...] = tuple(k for k, v in DOCUMENT_FIELDS.items() if v in ("keyword", "text+keyword"))
# SPEC §6.1: a word in the name or description counts more than one in the content
TEXT_BOOST: Mapping[str, float] = {"name": 2.0, "description": 2.0, "content": 1.0}

# a keyword field equal to a value (or to any of a list); a date field strictly between two times (TimeRange:
# what a journal search's ``after`` / ``before`` filter on, a message's ``updated_at``)
Filters = Mapping[str, "str | Sequence[str] | TimeRange"]
DATE_FIELDS: tuple[str, ...] = tuple(k for k, v in DOCUMENT_FIELDS.items() if v == "date")


def entry_doc_id(account_id: str, memory: str, user_id: str | None, name: str) -> str:
    """The document id of an entry: one per (account, memory, layer, name). No component holds a ``/``."""
    return f"entry/{account_id}/{memory}/{user_id if user_id is not None else ACCOUNT_LAYER}/{name}"


def check_document(fields: Mapping[str, Any]) -> None:
    unknown = sorted(set(fields) - set(DOCUMENT_FIELDS))
    if unknown:
        raise ValueError(f"fields not in the index mapping: {', '.join(unknown)}")


def check_filters(filters: Filters) -> None:
    unknown = sorted(name for name, value in filters.items()
                     if name not in (DATE_FIELDS if isinstance(value, TimeRange) else KEYWORD_FIELDS))
    if unknown:
        raise ValueError(f"only keyword fields (by value) and date fields (by a TimeRange) filter a query, "
                         f"not: {', '.join(unknown)}")


def filter_values(value: str | Sequence[str] | TimeRange) -> list[str]:
    if isinstance(value, TimeRange):
        raise ValueError("a time range is not a list of values")
    return [value] if isinstance(value, str) else list(value)


def time_ranges(filters: Filters) -> dict[str, TimeRange]:
    """The date fields the filters bound, and their ranges."""
    return {name: value for name, value in filters.items() if isinstance(value, TimeRange)}


def holds(fields: Mapping[str, Any], filters: Filters) -> bool:
    """Whether a document's fields pass every filter (what an in-process index checks)."""
    for name, value in filters.items():
        held = fields.get(name)
        if isinstance(value, TimeRange):
            if not isinstance(held, str) or not value.holds(held):
                return False
        elif held not in filter_values(value):
            return False
    return True


@dataclass(frozen=True)
class SearchHit:
    doc_id: str
    score: float
    fields: Mapping[str, Any] = field(default_factory=dict)


class SearchIndex(ABC):
    """Documents of ``DOCUMENT_FIELDS`` plus one vector each, addressed by our own ``doc_id``.

    ``upsert`` replaces the whole document (fields and vector) of ``doc_id``; ``delete`` removes it and
    is not an error when it is absent. Both are idempotent, so replaying a change stream is harmless.
    """

    @property
    @abstractmethod
    def dimension(self) -> int:
        """The vector length every document and query vector has (the embedder's)."""

    @abstractmethod
    def setup(self) -> None:
        """Create the index and its mapping if missing (idempotent)."""

    @abstractmethod
    def upsert(self, doc_id: str, fields: Mapping[str, Any], vector: Sequence[float]) -> None:
        """Create or replace the document. ValueError for a field outside the mapping or a wrong-length vector."""

    def upsert_many(self, docs: Sequence[tuple[str, Mapping[str, Any], Sequence[float]]]) -> None:
        """``upsert`` of each ``(doc_id, fields, vector)``, in order (a later one of the same ``doc_id``
        wins). An adapter with a bulk API sends them together; nothing is written when one is invalid."""
        for fields in (doc[1] for doc in docs):
            check_document(fields)
        for doc_id, fields, vector in docs:
            self.upsert(doc_id, fields, vector)

    @abstractmethod
    def delete(self, doc_id: str) -> None: ...

    def delete_many(self, doc_ids: Sequence[str]) -> None:
        """``delete`` of each; an adapter with a bulk API sends them together."""
        for doc_id in doc_ids:
            self.delete(doc_id)

    def lag(self, filters: Filters) -> int | None:
        """How far behind the store the index is for the documents ``filters`` name: how many changes are not
        indexed yet (0: caught up); None when this index cannot tell (the default)."""
        return None

    @abstractmethod
    def query(
        self, text: str | None, vector: Sequence[float] | None, filters: Filters, k: int
    ) -> list[SearchHit]:
        """At most ``k`` documents matching every filter (a keyword field equal to the value, or to any
        of a list), best first.

        ``vector`` alone: the nearest neighbours. ``text`` alone: documents holding query words in
        ``TEXT_FIELDS`` (name and description weigh more). Both: documents matching either, scores
        added — a placeholder; the recall issue fuses the semantic and keyword lists itself (RRF).
        """
