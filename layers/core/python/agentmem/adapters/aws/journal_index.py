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

No entry field is filled (no ``memory``, ``name`` or ``version``): a query filtered on a memory never meets a
message, and a journal query filters on ``kind``. Turn and the rest come from the journal when a hit is
read back.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...domain.models import ACCOUNT_LAYER
from ...ports.search_index import MESSAGE_KIND, Filters


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


_WORD_START = r"(?<![^\W_])"  # not preceded by a letter or a digit


class WordMatcher:
    """SPEC §6.1's word rule for messages: the text holds a word that starts with one of ``words``."""

    def __init__(self, words: Sequence[str]) -> None:
        wanted = sorted({w.lower() for w in words if w}, key=len, reverse=True)
        self.words = wanted
        self._pattern = re.compile(_WORD_START + "(?:" + "|".join(map(re.escape, wanted)) + ")") if wanted else None

    def matches(self, text: str) -> bool:
        return self._pattern is not None and self._pattern.search(text.lower()) is not None

    def query_text(self) -> str:
        return " ".join(self.words)


def newest_first(items: Iterable[tuple[str, int, Any]]) -> list[Any]:
    """``(created_at, seq, item)`` triples, newest first (a later seq first on a tie)."""
    return [item for _, _, item in sorted(items, key=lambda t: (t[0], t[1]), reverse=True)]
