"""Accounts and API keys on DynamoDB.

The key item ``KEY#{sha256}`` is what the authorizer reads: one ``GetItem``. The account's key list
(``A#{account}`` / ``KEY#{key id}``) is written and deleted in the same transaction as it. An account's
name is held unique by an item of its own (``ACCOUNTNAME#{name}``), written with the account.

Round trips: ``create_account`` and ``put_key`` one transaction; ``get_account_by_name`` and
``get_key_by_hash`` one consistent ``GetItem``; ``list_keys`` one ``Query``; ``delete_key`` a ``GetItem``
(the listed key holds the hash) and a transaction.
"""

from __future__ import annotations

from typing import cast

from ....domain.errors import ConflictError
from ....domain.models import Account, ApiKey, KeyKind
from ....ports.accounts import AccountStore
from . import layout
from .models import AccountRow, BoundModels, KeyRow
from .transactions import Cancelled, WriteSet


def _key(row: KeyRow) -> ApiKey:
    return ApiKey(
        key_id=row.key_id, account_id=row.account_id, kind=cast(KeyKind, row.kind), user_id=row.user_id,
        secret_hash=row.secret_hash, last4=row.last4, created_at=row.created_at,
    )


class DynamoAccountStore(AccountStore):
    def __init__(self, models: BoundModels) -> None:
        self.models = models

    def _account_row(self, pk: str, sk: str, account: Account) -> AccountRow:
        row = self.models.account(pk, sk)
        row.account_id = account.account_id
        row.name = account.name
        row.created_at = account.created_at
        return row

    def create_account(self, account: Account) -> None:
        writes = WriteSet(self.models.connection)
        new = AccountRow.sk.does_not_exist()
        name_row = self._account_row(layout.account_name_pk(account.name), layout.ACCOUNT_NAME_SK, account)
        account_row = self._account_row(layout.account_pk(account.account_id), layout.ACCOUNT_SK, account)
        writes.put("name", name_row, new)
        writes.put("account", account_row, new)
        try:
            writes.commit()
        except Cancelled as cancelled:
            if cancelled.failed("name"):
                raise ConflictError(f"an account named {account.name!r} already exists") from None
            raise

    def get_account_by_name(self, name: str) -> Account | None:
        try:
            row = self.models.account.get(layout.account_name_pk(name), layout.ACCOUNT_NAME_SK, consistent_read=True)
        except self.models.account.DoesNotExist:
            return None
        return Account(row.account_id, row.name, row.created_at)

    def _key_row(self, pk: str, sk: str, key: ApiKey) -> KeyRow:
        row = self.models.key(pk, sk)
        row.key_id = key.key_id
        row.account_id = key.account_id
        row.kind = key.kind
        row.user_id = key.user_id
        row.secret_hash = key.secret_hash
        row.last4 = key.last4
        row.created_at = key.created_at
        return row

    def put_key(self, key: ApiKey) -> None:
        writes = WriteSet(self.models.connection)
        new = KeyRow.sk.does_not_exist()
        writes.put("key", self._key_row(layout.key_pk(key.secret_hash), layout.KEY_SK, key), new)
        writes.put("listed", self._key_row(layout.account_pk(key.account_id), layout.key_ref_sk(key.key_id), key), new)
        try:
            writes.commit()
        except Cancelled:
            raise ConflictError("this API key already exists") from None

    def get_key_by_hash(self, secret_hash: str) -> ApiKey | None:
        try:
            # consistent: a key deleted a moment ago must not work any more
            row = self.models.key.get(layout.key_pk(secret_hash), layout.KEY_SK, consistent_read=True)
        except self.models.key.DoesNotExist:
            return None
        return _key(row)

    def list_keys(self, account_id: str) -> list[ApiKey]:
        rows = self.models.key.query(
            layout.account_pk(account_id), KeyRow.sk.startswith(layout.KEY_REF_PREFIX), consistent_read=True
        )
        return sorted((_key(r) for r in rows), key=lambda k: (k.created_at, k.key_id))

    def delete_key(self, account_id: str, key_id: str) -> bool:
        try:
            listed = self.models.key.get(layout.account_pk(account_id), layout.key_ref_sk(key_id), consistent_read=True)
        except self.models.key.DoesNotExist:
            return False
        writes = WriteSet(self.models.connection)
        writes.delete("listed", listed, KeyRow.sk.exists())
        writes.delete("key", self.models.key(layout.key_pk(listed.secret_hash), layout.KEY_SK))
        try:
            writes.commit()
        except Cancelled:
            return False  # deleted by someone else meanwhile
        return True
