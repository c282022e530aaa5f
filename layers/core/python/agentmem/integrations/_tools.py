"""The agent's memory tools as a framework sees them: each tool's name, description and JSON schema, and a call
that runs it on the service (``Agent.call_tool``) and gives back the text to hand the model."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentmem.client import Agent, AgentmemError


@dataclass(frozen=True)
class MemoryTool:
    """One memory tool of ``agent``, run for ``user`` in ``conversation`` on ``surface``."""

    agent: Agent
    name: str
    description: str
    schema: dict[str, Any]
    user: str | None = None
    conversation: str | None = None
    surface: str | None = None

    def call(self, arguments: Mapping[str, Any] | str | None) -> str:
        """Run the tool and give back its text. A call the service refuses for what it asked (a bad name, an
        injection, a secret without a user, a stale version: a 4xx other than 401 and 429) gives back the error's
        text for the model to read and correct, and stored nothing; any other error is raised."""
        if isinstance(arguments, str):
            arguments = json.loads(arguments) if arguments.strip() else {}
        try:
            result = self.agent.call_tool(self.name, arguments or {}, conversation=self.conversation,
                                          user=self.user, surface=self.surface)
        except AgentmemError as error:
            if 400 <= error.status < 500 and error.status not in (401, 429):
                return f"error: {error}"
            raise
        return result.text


def memory_tool_specs(
    agent: Agent, *, user: str | None = None, conversation: str | None = None, dialect: str = "noclick",
    surface: str | None = None,
) -> list[MemoryTool]:
    """The tools the agent offers ``user`` on ``surface`` (its ``tools`` in MCP's format), ready to call."""
    return [
        MemoryTool(agent, str(tool["name"]), str(tool.get("description") or ""),
                   dict(tool.get("inputSchema") or {"type": "object", "properties": {}}), user, conversation, surface)
        for tool in agent.tools(dialect, "mcp", surface=surface, user=user)
    ]
