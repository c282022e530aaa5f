"""agentmem in the OpenAI Agents SDK (``pip install 'agentmem[openai-agents]'``): a ``Session`` on a conversation's
journal, and the agent's memory tools as ``FunctionTool``s.

    from agents import Agent as OpenAIAgent, Runner
    from agentmem import Agent
    from agentmem.integrations.openai_agents import AgentmemSession, memory_tools

    support = Agent.from_name("support", create_if_missing=True)
    session = AgentmemSession(support.conversation("ticket-7", user="user_42"))
    bot = OpenAIAgent(name="support", instructions="...", tools=memory_tools(support, user="user_42"))
    result = await Runner.run(bot, "Hi, I'm Ana.", session=session)

Each item of the session is one journal row, in the SDK's own format exactly (``agentmem.integrations._journal``): a
``{"role": "user", "content": "..."}`` item is a ``user`` row with that text; any other item is the row of the role it
plays (an assistant message ``assistant``, a ``function_call`` a ``tool_call`` with its name, ``call_id`` and arguments,
a ``function_call_output`` a ``tool_result`` with its output) whose ``content`` holds the item's JSON whole.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from agents import FunctionTool, RunContextWrapper
from agents.memory.session import SessionABC

from agentmem.client import Agent, Conversation, Message

from ._journal import ItemJournal
from ._tools import MemoryTool, memory_tool_specs

__all__ = ["AgentmemSession", "memory_tools"]

TAG = "oai"


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text") or part.get("refusal") or "") for part in content
                         if isinstance(part, dict)).strip()
    return ""


def _item_to_row(item: Any) -> Message:
    """The journal row an item plays: its role, text and tool fields (its ``content`` is replaced by the item's
    JSON when these do not rebuild it)."""
    kind = str(item.get("type") or "")
    if kind == "function_call" or (kind.endswith("_call") and "role" not in item):
        call_id = str(item.get("call_id") or item.get("id") or kind)
        try:
            arguments = json.loads(item.get("arguments") or "{}")
        except (TypeError, ValueError):
            arguments = None
        if not isinstance(arguments, dict):
            arguments = {"arguments": item.get("arguments")}
        return Message.tool_call(str(item.get("name") or kind), call_id, arguments)
    if kind.endswith("_output") and "role" not in item:
        output = item.get("output")
        return Message.tool_result(str(item.get("call_id") or item.get("id") or kind), output,
                                   content=output if isinstance(output, str) else "")
    role = "user" if item.get("role") == "user" else "assistant"
    text = _text(item.get("content")) or _text(item.get("summary"))
    return Message(role, text)


def _row_to_item(row: Message) -> Any:
    """The item a row's fields stand for (a row appended by other means is read this way too)."""
    if row.role in ("user", "assistant"):
        return {"role": row.role, "content": row.content} if row.content else None
    if row.role == "tool_call":
        return {"type": "function_call", "call_id": row.tool_call_id, "name": row.tool_name,
                "arguments": json.dumps(row.arguments or {}, ensure_ascii=False)}
    output = row.content if row.content or row.result is None else json.dumps(row.result, ensure_ascii=False)
    return {"type": "function_call_output", "call_id": row.tool_call_id, "output": output}


class AgentmemSession(SessionABC):  # type: ignore[misc,unused-ignore]  # Any without openai-agents
    """The SDK's session memory on the journal of ``conversation``: ``Runner.run(..., session=...)`` reads the
    items back before each turn and appends the turn's new ones. ``session_id`` is the conversation's key.

    ``pop_item`` takes the last item back: the journal keeps every message it was given, so a row withdrawing it is
    appended and later reads leave both out. ``clear_session`` purges the conversation (journal, checkpoint and
    workspace). The SDK's calls run the sync SDK in a worker thread, so the event loop is never blocked.
    """

    def __init__(self, conversation: Conversation, *, session_settings: Any | None = None) -> None:
        self.conversation = conversation
        self.session_id = conversation.key
        self.session_settings = session_settings  # the SDK's SessionSettings: its ``limit`` is get_items' default
        self.journal = ItemJournal(conversation, TAG, _item_to_row, _row_to_item)

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The session's items, oldest first: the last ``limit`` of them when given."""
        if limit is None:
            limit = getattr(self.session_settings, "limit", None)
        pairs = await asyncio.to_thread(self.journal.items, limit)
        return [item for _, item in pairs]

    async def add_items(self, items: list[Any]) -> None:
        """Append items, in order, each as one journal row."""
        rows = [self.journal.encode(item) for item in items]
        await asyncio.to_thread(self.journal.add, rows)

    async def pop_item(self) -> Any | None:
        """Take the most recent item back and return it (``None`` when the session holds none)."""

        def pop() -> Any | None:
            pairs = self.journal.items(1)
            if not pairs:
                return None
            row, item = pairs[-1]
            self.journal.withdraw(row)
            return item

        return await asyncio.to_thread(pop)

    async def clear_session(self) -> None:
        """Forget the whole session: the conversation is purged."""
        await asyncio.to_thread(self.journal.clear)


def _function_tool(tool: MemoryTool) -> FunctionTool:
    async def invoke(_context: RunContextWrapper[Any], arguments: str) -> str:
        return await asyncio.to_thread(tool.call, arguments)

    return FunctionTool(name=tool.name, description=tool.description, params_json_schema=tool.schema,
                        on_invoke_tool=invoke, strict_json_schema=False)


def memory_tools(
    agent: Agent, *, user: str | None = None, conversation: str | Conversation | None = None,
    dialect: str = "noclick", surface: str | None = None,
) -> list[FunctionTool]:
    """The agent's memory tools (``memory__search``, ``memory__read``, ``memory__save``, ``memory__delete``; or the
    ``noorle`` dialect's) as ``FunctionTool``s that act for ``user``, in ``conversation`` when given (the call runs
    there, as ``Agent.call_tool(conversation=...)`` does). Each runs on the service; a call it refuses for what it
    asked gives the model the error's text. The schemas are the service's, so ``strict_json_schema`` is off."""
    key = conversation.key if isinstance(conversation, Conversation) else conversation
    return [_function_tool(tool) for tool in memory_tool_specs(agent, user=user, conversation=key, dialect=dialect,
                                                                surface=surface)]
