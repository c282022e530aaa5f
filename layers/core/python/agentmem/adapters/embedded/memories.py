"""Memories on SQLite, with their trash and attachments.

A memory's record without its counts (what every entry call looks up first) is kept in the process
(``generations.KeptAnswers``) while no memory of the data dir was created, trashed, restored or purged since it
was read, by any process (an agent's own memory too, which agents.py writes: the triggers see every path). Its
counts and attachments change with every entry saved and are never kept; a memory not found is asked each time."""

from __future__ import annotations

import sqlite3

from ...domain.errors import AttachedError, ConflictError, NotFoundError
from ...domain.models import MemoryRecord
from ...ports.memories import MemoryStore
from .database import Database
from .entry_words import forget_words_where
from .generations import KeptAnswers

_COUNT = (
    "(SELECT count(*) FROM entries e WHERE e.account_id = m.account_id AND e.memory = m.name "
    "AND e.conversation IS NULL AND (e.expires_at IS NULL OR e.expires_at > :now) "
    "AND (:viewer IS NULL OR e.layer_user IN ('', :viewer)))"
)
_ATTACHED = (
    "(SELECT group_concat(agent, char(31)) FROM (SELECT agent FROM attachments a "
    "WHERE a.account_id = m.account_id AND a.memory = m.name ORDER BY agent))"
)


def _record(row: sqlite3.Row) -> MemoryRecord:
    columns = row.keys()
    attached = row["attached"] if "attached" in columns else None
    return MemoryRecord(
        account_id=row["account_id"],
        name=row["name"],
        user_id=row["user_id"],
        created_at=row["created_at"],
        deleted_at=row["deleted_at"],
        purge_after=row["purge_after"],
        entry_count=row["entry_count"] if "entry_count" in columns else 0,
        attached_to=tuple(attached.split("\x1f")) if attached else (),
    )


def purge_memory_rows(conn: sqlite3.Connection, account_id: str, name: str) -> tuple[int, int]:
    """Delete one memory for good inside the caller's write transaction: its entries (and their search
    rows), their history and last versions, the attachments of it, and the memory row. Returns (memories,
    entries) removed."""
    forget_words_where(conn, "account_id=? AND memory=?", (account_id, name))
    removed = {}
    for table in ("entries", "entry_history", "entry_last_versions", "layer_entry_counts", "attachments", "memories"):
        column = "name" if table == "memories" else "memory"
        cursor = conn.execute(f"DELETE FROM {table} WHERE account_id=? AND {column}=?", (account_id, name))
        removed[table] = cursor.rowcount
    return removed["memories"], removed["entries"]


class SqliteMemoryStore(MemoryStore):
    def __init__(self, db: Database) -> None:
        self.db = db
        self._records: KeptAnswers[tuple[str, str], MemoryRecord] = KeptAnswers(db.generations, "memories")

    def create_memory(self, record: MemoryRecord) -> tuple[MemoryRecord, bool]:
        with self.db.write() as conn:
            cursor = conn.execute(
                "INSERT INTO memories (account_id, name, user_id, created_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (account_id, name) DO NOTHING",
                (record.account_id, record.name, record.user_id, record.created_at),
            )
            created = cursor.rowcount == 1
        current = self.get_memory(record.account_id, record.name, record.created_at, include_purged=True)
        assert current is not None
        return current, created

    def get_memory(
        self, account_id: str, name: str, now: str, *, viewer: str | None = None, counts: bool = True,
        include_purged: bool = False,
    ) -> MemoryRecord | None:
        if counts:
            row = self.db.connection().execute(
                f"SELECT m.*, {_COUNT} AS entry_count, {_ATTACHED} AS attached FROM memories m "
                "WHERE m.account_id = :account AND m.name = :name",
                {"account": account_id, "name": name, "now": now, "viewer": viewer},
            ).fetchone()
            record = _record(row) if row is not None else None
        else:
            record = self._record_without_counts(account_id, name)
        if record is None:
            return None
        if not include_purged and record.purge_after is not None and record.purge_after <= now:
            return None
        return record

    def _record_without_counts(self, account_id: str, name: str) -> MemoryRecord | None:
        record = self._records.get((account_id, name))
        if record is not None:
            return record
        row = self.db.connection().execute(  # the record and the generation it is current at: one snapshot
            "SELECT m.*, (SELECT memories FROM cache_generation) AS generation FROM memories m "
            "WHERE m.account_id = ? AND m.name = ?", (account_id, name),
        ).fetchone()
        if row is None:
            return None
        record = _record(row)
        self._records.keep((account_id, name), row["generation"], record)
        return record

    def list_memories(
        self, account_id: str, now: str, *, trash: bool, user_id: str | None, include_account: bool
    ) -> list[MemoryRecord]:
        scope = []
        if include_account:
            scope.append("m.user_id IS NULL")
        if user_id is not None:
            scope.append("m.user_id = :user")
        elif include_account:
            scope.append("m.user_id IS NOT NULL")
        where = " OR ".join(scope) or "0"
        trashed = "m.deleted_at IS NOT NULL AND m.purge_after > :now" if trash else "m.deleted_at IS NULL"
        rows = self.db.connection().execute(
            f"SELECT m.*, {_COUNT} AS entry_count, {_ATTACHED} AS attached FROM memories m "
            f"WHERE m.account_id = :account AND ({where}) AND {trashed} ORDER BY m.name",
            {"account": account_id, "user": user_id, "now": now, "viewer": user_id},
        ).fetchall()
        return [_record(r) for r in rows]

    def trash_memory(self, account_id: str, name: str, deleted_at: str, purge_after: str) -> MemoryRecord:
        with self.db.write() as conn:
            attached = [
                r[0] for r in conn.execute(
                    "SELECT agent FROM attachments WHERE account_id=? AND memory=? ORDER BY agent",
                    (account_id, name),
                )
            ]
            if attached:
                raise AttachedError(
                    f"memory {name!r} is attached to {', '.join(attached)}; detach it from them first",
                    attached_to=attached,
                )
            cursor = conn.execute(
                "UPDATE memories SET deleted_at=?, purge_after=? "
                "WHERE account_id=? AND name=? AND deleted_at IS NULL",
                (deleted_at, purge_after, account_id, name),
            )
            if cursor.rowcount != 1:
                raise NotFoundError(f"no memory named {name!r}")
        record = self.get_memory(account_id, name, deleted_at)
        assert record is not None
        return record

    def restore_memory(self, account_id: str, name: str, now: str) -> MemoryRecord:
        with self.db.write() as conn:
            row = conn.execute(
                "SELECT deleted_at, purge_after FROM memories WHERE account_id=? AND name=?", (account_id, name)
            ).fetchone()
            if row is None or (row["purge_after"] is not None and row["purge_after"] <= now):
                raise NotFoundError(f"no memory named {name!r} in the trash")
            if row["deleted_at"] is None:
                raise ConflictError(f"memory {name!r} is not in the trash")
            conn.execute(
                "UPDATE memories SET deleted_at=NULL, purge_after=NULL WHERE account_id=? AND name=?",
                (account_id, name),
            )
        record = self.get_memory(account_id, name, now)
        assert record is not None
        return record

    def purge_due(self, now: str) -> int:
        with self.db.write() as conn:
            due = conn.execute(
                "SELECT account_id, name FROM memories WHERE purge_after IS NOT NULL AND purge_after <= ?", (now,)
            ).fetchall()
            for account_id, name in due:
                purge_memory_rows(conn, account_id, name)
        return len(due)

    def attach(self, account_id: str, memory: str, agent: str, writable: bool) -> None:
        with self.db.write() as conn:
            conn.execute(
                "INSERT INTO attachments (account_id, memory, agent, writable) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (account_id, memory, agent) DO UPDATE SET writable=excluded.writable",
                (account_id, memory, agent, int(writable)),
            )

    def detach(self, account_id: str, memory: str, agent: str) -> None:
        with self.db.write() as conn:
            conn.execute(
                "DELETE FROM attachments WHERE account_id=? AND memory=? AND agent=?", (account_id, memory, agent)
            )
