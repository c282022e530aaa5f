"""The OpenAI Agents SDK on agentmem: ``AgentmemSession`` keeps a run's items in a conversation's journal, exactly,
and ``memory_tools`` lets the model save to memory — through a real ``Runner.run`` against a scripted model.

Runs where the SDK is installed (``.ci/frameworks``); skipped elsewhere."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")

import agentmem
from agentmem.api.app import lambda_handler
from agentmem.bootstrap import build_container, ensure_default_account, set_container
from agentmem.integrations.openai_agents import AgentmemSession, memory_tools
from agentmem.settings import Settings
from agents import Agent as SdkAgent
from agents import Runner, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

set_tracing_disabled(True)


@pytest.fixture
def support(tmp_path: Path) -> Iterator[agentmem.Agent]:
    container = build_container(Settings(data_dir=tmp_path))
    key = ensure_default_account(container)
    set_container(container)
    client = agentmem.Client("http://in-process", key, transport=agentmem.InProcessTransport(lambda_handler))
    yield agentmem.Agent.from_name("support", create_if_missing=True, client=client)
    set_container(None)


def _said(text: str, id: str = "msg_1") -> ResponseOutputMessage:
    return ResponseOutputMessage(id=id, type="message", role="assistant", status="completed",
                                 content=[ResponseOutputText(type="output_text", text=text, annotations=[])])


class ScriptedModel(Model):
    """A model that answers each turn with the next of its outputs, and keeps what it was sent."""

    def __init__(self, *outputs: Any) -> None:
        self.outputs = list(outputs)
        self.inputs: list[Any] = []

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        self.inputs.append(kwargs["input"] if "input" in kwargs else args[1])
        return ModelResponse(output=[self.outputs.pop(0)], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


ITEMS: list[Any] = [
    {"role": "user", "content": "Hi, I'm Ana. I'm on the Team plan."},
    {"role": "user", "content": [{"type": "input_text", "text": "And a second part."}]},
    {"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": "She gave her plan."}]},
    {"type": "function_call", "call_id": "call_1", "name": "memory__save", "id": "fc_1", "status": "completed",
     "arguments": json.dumps({"name": "plan", "content": "Ana is on the Team plan.", "description": "Her plan"})},
    {"type": "function_call_output", "call_id": "call_1", "output": "Saved plan (version 1)."},
    {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
     "content": [{"type": "output_text", "text": "Noted: Team plan. ✓ «ok»", "annotations": []}]},
]


def test_items_come_back_equal_and_the_journal_reads_as_the_conversation(support: agentmem.Agent) -> None:
    chat = support.conversation("ticket-7", user="user_42")
    session = AgentmemSession(chat)

    async def scenario() -> None:
        await session.add_items(ITEMS[:3])
        await session.add_items(ITEMS[3:])
        # every item comes back equal, in order; a limit gives the last ones
        assert await session.get_items() == ITEMS
        assert await session.get_items(limit=2) == ITEMS[-2:]
        # each item is one journal row of the role it plays
        rows = chat.messages()
        assert [row.role for row in rows] == ["user", "user", "assistant", "tool_call", "tool_result", "assistant"]
        assert rows[0].content == "Hi, I'm Ana. I'm on the Team plan."  # a plain item is its text
        assert (rows[3].tool_name, rows[3].tool_call_id, rows[3].arguments["name"]) == ("memory__save", "call_1",
                                                                                         "plan")
        assert [hit.seq for hit in chat.search("Team plan")][:1] == [1]

        # pop_item gives back the last item and later reads leave it out; the journal keeps it
        assert await session.pop_item() == ITEMS[-1]
        assert await session.get_items() == ITEMS[:-1]
        assert await session.pop_item() == ITEMS[-2]
        assert await session.get_items(limit=1) == [ITEMS[-3]]
        assert len(chat.messages()) == len(ITEMS) + 2

        # clear_session forgets the conversation
        await session.clear_session()
        assert await session.get_items() == []
        assert await session.pop_item() is None
        with pytest.raises(agentmem.NotFound):  # the conversation was purged
            chat.messages()

    asyncio.run(scenario())


def test_a_run_saves_to_memory_through_a_tool_and_the_next_run_sees_the_history(support: agentmem.Agent) -> None:
    chat = support.conversation("ticket-8", user="user_42")
    session = AgentmemSession(chat)
    save = {"name": "plan", "content": "Ana is on the Team plan.", "description": "Her plan"}
    model = ScriptedModel(
        ResponseFunctionToolCall(type="function_call", call_id="call_1", name="memory__save",
                                 arguments=json.dumps(save), id="fc_1", status="completed"),
        _said("Noted: you are on the Team plan."),
        _said("You are on the Team plan.", id="msg_2"),
    )
    tools = memory_tools(support, user="user_42", conversation=chat)
    assert {tool.name for tool in tools} >= {"memory__search", "memory__read", "memory__save", "memory__delete"}
    bot = SdkAgent(name="support", instructions="Remember what matters.", model=model, tools=tools)

    first = asyncio.run(Runner.run(bot, "Hi, I'm Ana. I'm on the Team plan.", session=session))
    assert first.final_output == "Noted: you are on the Team plan."

    # the tool ran on the service: the entry is in the agent's memory, in the user's layer
    entry = support.memory.read("plan", user="user_42")
    assert entry.content == "Ana is on the Team plan."
    assert ([e.name for e in support.memory.list(user="user_42")], support.memory.list()) == (["plan"], [])
    # the journal holds the turn: the user's message, the call, its result and the answer
    rows = chat.messages()
    assert [row.role for row in rows] == ["user", "tool_call", "tool_result", "assistant"]
    assert rows[1].arguments == save
    assert "plan" in rows[2].content

    # a second run on the same session sends the model the whole history first
    second = asyncio.run(Runner.run(bot, "Which plan am I on?", session=session))
    assert second.final_output == "You are on the Team plan."
    sent = model.inputs[-1]
    assert sent[0] == {"role": "user", "content": "Hi, I'm Ana. I'm on the Team plan."}
    assert [item.get("type") for item in sent[1:3]] == ["function_call", "function_call_output"]
    assert sent[-1] == {"role": "user", "content": "Which plan am I on?"}
    assert len(chat.messages()) == 6


def test_a_refused_save_gives_the_model_the_reason_and_stores_nothing(support: agentmem.Agent) -> None:
    tools = {tool.name: tool for tool in memory_tools(support, user="user_42")}

    async def call() -> Any:
        return await tools["memory__save"].on_invoke_tool(
            None, json.dumps({"name": "Bad Name", "content": "x", "description": "d"}))  # type: ignore[arg-type]

    text = asyncio.run(call())
    assert text.startswith("error: ") and "name" in text
    assert support.memory.list(user="user_42") == []


def test_the_docs_example_runs(support: agentmem.Agent) -> None:
    from docs_example import run_example

    save = {"name": "plan", "content": "Ana is on the Team plan.", "description": "Her plan"}
    model = ScriptedModel(
        ResponseFunctionToolCall(type="function_call", call_id="call_1", name="memory__save",
                                 arguments=json.dumps(save), id="fc_1", status="completed"),
        _said("Noted."), _said("The Team plan.", id="msg_2"))
    printed = run_example("OpenAI Agents SDK", model, support.client)
    assert printed[:2] == ["Noted.", "The Team plan."]
    assert printed[2:] == ["['user', 'tool_call', 'tool_result', 'assistant', 'user', 'assistant']", "['plan']"]


def test_messages_appended_by_other_means_are_read_as_items(support: agentmem.Agent) -> None:
    chat = support.conversation("ticket-10", user="user_42")
    chat.append(agentmem.Message.user("Hi from the web chat."),
                agentmem.Message.tool_call("memory__search", "call_9", {"query": "plan"}),
                agentmem.Message.tool_result("call_9", {"items": []}, "memory__search"),
                agentmem.Message.assistant("Nothing on file yet."))
    items = asyncio.run(AgentmemSession(chat).get_items())
    assert items == [
        {"role": "user", "content": "Hi from the web chat."},
        {"type": "function_call", "call_id": "call_9", "name": "memory__search", "arguments": '{"query": "plan"}'},
        {"type": "function_call_output", "call_id": "call_9", "output": '{"items": []}'},
        {"role": "assistant", "content": "Nothing on file yet."},
    ]
