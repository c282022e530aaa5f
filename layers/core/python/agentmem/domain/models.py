"""The records agentmem keeps, as plain frozen dataclasses."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Visibility = Literal["private", "shared", "read_only"]
UpdatedBy = Literal["agent", "api", "console", "system"]
KeyKind = Literal["account", "user"]
Operation = Literal["create", "update", "delete"]

ACCOUNT_LAYER = ""  # how the account layer is stored where a user id would go


@dataclass(frozen=True)
class Principal:
    """Who a request acts for: an account, and with a user key one of its users."""

    account_id: str
    key_id: str
    kind: KeyKind
    user_id: str | None = None


@dataclass(frozen=True)
class Account:
    account_id: str
    name: str
    created_at: str


@dataclass(frozen=True)
class ApiKey:
    key_id: str
    account_id: str
    kind: KeyKind
    user_id: str | None
    secret_hash: str
    last4: str
    created_at: str


@dataclass(frozen=True)
class Layer:
    """One partition of one memory: the account layer (``user_id`` None) or a user's."""

    account_id: str
    memory: str
    user_id: str | None = None

    @property
    def user_key(self) -> str:
        return self.user_id if self.user_id is not None else ACCOUNT_LAYER


@dataclass(frozen=True)
class MemoryRecord:
    account_id: str
    name: str
    user_id: str | None  # owner: None = the account's memory
    created_at: str
    deleted_at: str | None = None
    purge_after: str | None = None
    entry_count: int = 0
    attached_to: tuple[str, ...] = ()


@dataclass(frozen=True)
class Entry:
    """One stored entry. ``content`` is None where a listing leaves it out."""

    name: str
    description: str
    content: str | None
    category: str
    importance: float
    visibility: Visibility
    version: int
    updated_by: UpdatedBy
    created_at: str
    updated_at: str
    expires_at: str | None = None
    conversation: str | None = None
    content_hash: str = ""
    memory: str = ""
    user_id: str | None = None


@dataclass(frozen=True)
class HistoryItem:
    name: str
    version: int
    operation: Operation
    content_hash: str
    updated_by: UpdatedBy
    changed_at: str
    description: str
    content: str
    keep_until: str
    category: str = "note"
    importance: float = 0.5
    visibility: Visibility = "shared"
    created_at: str | None = None
    expires_at: str | None = None


@dataclass(frozen=True)
class EntryDraft:
    """What a save asks for, after validation; the store fills in version and times."""

    name: str
    content: str
    description: str | None = None  # None: keep the current one (required when new)
    category: str | None = None
    importance: float | None = None
    visibility: Visibility = "shared"
    expires_at: str | None = None
    conversation: str | None = None
    updated_by: UpdatedBy = "api"
    clear_expiry: bool = False  # with expires_at None: remove the expiry (None alone keeps it)
    keep_read_only: bool = False  # the save did not say: a read_only entry stays read_only (the store decides)

    def visibility_over(self, stored: str | None) -> Visibility:
        """The visibility the save stores over the live entry's (``stored``; None when it creates one): a save
        that does not say keeps a read_only entry read_only, as it keeps category and importance. The store
        applies it to the item it writes over, so the rule costs no read of its own."""
        return "read_only" if self.keep_read_only and stored == "read_only" else self.visibility


@dataclass(frozen=True)
class SaveResult:
    entry: Entry
    created: bool
    forced: str | None = None


@dataclass(frozen=True)
class Page:
    items: list[Entry] = field(default_factory=list)
    next_cursor: str | None = None


@dataclass(frozen=True)
class UsageCount:
    day: str
    operation: str
    billable: bool
    count: int
