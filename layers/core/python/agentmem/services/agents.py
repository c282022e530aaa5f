"""Agents: create, change, find, list, trash, restore, purge (SPEC §3.2)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from ..domain.access import acting_user
from ..domain.agents import (
    AgentRecord,
    AnonymousPrivateWrites,
    Attachment,
    Capabilities,
    SummaryThresholds,
    can_see_agent,
    check_agent_name,
    check_attachment_list,
    check_attachments,
    check_instructions,
    check_thresholds,
    check_window_messages,
)
from ..domain.clock import Clock, iso, utcnow
from ..domain.errors import ConflictError, ForbiddenError, NotFoundError, VersionConflictError
from ..domain.models import MemoryRecord, Principal
from ..domain.rules import TRASH_DAYS
from ..ports.agents import AgentStore
from .memories import MemoryService

# a PUT without a version reads, changes and writes back; a concurrent change makes it read again
_UPDATE_ATTEMPTS = 5


@dataclass(frozen=True)
class AgentSettings:
    """What a create or update asks for; None keeps the current value (the default on create)."""

    instructions: str | None = None
    memories: tuple[Attachment, ...] | None = None
    memory_capability: bool | None = None
    window_messages: int | None = None
    clear_window: bool = False  # with window_messages None: back to the platform default
    summary_tokens: int | None = None
    summary_messages: int | None = None
    user_conversations_write_shared: bool | None = None
    anonymous_private_writes: AnonymousPrivateWrites | None = None


class AgentService:
    def __init__(self, store: AgentStore, memories: MemoryService, clock: Clock = utcnow) -> None:
        self.store = store
        self.memories = memories
        self.clock = clock
        # what else a purge removes (conversations, workspaces, index documents), by name
        self.purge_hooks: list[Any] = []

    def put(
        self, principal: Principal, name: str, settings: AgentSettings, *, user: str | None = None,
        expected_version: int | None = None,
    ) -> tuple[AgentRecord, bool]:
        """Create the agent or change it; ``expected_version`` (0 = must not exist) makes it conditional."""
        check_agent_name(name)
        acting = acting_user(principal, user)
        for _ in range(_UPDATE_ATTEMPTS):
            now = iso(self.clock())
            current = self.store.get_agent(principal.account_id, name, now)
            if current is None:
                record = self._apply(AgentRecord(principal.account_id, name, acting, now, now), settings, principal,
                                     acting)
                base = 0
            else:
                self._check_change(current, principal, acting)
                record = replace(self._apply(current, settings, principal, acting), updated_at=now)
                base = current.version
            want = base if expected_version is None else expected_version
            try:
                return self.store.save_agent(record, expected_version=want), current is None
            except VersionConflictError:
                if expected_version is not None:
                    raise
        raise ConflictError(f"agent {name!r} kept changing while this change was made; try again")

    def _check_change(self, current: AgentRecord, principal: Principal, acting: str | None) -> None:
        if not can_see_agent(current, acting, principal.kind == "account"):
            raise ConflictError(f"the name {current.name!r} is taken by another agent in this account")
        if current.deleted_at is not None:
            raise ConflictError(f"agent {current.name!r} is in the trash: restore it, or pick another name")
        if current.user_id is None and acting is not None:
            raise ForbiddenError(
                f"agent {current.name!r} is the account's: only a call acting for the account changes it"
            )

    def _apply(
        self, record: AgentRecord, settings: AgentSettings, principal: Principal, acting: str | None
    ) -> AgentRecord:
        changes: dict[str, Any] = {}
        if settings.instructions is not None:
            changes["instructions"] = check_instructions(settings.instructions)
        if settings.memories is not None:
            check_attachment_list(record.name, settings.memories)
            found = {a.memory: self._attachable(principal, a.memory, record.user_id) for a in settings.memories}
            changes["memories"] = check_attachments(record.name, record.user_id, settings.memories, found, acting)
        if settings.memory_capability is not None:
            changes["capabilities"] = Capabilities(memory=settings.memory_capability)
        if settings.window_messages is not None or settings.clear_window:
            changes["window_messages"] = check_window_messages(settings.window_messages)
        if settings.summary_tokens is not None or settings.summary_messages is not None:
            changes["summary"] = check_thresholds(SummaryThresholds(
                tokens=settings.summary_tokens if settings.summary_tokens is not None else record.summary.tokens,
                messages=settings.summary_messages if settings.summary_messages is not None
                else record.summary.messages,
            ))
        if settings.user_conversations_write_shared is not None:
            changes["user_conversations_write_shared"] = settings.user_conversations_write_shared
        if settings.anonymous_private_writes is not None:
            changes["anonymous_private_writes"] = settings.anonymous_private_writes
        return replace(record, **changes)

    def _attachable(self, principal: Principal, memory: str, owner: str | None) -> MemoryRecord:
        """The memory as the agent's owner sees it; a memory the caller cannot see is 404."""
        try:
            return self.memories.get(principal, memory, owner if principal.kind == "account" else None,
                                     counts=False)
        except NotFoundError:
            if owner is not None and principal.kind == "account":
                # an account key sees every memory: say what is wrong rather than "not found"
                record = self.memories.store.get_memory(principal.account_id, memory, iso(self.clock()),
                                                        counts=False)
                if record is not None and record.deleted_at is None:
                    return record
            raise NotFoundError(f"memories: no memory named {memory!r} to attach", field="memories") from None

    def get(self, principal: Principal, name: str, user: str | None = None) -> AgentRecord:
        """A live agent the caller may see; anything else is 404 (also another account's)."""
        check_agent_name(name)
        acting = acting_user(principal, user)
        record = self.store.get_agent(principal.account_id, name, iso(self.clock()))
        if record is None or record.deleted_at is not None or not can_see_agent(
            record, acting, principal.kind == "account"
        ):
            raise NotFoundError(f"no agent named {name!r}")
        return record

    def list_agents(self, principal: Principal, user: str | None = None, *, trash: bool = False) -> list[AgentRecord]:
        acting = acting_user(principal, user)
        return self.store.list_agents(
            principal.account_id, iso(self.clock()), trash=trash, user_id=acting, include_account=True
        )

    def delete(self, principal: Principal, name: str, user: str | None = None) -> AgentRecord:
        """To the trash for 30 days, with its own memory."""
        record = self.get(principal, name, user)
        self._account_acts(record, acting_user(principal, user), "deletes")
        now = self.clock()
        return self.store.trash_agent(principal.account_id, name, iso(now), iso(now + timedelta(days=TRASH_DAYS)))

    def restore(self, principal: Principal, name: str, user: str | None = None) -> AgentRecord:
        check_agent_name(name)
        acting = acting_user(principal, user)
        now = iso(self.clock())
        record = self.store.get_agent(principal.account_id, name, now)
        if record is None or not can_see_agent(record, acting, principal.kind == "account"):
            raise NotFoundError(f"no agent named {name!r} in the trash")
        self._account_acts(record, acting, "restores")
        return self.store.restore_agent(principal.account_id, name, now)

    def purge(self, principal: Principal, name: str, user: str | None = None) -> dict[str, int]:
        """Delete for good, live or in the trash: its own memory, and what its conversations left."""
        check_agent_name(name)
        acting = acting_user(principal, user)
        record = self.store.get_agent(principal.account_id, name, iso(self.clock()))
        if record is None or not can_see_agent(record, acting, principal.kind == "account"):
            raise NotFoundError(f"no agent named {name!r}")
        self._account_acts(record, acting, "purges")
        with self.memories.scrub.after():
            self.memories.scrub.removed("entries", "messages")
            return self._purge(principal, record)

    def _purge(self, principal: Principal, record: AgentRecord) -> dict[str, int]:
        name = record.name
        receipt = {"agents": 1, "memories": 0, "entries": 0, "conversations": 0, "messages": 0, "checkpoints": 0,
                   "workspace_files": 0, "index_documents": 0}
        for hook in self.purge_hooks:
            for key, value in hook(record).items():
                receipt[key] = receipt.get(key, 0) + value
        for key, value in self.store.purge_agent(principal.account_id, name).items():
            receipt[key] = receipt.get(key, 0) + value
        receipt["agents"] = 1
        return receipt

    @staticmethod
    def _account_acts(record: AgentRecord, acting: str | None, verb: str) -> None:
        """Only a call acting for the account (an account key without ``user=``) changes an account agent."""
        if record.user_id is None and acting is not None:
            raise ForbiddenError(
                f"agent {record.name!r} is the account's: only a call acting for the account {verb} it"
            )

    def purge_due(self) -> int:
        """Purge the agents whose 30 days in the trash are over, with what goes with them (the purge hooks:
        conversations, workspaces) first: a sweep cut short between the two leaves the agent to the next."""
        now = iso(self.clock())
        with self.memories.scrub.after():
            for account_id, name in self.store.due_for_purge(now):
                gone = AgentRecord(account_id=account_id, name=name, user_id=None, created_at=now, updated_at=now)
                for hook in self.purge_hooks:
                    hook(gone)
            purged = len(self.store.purge_due(now))
            if purged:
                self.memories.scrub.removed("entries", "messages")
            return purged
