from __future__ import annotations

from abc import ABC, abstractmethod

from ..domain.models import Account, ApiKey


class AccountStore(ABC):
    """Accounts and their API keys. Keys are looked up by the hash of their secret."""

    @abstractmethod
    def create_account(self, account: Account) -> None:
        """Store a new account; raises ConflictError when the name is taken."""

    @abstractmethod
    def get_account_by_name(self, name: str) -> Account | None: ...

    @abstractmethod
    def put_key(self, key: ApiKey) -> None: ...

    @abstractmethod
    def get_key_by_hash(self, secret_hash: str) -> ApiKey | None: ...

    @abstractmethod
    def list_keys(self, account_id: str) -> list[ApiKey]: ...

    @abstractmethod
    def delete_key(self, account_id: str, key_id: str) -> bool:
        """Remove a key of this account; False when it has no such key."""
