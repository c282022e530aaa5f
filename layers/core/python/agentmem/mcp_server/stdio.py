"""The stdio MCP server: an MCP host launches it and speaks MCP on its stdin/stdout; each tool is listed
and run through the agentmem API (``GET /v1/agents/{agent}/tools``, ``POST /v1/agents/{agent}/tools/{tool}``)
on the ``mcp`` surface, with the key and URL of the given client (``AGENTMEM_URL`` / ``AGENTMEM_API_KEY``)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import anyio
from mcp.server.stdio import stdio_server

from ..client import AgentmemError, Client
from .protocol import ToolAnswer
from .server import build_server

SURFACE = "mcp"
DIALECT = "noclick"


class ApiTools:
    """One agent's tools, as the API lists and runs them for one user (or none: an anonymous client)."""

    def __init__(self, client: Client, agent: str, user: str | None) -> None:
        self.client = client
        self.agent = agent
        self.user = user

    def list(self) -> list[dict[str, Any]]:
        data = self.client.request_json(
            "GET", f"/agents/{quote(self.agent, safe='')}/tools",
            params={"format": "mcp", "surface": SURFACE, "dialect": DIALECT, "user": self.user},
        )
        return [item for item in data.get("items") or [] if isinstance(item, dict)]

    def call(self, tool: str, arguments: dict[str, Any]) -> ToolAnswer:
        try:
            data = self.client.request_json(
                "POST", f"/agents/{quote(self.agent, safe='')}/tools/{quote(tool, safe='')}",
                params={"user": self.user}, body={"arguments": arguments, "surface": SURFACE},
            )
        except AgentmemError as error:
            problem = {"status": error.status, "code": error.code, "message": error.message, **error.details}
            return ToolAnswer(error.message, {"error": problem}, is_error=True)
        result = data.get("result")
        return ToolAnswer(str(data.get("text") or ""), result if isinstance(result, dict) else None)


def stdio_mcp_server(agent: str, user: str | None, client: Client) -> Any:
    """The SDK's server (of the installed line: ``server.build_server``) for one agent's tools."""
    tools = ApiTools(client, agent, user)
    return build_server(agent, tools.list, tools.call)


def run_stdio(agent: str, user: str | None = None, client: Client | None = None) -> None:
    """Serve ``agent``'s tools on stdin/stdout until the host closes them.

    The agent's tools are listed once first, so a wrong agent, key or URL fails here (raising the SDK's
    ``AgentmemError``) rather than in the host's first request.
    """
    client = client or Client()
    ApiTools(client, agent, user).list()
    server = stdio_mcp_server(agent, user, client)

    async def serve() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await answering_all(server, read_stream, write_stream)

    anyio.run(serve)


async def answering_all(server: Any, read_stream: Any, write_stream: Any, *, grace_s: float = 60.0) -> None:
    """Run ``server`` on the streams, and when the host closes stdin, end only once every request read before
    has been answered (at most ``grace_s`` more): the MCP server would otherwise stop at the end of its input and
    answer the requests still running with "Connection closed". Messages pass between as they are; only the ids
    of requests in and of answers out are noted."""
    into_server, server_reads = anyio.create_memory_object_stream[Any](0)
    server_writes, out_of_server = anyio.create_memory_object_stream[Any](0)
    pending: dict[Any, int] = {}
    all_answered = anyio.Event()
    all_answered.set()

    def noted(message: Any, step: int) -> None:
        nonlocal all_answered
        inner = getattr(message, "message", None)
        inner = getattr(inner, "root", inner)  # (mcp 1.x wraps each JSON-RPC message in a root model)
        request_id, method = getattr(inner, "id", None), getattr(inner, "method", None)
        if request_id is None or (step > 0) != (method is not None):  # a request in, or an answer out
            return
        pending[request_id] = pending.get(request_id, 0) + step
        if pending[request_id] <= 0:
            del pending[request_id]
        if pending and all_answered.is_set():
            all_answered = anyio.Event()
        elif not pending:
            all_answered.set()

    async def forward_in() -> None:
        async with into_server:
            async for message in read_stream:
                noted(message, +1)
                await into_server.send(message)
            with anyio.move_on_after(grace_s):  # stdin closed: the requests read so far are answered first
                await all_answered.wait()

    async def forward_out() -> None:
        async with out_of_server, write_stream:  # closing it ends the writer of stdout, as the server's run would
            async for message in out_of_server:
                await write_stream.send(message)
                noted(message, -1)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(forward_in)
        tasks.start_soon(forward_out)
        async with server_writes:
            await server.run(server_reads, server_writes, server.create_initialization_options())
