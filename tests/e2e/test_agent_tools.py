"""The agent tools through the real API handler, in-process (SPEC §9): what is listed where, what runs,
and what is refused — a client may call any tool, listed or not."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import agentmem
import pytest
from agentmem.api.app import lambda_handler
from agentmem.bootstrap import build_container, ensure_default_account, set_container
from agentmem.settings import Settings

NOCLICK = ["memory__search", "memory__read", "memory__save", "memory__delete"]
NOORLE = ["memory_recall", "memory_store", "memory_forget", "journal_message_search", "journal_tool_call_view"]


@pytest.fixture
def client(tmp_path: Path) -> Iterator[agentmem.Client]:
    container = build_container(Settings(data_dir=tmp_path))
    key = ensure_default_account(container)
    set_container(container)
    yield agentmem.Client("http://in-process", key, transport=agentmem.InProcessTransport(lambda_handler))
    set_container(None)


@pytest.fixture
def agent(client: agentmem.Client) -> str:
    client.request_json("PUT", "/agents/support", body={"instructions": "Answer billing questions."})
    return "support"


def tools(client: agentmem.Client, agent: str = "support", **params: Any) -> list[str]:
    data = client.request_json("GET", f"/agents/{agent}/tools", params=params)
    return [item["name"] for item in data["items"]]


def run(client: agentmem.Client, tool: str, arguments: Any, *, user: str | None = None, **body: Any) -> dict[str, Any]:
    return client.request_json(
        "POST", f"/agents/support/tools/{tool}", params={"user": user}, body={"arguments": arguments, **body}
    )


def refused(client: agentmem.Client, tool: str, arguments: Any, **kwargs: Any) -> agentmem.AgentmemError:
    with pytest.raises(agentmem.AgentmemError) as caught:
        run(client, tool, arguments, **kwargs)
    return caught.value


def stored(client: agentmem.Client, user: str | None = None) -> list[str]:
    return [e.name for e in client.memory("agent:support", user=user).list()]


# --- listing ----------------------------------------------------------------------------------------


def test_the_listing_defaults_to_noclick_in_mcp_format(client: agentmem.Client, agent: str) -> None:
    data = client.request_json("GET", "/agents/support/tools")
    assert (data["dialect"], data["format"], data["next_cursor"]) == ("noclick", "mcp", None)
    assert [item["name"] for item in data["items"]] == NOCLICK
    assert set(data["items"][0]) == {"name", "description", "inputSchema"}


@pytest.mark.parametrize(("fmt", "keys"), [
    ("bedrock", {"toolSpec"}), ("openai", {"type", "function"}), ("anthropic", {"name", "description", "input_schema"}),
])
def test_each_format_is_served(client: agentmem.Client, agent: str, fmt: str, keys: set[str]) -> None:
    data = client.request_json("GET", "/agents/support/tools", params={"format": fmt})
    assert data["format"] == fmt
    assert all(set(item) == keys for item in data["items"])


@pytest.mark.parametrize(("surface", "user", "expected"), [
    ("agent", None, NOORLE),
    ("agent", "user_42", NOORLE),
    ("test", None, ["memory_recall", "journal_message_search", "journal_tool_call_view"]),  # read-only
    ("mcp", "user_42", ["memory_recall", "memory_store", "memory_forget"]),  # never journal tools
    ("mcp", None, ["memory_recall", "memory_store", "memory_forget"]),
    ("external", "caller", ["memory_recall"]),
    ("browser", "user_42", ["memory_recall", "memory_store", "memory_forget"]),
])
def test_only_the_tools_a_surface_allows_are_listed(
    client: agentmem.Client, agent: str, surface: str, user: str | None, expected: list[str]
) -> None:
    assert tools(client, dialect="noorle", surface=surface, user=user) == expected


def test_without_the_memory_capability_no_write_tool_is_listed(client: agentmem.Client) -> None:
    client.request_json("PUT", "/agents/reader", body={"capabilities": {"memory": False}})
    assert tools(client, "reader") == ["memory__search", "memory__read"]


@pytest.mark.parametrize(("params", "field"), [
    ({"dialect": "klingon"}, "dialect"), ({"format": "xml"}, "format"), ({"surface": "moon"}, "surface"),
])
def test_a_bad_listing_parameter_is_400_naming_it(
    client: agentmem.Client, agent: str, params: dict[str, str], field: str
) -> None:
    with pytest.raises(agentmem.Invalid) as caught:
        tools(client, **params)
    assert caught.value.field == field


def test_an_unknown_agent_has_no_tools(client: agentmem.Client) -> None:
    with pytest.raises(agentmem.NotFound):
        tools(client, "nobody")


# --- running --------------------------------------------------------------------------------------------


def test_save_search_read_delete_in_a_users_conversation(client: agentmem.Client, agent: str) -> None:
    # When the agent saves in user_42's conversation
    saved = run(client, "memory__save", {"name": "plan", "content": "Team plan, yearly.", "description": "Her plan"},
                user="user_42")
    # Then it lands in that user's layer of its own memory
    assert (saved["tool"], saved["operation"]) == ("memory__save", "save")
    assert saved["result"]["created"] is True and saved["result"]["memory"] == "agent:support"
    assert (saved["result"]["entry"]["user_id"], saved["result"]["entry"]["version"]) == ("user_42", 1)
    assert saved["text"] == "Created 'plan' (version 1) in agent:support, user user_42's layer."
    assert stored(client, "user_42") == ["plan"] and stored(client) == []

    found = run(client, "memory__search", {"query": "plan"}, user="user_42")
    assert [i["name"] for i in found["result"]["items"]] == ["plan"] and found["result"]["mode"] == "hybrid"
    read = run(client, "memory__read", {"name": "plan"}, user="user_42")
    assert read["result"]["entry"]["content"] == "Team plan, yearly." and read["result"]["also_in"] == []
    deleted = run(client, "memory__delete", {"name": "plan", "version": 1}, user="user_42")
    assert deleted["result"] == {"deleted": "plan", "memory": "agent:support", "version": 1}
    assert stored(client, "user_42") == []


def test_sensitive_content_is_forced_private_and_says_so(client: agentmem.Client, agent: str) -> None:
    # Given an agent whose saves in a user's conversation may ask for the account's layer
    client.request_json("PUT", "/agents/support", body={"user_conversations_write_shared": True})
    saved = run(client, "memory__save", {
        "name": "contact", "content": "Write to ana@example.com", "description": "Her email", "visibility": "shared",
    }, user="user_42")
    # Then an email address keeps it in the user's layer, and the answer says so
    assert saved["result"]["forced"] == "sensitive_content"
    assert saved["result"]["entry"]["user_id"] == "user_42"
    assert "kept private to the user" in saved["text"]


def test_noorle_store_takes_a_new_entrys_description_from_its_first_line(client: agentmem.Client, agent: str) -> None:
    saved = run(client, "memory_store", {"key": "tone", "content": "# Warm and brief\nNo jargon."})
    assert saved["result"]["entry"]["description"] == "Warm and brief"
    # and an existing entry saved without one keeps its own
    run(client, "memory_store", {"key": "tone", "content": "Warm, brief.", "description": "How we write"})
    again = run(client, "memory_store", {"key": "tone", "content": "Warmer."})
    assert again["result"]["entry"]["description"] == "How we write"


def test_noclick_save_needs_a_description_for_a_new_entry(client: agentmem.Client, agent: str) -> None:
    error = refused(client, "memory__save", {"name": "tone", "content": "Warm."})
    assert (error.status, error.details["field"]) == (400, "arguments.description")
    assert stored(client) == []


def test_a_service_rule_names_the_argument_in_the_dialects_words(client: agentmem.Client, agent: str) -> None:
    error = refused(client, "memory_store", {"key": "context.abc", "content": "x", "description": "d"})
    assert (error.status, error.details["field"]) == (400, "arguments.key")
    error = refused(client, "memory__read", {"name": "plan", "memory": "company"})
    assert (error.status, error.details["field"]) == (404, "arguments.memory")


@pytest.mark.parametrize(("surface", "user"), [("external", "caller"), ("test", None)])
def test_a_write_on_a_read_only_surface_is_403_and_stores_nothing(
    client: agentmem.Client, agent: str, surface: str, user: str | None
) -> None:
    error = refused(client, "memory__save", {"name": "x", "content": "c", "description": "d"}, user=user,
                    surface=surface)
    assert error.status == 403 and "read-only" in error.message
    assert stored(client) == []
    if user is not None:
        assert stored(client, user) == []


def test_without_the_memory_capability_a_write_is_403(client: agentmem.Client) -> None:
    client.request_json("PUT", "/agents/support", body={"capabilities": {"memory": False}})
    error = refused(client, "memory_forget", {"key": "x"})
    assert error.status == 403 and "memory capability off" in error.message


def test_a_journal_tool_is_403_where_there_are_none_and_answers_where_there_are(
    client: agentmem.Client, agent: str
) -> None:
    on_mcp = refused(client, "journal_message_search", {"query": "refund"}, user="user_42", surface="mcp")
    assert on_mcp.status == 403 and "no journal tools" in on_mcp.message
    # Given a conversation where a tool was called
    client.request_json("POST", f"/agents/{agent}/conversations/ticket-1/messages", body={"messages": [
        {"role": "user", "content": "Where is my refund?"},
        {"role": "tool_call", "tool_name": "lookup", "tool_call_id": "call_1", "arguments": {"order": 42}},
        {"role": "tool_result", "tool_call_id": "call_1", "result": {"status": "refunded"}},
    ]})
    # When the agent's tools look into its journal
    found = client.request_json("POST", f"/agents/{agent}/tools/journal_message_search",
                                body={"arguments": {"query": "refund"}, "conversation": "ticket-1"})
    view = client.request_json("POST", f"/agents/{agent}/tools/journal_tool_call_view",
                               body={"arguments": {"tool_call_id": "call_1"}, "conversation": "ticket-1"})
    # Then they find the message and the whole tool call
    # (the message first, then the tool call that answered it, on its neighbour's words)
    assert [(i["conversation"], i["seq"]) for i in found["result"]["items"]] == [("ticket-1", 1), ("ticket-1", 2)]
    assert (view["result"]["arguments"], view["result"]["result"]) == ({"order": 42}, {"status": "refunded"})
    missing = refused(client, "journal_tool_call_view", {"tool_call_id": "call_9"}, conversation="ticket-1")
    assert missing.status == 404


def test_an_unknown_tool_is_404_naming_the_tools(client: agentmem.Client, agent: str) -> None:
    error = refused(client, "memory.search", {"query": "x"})
    assert error.status == 404
    assert error.details["tools"] == NOCLICK + NOORLE


@pytest.mark.parametrize(("body", "field"), [
    ({"arguments": ["x"]}, "arguments"),
    ({"arguments": {}, "surface": "moon"}, "surface"),
    ({"arguments": {}, "conversation": "has space"}, "conversation"),
    ({"arguments": {}, "colour": "red"}, "colour"),
])
def test_a_bad_body_is_400_naming_the_field(
    client: agentmem.Client, agent: str, body: dict[str, Any], field: str
) -> None:
    with pytest.raises(agentmem.Invalid) as caught:
        client.request_json("POST", "/agents/support/tools/memory__read", body=body)
    assert caught.value.field == field


def test_tool_calls_are_counted_and_not_billed(client: agentmem.Client, agent: str) -> None:
    tools(client)
    run(client, "memory__search", {"query": "x"})
    usage = {(u.operation, u.billable) for u in client.usage()}
    assert {("tools.list", False), ("tools.search", False)} <= usage
