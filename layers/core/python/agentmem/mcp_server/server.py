"""The stdio transport's MCP server: the SDK's low-level ``Server`` with two handlers, ``tools/list`` and
``tools/call``, over what lists and runs the tools (the agentmem API). The HTTP route does not use it: it speaks
the protocol itself (``protocol.py``), so the API's cold start never imports the SDK."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

from .. import __version__
from .protocol import SERVER_NAME, ToolAnswer, instructions

ListTools = Callable[[], list[dict[str, Any]]]  # tools in MCP's format: {"name", "description", "inputSchema"}
CallTool = Callable[[str, dict[str, Any]], ToolAnswer]


def build_server(agent: str, list_tools: ListTools, call_tool: CallTool) -> Server[Any]:
    """An MCP server for one agent. The (blocking) callables run in a worker thread, one at a time, so the
    long-lived stdio server keeps reading its input while a call waits on the network."""

    limiter: anyio.CapacityLimiter | None = None

    async def run(function: Callable[..., Any], *args: Any) -> Any:
        nonlocal limiter
        limiter = limiter or anyio.CapacityLimiter(1)  # one API call at a time: the client's session is not shared
        return await anyio.to_thread.run_sync(function, *args, limiter=limiter)

    async def on_list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        listed: list[dict[str, Any]] = await run(list_tools)
        return types.ListToolsResult(tools=[types.Tool.model_validate(tool) for tool in listed])

    async def on_call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        answer: ToolAnswer = await run(call_tool, params.name, params.arguments or {})
        return types.CallToolResult(
            content=[types.TextContent(text=answer.text)], structured_content=answer.structured,
            is_error=answer.is_error,
        )

    return Server(
        SERVER_NAME, version=__version__, instructions=instructions(agent),
        on_list_tools=on_list_tools, on_call_tool=on_call_tool,
    )
