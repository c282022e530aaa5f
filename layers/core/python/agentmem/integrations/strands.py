"""agentmem in Strands Agents (``pip install 'agentmem[strands]'``): a ``SessionRepository`` on a conversation's
journal, for Strands' ``RepositorySessionManager``, and the agent's memory tools as Strands tools.

    from strands import Agent as StrandsAgent
    from strands.session.repository_session_manager import RepositorySessionManager
    from agentmem import Agent
    from agentmem.integrations.strands import AgentmemSessionRepository, memory_tools

    support = Agent.from_name("support", create_if_missing=True)
    sessions = RepositorySessionManager(session_id="ticket-7",
                                        session_repository=AgentmemSessionRepository(support, user="user_42"))
    bot = StrandsAgent(session_manager=sessions, tools=memory_tools(support, user="user_42"))

A session is the conversation whose key is its ``session_id``, of ``agent`` with ``user``. Each Strands message is one
journal row of the role it plays (``user``, ``assistant``, a ``toolUse`` a ``tool_call``, a ``toolResult`` a
``tool_result``) whose ``content`` holds the ``SessionMessage`` (and the Strands agent it belongs to) as JSON, so it
comes back equal; ``update_message`` (a redaction) appends the new version and reads take the newest. The session's
and each Strands agent's own record (its state, its conversation manager's) are ``tool_result`` rows
``strands.session`` and ``strands.agent``, the newest one standing; a record that did not change is not written again.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from strands.session.session_repository import SessionRepository
from strands.tools.tools import PythonAgentTool
from strands.types.session import Session, SessionAgent, SessionMessage

from agentmem.client import Agent, Conversation, Message, NotFound

from ._tools import MemoryTool, memory_tool_specs

__all__ = ["AgentmemSessionRepository", "memory_tools"]

TAG = "strands"
SESSION_RECORD = "strands.session"
AGENT_RECORD = "strands.agent"


def _client_id() -> str:
    return f"{TAG}:j:{uuid.uuid4().hex}"


def _record(kind: str, data: dict[str, Any], label: str) -> Message:
    return Message.tool_result(kind, data, kind, content=label, client_id=_client_id())


def _stable(data: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in data.items() if key not in ("created_at", "updated_at")}


def _message_row(agent_id: str, message: SessionMessage) -> Message:
    data = message.to_dict()
    content = json.dumps({"agent_id": agent_id, "session_message": data}, ensure_ascii=False, separators=(",", ":"))
    blocks = (data.get("message") or {}).get("content") or []
    for block in blocks:
        if isinstance(block, dict) and "toolUse" in block:
            use = block["toolUse"]
            return Message("tool_call", content, tool_name=str(use.get("name") or "tool"),
                           tool_call_id=str(use.get("toolUseId") or "tool"), arguments={}, client_id=_client_id())
        if isinstance(block, dict) and "toolResult" in block:
            return Message("tool_result", content, tool_call_id=str(block["toolResult"].get("toolUseId") or "tool"),
                           client_id=_client_id())
    role = "user" if (data.get("message") or {}).get("role") == "user" else "assistant"
    return Message(role, content, client_id=_client_id())


class _Journal:
    """What the journal of one session holds: its record, each agent's newest record and newest messages."""

    def __init__(self, rows: list[Message]) -> None:
        self.session: dict[str, Any] | None = None
        self.agents: dict[str, dict[str, Any]] = {}
        self.messages: dict[str, dict[int, dict[str, Any]]] = {}
        for row in rows:
            if not (row.client_id or "").startswith(f"{TAG}:"):
                continue
            if row.role == "tool_result" and row.tool_call_id == SESSION_RECORD and isinstance(row.result, dict):
                self.session = row.result
            elif row.role == "tool_result" and row.tool_call_id == AGENT_RECORD and isinstance(row.result, dict):
                self.agents[str(row.result.get("agent_id"))] = row.result
            else:
                data = json.loads(row.content)
                message = data["session_message"]
                self.messages.setdefault(data["agent_id"], {})[int(message["message_id"])] = message


class AgentmemSessionRepository(SessionRepository):  # type: ignore[misc,unused-ignore]  # Any without strands
    """Strands sessions as conversations of ``agent`` with ``user`` (the account's without one)."""

    def __init__(self, agent: Agent, *, user: str | None = None) -> None:
        self.agent = agent
        self.user = user
        self._agents: dict[tuple[str, str], dict[str, Any]] = {}  # the records last written or read

    def conversation(self, session_id: str) -> Conversation:
        return self.agent.conversation(session_id, user=self.user)

    def _read(self, session_id: str) -> _Journal:
        try:
            return _Journal(self.conversation(session_id).messages())
        except NotFound:
            return _Journal([])

    def _append(self, session_id: str, *rows: Message) -> None:
        self.conversation(session_id).append(list(rows))

    # --- the session --------------------------------------------------------------------------

    def create_session(self, session: Session, **kwargs: Any) -> Session:
        if self._read(session.session_id).session is not None:
            raise ValueError(f"session {session.session_id} already exists")
        self._append(session.session_id, _record(SESSION_RECORD, session.to_dict(), "Strands session created"))
        return session

    def read_session(self, session_id: str, **kwargs: Any) -> Session | None:
        record = self._read(session_id).session
        return Session.from_dict(record) if record is not None else None

    def delete_session(self, session_id: str, **kwargs: Any) -> None:
        """Purge the conversation: its journal, checkpoint and workspace."""
        self.conversation(session_id).delete(purge=True)

    # --- its agents ---------------------------------------------------------------------------

    def create_agent(self, session_id: str, session_agent: SessionAgent, **kwargs: Any) -> None:
        self._write_agent(session_id, session_agent)

    def read_agent(self, session_id: str, agent_id: str, **kwargs: Any) -> SessionAgent | None:
        record = self._read(session_id).agents.get(agent_id)
        if record is None:
            return None
        self._agents[(session_id, agent_id)] = record
        return SessionAgent.from_dict(record)

    def update_agent(self, session_id: str, session_agent: SessionAgent, **kwargs: Any) -> None:
        previous = self._agents.get((session_id, session_agent.agent_id))
        if previous is None:
            previous = self._read(session_id).agents.get(session_agent.agent_id)
            if previous is None:
                raise ValueError(f"agent {session_agent.agent_id} in session {session_id} does not exist")
        if _stable(previous) != _stable(session_agent.to_dict()):
            self._write_agent(session_id, session_agent)

    def _write_agent(self, session_id: str, session_agent: SessionAgent) -> None:
        data = session_agent.to_dict()
        self._append(session_id, _record(AGENT_RECORD, data, f"Strands agent {session_agent.agent_id}'s state"))
        self._agents[(session_id, session_agent.agent_id)] = data

    # --- their messages -----------------------------------------------------------------------

    def create_message(self, session_id: str, agent_id: str, session_message: SessionMessage, **kwargs: Any) -> None:
        self._append(session_id, _message_row(agent_id, session_message))

    def read_message(self, session_id: str, agent_id: str, message_id: int, **kwargs: Any) -> SessionMessage | None:
        data = self._read(session_id).messages.get(agent_id, {}).get(message_id)
        return SessionMessage.from_dict(data) if data is not None else None

    def update_message(self, session_id: str, agent_id: str, session_message: SessionMessage, **kwargs: Any) -> None:
        if self.read_message(session_id, agent_id, session_message.message_id) is None:
            raise ValueError(f"message {session_message.message_id} of agent {agent_id} does not exist")
        self._append(session_id, _message_row(agent_id, session_message))

    def list_messages(
        self, session_id: str, agent_id: str, limit: int | None = None, offset: int = 0, **kwargs: Any,
    ) -> list[SessionMessage]:
        messages = self._read(session_id).messages.get(agent_id, {})
        ordered = [messages[key] for key in sorted(messages)][offset:]
        if limit is not None:
            ordered = ordered[:limit]
        return [SessionMessage.from_dict(data) for data in ordered]


def _strands_tool(tool: MemoryTool) -> PythonAgentTool:
    spec = {"name": tool.name, "description": tool.description, "inputSchema": {"json": tool.schema}}

    def run(tool_use: Any, **_: Any) -> Any:
        text = tool.call(dict(tool_use.get("input") or {}))
        status = "error" if text.startswith("error: ") else "success"
        return {"toolUseId": tool_use["toolUseId"], "status": status, "content": [{"text": text}]}

    return PythonAgentTool(tool.name, spec, run)


def memory_tools(
    agent: Agent, *, user: str | None = None, conversation: str | Conversation | None = None,
    dialect: str = "noclick", surface: str | None = None,
) -> list[PythonAgentTool]:
    """The agent's memory tools as Strands tools acting for ``user`` (in ``conversation`` when given): each runs on
    the service; a call it refuses for what it asked is an ``error`` result with the error's text."""
    key = conversation.key if isinstance(conversation, Conversation) else conversation
    return [_strands_tool(tool) for tool in memory_tool_specs(agent, user=user, conversation=key, dialect=dialect,
                                                               surface=surface)]
