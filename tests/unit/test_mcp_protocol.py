"""The MCP protocol of ``POST /v1/mcp`` (``agentmem.mcp_server.protocol``), written without the ``mcp`` SDK for the
cold start, checked against the SDK: its own client speaks to it in both eras (the initialize handshake, and the
per-request protocol of 2026-07-28), and every answer parses as the SDK's model of that message. The answers a
client sees are the ones the SDK's stateless, JSON-answering transport gave (compared request by request when the
route was rewritten); where they differ, a test below says how and why.

The protocol is driven directly, with a fake agent's tools, through an ``httpx2`` mock transport: no server, no
storage. ``tests/integration/test_mcp.py`` runs the same client against a real ``agentmem serve``.
"""

from __future__ import annotations

import base64
import json
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from agentmem import __version__
from agentmem.mcp_server.protocol import HttpAnswer, ToolAnswer, Tools, serve
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION, MODERN_PROTOCOL_VERSIONS

MODERN = "2026-07-28"
JSON_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
SEARCH = {"name": "memory__search", "description": "Search memory.",
          "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"],
                          "additionalProperties": False}}
READ = {"name": "memory__read", "description": "Read an entry.",
        "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}
ENVELOPE = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"}}


class FakeTools:
    """An agent's two tools: a search that finds what it was asked, and a read that finds nothing."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def tools(self) -> Tools:
        return Tools("support", lambda: [SEARCH, READ], self.call)

    def call(self, name: str, arguments: dict[str, Any]) -> ToolAnswer:
        self.calls.append((name, arguments))
        if name == "memory__search":
            return ToolAnswer(f"1. {arguments.get('query')}", {"items": [{"name": arguments.get("query")}]})
        if name == "memory__read":
            return ToolAnswer("no entry named 'x'", {"error": {"status": 404, "code": "not_found"}}, is_error=True)
        return ToolAnswer(f"no tool named {name!r}", None, is_error=True)


def post(fake: FakeTools, message: Any, *, headers: dict[str, str] | None = None, raw: bytes | None = None,
         lines: list[tuple[str, str]] | None = None) -> HttpAnswer:
    sent = {**JSON_HEADERS, **(headers or {})}
    body = raw if raw is not None else json.dumps(message).encode()
    return serve(list(sent.items()) + (lines or []), body, fake.tools())


def request(method: str, params: dict[str, Any] | None = None, request_id: Any = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, **({"params": params} if params is not None else {})}


def modern(method: str, params: dict[str, Any] | None = None, **headers: str) -> tuple[dict[str, Any], dict[str, str]]:
    """A 2026-07-28 request: the envelope in params._meta, and the headers that route it."""
    sent = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method, **headers}
    return request(method, {**(params or {}), "_meta": ENVELOPE}), sent


def post_modern(fake: FakeTools, built: tuple[dict[str, Any], dict[str, str]]) -> HttpAnswer:
    message, headers = built
    return post(fake, message, headers=headers)


def answered(answer: HttpAnswer) -> dict[str, Any]:
    assert answer.headers["Content-Type"] == "application/json"
    found: dict[str, Any] = json.loads(answer.body)
    return found


# -- the SDK's client, end to end -----------------------------------------------------------------------

@asynccontextmanager
async def sdk_client(fake: FakeTools, mode: str) -> AsyncIterator[Client]:
    """The SDK's client over streamable HTTP, its requests answered by the protocol (GET and DELETE: 405, as the
    API answers them)."""

    def handle(sent: httpx2.Request) -> httpx2.Response:
        if sent.method != "POST":
            return httpx2.Response(405, headers={"Allow": "POST"})
        answer = serve(sent.headers.multi_items(), sent.read(), fake.tools())
        return httpx2.Response(answer.status, headers=answer.headers, content=answer.body)

    async with (
        httpx2.AsyncClient(transport=httpx2.MockTransport(handle)) as http,
        Client(streamable_http_client("http://agentmem.test/v1/mcp?agent=support", http_client=http),
               mode=mode) as client,
    ):
        yield client


@pytest.mark.parametrize(("mode", "version"), [("legacy", LATEST_HANDSHAKE_VERSION), ("auto", MODERN),
                                               (MODERN, MODERN)])
def test_the_sdks_client_connects_lists_and_calls_in_either_era(mode: str, version: str) -> None:
    fake = FakeTools()

    async def scenario() -> None:
        # Given the SDK's client: the initialize handshake (legacy), server/discover (auto), or a pinned version
        async with sdk_client(fake, mode) as client:
            # Then it settles on the era's newest version, and knows the server, its tools capability, its words
            assert client.protocol_version == version
            if mode != MODERN:  # a pinned client does not ask (no handshake, no discover)
                assert client.server_info is not None
                assert (client.server_info.name, client.server_info.version) == ("agentmem", __version__)
                assert client.server_capabilities.tools is not None
                assert client.instructions is not None and "agent 'support'" in client.instructions
            # When it lists the tools, Then it gets them with their schemas
            listed = await client.list_tools()
            assert [tool.name for tool in listed.tools] == ["memory__search", "memory__read"]
            assert listed.tools[0].input_schema == SEARCH["inputSchema"]
            # When it calls one, Then the text, the structured result and the error flag come back
            found = await client.call_tool("memory__search", {"query": "plan"})
            assert not found.is_error
            assert found.structured_content == {"items": [{"name": "plan"}]}
            assert [block.text for block in found.content if isinstance(block, types.TextContent)] == ["1. plan"]
            missing = await client.call_tool("memory__read", {"name": "x"})
            assert missing.is_error
            assert missing.structured_content == {"error": {"status": 404, "code": "not_found"}}
            # When it asks for what the server does not serve, Then it is told: method not found
            with pytest.raises(MCPError) as refused:
                await client.list_prompts()
            assert refused.value.error.code == types.METHOD_NOT_FOUND

    anyio.run(scenario)
    assert fake.calls == [("memory__search", {"query": "plan"}), ("memory__read", {"name": "x"})]


def test_the_sdks_client_pings_in_the_handshake_era() -> None:
    async def scenario() -> None:
        async with sdk_client(FakeTools(), "legacy") as client:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # ping is deprecated in the newer era, served in this one
                assert await client.send_ping() is not None

    anyio.run(scenario)


# -- the handshake era ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("offered", "agreed"), [
    *[(version, version) for version in HANDSHAKE_PROTOCOL_VERSIONS],
    ("1999-01-01", LATEST_HANDSHAKE_VERSION), (MODERN, LATEST_HANDSHAKE_VERSION), ("", LATEST_HANDSHAKE_VERSION),
])
def test_initialize_answers_the_clients_version_when_it_is_ours_else_the_newest(offered: str, agreed: str) -> None:
    # Given the protocol versions the SDK's handshake knows, Then ours are the same
    assert set(HANDSHAKE_PROTOCOL_VERSIONS) | set(MODERN_PROTOCOL_VERSIONS) >= {agreed}
    # When a client offers a version
    answer = post(FakeTools(), request("initialize", {
        "protocolVersion": offered, "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}, "init-1"))
    # Then the answer is a JSON-RPC response the SDK reads as an InitializeResult, with the agreed version
    assert answer.status == 200
    reply = types.JSONRPCResponse.model_validate(answered(answer))
    assert reply.id == "init-1"
    result = types.InitializeResult.model_validate(reply.result)
    assert result.protocol_version == agreed
    assert result.server_info.name == "agentmem" and result.capabilities.tools is not None
    assert result.instructions is not None and "agent 'support'" in result.instructions


@pytest.mark.parametrize("params", [
    None, {}, {"protocolVersion": 7, "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}},
    {"protocolVersion": "2025-06-18", "capabilities": {}},
    {"protocolVersion": "2025-06-18", "clientInfo": {"name": "c", "version": "1"}},
    {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c"}},
])
def test_initialize_without_its_parameters_is_invalid_params(params: dict[str, Any] | None) -> None:
    answer = post(FakeTools(), request("initialize", params))
    # Then, as the SDK answered: -32602 for that request, in an HTTP 200 (a method's error, not the transport's)
    assert answer.status == 200
    error = types.JSONRPCError.model_validate(answered(answer))
    assert (error.id, error.error.code) == (1, types.INVALID_PARAMS)
    assert "initialize takes protocolVersion" in error.error.message


@pytest.mark.parametrize("message", [
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}},
    {"jsonrpc": "2.0", "method": "notifications/anything"},
    {"jsonrpc": "2.0", "id": 5, "result": {}},
    {"jsonrpc": "2.0", "id": 5, "error": {"code": -1, "message": "no"}},
    {"jsonrpc": "2.0", "id": None, "error": {"code": -1, "message": "no"}},
], ids=["initialized", "cancelled", "unknown-notification", "response", "error-response", "error-without-id"])
def test_a_notification_or_a_clients_response_is_accepted_with_no_body(message: dict[str, Any]) -> None:
    fake = FakeTools()
    answer = post(fake, message)
    assert (answer.status, answer.body) == (202, b"")
    assert fake.calls == []


@pytest.mark.parametrize("version", [None, *HANDSHAKE_PROTOCOL_VERSIONS])
def test_ping_tools_list_and_tools_call_answer_in_every_handshake_version(version: str | None) -> None:
    fake = FakeTools()
    headers = {"MCP-Protocol-Version": version} if version else {}
    # ping: an empty result
    assert answered(post(fake, request("ping"), headers=headers))["result"] == {}
    # tools/list: the tools, as the SDK reads them (a cursor is taken and ignored: one page)
    listed = answered(post(fake, request("tools/list", {"cursor": "next"}, 2), headers=headers))
    assert listed["id"] == 2
    assert [tool.name for tool in types.ListToolsResult.model_validate(listed["result"]).tools] == [
        "memory__search", "memory__read"]
    # tools/call: text, structured result, isError; a call without a structured result has none
    called = answered(post(fake, request("tools/call", {"name": "memory__search", "arguments": {"query": "q"}}),
                           headers=headers))["result"]
    assert called == {"content": [{"type": "text", "text": "1. q"}], "isError": False,
                      "structuredContent": {"items": [{"name": "q"}]}}
    assert types.CallToolResult.model_validate(called).structured_content == {"items": [{"name": "q"}]}
    unknown = answered(post(fake, request("tools/call", {"name": "other"}), headers=headers))["result"]
    assert unknown == {"content": [{"type": "text", "text": "no tool named 'other'"}], "isError": True}
    assert fake.calls[-1] == ("other", {})  # no arguments: an empty object


@pytest.mark.parametrize(("params", "message"), [
    (None, "needs the tool's name"), ({"arguments": {}}, "needs the tool's name"), ({"name": 5}, "needs the tool's"),
    ({"name": "memory__search", "arguments": [1]}, "arguments must be an object"),
    ({"name": "memory__search", "arguments": "q"}, "arguments must be an object"),
])
def test_tools_call_without_a_name_or_with_arguments_that_are_not_an_object_is_invalid_params(
    params: dict[str, Any] | None, message: str
) -> None:
    fake = FakeTools()
    answer = post(fake, request("tools/call", params, "c-7"))
    assert answer.status == 200
    error = types.JSONRPCError.model_validate(answered(answer))
    assert (error.id, error.error.code) == ("c-7", types.INVALID_PARAMS)
    assert message in error.error.message
    assert fake.calls == []


def test_a_cursor_that_is_not_text_is_invalid_params() -> None:
    error = answered(post(FakeTools(), request("tools/list", {"cursor": 5})))
    assert error["error"]["code"] == types.INVALID_PARAMS


@pytest.mark.parametrize("method", ["foo/bar", "", "resources/list", "prompts/list", "resources/read",
                                    "completion/complete", "logging/setLevel", "server/discover"])
def test_a_method_not_served_is_method_not_found_naming_it(method: str) -> None:
    # The SDK answered -32602 for the spec's methods we do not serve when their params were incomplete (it checked
    # them before finding no handler): a method that is not served is -32601 here, whatever its params. And
    # server/discover belongs to the newer era only.
    answer = post(FakeTools(), request(method, {}))
    assert answer.status == 200
    not_found = {"code": types.METHOD_NOT_FOUND, "message": "Method not found", "data": method}
    assert answered(answer) == {"jsonrpc": "2.0", "id": 1, "error": not_found}


def test_a_tool_that_fails_unexpectedly_is_left_to_the_api() -> None:
    # Given a tool whose service raises something that is not a tool's refusal (a storage failure)
    def broken(name: str, arguments: dict[str, Any]) -> ToolAnswer:
        raise RuntimeError("the table is gone")

    tools = Tools("support", lambda: [SEARCH], broken)
    # Then the protocol does not turn it into an answer: the API's handler answers it (503 or 500, logged)
    with pytest.raises(RuntimeError):
        serve(list(JSON_HEADERS.items()), json.dumps(request("tools/call", {"name": "memory__search"})).encode(),
              tools)


# -- what is not one JSON-RPC message --------------------------------------------------------------------

@pytest.mark.parametrize(("raw", "code"), [
    (b"{nope", types.PARSE_ERROR), (b"", types.PARSE_ERROR), (b"   ", types.PARSE_ERROR),
    (b'{"jsonrpc":"2.0","id":1,"method":"ping"} x', types.PARSE_ERROR),
    (b'\xef\xbb\xbf{"jsonrpc":"2.0","id":1,"method":"ping"}', types.PARSE_ERROR),  # a byte order mark
    (b'{"jsonrpc":"2.0","id":1,"method":"\xff"}', types.PARSE_ERROR),  # not UTF-8
    # not Unicode text: a lone surrogate (which no answer could carry back) in the id, the method, a tool's name
    (b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}', types.PARSE_ERROR),
    (b'{"jsonrpc":"2.0","id":1,"method":"\\ud800"}', types.PARSE_ERROR),
    (b'{"jsonrpc":"2.0","method":"notifications/\\udfff"}', types.PARSE_ERROR),
    (b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\\ud800"}}', types.PARSE_ERROR),
    (b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":NaN}}', types.PARSE_ERROR),  # no JSON number
    (b"null", types.INVALID_REQUEST), (b"[]", types.INVALID_REQUEST),
    (b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', types.INVALID_REQUEST),  # a batch
    (b"{}", types.INVALID_REQUEST), (b'{"jsonrpc":"2.0"}', types.INVALID_REQUEST),
    (b'{"id":1,"method":"tools/list"}', types.INVALID_REQUEST),
    (b'{"jsonrpc":"1.0","id":1,"method":"tools/list"}', types.INVALID_REQUEST),
    (b'{"jsonrpc":"2.0","id":1,"method":5}', types.INVALID_REQUEST),
    (b'{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}', types.INVALID_REQUEST),
    (b'{"jsonrpc":"2.0","id":null,"result":{}}', types.INVALID_REQUEST),
    (b'{"jsonrpc":"2.0","id":5,"error":{"code":"x"}}', types.INVALID_REQUEST),
], ids=lambda value: value.decode("utf-8", "replace")[:40] if isinstance(value, bytes) else str(value))
def test_a_body_that_is_not_one_json_rpc_message_is_a_400_with_no_id(raw: bytes, code: int) -> None:
    answer = post(FakeTools(), None, raw=raw)
    assert answer.status == 400
    error = types.JSONRPCError.model_validate(answered(answer))
    assert (error.id, error.error.code) == (None, code)


@pytest.mark.parametrize("request_id", [1.5, None, {"a": 1}, True, [1]])
def test_a_request_whose_id_is_not_a_string_or_an_integer_is_invalid_not_a_notification(request_id: Any) -> None:
    # The SDK took such a message for a notification and answered 202 with nothing: the caller never heard back
    fake = FakeTools()
    answer = post(fake, request("tools/call", {"name": "memory__search", "arguments": {"query": "q"}}, request_id))
    assert answer.status == 400
    assert answered(answer)["error"]["code"] == types.INVALID_REQUEST
    assert fake.calls == []


@pytest.mark.parametrize("request_id", ["x-1", -3, 0, 2**70])
def test_any_string_or_integer_id_comes_back_as_it_was_sent(request_id: str | int) -> None:
    assert answered(post(FakeTools(), request("ping", None, request_id)))["id"] == request_id


def test_params_that_are_not_an_object_are_invalid_params() -> None:
    answer = post(FakeTools(), request("tools/list", [1], 9))  # type: ignore[arg-type]
    assert answer.status == 400
    assert answered(answer)["id"] == 9 and answered(answer)["error"]["code"] == types.INVALID_PARAMS


# -- the transport's headers ------------------------------------------------------------------------------

@pytest.mark.parametrize("accept", ["application/json", "*/*", "application/*", "application/json;q=0.5",
                                    "APPLICATION/JSON", "text/event-stream, application/json"])
def test_an_accept_that_admits_json_is_served(accept: str) -> None:
    assert post(FakeTools(), request("ping"), headers={"Accept": accept}).status == 200


@pytest.mark.parametrize("accept", ["text/event-stream", "text/*", "text/html", ""])
def test_an_accept_without_json_is_a_406(accept: str) -> None:
    for message, headers in ((request("ping"), {}), modern("tools/list")):
        answer = post(FakeTools(), message, headers={**headers, "Accept": accept})
        assert answer.status == 406
        error = types.JSONRPCError.model_validate(answered(answer))
        assert (error.id, error.error.code) == (None, types.INVALID_REQUEST)
        assert "must accept application/json" in error.error.message


@pytest.mark.parametrize("content_type", ["application/json", "application/json; charset=utf-8", "APPLICATION/JSON"])
def test_a_json_content_type_is_served_whatever_its_case_and_parameters(content_type: str) -> None:
    # (the SDK answered "APPLICATION/JSON" with a 415: media types are case-insensitive)
    assert post(FakeTools(), request("ping"), headers={"Content-Type": content_type}).status == 200


@pytest.mark.parametrize("content_type", ["text/plain", "application/jsonx", "application/json-rpc", ""])
def test_any_other_content_type_is_a_415(content_type: str) -> None:
    # (the SDK answered a type that did not start with application/json with a plain-text 400)
    for message, headers in ((request("ping"), {}), modern("tools/list")):
        answer = post(FakeTools(), message, headers={**headers, "Content-Type": content_type})
        assert answer.status == 415
        assert answered(answer)["error"]["code"] == types.INVALID_REQUEST


def test_a_session_id_and_an_origin_are_ignored_by_a_stateless_server() -> None:
    headers = {"Mcp-Session-Id": "abc", "Origin": "http://elsewhere.example"}
    assert post(FakeTools(), request("ping"), headers=headers).status == 200


# -- the per-request era (2026-07-28) ---------------------------------------------------------------------

def test_discover_list_and_call_answer_with_the_eras_result_fields() -> None:
    fake = FakeTools()
    stamp = {"io.modelcontextprotocol/serverInfo": {"name": "agentmem", "version": __version__}}
    discovered = answered(post_modern(fake, modern("server/discover")))["result"]
    assert types.DiscoverResult.model_validate(discovered).supported_versions == [MODERN]
    assert discovered == {"supportedVersions": [MODERN], "capabilities": {"tools": {"listChanged": False}},
                          "instructions": discovered["instructions"], "ttlMs": 0, "cacheScope": "private",
                          "resultType": "complete", "_meta": stamp}
    listed = answered(post_modern(fake, modern("tools/list")))["result"]
    assert (listed["resultType"], listed["_meta"], listed["ttlMs"], listed["cacheScope"]) == (
        "complete", stamp, 0, "private")
    assert len(types.ListToolsResult.model_validate(listed).tools) == 2
    called = answered(post_modern(fake, modern(
        "tools/call", {"name": "memory__search", "arguments": {"query": "q"}}, **{"Mcp-Name": "memory__search"})))
    assert called["result"] == {"content": [{"type": "text", "text": "1. q"}], "isError": False,
                                "structuredContent": {"items": [{"name": "q"}]}, "resultType": "complete",
                                "_meta": stamp}


def test_a_tool_name_a_header_cannot_carry_comes_in_mcps_base64_form() -> None:
    encoded = "=?base64?" + base64.b64encode(b"memory__search").decode() + "?="
    message, headers = modern("tools/call", {"name": "memory__search", "arguments": {"query": "q"}},
                              **{"Mcp-Name": encoded})
    assert post(FakeTools(), message, headers=headers).status == 200
    broken = {**headers, "Mcp-Name": "=?base64?not base64?="}
    assert answered(post(FakeTools(), message, headers=broken))["error"]["code"] == types.HEADER_MISMATCH


@pytest.mark.parametrize(("case", "status", "code", "words"), [
    ("no envelope", 400, types.INVALID_PARAMS, "params._meta must be an object"),
    ("half an envelope", 400, types.INVALID_PARAMS, "missing the required envelope key(s): "
                                                    "io.modelcontextprotocol/clientCapabilities"),
    ("version header differs", 400, types.HEADER_MISMATCH, "mcp-protocol-version header does not match"),
    ("method header missing", 400, types.HEADER_MISMATCH, "mcp-method header does not match"),
    ("method header differs", 400, types.HEADER_MISMATCH, "mcp-method header does not match"),
    ("name header missing", 400, types.HEADER_MISMATCH, "mcp-name header does not match"),
    ("name header differs", 400, types.HEADER_MISMATCH, "mcp-name header does not match"),
    ("routing header twice", 400, types.HEADER_MISMATCH, "mcp-method header appears more than once"),
    ("unsupported version", 400, types.UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version"),
    ("version not text", 400, types.HEADER_MISMATCH, "mcp-protocol-version header does not match"),
    ("ping", 404, types.METHOD_NOT_FOUND, "Method not found"),
    ("initialize", 404, types.METHOD_NOT_FOUND, "Method not found"),
    ("unknown method", 404, types.METHOD_NOT_FOUND, "Method not found"),
    ("bad cursor", 400, types.INVALID_PARAMS, "the cursor must be a string"),
    ("bad arguments", 400, types.INVALID_PARAMS, "the arguments must be an object"),
])
def test_the_eras_refusals_carry_the_requests_id_and_the_sdks_status(
    case: str, status: int, code: int, words: str
) -> None:
    message, headers = modern("tools/list")
    lines: list[tuple[str, str]] = []
    if case == "no envelope":
        message = request("tools/list", {})
    elif case == "half an envelope":
        message = request("tools/list", {"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}})
    elif case == "version header differs":
        message = request("tools/list", {"_meta": {**ENVELOPE, "io.modelcontextprotocol/protocolVersion": "x"}})
    elif case == "method header missing":
        del headers["Mcp-Method"]
    elif case == "method header differs":
        headers["Mcp-Method"] = "tools/call"
    elif case in ("name header missing", "name header differs", "bad arguments"):
        message, headers = modern("tools/call", {"name": "memory__search", "arguments": "q"})
        if case == "name header differs":
            headers["Mcp-Name"] = "memory__read"
        elif case == "bad arguments":
            headers["Mcp-Name"] = "memory__search"
    elif case == "routing header twice":
        lines = [("mcp-method", "tools/list")]
    elif case == "unsupported version":
        envelope = {**ENVELOPE, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}
        message = request("tools/list", {"_meta": envelope})
        headers["MCP-Protocol-Version"] = "2099-01-01"
    elif case == "version not text":
        message = request("tools/list", {"_meta": {**ENVELOPE, "io.modelcontextprotocol/protocolVersion": 7}})
    elif case in ("ping", "initialize", "unknown method"):
        method = {"unknown method": "foo/bar"}.get(case, case)
        message, headers = modern(method)
    elif case == "bad cursor":
        message, headers = modern("tools/list", {"cursor": 3})
    answer = post(FakeTools(), message, headers=headers, lines=lines)
    assert answer.status == status
    error = types.JSONRPCError.model_validate(answered(answer))
    assert (error.id, error.error.code) == (1, code)
    assert words in error.error.message
    if code == types.UNSUPPORTED_PROTOCOL_VERSION:
        assert error.error.data == {"supported": [MODERN], "requested": "2099-01-01"}


@pytest.mark.parametrize("version", ["2099-01-01", ""])
def test_an_unknown_version_header_is_the_newer_era_which_needs_its_envelope(version: str) -> None:
    answer = post(FakeTools(), request("tools/list"), headers={"MCP-Protocol-Version": version})
    assert answer.status == 400
    assert answered(answer)["error"]["code"] == types.INVALID_PARAMS


def test_a_newer_envelope_without_the_newer_header_is_served_in_the_handshake_era() -> None:
    message, _ = modern("tools/list")
    for headers in ({}, {"MCP-Protocol-Version": "2025-06-18"}):
        result = answered(post(FakeTools(), message, headers=headers))["result"]
        assert "resultType" not in result and len(result["tools"]) == 2


def test_in_the_newer_era_a_notification_is_accepted_at_our_version_and_refused_at_another() -> None:
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert post(FakeTools(), note, headers={"MCP-Protocol-Version": MODERN}).status == 202
    refused = post(FakeTools(), note, headers={"MCP-Protocol-Version": "2099-01-01"})
    assert refused.status == 400
    assert answered(refused) == {"jsonrpc": "2.0", "id": None, "error": {
        "code": types.UNSUPPORTED_PROTOCOL_VERSION, "message": "Unsupported protocol version",
        "data": {"supported": [MODERN], "requested": "2099-01-01"}}}


@pytest.mark.parametrize("raw", [b'{"jsonrpc":"2.0","id":5,"result":{}}', b'{"jsonrpc":"2.0","id":1}',
                                 b'[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]',
                                 b'{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}', b'{"method":"x"}',
                                 b'{"jsonrpc":"2.0","method":"notifications/initialized","params":[1]}'])
def test_in_the_newer_era_anything_but_one_request_or_notification_is_invalid(raw: bytes) -> None:
    answer = post(FakeTools(), None, raw=raw, headers={"MCP-Protocol-Version": MODERN})
    assert answer.status == 400
    assert answered(answer) == {"jsonrpc": "2.0", "id": None, "error": {
        "code": types.INVALID_REQUEST, "message": "Body must be a single JSON-RPC request or notification object"}}


def test_in_the_newer_era_a_body_that_is_not_json_is_a_parse_error() -> None:
    answer = post(FakeTools(), None, raw=b"{nope", headers={"MCP-Protocol-Version": MODERN})
    assert answer.status == 400
    assert answered(answer)["error"]["code"] == types.PARSE_ERROR
