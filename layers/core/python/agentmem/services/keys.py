"""Accounts and API keys (SPEC §10, §13). Secrets are shown once and stored as hashes."""

from __future__ import annotations

import hashlib
import secrets
import time
import uuid
from collections.abc import Callable

from ..domain.access import require_account_key
from ..domain.clock import Clock, iso, utcnow
from ..domain.errors import InvalidError, NotFoundError, UnauthorizedError
from ..domain.models import Account, ApiKey, KeyKind, Principal
from ..domain.rules import check_user_id
from ..ports.accounts import AccountStore

SECRET_PREFIX = "am_"
DEFAULT_ACCOUNT = "default"
# how long `agentmem serve --backend aws` trusts a key it looked up: the deployed authorizer's cache (300 s,
# infra/config.py authorizer_cache_seconds), so a key revoked elsewhere stops working as late as it does there
KEY_CACHE_SECONDS = 300.0
KEYS_KEPT = 10_000  # answers kept at most (a flood of distinct keys cannot grow it further)


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def new_secret() -> str:
    return SECRET_PREFIX + secrets.token_urlsafe(32)


class KeyService:
    """``cache_seconds``: how long ``authenticate`` keeps a valid key's answer (0: it asks the store each
    time). A key deleted through this service stops working at once; one deleted by another process works
    here for at most that long, as API Gateway's cache of the authorizer's answer does on AWS."""

    def __init__(
        self, store: AccountStore, clock: Clock = utcnow, *, cache_seconds: float = 0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.clock = clock
        self.cache_seconds = cache_seconds
        self.monotonic = monotonic
        self._known: dict[str, tuple[float, Principal]] = {}  # secret hash -> (trusted until, principal)

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
        secret_hash = hash_secret(secret.strip())
        known = self._known.get(secret_hash)
        if known is not None and self.monotonic() < known[0]:
            return known[1]
        key = self.store.get_key_by_hash(secret_hash)
        if key is None:
            self._known.pop(secret_hash, None)
            raise UnauthorizedError("this API key is not valid (revoked, mistyped or of another install)")
        principal = Principal(account_id=key.account_id, key_id=key.key_id, kind=key.kind, user_id=key.user_id)
        if self.cache_seconds > 0:
            if len(self._known) >= KEYS_KEPT:
                self._known.clear()
            self._known[secret_hash] = (self.monotonic() + self.cache_seconds, principal)
        return principal

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
        self.forget_key(key_id)
        if not self.store.delete_key(principal.account_id, key_id):
            raise NotFoundError(f"no key {key_id!r} in this account")

    def forget_key(self, key_id: str) -> None:
        """Stop trusting a kept answer for the key (it is being deleted)."""
        self._known = {h: known for h, known in self._known.items() if known[1].key_id != key_id}

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
