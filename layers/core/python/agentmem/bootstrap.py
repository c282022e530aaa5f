"""The composition root: builds the services for the configured backend.

Nothing else chooses adapters. The AWS backend plugs in here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from .domain.clock import Clock, iso, utcnow
from .ports.accounts import AccountStore
from .ports.entries import EntryStore
from .ports.memories import MemoryStore
from .ports.usage import UsageStore
from .services.entries import EntryService
from .services.keys import DEFAULT_ACCOUNT, KeyService
from .services.memories import MemoryService
from .services.usage import UsageMeter
from .settings import Settings, load_settings


@dataclass
class Stores:
    accounts: AccountStore
    memories: MemoryStore
    entries: EntryStore
    usage: UsageStore
    maintenance: list[object] = field(default_factory=list)


@dataclass
class Container:
    settings: Settings
    stores: Stores
    keys: KeyService
    memories: MemoryService
    entries: EntryService
    usage: UsageMeter

    def sweep(self) -> dict[str, int]:
        """Housekeeping the embedded backend does itself (AWS has TTL): trash and expiry."""
        purged = self.memories.purge_due()
        expired = 0
        now = iso(self.memories.clock())
        for store in self.stores.maintenance:
            purge = getattr(store, "purge_expired", None)
            if purge is not None:
                expired += int(purge(now))
        self.usage.flush()
        return {"memories_purged": purged, "entries_expired": expired}


def build_stores(settings: Settings) -> Stores:
    if settings.backend == "embedded":
        if os.environ.get("AWS_LAMBDA_FUNCTION_NAME"):
            raise RuntimeError("the embedded backend does not run inside Lambda; set AGENTMEM_BACKEND=aws")
        from .adapters.embedded.accounts import SqliteAccountStore
        from .adapters.embedded.database import Database
        from .adapters.embedded.entries import SqliteEntryStore
        from .adapters.embedded.memories import SqliteMemoryStore
        from .adapters.embedded.usage import SqliteUsageStore

        db = Database(settings.data_dir / "agentmem.db")
        db.setup()
        entries = SqliteEntryStore(db)
        return Stores(
            accounts=SqliteAccountStore(db),
            memories=SqliteMemoryStore(db),
            entries=entries,
            usage=SqliteUsageStore(db),
            maintenance=[entries],
        )
    raise RuntimeError(f"backend {settings.backend!r} is not available in this build")


def build_container(settings: Settings | None = None, *, clock: Clock = utcnow) -> Container:
    settings = settings or load_settings()
    stores = build_stores(settings)
    memories = MemoryService(stores.memories, clock)
    return Container(
        settings=settings,
        stores=stores,
        keys=KeyService(stores.accounts, clock),
        memories=memories,
        entries=EntryService(stores.entries, memories, clock),
        usage=UsageMeter(stores.usage, clock),
    )


_container: Container | None = None


def get_container() -> Container:
    """The process's container, built on first use (a Lambda's cold start, or the local server)."""
    global _container
    if _container is None:
        _container = build_container()
    return _container


def set_container(container: Container | None) -> None:
    global _container
    _container = container


def create_account(settings: Settings, name: str) -> tuple[str, str]:
    """Operator command: create an account directly in the backend; returns (account id, first key)."""
    container = build_container(settings)
    account, secret = container.keys.create_account(name)
    return account.account_id, secret


def ensure_default_account(container: Container) -> str | None:
    """On a new data dir: the ``default`` account and its key (``AGENTMEM_API_KEY`` if set)."""
    _, secret = container.keys.ensure_account(DEFAULT_ACCOUNT, container.settings.api_key)
    return secret
