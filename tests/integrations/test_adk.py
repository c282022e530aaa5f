"""Google ADK on agentmem: ``AgentmemMemoryService`` keeps sessions in the journal and finds them again for ADK's
``load_memory`` and ``preload_memory`` tools — through ADK's in-memory runner and a scripted model.

Runs where google-adk is installed (``.ci/frameworks``); skipped elsewhere."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("google.adk")

import agentmem
from agentmem.api.app import lambda_handler
from agentmem.bootstrap import build_container, ensure_default_account, set_container
from agentmem.integrations.adk import AgentmemMemoryService
from agentmem.settings import Settings
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.adk.tools import load_memory, preload_memory
from google.genai import types

APP = "support"


@pytest.fixture
def support(tmp_path: Path) -> Iterator[agentmem.Agent]:
    container = build_container(Settings(data_dir=tmp_path))
    key = ensure_default_account(container)
    set_container(container)
    client = agentmem.Client("http://in-process", key, transport=agentmem.InProcessTransport(lambda_handler))
    yield agentmem.Agent.from_name("support", create_if_missing=True, client=client)
    set_container(None)


class ScriptedLlm(BaseLlm):
    """A model answering each request with the next of its scripted parts, keeping the requests it got."""

    script: list[Any]
    requests: list[LlmRequest]

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.requests.append(llm_request)
        part = self.script.pop(0)
        yield LlmResponse(content=types.Content(role="model", parts=[part]))


def _user(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


async def _turn(runner: InMemoryRunner, session_id: str, text: str) -> list[Any]:
    return [event async for event in runner.run_async(user_id="user_42", session_id=session_id,
                                                      new_message=_user(text))]


def _runner(support: agentmem.Agent, model: ScriptedLlm, tool: Any) -> InMemoryRunner:
    runner = InMemoryRunner(agent=LlmAgent(name="support", model=model, instruction="Help the user.", tools=[tool]),
                            app_name=APP)
    runner.memory_service = AgentmemMemoryService(support)
    return runner


async def _remembered_session(runner: InMemoryRunner) -> None:
    """A first session in which the user says her colour, then kept in memory as ADK's docs do."""
    first = await runner.session_service.create_session(app_name=APP, user_id="user_42", session_id="s1")
    await _turn(runner, first.id, "My favourite colour is teal.")
    session = await runner.session_service.get_session(app_name=APP, user_id="user_42", session_id="s1")
    assert session is not None
    assert runner.memory_service is not None
    await runner.memory_service.add_session_to_memory(session)
    await runner.memory_service.add_session_to_memory(session)  # again: nothing is stored twice


def test_load_memory_finds_an_earlier_session(support: agentmem.Agent) -> None:
    model = ScriptedLlm(model="scripted", script=[
        types.Part(text="Noted, teal."),
        types.Part(function_call=types.FunctionCall(id="call_1", name="load_memory",
                                                    args={"query": "favourite colour"})),
        types.Part(text="Your favourite colour is teal."),
    ], requests=[])
    runner = _runner(support, model, load_memory)

    async def scenario() -> list[Any]:
        await _remembered_session(runner)
        await runner.session_service.create_session(app_name=APP, user_id="user_42", session_id="s2")
        return await _turn(runner, "s2", "What is my favourite colour?")

    events = asyncio.run(scenario())
    # the journal of conversation s1 holds the first session's messages, once each
    rows = support.conversation("s1", user="user_42").messages()
    assert [(row.role, row.content) for row in rows] == [
        ("user", "My favourite colour is teal."), ("assistant", "Noted, teal.")]
    # the tool's answer, which the model read next, held the message found
    response = model.requests[-1].contents[-1].parts[0].function_response
    assert response is not None and response.name == "load_memory"
    assert "My favourite colour is teal." in str(response.response)
    assert events[-1].content.parts[0].text == "Your favourite colour is teal."


def test_preload_memory_puts_what_it_finds_before_the_model(support: agentmem.Agent) -> None:
    model = ScriptedLlm(model="scripted", script=[types.Part(text="Noted, teal."), types.Part(text="Teal.")],
                        requests=[])
    runner = _runner(support, model, preload_memory)

    async def scenario() -> None:
        await _remembered_session(runner)
        await runner.session_service.create_session(app_name=APP, user_id="user_42", session_id="s2")
        await _turn(runner, "s2", "What is my favourite colour?")

    asyncio.run(scenario())
    # what the model got for the second session (whose own events never said it) holds the earlier message
    request = model.requests[-1]
    assert "My favourite colour is teal." in str(request.config.system_instruction) + str(request.contents)


def test_search_memory_is_the_users_own(support: agentmem.Agent) -> None:
    service = AgentmemMemoryService(support)
    model = ScriptedLlm(model="scripted", script=[types.Part(text="Noted, teal.")], requests=[])
    runner = _runner(support, model, load_memory)

    async def scenario() -> tuple[Any, Any]:
        await _remembered_session(runner)
        mine = await service.search_memory(app_name=APP, user_id="user_42", query="favourite colour")
        theirs = await service.search_memory(app_name=APP, user_id="user_7", query="favourite colour")
        return mine, theirs

    mine, theirs = asyncio.run(scenario())
    assert [memory.content.parts[0].text for memory in mine.memories][:1] == ["My favourite colour is teal."]
    assert mine.memories[0].author == "user" and mine.memories[0].timestamp
    assert theirs.memories == []


def test_the_docs_example_runs(support: agentmem.Agent) -> None:
    from docs_example import run_example

    model = ScriptedLlm(model="scripted", script=[
        types.Part(text="Noted."),
        types.Part(function_call=types.FunctionCall(id="call_1", name="load_memory", args={"query": "plan"})),
        types.Part(text="The Team plan."),
    ], requests=[])
    printed = run_example("Google ADK", model, support.client)
    assert printed == ["Noted.", "The Team plan.", '["Hi, I\'m Ana. I\'m on the Team plan."]']
    assert "Team plan" in str(model.requests[-1].contents[-1].parts[0].function_response.response)
