"""``agentmem mcp`` (the stdio MCP server) on whichever line of the ``mcp`` SDK the environment holds: 2.x where
agentmem is alone, 1.x beside LangChain's MCP adapters (``mcp<2``). Spoken to with the SDK's own ``ClientSession``
over ``stdio_client``, which both lines have; results are read as the wire has them (camelCase)."""

from __future__ import annotations

import sys
from importlib.metadata import version
from typing import Any

import anyio
from agentmem.mcp_server.server import sdk_line
from conftest import Served
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

NOCLICK_TOOLS = ["memory__search", "memory__read", "memory__save", "memory__delete"]


def _wire(result: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dumped


def _text(result: dict[str, Any]) -> str:
    return "\n".join(block["text"] for block in result["content"] if block.get("type") == "text")


async def _session_run(params: StdioServerParameters) -> dict[str, Any]:
    async with stdio_client(params) as streams, ClientSession(streams[0], streams[1]) as session:
        await session.initialize()
        listed = _wire(await session.list_tools())
        saved = _wire(await session.call_tool("memory__save", {
            "name": "plan", "content": "Ana is on the Team plan, billed yearly.", "description": "Her plan"}))
        found = _wire(await session.call_tool("memory__search", {"query": "team plan"}))
        malformed = _wire(await session.call_tool("memory__save", {"name": "x", "content": "y", "colour": "red"}))
        missing = _wire(await session.call_tool("memory__read", {"name": "nothing-here"}))
        return {"listed": listed, "saved": saved, "found": found, "malformed": malformed, "missing": missing}


def test_the_installed_sdk_line_is_the_one_served() -> None:
    assert sdk_line() == int(version("mcp").split(".")[0])


def test_stdio_server_lists_saves_and_searches_on_the_installed_sdk(served: Served, agent: str) -> None:
    # Given `agentmem mcp` as an MCP host launches it, on the mcp SDK this environment holds
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "agentmem.mcp_server", "--agent", agent, "--user", "user_42"],
        env=served.env(),
    )
    # When a host lists the tools, saves, searches, sends a wrong argument and reads a missing entry
    got = anyio.run(_session_run, params)
    # Then the four tools are listed with their schemas
    assert [tool["name"] for tool in got["listed"]["tools"]] == NOCLICK_TOOLS
    save = next(tool for tool in got["listed"]["tools"] if tool["name"] == "memory__save")
    assert save["inputSchema"]["required"] == ["name", "content"]
    # and the save lands and is found, with its structured result
    assert not got["saved"].get("isError"), _text(got["saved"])
    assert got["saved"]["structuredContent"]["entry"]["version"] == 1
    assert [item["name"] for item in got["found"]["structuredContent"]["items"]] == ["plan"]
    # and a wrong argument is the API's 400 (not the SDK's own validation), a missing entry an error result
    assert got["malformed"]["isError"] is True
    assert "takes no argument 'colour'" in _text(got["malformed"])
    assert got["malformed"]["structuredContent"]["error"]["field"] == "arguments.colour"
    assert got["missing"]["isError"] is True
    assert "no entry named 'nothing-here'" in _text(got["missing"])
