"""Rebuild the search index from the table (``agentmem reindex`` on the AWS backend).

The stream indexer keeps the index up to date; a rebuild is for what the stream cannot give: an index made
after the table (a new collection, a deleted index), or vectors of another embedder (a change of
``AGENTMEM_EMBEDDER`` or of its dimension — a vector query keeps to the current embedder's vectors, so
documents embedded by the old one are not found by meaning until they are written again).

- Entries: one ``Scan`` page of the table at a time, keeping the entry items (``SK`` beginning ``E#``; of one
  memory with ``memory=``). A live entry's document is written (one ``embed`` call and one ``upsert_many`` per
  page), an expired one's deleted; checkpoints are never indexed.
- Journals (``journal=True``): the conversations' records (``SK = META``), page by page; each conversation's
  messages are read through the conversation store (hot rows and sealed segments alike), 500 at a time, and
  indexed as the stream indexer indexes them (a conversation in the trash too, as the stream left it:
  journal search re-checks every hit), a long message with its passages. A conversation being purged is
  skipped.

Each step yields a ``Progress`` holding the cursor to resume from (the scan's ``LastEvaluatedKey``, and the
conversation and seq reached), so an interrupted rebuild starts again where it stopped: every write is an
idempotent upsert of a whole document.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from boto3.dynamodb.types import TypeDeserializer

from ...domain.conversations import ConversationRef, Message
from ...ports.conversations import ConversationStore
from ...ports.embedder import Embedder
from ...ports.search_index import SearchIndex
from .dynamodb import layout
from .entry_documents import entry_fields, entry_key, entry_text, is_checkpoint, is_expired
from .journal_index import MessageLocation, message_doc_id, message_fields, searchable_text, upsert_documents

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

Phase = Literal["entries", "journals", "done"]
MESSAGES_PER_READ = 500
SCAN_PAGE_ITEMS = 200  # items a scan page offers (each page: one embed call, one bulk write)
_DESERIALIZE = TypeDeserializer()


@dataclass(frozen=True)
class Cursor:
    """Where a rebuild stands: the phase, the scan's exclusive start key, and within a conversation the seq
    indexed through."""

    phase: Phase = "entries"
    start: dict[str, Any] | None = None
    conversation: dict[str, Any] | None = None  # the META item's key of the conversation being read
    seq: int = 0

    def token(self) -> str:
        raw = json.dumps({"phase": self.phase, "start": self.start, "conversation": self.conversation,
                          "seq": self.seq}, separators=(",", ":"), sort_keys=True)
        return base64.urlsafe_b64encode(raw.encode()).decode()

    @classmethod
    def parse(cls, token: str) -> Cursor:
        try:
            raw = json.loads(base64.urlsafe_b64decode(token.encode()))
            phase = raw["phase"]
            if phase not in ("entries", "journals", "done"):
                raise ValueError(phase)
            return cls(phase, raw.get("start"), raw.get("conversation"), int(raw.get("seq") or 0))
        except (ValueError, KeyError, TypeError, json.JSONDecodeError) as error:
            raise ValueError("not a cursor this rebuild gave out") from error


@dataclass(frozen=True)
class Progress:
    kind: Literal["entries", "messages"]
    written: int  # documents written in this step
    removed: int  # documents deleted (expired entries)
    scanned: int  # table items the step read
    cursor: Cursor  # resume from here


def _plain_item(item: dict[str, Any]) -> dict[str, Any]:
    return {key: _DESERIALIZE.deserialize(value) for key, value in item.items()}


class TableRebuild:
    def __init__(
        self, client: DynamoDBClient, table: str, index: SearchIndex, embedder: Embedder,
        conversations: ConversationStore, now: str,
    ) -> None:
        self.client = client
        self.table = table
        self.index = index
        self.embedder = embedder
        self.conversations = conversations
        self.now = now

    def estimate(self) -> int:
        """The table's item count as DynamoDB last counted it (it recounts about every six hours)."""
        described = self.client.describe_table(TableName=self.table)["Table"]
        return int(described.get("ItemCount") or 0)

    def run(self, *, memory: str | None = None, journal: bool = False,
            cursor: Cursor | None = None) -> Iterator[Progress]:
        """Every step of the rebuild from ``cursor`` (the start by default), as ``agentmem reindex`` chooses:
        the entries (of one memory with ``memory``) and the journals; only the journals with ``journal``."""
        cursor = cursor or Cursor("journals" if journal else "entries")
        if cursor.phase == "entries":
            yield from self._entries(memory, cursor.start)
            cursor = Cursor("journals" if memory is None else "done")
        if cursor.phase == "journals":
            yield from self._journals(cursor)

    # -- entries --------------------------------------------------------------------------------------------
    def _scan(self, start: dict[str, Any] | None, condition: str, values: dict[str, Any],
              names: dict[str, str]) -> dict[str, Any]:
        request: dict[str, Any] = {
            "TableName": self.table, "FilterExpression": condition, "ExpressionAttributeValues": values,
            "ExpressionAttributeNames": names, "Limit": SCAN_PAGE_ITEMS,
        }
        if start:
            request["ExclusiveStartKey"] = start
        return dict(self.client.scan(**request))

    def _entries(self, memory: str | None, start: dict[str, Any] | None) -> Iterator[Progress]:
        condition = "begins_with(#sk, :entry)"
        values: dict[str, Any] = {":entry": {"S": layout.ENTRY_PREFIX}}
        names = {"#sk": "SK"}
        if memory is not None:
            condition += " AND contains(#pk, :memory)"
            values[":memory"] = {"S": f"#M#{memory}#"}
            names["#pk"] = "PK"
        while True:
            page = self._scan(start, condition, values, names)
            upserts: list[tuple[str, dict[str, Any], str]] = []
            gone: list[str] = []
            for raw in page.get("Items", []):
                item = _plain_item(raw)
                key = entry_key(item)
                if key is None or (memory is not None and key.memory != memory) or is_checkpoint(key, item):
                    continue
                if is_expired(item, self.now):
                    gone.append(key.doc_id)
                    continue
                fields = entry_fields(key, item, self.embedder.name)
                upserts.append((key.doc_id, fields, entry_text(fields)))
            self._write(upserts)
            if gone:
                self.index.delete_many(gone)
            start = page.get("LastEvaluatedKey")
            yield Progress("entries", len(upserts), len(gone), int(page.get("ScannedCount") or 0),
                           Cursor("entries", start) if start else Cursor("journals" if memory is None else "done"))
            if not start:
                return

    # -- journals -------------------------------------------------------------------------------------------
    def _journals(self, cursor: Cursor) -> Iterator[Progress]:
        condition = "#sk = :meta AND begins_with(#pk, :conversation)"
        values = {":meta": {"S": layout.META_SK}, ":conversation": {"S": layout.CONVERSATION_PREFIX}}
        start, within, seq = cursor.start, cursor.conversation, cursor.seq
        while True:
            page = self._scan(start, condition, values, {"#sk": "SK", "#pk": "PK"})
            items = [_plain_item(raw) for raw in page.get("Items", [])]
            if within is not None:  # resuming inside a conversation of this page
                keys = [{"PK": item["PK"], "SK": item["SK"]} for item in items]
                held = {"PK": within["PK"]["S"], "SK": within["SK"]["S"]}
                items = items[keys.index(held):] if held in keys else items
            for item in items:
                here = {"PK": {"S": item["PK"]}, "SK": {"S": item["SK"]}}
                for done, through in self._conversation(item, seq if within is not None else 0):
                    yield Progress("messages", done, 0, 0, Cursor("journals", start, here, through))
                within, seq = None, 0
            start = page.get("LastEvaluatedKey")
            yield Progress("messages", 0, 0, int(page.get("ScannedCount") or 0),
                           Cursor("journals", start) if start else Cursor("done"))
            if not start:
                return

    def _conversation(self, item: dict[str, Any], after: int) -> Iterator[tuple[int, int]]:
        """(documents written, seq indexed through) per read of the conversation's messages."""
        if item.get("purging"):
            return
        try:
            account_id, agent, user_id, key = layout.parse_conversation_pk(str(item["PK"]))
        except ValueError:
            return
        ref = ConversationRef(account_id, agent, user_id, key)
        while True:
            messages = self.conversations.messages(ref, after=after, limit=MESSAGES_PER_READ)
            if not messages:
                return
            self._write([self._message_doc(ref, message) for message in messages])
            after = messages[-1].seq
            yield len(messages), after

    def _message_doc(self, ref: ConversationRef, message: Message) -> tuple[str, dict[str, Any], str]:
        where = MessageLocation(ref.account_id, ref.agent, ref.user_id, ref.key, message.seq)
        text = searchable_text(message.content, message.tool_name)
        fields = message_fields(where, text, message.created_at, role=message.role, embedder=self.embedder.name)
        return message_doc_id(ref.account_id, ref.agent, ref.user_id, ref.key, message.seq), fields, text

    def _write(self, docs: Sequence[tuple[str, dict[str, Any], str]]) -> None:
        upsert_documents(self.index, self.embedder, docs)  # a long message with its passages
