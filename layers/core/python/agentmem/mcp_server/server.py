"""The MCP server both transports run: the SDK's low-level ``Server`` with two handlers, ``tools/list``
and ``tools/call``, over whatever lists and runs the tools (the API over HTTP, or the service in-process)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

from .. import __version__

SERVER_NAME = "agentmem"


@dataclass(frozen=True)
class ToolAnswer:
    """A tool call's answer: the text a model reads, the structured result, and whether it failed."""

    text: str
    structured: dict[str, Any] | None = None
    is_error: bool = False


ListTools = Callable[[], list[dict[str, Any]]]  # tools in MCP's format: {"name", "description", "inputSchema"}
CallTool = Callable[[str, dict[str, Any]], ToolAnswer]


def instructions(agent: str) -> str:
    return (
        f"The memory of agent {agent!r} (agentmem). Search it before answering when something learned earlier "
        "may matter, read the entries you need, and save what you are asked to remember or learn that lasts."
    )


def build_server(agent: str, list_tools: ListTools, call_tool: CallTool, *, in_thread: bool) -> Server[Any]:
    """An MCP server for one agent. ``in_thread`` runs the (blocking) callables in a worker thread, one at a
    time, so a long-lived stdio server keeps reading its input while a call waits on the network."""

    limiter: anyio.CapacityLimiter | None = None

    async def run(function: Callable[..., Any], *args: Any) -> Any:
        nonlocal limiter
        if not in_thread:
            return function(*args)
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
