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
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(serve)
