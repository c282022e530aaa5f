"""MCP over streamable HTTP inside the API (``POST /v1/mcp``): one request, one answer, in one call.

The SDK's ``StreamableHTTPSessionManager`` does the protocol, stateless and answering JSON (no SSE, no
session to keep between Lambda invocations); this module hands it an ASGI request built from the API's
event and collects its answer. The tools run in-process through ``ToolService`` on the ``mcp`` surface.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.types import Message

from ..domain.errors import AgentmemError
from ..domain.models import Principal
from ..domain.tool_formats import render
from ..services.tools import ToolService
from .server import ToolAnswer, build_server

SURFACE = "mcp"


@dataclass(frozen=True)
class HttpRequest:
    method: str
    path: str
    query: str
    headers: Mapping[str, str]
    body: bytes


@dataclass
class HttpAnswer:
    status: int = 500
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


def in_process_server(service: ToolService, principal: Principal, agent: str, user: str | None) -> Server[Any]:
    """The MCP server of one agent for one caller, running its tools through the service."""

    def list_tools() -> list[dict[str, Any]]:
        return [render(t, "mcp") for t in service.definitions(principal, agent, user=user, surface=SURFACE)]

    def call_tool(tool: str, arguments: dict[str, Any]) -> ToolAnswer:
        try:
            outcome = service.execute(principal, agent, tool, arguments, user=user, surface=SURFACE)
        except AgentmemError as error:
            return ToolAnswer(error.message, {"error": {"status": error.status, **error.to_dict()}}, is_error=True)
        return ToolAnswer(outcome.text, outcome.result)

    return build_server(agent, list_tools, call_tool, in_thread=False)


def serve_request(server: Server[Any], request: HttpRequest) -> HttpAnswer:
    """Answer one streamable-HTTP request with the SDK's stateless, JSON-answering transport."""
    manager = StreamableHTTPSessionManager(server, json_response=True, stateless=True)
    scope = _scope(request)
    answer = HttpAnswer()
    delivered = False

    async def receive() -> Message:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": request.body, "more_body": False}
        await anyio.sleep_forever()  # the body is whole: nothing more will come
        raise AssertionError("unreachable")

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            answer.status = int(message["status"])
            answer.headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in message.get("headers", [])}
        elif message["type"] == "http.response.body":
            answer.body += message.get("body", b"")

    async def serve() -> None:
        async with manager.run():
            await manager.handle_request(scope, receive, send)

    anyio.run(serve)
    return answer


def _scope(request: HttpRequest) -> dict[str, Any]:
    headers = [(k.lower().encode("latin-1"), str(v).encode("latin-1", "replace")) for k, v in request.headers.items()]
    host = next((v for k, v in request.headers.items() if k.lower() == "host"), "localhost")
    return {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": request.method.upper(),
        "scheme": "https", "path": request.path, "raw_path": request.path.encode("utf-8"),
        "query_string": request.query.encode("latin-1"), "root_path": "", "headers": headers,
        "server": (host.split(":")[0], 443), "client": ("127.0.0.1", 0),
    }
