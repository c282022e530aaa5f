"""MCP over streamable HTTP inside the API (``POST /v1/mcp``): one request, one answer, in one call.

The protocol is ``protocol.py``'s (stateless, JSON answers, no SDK: see its docstring for why); this module gives
it one agent's tools, run in-process through ``ToolService`` on the ``mcp`` surface for one caller, and answers
a request with them (``serve_request``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..domain.errors import AgentmemError
from ..domain.models import Principal
from ..domain.tool_formats import render
from .protocol import HttpAnswer, ToolAnswer, Tools, serve

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..services.tools import ToolService

SURFACE = "mcp"


def in_process_tools(service: ToolService, principal: Principal, agent: str, user: str | None) -> Tools:
    """The tools of one agent for one caller, listed and run through the service."""

    def list_tools() -> list[dict[str, Any]]:
        return [render(t, "mcp") for t in service.definitions(principal, agent, user=user, surface=SURFACE)]

    def call_tool(tool: str, arguments: dict[str, Any]) -> ToolAnswer:
        try:
            outcome = service.execute(principal, agent, tool, arguments, user=user, surface=SURFACE)
        except AgentmemError as error:
            return ToolAnswer(error.message, {"error": {"status": error.status, **error.to_dict()}}, is_error=True)
        return ToolAnswer(outcome.text, outcome.result)

    return Tools(agent, list_tools, call_tool)


def serve_request(tools: Tools, headers: Iterable[tuple[str, str]], body: bytes) -> HttpAnswer:
    """Answer one ``POST`` of the streamable HTTP transport (its header lines as sent, its body)."""
    return serve(headers, body, tools)


__all__ = ["HttpAnswer", "in_process_tools", "serve_request"]
