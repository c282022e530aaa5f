"""The SDK's agents (agentmem.client.agent) against the real API handler, in-process; a fake
transport only where the server cannot be made to answer on cue (a creation race, a 501)."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import agentmem
import pytest
from agentmem.api.app import lambda_handler
from agentmem.bootstrap import build_container, ensure_default_account, set_container
from agentmem.client import (
    Agent,
    Attached,
    Client,
    Conflict,
    Forbidden,
    InProcessTransport,
    Invalid,
    Memory,
    MemoryAttachment,
    NotFound,
    Rejected,
    ServerError,
    TransportResponse,
    Unsupported,
)
from agentmem.client.agent_settings import SettingsDifferWarning, settings_body
from agentmem.settings import Settings


class Recording:
    """The in-process transport, keeping the headers of every request it sends."""

    def __init__(self) -> None:
        self.inner = InProcessTransport(lambda_handler)
        self.sent: list[tuple[str, str, dict[str, str]]] = []

    def request(
        self, method: str, path: str, *, params: dict[str, str] | None, headers: dict[str, str], body: bytes | None
    ) -> TransportResponse:
        self.sent.append((method, path, headers))
        return self.inner.request(method, path, params=params, headers=headers, body=body)


class Canned:
    """Answers with canned responses, in order, and records what was asked."""

    def __init__(self, *responses: TransportResponse) -> None:
        self.responses = list(responses)
        self.sent: list[tuple[str, str, dict[str, str]]] = []

    def request(
        self, method: str, path: str, *, params: dict[str, str] | None, headers: dict[str, str], body: bytes | None
    ) -> TransportResponse:
        self.sent.append((method, path, headers))
        return self.responses.pop(0)


def answer(status: int, payload: Any) -> TransportResponse:
    return TransportResponse(status, {"content-type": "application/json"}, json.dumps(payload).encode())


@pytest.fixture(autouse=True)
def quiet_metrics(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")


@pytest.fixture
def recording() -> Recording:
    return Recording()


@pytest.fixture
def client(tmp_path: Path, recording: Recording) -> Iterator[Client]:
    container = build_container(Settings(data_dir=tmp_path))
    key = ensure_default_account(container)
    set_container(container)
    yield Client("http://in-process", key, transport=recording)
    set_container(None)


# --- creating and finding agents --------------------------------------------------------------


def test_from_name_creates_the_agent_once_with_the_seed_settings(client: Client) -> None:
    # Given a shared memory
    company = Memory.from_name("company", create_if_missing=True, client=client)
    # When two agents are made on first use, one reading it and one writing it
    support = Agent.from_name(
        "support", create_if_missing=True, instructions="Answer billing questions.", memories=[company],
        client=client,
    )
    scribe = Agent.from_name("scribe", create_if_missing=True, memories=[company.writable()], client=client)
    # Then each attaches it as asked, at version 1
    assert support.memories == [("company", False)]
    assert scribe.memories == [MemoryAttachment("company", writable=True)]
    assert (support.instructions, support.version, support.user_id) == ("Answer billing questions.", 1, None)
    assert support.capabilities == {"memory": True}
    # When from_name runs again with other settings
    with pytest.warns(SettingsDifferWarning) as warned:
        again = Agent.from_name("support", create_if_missing=True, instructions="Something else", client=client)
    # Then the existing agent is returned unchanged, with a warning naming the setting it did not apply
    assert (again.instructions, again.version) == ("Answer billing questions.", 1)
    assert again == support
    (warning,) = warned.list
    assert str(warning.message) == (
        "agent 'support' already exists (version 1) with other instructions than given: create_if_missing=True "
        "returns it as stored and does not apply them; change it with agent.update(instructions=...)")
    assert warning.filename == __file__  # pointing at the caller's line, not into the SDK


def test_from_name_warns_naming_each_setting_that_differs_and_only_those(client: Client) -> None:
    # Given an agent made elsewhere without memories (another page, another process)
    company = Memory.from_name("company", create_if_missing=True, client=client)
    Agent.create("support", instructions="Answer billing questions.", client=client)
    # When from_name asks for it with the same instructions, memories and another window
    with pytest.warns(SettingsDifferWarning, match=r"with other memories, window_messages than given") as warned:
        found = Agent.from_name("support", create_if_missing=True, instructions="Answer billing questions.",
                                memories=[company], window_messages=4, client=client)
    # Then the warning names the two that differ, and the agent is as stored
    assert len(warned.list) == 1 and found.memories == []
    # and asking with the stored settings (or none) says nothing
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Agent.from_name("support", create_if_missing=True, instructions="Answer billing questions.", client=client)
        Agent.from_name("support", create_if_missing=True, client=client)
        Agent.from_name("support", create_if_missing=True, memories=[], window_messages=None, client=client)


def test_create_sends_if_none_match_and_refuses_an_existing_agent(client: Client, recording: Recording) -> None:
    # Given an agent made with create
    Agent.create("support", instructions="v1", client=client)
    # When it is created again
    with pytest.raises(Conflict) as exists:
        Agent.create("support", instructions="v2", client=client)
    # Then the server refused the PUT it sent with If-None-Match: *, and nothing changed
    assert exists.value.status == 412 and exists.value.current_version == 1
    assert exists.value.message == "agent 'support' already exists (version 1)"
    puts = [headers for method, _, headers in recording.sent if method == "PUT"]
    assert [h.get("If-None-Match") for h in puts] == ["*", "*"]
    assert client.agents.get("support").instructions == "v1"


def test_from_name_without_create_if_missing_raises_not_found(client: Client) -> None:
    # Given no agent
    # When it is looked up without create_if_missing
    # Then NotFound, and nothing was created
    with pytest.raises(NotFound):
        Agent.from_name("absent", client=client)
    assert Agent.list(client=client) == []


def test_from_name_that_loses_a_creation_race_returns_the_winners_agent() -> None:
    # Given a server where the agent is absent, then created by someone else before our PUT
    theirs = {"name": "support", "instructions": "theirs", "version": 1, "memories": []}
    fake = Canned(
        answer(404, {"error": {"code": "not_found", "message": "no agent 'support'"}}),
        answer(412, {"error": {"code": "precondition_failed", "message": "exists", "current_version": 1}}),
        answer(200, theirs),
    )
    client = Client("http://fake", "sk-test", transport=fake)
    # When from_name creates it if missing
    with pytest.warns(SettingsDifferWarning, match="with other instructions than given"):
        agent = Agent.from_name("support", create_if_missing=True, instructions="ours", client=client)
    # Then it read, tried to create, and read again: the winner's agent (its settings are not ours: said so)
    assert [(m, p) for m, p, _ in fake.sent] == [
        ("GET", "/v1/agents/support"),
        ("PUT", "/v1/agents/support"),
        ("GET", "/v1/agents/support"),
    ]
    assert agent.instructions == "theirs"


def test_update_changes_only_what_is_passed_and_honours_the_version(client: Client, recording: Recording) -> None:
    # Given an agent with instructions and a small window
    agent = Agent.create("support", instructions="v1", window_messages=5, client=client)
    # When its instructions are changed at version 1
    info = agent.update(instructions="v2", version=1)
    # Then it is at version 2 with the window kept, and the PUT carried If-Match
    assert (info.version, info.instructions, info.window_messages) == (2, "v2", 5)
    assert recording.sent[-1][2].get("If-Match") == '"1"'
    # When a stale version is sent
    with pytest.raises(Conflict) as stale:
        agent.update(instructions="stale", version=1)
    # Then the change is refused with the current version
    assert stale.value.current_version == 2
    # When the window is reset and the memory capability turned off
    info = agent.update(window_messages=None, memory=False)
    # Then both landed
    assert (info.window_messages, info.memory_capability, info.instructions) == (None, False, "v2")


def test_properties_fetch_the_agent_when_nothing_was_asked_yet(client: Client) -> None:
    # Given an agent made elsewhere
    client.agents.create("support", instructions="Answer billing questions.")
    # When a fresh handle is asked for its instructions
    handle = client.agent("support")
    # Then it fetched them
    assert handle.last_info is None
    assert handle.instructions == "Answer billing questions."
    assert handle.last_info is not None and handle.last_info.own_memory == "agent:support"


def test_a_users_agent_and_its_memory_belong_to_that_user(client: Client) -> None:
    # Given an agent made for user u1
    helper = Agent.create("helper", user="u1", client=client)
    # Then it is u1's, listed among u1's agents, and its own memory is u1's
    assert helper.user_id == "u1"
    assert [a.name for a in Agent.list(user="u1", client=client)] == ["helper"]
    assert (helper.memory.name, helper.memory.user) == ("agent:helper", "u1")


def test_attachments_follow_the_scope_rules(client: Client) -> None:
    # Given a memory of user u1
    Memory.create("diary", user="u1", client=client)
    # When an account agent attaches it, or a memory that does not exist
    # Then each is refused, and no agent was made
    with pytest.raises(Forbidden):
        Agent.create("support", memories=["diary"], client=client)
    with pytest.raises(NotFound):
        Agent.create("support", memories=["absent"], client=client)
    with pytest.raises(Invalid):
        Agent.create("support", window_messages=21, client=client)
    assert Agent.list(client=client) == []


# --- its memory, search, trash ----------------------------------------------------------------


def test_search_looks_in_its_own_memory_and_what_it_attaches(client: Client) -> None:
    # Given an agent attaching a company memory, with an entry in each and one in a user's layer
    company = Memory.from_name("company", create_if_missing=True, client=client)
    company.save("refunds", "Refund within 30 days.", description="Our refund rules")
    support = Agent.from_name("support", create_if_missing=True, memories=[company], client=client)
    assert support.memory_id == "agent:support"
    support.memory.save("refund-tone", "Apologise first.", description="How to talk about refunds")
    support.memory.save("refund-plan", "Ana is on the Team plan.", description="Her refund terms", user="user_42")
    # When the agent searches for a user
    hits = support.search("refund", user="user_42")
    # Then every memory it reads answered, each hit naming its memory and whose layer it is in
    assert {(h.name, h.memory, h.user_id) for h in hits} == {
        ("refunds", "company", None),
        ("refund-tone", "agent:support", None),
        ("refund-plan", "agent:support", "user_42"),
    }
    assert all(h.score is not None and h.content for h in hits)
    # and without the user, the user's entry is not seen
    assert "refund-plan" not in {h.name for h in support.search("refund", limit=5)}


def test_delete_restore_and_purge(client: Client) -> None:
    # Given an agent with an entry in its own memory
    support = Agent.create("support", client=client)
    support.memory.save("tone", "Warm.", description="How we write")
    # When it is deleted
    trashed = support.delete()
    # Then it is in the trash, not among the live agents
    assert trashed.deleted_at is not None and trashed.purge_after is not None
    assert [a.name for a in Agent.list(trash=True, client=client)] == ["support"]
    assert Agent.list(client=client) == []
    # When it is restored
    assert support.restore().deleted_at is None
    # Then it is live again with its memory
    assert [e.name for e in support.memory.list()] == ["tone"]
    # When it is purged
    receipt = support.purge()
    # Then the receipt counts what went, and the agent is gone
    assert receipt.agent == "support"
    assert (receipt.removed["agents"], receipt.removed["memories"], receipt.removed["entries"]) == (1, 1, 1)
    with pytest.raises(NotFound):
        support.info()


def test_delete_is_refused_while_another_agent_attaches_its_memory(client: Client) -> None:
    # Given an agent whose own memory another agent reads
    support = Agent.create("support", client=client)
    Agent.create("scribe", memories=[support], client=client)
    # When it is deleted
    with pytest.raises(Attached) as attached:
        support.delete()
    # Then the error names the agent attaching it
    assert attached.value.attached_to == ["scribe"]


# --- tools ---------------------------------------------------------------------------------------


def test_tools_come_in_each_dialect_and_format(client: Client) -> None:
    # Given an agent
    support = Agent.create("support", client=client)
    # When its tools are asked for, by default and in the noorle dialect for OpenAI
    mcp = support.tools()
    openai = support.tools(dialect="noorle", format="openai")
    # Then the default is the noclick names as MCP tools, each with an input schema
    assert {t["name"] for t in mcp} == {"memory__search", "memory__read", "memory__save", "memory__delete"}
    assert all("inputSchema" in t for t in mcp)
    assert {"memory_recall", "memory_store", "memory_forget"} <= {t["function"]["name"] for t in openai}


def test_call_tool_saves_reads_and_searches_as_the_agent(client: Client) -> None:
    # Given an agent
    support = Agent.create("support", client=client)
    # When it saves through its tool, then reads and searches
    saved = support.call_tool(
        "memory__save", {"name": "tone", "content": "Warm, brief.", "description": "How we write"}
    )
    read = support.call_tool("memory__read", {"name": "tone"})
    found = support.call_tool("memory__search", {"query": "brief"})
    # Then each answers with its operation, its result and a text for the model
    assert (saved.tool, saved.operation, saved.result["created"]) == ("memory__save", "save", True)
    assert saved.entry is not None and saved.entry.name == "tone"
    assert read.entry is not None and read.entry.content == "Warm, brief."
    assert [e.name for e in found.entries] == ["tone"]
    assert saved.text and read.text and found.text
    # and the entry landed in the agent's own memory
    assert support.memory.read("tone").updated_by == "agent"


def test_refused_tool_calls_raise_typed_errors_and_store_nothing(client: Client) -> None:
    # Given an agent
    support = Agent.create("support", client=client)
    save = {"name": "tone", "content": "Warm.", "description": "How we write"}
    # When it saves from an external surface, privately over anonymous MCP, or searches the journal in a browser
    with pytest.raises(Forbidden):
        support.call_tool("memory__save", save, surface="external")
    with pytest.raises(Rejected) as anonymous:
        support.call_tool("memory__save", {**save, "visibility": "private"}, surface="mcp")
    with pytest.raises(Forbidden):
        support.call_tool("journal_message_search", {"query": "refund"}, surface="browser")
    # Then each is its own error, and nothing was stored
    assert anonymous.value.code == "no_user_context"
    assert support.memory.list() == []


def test_a_501_is_unsupported_not_a_retryable_server_error() -> None:
    # Given a server answering 501, with and without an error body
    fake = Canned(
        answer(501, {"error": {"code": "not_implemented", "message": "journal search needs conversations"}}),
        TransportResponse(501, {}, b"Not Implemented"),
    )
    agent = Client("http://fake", "sk-test", transport=fake).agent("support")
    # When tools are called
    for _ in range(2):
        with pytest.raises(Unsupported) as unsupported:
            agent.call_tool("journal_message_search", {"query": "x"})
        # Then the error is Unsupported, never a ServerError
        assert not isinstance(unsupported.value, ServerError)
        assert unsupported.value.code == "not_implemented"


# --- the settings body ---------------------------------------------------------------------------


def test_settings_body_turns_memories_and_capabilities_into_json() -> None:
    # Given every kind of attachment and both ways to say the capability
    company = Memory("company")
    settings: dict[str, Any] = {
        "instructions": None,
        "memories": [company, company.writable(), "faq", ("notes", True), Agent("scribe")],
        "capabilities": {"memory": True},
        "memory": False,
    }
    # When a creation body is made
    body = settings_body(settings, drop_none=True)
    # Then None is left out, attachments are {name, writable}, and memory= wins over capabilities
    assert body == {
        "memories": [
            {"name": "company", "writable": False},
            {"name": "company", "writable": True},
            {"name": "faq", "writable": False},
            {"name": "notes", "writable": True},
            {"name": "agent:scribe", "writable": False},
        ],
        "capabilities": {"memory": False},
    }
    # and an update body keeps an explicit None
    assert settings_body({"window_messages": None}, drop_none=False) == {"window_messages": None}
    with pytest.raises(TypeError):
        settings_body({"instruction": "typo"}, drop_none=True)


def test_the_names_are_exported_from_the_package() -> None:
    # Then the agent names are importable from agentmem itself, as Memory is
    assert agentmem.Agent is Agent
    assert agentmem.MemoryAttachment is MemoryAttachment
    assert {"Agent", "Agents", "AgentInfo", "ToolResult", "PurgeReceipt", "Unsupported"} <= set(agentmem.__all__)
