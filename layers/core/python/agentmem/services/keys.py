"""Accounts and API keys (SPEC §10, §13). Secrets are shown once and stored as hashes."""

from __future__ import annotations

import hashlib
import secrets
import uuid

from ..domain.access import require_account_key
from ..domain.clock import Clock, iso, utcnow
from ..domain.errors import InvalidError, NotFoundError, UnauthorizedError
from ..domain.models import Account, ApiKey, KeyKind, Principal
from ..domain.rules import check_user_id
from ..ports.accounts import AccountStore

SECRET_PREFIX = "am_"
DEFAULT_ACCOUNT = "default"


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def new_secret() -> str:
    return SECRET_PREFIX + secrets.token_urlsafe(32)


class KeyService:
    def __init__(self, store: AccountStore, clock: Clock = utcnow) -> None:
        self.store = store
        self.clock = clock

    # -- operator side ----------------------------------------------------------------------------------
    def create_account(self, name: str, secret: str | None = None) -> tuple[Account, str]:
        """A new account and its first account key; the secret is returned once."""
        if not name or len(name) > 128 or not name.replace("-", "").replace("_", "").replace(".", "").isalnum():
            raise InvalidError("an account name is 1–128 letters, digits and - _ .", field="name")
        account = Account(account_id="acct_" + uuid.uuid4().hex[:16], name=name, created_at=iso(self.clock()))
        self.store.create_account(account)
        secret = self._issue(account.account_id, "account", None, secret)
        return account, secret

    def ensure_account(self, name: str, secret: str | None = None) -> tuple[Account, str | None]:
        """The named account, created on first use. Returns a secret only when one was issued.

        With ``secret`` (``AGENTMEM_API_KEY``) that exact value is made one of the account's keys.
        """
        account = self.store.get_account_by_name(name)
        if account is None:
            return self.create_account(name, secret)
        if secret is not None and self.store.get_key_by_hash(hash_secret(secret)) is None:
            self._issue(account.account_id, "account", None, secret)
        return account, None

    # -- request side -----------------------------------------------------------------------------------
    def authenticate(self, authorization: str | None) -> Principal:
        if not authorization:
            raise UnauthorizedError("missing API key: send 'Authorization: Bearer <key>'")
        scheme, _, secret = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not secret.strip():
            raise UnauthorizedError("the Authorization header must be 'Bearer <key>'")
        key = self.store.get_key_by_hash(hash_secret(secret.strip()))
        if key is None:
            raise UnauthorizedError("this API key is not valid (revoked, mistyped or of another install)")
        return Principal(account_id=key.account_id, key_id=key.key_id, kind=key.kind, user_id=key.user_id)

    def create_key(self, principal: Principal, user: str | None = None) -> tuple[ApiKey, str]:
        require_account_key(principal, "managing keys")
        if user is not None:
            check_user_id(user)
        secret = self._issue(principal.account_id, "user" if user else "account", user, None)
        key = self.store.get_key_by_hash(hash_secret(secret))
        assert key is not None
        return key, secret

    def list_keys(self, principal: Principal) -> list[ApiKey]:
        require_account_key(principal, "managing keys")
        return self.store.list_keys(principal.account_id)

    def delete_key(self, principal: Principal, key_id: str) -> None:
        require_account_key(principal, "managing keys")
        if not self.store.delete_key(principal.account_id, key_id):
            raise NotFoundError(f"no key {key_id!r} in this account")

    def _issue(self, account_id: str, kind: KeyKind, user: str | None, secret: str | None) -> str:
        secret = secret or new_secret()
        if len(secret) < 8:
            raise InvalidError("an API key must be at least 8 characters", field="api_key")
        self.store.put_key(
            ApiKey(
                key_id="key_" + uuid.uuid4().hex[:16], account_id=account_id, kind=kind, user_id=user,
                secret_hash=hash_secret(secret), last4=secret[-4:], created_at=iso(self.clock()),
            )
        )
        return secret
