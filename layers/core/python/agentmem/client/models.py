"""What the API returns, as frozen dataclasses.

Each model is built with ``from_dict``, which ignores fields it does not know, so
an SDK keeps working against a newer server that answers more. Times are the
server's UTC ISO-8601 strings, unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Generic, NamedTuple, TypeVar

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


class MemoryAttachment(NamedTuple):
    """A memory an agent reads besides its own, by name; it writes it only when ``writable``.

    ``Memory.writable()`` makes one; a plain ``Memory`` or a memory's name in ``memories=``
    attaches it read-only. It unpacks as ``(name, writable)``.
    """

    name: str
    writable: bool = False

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MemoryAttachment:
        return cls(str(data.get("name", "")), bool(data.get("writable", False)))


@dataclass(frozen=True)
class AgentInfo:
    """An agent as the API describes it. ``deleted_at`` is set while it is in the trash.

    ``user_id`` is its owner (``None``: an account agent, shared by every user);
    ``own_memory`` the name of its own memory (``agent:{name}``); ``memories`` the memories
    it attaches, in order; ``capabilities`` e.g. ``{"memory": True}``; ``context`` the summary
    thresholds (``summary_tokens``, ``summary_messages``); ``version`` goes up by one on every
    change of its settings (``agent.update(..., version=N)``).
    """

    name: str
    user_id: str | None = None
    own_memory: str | None = None
    instructions: str = ""
    memories: tuple[MemoryAttachment, ...] = ()
    capabilities: dict[str, Any] = field(default_factory=dict, hash=False)
    window_messages: int | None = None
    context: dict[str, Any] = field(default_factory=dict, hash=False)
    user_conversations_write_shared: bool = False
    anonymous_private_writes: str = "refuse"
    version: int = 0
    created_at: str | None = None
    updated_at: str | None = None
    deleted_at: str | None = None
    purge_after: str | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AgentInfo:
        values = _known(cls, data)
        values["memories"] = tuple(
            MemoryAttachment.from_dict(item) for item in values.get("memories") or () if isinstance(item, Mapping)
        )
        values["capabilities"] = dict(values.get("capabilities") or {})
        values["context"] = dict(values.get("context") or {})
        if values.get("instructions") is None:
            values.pop("instructions", None)
        return cls(**values)

    @property
    def memory_capability(self) -> bool:
        """Whether the agent may write entries at all (``capabilities.memory``, default true)."""
        return bool(self.capabilities.get("memory", True))


@dataclass(frozen=True)
class PurgeReceipt:
    """What ``agent.purge()`` removed for good, counted by kind (``entries``, ``conversations``...)."""

    agent: str
    removed: dict[str, int] = field(default_factory=dict, hash=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PurgeReceipt:
        removed = data.get("removed") or {}
        counts = {str(k): int(v) for k, v in removed.items()} if isinstance(removed, Mapping) else {}
        return cls(str(data.get("agent", "")), counts)


@dataclass(frozen=True)
class ToolResult:
    """The answer to one tool call: the tool's name, the memory operation it ran
    (``search``, ``read``, ``save``, ``delete``...), its structured ``result`` and the
    ``text`` to hand back to the model as the tool's output."""

    tool: str
    operation: str
    result: dict[str, Any] = field(default_factory=dict, hash=False)
    text: str = ""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolResult:
        result = data.get("result")
        return cls(
            str(data.get("tool", "")),
            str(data.get("operation", "")),
            dict(result) if isinstance(result, Mapping) else {},
            str(data.get("text") or ""),
        )

    @property
    def entry(self) -> Entry | None:
        """The entry a ``read`` or ``save`` returned (``None`` for other operations)."""
        entry = self.result.get("entry")
        return Entry.from_dict(entry) if isinstance(entry, Mapping) else None

    @property
    def entries(self) -> list[Entry]:
        """The hits of a ``search`` (empty for other operations)."""
        items = self.result.get("items") or []
        return [Entry.from_dict(item) for item in items if isinstance(item, Mapping)]


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a list; iterate it for its items. ``next_cursor`` is ``None`` on the last page."""

    items: list[T] = field(default_factory=list)
    next_cursor: str | None = None

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)
