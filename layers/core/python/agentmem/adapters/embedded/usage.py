"""Usage counters on SQLite."""

from __future__ import annotations

from ...domain.models import UsageCount
from ...ports.usage import UsageStore
from .database import Database


class SqliteUsageStore(UsageStore):
    def __init__(self, db: Database) -> None:
        self.db = db

    def increment(self, account_id: str, day: str, operation: str, billable: bool, by: int = 1) -> None:
        with self.db.write() as conn:
            conn.execute(
                "INSERT INTO usage (account_id, day, operation, billable, count) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (account_id, day, operation, billable) DO UPDATE SET count = count + excluded.count",
                (account_id, day, operation, int(billable), by),
            )

    def counts(self, account_id: str, since_day: str) -> list[UsageCount]:
        rows = self.db.connection().execute(
            "SELECT day, operation, billable, count FROM usage WHERE account_id=? AND day >= ? "
            "ORDER BY day, operation",
            (account_id, since_day),
        ).fetchall()
        return [UsageCount(r["day"], r["operation"], bool(r["billable"]), r["count"]) for r in rows]
