"""How both backends store an agent's settings: one JSON document, and the attachment diff of a save.

The columns (or attributes) an adapter queries on — owner, version, times — live beside the document;
everything else about the agent (instructions, attachments in their order, capabilities, context
thresholds, write rules) is the document. A key missing from a stored document reads as its default,
so a setting added later needs no migration.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, cast

from ..domain.agents import (
    AgentRecord,
    AnonymousPrivateWrites,
    Attachment,
    Capabilities,
    SummaryThresholds,
    own_memory_name,
)
from ..domain.errors import InvalidError


def settings_json(record: AgentRecord) -> str:
    return json.dumps({
        "instructions": record.instructions,
        "memories": [{"memory": a.memory, "writable": a.writable} for a in record.memories],
        "capabilities": {"memory": record.capabilities.memory},
        "window_messages": record.window_messages,
        "summary": {"tokens": record.summary.tokens, "messages": record.summary.messages},
        "user_conversations_write_shared": record.user_conversations_write_shared,
        "anonymous_private_writes": record.anonymous_private_writes,
    }, separators=(",", ":"), ensure_ascii=False)


def agent_record(
    *, account_id: str, name: str, user_id: str | None, version: int, settings: str, created_at: str,
    updated_at: str, deleted_at: str | None, purge_after: str | None,
) -> AgentRecord:
    """The record from its stored columns and settings document."""
    doc: dict[str, Any] = json.loads(settings) if settings else {}
    defaults = AgentRecord(account_id, name, user_id, created_at, updated_at)
    summary = doc.get("summary") or {}
    return AgentRecord(
        account_id=account_id,
        name=name,
        user_id=user_id,
        created_at=created_at,
        updated_at=updated_at,
        version=version,
        instructions=doc.get("instructions", defaults.instructions),
        memories=tuple(Attachment(a["memory"], bool(a.get("writable", False))) for a in doc.get("memories", ())),
        capabilities=Capabilities(memory=bool((doc.get("capabilities") or {}).get("memory", True))),
        window_messages=doc.get("window_messages"),
        summary=SummaryThresholds(
            tokens=int(summary.get("tokens", defaults.summary.tokens)),
            messages=int(summary.get("messages", defaults.summary.messages)),
        ),
        user_conversations_write_shared=bool(doc.get("user_conversations_write_shared", False)),
        anonymous_private_writes=cast(
            AnonymousPrivateWrites, doc.get("anonymous_private_writes", defaults.anonymous_private_writes)
        ),
        deleted_at=deleted_at,
        purge_after=purge_after,
    )


@dataclass(frozen=True)
class AttachmentDiff:
    """What a save changes in the memories' ``attached_to``: by memory name."""

    added: tuple[Attachment, ...]
    removed: tuple[str, ...]
    rewritten: tuple[Attachment, ...]  # still attached, the writable flag changed


def attachment_diff(agent: str, old: tuple[Attachment, ...], new: tuple[Attachment, ...]) -> AttachmentDiff:
    """The change from ``old`` to ``new``; refuses a memory twice, or the agent's own (the domain does too)."""
    names = [a.memory for a in new]
    if len(set(names)) != len(names):
        raise InvalidError("a memory is attached twice", field="memories")
    if own_memory_name(agent) in names:
        raise InvalidError(
            f"{own_memory_name(agent)!r} is the agent's own memory; it always reads and writes it", field="memories"
        )
    before = {a.memory: a for a in old}
    after = {a.memory: a for a in new}
    return AttachmentDiff(
        added=tuple(a for m, a in after.items() if m not in before),
        removed=tuple(m for m in before if m not in after),
        rewritten=tuple(a for m, a in after.items() if m in before and before[m].writable != a.writable),
    )


def is_purged(purge_after: str | None, now: str) -> bool:
    """Past its time in the trash: as good as gone, whether or not a sweep removed it yet."""
    return purge_after is not None and purge_after <= now


def conflict_message(name: str, current: int, sent: int) -> str:
    if current == 0:
        return f"agent {name!r} does not exist (you sent version {sent})"
    if sent == 0:
        return f"agent {name!r} already exists (version {current})"
    return f"agent {name!r} is at version {current} (you sent {sent}); read it again and retry"
