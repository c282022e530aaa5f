"""What the API returns, as frozen dataclasses.

Each model is built with ``from_dict``, which ignores fields it does not know, so
an SDK keeps working against a newer server that answers more. Times are the
server's UTC ISO-8601 strings, unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import Any, Generic, NamedTuple, TypeVar

T = TypeVar("T")


_FIELD_NAMES: dict[type[Any], frozenset[str]] = {}  # each model's, read once (every answer parsed asks)


def _known(cls: type[Any], data: Mapping[str, Any]) -> dict[str, Any]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = frozenset(f.name for f in fields(cls))
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


class Found(list[T]):
    """A search's hits, best first: a list, and how the search was answered. ``mode`` is the mode that answered
    (``keyword`` when a hybrid search's semantic side could not), ``fallback`` why it answered with less (``None``:
    it did not), ``stages`` what ran, in order, and ``index_lag`` how many entries or messages of the search's
    scope the semantic index has not caught up with yet (0: none; ``None`` in keyword mode or where the backend
    cannot tell): after a large import, hits by meaning may be missing until it is 0."""

    mode: str | None = None
    fallback: str | None = None
    stages: tuple[str, ...] = ()
    index_lag: int | None = None

    @classmethod
    def of(cls, items: list[T], data: Mapping[str, Any]) -> Found[T]:
        """``items`` with what the answer ``data`` says of how it was found."""
        found: Found[T] = cls(items)
        mode, fallback, lag = data.get("mode"), data.get("fallback"), data.get("index_lag")
        found.mode = mode if isinstance(mode, str) else None
        found.fallback = fallback if isinstance(fallback, str) else None
        found.stages = tuple(str(stage) for stage in data.get("stages") or () if isinstance(stage, str))
        found.index_lag = lag if isinstance(lag, int) and not isinstance(lag, bool) else None
        return found


# --- conversations (SPEC §4, §5) -----------------------------------------------------------------


@dataclass(frozen=True)
class Message:
    """One row of a conversation's journal: a ``user`` or ``assistant`` message, a ``tool_call`` or
    a ``tool_result``.

    Make one to append with ``Message.user("…")``, ``Message.assistant("…")``,
    ``Message.tool_call(name, id, arguments)`` or ``Message.tool_result(id, result)``; a message read
    back from the journal also carries what the service set: ``seq`` (its place, from 1, no gaps),
    ``turn`` (a user message opens the next turn), ``created_at`` and ``tokens``. ``client_id`` makes
    an append idempotent: the SDK gives each message one when it has none. ``created_at`` on a message to
    append is its original time (an ISO 8601 string or an aware ``datetime``, not in the future): imported
    history keeps its dates; left out, the time of the append.
    """

    role: str
    content: str = ""
    tool_name: str | None = None
    tool_call_id: str | None = None
    arguments: dict[str, Any] | None = field(default=None, hash=False)
    result: Any = field(default=None, hash=False)
    client_id: str | None = None
    seq: int | None = None
    turn: int | None = None
    created_at: str | None = None
    tokens: int | None = None

    @classmethod
    def user(cls, content: str, *, client_id: str | None = None, created_at: str | datetime | None = None) -> Message:
        """What the user said (``created_at``: when, if not now)."""
        return cls("user", content, client_id=client_id, created_at=time_text(created_at))

    @classmethod
    def assistant(
        cls, content: str, *, client_id: str | None = None, created_at: str | datetime | None = None
    ) -> Message:
        """What the agent answered (``created_at``: when, if not now)."""
        return cls("assistant", content, client_id=client_id, created_at=time_text(created_at))

    @classmethod
    def tool_call(
        cls, name: str, id: str, arguments: Mapping[str, Any] | None = None, *, content: str = "",
        client_id: str | None = None,
    ) -> Message:
        """The agent calling the tool ``name``; ``id`` pairs the call with its result."""
        return cls("tool_call", content, tool_name=name, tool_call_id=id, arguments=dict(arguments or {}),
                   client_id=client_id)

    @classmethod
    def tool_result(
        cls, id: str, result: Any, name: str | None = None, *, content: str = "", client_id: str | None = None
    ) -> Message:
        """What the tool call ``id`` returned (``result``: any JSON value)."""
        return cls("tool_result", content, tool_name=name, tool_call_id=id, result=result, client_id=client_id)

    @classmethod
    def from_openai(cls, message: Mapping[str, Any]) -> list[Message]:
        """The rows of one OpenAI Chat Completions message (as sent, or a response's message as a dict): its
        text, each of its ``tool_calls``, or a ``tool`` message's result. A system message gives none."""
        return _from_model(message, "openai")

    @classmethod
    def from_anthropic(cls, message: Mapping[str, Any]) -> list[Message]:
        """The rows of one Anthropic Messages API message: each text block, ``tool_use`` and ``tool_result``."""
        return _from_model(message, "anthropic")

    @classmethod
    def from_bedrock(cls, message: Mapping[str, Any]) -> list[Message]:
        """The rows of one Bedrock Converse message: each ``text``, ``toolUse`` and ``toolResult`` block."""
        return _from_model(message, "bedrock")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Message:
        values = _known(cls, data)
        if isinstance(values.get("arguments"), Mapping):
            values["arguments"] = dict(values["arguments"])
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        """The message as an append sends it: its role and content, and the fields it has."""
        body: dict[str, Any] = {"role": self.role, "content": self.content}
        optional = {"tool_name": self.tool_name, "tool_call_id": self.tool_call_id, "arguments": self.arguments,
                    "result": self.result, "client_id": self.client_id, "created_at": self.created_at}
        body.update({key: value for key, value in optional.items() if value is not None})
        return body


def time_text(value: str | datetime | None) -> str | None:
    """A time as the service takes it: ISO 8601 text (a naive ``datetime`` is UTC)."""
    if isinstance(value, datetime):
        return (value if value.tzinfo is not None else value.replace(tzinfo=UTC)).isoformat()
    return value


def _from_model(message: Mapping[str, Any], fmt: Any) -> list[Message]:
    from .transcripts import from_model

    return from_model(message, fmt)


@dataclass(frozen=True)
class Skipped:
    """What an append in a model API's shape did not keep of the message at ``index``, and why."""

    index: int
    reason: str


@dataclass(frozen=True)
class ImportReport:
    """What an import did: ``messages`` read from the transcript, the journal ``rows`` they make, how many
    were ``added`` and how many were ``already_there`` (the same ``client_id``), what was ``skipped`` (each
    reason names its line), and the seqs the transcript's rows hold in the journal."""

    messages: int = 0
    rows: int = 0
    added: int = 0
    already_there: int = 0
    skipped: list[str] = field(default_factory=list, hash=False)
    first_seq: int | None = None
    last_seq: int | None = None


@dataclass(frozen=True)
class ConversationInfo:
    """A conversation as the API describes it.

    ``messages`` is the seq of its newest message (the journal's length) and ``turns`` its number of
    turns. The checkpoint summarises the messages up to ``covers_through_seq``; a deleted checkpoint
    took those up to ``forgotten_through_seq`` with it. ``unfolded_tokens`` / ``unfolded_messages``
    count what is not summarised yet (the summary threshold), ``summary_due`` says it is over it.
    ``window_messages`` is the conversation's own window (``None``: the agent's or the platform's).
    """

    key: str
    agent: str | None = None
    user_id: str | None = None
    surface: str | None = None
    messages: int = 0
    turns: int = 0
    covers_through_seq: int = 0
    forgotten_through_seq: int = 0
    unfolded_tokens: int = 0
    unfolded_messages: int = 0
    window_messages: int | None = None
    summary_due: bool = False
    created_at: str | None = None
    updated_at: str | None = None
    deleted_at: str | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ConversationInfo:
        return cls(**_known(cls, data))


@dataclass(frozen=True)
class AppendResult:
    """What an append stored: one message per message sent, in order, with its ``seq``; ``added``
    says how many were new (a message whose ``client_id`` was already stored comes back as stored)."""

    messages: list[Message] = field(default_factory=list, hash=False)
    added: int = 0
    conversation: ConversationInfo | None = None
    skipped: list[Skipped] = field(default_factory=list, hash=False)  # an append in a model API's shape

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AppendResult:
        record = data.get("conversation")
        return cls(
            [Message.from_dict(item) for item in data.get("items") or [] if isinstance(item, Mapping)],
            int(data.get("added") or 0),
            ConversationInfo.from_dict(record) if isinstance(record, Mapping) else None,
            [Skipped(int(item.get("index") or 0), str(item.get("reason") or ""))
             for item in data.get("skipped") or [] if isinstance(item, Mapping)],
        )

    @property
    def seqs(self) -> list[int]:
        """The seq of each message, in the order sent."""
        return [message.seq for message in self.messages if message.seq is not None]


@dataclass(frozen=True)
class PinnedBlock:
    """Part 1 of a context: the pinned entries (by name) rendered as one inert data block."""

    text: str = ""
    tokens: int = 0
    entries: list[str] = field(default_factory=list, hash=False)


@dataclass(frozen=True)
class MemoryIndex:
    """Part 2 of a context: the name and description of each entry the agent can read; ``more``
    entries did not fit (the text says to search for them)."""

    text: str = ""
    tokens: int = 0
    shown: int = 0
    more: int = 0


@dataclass(frozen=True)
class ContextSummary:
    """Part 3 of a context: the checkpoint's text, standing for the messages up to
    ``covers_through_seq``."""

    text: str = ""
    tokens: int = 0
    covers_through_seq: int = 0


@dataclass(frozen=True)
class ContextWindow:
    """Part 4 of a context: the recent window, at most ``cap`` rows, starting at a user message."""

    messages: list[Message] = field(default_factory=list, hash=False)
    tokens: int = 0
    cap: int = 20

    @property
    def seqs(self) -> list[int]:
        return [message.seq for message in self.messages if message.seq is not None]


@dataclass(frozen=True)
class Context:
    """What the model sees next turn (SPEC §5), part by part, and ``messages``: the whole of it
    assembled in order (system messages for the pinned block, the index and the summary, then the
    window's rows). ``tokens`` adds up the parts.

    Asked with ``format=`` (``bedrock``, ``anthropic``, ``openai``), ``messages`` is in that API's own
    shape, ready to send as it is, and for Bedrock and Anthropic ``system`` holds the system blocks."""

    conversation: str
    agent: str | None = None
    user_id: str | None = None
    surface: str | None = None
    pinned: PinnedBlock = field(default_factory=PinnedBlock)
    memory_index: MemoryIndex = field(default_factory=MemoryIndex)
    summary: ContextSummary | None = None
    window: ContextWindow = field(default_factory=ContextWindow)
    messages: list[dict[str, Any]] = field(default_factory=list, hash=False)
    tokens: int = 0
    format: str | None = None
    system: list[dict[str, Any]] | None = field(default=None, hash=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Context:
        pinned = data.get("pinned") or {}
        index = data.get("memory_index") or {}
        summary = data.get("summary")
        window = data.get("window") or {}
        return cls(
            conversation=str(data.get("conversation", "")),
            agent=data.get("agent"),
            user_id=data.get("user_id"),
            surface=data.get("surface"),
            pinned=PinnedBlock(str(pinned.get("text") or ""), int(pinned.get("tokens") or 0),
                               [str(name) for name in pinned.get("entries") or []]),
            memory_index=MemoryIndex(str(index.get("text") or ""), int(index.get("tokens") or 0),
                                     int(index.get("shown") or 0), int(index.get("more") or 0)),
            summary=ContextSummary(str(summary.get("text") or ""), int(summary.get("tokens") or 0),
                                   int(summary.get("covers_through_seq") or 0))
            if isinstance(summary, Mapping) else None,
            window=ContextWindow(
                [Message.from_dict(item) for item in window.get("messages") or [] if isinstance(item, Mapping)],
                int(window.get("tokens") or 0), int(window.get("cap") or 20),
            ),
            messages=[dict(item) for item in data.get("messages") or [] if isinstance(item, Mapping)],
            tokens=int(data.get("tokens") or 0),
            format=data.get("format"),
            system=[dict(item) for item in data["system"] if isinstance(item, Mapping)]
            if isinstance(data.get("system"), list) else None,
        )


@dataclass(frozen=True)
class ToolCall:
    """An earlier tool call, whole: its ``arguments`` and its ``result`` (and the result's text),
    with the seq of each row; either side is ``None`` when the journal does not hold it."""

    tool_call_id: str
    conversation: str | None = None
    tool_name: str | None = None
    arguments: dict[str, Any] | None = field(default=None, hash=False)
    call_seq: int | None = None
    result: Any = field(default=None, hash=False)
    result_content: str | None = None
    result_seq: int | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolCall:
        return cls(**_known(cls, data))


@dataclass(frozen=True)
class MessageHit:
    """A journal search hit: the message ``seq`` of ``conversation``, with a ``snippet`` (a long message's
    passage that matched, a short one's text around the words found), where it is in the message's text
    (``snippet_start``, ``snippet_end``: character offsets) and a ``score``."""

    conversation: str
    seq: int
    role: str | None = None
    snippet: str = ""
    score: float = 0.0
    created_at: str | None = None
    snippet_start: int = 0
    snippet_end: int = 0

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MessageHit:
        return cls(**_known(cls, data))


@dataclass(frozen=True)
class Checkpoint(Entry):
    """A conversation's checkpoint: the entry ``context.<hash>`` holding its rolling summary, which
    stands for the journal's messages up to ``covers_through_seq``. ``passes`` lists the newest summary
    passes that wrote it (``version``, ``at``, ``by``, ``summariser``), newest first, and ``passes_total``
    counts them all; ``lines_by_hand`` is how many of its lines a person wrote (every pass keeps them)."""

    covers_through_seq: int = 0
    passes: list[dict[str, Any]] = field(default_factory=list, hash=False)
    passes_total: int = 0
    lines_by_hand: int = 0

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Checkpoint:
        return cls(**_known(cls, data))


@dataclass(frozen=True)
class ConversationReceipt:
    """What deleting a conversation removed, by kind. Without ``purged`` only the conversation's
    record went: its journal and checkpoint stay."""

    conversation: str
    purged: bool = False
    removed: dict[str, int] = field(default_factory=dict, hash=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ConversationReceipt:
        return cls(str(data.get("conversation", "")), bool(data.get("purged")), _counts(data.get("removed")))


@dataclass(frozen=True)
class ErasureReceipt:
    """What erasing a user removed, counted by kind (``conversations``, ``messages``, ``entries``...)."""

    user: str
    removed: dict[str, int] = field(default_factory=dict, hash=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ErasureReceipt:
        return cls(str(data.get("user", "")), _counts(data.get("removed")))


def _counts(removed: Any) -> dict[str, int]:
    return {str(k): int(v) for k, v in removed.items()} if isinstance(removed, Mapping) else {}


# --- workspaces (SPEC §8) ------------------------------------------------------------------------


@dataclass(frozen=True)
class WorkspaceFile:
    """One file of a conversation's workspace: its ``path`` (relative, ``/``-separated), ``size_bytes``,
    ``modified_at`` and ``url``, a download link that works without a key until it expires (``None``
    where the answer carried none)."""

    path: str
    size_bytes: int = 0
    modified_at: str | None = None
    url: str | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WorkspaceFile:
        values = _known(cls, data)
        values["size_bytes"] = int(values.get("size_bytes") or 0)
        return cls(**values)


@dataclass(frozen=True)
class UploadLink:
    """Where to upload one workspace file straight to storage, without a key: an HTTP PUT of exactly
    the announced number of bytes to ``url``, sending ``headers``, before ``expires_at``."""

    url: str
    headers: dict[str, str] = field(default_factory=dict, hash=False)
    expires_at: str | None = None
    path: str | None = None
    method: str = "PUT"
    expires_in_s: int | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> UploadLink:
        values = _known(cls, data)
        headers = values.get("headers")
        values["headers"] = {str(k): str(v) for k, v in headers.items()} if isinstance(headers, Mapping) else {}
        return cls(**values)
