"""Strands Agents on agentmem: ``AgentmemSessionRepository`` under Strands' ``RepositorySessionManager`` keeps an
agent's messages and state in a conversation's journal, and ``memory_tools`` lets the model save to memory — with a
scripted model.

Runs where strands-agents is installed (``.ci/frameworks``); skipped elsewhere."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("strands")

import agentmem
from agentmem.api.app import lambda_handler
from agentmem.bootstrap import build_container, ensure_default_account, set_container
from agentmem.integrations.strands import AgentmemSessionRepository, memory_tools
from agentmem.settings import Settings
from strands import Agent as StrandsAgent
from strands.models import Model
from strands.session.repository_session_manager import RepositorySessionManager


@pytest.fixture
def support(tmp_path: Path) -> Iterator[agentmem.Agent]:
    container = build_container(Settings(data_dir=tmp_path))
    key = ensure_default_account(container)
    set_container(container)
    client = agentmem.Client("http://in-process", key, transport=agentmem.InProcessTransport(lambda_handler))
    yield agentmem.Agent.from_name("support", create_if_missing=True, client=client)
    set_container(None)


class ScriptedModel(Model):
    """A model answering each turn with the next scripted reply: text, or a tool use ``(name, id, input)``."""

    def __init__(self, *replies: Any) -> None:
        self.replies = list(replies)
        self.seen: list[list[Any]] = []

    def update_config(self, **model_config: Any) -> None:
        pass

    def get_config(self) -> Any:
        return {}

    def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    async def stream(self, messages: Any, tool_specs: Any = None, system_prompt: Any = None,
                     **kwargs: Any) -> AsyncGenerator[Any, None]:
        self.seen.append(json.loads(json.dumps(messages)))
        reply = self.replies.pop(0)
        yield {"messageStart": {"role": "assistant"}}
        if isinstance(reply, str):
            yield {"contentBlockStart": {"start": {}}}
            yield {"contentBlockDelta": {"delta": {"text": reply}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}
        else:
            name, tool_use_id, tool_input = reply
            yield {"contentBlockStart": {"start": {"toolUse": {"name": name, "toolUseId": tool_use_id}}}}
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(tool_input)}}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}


def _bot(support: agentmem.Agent, model: ScriptedModel, session_id: str) -> StrandsAgent:
    sessions = RepositorySessionManager(session_id=session_id,
                                       session_repository=AgentmemSessionRepository(support, user="user_42"))
    return StrandsAgent(model=model, session_manager=sessions, agent_id="helper", callback_handler=None,
                        tools=memory_tools(support, user="user_42", conversation=session_id))


def test_an_agent_saves_to_memory_and_a_new_agent_resumes_the_session(support: agentmem.Agent) -> None:
    save = {"name": "plan", "content": "Ana is on the Team plan.", "description": "Her plan"}
    bot = _bot(support, ScriptedModel(("memory__save", "tool_1", save), "Noted: Team plan."), "ticket-7")
    bot.state.set("customer", "Ana")
    answer = bot("Hi, I'm Ana. I'm on the Team plan.")
    assert str(answer).strip() == "Noted: Team plan."

    # the tool ran on the service: the entry is in the user's layer of the agent's memory
    entry = support.memory.read("plan", user="user_42")
    assert entry.content == "Ana is on the Team plan."
    assert ([e.name for e in support.memory.list(user="user_42")], support.memory.list()) == (["plan"], [])
    # the journal reads as the conversation: the user, the tool call, its result, the answer
    rows = [row for row in support.conversation("ticket-7", user="user_42").messages()
            if row.tool_call_id not in ("strands.session", "strands.agent")]
    assert [row.role for row in rows] == ["user", "tool_call", "tool_result", "assistant"]
    assert rows[1].tool_name == "memory__save"

    # a new Strands agent on the same session starts from the messages and state kept, equal to the first's
    model = ScriptedModel("You are on the Team plan.")
    again = _bot(support, model, "ticket-7")
    assert again.messages == bot.messages
    assert again.state.get("customer") == "Ana"
    again("Which plan am I on?")
    sent = [{"role": message["role"], "content": message["content"]} for message in bot.messages]
    assert model.seen[0][:-1] == json.loads(json.dumps(sent))  # the model got the first turn back first
    assert len(again.messages) == 6


def test_the_repository_keeps_messages_and_their_redactions(support: agentmem.Agent) -> None:
    from strands.types.session import Session, SessionAgent, SessionMessage, SessionType

    repository = AgentmemSessionRepository(support, user="user_42")
    repository.create_session(Session(session_id="s1", session_type=SessionType.AGENT))
    with pytest.raises(ValueError):
        repository.create_session(Session(session_id="s1", session_type=SessionType.AGENT))
    assert repository.read_session("absent") is None
    repository.create_agent("s1", SessionAgent(agent_id="a", state={"n": 1}, conversation_manager_state={}))
    first = SessionMessage(message={"role": "user", "content": [{"text": "my card is 4111 1111 1111 1111"}]},
                           message_id=0)
    second = SessionMessage(message={"role": "assistant", "content": [{"text": "Thanks."}]}, message_id=1)
    repository.create_message("s1", "a", first)
    repository.create_message("s1", "a", second)
    assert [m.message for m in repository.list_messages("s1", "a")] == [first.message, second.message]
    assert [m.message_id for m in repository.list_messages("s1", "a", limit=1, offset=1)] == [1]

    redacted = SessionMessage(message={"role": "user", "content": [{"text": "[redacted]"}]}, message_id=0,
                              redact_message={"role": "user", "content": [{"text": "[redacted]"}]})
    repository.update_message("s1", "a", redacted)
    read = repository.read_message("s1", "a", 0)
    assert read is not None and read.message == redacted.message
    assert [m.message_id for m in repository.list_messages("s1", "a")] == [0, 1]

    agent = repository.read_agent("s1", "a")
    assert agent is not None and agent.state == {"n": 1}
    repository.update_agent("s1", SessionAgent(agent_id="a", state={"n": 2}, conversation_manager_state={}))
    assert AgentmemSessionRepository(support, user="user_42").read_agent("s1", "a").state == {"n": 2}  # type: ignore[union-attr]
    assert repository.read_agent("s1", "b") is None


def test_the_docs_example_runs(support: agentmem.Agent) -> None:
    from docs_example import run_example

    save = {"name": "plan", "content": "Ana is on the Team plan.", "description": "Her plan"}
    model = ScriptedModel(("memory__save", "tool_1", save), "Noted.", "The Team plan.")
    printed = run_example("Strands Agents", model, support.client)
    assert printed == ["Noted.", "The Team plan.", "['plan']"]
    # the second Strands agent was sent the first turn, read back from the journal
    assert model.seen[-1][0] == {"role": "user", "content": [{"text": "Hi, I'm Ana. I'm on the Team plan."}]}
