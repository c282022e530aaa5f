"""MCP's stateless streamable-HTTP transport, answering JSON, for one agent's tools: the protocol of ``POST /v1/mcp``.

Why it is written here rather than taken from the ``mcp`` SDK (which the stdio server still uses): importing the
SDK's server costs about half a second of every cold start of the MCP function (``mcp_types`` builds the pydantic
models of two protocol eras at import, and ``mcp/__init__`` brings the SDK's client, server, starlette, uvicorn
and httpx), and deferring the import only moves that cost to the first request. What a stateless server that
answers JSON must do is a few hundred lines of plain JSON-RPC, and the SDK's own client proves it conformant in
the tests (``tests/integration/test_mcp.py`` in both eras, ``tests/unit/test_mcp_protocol.py`` against the
SDK's models and rules). It imports nothing beyond the standard library but the API's own reading of JSON.

Both eras the SDK's client speaks are served, as the SDK's ``StreamableHTTPSessionManager`` (stateless, JSON
answers) served them before:

- the handshake era (protocol versions 2024-11-05 to 2025-11-25): ``initialize`` answers the client's version
  when it is one of ours, else the newest; ``notifications/initialized``, any other notification and a client's
  response are accepted with 202 and no body; ``ping``, ``tools/list``, ``tools/call``. A JSON-RPC error of a
  method (unknown method -32601, bad params -32602) is an HTTP 200; a body that is not one JSON-RPC message is a
  400 (parse error -32700, invalid request -32600).
- the per-request era (2026-07-28), chosen by an ``MCP-Protocol-Version`` header that is not a handshake
  version: no handshake; each request carries its protocol version and the client's capabilities in
  ``params._meta`` (-32602 without them), and its ``MCP-Protocol-Version``, ``Mcp-Method`` and (``tools/call``)
  ``Mcp-Name`` headers must agree with the body (-32020); an unsupported version is -32022 naming ours.
  ``server/discover``, ``tools/list`` and ``tools/call`` are served; results carry ``resultType`` and the
  server's identity in ``_meta``; errors take the HTTP status the SDK maps them to (-32601 → 404, the
  request's own faults → 400).

On every request: ``Content-Type`` must be ``application/json`` (415), ``Accept`` must admit JSON (406).
Tool failures are tool results (``isError``), as MCP asks; anything else a tool raises is the API's error.
``Mcp-Param-*`` headers are not checked: none of the tools' schemas declares one (``x-mcp-header``).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from .. import __version__

SERVER_NAME = "agentmem"
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")  # oldest to newest
MODERN_VERSIONS = ("2026-07-28",)  # the per-request envelope, no handshake
LATEST_HANDSHAKE_VERSION = HANDSHAKE_VERSIONS[-1]

# JSON-RPC's error codes, and MCP's own
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
HEADER_MISMATCH = -32020
UNSUPPORTED_PROTOCOL_VERSION = -32022
# the HTTP status of an error in the per-request era (the SDK's table); any other code is answered 200
MODERN_ERROR_STATUS = {PARSE_ERROR: 400, INVALID_REQUEST: 400, INVALID_PARAMS: 400, HEADER_MISMATCH: 400,
                       UNSUPPORTED_PROTOCOL_VERSION: 400, METHOD_NOT_FOUND: 404}

VERSION_HEADER = "mcp-protocol-version"
METHOD_HEADER = "mcp-method"
NAME_HEADER = "mcp-name"
_ROUTING_HEADERS = (VERSION_HEADER, METHOD_HEADER, NAME_HEADER)
# the per-request envelope's keys in params._meta
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
CAPABILITIES: dict[str, Any] = {"tools": {"listChanged": False}}
CACHE_HINT: dict[str, Any] = {"ttlMs": 0, "cacheScope": "private"}  # tools/list and server/discover: per caller

_BASE64_VALUE = re.compile(r"^=\?base64\?(?P<payload>.*)\?=$")


@dataclass(frozen=True)
class ToolAnswer:
    """A tool call's answer: the text a model reads, the structured result, and whether it failed."""

    text: str
    structured: dict[str, Any] | None = None
    is_error: bool = False


@dataclass(frozen=True)
class Tools:
    """What the server serves: one agent's tools, listed in MCP's format and run by name."""

    agent: str
    list_tools: Callable[[], list[dict[str, Any]]]  # [{"name", "description", "inputSchema"}]
    call_tool: Callable[[str, dict[str, Any]], ToolAnswer]


@dataclass
class HttpAnswer:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


def instructions(agent: str) -> str:
    return (
        f"The memory of agent {agent!r} (agentmem). Search it before answering when something learned earlier "
        "may matter, read the entries you need, and save what you are asked to remember or learn that lasts."
    )


def server_info() -> dict[str, str]:
    return {"name": SERVER_NAME, "version": __version__}


class RpcError(Exception):
    """A JSON-RPC error answer: its code, message and data, the request's id, and the HTTP status it leaves with
    (``None``: the era's choice for the code)."""

    def __init__(self, code: int, message: str, *, data: Any = None, request_id: Any = None,
                 status: int | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data, self.request_id, self.status = code, message, data, request_id, status


def serve(headers: Iterable[tuple[str, str]], body: bytes, tools: Tools) -> HttpAnswer:
    """Answer one ``POST`` of MCP's streamable HTTP transport (stateless, JSON answers).

    ``headers`` are the request's header lines as sent (a name may repeat); ``body`` its bytes.
    """
    lines = [(name.lower(), value) for name, value in headers]
    folded = dict(lines)
    try:
        _check_media_types(folded)
        version_header = folded.get(VERSION_HEADER)
        if version_header is not None and version_header not in HANDSHAKE_VERSIONS:
            return _serve_modern(lines, folded, body, tools)
        return _serve_handshake(body, tools)
    except RpcError as error:
        return _error_answer(error, modern=False)


# -- the transport's rules ------------------------------------------------------------------------------

def _media_type(value: str) -> str:
    return value.split(";", 1)[0].strip().lower()


def _check_media_types(headers: Mapping[str, str]) -> None:
    if _media_type(headers.get("content-type", "")) != "application/json":
        raise RpcError(INVALID_REQUEST, "Unsupported Media Type: Content-Type must be application/json", status=415)
    accepted = {_media_type(kind) for kind in headers.get("accept", "").split(",")}
    if not accepted & {"application/json", "application/*", "*/*"}:
        raise RpcError(INVALID_REQUEST, "Not Acceptable: Client must accept application/json", status=406)


def _parse(body: bytes) -> Any:
    """The message, read as the API reads every JSON body (``api/json_body.py``: what is not Unicode text, a number
    no JSON has, a name twice in one object, too deep, is refused there, naming where it is)."""
    from ..api.json_body import read_json
    from ..domain.errors import InvalidError

    try:  # UTF-8 as it is (a byte order mark is not JSON's), then JSON
        return read_json(body.decode("utf-8"))
    except ValueError as error:  # UnicodeDecodeError and json's JSONDecodeError are ValueErrors
        raise RpcError(PARSE_ERROR, f"Parse error: {error}", status=400) from None
    except InvalidError as error:
        raise RpcError(PARSE_ERROR, f"Parse error: {error.message}", data={"field": error.details.get("field")},
                       status=400) from None


def _is_id(value: Any) -> TypeGuard[str | int]:
    """A request's id is a string or an integer (JSON-RPC allows a fraction, MCP does not; null is not an id)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _request_id(message: Mapping[str, Any]) -> str | int:
    found = message["id"]
    if _is_id(found):
        return found
    raise RpcError(INVALID_REQUEST, "Invalid Request: the id must be a string or an integer", status=400)


def _envelope_problem(message: Any) -> str | None:
    """Why ``message`` is not one JSON-RPC 2.0 request, notification or response, or None when it is one."""
    if isinstance(message, list):
        return "a batch is not accepted: send one JSON-RPC message per request"
    if not isinstance(message, dict):
        return "the body must be one JSON-RPC message (an object)"
    if message.get("jsonrpc") != "2.0":
        return 'the message must carry "jsonrpc": "2.0"'
    if "method" in message:
        if not isinstance(message["method"], str):
            return "the method must be a string"
        return None
    if "id" not in message or ("result" in message) == ("error" in message):
        return "the message is neither a request (method), a notification, nor a response (id with result or error)"
    return None


def _response_problem(message: Mapping[str, Any]) -> str | None:
    """Why a client's response (a reply to a request of ours) is malformed, or None."""
    found = message["id"]
    if "result" in message:
        if not _is_id(found) or not isinstance(message["result"], dict):
            return "a response carries the request's id (a string or an integer) and an object as its result"
        return None
    error = message["error"]
    if not (_is_id(found) or found is None) or not isinstance(error, dict):
        return "an error response carries the request's id and an error object"
    code, text = error.get("code"), error.get("message")
    if not isinstance(code, int) or isinstance(code, bool) or not isinstance(text, str):
        return "an error object carries an integer code and a message"
    return None


# -- the handshake era ----------------------------------------------------------------------------------

def _serve_handshake(body: bytes, tools: Tools) -> HttpAnswer:
    message = _parse(body)
    problem = _envelope_problem(message)
    if problem is not None:
        raise RpcError(INVALID_REQUEST, f"Invalid Request: {problem}", status=400)
    if "method" not in message:  # the client's response to a request of ours (we send none): accepted
        problem = _response_problem(message)
        if problem is not None:
            raise RpcError(INVALID_REQUEST, f"Invalid Request: {problem}", status=400)
        return HttpAnswer(202)
    params = message.get("params")
    if params is not None and not isinstance(params, dict):
        request_id = _request_id(message) if "id" in message else None
        raise RpcError(INVALID_PARAMS, "Invalid params: params must be an object", request_id=request_id, status=400)
    if "id" not in message:  # a notification: nothing to answer (initialized, cancelled, anything else)
        return HttpAnswer(202)
    request_id = _request_id(message)
    try:
        result = _handshake_result(message["method"], params or {}, tools)
    except RpcError as error:
        error.request_id = request_id
        return _error_answer(error, modern=False)
    return _json_answer(200, {"jsonrpc": "2.0", "id": request_id, "result": result})


def _handshake_result(method: str, params: dict[str, Any], tools: Tools) -> dict[str, Any]:
    if method == "initialize":
        requested = params.get("protocolVersion")
        client = params.get("clientInfo")
        if (not isinstance(requested, str) or not isinstance(params.get("capabilities"), dict)
                or not isinstance(client, dict) or not isinstance(client.get("name"), str)
                or not isinstance(client.get("version"), str)):
            raise RpcError(INVALID_PARAMS, "Invalid request parameters: initialize takes protocolVersion (a "
                                           "string), capabilities (an object) and clientInfo (name and version)",
                           data="")
        return {
            "protocolVersion": requested if requested in HANDSHAKE_VERSIONS else LATEST_HANDSHAKE_VERSION,
            "capabilities": CAPABILITIES, "serverInfo": server_info(), "instructions": instructions(tools.agent),
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        return _list_tools(params, tools)
    if method == "tools/call":
        return _call_tool(params, tools)
    raise RpcError(METHOD_NOT_FOUND, "Method not found", data=method)


def _list_tools(params: Mapping[str, Any], tools: Tools) -> dict[str, Any]:
    cursor = params.get("cursor")
    if cursor is not None and not isinstance(cursor, str):
        raise RpcError(INVALID_PARAMS, "Invalid request parameters: the cursor must be a string", data="")
    return {"tools": tools.list_tools()}  # one page: an agent has a handful of tools


def _call_tool(params: Mapping[str, Any], tools: Tools) -> dict[str, Any]:
    name, arguments = params.get("name"), params.get("arguments")
    if not isinstance(name, str):
        raise RpcError(INVALID_PARAMS, "Invalid request parameters: tools/call needs the tool's name", data="")
    if arguments is not None and not isinstance(arguments, dict):
        raise RpcError(INVALID_PARAMS, "Invalid request parameters: the arguments must be an object", data="")
    answer = tools.call_tool(name, arguments or {})
    result: dict[str, Any] = {"content": [{"type": "text", "text": answer.text}], "isError": answer.is_error}
    if answer.structured is not None:
        result["structuredContent"] = answer.structured
    return result


# -- the per-request era --------------------------------------------------------------------------------

def _serve_modern(lines: list[tuple[str, str]], headers: Mapping[str, str], body: bytes, tools: Tools) -> HttpAnswer:
    requested = headers.get(VERSION_HEADER, "")
    try:
        message = _parse(body)
    except RpcError as error:
        return _error_answer(error, modern=True)
    not_one = RpcError(INVALID_REQUEST, "Body must be a single JSON-RPC request or notification object")
    if isinstance(message, dict) and "id" not in message:  # a notification: acknowledged and dropped
        params = message.get("params")
        if (_envelope_problem(message) is not None or "method" not in message
                or (params is not None and not isinstance(params, dict))):
            return _error_answer(not_one, modern=True)
        if requested not in MODERN_VERSIONS:
            return _error_answer(_unsupported(requested), modern=True)
        return HttpAnswer(202)
    if _envelope_problem(message) is not None or "method" not in message:  # a batch, a response, a bad envelope
        return _error_answer(not_one, modern=True)
    params = message.get("params")
    try:
        request_id = _request_id(message)
    except RpcError:
        return _error_answer(not_one, modern=True)
    if params is not None and not isinstance(params, dict):
        return _error_answer(not_one, modern=True)
    method: str = message["method"]
    try:
        _check_envelope(method, params or {}, lines, headers)
        result = _modern_result(method, params or {}, tools)
    except RpcError as error:
        error.request_id = request_id
        return _error_answer(error, modern=True)
    result = {**result, "resultType": "complete", "_meta": {META_SERVER_INFO: server_info()}}
    return _json_answer(200, {"jsonrpc": "2.0", "id": request_id, "result": result})


def _unsupported(requested: str) -> RpcError:
    return RpcError(UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version",
                    data={"supported": list(MODERN_VERSIONS), "requested": requested})


def _check_envelope(
    method: str, params: Mapping[str, Any], lines: list[tuple[str, str]], headers: Mapping[str, str]
) -> None:
    """The per-request era's rungs, in the SDK's order: each header once, the envelope in ``params._meta``,
    the headers agreeing with the body, a version we serve."""
    for name in _ROUTING_HEADERS:
        if sum(1 for line, _ in lines if line == name) > 1:
            raise RpcError(HEADER_MISMATCH, f"{name} header appears more than once")
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        raise RpcError(INVALID_PARAMS, f"params._meta must be an object carrying the required {META_VERSION!r} "
                                       f"and {META_CAPABILITIES!r} envelope keys")
    missing = [key for key in (META_VERSION, META_CAPABILITIES) if key not in meta]
    if missing:
        raise RpcError(INVALID_PARAMS, f"params._meta is missing the required envelope key(s): {', '.join(missing)}")
    version = meta[META_VERSION]
    if headers.get(VERSION_HEADER) != version:
        raise RpcError(HEADER_MISMATCH,
                       f"{VERSION_HEADER} header does not match the request envelope's protocol version")
    if headers.get(METHOD_HEADER) != method:
        raise RpcError(HEADER_MISMATCH, f"{METHOD_HEADER} header does not match the request body's method")
    tool = params.get("name") if method == "tools/call" else None
    if tool is not None and _header_value(headers.get(NAME_HEADER)) != tool:
        raise RpcError(HEADER_MISMATCH, f"{NAME_HEADER} header does not match the request body's 'name' parameter")
    if not isinstance(version, str):
        raise RpcError(INVALID_PARAMS, "the protocol-version envelope value must be a string")
    if version not in MODERN_VERSIONS:
        raise _unsupported(version)


def _header_value(value: str | None) -> str | None:
    """A header's value, with MCP's ``=?base64?…?=`` form (for a value a header cannot carry) decoded; None when
    that form is malformed, so it matches nothing."""
    match = _BASE64_VALUE.fullmatch(value) if value is not None else None
    if match is None:
        return value
    payload = match.group("payload")
    try:
        decoded = base64.b64decode(payload, validate=True)
        if base64.b64encode(decoded).decode("ascii") != payload:  # only the canonical form
            return None
        return decoded.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


def _modern_result(method: str, params: Mapping[str, Any], tools: Tools) -> dict[str, Any]:
    if method == "server/discover":
        return {"supportedVersions": list(MODERN_VERSIONS), "capabilities": CAPABILITIES,
                "instructions": instructions(tools.agent), **CACHE_HINT}
    if method == "tools/list":
        return {**_list_tools(params, tools), **CACHE_HINT}
    if method == "tools/call":
        return _call_tool(params, tools)
    raise RpcError(METHOD_NOT_FOUND, "Method not found", data=method)  # ping and initialize are gone in this era


# -- answers --------------------------------------------------------------------------------------------

def _json_answer(status: int, message: dict[str, Any]) -> HttpAnswer:
    body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return HttpAnswer(status, {"Content-Type": "application/json"}, body)


def _error_answer(error: RpcError, *, modern: bool) -> HttpAnswer:
    status = error.status or (MODERN_ERROR_STATUS.get(error.code, 200) if modern else 200)
    detail: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.data is not None:
        detail["data"] = error.data
    return _json_answer(status, {"jsonrpc": "2.0", "id": error.request_id, "error": detail})
