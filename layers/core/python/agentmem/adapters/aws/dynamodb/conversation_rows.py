"""Conversation records and journal messages as items, and what an append makes of them. No I/O.

``ConversationState`` is the ``META`` item as this process last saw it (``StateCache`` keeps the recent
ones): an append computes the new record from it and is conditioned on its ``rev``, so a stale copy is
never written over — the failed transaction returns the item as it is, and the append computes again.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

from ....domain.conversations import ConversationRecord, ConversationRef, Message, MessageDraft, Role
from . import layout
from .models import BoundModels, ConversationRow, MessageRow

MAX_CACHED = 256


@dataclass(frozen=True)
class ConversationState:
    ref: ConversationRef
    incarnation: str
    rev: int
    created_at: str
    updated_at: str
    last_seq: int = 0
    last_turn: int = 0
    sealed_through: int = 0
    folded_through: int = 0
    forgotten_through: int = 0
    unfolded_tokens: int = 0
    unfolded_messages: int = 0
    window_messages: int | None = None
    surface: str = "agent"
    due_since: str | None = None
    deleted_at: str | None = None
    purging: bool = False
    passes: int = 0
    checkpoint_version: int = 0
    lines_by_hand: tuple[str, ...] = ()

    @property
    def pk(self) -> str:
        return conversation_pk(self.ref)

    def record(self) -> ConversationRecord:
        return ConversationRecord(
            ref=self.ref, created_at=self.created_at, updated_at=self.updated_at, last_seq=self.last_seq,
            last_turn=self.last_turn, folded_through=self.folded_through, forgotten_through=self.forgotten_through,
            unfolded_tokens=self.unfolded_tokens, unfolded_messages=self.unfolded_messages,
            window_messages=self.window_messages, surface=self.surface, due_since=self.due_since,
            deleted_at=self.deleted_at, passes=self.passes, checkpoint_version=self.checkpoint_version,
            lines_by_hand=self.lines_by_hand,
        )


def conversation_pk(ref: ConversationRef) -> str:
    return layout.conversation_pk(ref.account_id, ref.agent, ref.user_id, ref.key)


def _int(value: Any) -> int:
    return int(value) if value is not None else 0


def state_from_row(row: ConversationRow) -> ConversationState:
    return ConversationState(
        ref=ConversationRef(row.account_id, row.agent, row.user_id, row.key),
        incarnation=row.incarnation, rev=_int(row.rev), created_at=row.created_at, updated_at=row.updated_at,
        last_seq=_int(row.last_seq), last_turn=_int(row.last_turn), sealed_through=_int(row.sealed_through),
        folded_through=_int(row.folded_through), forgotten_through=_int(row.forgotten_through),
        unfolded_tokens=_int(row.unfolded_tokens), unfolded_messages=_int(row.unfolded_messages),
        window_messages=int(row.window_messages) if row.window_messages is not None else None,
        surface=row.surface, due_since=row.due_since, deleted_at=row.deleted_at, purging=bool(row.purging),
        passes=_int(row.passes), checkpoint_version=_int(row.checkpoint_version),
        lines_by_hand=tuple((row.lines_by_hand or "").split()),
    )


def state_from_raw(models: BoundModels, raw: dict[str, Any] | None) -> ConversationState | None:
    """The state in an item a cancelled transaction returned (ALL_OLD); None when there was none."""
    if not raw:
        return None
    return state_from_row(models.conversation.from_raw_data(raw))


def meta_row(models: BoundModels, state: ConversationState) -> ConversationRow:
    """The whole ``META`` item of ``state``, with its place in the by_due index while it is due."""
    row = models.conversation(state.pk, layout.META_SK)
    ref = state.ref
    row.account_id, row.agent, row.user_id, row.key = ref.account_id, ref.agent, ref.user_id, ref.key
    row.incarnation = state.incarnation
    row.rev = state.rev
    row.created_at, row.updated_at = state.created_at, state.updated_at
    row.last_seq, row.last_turn, row.sealed_through = state.last_seq, state.last_turn, state.sealed_through
    row.folded_through, row.forgotten_through = state.folded_through, state.forgotten_through
    row.unfolded_tokens, row.unfolded_messages = state.unfolded_tokens, state.unfolded_messages
    row.window_messages = state.window_messages
    row.surface = state.surface
    row.due_since = state.due_since
    row.deleted_at = state.deleted_at
    row.purging = True if state.purging else None
    row.passes = state.passes or None
    row.checkpoint_version = state.checkpoint_version or None
    row.lines_by_hand = " ".join(state.lines_by_hand) or None
    if state.due_since is not None:
        row.due_pk = layout.CONVERSATION_DUE
        row.due_sk = layout.conversation_due_sk(state.due_since, state.pk)
    return row


def over(state: ConversationState, thresholds: tuple[int, int]) -> bool:
    tokens, messages = thresholds
    return state.unfolded_tokens > tokens or state.unfolded_messages > messages


def new_state(ref: ConversationRef, now: str) -> ConversationState:
    """A conversation before its first append (not stored yet)."""
    return ConversationState(ref=ref, incarnation=uuid.uuid4().hex[:16], rev=0, created_at=now, updated_at=now)


def appended(
    state: ConversationState, drafts: Sequence[MessageDraft], *, now: str, surface: str,
    thresholds: tuple[int, int], window_messages: int | None,
) -> tuple[ConversationState, list[Message]]:
    """The record after appending ``drafts`` (numbered after ``state.last_seq``), and their messages."""
    seq, turn = state.last_seq, state.last_turn
    messages = []
    for draft in drafts:
        seq += 1
        # a user message opens the next turn; a conversation that starts otherwise starts in turn 1
        turn = turn + 1 if draft.role == "user" else max(turn, 1)
        messages.append(Message(
            seq=seq, turn=turn, role=draft.role, content=draft.content, created_at=draft.created_at or now,
            tool_name=draft.tool_name, tool_call_id=draft.tool_call_id, arguments=draft.arguments, result=draft.result,
            client_id=draft.client_id, tokens=draft.tokens,
        ))
    after = replace(
        state, rev=state.rev + 1, updated_at=now, last_seq=seq, last_turn=turn, surface=surface,
        unfolded_tokens=state.unfolded_tokens + sum(d.tokens for d in drafts),
        unfolded_messages=state.unfolded_messages + len(drafts),
        window_messages=window_messages if window_messages is not None else state.window_messages,
        deleted_at=None,  # an append to a deleted conversation brings it back into the listing
    )
    if after.due_since is None and over(after, thresholds):
        after = replace(after, due_since=now)
    return after, messages


# -- messages ---------------------------------------------------------------------------------------------
def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _parsed(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def message_row(models: BoundModels, pk: str, message: Message) -> MessageRow:
    row = models.message(pk, layout.message_sk(message.seq))
    row.seq, row.turn, row.role = message.seq, message.turn, message.role
    row.content, row.created_at = message.content, message.created_at
    row.tool_name, row.tool_call_id, row.client_id = message.tool_name, message.tool_call_id, message.client_id
    row.arguments, row.result = _json(message.arguments), _json(message.result)
    row.tokens = message.tokens
    if message.tool_call_id is not None:
        row.tc_sk = layout.tool_call_sk(message.tool_call_id, message.seq)
    return row


def message_from_row(row: MessageRow) -> Message:
    return Message(
        seq=int(row.seq), turn=int(row.turn), role=cast(Role, row.role), content=row.content or "",
        created_at=row.created_at, tool_name=row.tool_name, tool_call_id=row.tool_call_id,
        arguments=_parsed(row.arguments), result=_parsed(row.result), client_id=row.client_id,
        tokens=_int(row.tokens),
    )


_OPTIONAL = ("tool_name", "tool_call_id", "arguments", "result", "client_id")


def message_document(message: Message) -> dict[str, Any]:
    """A message as one JSON object (a line of a sealed segment); absent optional fields are left out."""
    doc: dict[str, Any] = {
        "seq": message.seq, "turn": message.turn, "role": message.role, "content": message.content,
        "created_at": message.created_at, "tokens": message.tokens,
    }
    for name in _OPTIONAL:
        value = getattr(message, name)
        if value is not None:
            doc[name] = value
    return doc


def message_from_document(doc: dict[str, Any]) -> Message:
    return Message(
        seq=int(doc["seq"]), turn=int(doc["turn"]), role=doc["role"], content=doc["content"],
        created_at=doc["created_at"], tokens=int(doc.get("tokens", 0)),
        **{name: doc.get(name) for name in _OPTIONAL},
    )


class StateCache:
    """The recently used conversations' records as this process last saw them, shared by its threads.

    It only ever saves the read before an append: every write it informs is conditioned on the copy."""

    def __init__(self, max_items: int = MAX_CACHED) -> None:
        self._items: OrderedDict[str, ConversationState] = OrderedDict()
        self._lock = threading.Lock()
        self._max = max_items

    def get(self, pk: str) -> ConversationState | None:
        with self._lock:
            state = self._items.get(pk)
            if state is not None:
                self._items.move_to_end(pk)
            return state

    def put(self, state: ConversationState) -> None:
        with self._lock:
            current = self._items.get(state.pk)
            # threads of one process may finish out of order: keep the newer copy of one incarnation
            if current is not None and current.incarnation == state.incarnation and current.rev > state.rev:
                return
            self._items[state.pk] = state
            self._items.move_to_end(state.pk)
            while len(self._items) > self._max:
                self._items.popitem(last=False)

    def drop(self, pk: str) -> None:
        with self._lock:
            self._items.pop(pk, None)
