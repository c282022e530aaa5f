"""The API's resolver and the Lambda entry point (also what the local server calls).

Order of checks for every request: a header that may come once sent twice (400, ``limits.SINGLE_HEADERS``),
body size (413), then the key (401; on the local server its rate limits too, 429), then the JSON of the body
(400, ``json_body``), then routing and validation (404/400), then the service. Errors of every kind leave in
the SPEC §10 shape ``{"error": {"code", "message", ...}}``.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)
from aws_lambda_powertools.utilities.typing import LambdaContext

from ..adapters.aws.failures import is_transient
from ..bootstrap import Container, get_container
from ..console import PREFIX as CONSOLE
from ..console import asset, is_console_path, security_headers
from ..domain.errors import (
    AgentmemError,
    InvalidError,
    MethodNotAllowedError,
    NotFoundError,
    UnauthorizedError,
    UnavailableError,
)
from ..domain.models import Principal
from ..invocation import entry_point, log_keys
from ..observability import count, count_request, logger
from .context import pending_usage
from .json_body import declared_content_type, field_name, forget_json_body, resolver_json_body, screen_json_body
from .limits import SINGLE_HEADERS, is_file_write, oversized
from .resolver import ApiResolver
from .routes import agents, conversations, entries, keys, mcp, memories, system, tools, workspaces

PUBLIC_PATHS = frozenset({"/v1/health", "/v1/openapi.json", "/v1/docs"})
TRANSIENT_RETRY_AFTER_S = 1  # a 503 for AWS throttling: the client's own retries already waited seconds



def _encoded(value: Any) -> Any:
    """What an answer holds besides JSON's values (a Decimal from DynamoDB, a date), as Powertools encodes it."""
    from aws_lambda_powertools.event_handler.openapi.encoders import jsonable_encoder

    return jsonable_encoder(value)


# one encoder for every answer: json.dumps with any argument of its own builds a JSONEncoder per call. An answer
# is a tree the presenters build (no value inside itself), so no check for one is made on each of its values.
_dumps = json.JSONEncoder(separators=(",", ":"), default=_encoded, check_circular=False).encode


def answer_body(body: Any) -> Any:
    """A JSON answer's body as it leaves: the presenters' values as JSON text; bytes (a workspace file that its
    name types as JSON) as they are, which leave base64-encoded like any file's."""
    return body if isinstance(body, bytes) else _dumps(body)


# Validation is api/validation.py's, planned once per route (Powertools' own re-reads each route's signature on
# every request, and validates the answer again), run by the resolver before it calls the route
# (api/resolver.py); answers are the presenters' JSON values
app = ApiResolver(json_body_deserializer=resolver_json_body, serializer=answer_body)
for module in (system, keys, memories, entries, agents, conversations, workspaces, tools, mcp):
    app.include_router(module.router)


# the document's modules (and Powertools' models of one) are imported by the first request for it
@app.get("/v1/openapi.json", include_in_schema=False)
def openapi_document() -> Response[str]:
    from . import openapi

    body = openapi.document_json(app, _base_path())
    return Response(status_code=200, content_type=content_types.APPLICATION_JSON, body=body)


@app.get("/v1/docs", include_in_schema=False)
def swagger_ui() -> Response[str]:
    from . import openapi

    return Response(status_code=200, content_type="text/html", body=openapi.swagger_html(app, _base_path()))


# the console's files (agentmem/console): public like the docs, outside the OpenAPI document
_STAGE_PATH = re.compile(r"(/[\w.~-]+)*")


@app.get("/", include_in_schema=False)
def root() -> Response[str]:
    # behind API Gateway the stage (or a custom domain's base path) comes before the path: /prod and /prod/ lead
    # to /prod/console (a relative "console" from /prod would leave the stage out)
    stage = str((app.current_event.get("requestContext") or {}).get("path") or "/").rstrip("/")
    if not _STAGE_PATH.fullmatch(stage):  # never a Location of another host (//elsewhere)
        stage = ""
    return Response(status_code=302, body="", headers={"Location": stage + CONSOLE,
                                                       "Cache-Control": "no-cache"})


@app.get(CONSOLE, include_in_schema=False)
def console_page() -> Response[str]:
    if app.current_event.path.endswith("/"):  # /console/: the page's relative links need /console
        return Response(status_code=301, body="", headers={"Location": "../" + CONSOLE.strip("/")})
    return _console_file("index.html")


@app.get(CONSOLE + "/<name>", include_in_schema=False)
def console_file(name: str) -> Response[str]:
    return _console_file(name)


def _console_file(name: str) -> Response[str]:
    found = asset(name) if name != "index.html" or app.current_event.path.rstrip("/") == CONSOLE else None
    if found is None:
        raise NotFoundError(f"no such console file: {name}")
    headers = {**security_headers(get_container().settings), "ETag": found.etag}
    if app.current_event.headers.get("if-none-match") == found.etag:
        return Response(status_code=304, body="", headers=headers)
    return Response(status_code=200, content_type=found.content_type, body=found.body, headers=headers)


def _base_path() -> str:
    from . import openapi

    event = app.current_event
    return openapi.base_path(event.path, (event.get("requestContext") or {}).get("path"))


def error_body(error: AgentmemError) -> str:
    return json.dumps({"error": error.to_dict()})


def error_response(error: AgentmemError) -> Response[str]:
    if error.status >= 500 and error.status != 501:  # 501: a feature not served yet, not a failure
        logger.exception("service error")
    headers = {"Retry-After": str(error.details["retry_after"])} if "retry_after" in error.details else None
    return Response(status_code=error.status, content_type=content_types.APPLICATION_JSON, body=error_body(error),
                    headers=headers)


@app.exception_handler(AgentmemError)
def handle_agentmem_error(error: AgentmemError) -> Response[str]:
    return error_response(error)


@app.exception_handler(RequestValidationError)
def handle_validation_error(error: RequestValidationError) -> Response[str]:
    return error_response(validation_to_invalid(error))


NOT_JSON = InvalidError("the body must be JSON (Content-Type: application/json)", field="body")


@app.exception_handler(RequestUnsupportedContentType)
def handle_unsupported_content_type(_: RequestUnsupportedContentType) -> Response[str]:
    return error_response(NOT_JSON)


# characters no agent, memory or entry name, conversation key or user id may hold; a path segment with one
# matches no route, and deserves a 400 saying why rather than a 404 (a lone surrogate: a percent-escape of a
# byte that is not UTF-8, as the local server reads it)
_UNNAMEABLE = re.compile(r'[\x00-\x1f\x7f"\\`#?\ud800-\udfff]')


@app.not_found
def handle_not_found(_: Exception) -> Response[str]:
    event = app.current_event
    bad = _UNNAMEABLE.search(event.path)
    if bad is not None:
        return error_response(InvalidError(
            f"the URL path holds {bad.group()!r}, which no name, key or user id may hold", field="path"
        ))
    methods = {route.method for route in app._static_routes + app._dynamic_routes if route.rule.match(event.path)}
    allowed = sorted(methods | ({"HEAD"} if "GET" in methods else set()))
    if allowed:
        response = error_response(MethodNotAllowedError(
            f"{event.http_method} is not served on {event.path}; use {', '.join(allowed)}", allowed=allowed
        ))
        response.headers["Allow"] = ", ".join(allowed)
        return response
    return error_response(NotFoundError(f"no such resource: {event.http_method} {event.path}"))


@app.exception_handler(Exception)
def handle_unexpected(error: Exception) -> Response[str]:
    if is_transient(error):  # AWS throttling or failing for a moment, past the client's retries: not our failure
        logger.warning("AWS is busy or failing", exc_info=error)
        count("TransientFailures")
        return error_response(UnavailableError(
            "the service's storage is busy or failing for a moment; nothing was changed: retry the request",
            retry_after=TRANSIENT_RETRY_AFTER_S,
        ))
    logger.exception("unexpected error")
    count("UnexpectedErrors")
    body = {"error": {"code": "internal", "message": "the service failed; the request may be retried"}}
    return Response(status_code=500, content_type=content_types.APPLICATION_JSON, body=json.dumps(body))


def validation_to_invalid(error: RequestValidationError) -> InvalidError:
    """Pydantic's first complaint, in words that name the field."""
    problems = error.errors()
    if not problems:
        return InvalidError("the request is not valid")
    first = problems[0]
    # the location starts with where the value was (body, query, path, header); a body field may be named "path"
    location = list(first.get("loc", ()))
    if location and location[0] in ("body", "query", "path", "header"):
        location = location[1:]
    field = field_name(location)
    kind = first.get("type", "")
    if kind == "json_invalid":
        return InvalidError("the body is not valid JSON", field="body")
    if kind == "extra_forbidden":
        return InvalidError(f"unknown field {field!r}", field=field)
    if kind == "unknown_query_parameter":
        known = first.get("ctx", {}).get("known") or []
        takes = f"it takes {', '.join(known)}" if known else "it takes none"
        return InvalidError(f"unknown query parameter {field!r}: {takes}", field=field)
    if kind == "missing":
        if field == "body":
            return InvalidError("a JSON body is required", field="body")
        return InvalidError(f"{field} is required", field=field)
    return InvalidError(f"{field}: {first.get('msg', 'is not valid')}", field=field)


def _body_size(event: dict[str, Any]) -> int:
    body = event.get("body") or ""
    if event.get("isBase64Encoded"):
        return len(body) * 3 // 4 - body[-2:].count("=")  # the padding stands for no bytes
    return len(body.encode("utf-8")) if isinstance(body, str) else len(body)


def _proxy_error(error: AgentmemError) -> dict[str, Any]:
    headers = {"Content-Type": content_types.APPLICATION_JSON}
    if "retry_after" in error.details:  # a 429 (or a 503) says when to come back
        headers["Retry-After"] = str(error.details["retry_after"])
    return {
        "statusCode": error.status,
        "headers": headers,
        "body": error_body(error),
        "isBase64Encoded": False,
    }


def _default_to_json(event: dict[str, Any]) -> None:
    """The API's bodies are JSON: read them as JSON when the client did not say (curl -d says form)."""
    if event.get("body") and declared_content_type(event) in ("", "application/x-www-form-urlencoded"):
        _set_content_type(event, content_types.APPLICATION_JSON)


def _set_content_type(event: dict[str, Any], value: str) -> None:
    headers = event.get("headers") or {}
    for name in [k for k in headers if k.lower() == "content-type"]:
        del headers[name]
    event["headers"] = headers
    headers["Content-Type"] = value
    if event.get("multiValueHeaders") is not None:
        multi = {k: v for k, v in event["multiValueHeaders"].items() if k.lower() != "content-type"}
        multi["Content-Type"] = [value]
        event["multiValueHeaders"] = multi


def _principal_from_authorizer(event: dict[str, Any]) -> Any:
    """On AWS the API-key authorizer has already authenticated the call; trust its context."""
    found = (event.get("requestContext") or {}).get("authorizer") or {}
    if not found.get("account_id"):
        return None
    return Principal(
        account_id=found["account_id"], key_id=found.get("key_id", ""), kind=found.get("kind", "account"),
        user_id=found.get("user_id") or None,
    )


def _header(event: dict[str, Any], lowered_name: str) -> Any:
    """A request header's value, its name in any case (None when not sent; of two names that differ in case
    only, the later)."""
    found = None
    for name, value in (event.get("headers") or {}).items():
        if name.lower() == lowered_name:
            found = value
    return found


def _authenticate(container: Container, event: dict[str, Any], *, admit: bool = True) -> Principal:
    """The caller, from its key, within the local server's rate limits when it has them: a source whose
    invalid keys used up its budget is refused first (429), a presented key that is not valid counts against
    its source, and a valid one takes its key's and its account's token (429 when either has none; with
    ``admit`` False, none is taken: the request is only screened)."""
    authorization = _header(event, "authorization")
    limiter = container.rate_limiter
    if limiter is None:
        return container.keys.authenticate(authorization)
    source = str(((event.get("requestContext") or {}).get("identity") or {}).get("sourceIp") or "")
    limiter.check_source(source)
    try:
        principal = container.keys.authenticate(authorization)
    except UnauthorizedError:
        if authorization:  # a guess; no key at all guesses nothing
            limiter.failed(source)
        raise
    if admit:
        limiter.admit(principal)
    return principal


def answer_before_body(event: dict[str, Any], size: int, context: LambdaContext) -> dict[str, Any] | None:
    """The refusal the handler gives a request whatever its body of ``size`` bytes (``event`` is without it):
    413 for the size, 401 for the key (or the 429 of a source whose invalid keys used up its budget), 404 or
    405 for the route; None when the body is needed. The local server asks before it reads a body still on its
    way, so a client without a valid key holds no connection while a slow body comes."""
    with _ONE_EVENT_AT_A_TIME:
        container = get_container()
        app.context.clear()
        path, method = event.get("path") or "", event.get("httpMethod") or ""
        refused = _repeated_header(event) or oversized(method, path, size, container.settings.max_body_bytes)
        if refused is None and path not in PUBLIC_PATHS and _principal_from_authorizer(event) is None:
            try:
                _authenticate(container, event, admit=False)  # the handler admits it (a token) once it runs
            except AgentmemError as error:
                refused = error
        if refused is not None:
            return _proxy_error(refused)
        route_path = app._remove_prefix(path)
        if any(route.rule.match(route_path) for route in app._routes_of(method.upper(), route_path)):
            return None
        return app.resolve(event, context)  # no route runs: handle_not_found's 404 or 405


_SINGLE_LOWERED = frozenset(name.lower() for name in SINGLE_HEADERS)


def _repeated_header(event: dict[str, Any]) -> AgentmemError | None:
    """The 400 for a header of ``SINGLE_HEADERS`` sent twice (API Gateway puts the last in ``headers``, all of
    them in ``multiValueHeaders``, a name's cases apart)."""
    sent: dict[str, int] = {}
    for name, values in (event.get("multiValueHeaders") or {}).items():
        lowered = name.lower()
        if lowered in _SINGLE_LOWERED:  # (only those are counted)
            sent[lowered] = sent.get(lowered, 0) + len(values or ())
    if not sent:
        return None
    for name in SINGLE_HEADERS:
        if sent.get(name.lower(), 0) > 1:
            return InvalidError(f"the request has {sent[name.lower()]} {name} headers: send it once", field=name)
    return None


def _handle(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    container = get_container()
    app.context.clear()
    repeated = _repeated_header(event)
    if repeated is not None:
        return _proxy_error(repeated)
    path = event.get("path") or ""
    method = event.get("httpMethod") or ""
    has_body = bool(event.get("body"))
    refused = oversized(method, path, _body_size(event) if has_body else 0, container.settings.max_body_bytes)
    if refused is not None:
        return _proxy_error(refused)
    if is_file_write(method, path):
        _set_content_type(event, "application/octet-stream")  # a file's bytes, whatever the client called them
    elif has_body and declared_content_type(event).startswith("multipart/"):
        return _proxy_error(NOT_JSON)  # the resolver would parse a form itself (and fail on one without a boundary)
    elif has_body:
        _default_to_json(event)
    if path not in PUBLIC_PATHS and not is_console_path(path):
        try:
            principal = _principal_from_authorizer(event)
            if principal is None:
                principal = _authenticate(container, event)
        except AgentmemError as error:
            return _proxy_error(error)
        app.append_context(principal=principal)
        log_keys(account_id=principal.account_id)
    try:
        screen_json_body(event)  # every JSON body, whatever the route: what no reader downstream can hold is a 400
    except AgentmemError as error:
        return _proxy_error(error)
    pending_usage.set(None)
    try:
        result = app.resolve(event, context)
    finally:
        forget_json_body()
    usage = pending_usage.get()
    if usage is not None and int(result.get("statusCode", 500)) < 400:
        account_id, operation, billable = usage
        container.usage.record(account_id, operation, billable=billable)
        count_request(operation, billable)
    return result


_instrumented = entry_point(_handle)

# Powertools keeps the current event, caller and metrics in process-wide state, and Lambda runs one
# event at a time per process. Callers that share a process between threads (the local server, the
# SDK's in-process transport) are served one event at a time too, or one would run with another's event.
_ONE_EVENT_AT_A_TIME = threading.Lock()


def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """The API's Lambda entry point (``functions/api/handler.py`` re-exports it)."""
    with _ONE_EVENT_AT_A_TIME:
        result: dict[str, Any] = _instrumented(event, context)
        return result
