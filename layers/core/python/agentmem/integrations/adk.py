"""agentmem in Google's Agent Development Kit (``pip install 'agentmem[adk]'``): a ``BaseMemoryService`` on
agentmem's journal, for ADK's ``load_memory`` and ``preload_memory`` tools.

    from google.adk.runners import Runner
    from google.adk.tools import load_memory
    from agentmem import Agent
    from agentmem.integrations.adk import AgentmemMemoryService

    support = Agent.from_name("support", create_if_missing=True)
    runner = Runner(app_name="support", agent=adk_agent_with_load_memory, session_service=...,
                    memory_service=AgentmemMemoryService(support))
    await runner.memory_service.add_session_to_memory(session)   # after a session, as ADK's docs do

``add_session_to_memory`` appends the session's events to the journal of the conversation whose key is the
session's id, of ``agent`` with the session's ``user_id`` as the user: each text part a ``user`` row (the user's
events) or an ``assistant`` row (the agents'), each function call a ``tool_call``, each function response a
``tool_result``, with the event's id as its ``client_id`` (so adding a session again adds only
its new events). ``search_memory`` is agentmem's journal search over all of that user's conversations with the agent
(by meaning and words), each hit the whole message it found.
"""

from __future__ import annotations

import asyncio
from typing import Any

from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions.session import Session
from google.genai import types

from agentmem.client import Agent, Message

__all__ = ["AgentmemMemoryService"]


def _rows(session: Session) -> list[dict[str, Any]]:
    """The journal rows of a session's events, in order."""
    rows: list[dict[str, Any]] = []
    for event in session.events:
        parts = event.content.parts if event.content is not None and event.content.parts else []
        for n, part in enumerate(parts):
            client_id = f"adk:{event.id}" if n == 0 else f"adk:{event.id}.{n}"
            if part.function_call is not None:
                call = part.function_call
                row = Message.tool_call(call.name or "tool", call.id or f"{event.id}.{n}", call.args or {})
            elif part.function_response is not None:
                response = part.function_response
                row = Message.tool_result(response.id or f"{event.id}.{n}", response.response, response.name)
            elif part.text and not part.thought:
                row = Message("user" if event.author == "user" else "assistant", part.text)
            else:
                continue
            rows.append({**row.to_dict(), "client_id": client_id})
    return rows


class AgentmemMemoryService(BaseMemoryService):  # type: ignore[misc,unused-ignore]  # Any without google-adk
    """ADK's long-term memory on the journal of ``agent``'s conversations (ADK's ``app_name`` is not used: the agent
    is the app). ``limit``: the most memories a search gives (1–100)."""

    def __init__(self, agent: Agent, *, limit: int = 10, surface: str | None = None) -> None:
        self.agent = agent
        self.limit = limit
        self.surface = surface

    async def add_session_to_memory(self, session: Session) -> None:
        rows = _rows(session)
        if rows:
            conversation = self.agent.conversation(session.id, user=session.user_id)
            await asyncio.to_thread(conversation.append, rows, surface=self.surface)

    def _search(self, user_id: str, query: str) -> list[MemoryEntry]:
        hits = self.agent.search_messages(query, user=user_id, limit=self.limit, surface=self.surface)
        memories: list[MemoryEntry] = []
        for hit in hits:
            found = self.agent.conversation(hit.conversation, user=user_id).messages(after=hit.seq - 1, limit=1)
            if not found:
                continue
            message = found[0]
            text = message.content or ("" if message.result is None else str(message.result))
            if not text:
                continue
            role = "user" if message.role == "user" else "model"
            memories.append(MemoryEntry(
                content=types.Content(role=role, parts=[types.Part(text=text)]),
                author="user" if message.role == "user" else self.agent.name,
                timestamp=message.created_at,
                id=f"{hit.conversation}#{hit.seq}",
            ))
        return memories

    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        memories = await asyncio.to_thread(self._search, user_id, query)
        return SearchMemoryResponse(memories=memories)
