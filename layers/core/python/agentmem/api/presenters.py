"""Records to JSON, field names as in SPEC §2.1."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..domain.agents import AgentRecord
from ..domain.models import ApiKey, Entry, HistoryItem, MemoryRecord, UsageCount

if TYPE_CHECKING:  # the conversations' records come with the conversations service, on its first route
    from ..domain.conversations import ConversationRecord, Message


def entry_json(entry: Entry, *, content: bool, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": entry.name,
        "memory": entry.memory,
        "user_id": entry.user_id,
        "description": entry.description,
        "category": entry.category,
        "importance": entry.importance,
        "visibility": entry.visibility,
        "version": entry.version,
        "updated_by": entry.updated_by,
        "created_at": entry.created_at,
        "updated_at": entry.updated_at,
        "expires_at": entry.expires_at,
        "conversation": entry.conversation,
    }
    if content:
        body["content"] = entry.content
        body["content_hash"] = entry.content_hash
    body.update({k: v for k, v in extra.items() if v is not None})
    return body


def history_json(item: HistoryItem) -> dict[str, Any]:
    return {
        "name": item.name,
        "version": item.version,
        "operation": item.operation,
        "content_hash": item.content_hash,
        "updated_by": item.updated_by,
        "changed_at": item.changed_at,
        "kept_until": item.keep_until,
        "description": item.description,
        "content": item.content,
    }


def memory_json(record: MemoryRecord) -> dict[str, Any]:
    return {
        "name": record.name,
        "user_id": record.user_id,
        "scope": "user" if record.user_id else "account",
        "entry_count": record.entry_count,
        "attached_to": list(record.attached_to),
        "created_at": record.created_at,
        "deleted_at": record.deleted_at,
        "purge_after": record.purge_after,
    }


def key_json(key: ApiKey, secret: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": key.key_id,
        "kind": key.kind,
        "user": key.user_id,
        "created_at": key.created_at,
        "last4": key.last4,
    }
    if secret is not None:
        body["secret"] = secret
    return body


def usage_json(count: UsageCount) -> dict[str, Any]:
    return {"day": count.day, "operation": count.operation, "billable": count.billable, "count": count.count}


def page(items: list[dict[str, Any]], next_cursor: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"items": items, "next_cursor": next_cursor, **extra}


def search_page(
    items: list[dict[str, Any]], next_cursor: str | None, mode: str, fallback: str | None,
    stages: Sequence[str] = (),
) -> dict[str, Any]:
    """A search's answer (SPEC §6.2): the mode that answered, why it answered with less when it did, and the
    stages that ran."""
    return page(items, next_cursor, mode=mode, **({"fallback": fallback} if fallback else {}), stages=list(stages))


def agent_json(agent: AgentRecord) -> dict[str, Any]:
    return {
        "name": agent.name,
        "user_id": agent.user_id,
        "scope": "user" if agent.user_id else "account",
        "own_memory": agent.own_memory,
        "instructions": agent.instructions,
        "memories": [{"name": a.memory, "writable": a.writable} for a in agent.memories],
        "capabilities": {"memory": agent.capabilities.memory},
        "window_messages": agent.window_messages,
        "context": {"summary_tokens": agent.summary.tokens, "summary_messages": agent.summary.messages},
        "user_conversations_write_shared": agent.user_conversations_write_shared,
        "anonymous_private_writes": agent.anonymous_private_writes,
        "version": agent.version,
        "created_at": agent.created_at,
        "updated_at": agent.updated_at,
        "deleted_at": agent.deleted_at,
        "purge_after": agent.purge_after,
    }


def message_json(message: Message) -> dict[str, Any]:
    return {
        "seq": message.seq,
        "turn": message.turn,
        "role": message.role,
        "content": message.content,
        "tool_name": message.tool_name,
        "tool_call_id": message.tool_call_id,
        "arguments": message.arguments,
        "result": message.result,
        "client_id": message.client_id,
        "created_at": message.created_at,
        "tokens": message.tokens,
    }


def conversation_json(record: ConversationRecord) -> dict[str, Any]:
    return {
        "key": record.ref.key,
        "agent": record.ref.agent,
        "user_id": record.ref.user_id,
        "surface": record.surface,
        "messages": record.last_seq,
        "turns": record.last_turn,
        "covers_through_seq": record.folded_through,
        "forgotten_through_seq": record.forgotten_through,
        "unfolded_tokens": record.unfolded_tokens,
        "unfolded_messages": record.unfolded_messages,
        "window_messages": record.window_messages,
        "summary_due": record.due_since is not None,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "deleted_at": record.deleted_at,
    }
