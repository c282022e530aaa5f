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
    "EntryPage": _page("EntrySummary"),
    "SearchPage": _page(
        "EntryHit",
        mode={"type": "string", "enum": ["hybrid", "keyword", "semantic"], "description": "The mode that answered"},
        fallback={"type": "string", "enum": ["index_unavailable", "timeout", "not_configured"],
                  "description": "Why a hybrid or semantic search answered by words"},
    ),
    "WorkspaceFile": {
        "type": "object", "required": ["path", "size_bytes", "modified_at", "url"],
        "properties": {
            "path": {"type": "string"}, "size_bytes": {"type": "integer", "minimum": 0}, "modified_at": _TIME,
            "url": {"type": "string", "description": "A download link that works without a key until it expires"},
        },
    },
}

_ENTRY = "/v1/memories/{memory}/entries/{name}"
_FILE = "/v1/agents/{agent}/conversations/{key}/workspace/files/{path}"
# (method, path) → {status: schema name}
TYPED: dict[tuple[str, str], dict[str, str]] = {
    ("put", _ENTRY): {"200": "EntrySaved", "201": "EntrySaved"},
    ("get", _ENTRY): {"200": "Entry"},
    ("get", "/v1/memories/{memory}/entries"): {"200": "EntryPage"},
    ("get", "/v1/memories/{memory}/search"): {"200": "SearchPage"},
    ("put", _FILE): {"200": "WorkspaceFile"},
}


def type_responses(spec: dict[str, Any]) -> None:
    """Give the operations of ``TYPED`` their bodies' schemas (kept with the description each has)."""
    spec.setdefault("components", {}).setdefault("schemas", {}).update(SCHEMAS)
    for (method, path), codes in TYPED.items():
        responses = spec["paths"][path][method].setdefault("responses", {})
        for code, name in codes.items():
            response = responses.setdefault(code, {"description": "OK"})
            response["content"] = {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}}
