"""docs/agents.md works as written, against the real API handler in-process on a fresh data dir.

The page's Python blocks run in order in one namespace (the page says to run them in one session),
with the SDK's default client pointed at the service. Every `print(...)  # value` (and the comment
lines right under a print) must be what the block printed. The Bedrock loop talks to a
`bedrock-runtime` client stubbed with botocore's Stubber: the "model" asks to save the user's plan,
then searches for it, then answers. Afterwards the test checks what the service stored and refused.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import agentmem
import agentmem.mcp_server
import boto3
import pytest
from agentmem.api.app import lambda_handler
from agentmem.cli import cli
from agentmem.mcp_server import __main__ as mcp_main
from botocore.stub import Stubber
from click.testing import CliRunner
from doc_blocks import fenced_blocks, run_block

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "agents.md").read_text()

PLAN = "Ana is on the Team plan, billed yearly."
FINAL = "You're on the Team plan, billed yearly; it includes priority support."


# --- the service and the stubbed model --------------------------------------------------------------


# `service` (tests/e2e/conftest.py): the SDK talking to the API handler in-process


def _usage() -> dict[str, Any]:
    return {"usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}, "metrics": {"latencyMs": 1}}


def tool_use(tool_use_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A Converse answer in which the model stops to use one tool."""
    block = {"toolUse": {"toolUseId": tool_use_id, "name": name, "input": arguments}}
    return {"output": {"message": {"role": "assistant", "content": [block]}}, "stopReason": "tool_use", **_usage()}


def answer(text: str) -> dict[str, Any]:
    """A Converse answer with the model's final text."""
    message = {"role": "assistant", "content": [{"text": text}]}
    return {"output": {"message": message}, "stopReason": "end_turn", **_usage()}


class StubbedBedrock:
    """A real `bedrock-runtime` client whose `converse` answers are queued, and the requests it got."""

    def __init__(self, answers: list[dict[str, Any]]) -> None:
        self.client = boto3.client(
            "bedrock-runtime", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
        )
        self.requests: list[dict[str, Any]] = []
        self.client.meta.events.register("provide-client-params.bedrock-runtime.Converse", self._record)
        self.stubber = Stubber(self.client)
        for response in answers:
            self.stubber.add_response("converse", response)
        self.stubber.activate()

    def _record(self, params: dict[str, Any], **_: Any) -> None:
        self.requests.append(copy.deepcopy(params))

    def tool_results(self, request: int) -> list[dict[str, Any]]:
        """The toolResult blocks the loop sent back in request number ``request``."""
        last = self.requests[request]["messages"][-1]
        assert last["role"] == "user"
        return [block["toolResult"] for block in last["content"]]


# --- running the page -------------------------------------------------------------------------------


def page_blocks() -> list[str]:
    return fenced_blocks(PAGE, "python")


def entries(memory: str, user: str | None = None) -> dict[str, agentmem.Entry]:
    """A layer's entries with their content, by name."""
    handle = agentmem.Memory(memory)
    return {e.name: handle.read(e.name, user=user) for e in handle.entries(user=user)}


# --- the tests ----------------------------------------------------------------------------------------


def test_the_page_runs_as_written_and_stores_what_it_says(
    service: agentmem.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the page's blocks, and a model that saves the user's plan, searches for it, then answers
    blocks = page_blocks()
    assert len(blocks) >= 10, "the page lost its examples"
    model = StubbedBedrock([
        tool_use("save-1", "memory__save", {"name": "plan", "content": PLAN, "description": "Her plan and billing"}),
        tool_use("search-1", "memory__search", {"query": "plan"}),
        answer(FINAL),
    ])
    real_client = boto3.client
    monkeypatch.setattr(
        boto3, "client",
        lambda name, *a, **kw: model.client if name == "bedrock-runtime" else real_client(name, *a, **kw),
    )

    # When each block runs in order in one session
    namespace: dict[str, Any] = {"__name__": "agents_guide"}
    printed = [run_block(block, namespace, f"docs/agents.md python block {i + 1}") for i, block in enumerate(blocks)]

    # Then the agents are set up as the page says
    support = agentmem.Agent.from_name("support")
    assert [tuple(m) for m in support.memories] == [("company", False)]
    assert [tuple(m) for m in agentmem.Agent.from_name("scribe").memories] == [("company", True)]
    assert support.last_info is not None and support.last_info.user_conversations_write_shared is True
    infos = {info.name: info for info in agentmem.Memory.list()}
    assert infos["company"].attached_to == ("greeter", "helpdesk", "scribe", "support")
    # and deleting the attached memory was refused: it is still there, not in the trash
    assert infos["company"].deleted_at is None

    # and the company memory holds what the code and the writable agent saved, nothing from `support`
    company = entries("company")
    assert set(company) == {"refunds", "tone", "holidays"}
    assert company["tone"].content == "Warm, brief, no jargon."
    assert (company["holidays"].updated_by, company["holidays"].user_id) == ("agent", None)

    # and the account's layer of support's own memory: the code's entries and the one it shared
    account = entries("agent:support")
    assert set(account) == {"escalation", "language", "invoices"}
    assert account["language"].content == "Answer in English."
    assert (account["invoices"].visibility, account["invoices"].updated_by) == ("shared", "agent")

    # and user_42's layer: what the agent saved in that user's conversations, word for word
    ana = entries("agent:support", user="user_42")
    assert set(ana) == {"nickname", "language", "contact", "pets", "plan"}
    assert ana["pets"].description == "Ana has a cat, Miso."  # memory_store took the content's first line
    assert ana["language"].content == "Answer in Portuguese."
    assert ana["language"].description == "Which language to answer in"
    assert (ana["contact"].visibility, ana["contact"].content) == ("private", "Ana prefers email: ana@example.com")
    assert (ana["plan"].content, ana["plan"].user_id, ana["plan"].updated_by) == (PLAN, "user_42", "agent")
    assert entries("agent:support", user="user_7") == {}

    # and every refused save stored nothing: not the read-only surfaces', not the anonymous private one
    for memory in ("company", "agent:support", "agent:greeter"):
        for user in (None, "user_42"):
            assert not {"spam", "draft", "hello"} & set(entries(memory, user)), (memory, user)
    # while the agent that allows it stored the anonymous "private" note shared, in the account's layer
    draft = entries("agent:helpdesk")["draft"]
    assert (draft.visibility, draft.user_id) == ("shared", None)

    # and the Bedrock loop returned the model's final text and printed it
    assert any(FINAL in out for out in printed)
    model.stubber.assert_no_pending_responses()
    # having sent the agent's instructions and its Bedrock tools on every call
    tools = support.tools(format="bedrock", user="user_42")
    assert len(model.requests) == 3
    for request in model.requests:
        assert request["toolConfig"] == {"tools": tools}
        assert request["system"] == [{"text": "Answer billing questions."}]
    # and answered each tool use with its result as JSON: the save in user_42's layer, then the hit
    [saved] = model.tool_results(1)
    assert saved["toolUseId"] == "save-1" and "status" not in saved
    [content] = saved["content"]
    assert content["json"]["memory"] == "agent:support"
    assert content["json"]["entry"]["user_id"] == "user_42"
    [found] = model.tool_results(2)
    assert found["toolUseId"] == "search-1"
    hits = found["content"][0]["json"]["items"]
    assert {"name": "plan", "user_id": "user_42", "content": PLAN}.items() <= hits[0].items()


def test_the_loop_hands_refusals_back_to_the_model(service: agentmem.Client) -> None:
    # Given the page's loop, an agent reading `company` read-only, and a model that first makes two
    # mistakes (a name with capitals, a save to the read-only memory) and then saves correctly
    [loop] = [block for block in page_blocks() if "def run_turn" in block]
    namespace: dict[str, Any] = {"__name__": "agents_guide"}
    exec(compile(loop, "docs/agents.md run_turn", "exec"), namespace)
    run_turn: Callable[..., str] = namespace["run_turn"]
    company = agentmem.Memory.from_name("company", create_if_missing=True)
    company.save("tone", "Warm, brief, no jargon.", description="How we write")
    support = agentmem.Agent.from_name("support", create_if_missing=True, instructions="Answer billing questions.",
                                       memories=[company])
    model = StubbedBedrock([
        tool_use("bad-name", "memory__save", {"name": "Her Plan", "content": PLAN, "description": "Her plan"}),
        tool_use("read-only", "memory__save", {"name": "tone", "content": "Formal.", "memory": "company"}),
        tool_use("good", "memory__save", {"name": "plan", "content": PLAN, "description": "Her plan"}),
        answer("Noted."),
    ])

    # When one turn runs
    reply = run_turn(model.client, support, "user_42", "ticket-7", "Remember my plan.")

    # Then the turn finished with the model's answer
    assert reply == "Noted."
    model.stubber.assert_no_pending_responses()
    # and each refusal went back as an error result naming the API's error code
    [invalid] = model.tool_results(1)
    assert (invalid["toolUseId"], invalid["status"]) == ("bad-name", "error")
    assert invalid["content"][0]["text"].startswith("invalid: ")
    [forbidden] = model.tool_results(2)
    assert (forbidden["toolUseId"], forbidden["status"]) == ("read-only", "error")
    assert forbidden["content"][0]["text"].startswith("forbidden: ")
    # and only the correct save was stored, in the user's layer; the company memory is unchanged
    assert {name: e.content for name, e in entries("agent:support", user="user_42").items()} == {"plan": PLAN}
    assert entries("agent:support") == {}
    assert {name: e.content for name, e in entries("company").items()} == {"tone": "Warm, brief, no jargon."}


def test_the_loop_stops_on_failures_the_model_cannot_fix(service: agentmem.Client) -> None:
    # Given the page's run_tool, and the agent through a key the service does not know
    [loop] = [block for block in page_blocks() if "def run_turn" in block]
    namespace: dict[str, Any] = {"__name__": "agents_guide"}
    exec(compile(loop, "docs/agents.md run_turn", "exec"), namespace)
    run_tool: Callable[..., dict[str, Any]] = namespace["run_tool"]
    good = agentmem.Agent.from_name("support", create_if_missing=True, instructions="Answer billing questions.")
    stranger = agentmem.Client("http://in-process", "am_not-a-key-of-this-service",
                               transport=agentmem.InProcessTransport(lambda_handler))
    bad_key = agentmem.Agent("support", client=stranger)
    use = {"toolUseId": "save-1", "name": "memory__save", "input": {"name": "plan", "content": PLAN,
                                                                    "description": "Her plan"}}

    # When the tool runs with the bad key, the failure is raised: the model cannot fix a key
    with pytest.raises(agentmem.Unauthorized):
        run_tool(bad_key, use, "user_42", "ticket-8")
    # while with the right key the same block becomes a JSON result, and the entry is stored
    result = run_tool(good, use, "user_42", "ticket-8")
    assert result["toolResult"]["toolUseId"] == "save-1"
    assert result["toolResult"]["content"][0]["json"]["entry"]["user_id"] == "user_42"
    assert entries("agent:support", user="user_42")["plan"].content == PLAN


def test_the_mcp_client_config_starts_the_stdio_server_for_the_agent_and_user(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given the page's MCP client configuration: the virtualenv's `agentmem`, with `mcp` and its options
    [config] = [json.loads(block) for block in fenced_blocks(PAGE, "json") if "mcpServers" in block]
    server = config["mcpServers"]["support-memory"]
    assert server["command"].endswith("/.venv/bin/agentmem")
    assert set(server["env"]) == {"AGENTMEM_URL", "AGENTMEM_API_KEY"}
    assert server["args"][0] == "mcp"
    # When the CLI runs those arguments in that environment (the stdio server itself stubbed out)
    started: list[tuple[str, str | None, str, str | None]] = []

    def run_stdio(agent: str, user: str | None = None, client: agentmem.Client | None = None) -> None:
        assert client is not None
        started.append((agent, user, client.url, client.api_key))

    monkeypatch.setattr(agentmem.mcp_server, "run_stdio", run_stdio)
    for name in ("AGENTMEM_URL", "AGENTMEM_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    done = CliRunner().invoke(cli, server["args"], env=server["env"])
    # Then it serves the agent `support` for user_42, against the URL and with the key of the config
    assert done.exit_code == 0, done.output
    assert done.output == ""  # stdout is the MCP host's: nothing else may be written there
    assert started == [("support", "user_42", server["env"]["AGENTMEM_URL"], server["env"]["AGENTMEM_API_KEY"])]


def test_the_python_module_form_takes_the_same_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given the arguments of the page's configuration after `mcp`
    [config] = [json.loads(block) for block in fenced_blocks(PAGE, "json") if "mcpServers" in block]
    arguments = config["mcpServers"]["support-memory"]["args"][1:]
    assert "python -m agentmem.mcp_server --agent support" in PAGE
    # When `python -m agentmem.mcp_server` takes them
    started: list[tuple[str, str | None]] = []
    monkeypatch.setattr(mcp_main, "run_stdio", lambda agent, user=None: started.append((agent, user)))
    # Then it serves the same agent for the same user
    assert mcp_main.main(arguments) == 0
    assert started == [("support", "user_42")]


def test_the_mcp_http_example_lists_and_runs_the_agents_tools(service: agentmem.Client) -> None:
    # Given the agent, and the page's curl call to the MCP endpoint (its URL query and JSON-RPC body)
    agentmem.Agent.from_name("support", create_if_missing=True, instructions="Answer billing questions.")
    [curl] = [block for block in fenced_blocks(PAGE, "bash") if "/v1/mcp" in block]
    query = re.search(r'/v1/mcp\?([^"]+)"', curl)
    body = re.search(r"-d '([^']+)'", curl)
    assert query and body
    params = dict(pair.split("=") for pair in query[1].split("&"))
    assert params == {"agent": "support", "user": "user_42"}
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}

    def post(message: dict[str, Any], **scope: str) -> dict[str, Any]:
        response = service.request("POST", "/mcp", params=scope, body=message, headers=headers)
        return dict(response.json())

    # When it is sent, with no session opened first
    listed = post(json.loads(body[1]), **params)
    # Then it answers the four noclick tools, no journal tools
    assert [tool["name"] for tool in listed["result"]["tools"]] == [
        "memory__search", "memory__read", "memory__save", "memory__delete"]

    # When the client saves for user_42, and an anonymous client saves "private"
    save = {"name": "plan", "content": PLAN, "description": "Her plan", "visibility": "private"}
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "memory__save", "arguments": save}}
    as_user = post(call, **params)["result"]
    anonymous = post(call, agent="support")["result"]
    # Then the first is stored in user_42's layer; the second is an error result naming no_user_context
    assert as_user["isError"] is False
    assert entries("agent:support", user="user_42")["plan"].content == PLAN
    assert anonymous["isError"] is True
    assert anonymous["structuredContent"]["error"]["code"] == "no_user_context"
    assert entries("agent:support") == {}
