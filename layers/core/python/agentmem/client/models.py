"""What the API returns, as frozen dataclasses.

Each model is built with ``from_dict``, which ignores fields it does not know, so
an SDK keeps working against a newer server that answers more. Times are the
server's UTC ISO-8601 strings, unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Generic, TypeVar

T = TypeVar("T")


def _known(cls: type[Any], data: Mapping[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    return {key: value for key, value in data.items() if key in names}


@dataclass(frozen=True)
class Entry:
    """One note of a memory. ``content`` is ``None`` where the API leaves it out (lists, saves).

    ``memory``, ``user_id`` and ``score`` are set on search results; ``forced`` says why a
    save was stored elsewhere than asked (``sensitive_content``).
    """

    name: str
    description: str | None = None
    content: str | None = None
    category: str | None = None
    importance: float | None = None
    visibility: str | None = None
    expires_at: str | None = None
    version: int = 0
    updated_by: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    conversation: str | None = None
    memory: str | None = None
    user_id: str | None = None
    forced: str | None = None
    score: float | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Entry:
        return cls(**_known(cls, data))


@dataclass(frozen=True)
class HistoryItem:
    """One change of an entry: ``operation`` is ``create``, ``update`` or ``delete``."""

    version: int
    content_hash: str | None = None
    updated_by: str | None = None
    changed_at: str | None = None
    operation: str | None = None
    description: str | None = None
    content: str | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HistoryItem:
        return cls(**_known(cls, data))


@dataclass(frozen=True)
class MemoryInfo:
    """A memory as the API describes it. ``deleted_at`` is set while it is in the trash."""

    name: str
    user_id: str | None = None
    entry_count: int = 0
    attached_to: tuple[str, ...] = ()
    created_at: str | None = None
    deleted_at: str | None = None
    purge_after: str | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MemoryInfo:
        values = _known(cls, data)
        values["attached_to"] = tuple(values.get("attached_to") or ())
        return cls(**values)


@dataclass(frozen=True)
class ApiKey:
    """An API key. ``secret`` is only ever set in the answer that created it."""

    id: str
    kind: str | None = None
    user: str | None = None
    created_at: str | None = None
    last4: str | None = None
    secret: str | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ApiKey:
        return cls(**_known(cls, data))


@dataclass(frozen=True)
class UsageRecord:
    """How many times one operation ran on one day, and whether it is billed."""

    operation: str
    count: int = 0
    billable: bool = True
    day: str | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> UsageRecord:
        return cls(**_known(cls, data))


@dataclass(frozen=True)
class Health:
    """What ``GET /v1/health`` answers."""

    status: str
    version: str | None = None
    backend: str | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Health:
        return cls(**_known(cls, data))


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a list; iterate it for its items. ``next_cursor`` is ``None`` on the last page."""

    items: list[T] = field(default_factory=list)
    next_cursor: str | None = None

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)
