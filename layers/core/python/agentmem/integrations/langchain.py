"""agentmem in LangChain (``pip install 'agentmem[langchain]'``, ``langchain-core`` only): a chat message history on
a conversation's journal, for ``RunnableWithMessageHistory`` or anything that takes a ``BaseChatMessageHistory``.

    from langchain_core.runnables.history import RunnableWithMessageHistory
    from agentmem import Agent
    from agentmem.integrations.langchain import AgentmemChatMessageHistory

    support = Agent.from_name("support", create_if_missing=True)
    chain = RunnableWithMessageHistory(
        prompt | model, lambda session_id: AgentmemChatMessageHistory(support.conversation(session_id, user="user_42")),
        input_messages_key="question", history_messages_key="history")

Each message is one journal row (``agentmem.integrations._journal``): a ``HumanMessage`` or ``AIMessage`` that is
only its text is a ``user`` or ``assistant`` row with that text; any other (with an id, tool calls, metadata, a
``ToolMessage``, a ``SystemMessage``) is the row of the role it plays whose ``content`` holds the message's
``message_to_dict`` JSON whole, so every message comes back equal.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
    message_to_dict,
    messages_from_dict,
)

from agentmem.client import Conversation, Message

from ._journal import ItemJournal

__all__ = ["AgentmemChatMessageHistory"]

TAG = "lc"


def _message_to_row(message: BaseMessage) -> Message:
    text = message.text if isinstance(message.text, str) else message.text()  # a property from langchain-core 1.0
    if isinstance(message, ToolMessage):
        return Message.tool_result(message.tool_call_id, None, message.name, content=text)
    if isinstance(message, AIMessage) and message.tool_calls and not text:
        call = message.tool_calls[0]
        return Message.tool_call(call["name"], call.get("id") or "call", call.get("args") or {})
    return Message("user" if isinstance(message, HumanMessage) else "assistant", text)


def _row_to_message(row: Message) -> BaseMessage | None:
    if row.role == "user":
        return HumanMessage(content=row.content) if row.content else None
    if row.role == "assistant":
        return AIMessage(content=row.content) if row.content else None
    if row.role == "tool_call":
        return AIMessage(content="", tool_calls=[{"name": row.tool_name or "", "args": row.arguments or {},
                                                  "id": row.tool_call_id, "type": "tool_call"}])
    return ToolMessage(content=row.content or "", tool_call_id=row.tool_call_id or "", name=row.tool_name)


class AgentmemChatMessageHistory(BaseChatMessageHistory):
    """The messages of ``conversation``'s journal, in order. ``add_messages`` appends them (each once, however
    often an append is retried); ``clear`` purges the conversation (journal, checkpoint and workspace)."""

    def __init__(self, conversation: Conversation) -> None:
        self.conversation = conversation
        self.journal = ItemJournal(conversation, TAG, _message_to_row, _row_to_message,
                                    lambda data: messages_from_dict([data])[0])

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        return [message for _, message in self.journal.items()]

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        self.journal.add(self.journal.encode(message, plain=message_to_dict(message)) for message in messages)

    def clear(self) -> None:
        self.journal.clear()

