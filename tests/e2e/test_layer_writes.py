"""Who may change which layer, over every path that writes entries (SPEC §2.3, §10).

The rule lives in one function (``domain.access.check_layer_write``); this suite proves it holds on each path a
client can reach, through the real API handler: the entries API, the agent tools in both dialects, MCP's
``tools/call``, and the pre-compaction flush. The expected outcome of every cell is written from SPEC alone:

* a user key never saves or deletes in the account layer, by any path: 403, and nothing changes;
* in a user's conversation an agent deletes only that user's entries, whatever its settings;
* in a user's conversation an agent saves in the account layer only when it is set
  ``user_conversations_write_shared`` and the save asks for ``shared`` (and then only with an account key);
  otherwise the save makes the user's own copy;
* the API with an account key, and an agent in a conversation with the account itself, change the account layer.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import agentmem
import pytest
from agentmem.api.app import lambda_handler
from agentmem.bootstrap import build_container, ensure_default_account, set_container
from agentmem.settings import Settings

AGENT = "support"
MEMORIES = ("agent:support", "company")  # its own memory, and an account memory attached writable
SAVE_TOOLS = {"memory__save": "name", "memory_store": "key"}
DELETE_TOOLS = {"memory__delete": "name", "memory_forget": "key"}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


@dataclass
class World:
    account: agentmem.Client  # the account key
    ana: agentmem.Client  # a user key for user "ana"

    def as_(self, who: str) -> agentmem.Client:
        return self.ana if who == "user_key" else self.account


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    container = build_container(Settings(data_dir=tmp_path))
    key = ensure_default_account(container)
    set_container(container)
    transport = agentmem.InProcessTransport(lambda_handler)
    account = agentmem.Client("http://in-process", key, transport=transport)
    account.request_json("PUT", "/memories/company")
    account.request_json("PUT", f"/agents/{AGENT}", body={"memories": [{"name": "company", "writable": True}]})
    secret = account.request_json("POST", "/keys", body={"user": "ana"})["secret"]
    yield World(account, agentmem.Client("http://in-process", secret, transport=transport))
    set_container(None)


def account_layers(world: World) -> dict[str, list[tuple[str, int, str]]]:
    """Every account-layer entry of both memories, with its version and content."""
    state = {}
    for memory in MEMORIES:
        names = [e.name for e in world.account.memory(memory).list()]
        state[memory] = sorted(
            (n, (e := world.account.memory(memory).read(n)).version, e.content or "") for n in names
        )
    return state


def seed(world: World, name: str) -> None:
    for memory in MEMORIES:
        world.account.request_json("PUT", f"/memories/{memory}/entries/{name}",
                                   body={"content": f"the account's {name}", "description": "Account's entry"})


def set_shared_writes(world: World, on: bool) -> None:
    world.account.request_json("PUT", f"/agents/{AGENT}", body={"user_conversations_write_shared": on})


def status_of(call: Any) -> int:
    try:
        call()
    except agentmem.AgentmemError as error:
        return error.status
    return 200


def tool(client: agentmem.Client, name: str, arguments: dict[str, Any], user: str | None) -> int:
    return status_of(lambda: client.request_json(
        "POST", f"/agents/{AGENT}/tools/{name}", params={"user": user}, body={"arguments": arguments}))


def mcp(client: agentmem.Client, name: str, arguments: dict[str, Any], user: str | None) -> int:
    """tools/call over ``POST /v1/mcp``: the tool's refusal is a tool error (isError) carrying the API's status."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    response = client.request("POST", "/mcp", params={"agent": AGENT, "user": user}, body=body,
                              headers=MCP_HEADERS)
    answer = json.loads(response.body)
    assert "result" in answer, answer
    result = answer["result"]
    if not result.get("isError"):
        return 200
    return int(result["structuredContent"]["error"]["status"])


CALLERS = ("account_key", "account_key_for_ana", "user_key")


def user_of(caller: str) -> str | None:
    return None if caller == "account_key" else "ana"


# --- the entries API ------------------------------------------------------------------------------------


@pytest.mark.parametrize("memory", MEMORIES)
def test_the_entries_api_never_lets_a_user_key_change_the_account_layer(world: World, memory: str) -> None:
    seed(world, "policy")
    before = account_layers(world)
    path = f"/memories/{memory}/entries/policy"
    body = {"content": "Refunds never.", "description": "d"}
    # When a user key saves asking for the account layer, deletes, or names the account layer any way it can
    attempts = [
        lambda: world.ana.request_json("PUT", path, body={**body, "visibility": "shared"}),
        lambda: world.ana.request_json("PUT", path, body={**body, "visibility": "read_only"}),
        lambda: world.ana.request_json("PUT", path, params={"user": "bob"}, body=body),
        lambda: world.ana.request_json("DELETE", path, params={"user": "bob"}),
    ]
    # Then each is a 403 and the account layer is as it was
    assert [status_of(a) for a in attempts] == [403, 403, 403, 403]
    assert account_layers(world) == before
    # while a plain save and delete by the user key act on its own layer only
    assert status_of(lambda: world.ana.request_json("PUT", path, body=body)) == 200
    assert status_of(lambda: world.ana.request_json("DELETE", path)) == 200
    assert account_layers(world) == before


# --- the agent tools and MCP ----------------------------------------------------------------------------


def anonymous_mcp_refuses(path: str, caller: str, memory: str) -> bool:
    """SPEC §7: an anonymous MCP client (an account key with no user) reads the account's memories, never
    writes them; the agent's own memory it writes."""
    return path == "mcp" and caller == "account_key" and memory != "agent:support"


def expected_save(path: str, caller: str, shared_writes: bool, asks_shared: bool, memory: str) -> tuple[int, str]:
    """(status, where the save lands: "account", "ana" or "nowhere"), from SPEC §2.3, §7 and §10 alone."""
    if anonymous_mcp_refuses(path, caller, memory):
        return 403, "nowhere"
    if caller == "account_key":
        return 200, "account"  # a conversation with the account itself
    if asks_shared and shared_writes:
        return (403, "nowhere") if caller == "user_key" else (200, "account")
    return 200, "ana"  # the user's own copy


@pytest.mark.parametrize("path", ["tools", "mcp"])
def test_agent_saves_reach_the_account_layer_only_where_spec_allows(world: World, path: str) -> None:
    call = tool if path == "tools" else mcp
    seed(world, "policy")
    problems: list[str] = []
    cells = list(itertools.product(CALLERS, (False, True), (False, True), SAVE_TOOLS, MEMORIES))
    for number, (caller, shared_writes, asks_shared, name, memory) in enumerate(cells):
        set_shared_writes(world, shared_writes)
        user = user_of(caller)
        before = account_layers(world)
        ana_before = {n: world.account.memory(memory, user="ana").read(n).version
                      for n in [e.name for e in world.account.memory(memory, user="ana").list()]}
        content = f"changed by cell {number}"
        arguments = {SAVE_TOOLS[name]: "policy", "content": content, "description": "d", "memory": memory,
                     **({"visibility": "shared"} if asks_shared else {})}
        client = world.as_(caller)
        status = call(client, name, arguments, None if caller == "user_key" else user)
        want_status, lands = expected_save(path, caller, shared_writes, asks_shared, memory)
        cell = f"{path} {name} by {caller}, shared_writes={shared_writes}, asks_shared={asks_shared}, {memory}"
        if status != want_status:
            problems.append(f"{cell}: {status}, expected {want_status}")
            continue
        after = account_layers(world)
        account_content = world.account.memory(memory).read("policy").content
        if lands == "account":
            if account_content != content:
                problems.append(f"{cell}: the account's entry was not changed")
        elif after != before:
            problems.append(f"{cell}: the account layer changed")
        if lands == "ana" and world.account.memory(memory, user="ana").read("policy").content != content:
            problems.append(f"{cell}: ana's copy was not written")
        if lands == "nowhere":
            ana_after = {n: world.account.memory(memory, user="ana").read(n).version
                         for n in [e.name for e in world.account.memory(memory, user="ana").list()]}
            if ana_after != ana_before:
                problems.append(f"{cell}: refused, but ana's layer changed")
    assert not problems, f"{len(problems)} of {len(cells)} cells are wrong:\n" + "\n".join(problems)


@pytest.mark.parametrize("path", ["tools", "mcp"])
def test_in_a_users_conversation_an_agent_never_deletes_an_account_entry(world: World, path: str) -> None:
    call = tool if path == "tools" else mcp
    problems: list[str] = []
    cells = list(itertools.product(CALLERS, (False, True), DELETE_TOOLS, MEMORIES))
    for caller, shared_writes, name, memory in cells:
        set_shared_writes(world, shared_writes)
        seed(world, "policy")
        before = account_layers(world)
        user = user_of(caller)
        status = call(world.as_(caller), name, {DELETE_TOOLS[name]: "policy", "memory": memory},
                      None if caller == "user_key" else user)
        cell = f"{path} {name} by {caller}, shared_writes={shared_writes}, {memory}"
        names = [e.name for e in world.account.memory(memory).list()]
        if caller == "account_key" and not anonymous_mcp_refuses(path, caller, memory):
            # a conversation with the account itself deletes the account's entry
            if status != 200 or "policy" in names:
                problems.append(f"{cell}: {status}, the account's entry should be gone")
        elif status != 403 or account_layers(world) != before:
            problems.append(f"{cell}: {status}, expected 403 and the account layer unchanged")
    assert not problems, f"{len(problems)} of {len(cells)} cells are wrong:\n" + "\n".join(problems)


def test_the_reported_reproduction_is_refused(world: World) -> None:
    # Given the account's policy, and an agent that may write the account layer from users' conversations
    world.account.request_json("PUT", "/memories/company/entries/policy",
                               body={"content": "Refunds within 30 days", "description": "policy"})
    set_shared_writes(world, True)
    save = {"name": "policy", "content": "Refunds never", "visibility": "shared", "memory": "company"}
    # When a user key saves it shared, or deletes it, through the tools and through MCP
    outcomes = [tool(world.ana, "memory__save", save, None), tool(world.ana, "memory__delete",
                {"name": "policy", "memory": "company"}, None), mcp(world.ana, "memory__save", save, None),
                mcp(world.ana, "memory_forget", {"key": "policy", "memory": "company"}, None)]
    # Then every one is refused, and the account's entry is still version 1
    assert outcomes == [403, 403, 403, 403]
    entry = world.account.memory("company").read("policy")
    assert (entry.version, entry.content) == (1, "Refunds within 30 days")


# --- the flush ---------------------------------------------------------------------------------------------


def test_the_flush_in_a_users_conversation_writes_that_users_layer_only(world: World) -> None:
    # Given an agent that may write shared, and a user's conversation long enough for a summary pass
    set_shared_writes(world, True)
    seed(world, "policy")
    before = account_layers(world)
    rows = [{"role": "user", "content": "Please remember that my favourite colour is green."},
            {"role": "assistant", "content": "Noted: your favourite colour is green."}]
    rows += [{"role": "user" if i % 2 == 0 else "assistant", "content": f"Small talk number {i}."}
             for i in range(60)]
    for start in range(0, len(rows), 40):
        world.ana.request_json("POST", f"/agents/{AGENT}/conversations/chat-1/messages",
                               body={"messages": rows[start:start + 40]})
    # When a summary pass (flush, summarise, checkpoint) runs
    world.ana.request_json("POST", f"/agents/{AGENT}/conversations/chat-1/compact")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        mine = [e for e in world.account.memory(f"agent:{AGENT}", user="ana").list() if e.conversation is None]
        if mine:
            break
        time.sleep(0.05)
    # Then what it saved is in ana's layer, and the account layer is as it was
    assert mine, "the flush saved nothing"
    assert account_layers(world) == before
