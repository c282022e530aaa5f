"""A framework's own items kept in a conversation's journal, one row per item, so they come back equal.

Each item becomes one journal row of the role it plays (``user``, ``assistant``, ``tool_call``, ``tool_result``),
with its text, tool name, call id, arguments and result where it has them, so the journal reads as the
conversation it is (search, summaries, the context all see it). When those fields alone rebuild the item
exactly, that is all the row holds; otherwise the row's ``content`` holds the item's JSON whole. The row's
``client_id`` says which: ``<tag>:t:<id>`` (the fields are the item) or ``<tag>:j:<id>`` (``content`` is its
JSON). A row the integration did not write (appended by other means) is read from its fields.

The journal keeps every message it was given (SPEC §4.1): taking an item back appends a ``tool_result`` row
``agentmem.withdraw`` naming the seq it withdraws (``<tag>:w:<id>``), and readers leave both out; clearing
purges the conversation (its journal, checkpoint and workspace).
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from agentmem.client import Conversation, Message, NotFound

WITHDRAW_TOOL = "agentmem.withdraw"

ToRow = Callable[[Any], Message]
FromRow = Callable[[Message], Any]


class ItemJournal:
    """The items of one conversation in a framework's format: ``to_row`` gives an item's row (its text and
    tool fields), ``from_row`` the item a row's fields stand for (``None``: a row the framework has no item
    for), ``from_json`` the item its stored JSON stands for (the JSON itself without one)."""

    def __init__(
        self, conversation: Conversation, tag: str, to_row: ToRow, from_row: FromRow,
        from_json: Callable[[Any], Any] | None = None,
    ) -> None:
        self.conversation = conversation
        self.tag = tag
        self.to_row = to_row
        self.from_row = from_row
        self.from_json = from_json

    def _client_id(self, kind: str) -> str:
        return f"{self.tag}:{kind}:{uuid.uuid4().hex}"

    def encode(self, item: Any, plain: Any | None = None) -> Message:
        """The row for ``item`` (``plain``: the item as JSON data, when it is not already)."""
        data = item if plain is None else plain
        row = self.to_row(item)
        if self.from_row(row) == item:
            return replace(row, client_id=self._client_id("t"))
        return replace(row, content=json.dumps(data, ensure_ascii=False, separators=(",", ":")),
                       client_id=self._client_id("j"))

    def decode(self, row: Message) -> Any:
        """The item a row holds: its JSON when the integration stored it whole, else what its fields say."""
        kind = (row.client_id or "").split(":")
        if len(kind) == 3 and kind[0] == self.tag and kind[1] == "j":
            data = json.loads(row.content)
            return self.from_json(data) if self.from_json is not None else data
        return self.from_row(row)

    def rows(self) -> list[Message]:
        """The rows that hold items, in order: withdrawn ones and the withdrawals left out."""
        try:
            rows = self.conversation.messages()
        except NotFound:
            return []
        withdrawn = {row.result.get("seq") for row in rows if _is_withdrawal(row)}
        return [row for row in rows if not _is_withdrawal(row) and row.seq not in withdrawn]

    def items(self, limit: int | None = None) -> list[tuple[Message, Any]]:
        """The last ``limit`` items (all without), oldest first, each with its row."""
        decoded = [(row, item) for row in self.rows() if (item := self.decode(row)) is not None]
        if limit is not None:
            decoded = decoded[-limit:] if limit > 0 else []
        return decoded

    def add(self, rows: Iterable[Message]) -> list[Message]:
        """Append rows (40 at a time, in order, each stored once however often the append is retried)."""
        batch = list(rows)
        return self.conversation.append(batch).messages if batch else []

    def withdraw(self, row: Message) -> None:
        """Take the item of ``row`` back: a row saying so is appended; the journal keeps both."""
        self.conversation.append(Message.tool_result(
            WITHDRAW_TOOL, {"seq": row.seq}, WITHDRAW_TOOL, content=f"withdrawn: message {row.seq}",
            client_id=self._client_id("w")))

    def clear(self) -> None:
        """Purge the conversation: its journal, checkpoint and workspace go for good."""
        with contextlib.suppress(NotFound):
            self.conversation.delete(purge=True)


def _is_withdrawal(row: Message) -> bool:
    return (row.role == "tool_result" and row.tool_call_id == WITHDRAW_TOOL and isinstance(row.result, dict))
