"""Memories: create, find, list, trash, restore, purge (SPEC §3.1)."""

from __future__ import annotations

from datetime import timedelta

from ..domain.access import acting_user, can_see_memory, require_account_key
from ..domain.agents import agent_of_memory
from ..domain.clock import Clock, iso, utcnow
from ..domain.errors import ConflictError, InvalidError, NotFoundError
from ..domain.models import MemoryRecord, Principal
from ..domain.rules import TRASH_DAYS, check_memory_name
from ..ports.memories import MemoryStore
from .scrub import Scrub


class MemoryService:
    def __init__(self, store: MemoryStore, clock: Clock = utcnow) -> None:
        self.store = store
        self.clock = clock
        # what the backend does once data is removed for good (shared by the services that purge: bootstrap.py)
        self.scrub = Scrub()

    def create(self, principal: Principal, name: str, user: str | None = None) -> tuple[MemoryRecord, bool]:
        """Create the memory, or return the existing one of the same name and scope."""
        check_memory_name(name)
        if name.startswith("agent:"):
            raise InvalidError("an agent's own memory is made with its agent, not on its own", field="memory")
        owner = acting_user(principal, user)
        now = iso(self.clock())
        record, created = self.store.create_memory(MemoryRecord(principal.account_id, name, owner, now))
        if not created:
            if record.deleted_at is not None and (record.purge_after or "") > now:
                raise ConflictError(f"memory {name!r} is in the trash: restore it, or pick another name")
            if record.deleted_at is not None:
                self.store.purge_due(now)
                return self.create(principal, name, user)
            if record.user_id != owner:
                raise ConflictError(f"a memory named {name!r} already exists in this account with another owner")
        return record, created

    def get(
        self, principal: Principal, name: str, user: str | None = None, *, counts: bool = True,
        now: str | None = None,
    ) -> MemoryRecord:
        """A live memory the caller may see; anything else is 404 (also another account's).

        ``counts=False`` leaves out ``entry_count`` and ``attached_to``: every entry call looks its
        memory up first and needs neither, and counting is most of the cost of a read. ``now``: the moment
        of the call that asks (one moment for the whole call), else the clock's.
        """
        check_memory_name(name)
        acting = acting_user(principal, user)
        record = self.store.get_memory(
            principal.account_id, name, now or iso(self.clock()), viewer=acting, counts=counts
        )
        if record is None or record.deleted_at is not None or not can_see_memory(record, acting, principal):
            raise NotFoundError(f"no memory named {name!r}")
        return record

    def list_memories(
        self, principal: Principal, user: str | None = None, *, trash: bool = False
    ) -> list[MemoryRecord]:
        acting = acting_user(principal, user)
        return self.store.list_memories(
            principal.account_id, iso(self.clock()), trash=trash, user_id=acting,
            include_account=True,
        )

    def delete(self, principal: Principal, name: str, user: str | None = None) -> MemoryRecord:
        """To the trash for 30 days; refused (409 attached) while any agent attaches it."""
        record = self.get(principal, name, user)
        _not_an_agents_own(name, "deletes")
        if record.user_id is None:
            require_account_key(principal, "deleting an account memory")
        now = self.clock()
        return self.store.trash_memory(
            principal.account_id, name, iso(now), iso(now + timedelta(days=TRASH_DAYS))
        )

    def restore(self, principal: Principal, name: str, user: str | None = None) -> MemoryRecord:
        check_memory_name(name)
        _not_an_agents_own(name, "restores")
        acting = acting_user(principal, user)
        now = iso(self.clock())
        record = self.store.get_memory(principal.account_id, name, now)
        if record is None or not can_see_memory(record, acting, principal):
            raise NotFoundError(f"no memory named {name!r} in the trash")
        if record.user_id is None:
            require_account_key(principal, "restoring an account memory")
        return self.store.restore_memory(principal.account_id, name, now)

    def purge_due(self) -> int:
        """Delete for good what has been in the trash for 30 days."""
        with self.scrub.after():
            purged = self.store.purge_due(iso(self.clock()))
            if purged:
                self.scrub.removed("entries")
            return purged


def _not_an_agents_own(name: str, verb: str) -> None:
    agent = agent_of_memory(name)
    if agent is not None:
        raise ConflictError(
            f"{name!r} is agent {agent!r}'s own memory: it goes and comes back with its agent "
            f"(deleting or restoring the agent {verb} it)"
        )
