"""LangChain on agentmem: ``AgentmemChatMessageHistory`` keeps a chain's messages in a conversation's journal, so
``RunnableWithMessageHistory`` remembers across calls — with langchain-core's own fake chat model.

Runs where langchain-core is installed (``.ci/frameworks``); skipped elsewhere."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("langchain_core")

import agentmem
from agentmem.api.app import lambda_handler
from agentmem.bootstrap import build_container, ensure_default_account, set_container
from agentmem.integrations.langchain import AgentmemChatMessageHistory
from agentmem.settings import Settings
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory


@pytest.fixture
def support(tmp_path: Path) -> Iterator[agentmem.Agent]:
    container = build_container(Settings(data_dir=tmp_path))
    key = ensure_default_account(container)
    set_container(container)
    client = agentmem.Client("http://in-process", key, transport=agentmem.InProcessTransport(lambda_handler))
    yield agentmem.Agent.from_name("support", create_if_missing=True, client=client)
    set_container(None)


def test_messages_come_back_equal(support: agentmem.Agent) -> None:
    chat = support.conversation("ticket-7", user="user_42")
    history = AgentmemChatMessageHistory(chat)
    messages = [
        SystemMessage(content="Be brief."),
        HumanMessage(content="Hi, I'm Ana."),
        AIMessage(content="", tool_calls=[{"name": "memory__save", "args": {"name": "who", "content": "Ana"},
                                           "id": "call_1", "type": "tool_call"}], id="run-1"),
        ToolMessage(content="Saved who.", tool_call_id="call_1", name="memory__save"),
        AIMessage(content="Hello Ana!", response_metadata={"model": "m"}, id="run-2"),
        HumanMessage(content=[{"type": "text", "text": "Thanks"}]),
    ]
    history.add_messages(messages)
    assert AgentmemChatMessageHistory(chat).messages == messages
    rows = chat.messages()
    assert [row.role for row in rows] == ["assistant", "user", "tool_call", "tool_result", "assistant", "user"]
    assert rows[1].content == "Hi, I'm Ana."  # a message that is only its text is that text
    assert (rows[2].tool_name, rows[2].tool_call_id) == ("memory__save", "call_1")

    history.clear()
    assert history.messages == []
    with pytest.raises(agentmem.NotFound):  # the conversation was purged
        chat.messages()


def test_a_chain_with_message_history_remembers_across_calls(support: agentmem.Agent) -> None:
    model = FakeMessagesListChatModel(responses=[AIMessage(content="Hello Ana!"), AIMessage(content="You are Ana.")])
    prompt = ChatPromptTemplate.from_messages([
        ("system", "You are a support agent."), MessagesPlaceholder("history"), ("human", "{question}")])
    seen: list[list[object]] = []

    def record(value: object) -> object:
        seen.append(list(value.to_messages()))  # type: ignore[attr-defined]
        return value

    chain = RunnableWithMessageHistory(
        prompt | record | model,
        lambda session_id: AgentmemChatMessageHistory(support.conversation(session_id, user="user_42")),
        input_messages_key="question", history_messages_key="history")
    config = {"configurable": {"session_id": "ticket-9"}}

    assert chain.invoke({"question": "Hi, I'm Ana."}, config=config).content == "Hello Ana!"
    assert chain.invoke({"question": "Who am I?"}, config=config).content == "You are Ana."

    # the second call's prompt held the first exchange, read back from the journal
    assert [message.content for message in seen[1]] == [
        "You are a support agent.", "Hi, I'm Ana.", "Hello Ana!", "Who am I?"]
    rows = support.conversation("ticket-9", user="user_42").messages()
    assert rows[0].content == "Hi, I'm Ana."
    assert [row.role for row in rows] == ["user", "assistant", "user", "assistant"]
    assert support.search_messages("Ana", user="user_42", conversation="ticket-9")


def test_the_docs_example_runs(support: agentmem.Agent) -> None:
    from docs_example import run_example

    model = FakeMessagesListChatModel(responses=[AIMessage(content="Hello Ana!"), AIMessage(content="Team plan.")])
    printed = run_example("LangChain", model, support.client)
    assert printed[:2] == ["Hello Ana!", "Team plan."]
    assert printed[-1] == "['user', 'assistant', 'user', 'assistant']"
