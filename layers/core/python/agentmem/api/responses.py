"""The typed bodies of the API's 2xx answers in the OpenAPI document, as the presenters write them
(``presenters.py``, ``services/workspaces.WorkspaceFile.to_dict``), so that a generated client parses them.

The routes return plain dicts (building a pydantic model per answer would cost every request); the document
names their shape here instead, and tests/functional/test_openapi_client.py parses real answers with a client
generated from it.
"""

from __future__ import annotations

from typing import Any

_NULLABLE_STRING: dict[str, Any] = {"type": ["string", "null"]}
_TIME = {"type": "string", "format": "date-time"}
_NULLABLE_TIME = {"type": ["string", "null"], "format": "date-time"}

_ENTRY_FIELDS: dict[str, Any] = {
    "name": {"type": "string"},
    "memory": {"type": "string"},
    "user_id": {**_NULLABLE_STRING, "description": "The user whose layer holds it; null: the account layer"},
    "description": _NULLABLE_STRING,
    "category": {"type": "string"},
    "importance": {"type": "number", "minimum": 0, "maximum": 1},
    "visibility": {"type": "string", "enum": ["private", "shared", "read_only"]},
    "version": {"type": "integer", "minimum": 1},
    "updated_by": {"type": "string"},
    "created_at": _TIME,
    "updated_at": _TIME,
    "expires_at": _NULLABLE_TIME,
    "conversation": _NULLABLE_STRING,
}
_ENTRY_REQUIRED = ["name", "memory", "category", "importance", "visibility", "version", "created_at", "updated_at"]
_CONTENT_FIELDS = {"content": {"type": "string"}, "content_hash": {"type": "string"}}
_SEARCH_MODE = {"type": "string", "enum": ["hybrid", "keyword", "semantic", "deep"],
                "description": "The mode that answered (deep: hybrid, then the re-ranking stage)"}
_SEARCH_FALLBACK = {"type": "string", "enum": ["index_unavailable", "timeout", "not_configured", "rerank_unavailable",
                                               "rerank_timeout", "rerank_not_configured", "rerank_partial"],
                    "description": "Why a search answered with less than it was asked for: the semantic side's "
                                   "reason (it answered by words), or the re-ranking stage's (the fused order stands)"}


def _page(item: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": "object", "required": ["items", "next_cursor"],
        "properties": {
            "items": {"type": "array", "items": {"$ref": f"#/components/schemas/{item}"}},
            "next_cursor": {**_NULLABLE_STRING, "description": "Pass as `cursor` for the next page; null: the last"},
            **extra,
        },
    }


SCHEMAS: dict[str, dict[str, Any]] = {
    "EntrySaved": {
        "type": "object", "required": _ENTRY_REQUIRED, "description": "A saved entry, without its content",
        "properties": {**_ENTRY_FIELDS, "forced": {
            "type": "string", "description": "Where the save was forced instead of the layer asked for, and why"}},
    },
    "Entry": {
        "type": "object", "required": [*_ENTRY_REQUIRED, "content", "content_hash"],
        "properties": {**_ENTRY_FIELDS, **_CONTENT_FIELDS},
    },
    "EntryHit": {
        "type": "object", "required": [*_ENTRY_REQUIRED, "content", "score"],
        "properties": {**_ENTRY_FIELDS, **_CONTENT_FIELDS, "score": {"type": "number", "minimum": 0, "maximum": 1}},
    },
    "EntrySummary": {"type": "object", "required": _ENTRY_REQUIRED, "properties": _ENTRY_FIELDS},
    "EntryListed": {
        "type": "object", "required": _ENTRY_REQUIRED,
        "description": "An entry of a listing: with its content and content_hash only when asked (content=true)",
        "properties": {**_ENTRY_FIELDS, **_CONTENT_FIELDS},
    },
    "EntryPage": _page("EntryListed"),
    "Layer": {
        "type": "object", "required": ["user", "entry_count"],
        "properties": {
            "user": {**_NULLABLE_STRING, "description": "The user whose layer it is; null: the account layer"},
            "entry_count": {"type": "integer", "minimum": 1,
                            "description": "The entries it holds (expired ones not yet removed counted in)"},
        },
    },
    "LayerPage": _page("Layer"),
    "SearchPage": _page(
        "EntryHit",
        mode=_SEARCH_MODE, fallback=_SEARCH_FALLBACK,
        stages={"type": "array", "items": {"type": "string", "enum": ["keyword", "semantic", "fusion", "rerank"]},
                "description": "What ran, in order: the keyword and semantic sides, their fusion, the re-ranking "
                               "stage"},
        index_lag={"type": ["integer", "null"], "minimum": 0,
                   "description": "Entries of the searched memories the semantic index has not caught up with yet "
                                  "(0: none); null when the backend cannot tell or the search was keyword"},
    ),
    "WorkspaceFile": {
        "type": "object", "required": ["path", "size_bytes", "modified_at", "url"],
        "properties": {
            "path": {"type": "string"}, "size_bytes": {"type": "integer", "minimum": 0}, "modified_at": _TIME,
            "url": {"type": "string", "description": "A download link that works without a key until it expires"},
        },
    },
}

_STRING = {"type": "string"}
_INTEGER = {"type": "integer", "minimum": 0}
_NULLABLE_INTEGER = {"type": ["integer", "null"], "minimum": 0}


def _object(required: list[str], properties: dict[str, Any], description: str | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "required": required, "properties": properties}
    if description:
        schema["description"] = description
    return schema


_MEMORY = {
    "name": _STRING, "user_id": _NULLABLE_STRING, "scope": {"type": "string", "enum": ["account", "user"]},
    "entry_count": _INTEGER, "attached_to": {"type": "array", "items": _STRING,
                                            "description": "The agents that attach it"},
    "created_at": _TIME, "deleted_at": _NULLABLE_TIME, "purge_after": _NULLABLE_TIME,
}
_KEY = {
    "id": _STRING, "kind": {"type": "string", "enum": ["account", "user"]}, "user": _NULLABLE_STRING,
    "created_at": _TIME, "last4": _STRING,
}
_AGENT = {
    "name": _STRING, "user_id": _NULLABLE_STRING, "scope": {"type": "string", "enum": ["account", "user"]},
    "own_memory": {"type": "string", "description": "The memory only it writes: `agent:{name}`"},
    "instructions": _STRING,
    "memories": {"type": "array", "items": _object(["name", "writable"], {
        "name": _STRING, "writable": {"type": "boolean"}})},
    "capabilities": _object(["memory"], {"memory": {"type": "boolean"}}),
    "window_messages": _NULLABLE_INTEGER,
    "context": _object(["summary_tokens", "summary_messages"], {
        "summary_tokens": _INTEGER, "summary_messages": _INTEGER}),
    "user_conversations_write_shared": {"type": "boolean"},
    "anonymous_private_writes": {"type": "string", "enum": ["refuse", "shared"]},
    "version": {"type": "integer", "minimum": 1},
    "created_at": _TIME, "updated_at": _TIME, "deleted_at": _NULLABLE_TIME, "purge_after": _NULLABLE_TIME,
}
_HISTORY = {
    "name": _STRING, "version": {"type": "integer", "minimum": 1}, "operation": _STRING, "content_hash": _STRING,
    "updated_by": _STRING, "changed_at": _TIME, "kept_until": _TIME, "description": _NULLABLE_STRING,
    "content": _NULLABLE_STRING,
}
_CONVERSATION = {
    "key": _STRING, "agent": _STRING, "user_id": _NULLABLE_STRING, "surface": _STRING,
    "messages": {**_INTEGER, "description": "Messages in its journal"}, "turns": _INTEGER,
    "covers_through_seq": {**_NULLABLE_INTEGER, "description": "The last message the checkpoint summarises"},
    "forgotten_through_seq": _NULLABLE_INTEGER, "unfolded_tokens": _INTEGER, "unfolded_messages": _INTEGER,
    "window_messages": _NULLABLE_INTEGER, "summary_due": {"type": "boolean"},
    "created_at": _TIME, "updated_at": _TIME, "deleted_at": _NULLABLE_TIME,
}
_MESSAGE = {
    "seq": {"type": "integer", "minimum": 1}, "turn": _INTEGER,
    "role": {"type": "string", "enum": ["user", "assistant", "tool_call", "tool_result"]},
    "content": _NULLABLE_STRING, "tool_name": _NULLABLE_STRING, "tool_call_id": _NULLABLE_STRING,
    "arguments": {"type": ["object", "null"]}, "result": {"description": "A tool_result's result (any JSON)"},
    "client_id": _NULLABLE_STRING, "created_at": _TIME, "tokens": _NULLABLE_INTEGER,
}
_REMOVED = {"type": "object", "additionalProperties": _INTEGER, "description": "How many of each kind went"}
SCHEMAS.update({
    "Memory": _object(list(_MEMORY), _MEMORY),
    "MemoryPage": _page("Memory"),
    "Key": _object(list(_KEY), _KEY),
    "KeyCreated": _object([*_KEY, "secret"], {**_KEY, "secret": {
        "type": "string", "description": "The key itself: shown this once, never again"}}),
    "KeyPage": _page("Key"),
    "UsageCount": _object(["day", "operation", "billable", "count"], {
        "day": {"type": "string", "format": "date"}, "operation": _STRING, "billable": {"type": "boolean"},
        "count": _INTEGER}),
    "UsagePage": _page("UsageCount"),
    "Health": _object(["status", "version", "backend"], {
        "status": {"type": "string", "enum": ["ok"]}, "version": _STRING,
        "backend": {"type": "string", "enum": ["embedded", "aws"]}}),
    "Agent": _object(list(_AGENT), _AGENT),
    "AgentPage": _page("Agent"),
    "HistoryItem": _object(["name", "version", "operation", "changed_at"], _HISTORY),
    "HistoryPage": _page("HistoryItem"),
    "WorkspaceFilePage": _page("WorkspaceFile"),
    "Conversation": _object(list(_CONVERSATION), _CONVERSATION),
    "ConversationPage": _page("Conversation"),
    "Message": _object(["seq", "turn", "role", "created_at"], _MESSAGE),
    "MessagePage": _page("Message"),
    "CompactionStarted": _object(["job_id"], {"job_id": _STRING}, "The summary pass started"),
    "Appended": _object(["items", "added", "conversation"], {
        "items": {"type": "array", "items": {"$ref": "#/components/schemas/Message"},
                  "description": "The rows of this append, as stored (a retried one's too)"},
        "added": {**_INTEGER, "description": "Rows newly stored (0: a retry of rows already there)"},
        "conversation": {"$ref": "#/components/schemas/Conversation"},
        "format": {"type": "string", "enum": ["bedrock", "anthropic", "openai"]},
        "skipped": {"type": "array", "items": _object(["index", "reason"], {
            "index": {**_INTEGER, "description": "The message's place in the body's `messages`"},
            "reason": _STRING}), "description": "With `format=`: the parts of the messages that hold no journal row"},
    }, "200: every row was there already (a retry); 201: rows were added"),
    "MessageHit": _object(["conversation", "seq", "role", "snippet", "score", "created_at", "snippet_start",
                           "snippet_end"], {
        "conversation": _STRING, "seq": {"type": "integer", "minimum": 1},
        "role": _MESSAGE["role"],
        "snippet": {"type": "string", "description": "A long message's passage that matched (a few sentences); "
                    "a short message's text around the first word found. \"…\" marks a cut, a space each line break"},
        "score": {"type": "number", "minimum": 0, "maximum": 1}, "created_at": _TIME,
        "snippet_start": {"type": "integer", "minimum": 0,
                          "description": "Where the snippet starts in the message's text (characters)"},
        "snippet_end": {"type": "integer", "minimum": 0,
                        "description": "Where it ends: text[snippet_start:snippet_end] is the snippet, without "
                                       "its \"…\" and with its line breaks"},
    }),
    "MessageSearchPage": _page(
        "MessageHit",
        mode=_SEARCH_MODE, fallback=_SEARCH_FALLBACK,
        stages={"type": "array",
                "items": {"type": "string",
                          "enum": ["keyword", "semantic", "neighbours", "fusion", "feedback", "rerank"]},
                "description": "What ran, in order: the keyword and semantic sides, the neighbours' evidence, "
                               "their fusion, the best hits' words lent to the candidates holding them, the "
                               "re-ranking stage"},
        index_lag={"type": ["integer", "null"], "minimum": 0,
                   "description": "Messages of the searched conversations the semantic index has not caught up with "
                                  "yet (0: none); null when the backend cannot tell or the search was keyword"},
    ),
    "Checkpoint": _object([*_ENTRY_REQUIRED, "content", "covers_through_seq", "passes", "passes_total",
                           "lines_by_hand"], {
        **_ENTRY_FIELDS, **_CONTENT_FIELDS, "covers_through_seq": _NULLABLE_INTEGER,
        "passes": {"type": "array", "description": "The newest 20 passes, newest first", "items": _object(
            ["version", "at", "by", "summariser"], {
                "version": {"type": "integer", "minimum": 1, "description": "The checkpoint's version it wrote"},
                "at": _TIME, "by": {"type": "string", "enum": ["system"]},
                "summariser": {**_NULLABLE_STRING, "description": "What wrote it (`extractive`, "
                                                                  "`bedrock:<model id>`, ...); null: not recorded"}})},
        "passes_total": _INTEGER, "lines_by_hand": {**_INTEGER, "description": "Lines a person wrote into it"},
    }),
    "WorkspaceLink": _object(["url", "method", "path", "expires_in_s", "expires_at", "headers"], {
        "url": {"type": "string", "description": "Works without a key until `expires_at`"},
        "method": {"type": "string", "enum": ["GET", "PUT"]}, "path": _STRING, "expires_in_s": _INTEGER,
        "expires_at": _TIME,
        "headers": {"type": "object", "additionalProperties": _STRING,
                    "description": "The headers an upload must send with it"},
    }),
    "FileDeleted": _object(["path", "deleted"], {"path": _STRING, "deleted": {"type": "boolean"}}),
    "AgentPurged": _object(["agent", "removed"], {"agent": _STRING, "removed": _REMOVED}),
    "UserErased": _object(["user", "removed"], {"user": _STRING, "removed": _REMOVED}),
    "ConversationDeleted": _object(["conversation", "purged", "removed"], {
        "conversation": _STRING, "purged": {"type": "boolean"}, "removed": _REMOVED}),
})

_ENTRY = "/v1/memories/{memory}/entries/{name}"
_FILE = "/v1/agents/{agent}/conversations/{key}/workspace/files/{path}"
# (method, path) → {status: schema name}
TYPED: dict[tuple[str, str], dict[str, str]] = {
    ("put", _ENTRY): {"200": "EntrySaved", "201": "EntrySaved"},
    ("get", _ENTRY): {"200": "Entry"},
    ("get", "/v1/memories/{memory}/entries"): {"200": "EntryPage"},
    ("get", "/v1/memories/{memory}/layers"): {"200": "LayerPage"},
    ("get", "/v1/memories/{memory}/search"): {"200": "SearchPage"},
    ("put", _FILE): {"200": "WorkspaceFile"},
    ("get", "/v1/agents/{agent}/conversations/{key}/workspace/files"): {"200": "WorkspaceFilePage"},
    ("get", _ENTRY + "/history"): {"200": "HistoryPage"},
    ("get", "/v1/memories"): {"200": "MemoryPage"},
    ("put", "/v1/memories/{memory}"): {"200": "Memory", "201": "Memory"},
    ("get", "/v1/memories/{memory}"): {"200": "Memory"},
    ("delete", "/v1/memories/{memory}"): {"200": "Memory"},
    ("post", "/v1/memories/{memory}/restore"): {"200": "Memory"},
    ("post", "/v1/keys"): {"201": "KeyCreated"},
    ("get", "/v1/keys"): {"200": "KeyPage"},
    ("get", "/v1/usage"): {"200": "UsagePage"},
    ("get", "/v1/health"): {"200": "Health"},
    ("get", "/v1/agents"): {"200": "AgentPage"},
    ("put", "/v1/agents/{agent}"): {"200": "Agent", "201": "Agent"},
    ("get", "/v1/agents/{agent}"): {"200": "Agent"},
    ("delete", "/v1/agents/{agent}"): {"200": "Agent"},
    ("post", "/v1/agents/{agent}/restore"): {"200": "Agent"},
    ("get", "/v1/agents/{agent}/search"): {"200": "SearchPage"},
    ("get", "/v1/agents/{agent}/conversations"): {"200": "ConversationPage"},
    ("get", "/v1/agents/{agent}/conversations/{key}"): {"200": "Conversation"},
    ("get", "/v1/agents/{agent}/conversations/{key}/messages"): {"200": "MessagePage"},
    ("post", "/v1/agents/{agent}/conversations/{key}/compact"): {"202": "CompactionStarted"},
    ("post", "/v1/agents/{agent}/conversations/{key}/workspace/links"): {"201": "WorkspaceLink"},
    ("post", "/v1/agents/{agent}/conversations/{key}/messages"): {"200": "Appended", "201": "Appended"},
    ("get", "/v1/agents/{agent}/messages/search"): {"200": "MessageSearchPage"},
    ("get", "/v1/agents/{agent}/conversations/{key}/checkpoint"): {"200": "Checkpoint"},
    ("delete", _FILE): {"200": "FileDeleted"},
    ("post", "/v1/agents/{agent}/purge"): {"200": "AgentPurged"},
    ("delete", "/v1/users/{user_id}"): {"200": "UserErased"},
    ("delete", "/v1/agents/{agent}/conversations/{key}"): {"200": "ConversationDeleted"},
}


def type_responses(spec: dict[str, Any]) -> None:
    """Give the operations of ``TYPED`` (and of ``agent_responses.TYPED``: the context, the tools, MCP) their
    bodies' schemas (kept with the description each has)."""
    from . import agent_responses

    schemas = {**SCHEMAS, **agent_responses.schemas()}
    spec.setdefault("components", {}).setdefault("schemas", {}).update(schemas)
    for (method, path), codes in {**TYPED, **agent_responses.TYPED}.items():
        responses = spec["paths"][path][method].setdefault("responses", {})
        for code, name in codes.items():
            response = responses.setdefault(code, {"description": schemas[name].get("description", "OK")})
            response["content"] = {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}}
