"""Accounts and API keys on SQLite.

A key found is kept in the process (``generations.KeptAnswers``) while no key of the data dir was deleted or
changed since it was read, by any process: a key revoked (or its user erased) through one worker is refused by
every worker from the moment the revoke returned. A hash not found is asked each time."""

from __future__ import annotations

import sqlite3

from ...domain.errors import ConflictError
from ...domain.models import Account, ApiKey
from ...ports.accounts import AccountStore
from .database import Database
from .generations import KeptAnswers


def _key(row: sqlite3.Row) -> ApiKey:
    return ApiKey(
        key_id=row["key_id"], account_id=row["account_id"], kind=row["kind"], user_id=row["user_id"],
        secret_hash=row["secret_hash"], last4=row["last4"], created_at=row["created_at"],
    )


class SqliteAccountStore(AccountStore):
    def __init__(self, db: Database) -> None:
        self.db = db
        self._keys: KeptAnswers[str, ApiKey] = KeptAnswers(db.generations, "keys")

    def create_account(self, account: Account) -> None:
        try:
            with self.db.write() as conn:
                conn.execute(
                    "INSERT INTO accounts (account_id, name, created_at) VALUES (?, ?, ?)",
                    (account.account_id, account.name, account.created_at),
                )
        except sqlite3.IntegrityError:
            raise ConflictError(f"an account named {account.name!r} already exists") from None

    def get_account_by_name(self, name: str) -> Account | None:
        row = self.db.connection().execute("SELECT * FROM accounts WHERE name=?", (name,)).fetchone()
        return Account(row["account_id"], row["name"], row["created_at"]) if row else None

    def put_key(self, key: ApiKey) -> None:
        with self.db.write() as conn:
            conn.execute(
                "INSERT INTO api_keys (key_id, account_id, kind, user_id, secret_hash, last4, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (key.key_id, key.account_id, key.kind, key.user_id, key.secret_hash, key.last4, key.created_at),
            )

    def get_key_by_hash(self, secret_hash: str) -> ApiKey | None:
        key = self._keys.get(secret_hash)
        if key is not None:
            return key
        row = self.db.connection().execute(  # the key and the generation it is current at: one snapshot
            "SELECT *, (SELECT keys FROM cache_generation) AS generation FROM api_keys WHERE secret_hash=?",
            (secret_hash,),
        ).fetchone()
        if row is None:
            return None
        key = _key(row)
        self._keys.keep(secret_hash, row["generation"], key)
        return key

    def list_keys(self, account_id: str) -> list[ApiKey]:
        rows = self.db.connection().execute(
            "SELECT * FROM api_keys WHERE account_id=? ORDER BY created_at, key_id", (account_id,)
        ).fetchall()
        return [_key(r) for r in rows]

    def delete_key(self, account_id: str, key_id: str) -> bool:
        with self.db.write() as conn:
            cursor = conn.execute("DELETE FROM api_keys WHERE account_id=? AND key_id=?", (account_id, key_id))
            return cursor.rowcount == 1
