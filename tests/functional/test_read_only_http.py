"""A ``read_only`` account entry over real HTTP (SPEC §2.1, §2.3): no path makes a user's copy of it — a user key's
``PUT``, an account key's ``PUT ?user=``, the tools endpoint in both dialects, MCP's ``tools/call`` — and the
user's context pins the account's entry and lists it in the memory index, as ``memory__read`` returns it."""

from __future__ import annotations

import uuid
from typing import Any

import requests
from functional_support import Server, auth

TIMEOUT = 30
POLICY = "Refunds within 14 days, never more."


def call(server: Server, key: str, method: str, path: str, **kwargs: Any) -> requests.Response:
    headers = {**auth(key), **kwargs.pop("headers", {})}
    return requests.request(method, server.url(path), headers=headers, timeout=TIMEOUT, **kwargs)


def test_no_http_path_makes_a_users_copy_of_a_read_only_entry(server: Server) -> None:
    # Given a memory with a read_only entry, attached writable to an agent, and a user's key
    suffix = uuid.uuid4().hex[:8]
    memory, agent, user = f"rules-{suffix}", f"helper-{suffix}", f"ana-{suffix}"
    assert call(server, server.key, "PUT", f"/v1/memories/{memory}").status_code == 201
    saved = call(server, server.key, "PUT", f"/v1/memories/{memory}/entries/refunds",
                 json={"content": POLICY, "description": "Refund policy", "visibility": "read_only"})
    assert saved.status_code == 201, saved.text
    made = call(server, server.key, "PUT", f"/v1/agents/{agent}",
                json={"instructions": "Help.", "memories": [{"name": memory, "writable": True}]})
    assert made.status_code == 201, made.text
    key = call(server, server.key, "POST", "/v1/keys", json={"user": user}).json()["secret"]
    mine = "Mine: refunds whenever I like."

    # When the user saves that name by every path
    answers = {
        "PUT, user key": call(server, key, "PUT", f"/v1/memories/{memory}/entries/refunds", json={"content": mine}),
        "PUT, account key": call(server, server.key, "PUT", f"/v1/memories/{memory}/entries/refunds",
                                 params={"user": user}, json={"content": mine}),
        "memory__save": call(server, key, "POST", f"/v1/agents/{agent}/tools/memory__save", json={
            "arguments": {"name": "refunds", "content": mine, "memory": memory}, "conversation": "c1"}),
        "memory_store": call(server, key, "POST", f"/v1/agents/{agent}/tools/memory_store", json={
            "arguments": {"key": "refunds", "content": mine, "memory": memory}, "conversation": "c1"}),
    }
    mcp = call(server, key, "POST", "/v1/mcp", params={"agent": agent},
               headers={"Accept": "application/json, text/event-stream"},
               json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                     "params": {"name": "memory_store", "arguments": {"key": "refunds", "content": mine,
                                                                      "memory": memory}}})

    # Then each is a 403 read_only (MCP's as a tool error), and nothing landed in the user's layer
    assert {path: (a.status_code, a.json()["error"].get("reason")) for path, a in answers.items()} == {
        path: (403, "read_only") for path in answers}
    assert mcp.status_code == 200 and mcp.json()["result"]["isError"] is True
    assert mcp.json()["result"]["structuredContent"]["error"]["reason"] == "read_only"
    assert call(server, key, "GET", f"/v1/memories/{memory}/entries").json()["items"] == []
    # and every reader shows the user the account's entry: the tool's read, search, the pinned block, the index
    read = call(server, key, "POST", f"/v1/agents/{agent}/tools/memory__read",
                json={"arguments": {"name": "refunds", "memory": memory}, "conversation": "c1"}).json()
    assert read["result"]["entry"]["content"] == POLICY
    found = call(server, key, "GET", f"/v1/memories/{memory}/search", params={"q": "refunds"}).json()["items"]
    assert [(item["name"], item["user_id"]) for item in found] == [("refunds", None)]
    context = call(server, key, "GET", f"/v1/agents/{agent}/conversations/c1/context").json()
    assert context["pinned"]["entries"] == ["refunds"] and POLICY in context["pinned"]["text"]
    assert "refunds" in context["memory_index"]["text"] and mine not in context["pinned"]["text"]
