"""The OpenAPI document is a contract a client can be generated from: it validates, every 2xx JSON answer
has a typed schema, ``openapi-python-client`` generates a typed client from it offline, and that client
saves, reads and searches entries, writes and reads a workspace file, appends in a model API's shape,
reads a checkpoint, the context in each format (with a summary and without) and the tool call view, lists
the tools in each format, runs every tool operation and speaks MCP against a real ``agentmem serve``,
parsing each answer into the models the document names (and each answer validates against its schema, as
a fuzzer checks it). The document's server honours the stage API Gateway serves it under."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import requests
from functional_support import Server

PACKAGE = "agentmem_generated_client"
GENERATOR = Path(sys.executable).with_name("openapi-python-client")


@pytest.fixture(scope="module")
def document(server: Server) -> dict[str, Any]:
    response = requests.get(server.url("/v1/openapi.json"), timeout=10)
    assert response.status_code == 200
    found: dict[str, Any] = response.json()
    return found


@pytest.fixture(scope="module")
def generated(server: Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """The client openapi-python-client generates from the served document (no network: a file on disk)."""
    workdir = tmp_path_factory.mktemp("generated-client")
    spec = workdir / "openapi.json"
    spec.write_bytes(requests.get(server.url("/v1/openapi.json"), timeout=10).content)
    env = {**os.environ, "PATH": f"{GENERATOR.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        [str(GENERATOR), "generate", "--path", str(spec), "--meta", "none", "--output-path", str(workdir / PACKAGE)],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # every operation and every answer made it into the client: nothing was left out with a warning
    assert "Warning" not in done.stdout + done.stderr, done.stdout + done.stderr
    sys.path.insert(0, str(workdir))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(workdir))
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
            del sys.modules[name]


def _module(package: ModuleType, dotted: str) -> Any:
    return importlib.import_module(f"{package.__name__}.{dotted}")


def test_the_document_is_valid_openapi(document: dict[str, Any]) -> None:
    from openapi_spec_validator import validate

    validate(document)  # raises with the first problem
    assert document["servers"] == [{"url": "/"}]  # agentmem serve: the paths start at the root


def _typed(document: dict[str, Any], schema: dict[str, Any]) -> bool:
    """A schema with fields: its own properties, or a union (oneOf, anyOf) of schemas that have them."""
    ref = schema.get("$ref")
    if ref is not None:
        return _typed(document, document["components"]["schemas"][ref.rsplit("/", 1)[-1]])
    variants = schema.get("oneOf") or schema.get("anyOf")
    if variants:
        return all(_typed(document, variant) for variant in variants)
    return bool(schema.get("properties"))


def test_every_2xx_json_answer_has_a_typed_schema(document: dict[str, Any]) -> None:
    # Given every operation's 2xx answers that carry JSON (a file's bytes and a 204 carry none)
    untyped = []
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            for code, response in operation["responses"].items():
                schema = response.get("content", {}).get("application/json", {}).get("schema")
                # Then each names a schema with its fields: a new route answering a plain dict fails here
                if code.startswith("2") and schema is not None and not _typed(document, schema):
                    untyped.append(f"{method.upper()} {path} {code}")
    assert untyped == []


def _conforms(document: dict[str, Any], name: str, body: Any) -> None:
    """The answer validates against the document's schema, as a fuzzer checks it (a oneOf: exactly one)."""
    from jsonschema import Draft202012Validator

    Draft202012Validator({"$ref": f"#/components/schemas/{name}", "components": document["components"]}).validate(
        body)


def test_the_document_carries_the_request_rules_and_the_link_routes(document: dict[str, Any]) -> None:
    save = document["paths"]["/v1/memories/{memory}/entries/{name}"]["put"]
    by_name = {p["name"]: p["schema"] for p in save["parameters"] if p["in"] == "path"}
    assert by_name["name"]["pattern"] == "^[a-z0-9._-]{1,64}$" and by_name["name"]["maxLength"] == 64
    assert by_name["memory"]["pattern"] == "^(agent:)?[a-z0-9._-]{1,64}$"
    body = document["components"]["schemas"]["SaveEntryBody"]["properties"]
    assert (body["content"]["minLength"], body["content"]["maxLength"]) == (1, 20_000)
    assert body["description"]["maxLength"] == 200
    assert (body["importance"]["minimum"], body["importance"]["maximum"]) == (0, 1)
    assert body["category"]["pattern"] == "^[a-z0-9_]{1,32}$"
    assert {"format": "date-time", "type": "string"} in body["expires_at"]["anyOf"]
    links = document["paths"]["/v1/links/{key}"]
    assert set(links) == {"get", "head", "put"}
    assert all(operation["security"] == [] for operation in links.values())  # a link needs no key


def test_a_generated_client_saves_reads_and_searches_entries(
    generated: ModuleType, server: Server, http: requests.Session, memory: str
) -> None:
    client = generated.AuthenticatedClient(base_url=server.base_url, token=server.key)
    models = _module(generated, "models")
    save = _module(generated, "api.entries.save_entry")
    read = _module(generated, "api.entries.read_entry")
    search = _module(generated, "api.entries.search_memory")
    expires = datetime.now(UTC).replace(microsecond=0) + timedelta(days=30)
    # When it saves a new entry, with an expiry typed as the document says (a date-time)
    body = models.SaveEntryBody(content="Refunds are paid back within 14 days.", description="Refund policy",
                                category="policy", importance=0.75, expires_at=expires.isoformat())
    answer = save.sync_detailed(memory, "refunds", client=client, body=body)
    # Then the 201 parses into the typed model of a saved entry
    assert answer.status_code == 201, answer.content
    saved = answer.parsed
    assert isinstance(saved, models.EntrySaved)
    assert (saved.name, saved.memory, saved.version, saved.category) == ("refunds", memory, 1, "policy")
    assert saved.visibility == models.EntrySavedVisibility.SHARED
    assert saved.expires_at == expires
    assert isinstance(saved.created_at, datetime)
    # and a read parses into an entry with its content
    entry = read.sync(memory, "refunds", client=client)
    assert isinstance(entry, models.Entry)
    assert entry.content == "Refunds are paid back within 14 days." and entry.importance == 0.75
    # and a search into a page of hits with their scores
    page = search.sync(memory, client=client, q="refund", mode="keyword")
    assert isinstance(page, models.SearchPage)
    assert [hit.name for hit in page.items] == ["refunds"]
    assert 0 < page.items[0].score <= 1 and page.mode == models.SearchPageMode.KEYWORD
    # and an answer outside 2xx parses into the error shape
    missing = read.sync_detailed(memory, "no-such-entry", client=client)
    assert missing.status_code == 404 and isinstance(missing.parsed, models.Error)
    assert missing.parsed.error.code == "not_found"


def test_a_generated_client_parses_memories_agents_keys_and_the_health_check(
    generated: ModuleType, server: Server
) -> None:
    client = generated.AuthenticatedClient(base_url=server.base_url, token=server.key)
    models = _module(generated, "models")
    name = f"mem-{uuid.uuid4().hex[:8]}"
    put_memory = _module(generated, "api.memories.put_memory")
    list_memories = _module(generated, "api.memories.list_memories")
    put_agent = _module(generated, "api.agents.put_agent")
    create_key = _module(generated, "api.keys.create_key")
    list_keys = _module(generated, "api.keys.list_keys")
    health = _module(generated, "api.system.get_health")
    # a memory made, and found in the list
    made = put_memory.sync_detailed(name, client=client, body=models.EmptyBody())  # (an optional body: given)
    assert made.status_code == 201 and isinstance(made.parsed, models.Memory)
    assert (made.parsed.name, made.parsed.entry_count, made.parsed.deleted_at) == (name, 0, None)
    memories = list_memories.sync(client=client)
    assert isinstance(memories, models.MemoryPage) and name in [m.name for m in memories.items]
    # an agent made that reads it
    body = models.AgentBody(memories=[models.AttachmentBody(name=name, writable=True)])
    agent = put_agent.sync_detailed(f"agent-{uuid.uuid4().hex[:8]}", client=client, body=body)
    assert agent.status_code == 201 and isinstance(agent.parsed, models.Agent)
    assert [(a.name, a.writable) for a in agent.parsed.memories] == [(name, True)]
    assert agent.parsed.version == 1 and agent.parsed.own_memory == f"agent:{agent.parsed.name}"
    # a key made (its secret shown once), then listed without it
    key = create_key.sync_detailed(client=client, body=models.CreateKeyBody(user="user_7"))
    assert key.status_code == 201 and isinstance(key.parsed, models.KeyCreated)
    assert key.parsed.kind == models.KeyCreatedKind.USER and key.parsed.secret.endswith(key.parsed.last4)
    keys = list_keys.sync(client=client)
    assert isinstance(keys, models.KeyPage) and key.parsed.id in [k.id for k in keys.items]
    # and the health check, which needs no key
    alive = health.sync(client=generated.Client(base_url=server.base_url))
    assert isinstance(alive, models.Health) and alive.backend == models.HealthBackend.EMBEDDED


def test_a_generated_client_writes_and_reads_a_workspace_file(
    generated: ModuleType, server: Server, http: requests.Session
) -> None:
    client = generated.AuthenticatedClient(base_url=server.base_url, token=server.key)
    models = _module(generated, "models")
    types = _module(generated, "types")
    agent = f"agent-{uuid.uuid4().hex[:8]}"
    put_agent = _module(generated, "api.agents.put_agent")
    write = _module(generated, "api.workspaces.write_file")
    read = _module(generated, "api.workspaces.read_file")
    assert put_agent.sync_detailed(agent, client=client, body=models.AgentBody()).status_code == 201
    data = b"quarter,revenue\nQ3,1200\n"
    # When it writes a file into a conversation's workspace
    written = write.sync_detailed(agent, "order-42", "reports/q3.csv", client=client,
                                  body=types.File(payload=data, file_name="q3.csv"))
    # Then the answer parses into the file's typed record
    assert written.status_code == 200, written.content
    assert isinstance(written.parsed, models.WorkspaceFile)
    assert (written.parsed.path, written.parsed.size_bytes) == ("reports/q3.csv", len(data))
    # and reading it back gives its bytes
    answer = read.sync_detailed(agent, "order-42", "reports/q3.csv", client=client)
    assert answer.status_code == 200 and answer.content == data
    # and a download link to it parses, and works without the key
    link = _module(generated, "api.workspaces.create_link")
    made = link.sync_detailed(agent, "order-42", client=client,
                              body=models.WorkspaceLinkBody(path="reports/q3.csv", expires_in_s=600))
    assert made.status_code == 201 and isinstance(made.parsed, models.WorkspaceLink)
    assert (made.parsed.method, made.parsed.expires_in_s) == (models.WorkspaceLinkMethod.GET, 600)
    assert requests.get(made.parsed.url, timeout=10).content == data



def test_a_generated_client_parses_a_conversation_and_its_messages(
    generated: ModuleType, server: Server, http: requests.Session
) -> None:
    client = generated.AuthenticatedClient(base_url=server.base_url, token=server.key)
    models = _module(generated, "models")
    agent = f"agent-{uuid.uuid4().hex[:8]}"
    assert http.put(server.url(f"/v1/agents/{agent}"), json={}, timeout=10).status_code == 201
    append = _module(generated, "api.conversations.append_messages")
    body = models.AppendBody(messages=[
        models.MessageBody(role=models.MessageBodyRole.USER, content="Where is my order?"),
        models.MessageBody(role=models.MessageBodyRole.TOOL_CALL, tool_name="orders", tool_call_id="c1",
                           arguments=models.MessageBodyArgumentsType0.from_dict({"id": 42})),
    ])
    appended = append.sync_detailed(agent, "chat-1", client=client, body=body)
    assert appended.status_code == 201, appended.content
    assert isinstance(appended.parsed, models.Appended) and appended.parsed.added == 2
    assert appended.parsed.conversation.messages == 2
    read_conversation = _module(generated, "api.conversations.read_conversation")
    read_messages = _module(generated,
                            "api.conversations.read_messages")
    conversation = read_conversation.sync(agent, "chat-1", client=client)
    assert isinstance(conversation, models.Conversation)
    assert (conversation.key, conversation.agent, conversation.messages) == ("chat-1", agent, 2)
    messages = read_messages.sync(agent, "chat-1", client=client)
    assert isinstance(messages, models.MessagePage)
    roles = models.MessageRole
    assert [(m.seq, m.role) for m in messages.items] == [(1, roles.USER), (2, roles.TOOL_CALL)]
    assert messages.items[1].arguments.to_dict() == {"id": 42}
    search = _module(generated, "api.conversations.search_messages")
    found = search.sync(agent, client=client, q="order", mode="keyword")
    assert isinstance(found, models.MessageSearchPage)
    # (the user's words and the tool call's name: "order" is the stem of both)
    assert {(hit.conversation, hit.seq) for hit in found.items} == {("chat-1", 1), ("chat-1", 2)}
    assert all(isinstance(hit.created_at, datetime) for hit in found.items)


def _conversation_with_a_tool_call(server: Server, http: requests.Session) -> str:
    """An agent with a pinned entry in its own memory, and a conversation of one turn that calls a tool."""
    agent = f"agent-{uuid.uuid4().hex[:8]}"
    assert http.put(server.url(f"/v1/agents/{agent}"), json={}, timeout=10).status_code == 201
    saved = http.put(server.url(f"/v1/memories/agent:{agent}/entries/tone"), timeout=10, json={
        "content": "Answer in short sentences.", "description": "How to answer", "category": "user_profile",
        "importance": 0.9})
    assert saved.status_code == 201, saved.text
    appended = http.post(server.url(f"/v1/agents/{agent}/conversations/chat-1/messages"), timeout=10, json={
        "messages": [
            {"role": "user", "content": "What is the refund policy?"},
            {"role": "tool_call", "content": "", "tool_name": "memory__search", "tool_call_id": "c1",
             "arguments": {"query": "refund"}},
            {"role": "tool_result", "content": "", "tool_call_id": "c1", "result": {"hits": 1}},
            {"role": "assistant", "content": "Refunds are paid back within 14 days."},
        ]})
    assert appended.status_code == 201, appended.text
    return agent


def test_a_generated_client_parses_the_context_in_each_format_and_the_tool_call_view(
    generated: ModuleType, server: Server, http: requests.Session, document: dict[str, Any]
) -> None:
    client = generated.AuthenticatedClient(base_url=server.base_url, token=server.key)
    models = _module(generated, "models")
    context = _module(generated, "api.conversations.read_context")
    view = _module(generated,
                   "api.conversations.read_tool_call")
    agent = _conversation_with_a_tool_call(server, http)
    # When it reads the context in agentmem's own shape
    own = context.sync_detailed(agent, "chat-1", client=client)
    # Then it parses into the typed context: pinned block, index, no summary yet, the window and the messages
    assert own.status_code == 200, own.content
    _conforms(document, "TurnContext", json.loads(own.content))
    parsed = own.parsed
    assert isinstance(parsed, models.Context)
    assert parsed.pinned.entries == ["tone"] and parsed.memory_index.shown == 1 and parsed.summary is None
    role = models.ContextMessageRole
    assert [m.role for m in parsed.messages] == [role.SYSTEM, role.SYSTEM, role.USER, role.TOOL_CALL,
                                                 role.TOOL_RESULT, role.ASSISTANT]
    assert parsed.messages[3].arguments.to_dict() == {"query": "refund"}
    assert [row.seq for row in parsed.window.messages] == [1, 2, 3, 4] and parsed.window.cap == 20
    assert parsed.tokens == parsed.pinned.tokens + parsed.memory_index.tokens + parsed.window.tokens
    # and with format=bedrock, into Converse's system and messages: the call and its result as blocks
    bedrock = context.sync_detailed(agent, "chat-1", client=client, format_="bedrock")
    _conforms(document, "TurnContext", json.loads(bedrock.content))
    assert isinstance(bedrock.parsed, models.ContextBedrock) and bedrock.parsed.format_ == "bedrock"
    assert len(bedrock.parsed.system) == 2 and "Answer in short sentences." in bedrock.parsed.system[0].text
    sides = models.BedrockMessageRole
    assert [m.role for m in bedrock.parsed.messages] == [sides.USER, sides.ASSISTANT, sides.USER, sides.ASSISTANT]
    use = bedrock.parsed.messages[1].content[0].tool_use
    assert (use.tool_use_id, use.name, use.input_.to_dict()) == ("c1", "memory__search", {"query": "refund"})
    result = bedrock.parsed.messages[2].content[0].tool_result
    assert result.tool_use_id == "c1" and result.content[0].json.to_dict() == {"hits": 1}
    # and with format=openai, into Chat Completions messages: an assistant's tool call, then the tool's answer
    openai = context.sync_detailed(agent, "chat-1", client=client, format_="openai")
    _conforms(document, "TurnContext", json.loads(openai.content))
    assert isinstance(openai.parsed, models.ContextOpenai)
    assert [type(m).__name__ for m in openai.parsed.messages] == [
        "OpenaiSystemMessage", "OpenaiSystemMessage", "OpenaiUserMessage", "OpenaiAssistantMessage",
        "OpenaiToolMessage", "OpenaiAssistantMessage"]
    call = openai.parsed.messages[3]
    assert call.content is None and json.loads(call.tool_calls[0].function.arguments) == {"query": "refund"}
    assert openai.parsed.messages[4].tool_call_id == "c1"
    # and with format=anthropic, into Messages blocks
    anthropic = context.sync_detailed(agent, "chat-1", client=client, format_="anthropic")
    _conforms(document, "TurnContext", json.loads(anthropic.content))
    assert isinstance(anthropic.parsed, models.ContextAnthropic)
    blocks = [type(block).__name__ for m in anthropic.parsed.messages for block in m.content]
    assert blocks == ["AnthropicTextBlock", "AnthropicToolUseBlock", "AnthropicToolResultBlock",
                      "AnthropicTextBlock"]
    # and the tool call view parses into the call's arguments and result
    found = view.sync_detailed(agent, "chat-1", "c1", client=client)
    assert found.status_code == 200, found.content
    _conforms(document, "ToolCallView", json.loads(found.content))
    assert isinstance(found.parsed, models.ToolCallView)
    assert (found.parsed.tool_name, found.parsed.call_seq, found.parsed.result_seq) == ("memory__search", 2, 3)
    assert found.parsed.arguments.to_dict() == {"query": "refund"} and found.parsed.result == {"hits": 1}


def test_a_generated_client_parses_a_model_append_a_checkpoint_and_a_summarised_context(
    generated: ModuleType, server: Server, http: requests.Session, document: dict[str, Any]
) -> None:
    client = generated.AuthenticatedClient(base_url=server.base_url, token=server.key)
    models = _module(generated, "models")
    append = _module(generated, "api.conversations.append_messages")
    compact = _module(generated, "api.conversations.compact_conversation")
    checkpoint = _module(generated,
                         "api.conversations.read_checkpoint")
    context = _module(generated, "api.conversations.read_context")
    agent = f"agent-{uuid.uuid4().hex[:8]}"
    assert http.put(server.url(f"/v1/agents/{agent}"), json={}, timeout=10).status_code == 201
    # Given two turns appended in OpenAI's shape, with a system message the journal does not keep
    said = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "My name is Ana."},
            {"role": "assistant", "content": "Hello Ana."}, {"role": "user", "content": "I prefer email."},
            {"role": "assistant", "content": "Noted: email."}]
    body = models.ModelAppendBody(messages=[models.ModelAppendBodyMessagesItem.from_dict(m) for m in said],
                                  window_messages=2)
    appended = append.sync_detailed(agent, "chat-2", client=client, body=body, format_="openai")
    assert appended.status_code == 201, appended.content
    _conforms(document, "Appended", json.loads(appended.content))
    assert isinstance(appended.parsed, models.Appended) and appended.parsed.added == 4
    assert [(s.index, "system" in s.reason) for s in appended.parsed.skipped] == [(0, True)]
    # When a summary pass folds the turn that left the window
    started = compact.sync_detailed(agent, "chat-2", client=client, body=models.EmptyBody())  # (given, as above)
    assert started.status_code == 202 and isinstance(started.parsed, models.CompactionStarted)
    deadline = time.monotonic() + 30
    while (read := checkpoint.sync_detailed(agent, "chat-2", client=client)).status_code == 404:
        assert time.monotonic() < deadline, "no checkpoint after 30 s"
        time.sleep(0.2)
    # Then the checkpoint parses with its passes typed
    assert read.status_code == 200, read.content
    _conforms(document, "Checkpoint", json.loads(read.content))
    assert isinstance(read.parsed, models.Checkpoint) and read.parsed.covers_through_seq == 2
    assert [(p.version, p.by, p.summariser) for p in read.parsed.passes] == [
        (1, models.CheckpointPassesItemBy.SYSTEM, "extractive")]
    # and the context carries the summary ahead of the window
    answer = context.sync_detailed(agent, "chat-2", client=client)
    _conforms(document, "TurnContext", json.loads(answer.content))
    assert isinstance(answer.parsed, models.Context) and isinstance(answer.parsed.summary, models.ContextSummary)
    assert answer.parsed.summary.covers_through_seq == 2 and "Ana" in answer.parsed.summary.text
    assert [row.seq for row in answer.parsed.window.messages] == [3, 4]


def test_a_generated_client_lists_the_tools_in_each_format_and_parses_each_tool_outcome(
    generated: ModuleType, server: Server, http: requests.Session, document: dict[str, Any]
) -> None:
    client = generated.AuthenticatedClient(base_url=server.base_url, token=server.key)
    models = _module(generated, "models")
    listing = _module(generated, "api.tools.list_tools")
    run = _module(generated, "api.tools.run_tool")
    agent = _conversation_with_a_tool_call(server, http)
    # When it lists the tools: MCP's shape by default, or the format asked for
    mcp = listing.sync_detailed(agent, client=client)
    assert mcp.status_code == 200, mcp.content
    _conforms(document, "ToolList", json.loads(mcp.content))
    assert isinstance(mcp.parsed, models.McpToolPage)
    assert [tool.name for tool in mcp.parsed.items] == ["memory__search", "memory__read", "memory__save",
                                                        "memory__delete"]
    assert mcp.parsed.items[0].input_schema.required == ["query"]
    assert "query" in mcp.parsed.items[0].input_schema.properties.additional_properties
    pages = {"openai": models.OpenaiToolPage, "bedrock": models.BedrockToolPage,
             "anthropic": models.AnthropicToolPage}
    for fmt, model in pages.items():
        answer = listing.sync_detailed(agent, client=client, format_=fmt, dialect="noorle")
        _conforms(document, "ToolList", json.loads(answer.content))
        assert isinstance(answer.parsed, model) and answer.parsed.format_ == fmt, fmt
        assert answer.parsed.dialect.value == "noorle" and len(answer.parsed.items) == 5
    openai_tool = listing.sync(agent, client=client, format_="openai").items[0]
    assert (openai_tool.type_, openai_tool.function.name) == ("function", "memory__search")
    assert listing.sync(agent, client=client, format_="bedrock").items[0].tool_spec.input_schema.json.type_ == (
        "object")

    def call(tool: str, **arguments: Any) -> Any:
        body = models.ToolCallBody(arguments=models.ToolCallBodyArguments.from_dict(arguments), conversation="chat-1")
        answer = run.sync_detailed(agent, tool, client=client, body=body)
        assert answer.status_code == 200, answer.content
        _conforms(document, "ToolOutcome", json.loads(answer.content))
        return answer.parsed

    # When it runs each operation, Then each outcome parses into its own model, its result typed
    saved = call("memory__save", name="shipping", content="Orders ship within 2 days.", description="Shipping")
    assert isinstance(saved, models.ToolSaved) and saved.operation == "save" and saved.tool == "memory__save"
    assert saved.result.created and saved.result.entry.version == 1 and saved.result.memory == f"agent:{agent}"
    searched = call("memory__search", query="ship")
    assert isinstance(searched, models.ToolSearched)
    assert [hit.name for hit in searched.result.items] == ["shipping"] and 0 < searched.result.items[0].score <= 1
    read = call("memory__read", name="shipping")
    assert isinstance(read, models.ToolRead)
    assert read.result.entry.content == "Orders ship within 2 days." and read.result.also_in == []
    viewed = call("journal_tool_call_view", tool_call_id="c1")
    assert isinstance(viewed, models.ToolCallViewed) and viewed.result.result == {"hits": 1}
    journal = call("journal_message_search", query="refund")
    assert isinstance(journal, models.ToolJournalSearched)
    assert (journal.result.items[0].conversation, journal.result.items[0].seq) == ("chat-1", 1)
    deleted = call("memory__delete", name="shipping")
    assert isinstance(deleted, models.ToolDeleted)
    assert (deleted.result.deleted, deleted.result.version) == ("shipping", 1) and deleted.text.startswith("Deleted")


def test_a_generated_client_parses_an_mcp_reply(
    generated: ModuleType, server: Server, http: requests.Session, document: dict[str, Any]
) -> None:
    # (MCP's streamable HTTP asks the client to accept both JSON and an event stream)
    client = generated.AuthenticatedClient(base_url=server.base_url, token=server.key,
                                           headers={"Accept": "application/json, text/event-stream"})
    models = _module(generated, "models")
    serve = _module(generated, "api.mcp.serve_mcp")
    agent = f"agent-{uuid.uuid4().hex[:8]}"
    assert http.put(server.url(f"/v1/agents/{agent}"), json={}, timeout=10).status_code == 201
    body = models.ServeMcpBody(jsonrpc=models.ServeMcpBodyJsonrpc.VALUE_0, id=7,
                                        method="tools/list")
    answer = serve.sync_detailed(client=client, body=body, agent=agent)
    assert answer.status_code == 200, answer.content
    _conforms(document, "JsonRpcResponse", json.loads(answer.content))
    assert isinstance(answer.parsed, models.JsonRpcResponse) and answer.parsed.id == 7
    assert "memory__search" in [tool["name"] for tool in answer.parsed.result.to_dict()["tools"]]
    # and a notification is accepted with no body, as the document says
    notified = serve.sync_detailed(client=client, agent=agent, body=models.ServeMcpBody(
        jsonrpc=models.ServeMcpBodyJsonrpc.VALUE_0, method="notifications/initialized"))
    assert (notified.status_code, notified.content, notified.parsed) == (202, b"", None)
    accepted = document["paths"]["/v1/mcp"]["post"]["responses"]["202"]
    assert "content" not in accepted and set(document["paths"]["/v1/mcp"]["post"]["responses"]) >= {"200", "202"}


def test_behind_api_gateway_the_document_and_swagger_ui_name_the_stage(server: Server) -> None:
    # Given the requests API Gateway hands the function for /prod/v1/openapi.json and /prod/v1/docs
    from agentmem.api.app import app
    from agentmem.local.events import build_rest_event

    for path in ("/v1/openapi.json", "/v1/docs"):
        event = build_rest_event("GET", path)
        event["requestContext"] = {**event["requestContext"], "path": f"/prod{path}", "stage": "prod"}
        answer = app.resolve(event, None)
        # Then the document's one server is the stage, so Swagger UI calls /prod/v1/...
        assert answer["statusCode"] == 200
        assert '"servers": [{"url": "/prod"}]' in answer["body"], path
    # and on agentmem serve (no stage before the path) it is the root
    assert requests.get(server.url("/v1/openapi.json"), timeout=10).json()["servers"] == [{"url": "/"}]


def test_every_operation_has_a_short_stable_id(document: dict[str, Any]) -> None:
    # Given every operation of the document
    ids = [operation.get("operationId") for operations in document["paths"].values()
           for operation in operations.values()]
    # Then each has an id a generated client names its function after: a verb and a noun, not the framework's
    # name built from the path and the method (put_memory_v1_memories__memory__put)
    assert None not in ids and len(set(ids)) == len(ids)
    long_ones = [i for i in ids if "_v1" in i or len(i) > 24 or not i.replace("_", "").isalpha() or i != i.lower()]
    assert long_ones == []
    by_route = {(m, p): o["operationId"] for p, ops in document["paths"].items() for m, o in ops.items()}
    assert by_route[("put", "/v1/memories/{memory}")] == "put_memory"
    assert by_route[("put", "/v1/memories/{memory}/entries/{name}")] == "save_entry"
    assert by_route[("get", "/v1/memories/{memory}/search")] == "search_memory"
    assert by_route[("get", "/v1/memories/{memory}/entries")] == "list_entries"
    assert by_route[("get", "/v1/links/{key}")] == "download_by_link"


def test_a_generated_client_calls_every_operation_whose_body_is_optional_without_one(
    generated: ModuleType, server: Server, document: dict[str, Any]
) -> None:
    client = generated.AuthenticatedClient(base_url=server.base_url, token=server.key)
    optional = sorted(o["operationId"] for ops in document["paths"].values() for o in ops.values()
                      if "requestBody" in o and not o["requestBody"].get("required"))
    assert optional == ["compact_conversation", "create_key", "purge_agent", "put_agent", "put_memory",
                        "restore_agent", "restore_memory"]
    call = {op: _module(generated, f"api.{tag}.{op}") for tag, op in (
        ("memories", "put_memory"), ("memories", "restore_memory"), ("memories", "delete_memory"),
        ("agents", "put_agent"), ("agents", "delete_agent"), ("agents", "restore_agent"), ("agents", "purge_agent"),
        ("conversations", "compact_conversation"), ("keys", "create_key"))}
    memory, agent = f"mem-{uuid.uuid4().hex[:8]}", f"agent-{uuid.uuid4().hex[:8]}"
    # When each is called with no body argument at all, it sends none, and the server does what it says
    assert call["put_memory"].sync_detailed(memory, client=client).status_code == 201
    assert call["delete_memory"].sync_detailed(memory, client=client).status_code == 200
    assert call["restore_memory"].sync_detailed(memory, client=client).status_code == 200
    assert call["put_agent"].sync_detailed(agent, client=client).status_code == 201
    compacted = call["compact_conversation"].sync_detailed(agent, "k1", client=client)
    assert compacted.status_code in (202, 404), compacted.content  # a conversation never started: not found
    assert call["delete_agent"].sync_detailed(agent, client=client).status_code == 200
    assert call["restore_agent"].sync_detailed(agent, client=client).status_code == 200
    assert call["purge_agent"].sync_detailed(agent, client=client).status_code == 200
    key = call["create_key"].sync_detailed(client=client)
    assert key.status_code == 201, key.content
