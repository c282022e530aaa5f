"""How long a process that looks keys up itself trusts them (``agentmem serve --backend aws``): as long as
API Gateway caches the deployed authorizer's answer, a key deleted here failing at once."""

from __future__ import annotations

import pytest
from agentmem.domain.errors import UnauthorizedError
from agentmem.domain.models import Account, ApiKey
from agentmem.ports.accounts import AccountStore
from agentmem.services.keys import KEY_CACHE_SECONDS, KeyService


class CountingAccountStore(AccountStore):
    """Keys in a dict, counting the lookups (each one a GetItem on DynamoDB)."""

    def __init__(self) -> None:
        self.keys: dict[str, ApiKey] = {}
        self.lookups = 0

    def create_account(self, account: Account) -> None:
        pass

    def get_account_by_name(self, name: str) -> Account | None:
        return None

    def put_key(self, key: ApiKey) -> None:
        self.keys[key.secret_hash] = key

    def get_key_by_hash(self, secret_hash: str) -> ApiKey | None:
        self.lookups += 1
        return self.keys.get(secret_hash)

    def list_keys(self, account_id: str) -> list[ApiKey]:
        return [k for k in self.keys.values() if k.account_id == account_id]

    def delete_key(self, account_id: str, key_id: str) -> bool:
        found = [h for h, k in self.keys.items() if k.account_id == account_id and k.key_id == key_id]
        for secret_hash in found:
            del self.keys[secret_hash]
        return bool(found)


class Ticks:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def setup() -> tuple[KeyService, CountingAccountStore, Ticks, str]:
    store, ticks = CountingAccountStore(), Ticks()
    keys = KeyService(store, cache_seconds=KEY_CACHE_SECONDS, monotonic=ticks)
    secret = keys._issue("acct_1", "account", None, "am_secret_of_acct_1")
    return keys, store, ticks, secret


def test_a_key_is_looked_up_once_within_the_window(setup: tuple[KeyService, CountingAccountStore, Ticks, str]) -> None:
    # Given a process that caches keys
    keys, store, ticks, secret = setup

    # When the same key calls three times within the window, and once more after it
    answers = [keys.authenticate(f"Bearer {secret}") for _ in range(3)]
    lookups_within = store.lookups
    ticks.now += KEY_CACHE_SECONDS
    keys.authenticate(f"Bearer {secret}")

    # Then the store was asked once within the window, and again after it
    assert {a.account_id for a in answers} == {"acct_1"}
    assert (lookups_within, store.lookups) == (1, 2)


def test_a_key_deleted_here_fails_at_once(setup: tuple[KeyService, CountingAccountStore, Ticks, str]) -> None:
    # Given a key this process trusts
    keys, _, _, secret = setup
    principal = keys.authenticate(f"Bearer {secret}")
    other = keys._issue("acct_1", "account", None, "am_other_key_of_acct_1")

    # When it is deleted through this process
    keys.delete_key(keys.authenticate(f"Bearer {other}"), principal.key_id)

    # Then it is refused on its next call, though the window has not passed
    with pytest.raises(UnauthorizedError):
        keys.authenticate(f"Bearer {secret}")


def test_a_key_deleted_elsewhere_fails_within_the_authorizers_window(
    setup: tuple[KeyService, CountingAccountStore, Ticks, str],
) -> None:
    # Given a key this process trusts
    keys, store, ticks, secret = setup
    principal = keys.authenticate(f"Bearer {secret}")

    # When another process deletes it and the authorizer's window (300 s) passes
    store.delete_key("acct_1", principal.key_id)
    ticks.now += 300

    # Then it is refused
    assert KEY_CACHE_SECONDS <= 300
    with pytest.raises(UnauthorizedError):
        keys.authenticate(f"Bearer {secret}")


def test_an_unknown_key_is_asked_each_time_and_a_process_without_a_cache_always_asks() -> None:
    # Given a caching process and one that does not cache (the embedded backend, the authorizer's function)
    store = CountingAccountStore()
    caching, plain = KeyService(store, cache_seconds=KEY_CACHE_SECONDS), KeyService(store)
    secret = plain._issue("acct_1", "account", None, "am_secret_of_acct_1")

    # When an unknown key calls twice on the first, and a valid key twice on the second
    for _ in range(2):
        with pytest.raises(UnauthorizedError):
            caching.authenticate("Bearer am_not_a_key")
    for _ in range(2):
        plain.authenticate(f"Bearer {secret}")

    # Then every call asked the store: a key made elsewhere a moment later works at once
    assert store.lookups == 4
