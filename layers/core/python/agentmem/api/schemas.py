"""Request bodies. Unknown fields and wrong types are refused (400) before any service runs."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..domain.rules import CATEGORY_PATTERN, NAME_MAX, NAME_PATTERN, USER_ID_PATTERN

# the rules of domain/rules.py as JSON Schema, for the document: the handlers apply them (with their own 400s
# naming the field), the schema tells a client and a fuzzer what reaches them
_NAME = {"type": "string", "pattern": f"^{NAME_PATTERN.pattern}$", "minLength": 1, "maxLength": NAME_MAX}
_USER_ID = {"type": "string", "pattern": f"^{USER_ID_PATTERN.pattern}$", "minLength": 1, "maxLength": 128}
PATH_PARAMETER_RULES: dict[str, dict[str, Any]] = {
    "name": _NAME, "agent": _NAME,
    "memory": {"type": "string", "pattern": f"^(agent:)?{NAME_PATTERN.pattern}$", "minLength": 1,
               "maxLength": len("agent:") + NAME_MAX},
    "key": _USER_ID, "user_id": _USER_ID,
}
# the query parameters that name a user or a conversation follow the same rules (an empty `user=` is a 400)
QUERY_PARAMETER_RULES: dict[str, dict[str, Any]] = {"user": _USER_ID, "conversation": _USER_ID}


class StrictBody(BaseModel):
    # defer_build: a body's validator is built when its route first needs it, not for every route at import
    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)


class SaveEntryBody(StrictBody):
    """Save an entry (SPEC §2.1). The layer comes from `user=`; `visibility` must agree with it."""

    content: str = Field(
        description="Markdown, 1–20,000 characters", json_schema_extra={"minLength": 1, "maxLength": 20_000}
    )
    description: str | None = Field(
        default=None, description="One line, at most 200 characters; required when the entry is new",
        json_schema_extra={"maxLength": 200},
    )
    category: str | None = Field(
        default=None, description="[a-z0-9_]{1,32}; default `note`",
        json_schema_extra={"pattern": f"^{CATEGORY_PATTERN.pattern}$"},
    )
    importance: float | None = Field(
        default=None, description="0.0–1.0; default 0.5", json_schema_extra={"minimum": 0, "maximum": 1}
    )
    visibility: Literal["private", "shared", "read_only"] | None = None
    expires_at: Annotated[str, Field(json_schema_extra={"format": "date-time"})] | None = Field(
        default=None,
        description="An RFC 3339 date-time in the future after which the entry is gone (`2027-01-31T12:00:00Z`; "
                    "without an offset it is UTC); left out keeps the current one, null removes it",
    )
    version: int | None = Field(
        default=None, description="Land only if the stored version is this (0 = must not exist)",
        json_schema_extra={"minimum": 0},
    )


class CreateKeyBody(StrictBody):
    user: str | None = Field(default=None, description="A user id for a user key; absent for an account key")


class EmptyBody(StrictBody):
    """No fields are accepted."""


class AttachmentBody(StrictBody):
    name: str = Field(description="A memory's name (or `agent:{name}`, another agent's own memory)")
    writable: bool = Field(default=False, description="Let the agent write it; read-only otherwise")


class CapabilitiesBody(StrictBody):
    memory: bool | None = Field(
        default=None, description="Off: no agent path creates or changes an entry (pinned entries are still read)"
    )


class ContextBody(StrictBody):
    summary_tokens: int | None = Field(
        default=None, description="Start a summary pass when the un-folded part holds more tokens (default 32,000)"
    )
    summary_messages: int | None = Field(
        default=None, description="... or more messages than this (default 40)"
    )


class AgentBody(StrictBody):
    """Create or change an agent (SPEC §3.2). Fields left out keep their value (their default on create)."""

    instructions: str | None = Field(default=None, description="What the agent is for, at most 20,000 characters")
    memories: list[AttachmentBody] | None = Field(
        default=None, description="Memories it reads besides its own, in the order a read looks (at most 10)"
    )
    capabilities: CapabilitiesBody | None = None
    window_messages: int | None = Field(
        default=None, description="Rows of the recent window, 1–20 (it can only lower the platform's 20); null resets"
    )
    context: ContextBody | None = None
    user_conversations_write_shared: bool | None = Field(
        default=None, description="In a user's conversation, a save asking for `shared` writes the account layer"
    )
    anonymous_private_writes: Literal["refuse", "shared"] | None = Field(
        default=None, description="On anonymous MCP, store a private write shared (`shared`) or refuse it (422)"
    )


class ToolCallBody(StrictBody):
    """Run an agent tool (SPEC §9): its arguments, and where the call happens."""

    arguments: dict[str, Any] = Field(
        default_factory=dict, description="The tool's arguments, as its JSON Schema in GET .../tools describes them"
    )
    conversation: str | None = Field(
        default=None, min_length=1, max_length=128, pattern=r"^[A-Za-z0-9._:@-]+$",
        description="The conversation's key (1–128 of letters, digits and . _ : @ -), when there is one",
    )
    surface: Literal["agent", "mcp", "external", "test", "browser"] = Field(
        default="agent", description="Where the conversation happens (SPEC §7); decides what may be written"
    )


class MessageBody(StrictBody):
    """One journal row (SPEC §4.1)."""

    role: Literal["user", "assistant", "tool_call", "tool_result"]
    content: str = Field(default="", description="The text; required for user and assistant messages")
    tool_name: str | None = Field(default=None, description="The tool a tool_call calls (or a tool_result answers)")
    tool_call_id: str | None = Field(default=None, description="Pairs a tool_call with its tool_result")
    arguments: dict[str, Any] | None = Field(default=None, description="A tool_call's arguments")
    result: Any = Field(default=None, description="A tool_result's result (any JSON)")
    client_id: str | None = Field(default=None, description="Makes a retried append idempotent")
    created_at: Annotated[str, Field(json_schema_extra={"format": "date-time"})] | None = Field(
        default=None,
        description="When it was written, ISO 8601 (`2026-03-01T09:30:00Z`; without an offset it is UTC), from "
                    "1900 on and not in the future (5 minutes of clock skew are taken as now); absent, the time "
                    "of the append. Messages of one append need not be in time order",
    )


class AppendBody(StrictBody):
    messages: list[MessageBody] = Field(description="1–40 messages, in order")
    surface: Literal["agent", "mcp", "external", "test", "browser"] | None = Field(
        default=None, description="Where the conversation happens (SPEC §7); default agent"
    )
    window_messages: int | None = Field(
        default=None, description="This conversation's recent window, 1–20 (it can only lower the default)"
    )


class ModelAppendBody(StrictBody):
    """An append in a model API's own shape (``format=bedrock|anthropic|openai``): the messages as the loop sent
    them to the API or got them back, each possibly with a ``client_id`` beside the API's own keys."""

    messages: list[dict[str, Any]] = Field(
        description="Messages in the API's shape; together at most 40 journal rows (a text, a tool call or a "
                    "tool result is one row each)"
    )
    surface: Literal["agent", "mcp", "external", "test", "browser"] | None = Field(
        default=None, description="Where the conversation happens (SPEC §7); default agent"
    )
    window_messages: int | None = Field(
        default=None, description="This conversation's recent window, 1–20 (it can only lower the default)"
    )


class WorkspaceLinkBody(StrictBody):
    """A link to one workspace file that needs no key (SPEC §8)."""

    path: str = Field(description="The file's path in the workspace, like `reports/q3.csv`")
    expires_in_s: int | None = Field(default=None, description="Seconds the link works: 1–86,400; default 3,600")
    method: str | None = Field(default=None, description="`GET` (a download link, the default) or `PUT` (an upload)")
    size_bytes: int | None = Field(
        default=None, description="For `PUT`: the exact size of the file to upload, at most 104,857,600 (100 MB)"
    )
