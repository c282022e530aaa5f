"""docs/conversations.md's model API sections work as written: each step function sends what its API takes
(checked by botocore through a stubbed `bedrock-runtime` client, and by the anthropic and openai packages'
own types, tests/support/model_api_checks.py) and keeps the model's answer in the journal; the import
commands run against `agentmem serve` as the page shows them."""

from __future__ import annotations

import copy
import subprocess
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import agentmem
import boto3
import pytest
import requests
from agentmem import Message
from botocore.stub import Stubber
from doc_blocks import fenced_blocks
from doc_blocks import section as doc_section
from model_api_checks import anthropic_problems, bedrock_problems, openai_problems
from serving import served_as_make_run

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "conversations.md").read_text()
USAGE = {"usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}, "metrics": {"latencyMs": 1}}


def steps() -> dict[str, Any]:
    [block] = [b for b in fenced_blocks(doc_section(PAGE, "In each model API's own shape"), "python")
               if "def bedrock_step" in b]
    namespace: dict[str, Any] = {"__name__": "conversations_guide"}
    exec(compile(block, "docs/conversations.md steps", "exec"), namespace)
    return namespace


def chat_asking(key: str) -> agentmem.Conversation:
    support = agentmem.Agent.from_name("support", create_if_missing=True)
    support.memory.save("profile-name", "The user's name is Ana.", description="The user's name",
                        category="user_profile", importance=0.9, user="user_42")
    chat = support.conversation(key, user="user_42")
    chat.append(Message.user("Which plan am I on?"))
    return chat


def test_the_bedrock_step_sends_what_converse_takes(service: agentmem.Client) -> None:
    # Given a real bedrock-runtime client whose answers are a tool use and then a text
    client = boto3.client("bedrock-runtime", region_name="us-east-1", aws_access_key_id="testing",
                          aws_secret_access_key="testing")
    sent: list[dict[str, Any]] = []
    client.meta.events.register("provide-client-params.bedrock-runtime.Converse",
                                lambda params, **_: sent.append(copy.deepcopy(params)))
    use = {"toolUse": {"toolUseId": "tooluse_1", "name": "lookup_plan", "input": {"customer": "user_42"}}}
    with Stubber(client) as stubber:
        stubber.add_response("converse", {"output": {"message": {"role": "assistant", "content": [use]}},
                                          "stopReason": "tool_use", **USAGE}, None)
        stubber.add_response("converse", {"output": {"message": {"role": "assistant", "content": [
            {"text": "You're on Team."}]}}, "stopReason": "end_turn", **USAGE}, None)
        chat = chat_asking("bedrock-1")
        tools = agentmem.Agent("support").tools(format="bedrock")
        # When the page's step runs, the tool's result is appended in Converse's shape, and it runs again
        steps()["bedrock_step"](client, chat, "Answer billing questions.", tools)
        chat.append([{"role": "user", "content": [{"toolResult": {"toolUseId": "tooluse_1",
                                                                  "content": [{"json": {"plan": "Team"}}]}}]}],
                    format="bedrock")
        steps()["bedrock_step"](client, chat, "Answer billing questions.", tools)
    # Then both requests are what Converse takes, the second with the call and its result
    assert [bedrock_problems(r["system"], r["messages"]) for r in sent] == [[], []]
    assert sent[0]["system"][0] == {"text": "Answer billing questions."}
    assert [m["role"] for m in sent[1]["messages"]] == ["user", "assistant", "user"]
    # and the journal keeps the whole exchange
    assert [(m.role, m.content) for m in chat.messages()] == [
        ("user", "Which plan am I on?"), ("tool_call", ""), ("tool_result", ""), ("assistant", "You're on Team.")]


class FakeAnthropic:
    """The surface of `anthropic.Anthropic` the step uses; each request is checked as the API would."""

    def __init__(self, answers: list[dict[str, Any]]) -> None:
        self.answers = answers
        self.messages = SimpleNamespace(create=self.create)
        self.problems: list[list[str]] = []

    def create(self, **request: Any) -> Any:
        from anthropic.types import Message as AnthropicMessage

        self.problems.append(anthropic_problems(request["system"], request["messages"]))
        return AnthropicMessage.model_validate({
            "id": "msg_1", "type": "message", "role": "assistant", "model": request["model"], "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1}, **self.answers.pop(0)})


def test_the_anthropic_step_sends_what_the_messages_api_takes(service: agentmem.Client) -> None:
    client = FakeAnthropic([
        {"stop_reason": "tool_use", "content": [{"type": "text", "text": "Checking."}, {
            "type": "tool_use", "id": "toolu_1", "name": "lookup_plan", "input": {"customer": "user_42"}}]},
        {"stop_reason": "end_turn", "content": [{"type": "text", "text": "You're on Team."}]},
    ])
    chat = chat_asking("anthropic-1")
    tools = agentmem.Agent("support").tools(format="anthropic")
    steps()["anthropic_step"](client, chat, "Answer billing questions.", tools)
    chat.append([{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "Team"}]}],
                format="anthropic")
    steps()["anthropic_step"](client, chat, "Answer billing questions.", tools)
    assert client.problems == [[], []]
    assert [(m.role, m.content) for m in chat.messages()] == [
        ("user", "Which plan am I on?"), ("assistant", "Checking."), ("tool_call", ""), ("tool_result", "Team"),
        ("assistant", "You're on Team.")]


class FakeOpenAI:
    """The surface of `openai.OpenAI` the step uses; each request is checked as the API would."""

    def __init__(self, answers: list[dict[str, Any]]) -> None:
        self.answers = answers
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self.create))
        self.problems: list[list[str]] = []

    def create(self, **request: Any) -> Any:
        from openai.types.chat import ChatCompletion

        self.problems.append(openai_problems(request["messages"]))
        return ChatCompletion.model_validate({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": request["model"],
            "choices": [{"index": 0, "finish_reason": "stop", "message": self.answers.pop(0)}]})


def test_the_openai_step_sends_what_chat_completions_takes(service: agentmem.Client) -> None:
    client = FakeOpenAI([
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {
            "name": "lookup_plan", "arguments": '{"customer": "user_42"}'}}]},
        {"role": "assistant", "content": "You're on Team."},
    ])
    chat = chat_asking("openai-1")
    tools = agentmem.Agent("support").tools(format="openai")
    steps()["openai_step"](client, chat, "Answer billing questions.", tools)
    chat.append([{"role": "tool", "tool_call_id": "call_1", "content": "Team"}], format="openai")
    steps()["openai_step"](client, chat, "Answer billing questions.", tools)
    assert client.problems == [[], []]
    assert [(m.role, m.content, m.tool_call_id) for m in chat.messages()] == [
        ("user", "Which plan am I on?", None), ("tool_call", "", "call_1"), ("tool_result", "Team", "call_1"),
        ("assistant", "You're on Team.", None)]


# --- the import commands -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    with served_as_make_run(tmp_path_factory.mktemp("imports")) as env:
        yield env


def test_the_import_commands_run_as_the_page_shows(served: dict[str, str]) -> None:
    # Given the page's import block: it makes a 2,000-message transcript and an OpenAI request body, then imports
    [block] = [b for b in fenced_blocks(doc_section(PAGE, "Importing a transcript"), "bash") if "import" in b]
    workdir = Path(served["WORKDIR"])
    auth = {"Authorization": f"Bearer {served['AGENTMEM_API_KEY']}"}
    requests.put(f"{served['AGENTMEM_URL']}/v1/agents/support", headers=auth, json={}, timeout=10)
    lines = block.splitlines()
    # When each command runs
    for number, line in enumerate(lines):
        if line.startswith("#") or not line.strip():
            continue
        command = line.replace(".venv/bin/agentmem", "agentmem")
        result = subprocess.run(["bash", "-c", command], env=served, capture_output=True, text=True, timeout=120,
                                cwd=workdir)
        # Then it succeeds, and an import prints what the comment under it says
        assert result.returncode == 0, f"{command}: {result.stderr}"
        if "agentmem" not in line:
            continue
        following = lines[number + 1] if number + 1 < len(lines) else ""
        if following.startswith("# "):
            assert result.stdout.strip() == following[2:], command
        else:
            assert result.stdout.startswith("imported 3 messages into support/ticket-4 (2 rows, seq 1–2): 2 added, "
                                          "0 already there, 1 skipped")
    # and the transcript the page made is the 2,000 messages its comments count
    assert len((workdir / "transcript.jsonl").read_text().splitlines()) == 2000
