"""The OpenAPI document and Swagger UI, as the API really answers.

Powertools generates the document from the routes; this adds what it cannot know: the
status codes each operation answers (201, 204, 409, 412, ...), the §10 error shape in
place of its 422 validation answer (we answer 400), and the conditional headers.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver

from .. import __version__
from .link_paths import link_paths
from .responses import type_responses
from .schemas import PATH_PARAMETER_RULES, QUERY_PARAMETER_RULES

TITLE = "agentmem"
DESCRIPTION = (
    "Memory for AI agents: versioned entries in shared memories, conversations and workspaces. "
    "Authenticate with `Authorization: Bearer <api key>`. Errors answer `{\"error\": {\"code\", \"message\"}}`."
)

ERROR_SCHEMA = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {
                "code": {"type": "string", "examples": ["invalid", "conflict", "rejected_injection"]},
                "message": {"type": "string"},
                "field": {"type": "string", "description": "The field a 400 is about"},
                "current_version": {"type": "integer", "description": "On 409 conflict and 412"},
            },
            "additionalProperties": True,
        }
    },
}

_WHY = {
    "400": "Invalid input (`invalid`, with `field`)",
    "401": "Missing or unknown API key",
    "403": "Not allowed for this key (a user key acting for another user, or on the account layer)",
    "404": "No such resource (also another account's)",
    "409": "Conflict: `conflict` with `current_version`, `layer_full`, or `attached` with `attached_to`",
    "412": "`If-Match` / `If-None-Match` did not hold; carries `current_version`",
    "413": "Body over 1 MB (a workspace file: over 4 MiB; use an upload link)",
    "422": "Refused by screening: `rejected_injection` or `sensitive_without_user`",
    "429": "Too many requests (`rate_limited`): for this key or its account, or invalid keys from this address; "
           "retry after `Retry-After` seconds",
}
_WHY["503"] = ("The service's storage is busy or failing for a moment (`unavailable`, on AWS: DynamoDB, S3 or "
                "Step Functions throttling past the retries); nothing was changed: retry after `Retry-After` seconds")
_RETRY_AFTER = {"Retry-After": {"description": "Seconds to wait before retrying", "schema": {"type": "integer"}}}

# status codes beyond 200/400/401 that an operation answers, by (method, path)
_WORKSPACE = "/v1/agents/{agent}/conversations/{key}/workspace"
_EXTRA: dict[tuple[str, str], dict[str, str]] = {
    ("post", "/v1/keys"): {"201": "The key, with its secret (shown once)", "403": ""},
    ("get", "/v1/keys"): {"403": ""},
    ("delete", "/v1/keys/{key_id}"): {"204": "Revoked", "403": "", "404": ""},
    ("get", "/v1/usage"): {"403": ""},
    ("get", "/v1/memories"): {"403": ""},
    ("put", "/v1/memories/{memory}"): {"201": "Created", "403": "", "409": ""},
    ("get", "/v1/memories/{memory}"): {"404": ""},
    ("delete", "/v1/memories/{memory}"): {"403": "", "404": "", "409": ""},
    ("post", "/v1/memories/{memory}/restore"): {"404": "", "409": ""},
    ("put", "/v1/agents/{agent}"): {"201": "Created", "409": "The name is in the trash: restore it, or pick another",
                                    "412": "`If-None-Match: *` (create only) and the agent already exists "
                                           "(`current_version`); without it a PUT changes the agent's settings"},
    ("post", "/v1/agents/{agent}/conversations/{key}/compact"): {"202": "A summary pass is started: its `job_id`"},
    ("post", "/v1/agents/{agent}/restore"): {"409": "Not in the trash"},
    ("get", "/v1/memories/{memory}/entries"): {"403": "", "404": ""},
    ("get", "/v1/memories/{memory}/entries/{name}"): {"403": "", "404": ""},
    ("put", "/v1/memories/{memory}/entries/{name}"): {
        "201": "Created; the stored entry without content, with `ETag`", "403": "", "404": "", "409": "",
        "412": "", "413": "", "422": "",
    },
    ("delete", "/v1/memories/{memory}/entries/{name}"): {
        "204": "Deleted", "403": "", "404": "", "409": "", "412": "",
    },
    ("get", "/v1/memories/{memory}/entries/{name}/history"): {"403": "", "404": ""},
    ("get", "/v1/memories/{memory}/search"): {"403": "", "404": ""},
    ("get", "/v1/agents/{agent}/tools"): {"404": "No such agent (or not the caller's)"},
    ("post", "/v1/agents/{agent}/tools/{tool}"): {
        "403": "The tool may not run here: a write on a read-only surface or with the memory capability off, "
               "a journal tool where there are none, a read-only attachment or entry",
        "404": "No such agent, tool (the error lists the tools), memory or entry",
        "409": "", "422": "Refused by screening, or a private save with no user (`no_user_context`)",
        "501": "`not_implemented`: a journal tool on a deployment that keeps no journal",
    },
    ("post", "/v1/mcp"): {"202": "A notification or a response (a message with no reply): accepted, no body",
                          "404": "No such agent (or not the caller's)"},
    ("get", f"{_WORKSPACE}/files"): {"404": "No such agent, or not the caller's conversation"},
    ("put", f"{_WORKSPACE}/files/{{path}}"): {"404": "No such agent, or not the caller's conversation"},
    ("get", f"{_WORKSPACE}/files/{{path}}"): {
        "307": "The file is over 4 MiB: `Location` is a download link (follow it without the key)", "404": "",
    },
    ("delete", f"{_WORKSPACE}/files/{{path}}"): {"404": "No such file"},
    ("post", f"{_WORKSPACE}/links"): {"201": "The link, its expiry, and the headers an upload must send",
                                      "404": "No such file (a download link) or agent"},
}
_FILE_PATH_PARAMETER = {
    "name": "path", "in": "path", "required": True, "schema": {"type": "string"},
    "description": "The file's path in the workspace, slashes and all (`reports/q3.csv`): relative, at most 1,024 "
                   "bytes, no `..`, empty segments, control characters or backslashes",
}

# the MCP route reads its body itself (the MCP transport parses it), so the resolver cannot describe it
_MCP_BODY = {
    "required": True,
    "description": "One JSON-RPC 2.0 message of the Model Context Protocol (a batch is refused)",
    "content": {"application/json": {"schema": {
        "type": "object", "required": ["jsonrpc"], "additionalProperties": True,
        "properties": {
            "jsonrpc": {"type": "string", "enum": ["2.0"]},
            "id": {"type": ["string", "integer"],
                   "description": "A request's id (a string or an integer); absent in a notification"},
            "method": {"type": "string", "examples": ["initialize", "tools/list", "tools/call"]},
            "params": {"type": "object"},
        },
    }}},
}

_APPEND = ("post", "/v1/agents/{agent}/conversations/{key}/messages")
_MCP = ("post", "/v1/mcp")


def _mcp_refusals() -> dict[str, dict[str, Any]]:
    """What ``/v1/mcp`` refuses before a method runs, in JSON-RPC's shape (``mcp_server/protocol.py``): a body
    that is not JSON or not one JSON-RPC request (400, beside the API's own 400 for a body that is not an
    object), a ``Content-Type`` that is not JSON (415), an ``Accept`` that does not admit JSON (406)."""
    rpc = {"$ref": "#/components/schemas/JsonRpcResponse"}

    def answer(description: str, schema: dict[str, Any]) -> dict[str, Any]:
        return {"description": description, "content": {"application/json": {"schema": schema}}}

    return {
        "400": answer("Not one JSON-RPC request: a JSON-RPC error (-32700 parse error, -32600 invalid request, "
                      "-32602 invalid params), or the API's error (`invalid`) for a body that is not a JSON object",
                      {"oneOf": [{"$ref": "#/components/schemas/Error"}, rpc]}),
        "406": answer("`Accept` does not admit `application/json`: a JSON-RPC error (-32600)", rpc),
        "415": answer("`Content-Type` is not `application/json`: a JSON-RPC error (-32600)", rpc),
    }


def _append_body(schemas: dict[str, Any]) -> dict[str, Any]:
    """The append reads its body by its ``format=`` (api/routes/conversations.py): either of two bodies."""
    from .schemas import AppendBody, ModelAppendBody

    for model in (AppendBody, ModelAppendBody):
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        schemas.update(schema.pop("$defs", {}))
        schemas[model.__name__] = schema
    return {
        "required": True,
        "description": "Without `format=`: `AppendBody`, agentmem's rows. With `format=bedrock|anthropic|openai`: "
                       "`ModelAppendBody`, the messages as that API takes or answers them",
        "content": {"application/json": {"schema": {"oneOf": [{"$ref": "#/components/schemas/AppendBody"},
                                                              {"$ref": "#/components/schemas/ModelAppendBody"}]}}},
    }


_CONDITIONAL_HEADERS = [
    {"name": "If-Match", "in": "header", "required": False, "schema": {"type": "string"},
     "description": 'Act only if the entry is at this version (`"3"`); else 412'},
    {"name": "If-None-Match", "in": "header", "required": False, "schema": {"type": "string", "enum": ["*"]},
     "description": "`*`: create only if the entry does not exist; else 412"},
]


def _error_response(description: str) -> dict[str, Any]:
    schema = {"$ref": "#/components/schemas/Error"}
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def document(app: APIGatewayRestResolver, base_path: str = "/") -> dict[str, Any]:
    """The document; ``base_path`` is where the API's paths start as its caller reached it (``/prod`` behind
    API Gateway's stage, ``/`` on ``agentmem serve``): its one server, so that Swagger UI calls the same place."""
    # Powertools' models of an OpenAPI document: dozens of Pydantic classes, which only this route needs
    from aws_lambda_powertools.event_handler.openapi.models import Server

    raw = app.get_openapi_json_schema(
        servers=[Server(url=base_path)], security_schemes={"bearer": {"type": "http", "scheme": "bearer"}},  # type: ignore[dict-item]
        security=[{"bearer": []}], title=TITLE, version=__version__, description=DESCRIPTION,
    )
    spec: dict[str, Any] = json.loads(raw)
    _name_file_paths(spec)
    schemas = spec.setdefault("components", {}).setdefault("schemas", {})
    for unused in ("HTTPValidationError", "ValidationError", "ResponseValidationError"):
        schemas.pop(unused, None)
    schemas["Error"] = ERROR_SCHEMA
    for path, operations in spec.get("paths", {}).items():
        for method, operation in operations.items():
            responses = operation.setdefault("responses", {})
            responses.pop("422", None)
            extra = _EXTRA.get((method, path), {})
            # a create or a start answers in place of 200 (MCP answers a request's 200 beside a notification's 202)
            if (any(code in extra for code in ("201", "202", "204")) and "200" in responses and method != "put"
                    and (method, path) != _MCP):
                responses.pop("200")
            for code, description in extra.items():
                if code == "201" and "content" in responses.get("200", {}):  # a create answers what an update does
                    responses[code] = {**responses["200"], "description": description}
                elif code in ("201", "202", "204", "307"):
                    responses[code] = {"description": description}
                else:
                    responses[code] = _error_response(description or _WHY[code])
            if path == "/v1/health":
                operation["security"] = []
                continue
            for code in ("400", "401", "403"):  # any call may be malformed, unauthenticated, or not its key's
                responses[code] = _error_response(_WHY[code])
            if "{" in path:  # what a path names may not exist (or be another account's)
                responses.setdefault("404", _error_response(_WHY["404"]))
            responses["429"] = {**_error_response(_WHY["429"]), "headers": _RETRY_AFTER}  # and over a rate limit
            # and, on AWS, storage throttling or failing past the client's retries: nothing was changed
            responses["503"] = {**_error_response(_WHY["503"]), "headers": _RETRY_AFTER}
            if method in ("put", "post"):
                responses["413"] = _error_response(_WHY["413"])
            if (method, path) == _MCP:
                operation["requestBody"] = _MCP_BODY
                responses.update(_mcp_refusals())
            if (method, path) == _APPEND:
                operation["requestBody"] = _append_body(schemas)
            if path == "/v1/memories/{memory}/entries/{name}" and method in ("put", "delete"):
                operation.setdefault("parameters", []).extend(_CONDITIONAL_HEADERS)
            _constrain_path_parameters(operation)
            _omittable_body(operation)
    type_responses(spec)
    spec["paths"].update(link_paths())
    return spec


def _omittable_body(operation: dict[str, Any]) -> None:
    """An optional body is the body's schema, not a union with null: a client generated from the document then
    leaves the body out when it is not given (``openapi-python-client`` sent its unset marker as JSON)."""
    body = operation.get("requestBody")
    if body is None or body.get("required"):
        return
    for media in body.get("content", {}).values():
        variants = media.get("schema", {}).get("anyOf")
        if variants is not None:
            kept = [variant for variant in variants if variant.get("type") != "null"]
            if len(kept) == 1:
                media["schema"] = kept[0]


def _constrain_path_parameters(operation: dict[str, Any]) -> None:
    """The names' rules (domain/rules.py) in the schemas of the path parameters and of the query parameters that
    name a user or a conversation."""
    rules = {"path": PATH_PARAMETER_RULES, "query": QUERY_PARAMETER_RULES}
    for parameter in operation.get("parameters", []):
        rule = rules.get(parameter.get("in", ""), {}).get(parameter["name"])
        if rule is not None:  # (a query parameter is sent or not: never null)
            schema = {key: value for key, value in parameter.get("schema", {}).items() if key != "anyOf"}
            parameter["schema"] = {**schema, **rule}


def _name_file_paths(spec: dict[str, Any]) -> None:
    """The file routes match the rest of the URL with a pattern (api/routes/workspaces.py): show it as ``{path}``."""
    paths = spec.get("paths", {})
    for rule in [p for p in paths if p.endswith("/files/[\\s\\S]+")]:
        operations = paths.pop(rule)
        binary = {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}
        for method, operation in operations.items():
            operation.setdefault("parameters", []).append(_FILE_PATH_PARAMETER)
            if "operationId" in operation:  # named for {path}, not the pattern's characters
                operation["operationId"] = operation["operationId"].replace("___s_S___", "__path__")
            if method == "put":
                operation["requestBody"] = {"required": True, "content": binary,
                                            "description": "The file's bytes, of any type (at most 4 MiB)"}
            if method == "get":
                operation.setdefault("responses", {})["200"] = {
                    "description": "The file's bytes, with its type from its name",
                    # bytes (a typed client reads them as a file), whatever type the name gives them
                    "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
                                "*/*": {"schema": {"type": "string", "format": "binary"}}}}
        paths[rule.replace("[\\s\\S]+", "{path}")] = operations


def base_path(event_path: str, request_path: str | None) -> str:
    """Where the API's paths start for this caller: API Gateway's ``requestContext.path`` carries the stage (or a
    custom domain's base path) before the path the resolver routes (``/prod/v1/docs`` for ``/v1/docs``)."""
    if request_path and request_path != event_path and request_path.endswith(event_path):
        return request_path[: -len(event_path)] or "/"
    return "/"


@cache
def document_json(app: APIGatewayRestResolver, base_path: str = "/") -> str:
    return json.dumps(document(app, base_path))


@cache
def swagger_html(app: APIGatewayRestResolver, base_path: str = "/") -> str:
    from aws_lambda_powertools.event_handler.openapi import swagger_ui
    from aws_lambda_powertools.event_handler.openapi.swagger_ui import generate_swagger_html

    assets = Path(swagger_ui.__file__).parent
    return generate_swagger_html(
        document_json(app, base_path).replace("</", "<\\/"),
        (assets / "swagger-ui-bundle.min.js").read_text(encoding="utf-8"),
        (assets / "swagger-ui.min.css").read_text(encoding="utf-8"),
        "",  # the assets are inlined: the page needs no network
        None,
    )
