"""The workspace links (``/v1/links/{key}``) in the OpenAPI document.

They are not routes of the resolver: ``agentmem serve`` answers them beside it (``local/links.py``), and on
AWS a link is an S3 URL instead. A link carries its own signature, so it needs no API key. Any other method on
a link is a 405 with ``Allow: GET, HEAD, PUT``.
"""

from __future__ import annotations

from typing import Any

_BYTES = {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}
_ERROR = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
_QUERY = [
    {"name": "method", "in": "query", "required": True, "schema": {"type": "string", "enum": ["GET", "PUT"]},
     "description": "What the link was made for (a download link also answers HEAD)"},
    {"name": "expires", "in": "query", "required": True, "schema": {"type": "integer", "minimum": 0},
     "description": "When it stops working, in seconds since 1970, as it was signed: digits only (no sign, no "
                    "leading zero, no `_`)"},
    {"name": "size", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 0},
     "description": "An upload link: the exact size of the body it takes, as it was signed (digits only)"},
    {"name": "filename", "in": "query", "required": False, "schema": {"type": "string"},
     "description": "A download link: the name it is saved as"},
    {"name": "signature", "in": "query", "required": True, "schema": {"type": "string"}},
]
_KEY = {"name": "key", "in": "path", "required": True, "schema": {"type": "string"},
        "description": "The file's place in the store, as the link names it"}
_REFUSED = {"description": "The link is incomplete, altered (a number not written as it was signed among them), "
                           "expired or used with another method (or an upload's body is not its signed size)",
            "content": _ERROR}
_NOT_TEXT = {"description": "A query value whose percent-escapes are not UTF-8 text (the error names it)",
             "content": _ERROR}


_GONE = {"description": "The file is gone, or this server serves no links (`agentmem serve --backend aws`: its links "
                     "are S3 URLs)", "content": _ERROR}


def _operation(operation_id: str, summary: str, responses: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"operationId": operation_id, "summary": summary, "tags": ["workspaces"], "security": [],
            "parameters": [_KEY, *_QUERY],
            "responses": {"400": _NOT_TEXT, **responses, "403": _REFUSED}, **extra}


def link_paths() -> dict[str, Any]:
    download = {
        "200": {"description": "The file's bytes", "content": _BYTES},
        "206": {"description": "The part a `Range` header asked for", "content": _BYTES},
        "404": _GONE,
        "416": {"description": "The `Range` is outside the file", "content": _ERROR},
    }
    return {"/v1/links/{key}": {
        "get": _operation("download_by_link",
                          "Download a workspace file through a link (agentmem serve; on AWS an S3 URL)", download),
        "head": _operation("probe_link", "A download link's file: its size and type, without the bytes",
                           {"200": {"description": "The file's headers"}, "404": _GONE}),
        "put": _operation(
            "upload_by_link", "Upload a workspace file through a link (agentmem serve; on AWS an S3 URL)",
            {"200": {"description": "Stored", "content": {"application/json": {"schema": {
                "type": "object", "required": ["size_bytes"],
                "properties": {"size_bytes": {"type": "integer", "minimum": 0}}}}}},
             "400": {"description": "No `Content-Length` (a chunked body), or a query value that is not UTF-8 text",
                     "content": _ERROR}, "404": _GONE,
             "413": {"description": "Over the link's size (at most 100 MB)", "content": _ERROR}},
            requestBody={"required": True, "content": _BYTES,
                         "description": "The file's bytes, exactly the link's `size` of them"},
        ),
    }}
