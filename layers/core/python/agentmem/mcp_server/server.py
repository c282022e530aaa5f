"""The stdio transport's MCP server: the SDK's low-level ``Server`` with two handlers, ``tools/list`` and
``tools/call``, over what lists and runs the tools (the agentmem API). The HTTP route does not use it: it speaks
the protocol itself (``protocol.py``), so the API's cold start never imports the SDK.

Both lines of the ``mcp`` SDK are served (``mcp>=1.24,<3``), because the agent frameworks beside which agentmem is
installed pin one or the other (LangChain's MCP adapters: ``mcp<2``): the 2.x ``Server`` takes its handlers as
arguments (``on_list_tools=``, ``on_call_tool=``, with a request context), the 1.x one through decorators. The
line is told by what the installed SDK has (``mcp.server.context`` is 2.x's), and the same two callables answer
on both: the tools as the API lists them, and each call's text, structured result and error flag.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread

from .. import __version__
from .protocol import SERVER_NAME, ToolAnswer, instructions

ListTools = Callable[[], list[dict[str, Any]]]  # tools in MCP's format: {"name", "description", "inputSchema"}
CallTool = Callable[[str, dict[str, Any]], ToolAnswer]


def sdk_line() -> int:
    """The major version of the installed ``mcp`` SDK's server API: 2, or 1."""
    try:
        importlib.import_module("mcp.server.context")
    except ImportError:
        return 1
    return 2


def build_server(agent: str, list_tools: ListTools, call_tool: CallTool) -> Any:
    """An MCP server for one agent, on the installed SDK's line. The (blocking) callables run in a worker thread,
    one at a time, so the long-lived stdio server keeps reading its input while a call waits on the network."""

    limiter: anyio.CapacityLimiter | None = None

    async def run(function: Callable[..., Any], *args: Any) -> Any:
        nonlocal limiter
        limiter = limiter or anyio.CapacityLimiter(1)  # one API call at a time: the client's session is not shared
        return await anyio.to_thread.run_sync(function, *args, limiter=limiter)

    builder = _build_v2 if sdk_line() == 2 else _build_v1
    return builder(agent, run, list_tools, call_tool)


Run = Callable[..., Any]


def _result(types: Any, answer: ToolAnswer) -> Any:
    # camelCase field names: the 1.x models take only those; the 2.x ones take them as aliases
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=answer.text)], structuredContent=answer.structured,
        isError=answer.is_error,
    )


def _build_v2(agent: str, run: Run, list_tools: ListTools, call_tool: CallTool) -> Any:
    types: Any = importlib.import_module("mcp_types")
    lowlevel: Any = importlib.import_module("mcp.server.lowlevel")

    async def on_list_tools(ctx: Any, params: Any) -> Any:
        listed: list[dict[str, Any]] = await run(list_tools)
        return types.ListToolsResult(tools=[types.Tool.model_validate(tool) for tool in listed])

    async def on_call_tool(ctx: Any, params: Any) -> Any:
        answer: ToolAnswer = await run(call_tool, params.name, params.arguments or {})
        return _result(types, answer)

    return lowlevel.Server(
        SERVER_NAME, version=__version__, instructions=instructions(agent),
        on_list_tools=on_list_tools, on_call_tool=on_call_tool,
    )


def _build_v1(agent: str, run: Run, list_tools: ListTools, call_tool: CallTool) -> Any:
    types: Any = importlib.import_module("mcp.types")
    lowlevel: Any = importlib.import_module("mcp.server.lowlevel")
    server = lowlevel.Server(SERVER_NAME, version=__version__, instructions=instructions(agent))

    async def on_list_tools() -> list[Any]:
        listed: list[dict[str, Any]] = await run(list_tools)
        return [types.Tool.model_validate(tool) for tool in listed]

    # the arguments are the API's to check (its 400 names the field), as on the 2.x line and over HTTP
    async def on_call_tool(name: str, arguments: dict[str, Any]) -> Any:
        answer: ToolAnswer = await run(call_tool, name, arguments or {})
        return _result(types, answer)

    server.list_tools()(on_list_tools)
    server.call_tool(validate_input=False)(on_call_tool)
    return server
