"""An agent's memory tools over MCP, spoken to by the ``mcp`` SDK's own client against a real ``agentmem serve``:
over stdio (``agentmem mcp --agent NAME``, as an MCP host launches it; ``python -m agentmem.mcp_server`` still
works) and over streamable HTTP (``POST /v1/mcp`` inside the API, with the Bearer key)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
import requests
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import CallToolResult, TextContent
from serving import wait_healthy  # tests/support, on sys.path through tests/conftest.py

pytestmark = pytest.mark.slow

AGENTMEM = Path(sys.executable).parent / "agentmem"
NOCLICK_TOOLS = ["memory__search", "memory__read", "memory__save", "memory__delete"]


@dataclass(frozen=True)
class Served:
    base_url: str
    key: str

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMEM_")}
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """``agentmem serve`` on a free port and a fresh data dir, with the key it wrote to ``dev-key``."""
    data_dir = tmp_path_factory.mktemp("mcp") / "data"
    data_dir.mkdir()
    log = data_dir.parent / "serve.log"
    base_url = f"http://127.0.0.1:{_free_port()}"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(AGENTMEM), "serve", "--data-dir", str(data_dir), "--port", base_url.rsplit(":", 1)[1]],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=_clean_env(),
        )
    try:
        wait_healthy(proc, base_url, log.read_text)
        yield Served(base_url, (data_dir / "dev-key").read_text().strip())
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@pytest.fixture
def agent(served: Served) -> str:
    """A fresh account agent."""
    name = f"support-{uuid.uuid4().hex[:8]}"
    response = requests.put(f"{served.base_url}/v1/agents/{name}", json={"instructions": "Answer billing questions."},
                            headers=served.headers(), timeout=10)
    assert response.status_code == 201, response.text
    return name


def _text(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


async def _remember_and_recall(client: Client) -> None:
    """What every transport must do: list the noclick tools, save, search, read, refuse, delete."""
    listed = await client.list_tools()
    assert [tool.name for tool in listed.tools] == NOCLICK_TOOLS
    save = next(tool for tool in listed.tools if tool.name == "memory__save")
    assert save.input_schema["required"] == ["name", "content"]
    assert save.input_schema["additionalProperties"] is False

    saved = await client.call_tool("memory__save", {
        "name": "plan", "content": "Ana is on the Team plan, billed yearly.", "description": "Her plan",
    })
    assert not saved.is_error, _text(saved)
    assert saved.structured_content is not None
    assert saved.structured_content["entry"]["version"] == 1
    assert "'plan' (version 1)" in _text(saved)

    found = await client.call_tool("memory__search", {"query": "team plan"})
    assert not found.is_error
    assert found.structured_content is not None
    assert [item["name"] for item in found.structured_content["items"]] == ["plan"]
    assert "1. plan — Her plan" in _text(found)

    read = await client.call_tool("memory__read", {"name": "plan"})
    assert read.structured_content is not None
    assert read.structured_content["entry"]["content"] == "Ana is on the Team plan, billed yearly."

    missing = await client.call_tool("memory__read", {"name": "nothing-here"})
    assert missing.is_error
    assert "no entry named 'nothing-here'" in _text(missing)

    malformed = await client.call_tool("memory__save", {"name": "x", "content": "y", "colour": "red"})
    assert malformed.is_error
    assert "takes no argument 'colour'" in _text(malformed)
    assert malformed.structured_content is not None
    assert malformed.structured_content["error"]["field"] == "arguments.colour"

    journal = await client.call_tool("journal_message_search", {"query": "plan"})
    assert journal.is_error
    assert "mcp surface has no journal tools" in _text(journal)

    deleted = await client.call_tool("memory__delete", {"name": "plan"})
    assert not deleted.is_error, _text(deleted)
    assert deleted.structured_content == {"deleted": "plan", "memory": deleted.structured_content["memory"],
                                          "version": 1}


# --- stdio ----------------------------------------------------------------------------------------


def _stdio(served: Served, agent: str, *extra: str) -> StdioServerParameters:
    """``agentmem mcp --agent AGENT ...``: the command an MCP host runs, with the service's URL and key."""
    return StdioServerParameters(
        command=str(AGENTMEM), args=["mcp", "--agent", agent, *extra],
        env={"AGENTMEM_URL": served.base_url, "AGENTMEM_API_KEY": served.key},
    )


def test_stdio_lists_and_runs_the_agents_tools(served: Served, agent: str) -> None:
    # Given `agentmem mcp` for an agent, launched as an MCP host launches it, for one user
    async def scenario() -> None:
        async with Client(_stdio(served, agent, "--user", "user_42")) as client:
            # When the host lists and calls its tools, Then they remember and recall
            await _remember_and_recall(client)

    anyio.run(scenario)


def test_the_python_module_form_still_serves_the_tools(served: Served, agent: str) -> None:
    # Given the stdio server launched as `python -m agentmem.mcp_server` (the form before `agentmem mcp`)
    module = StdioServerParameters(
        command=sys.executable, args=["-m", "agentmem.mcp_server", "--agent", agent, "--user", "user_42"],
        env={"AGENTMEM_URL": served.base_url, "AGENTMEM_API_KEY": served.key},
    )

    async def scenario() -> None:
        async with Client(module) as client:
            # When the host lists and calls its tools, Then they remember and recall as with `agentmem mcp`
            await _remember_and_recall(client)

    anyio.run(scenario)


def test_stdio_saves_into_the_users_layer(served: Served, agent: str) -> None:
    # Given the stdio server for user_42
    async def scenario() -> dict[str, Any]:
        async with Client(_stdio(served, agent, "--user", "user_42")) as client:
            result = await client.call_tool("memory__save", {"name": "tone", "content": "Warm.", "description": "d"})
            assert result.structured_content is not None
            return result.structured_content

    # When the tool saves, Then the entry is that user's, private to them
    entry = anyio.run(scenario)["entry"]
    assert (entry["user_id"], entry["visibility"]) == ("user_42", "private")


def test_stdio_without_a_user_is_anonymous_and_cannot_write_private(served: Served, agent: str) -> None:
    # Given `agentmem mcp` for an agent with no --user: an anonymous MCP client, with no private layer
    async def scenario() -> tuple[CallToolResult, CallToolResult]:
        async with Client(_stdio(served, agent)) as client:
            private = await client.call_tool(
                "memory__save", {"name": "secret", "content": "x", "description": "d", "visibility": "private"}
            )
            shared = await client.call_tool("memory__save", {"name": "tone", "content": "Warm.", "description": "d"})
            return private, shared

    # When it saves, Then a private save is refused saying why (SPEC §7), and a plain one lands in the account's layer
    private, shared = anyio.run(scenario)
    assert private.is_error
    assert private.structured_content is not None
    assert private.structured_content["error"]["code"] == "no_user_context"
    assert not shared.is_error, _text(shared)
    assert shared.structured_content is not None
    assert (shared.structured_content["entry"]["user_id"], shared.structured_content["entry"]["visibility"]) == (
        None, "shared")


def test_stdio_refuses_to_start_for_an_unknown_agent(served: Served) -> None:
    # When `agentmem mcp` is launched for an agent that does not exist
    done = subprocess.run(
        [str(AGENTMEM), "mcp", "--agent", "nobody-here"], capture_output=True, text=True,
        env=_clean_env(AGENTMEM_URL=served.base_url, AGENTMEM_API_KEY=served.key), timeout=60, check=False,
    )
    # Then it exits at once, saying why, and writes nothing to stdout (the MCP host's channel)
    assert done.returncode == 1
    assert "no agent named 'nobody-here'" in done.stderr
    assert done.stdout == ""


def test_stdio_refuses_to_start_without_a_key(served: Served, agent: str) -> None:
    # When `agentmem mcp` is launched with no API key in its environment
    done = subprocess.run(
        [str(AGENTMEM), "mcp", "--agent", agent], capture_output=True, text=True,
        env=_clean_env(AGENTMEM_URL=served.base_url), timeout=60, check=False,
    )
    # Then it exits at once, saying what is missing
    assert done.returncode != 0
    assert "AGENTMEM_API_KEY" in done.stderr
    assert done.stdout == ""


# --- streamable HTTP ------------------------------------------------------------------------------


@asynccontextmanager
async def _http_client(served: Served, agent: str, *, mode: str, user: str | None = None) -> AsyncIterator[Client]:
    url = f"{served.base_url}/v1/mcp?agent={agent}" + (f"&user={user}" if user else "")
    async with (
        create_mcp_http_client(headers=served.headers()) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        yield client


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_http_lists_and_runs_the_agents_tools(served: Served, agent: str, mode: str) -> None:
    # Given the API's MCP endpoint for an agent and a user, reached with the account key
    async def scenario() -> None:
        async with _http_client(served, agent, mode=mode, user="user_42") as client:
            # When an MCP client (initialize handshake, or the newer per-request protocol) lists and calls
            # Then the tools remember and recall
            await _remember_and_recall(client)

    anyio.run(scenario)


def test_http_anonymous_client_cannot_write_private(served: Served, agent: str) -> None:
    # Given an MCP client with no user (anonymous): there is no private layer
    async def scenario() -> CallToolResult:
        async with _http_client(served, agent, mode="legacy") as client:
            return await client.call_tool(
                "memory__save", {"name": "secret", "content": "x", "description": "d", "visibility": "private"}
            )

    # When it asks for a private save, Then it is refused, saying why (SPEC §7)
    result = anyio.run(scenario)
    assert result.is_error
    assert result.structured_content is not None
    assert result.structured_content["error"]["code"] == "no_user_context"


def test_http_needs_the_key_and_a_known_agent_and_only_takes_post(served: Served, agent: str) -> None:
    url = f"{served.base_url}/v1/mcp"
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    accept = {"Accept": "application/json, text/event-stream"}
    # Without a key: 401
    assert requests.post(url, params={"agent": agent}, json=ping, headers=accept, timeout=10).status_code == 401
    # An agent that does not exist: the API's 404
    missing = requests.post(url, params={"agent": "nobody-here"}, json=ping,
                            headers={**served.headers(), **accept}, timeout=10)
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "not_found"
    # No agent named: 400 naming the parameter
    unnamed = requests.post(url, json=ping, headers={**served.headers(), **accept}, timeout=10)
    assert (unnamed.status_code, unnamed.json()["error"]["field"]) == (400, "agent")
    # GET (a server-sent event stream) and DELETE (end a session): 405, as MCP's stateless servers answer
    for method in ("GET", "DELETE"):
        refused = requests.request(method, url, params={"agent": agent}, headers=served.headers(), timeout=10)
        assert refused.status_code == 405
        assert refused.headers["Allow"] == "POST"


def test_http_calls_are_counted_not_billed(served: Served, agent: str) -> None:
    # Given a tool called over MCP
    async def scenario() -> None:
        async with _http_client(served, agent, mode="legacy", user="user_7") as client:
            await client.call_tool("memory__search", {"query": "anything"})

    anyio.run(scenario)
    # Then usage counts it under mcp.tools/call, not billable: within a few seconds, as each of the server's
    # workers writes the counts it buffers (docs/api.md, usage)
    deadline = time.monotonic() + 15
    while True:
        usage = requests.get(f"{served.base_url}/v1/usage", headers=served.headers(), timeout=10).json()["items"]
        calls = [u for u in usage if u["operation"] == "mcp.tools/call"]
        if calls or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert calls
    assert all(u["billable"] is False for u in calls)


def test_stdio_answers_every_request_it_read_before_stdin_closed(served: Served, agent: str) -> None:
    # Given a host that writes its requests and closes stdin at once, without waiting for any answer
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "host", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "memory__save", "arguments": {"name": "tone", "content": "Warm, brief.",
                                                          "description": "How we write"}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
         "params": {"name": "memory__search", "arguments": {"query": "tone"}}},
    ]
    done = subprocess.run(
        [str(AGENTMEM), "mcp", "--agent", agent], input="".join(json.dumps(line) + "\n" for line in lines),
        capture_output=True, text=True, env=_clean_env(AGENTMEM_URL=served.base_url, AGENTMEM_API_KEY=served.key),
        timeout=120, check=False,
    )
    # Then it answers each request before it exits, and exits cleanly
    answers = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert sorted(answer.get("id") for answer in answers) == [1, 2, 3, 4], done.stdout + done.stderr
    assert all("error" not in answer for answer in answers), answers
    assert done.returncode == 0, done.stderr
