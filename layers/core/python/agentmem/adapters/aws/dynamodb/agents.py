"""Agents on DynamoDB: the agent item, its own memory and the attachments, changed in one transaction.

The agent item (``A#{account}`` / ``G#{name}``) holds the fields queries need and the settings document
(``adapters/agent_settings``); its own memory is an ordinary memory item ``M#agent:{name}``; who attaches a
memory is the memory item's ``attached`` / ``writable`` string sets (what ``get_memory`` and the memory's
trash read).

Round trips:

- ``save_agent``: a create is ONE ``TransactWriteItems`` (agent Put, own memory Put, one Update per
  attached memory); an update is a consistent ``GetItem`` (the attachments it starts from) + ONE
  transaction (agent Put conditioned on the version read, an Update per memory attached, detached or
  whose writable flag changed). A cancelled transaction says which action failed, and returns the agent
  (and the own memory) as stored, so the error needs no second read.
- ``get_agent``: one ``GetItem``; ``list_agents``: one query of the account's agents.
- ``trash_agent`` / ``restore_agent``: one transaction over the agent and its own memory (restore reads
  the agent first).
- ``purge_agent``: reads, an ``UpdateItem`` per attached memory, the memory store's purge of the own
  memory, and the agent's ``DeleteItem`` last. ``purge_due``: one query of the by_due index (``TRASH#G``).
"""

from __future__ import annotations

from pynamodb.exceptions import DeleteError, UpdateError
from pynamodb.expressions.condition import Condition

from ....domain.agents import AgentRecord, own_memory_name
from ....domain.clock import iso, utcnow
from ....domain.errors import AttachedError, ConflictError, NotFoundError, VersionConflictError
from ....ports.agents import AgentStore
from ...agent_settings import (
    AttachmentDiff,
    agent_record,
    attachment_diff,
    conflict_message,
    is_purged,
    settings_json,
)
from . import layout
from .memories import DynamoMemoryStore, purge_memory, restore_actions, trash_actions
from .models import AgentRow, BoundModels, MemoryRow
from .transactions import Cancelled, WriteSet

MAX_WRITE_ATTEMPTS = 12
CONDITION_FAILED = "ConditionalCheckFailedException"


def _record(row: AgentRow) -> AgentRecord:
    return agent_record(
        account_id=row.pk[len("A#"):], name=row.name, user_id=row.user_id, version=int(row.version),
        settings=row.settings, created_at=row.created_at, updated_at=row.updated_at, deleted_at=row.deleted_at,
        purge_after=row.purge_after,
    )


def _attached_elsewhere(memory: MemoryRow | None, agent: str) -> list[str]:
    return sorted(set(memory.attached or ()) - {agent}) if memory is not None else []


def _attached_error(agent: str, attached: list[str]) -> AttachedError:
    own = own_memory_name(agent)
    return AttachedError(
        f"agent {agent!r}'s own memory {own!r} is attached to {', '.join(attached)}; detach it from them first",
        attached_to=attached,
    )


class DynamoAgentStore(AgentStore):
    def __init__(self, models: BoundModels, memories: DynamoMemoryStore | None = None) -> None:
        self.models = models
        self.memories = memories or DynamoMemoryStore(models)  # its cache forgets the own memory on each change

    def _changed_own_memory(self, account_id: str, agent: str) -> None:
        self.memories.cache.forget(account_id, own_memory_name(agent))

    def _row(self, account_id: str, name: str) -> AgentRow | None:
        try:
            return self.models.agent.get(layout.account_pk(account_id), layout.agent_sk(name), consistent_read=True)
        except self.models.agent.DoesNotExist:
            return None

    def _memory(self, account_id: str, name: str) -> MemoryRow | None:
        try:
            return self.models.memory.get(layout.account_pk(account_id), layout.memory_sk(name), consistent_read=True)
        except self.models.memory.DoesNotExist:
            return None

    def _memory_item(self, account_id: str, name: str) -> MemoryRow:
        return self.models.memory(layout.account_pk(account_id), layout.memory_sk(name))

    # -- save -------------------------------------------------------------------------------------------
    def save_agent(self, record: AgentRecord, *, expected_version: int) -> AgentRecord:
        now = record.updated_at
        gone: set[str] = set()  # memories to let go of that no longer exist
        self._changed_own_memory(record.account_id, record.name)  # a save may make it, or purge a stale one
        for _ in range(MAX_WRITE_ATTEMPTS):
            stored = None
            if expected_version != 0:
                stored = self._row(record.account_id, record.name)
                live = stored if stored is not None and not is_purged(stored.purge_after, now) else None
                current = int(live.version) if live is not None else 0
                if live is None or current != expected_version:
                    raise VersionConflictError(
                        conflict_message(record.name, current, expected_version), current_version=current
                    )
                if live.deleted_at is not None:
                    raise ConflictError(f"agent {record.name!r} is in the trash: restore it first")
            diff = attachment_diff(record.name, _record(stored).memories if stored else (), record.memories)
            item = self._agent_item(record, stored, expected_version + 1)
            writes = self._save_writes(record, item, stored, diff, gone)
            try:
                writes.commit()
            except Cancelled as cancelled:
                if not cancelled.contended:
                    gone |= self._explain(cancelled, record, expected_version, diff)
                continue
            return _record(item)
        raise ConflictError(f"agent {record.name!r} is being changed by too many writers at once; try again")

    def _agent_item(self, record: AgentRecord, stored: AgentRow | None, version: int) -> AgentRow:
        item = self.models.agent(layout.account_pk(record.account_id), layout.agent_sk(record.name))
        item.name = record.name
        # the owner and the creation time are the agent's for good
        item.user_id = stored.user_id if stored is not None else record.user_id
        item.created_at = stored.created_at if stored is not None else record.created_at
        item.updated_at = record.updated_at
        item.version = version
        item.settings = settings_json(record)
        return item

    def _save_writes(
        self, record: AgentRecord, item: AgentRow, stored: AgentRow | None, diff: AttachmentDiff, gone: set[str]
    ) -> WriteSet:
        account_id, name = record.account_id, record.name
        writes = WriteSet(self.models.connection)
        if stored is None:
            writes.put("agent", item, AgentRow.sk.does_not_exist(), all_old=True)
            # shaped like the memory store's own items
            own = self._memory_item(account_id, own_memory_name(name))
            own.name = own_memory_name(name)
            own.user_id = item.user_id
            own.created_at = item.created_at
            own.entry_total = 0
            writes.put("own", own, MemoryRow.sk.does_not_exist(), all_old=True)
        else:
            unchanged = (AgentRow.version == int(stored.version)) & AgentRow.deleted_at.does_not_exist()
            writes.put("agent", item, unchanged, all_old=True)
        live: Condition = MemoryRow.sk.exists() & MemoryRow.deleted_at.does_not_exist()
        for attachment in diff.added:
            access = MemoryRow.writable.add({name}) if attachment.writable else MemoryRow.writable.delete({name})
            writes.update(f"attach:{attachment.memory}", self._memory_item(account_id, attachment.memory),
                          [MemoryRow.attached.add({name}), access], live)
        for memory in diff.removed:
            if memory not in gone:
                writes.update(f"change:{memory}", self._memory_item(account_id, memory),
                              [MemoryRow.attached.delete({name}), MemoryRow.writable.delete({name})],
                              MemoryRow.sk.exists())
        for attachment in diff.rewritten:
            if attachment.memory not in gone:
                access = MemoryRow.writable.add({name}) if attachment.writable else MemoryRow.writable.delete({name})
                writes.update(f"change:{attachment.memory}", self._memory_item(account_id, attachment.memory),
                              [access], MemoryRow.sk.exists())
        return writes

    def _explain(
        self, cancelled: Cancelled, record: AgentRecord, expected_version: int, diff: AttachmentDiff
    ) -> set[str]:
        """The domain error a cancelled save stands for; or, when it can go again, the memories that are gone."""
        now, name = record.updated_at, record.name
        if cancelled.failed("agent"):
            raw = cancelled.old_item("agent")
            old = self.models.agent.from_raw_data(raw) if raw else None
            if old is not None and is_purged(old.purge_after, now):
                if expected_version == 0:
                    self._purge(record.account_id, name)  # its time in the trash is over: finish it first
                    return set()
                old = None
            current = int(old.version) if old is not None else 0
            if old is not None and current == expected_version and old.deleted_at is not None:
                raise ConflictError(f"agent {name!r} is in the trash: restore it first")
            raise VersionConflictError(conflict_message(name, current, expected_version), current_version=current)
        if cancelled.failed("own"):
            own = own_memory_name(name)
            raw = cancelled.old_item("own")
            taken = self.models.memory.from_raw_data(raw) if raw else None
            if taken is not None and is_purged(taken.purge_after, now):
                purge_memory(self.models, taken)
                return set()
            raise ConflictError(f"a memory named {own!r} already exists in this account", memory=own)
        for attachment in diff.added:
            if cancelled.failed(f"attach:{attachment.memory}"):
                raise NotFoundError(
                    f"no memory named {attachment.memory!r} to attach", field="memories", memory=attachment.memory
                )
        gone = {m for m in (*diff.removed, *(a.memory for a in diff.rewritten)) if cancelled.failed(f"change:{m}")}
        if not gone:
            raise cancelled
        return gone

    # -- trash ------------------------------------------------------------------------------------------
    def trash_agent(self, account_id: str, name: str, deleted_at: str, purge_after: str) -> AgentRecord:
        with_own = True
        for _ in range(MAX_WRITE_ATTEMPTS):
            writes = WriteSet(self.models.connection)
            agent = self.models.agent(layout.account_pk(account_id), layout.agent_sk(name))
            writes.update("agent", agent, [
                AgentRow.deleted_at.set(deleted_at), AgentRow.purge_after.set(purge_after),
                AgentRow.due_pk.set(layout.AGENT_TRASH),
                AgentRow.due_sk.set(layout.due_sk(purge_after, account_id, name)),
            ], AgentRow.sk.exists() & AgentRow.deleted_at.does_not_exist())
            if with_own:
                own = own_memory_name(name)
                # the same fields the memory store's trash writes: its purge_due takes the own memory too
                writes.update("own", self._memory_item(account_id, own),
                              trash_actions(account_id, own, deleted_at, purge_after),
                              MemoryRow.sk.exists() & MemoryRow.attached.does_not_exist(), all_old=True)
            try:
                writes.commit()
            except Cancelled as cancelled:
                if cancelled.failed("agent"):
                    raise NotFoundError(f"no agent named {name!r}") from None
                if cancelled.failed("own"):
                    raw = cancelled.old_item("own")
                    if raw:
                        raise _attached_error(
                            name, _attached_elsewhere(self.models.memory.from_raw_data(raw), name)
                        ) from None
                    with_own = False  # no own memory to take along
                continue
            self._changed_own_memory(account_id, name)
            return self._answer(account_id, name)
        raise ConflictError(f"agent {name!r} is being changed by too many writers at once; try again")

    def restore_agent(self, account_id: str, name: str, now: str) -> AgentRecord:
        with_own = True
        for _ in range(MAX_WRITE_ATTEMPTS):
            row = self._row(account_id, name)
            if row is None or is_purged(row.purge_after, now):
                raise NotFoundError(f"no agent named {name!r} in the trash")
            if row.deleted_at is None:
                raise ConflictError(f"agent {name!r} is not in the trash")
            writes = WriteSet(self.models.connection)
            writes.update("agent", row, [
                AgentRow.deleted_at.remove(), AgentRow.purge_after.remove(), AgentRow.due_pk.remove(),
                AgentRow.due_sk.remove(),
            ], AgentRow.purge_after == row.purge_after)
            if with_own:
                writes.update("own", self._memory_item(account_id, own_memory_name(name)), restore_actions(),
                              MemoryRow.sk.exists())
            try:
                writes.commit()
            except Cancelled as cancelled:
                if cancelled.failed("own") and not cancelled.failed("agent"):
                    with_own = False
                continue
            self._changed_own_memory(account_id, name)
            return self._answer(account_id, name)
        raise ConflictError(f"agent {name!r} is being changed by too many writers at once; try again")

    def _answer(self, account_id: str, name: str) -> AgentRecord:
        row = self._row(account_id, name)
        assert row is not None
        return _record(row)

    # -- purge ------------------------------------------------------------------------------------------
    def purge_agent(self, account_id: str, name: str) -> dict[str, int]:
        if self._row(account_id, name) is None:
            raise NotFoundError(f"no agent named {name!r}")
        memories, entries = self._purge(account_id, name)
        return {"memories": memories, "entries": entries}

    def due_for_purge(self, now: str) -> list[tuple[str, str]]:
        found: list[tuple[str, str]] = []
        for due in self.models.agent.by_due.query(layout.AGENT_TRASH, AgentRow.due_sk < layout.up_to(now)):
            account_id, name = due.pk[len("A#"):], due.sk[len(layout.AGENT_PREFIX):]
            row = self._row(account_id, name)
            if row is not None and is_purged(row.purge_after, now):  # else restored, or the index was behind
                found.append((account_id, name))
        return found

    def purge_due(self, now: str) -> list[tuple[str, str]]:
        purged: list[tuple[str, str]] = []
        for account_id, name in self.due_for_purge(now):
            try:
                self._purge(account_id, name)
            except AttachedError:
                continue  # cannot happen to a trashed agent's memory; never stop the sweep for it
            purged.append((account_id, name))
        return purged

    def _purge(self, account_id: str, name: str) -> tuple[int, int]:
        """Let go of its attachments, purge its own memory, then delete the agent item last: a purge cut
        short leaves the agent behind, and another purge finishes it. Returns (memories, entries)."""
        memories = entries = 0
        for _ in range(MAX_WRITE_ATTEMPTS):
            row = self._row(account_id, name)
            if row is None:
                return memories, entries
            own = self._close_own_memory(account_id, name)
            for attachment in _record(row).memories:
                self.memories.detach(account_id, attachment.memory, name)
            if own is not None:
                entries += purge_memory(self.models, own)
                memories += 1
            try:
                row.delete(condition=AgentRow.version == row.version)
            except DeleteError as error:
                if error.cause_response_code != CONDITION_FAILED:
                    raise
                continue  # changed meanwhile (an attachment added?): let go of what it holds now
            return memories, entries
        raise ConflictError(f"agent {name!r} is being changed by too many writers at once; try again")

    def _close_own_memory(self, account_id: str, name: str) -> MemoryRow | None:
        """The own memory, moved to the trash (due now) when it is live, so no entry is created in it while
        it is purged (and a purge cut short leaves it to the memories' sweep). AttachedError when another
        agent attaches it."""
        own_name = own_memory_name(name)
        self._changed_own_memory(account_id, name)
        for _ in range(MAX_WRITE_ATTEMPTS):
            own = self._memory(account_id, own_name)
            if own is None:
                return None
            attached = _attached_elsewhere(own, name)
            if attached:
                raise _attached_error(name, attached)
            if own.deleted_at is not None:
                return own
            moment = iso(utcnow())
            try:
                own.update(actions=trash_actions(account_id, own_name, moment, moment),
                           condition=MemoryRow.deleted_at.does_not_exist() & MemoryRow.attached.does_not_exist())
            except UpdateError as error:
                if error.cause_response_code != CONDITION_FAILED:
                    raise
                continue
            self._changed_own_memory(account_id, name)
            return own
        raise ConflictError(f"memory {own_name!r} is being changed by too many writers at once; try again")

    # -- reads ------------------------------------------------------------------------------------------
    def get_agent(self, account_id: str, name: str, now: str) -> AgentRecord | None:
        row = self._row(account_id, name)
        if row is None or is_purged(row.purge_after, now):
            return None
        return _record(row)

    def list_agents(self, account_id: str, now: str, *, trash: bool, user_id: str | None,
                    include_account: bool) -> list[AgentRecord]:
        def in_scope(row: AgentRow) -> bool:
            if include_account and row.user_id is None:
                return True
            if user_id is not None:
                return row.user_id == user_id
            return include_account and row.user_id is not None

        def in_state(row: AgentRow) -> bool:
            if trash:
                return row.deleted_at is not None and row.purge_after is not None and row.purge_after > now
            return row.deleted_at is None

        rows = self.models.agent.query(
            layout.account_pk(account_id), AgentRow.sk.startswith(layout.AGENT_PREFIX), consistent_read=True
        )
        return [_record(row) for row in rows if in_scope(row) and in_state(row)]
