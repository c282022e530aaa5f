"""LangChain's MCP adapters (``langchain-mcp-adapters``, which pins ``mcp<2``) installed beside agentmem: the
adapters load ``agentmem mcp``'s tools as LangChain tools over stdio, and those tools save and search."""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
from conftest import Served
from langchain_mcp_adapters.client import MultiServerMCPClient


def _text(answer: Any) -> str:
    if isinstance(answer, str):
        return answer
    if isinstance(answer, tuple):  # (content, artifact) for tools with a structured result
        answer = answer[0]
    blocks = answer if isinstance(answer, list) else [answer]
    return "\n".join(b["text"] if isinstance(b, dict) else str(getattr(b, "text", b)) for b in blocks)


def test_the_adapters_load_agentmems_tools_and_they_remember(served: Served, agent: str) -> None:
    # Given `agentmem mcp` configured in the adapters' client, as a LangChain app configures an MCP server
    client = MultiServerMCPClient({"memory": {
        "transport": "stdio", "command": sys.executable,
        "args": ["-m", "agentmem.mcp_server", "--agent", agent, "--user", "user_42"], "env": served.env(),
    }})

    async def scenario() -> tuple[list[str], str, str]:
        tools = {tool.name: tool for tool in await client.get_tools()}
        saved = await tools["memory__save"].ainvoke({
            "name": "plan", "content": "Ana is on the Team plan, billed yearly.", "description": "Her plan"})
        found = await tools["memory__search"].ainvoke({"query": "team plan"})
        return sorted(tools), _text(saved), _text(found)

    # When the app loads the tools and calls them
    names, saved, found = anyio.run(scenario)
    # Then the four memory tools are there, the save lands, and the search finds it
    assert names == sorted(["memory__search", "memory__read", "memory__save", "memory__delete"])
    assert "'plan' (version 1)" in saved
    assert "1. plan — Her plan" in found, json.dumps(found)
