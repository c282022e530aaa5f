"""Agents on SQLite: each change is one write transaction over the agent, its own memory and ``attachments``.

The agent's row holds the columns queries need and its settings document (``adapters/agent_settings``).
Its attachments are also rows of ``attachments`` (what a memory's ``attached_to`` and the 409 on its
trash read); the rows change in the transaction that changes the agent. An agent past ``purge_after``
that no sweep removed yet counts as gone: a create of its name finishes the purge first.
"""

from __future__ import annotations

import sqlite3

from ...domain.agents import AgentRecord, Attachment, own_memory_name
from ...domain.errors import AttachedError, ConflictError, NotFoundError, VersionConflictError
from ...ports.agents import AgentStore
from ..agent_settings import agent_record, attachment_diff, conflict_message, is_purged, settings_json
from .database import Database
from .memories import purge_memory_rows


def _record(row: sqlite3.Row) -> AgentRecord:
    return agent_record(
        account_id=row["account_id"], name=row["name"], user_id=row["user_id"], version=row["version"],
        settings=row["settings"], created_at=row["created_at"], updated_at=row["updated_at"],
        deleted_at=row["deleted_at"], purge_after=row["purge_after"],
    )


class SqliteAgentStore(AgentStore):
    def __init__(self, db: Database) -> None:
        self.db = db

    @staticmethod
    def _row(conn: sqlite3.Connection, account_id: str, name: str) -> sqlite3.Row | None:
        row: sqlite3.Row | None = conn.execute(
            "SELECT * FROM agents WHERE account_id=? AND name=?", (account_id, name)
        ).fetchone()
        return row

    # -- writes -----------------------------------------------------------------------------------------
    def save_agent(self, record: AgentRecord, *, expected_version: int) -> AgentRecord:
        account_id, name, now = record.account_id, record.name, record.updated_at
        with self.db.write() as conn:
            row = self._row(conn, account_id, name)
            if row is not None and is_purged(row["purge_after"], now):
                _purge(conn, account_id, name)  # its time in the trash is over: finish it first
                row = None
            current = int(row["version"]) if row is not None else 0
            if expected_version != current:
                raise VersionConflictError(
                    conflict_message(name, current, expected_version), current_version=current
                )
            if row is not None and row["deleted_at"] is not None:
                raise ConflictError(f"agent {name!r} is in the trash: restore it first")
            old = _record(row).memories if row is not None else ()
            diff = attachment_diff(name, old, record.memories)
            if row is None:
                _create_own_memory(conn, record)
            for attachment in diff.added:
                _require_live_memory(conn, account_id, attachment.memory)
            _write_attachments(conn, account_id, name, diff.added + diff.rewritten, diff.removed)
            values = {
                "account_id": account_id, "name": name, "version": current + 1, "settings": settings_json(record),
                "updated_at": record.updated_at,
                # the owner and the creation time are the agent's for good
                "user_id": row["user_id"] if row is not None else record.user_id,
                "created_at": row["created_at"] if row is not None else record.created_at,
            }
            if row is None:
                conn.execute(
                    "INSERT INTO agents (account_id, name, user_id, version, settings, created_at, updated_at) "
                    "VALUES (:account_id, :name, :user_id, :version, :settings, :created_at, :updated_at)",
                    values,
                )
            else:
                conn.execute(
                    "UPDATE agents SET version=:version, settings=:settings, updated_at=:updated_at "
                    "WHERE account_id=:account_id AND name=:name",
                    values,
                )
            stored = self._row(conn, account_id, name)
        assert stored is not None
        return _record(stored)

    def trash_agent(self, account_id: str, name: str, deleted_at: str, purge_after: str) -> AgentRecord:
        with self.db.write() as conn:
            row = self._row(conn, account_id, name)
            if row is None or row["deleted_at"] is not None:
                raise NotFoundError(f"no agent named {name!r}")
            _refuse_if_attached(conn, account_id, name)
            conn.execute(
                "UPDATE agents SET deleted_at=?, purge_after=? WHERE account_id=? AND name=?",
                (deleted_at, purge_after, account_id, name),
            )
            conn.execute(
                "UPDATE memories SET deleted_at=?, purge_after=? WHERE account_id=? AND name=?",
                (deleted_at, purge_after, account_id, own_memory_name(name)),
            )
            stored = self._row(conn, account_id, name)
        assert stored is not None
        return _record(stored)

    def restore_agent(self, account_id: str, name: str, now: str) -> AgentRecord:
        with self.db.write() as conn:
            row = self._row(conn, account_id, name)
            if row is None or is_purged(row["purge_after"], now):
                raise NotFoundError(f"no agent named {name!r} in the trash")
            if row["deleted_at"] is None:
                raise ConflictError(f"agent {name!r} is not in the trash")
            conn.execute(
                "UPDATE agents SET deleted_at=NULL, purge_after=NULL WHERE account_id=? AND name=?",
                (account_id, name),
            )
            conn.execute(
                "UPDATE memories SET deleted_at=NULL, purge_after=NULL WHERE account_id=? AND name=?",
                (account_id, own_memory_name(name)),
            )
            stored = self._row(conn, account_id, name)
        assert stored is not None
        return _record(stored)

    def purge_agent(self, account_id: str, name: str) -> dict[str, int]:
        with self.db.write() as conn:
            if self._row(conn, account_id, name) is None:
                raise NotFoundError(f"no agent named {name!r}")
            _refuse_if_attached(conn, account_id, name)
            memories, entries = _purge(conn, account_id, name)
        return {"memories": memories, "entries": entries}

    def due_for_purge(self, now: str) -> list[tuple[str, str]]:
        return _due(self.db.connection(), now)

    def purge_due(self, now: str) -> list[tuple[str, str]]:
        with self.db.write() as conn:
            due = _due(conn, now)
            for account_id, name in due:
                _purge(conn, account_id, name)
        return due

    # -- reads ------------------------------------------------------------------------------------------
    def get_agent(self, account_id: str, name: str, now: str) -> AgentRecord | None:
        row = self._row(self.db.connection(), account_id, name)
        if row is None or is_purged(row["purge_after"], now):
            return None
        return _record(row)

    def list_agents(self, account_id: str, now: str, *, trash: bool, user_id: str | None,
                    include_account: bool) -> list[AgentRecord]:
        scope = []
        if include_account:
            scope.append("user_id IS NULL")
        if user_id is not None:
            scope.append("user_id = :user")
        elif include_account:
            scope.append("user_id IS NOT NULL")
        where = " OR ".join(scope) or "0"
        state = "deleted_at IS NOT NULL AND purge_after > :now" if trash else "deleted_at IS NULL"
        rows = self.db.connection().execute(
            f"SELECT * FROM agents WHERE account_id = :account AND ({where}) AND {state} ORDER BY name",
            {"account": account_id, "user": user_id, "now": now},
        ).fetchall()
        return [_record(r) for r in rows]


def _create_own_memory(conn: sqlite3.Connection, record: AgentRecord) -> None:
    own = own_memory_name(record.name)
    existing = conn.execute(
        "SELECT purge_after FROM memories WHERE account_id=? AND name=?", (record.account_id, own)
    ).fetchone()
    if existing is not None:
        if not is_purged(existing["purge_after"], record.updated_at):
            raise ConflictError(f"a memory named {own!r} already exists in this account", memory=own)
        purge_memory_rows(conn, record.account_id, own)
    conn.execute(
        "INSERT INTO memories (account_id, name, user_id, created_at) VALUES (?, ?, ?, ?)",
        (record.account_id, own, record.user_id, record.created_at),
    )


def _require_live_memory(conn: sqlite3.Connection, account_id: str, memory: str) -> None:
    row = conn.execute(
        "SELECT deleted_at FROM memories WHERE account_id=? AND name=?", (account_id, memory)
    ).fetchone()
    if row is None or row["deleted_at"] is not None:
        raise NotFoundError(f"no memory named {memory!r} to attach", field="memories", memory=memory)


def _write_attachments(
    conn: sqlite3.Connection, account_id: str, agent: str, upserts: tuple[Attachment, ...], removed: tuple[str, ...]
) -> None:
    for attachment in upserts:
        conn.execute(
            "INSERT INTO attachments (account_id, memory, agent, writable) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (account_id, memory, agent) DO UPDATE SET writable=excluded.writable",
            (account_id, attachment.memory, agent, int(attachment.writable)),
        )
    for memory in removed:
        conn.execute(
            "DELETE FROM attachments WHERE account_id=? AND memory=? AND agent=?", (account_id, memory, agent)
        )


def _refuse_if_attached(conn: sqlite3.Connection, account_id: str, name: str) -> None:
    """AttachedError when other agents attach this agent's own memory."""
    own = own_memory_name(name)
    attached = [
        r[0] for r in conn.execute(
            "SELECT agent FROM attachments WHERE account_id=? AND memory=? AND agent<>? ORDER BY agent",
            (account_id, own, name),
        )
    ]
    if attached:
        raise AttachedError(
            f"agent {name!r}'s own memory {own!r} is attached to {', '.join(attached)}; detach it from them first",
            attached_to=attached,
        )


def _purge(conn: sqlite3.Connection, account_id: str, name: str) -> tuple[int, int]:
    """The agent, its attachments and its own memory with every entry, in the caller's transaction.
    Returns (memories, entries) removed."""
    conn.execute("DELETE FROM attachments WHERE account_id=? AND agent=?", (account_id, name))
    removed = purge_memory_rows(conn, account_id, own_memory_name(name))
    conn.execute("DELETE FROM agents WHERE account_id=? AND name=?", (account_id, name))
    return removed


def _due(conn: sqlite3.Connection, now: str) -> list[tuple[str, str]]:
    return [
        (r[0], r[1]) for r in conn.execute(
            "SELECT account_id, name FROM agents WHERE purge_after IS NOT NULL AND purge_after <= ? "
            "ORDER BY account_id, name",
            (now,),
        )
    ]
