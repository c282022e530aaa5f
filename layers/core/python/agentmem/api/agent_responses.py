"""The typed bodies of the answers an agent's loop reads, for the OpenAPI document: the context for a turn
(agentmem's shape, or a model API's with ``format=``), the tool definitions in each format, a tool call's
outcome, the tool call view and an MCP reply.

Each schema is the shape the code writes: ``domain/context.py`` ``assemble`` (the context),
``domain/model_formats.py`` ``render`` (its messages for Bedrock, Anthropic and OpenAI),
``domain/tool_formats.py`` ``render`` (a tool definition), ``domain/tool_results.py`` (a tool call's
``result``) and ``services/conversations.py`` ``tool_call`` (the view). Where the shape depends on a
parameter, the answer is a union of named schemas that a constant field tells apart (``format`` for the
context and the tool list, ``operation`` for a tool call), so a generated client parses each answer into
its own model. ``schemas()`` is called when the document is built: the API's import does not pay for it.
"""

from __future__ import annotations

from typing import Any

_STRING: dict[str, Any] = {"type": "string"}
_NULLABLE_STRING: dict[str, Any] = {"type": ["string", "null"]}
_COUNT: dict[str, Any] = {"type": "integer", "minimum": 0}
_NULLABLE_COUNT: dict[str, Any] = {"type": ["integer", "null"], "minimum": 0}
_SEQ: dict[str, Any] = {"type": "integer", "minimum": 1}
_TIME: dict[str, Any] = {"type": "string", "format": "date-time"}
_JSON_OBJECT: dict[str, Any] = {"type": "object", "additionalProperties": True}
_ANY_JSON: dict[str, Any] = {"description": "Any JSON value (null when there is none)"}


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def _list(name: str, description: str | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "array", "items": _ref(name)}
    if description:
        schema["description"] = description
    return schema


def _const(value: str) -> dict[str, Any]:
    return {"type": "string", "const": value}


def _object(properties: dict[str, Any], *, optional: tuple[str, ...] = (), description: str = "") -> dict[str, Any]:
    """An object whose fields are all present in every answer, but ``optional``."""
    schema: dict[str, Any] = {
        "type": "object", "required": [name for name in properties if name not in optional], "properties": properties,
    }
    if description:
        schema["description"] = description
    return schema


def _context_schemas(surfaces: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """``GET …/context``: agentmem's own shape (``Context``), or with ``format=`` one model API's."""
    row = {
        "content": _STRING,
        "tool_name": {**_NULLABLE_STRING, "description": "A tool call's, and a tool result's when it has one"},
        "tool_call_id": {**_NULLABLE_STRING, "description": "A tool call's and a tool result's"},
        "arguments": {**_JSON_OBJECT, "description": "A tool call's arguments"},
        "result": {"description": "A tool result's result (any JSON)"},
    }
    roles = ["user", "assistant", "tool_call", "tool_result"]
    common = {
        "conversation": _STRING, "agent": _STRING,
        "user_id": {**_NULLABLE_STRING, "description": "The conversation's user; null: the account's"},
        "surface": {"type": "string", "enum": list(surfaces)},
        "pinned": _ref("ContextPinned"), "memory_index": _ref("ContextMemoryIndex"),
        "summary": {"oneOf": [_ref("ContextSummary"), {"type": "null"}],
                    "description": "The checkpoint's summary; null: the conversation has none"},
        "window": _ref("ContextWindow"),
        "tokens": {**_COUNT, "description": "The tokens of the pinned block, index, summary and window together"},
    }
    system_note = "Pinned block, memory index and summary, in order, each left out when empty"
    return {
        "ContextPinned": _object({
            "text": {**_STRING, "description": "The pinned block as the model reads it (empty: none pinned)"},
            "tokens": _COUNT, "entries": {"type": "array", "items": _STRING, "description": "The pinned entries"},
        }),
        "ContextMemoryIndex": _object({
            "text": {**_STRING, "description": "Each readable entry's name and description"},
            "tokens": _COUNT, "shown": {**_COUNT, "description": "Entries listed"},
            "more": {**_COUNT, "description": "Entries left out for room (found with the search tool)"},
        }),
        "ContextSummary": _object({
            "text": _STRING, "tokens": _COUNT,
            "covers_through_seq": {**_COUNT, "description": "The last journal message it summarises"},
        }),
        "ContextMessage": _object({"role": {"type": "string", "enum": ["system", *roles]}, **row},
                                  optional=tuple(name for name in row if name != "content"),
                                  description="A message as agentmem sends it to the model"),
        "WindowRow": _object({
            "seq": _SEQ, "turn": _COUNT, "role": {"type": "string", "enum": roles}, **row, "created_at": _TIME,
            "tokens": _COUNT}, optional=tuple(name for name in row if name != "content"),
            description="A row of the recent window, with its place in the journal"),
        "ContextWindow": _object({"messages": _list("WindowRow"), "tokens": _COUNT,
                                  "cap": {**_COUNT, "description": "The most rows the window holds"}}),
        "Context": _object({**common, "messages": _list("ContextMessage", f"{system_note} as system messages, "
                                                        "then the window's rows")},
                           description="The context for the next turn, in agentmem's shape"),
        "ContextBedrock": _object({
            **common, "format": _const("bedrock"),
            "system": _list("BedrockSystemBlock", system_note), "messages": _list("BedrockMessage"),
        }, description="With format=bedrock: `system` and `messages` as Amazon Bedrock's Converse API takes them"),
        "ContextAnthropic": _object({
            **common, "format": _const("anthropic"),
            "system": _list("AnthropicTextBlock", system_note), "messages": _list("AnthropicMessage"),
        }, description="With format=anthropic: `system` and `messages` as the Anthropic Messages API takes them"),
        "ContextOpenai": _object({
            **common, "format": _const("openai"),
            "messages": {"type": "array", "description": f"{system_note} as system messages, then the window",
                         "items": {"oneOf": [_ref(name) for name in (
                             "OpenaiSystemMessage", "OpenaiUserMessage", "OpenaiAssistantMessage",
                             "OpenaiToolMessage")]}},
        }, description="With format=openai: `messages` as OpenAI Chat Completions takes them"),
        # agentmem's own shape last: a generated client tries the variants in order, and only the others
        # carry `format`
        "TurnContext": {"anyOf": [_ref(name) for name in (
            "ContextBedrock", "ContextAnthropic", "ContextOpenai", "Context")],
            "description": "The context for the next turn: agentmem's shape, or with `format=` a model API's"},
        # Amazon Bedrock Converse
        "BedrockSystemBlock": _object({"text": _STRING}),
        "BedrockMessage": _object({"role": {"type": "string", "enum": ["user", "assistant"]},
                                   "content": _list("BedrockContentBlock")}),
        "BedrockContentBlock": _object({
            "text": _STRING, "toolUse": _ref("BedrockToolUse"), "toolResult": _ref("BedrockToolResult"),
        }, optional=("text", "toolUse", "toolResult"), description="Exactly one of its fields"),
        "BedrockToolUse": _object({"toolUseId": _STRING, "name": _STRING, "input": _JSON_OBJECT}),
        "BedrockToolResult": _object({"toolUseId": _STRING, "content": _list("BedrockToolResultContent")}),
        "BedrockToolResultContent": _object(
            {"text": _STRING, "json": {**_JSON_OBJECT, "description": "A result that is a JSON object"}},
            optional=("text", "json"), description="Exactly one of its fields"),
        # the Anthropic Messages API
        "AnthropicMessage": _object({
            "role": {"type": "string", "enum": ["user", "assistant"]},
            "content": {"type": "array", "items": {"oneOf": [_ref(name) for name in (
                "AnthropicTextBlock", "AnthropicToolUseBlock", "AnthropicToolResultBlock")]}},
        }),
        "AnthropicTextBlock": _object({"type": _const("text"), "text": _STRING}),
        "AnthropicToolUseBlock": _object({"type": _const("tool_use"), "id": _STRING, "name": _STRING,
                                          "input": _JSON_OBJECT}),
        "AnthropicToolResultBlock": _object(
            {"type": _const("tool_result"), "tool_use_id": _STRING,
             "content": {**_STRING, "description": "The result's text; absent when it has none"}},
            optional=("content",)),
        # OpenAI Chat Completions
        "OpenaiSystemMessage": _object({"role": _const("system"), "content": _STRING}),
        "OpenaiUserMessage": _object({"role": _const("user"), "content": _STRING}),
        "OpenaiAssistantMessage": _object({
            "role": _const("assistant"),
            "content": {**_NULLABLE_STRING, "description": "null: the message only calls tools"},
            "tool_calls": _list("OpenaiToolCall"),
        }, optional=("tool_calls",)),
        "OpenaiToolCall": _object({"id": _STRING, "type": _const("function"), "function": _ref("OpenaiFunctionCall")}),
        "OpenaiFunctionCall": _object({"name": _STRING,
                                       "arguments": {**_STRING, "description": "The arguments as JSON text"}}),
        "OpenaiToolMessage": _object({"role": _const("tool"), "tool_call_id": _STRING, "content": _STRING}),
    }


def _tool_list_schemas(dialects: tuple[str, ...], formats: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """``GET /v1/agents/{agent}/tools``: one page of definitions, in the format ``format=`` names."""
    described = {"name": _STRING, "description": _STRING}
    item_of = {"mcp": "McpTool", "anthropic": "AnthropicTool", "openai": "OpenaiTool", "bedrock": "BedrockTool"}
    pages = {
        f"{item_of[fmt]}Page": _object({
            "items": _list(item_of[fmt]), "next_cursor": {"type": "null", "description": "Every tool is on one page"},
            "dialect": {"type": "string", "enum": list(dialects)}, "format": _const(fmt),
        }, description=f"The tools as {'an MCP tools/list' if fmt == 'mcp' else fmt} lists them")
        for fmt in formats
    }
    return {
        "ToolInputSchema": {
            "type": "object", "required": ["type", "properties", "required"], "additionalProperties": True,
            "description": "The JSON Schema (2020-12) of the tool's arguments; no other argument is taken",
            "properties": {
                "type": _const("object"),
                "properties": {"type": "object", "additionalProperties": _JSON_OBJECT,
                               "description": "Each argument's schema, by name"},
                "required": {"type": "array", "items": _STRING},
            },
        },
        "McpTool": _object({**described, "inputSchema": _ref("ToolInputSchema")}),
        "AnthropicTool": _object({**described, "input_schema": _ref("ToolInputSchema")}),
        "OpenaiTool": _object({"type": _const("function"), "function": _ref("OpenaiFunction")}),
        "OpenaiFunction": _object({**described, "parameters": _ref("ToolInputSchema")}),
        "BedrockTool": _object({"toolSpec": _ref("BedrockToolSpec")}),
        "BedrockToolSpec": _object({**described, "inputSchema": _ref("BedrockToolInputSchema")}),
        "BedrockToolInputSchema": _object({"json": _ref("ToolInputSchema")}),
        **pages,
        "ToolList": {"oneOf": [_ref(f"{item_of[fmt]}Page") for fmt in formats],
                     "description": "The agent's tools in the format asked for (`format`, default mcp)"},
    }


def _tool_call_schemas() -> dict[str, dict[str, Any]]:
    """``POST /v1/agents/{agent}/tools/{tool}`` (one outcome per operation) and ``GET …/tool-calls/{id}``."""
    answered = {
        "mode": {"type": "string", "enum": ["hybrid", "keyword", "semantic"], "description": "The mode that answered"},
        "fallback": {"type": "string", "enum": ["index_unavailable", "timeout", "not_configured"],
                     "description": "Why a hybrid or semantic search answered by words"},
        "index_lag": {**_NULLABLE_COUNT, "description": "Entries (memory search) or messages (journal search) of the "
                                                        "search's scope the semantic index has not caught up with "
                                                        "yet (0: none); null when the backend cannot tell or it "
                                                        "searched by words alone"},
    }
    entry = {
        "name": _STRING, "memory": _STRING, "user_id": {**_NULLABLE_STRING, "description": "null: the account layer"},
        "description": _NULLABLE_STRING, "category": _STRING, "importance": {"type": "number", "minimum": 0,
                                                                             "maximum": 1},
        "visibility": {"type": "string", "enum": ["private", "shared", "read_only"]}, "version": _SEQ,
        "updated_by": _STRING, "created_at": _TIME, "updated_at": _TIME,
        "expires_at": {"type": ["string", "null"], "format": "date-time"},
    }
    hit = {name: entry[name] for name in ("name", "description", "memory", "user_id", "category", "importance",
                                          "visibility", "version", "updated_at")}
    results = {
        "search": ("ToolSearchResult", _object({"items": _list("ToolSearchHit"), **answered}, optional=("fallback",))),
        "read": ("ToolReadResult", _object({
            "entry": _ref("ToolEntry"), "memory": {**_STRING, "description": "The memory it was read from"},
            "also_in": {"type": "array", "items": _STRING,
                        "description": "Other memories the agent reads that hold an entry of this name"},
        })),
        "save": ("ToolSaveResult", _object({
            "entry": _ref("EntrySummary"), "memory": _STRING, "created": {"type": "boolean"},
            "forced": {**_STRING, "description": "Stored private instead of shared, and why (`sensitive_content`)"},
            "downgraded": {**_STRING, "description": "Stored shared instead of private, and why (`no_user_context`)"},
        }, optional=("forced", "downgraded"))),
        "delete": ("ToolDeleteResult", _object({
            "deleted": {**_STRING, "description": "The entry's name"}, "memory": _STRING,
            "version": {**_SEQ, "description": "The version it had"}})),
        "journal_search": ("ToolJournalSearchResult", _object({"items": _list("MessageHit"), **answered},
                                                              optional=("fallback",))),
        "tool_call_view": ("ToolCallView", _object({
            "conversation": _STRING, "tool_call_id": _STRING, "tool_name": _NULLABLE_STRING,
            "arguments": {"type": ["object", "null"], "additionalProperties": True,
                          "description": "The call's arguments; null: only its result is in the journal"},
            "call_seq": {**_NULLABLE_COUNT, "description": "The call's row"},
            "result": {"description": "The last result's result (any JSON); null: none, or no result yet"},
            "result_content": {**_NULLABLE_STRING, "description": "The last result's text"},
            "result_seq": {**_NULLABLE_COUNT, "description": "The last result's row; null: no result yet"},
        }, description="The full arguments and result of a tool call, whatever the context carried of them")),
    }
    outcome_of = {"search": "ToolSearched", "read": "ToolRead", "save": "ToolSaved", "delete": "ToolDeleted",
                  "journal_search": "ToolJournalSearched", "tool_call_view": "ToolCallViewed"}
    schemas: dict[str, dict[str, Any]] = {
        "ToolSearchHit": _object({**hit, "content": _STRING, "score": {"type": "number", "minimum": 0, "maximum": 1}}),
        "ToolEntry": _object({**entry, "content": _STRING}),
    }
    for operation, (result, schema) in results.items():
        schemas[result] = schema
        schemas[outcome_of[operation]] = _object({
            "tool": {**_STRING, "description": "The tool's name"}, "operation": _const(operation),
            "result": _ref(result), "text": {**_STRING, "description": "The outcome in words, for the model"},
        }, description=f"The outcome of a {operation.replace('_', ' ')} tool")
    schemas["ToolOutcome"] = {
        "oneOf": [_ref(name) for name in outcome_of.values()],
        "discriminator": {"propertyName": "operation",
                          "mapping": {op: f"#/components/schemas/{name}" for op, name in outcome_of.items()}},
        "description": "A tool call's outcome: its `result` is the operation's (`operation`)",
    }
    return schemas


_JSON_RPC = {
    "JsonRpcResponse": _object({
        "jsonrpc": _const("2.0"), "id": {"type": ["string", "integer", "null"], "description": "The request's id"},
        "result": {**_JSON_OBJECT, "description": "The method's result (MCP's shape for the method)"},
        "error": _ref("JsonRpcError"),
    }, optional=("result", "error"), description="One JSON-RPC 2.0 reply: `result` or `error`"),
    "JsonRpcError": _object({"code": {"type": "integer"}, "message": _STRING, "data": _ANY_JSON},
                            optional=("data",)),
}

_CONVERSATION = "/v1/agents/{agent}/conversations/{key}"
# (method, path) → {status: schema name}
TYPED: dict[tuple[str, str], dict[str, str]] = {
    ("get", f"{_CONVERSATION}/context"): {"200": "TurnContext"},
    ("get", f"{_CONVERSATION}/tool-calls/{{tool_call_id}}"): {"200": "ToolCallView"},
    ("get", "/v1/agents/{agent}/tools"): {"200": "ToolList"},
    ("post", "/v1/agents/{agent}/tools/{tool}"): {"200": "ToolOutcome"},
    ("post", "/v1/mcp"): {"200": "JsonRpcResponse"},
}


def schemas() -> dict[str, dict[str, Any]]:
    from ..domain.surfaces import SURFACES
    from ..domain.tool_formats import FORMATS
    from ..domain.tools import DIALECTS

    return {**_context_schemas(SURFACES), **_tool_list_schemas(DIALECTS, FORMATS), **_tool_call_schemas(),
            **_JSON_RPC}
