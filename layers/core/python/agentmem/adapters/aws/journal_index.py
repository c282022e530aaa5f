"""Journal messages in the search index: one document per message, kind ``message``.

The stream indexer (``functions/indexer/handler.py``) writes these documents from the table's message rows;
the DynamoDB conversation store queries them (``search_candidates``) and reads every hit back from the
journal itself, so a document that is stale (its conversation purged, or purged and started again) is
never returned.

A message document uses the message fields of the index port's mapping (``ports/search_index.DOCUMENT_FIELDS``),
built here and nowhere else:

| message | document field |
|---|---|
| | ``kind`` = ``message`` |
| account | ``account`` |
| agent | ``agent`` |
| user | ``user`` (``""`` for the account), as an entry's layer |
| conversation key | ``conversation`` |
| seq | ``seq`` |
| role | ``role`` |
| text (content and tool name) | ``content``, the text field a journal search reads |
| created_at | ``updated_at`` |
| the embedder of its vector | ``embedder`` |
| a long message's passages | ``passages`` (nested: ``start``, ``end``, ``vector`` each) |

A message longer than a passage (``domain/passages.py``, the rule the embedded index cuts by) carries its
passages as **nested documents** of its own (``adapters/aws/opensearch.py``): each one's offsets into the text and
its vector, written with the message in the same bulk (``upsert_documents``), gone with it when it is deleted by
id. A short message has none.

No entry field is filled (no ``memory``, ``name`` or ``version``): a query filtered on a memory never meets a
message, and a journal query filters on ``kind``. Turn and the rest come from the journal when a hit is
read back.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ...domain.models import ACCOUNT_LAYER
from ...domain.passages import long_passages
from ...domain.search import Query
from ...domain.text import index_text
from ...ports.conversations import MessageHit
from ...ports.embedder import Embedder
from ...ports.search_index import MESSAGE_KIND, Filters, SearchIndex


@dataclass(frozen=True)
class MessageLocation:
    """Which message a document stands for."""

    account_id: str
    agent: str
    user_id: str | None
    key: str
    seq: int


def message_doc_id(account_id: str, agent: str, user_id: str | None, key: str, seq: int) -> str:
    """One document per message. No component holds a ``/``."""
    return f"message/{account_id}/{agent}/{user_id if user_id is not None else ACCOUNT_LAYER}/{key}/{seq}"


def searchable_text(content: str, tool_name: str | None = None) -> str:
    """What a journal search looks in: the content, and a tool call's name (as the embedded store's index)."""
    return f"{content}\n{tool_name}" if tool_name else content


def message_fields(
    where: MessageLocation, text: str, created_at: str, *, role: str | None = None, embedder: str | None = None
) -> dict[str, Any]:
    """The document of the message at ``where``: ``text`` is its ``searchable_text``; ``embedder`` the name
    of the embedder that made its vector."""
    fields: dict[str, Any] = {
        "kind": MESSAGE_KIND,
        "account": where.account_id,
        "agent": where.agent,
        "user": where.user_id if where.user_id is not None else ACCOUNT_LAYER,
        "conversation": where.key,
        "seq": where.seq,
        "content": text,
    }
    if role:
        fields["role"] = role
    if created_at:
        fields["updated_at"] = created_at
    if embedder:
        fields["embedder"] = embedder
    return fields


def journal_filters(account_id: str, agent: str, user_id: str | None, conversation: str | None) -> Filters:
    filters: dict[str, str] = {
        "kind": MESSAGE_KIND,
        "account": account_id,
        "agent": agent,
        "user": user_id if user_id is not None else ACCOUNT_LAYER,
    }
    if conversation is not None:
        filters["conversation"] = conversation
    return filters


def location_of(fields: Mapping[str, Any]) -> MessageLocation | None:
    """The message a document of kind ``message`` stands for (None for any other document)."""
    if fields.get("kind") != MESSAGE_KIND:
        return None
    try:
        seq = int(fields["seq"])
        account_id, agent, key = str(fields["account"]), str(fields["agent"]), str(fields["conversation"])
    except (KeyError, TypeError, ValueError):
        return None
    user = str(fields.get("user") or "")
    return MessageLocation(account_id, agent, user or None, key, seq)


@dataclass(frozen=True)
class PassageVector:
    """One passage of a long message in the index: where it is in the message's text, and its vector."""

    start: int
    end: int
    vector: Sequence[float]


PassageDocument = tuple[str, Mapping[str, Any], Sequence[float], Sequence[PassageVector]]


@runtime_checkable
class KeepsPassages(Protocol):
    """An index whose message documents hold their passages (the OpenSearch adapter)."""

    def upsert_with_passages(self, docs: Sequence[PassageDocument]) -> None:
        """``upsert_many`` of documents each with its passages (none for a short message or an entry)."""


def upsert_documents(index: SearchIndex, embedder: Embedder,
                     docs: Sequence[tuple[str, Mapping[str, Any], str]]) -> None:
    """Embed and write documents ``(doc_id, fields, text)``: one ``embed`` call for all their texts and, when the
    index keeps passages, the passages of the long messages among them too; one ``upsert_many``. What the stream
    indexer and a rebuild (``reindex.py``) both write."""
    if not docs:
        return
    cuts = [long_passages(text) if isinstance(index, KeepsPassages) and fields.get("kind") == MESSAGE_KIND
            else [] for _, fields, text in docs]
    texts = [text for _, _, text in docs] + [p.of(text) for (_, _, text), cut in zip(docs, cuts, strict=True)
                                             for p in cut]
    vectors = embedder.embed(texts)
    wholes, rest = vectors[: len(docs)], iter(vectors[len(docs):])
    if not isinstance(index, KeepsPassages):
        index.upsert_many([(doc_id, fields, vector) for (doc_id, fields, _), vector in zip(docs, wholes, strict=True)])
        return
    index.upsert_with_passages([
        (doc_id, fields, vector, [PassageVector(p.start, p.end, next(rest)) for p in cut])
        for (doc_id, fields, _), vector, cut in zip(docs, wholes, cuts, strict=True)
    ])


class WordMatcher:
    """SPEC §6.1's word rule for messages, as the domain analyses it (``domain/search.py``, ``domain/text.py``): the
    text holds one of ``words`` by its stem, or a word it starts; function words are not indexed, so they match
    nothing (as on the embedded backend and in OpenSearch's english analyzer)."""

    def __init__(self, words: Sequence[str]) -> None:
        wanted = sorted({w.lower() for w in words if w}, key=len, reverse=True)
        self.words = wanted
        self._query = Query(" ".join(wanted)) if wanted else None

    def held(self, text: str) -> int:
        """How many of the words ``text`` holds."""
        return len(self._query.held(index_text(text))) if self._query is not None else 0

    def matches(self, text: str) -> bool:
        return self.held(text) > 0

    def query_text(self) -> str:
        return " ".join(self.words)


def best_first(hits: Iterable[MessageHit]) -> list[MessageHit]:
    """Journal search candidates by score, the newest first on a tie (a later seq first among equals)."""
    return sorted(hits, key=lambda h: (h.score, h.message.created_at, h.message.seq), reverse=True)
