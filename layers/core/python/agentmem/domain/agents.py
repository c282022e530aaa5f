"""Agents and what they attach: the records and the scope rules of SPEC §3.2. Pure."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .errors import ForbiddenError, InvalidError
from .models import MemoryRecord
from .rules import check_memory_name, check_name

ATTACH_LIMIT = 10
WINDOW_MESSAGES_MAX = 20
SUMMARY_TOKENS_DEFAULT = 32_000
SUMMARY_MESSAGES_DEFAULT = 40
INSTRUCTIONS_MAX = 20_000
OWN_MEMORY_PREFIX = "agent:"

AnonymousPrivateWrites = Literal["refuse", "shared"]


def own_memory_name(agent: str) -> str:
    """The name of an agent's own memory: ``agent:{name}``."""
    return f"{OWN_MEMORY_PREFIX}{agent}"


def agent_of_memory(memory: str) -> str | None:
    """The agent whose own memory this is, or None for a named memory."""
    return memory[len(OWN_MEMORY_PREFIX):] if memory.startswith(OWN_MEMORY_PREFIX) else None


@dataclass(frozen=True)
class Attachment:
    """One memory an agent reads besides its own; it writes it only when ``writable``."""

    memory: str
    writable: bool = False


@dataclass(frozen=True)
class Capabilities:
    memory: bool = True  # off: no agent path creates or changes an entry; pinned entries are still read


@dataclass(frozen=True)
class SummaryThresholds:
    """When a conversation's un-folded part starts a summary pass (SPEC §4.3)."""

    tokens: int = SUMMARY_TOKENS_DEFAULT
    messages: int = SUMMARY_MESSAGES_DEFAULT


@dataclass(frozen=True)
class AgentRecord:
    account_id: str
    name: str
    user_id: str | None  # owner: None = an account agent, shared by every user who talks to it
    created_at: str
    updated_at: str
    version: int = 1  # +1 on every change of its settings; If-Match on PUT
    instructions: str = ""
    memories: tuple[Attachment, ...] = ()
    capabilities: Capabilities = field(default_factory=Capabilities)
    window_messages: int | None = None  # None: the platform default (20)
    summary: SummaryThresholds = field(default_factory=SummaryThresholds)
    user_conversations_write_shared: bool = False
    anonymous_private_writes: AnonymousPrivateWrites = "refuse"
    deleted_at: str | None = None
    purge_after: str | None = None

    @property
    def own_memory(self) -> str:
        return own_memory_name(self.name)

    def attachment(self, memory: str) -> Attachment | None:
        return next((a for a in self.memories if a.memory == memory), None)


def check_agent_name(name: str) -> str:
    return check_name(name, field="agent")


def check_instructions(instructions: str) -> str:
    if not isinstance(instructions, str):
        raise InvalidError("instructions must be text", field="instructions")
    if len(instructions) > INSTRUCTIONS_MAX:
        raise InvalidError(
            f"instructions are {len(instructions):,} characters; at most {INSTRUCTIONS_MAX:,} are allowed",
            field="instructions",
        )
    return instructions


def check_window_messages(value: int | None) -> int | None:
    """A window can only be made smaller than the platform's 20 (SPEC §4.2)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidError("window_messages must be a whole number from 1 to 20", field="window_messages")
    if value > WINDOW_MESSAGES_MAX:
        raise InvalidError(
            f"window_messages {value} is above the platform's {WINDOW_MESSAGES_MAX}; it can only lower it",
            field="window_messages",
        )
    return value


def check_thresholds(thresholds: SummaryThresholds) -> SummaryThresholds:
    if not 1_000 <= thresholds.tokens <= 1_000_000:
        raise InvalidError("context.summary_tokens must be from 1,000 to 1,000,000", field="context.summary_tokens")
    if not 2 <= thresholds.messages <= 10_000:
        raise InvalidError("context.summary_messages must be from 2 to 10,000", field="context.summary_messages")
    return thresholds


def check_attachment_list(agent: str, attachments: tuple[Attachment, ...]) -> None:
    """What can be told of a list of attachments before looking any memory up: its length, the names,
    no repeats, not the agent's own memory."""
    if len(attachments) > ATTACH_LIMIT:
        raise InvalidError(
            f"an agent attaches at most {ATTACH_LIMIT} memories besides its own; {len(attachments)} were given",
            field="memories", limit=ATTACH_LIMIT,
        )
    seen: set[str] = set()
    for attachment in attachments:
        try:
            check_memory_name(attachment.memory)
        except InvalidError as error:
            raise InvalidError(f"memories: {error.message}", field="memories") from None
        if attachment.memory in seen:
            raise InvalidError(f"memories: {attachment.memory!r} is attached twice", field="memories")
        seen.add(attachment.memory)
        if attachment.memory == own_memory_name(agent):
            raise InvalidError(
                f"memories: {attachment.memory!r} is the agent's own memory; it always reads and writes it",
                field="memories",
            )


def check_attachments(
    agent: str, owner: str | None, attachments: tuple[Attachment, ...], found: dict[str, MemoryRecord],
    acting_user: str | None,
) -> tuple[Attachment, ...]:
    """The scope rules of SPEC §3.2 for an agent owned by ``owner`` (None: the account's).

    ``found`` holds the live memories the caller can see, by name (a name missing from it is 404 to
    the caller, decided before this). ``acting_user`` is the user the call acts for (None: the account).
    """
    check_attachment_list(agent, attachments)
    for attachment in attachments:
        memory = found[attachment.memory]
        if memory.user_id is not None and memory.user_id != owner:
            whose = "an account agent" if owner is None else f"user {owner!r}'s agent"
            raise ForbiddenError(
                f"memory {memory.name!r} belongs to user {memory.user_id!r}; {whose} never attaches another "
                "user's memory", memory=memory.name,
            )
        if attachment.writable:
            if memory.user_id is None and owner is not None:
                raise ForbiddenError(
                    f"a user's agent attaches the account's memory {memory.name!r} read-only only",
                    memory=memory.name,
                )
            if memory.user_id != acting_user:
                scope = "the account" if memory.user_id is None else f"user {memory.user_id!r}"
                raise ForbiddenError(
                    f"only a call acting for {scope} attaches {memory.name!r} writable", memory=memory.name,
                )
    return attachments


def can_see_agent(agent: AgentRecord, acting_user: str | None, is_account_key: bool) -> bool:
    """An account agent is seen by everyone in the account; a user's agent by its user and by an
    account key acting for the account."""
    if agent.user_id is None:
        return True
    if is_account_key and acting_user is None:
        return True
    return agent.user_id == acting_user
