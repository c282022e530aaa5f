"""The agent tools (SPEC §9): which a caller may list, and running one.

A tool is listed only where it may run (journal tools only on surfaces that have them; write tools
only where the agent may write), and running one refuses whatever the listing leaves out: a client
may call any tool by name. Memory operations go to ``AgentMemory``, which applies SPEC §3.3 and §7.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..domain.agents import AgentRecord
from ..domain.errors import AgentmemError, ForbiddenError, InvalidError, NotImplementedYetError
from ..domain.models import Principal
from ..domain.surfaces import SurfaceRules
from ..domain.tool_results import (
    delete_result,
    journal_search_result,
    read_result,
    save_result,
    search_result,
    tool_call_view_result,
)
from ..domain.tools import Dialect, ToolCall, ToolDefinition, catalog, derive_description, find_tool, parse_call
from .agent_memory import AgentMemory, AgentSaveResult, CallContext
from .conversations import ConversationService
from .entries import SaveRequest

# fields the services name in a 400, and the argument each stands for
_ARGUMENT_OF_FIELD = {
    "name": "name", "content": "content", "description": "description", "category": "category",
    "importance": "importance", "visibility": "visibility", "expires_at": "expires_at", "version": "version",
    "memory": "memory", "limit": "limit", "q": "query", "query": "query", "conversation": "conversation",
    "tool_call_id": "tool_call_id", "after": "after", "before": "before",
}


@dataclass(frozen=True)
class ToolOutcome:
    tool: str
    operation: str
    result: dict[str, Any]
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"tool": self.tool, "operation": self.operation, "result": self.result, "text": self.text}


def refusal(tool: ToolDefinition, rules: SurfaceRules, agent: AgentRecord) -> tuple[str, str] | None:
    """Why ``tool`` may not run here, as (message, reason code), or None when it may (a journal tool
    that may run is still 501). The reason codes are AgentMemory's, so a refusal reads the same
    whichever layer makes it."""
    if tool.journal and not rules.journal_tools:
        return (f"{tool.name} is a journal tool, and the {rules.surface} surface has no journal tools",
                "no_journal_tools")
    if tool.writes and rules.read_only:
        return (f"{tool.name} writes memory, and memory is read-only on the {rules.surface} surface",
                "read_only_surface")
    if tool.writes and not agent.capabilities.memory:
        return (f"{tool.name} writes memory, and agent {agent.name!r} has the memory capability off",
                "memory_capability_off")
    return None


class ToolService:
    def __init__(self, agent_memory: AgentMemory, conversations: ConversationService | None = None) -> None:
        self.agent_memory = agent_memory
        self.conversations = conversations

    def _journal(
        self, principal: Principal, ctx: CallContext, call: ToolCall, user: str | None
    ) -> tuple[dict[str, Any], str]:
        """journal_message_search and journal_tool_call_view (SPEC §4.1), in the call's conversation
        unless the arguments name another."""
        assert self.conversations is not None
        conversation = call.conversation or ctx.conversation
        try:
            if call.operation == "journal_search":
                found = self.conversations.search_page(
                    principal, ctx.agent.name, call.query or "", user=user, conversation=call.conversation,
                    limit=call.limit, surface=ctx.surface, after=call.after, before=call.before,
                )
                return journal_search_result(call.query or "", found.items, found.mode, found.fallback,
                                             found.index_lag)
            if conversation is None:
                raise InvalidError("journal_tool_call_view needs the conversation (an argument, or the call's)",
                                   field="arguments.conversation")
            view = self.conversations.tool_call(
                principal, ctx.agent.name, conversation, call.tool_call_id or "", user=user, surface=ctx.surface
            )
            return tool_call_view_result(view)
        except AgentmemError as error:
            _aim_at_argument(error, call)
            raise

    def definitions(
        self, principal: Principal, agent: str, *, user: str | None = None, surface: str | None = None,
        dialect: Dialect = "noclick",
    ) -> list[ToolDefinition]:
        """The tools of ``dialect`` that may run for this agent, user and surface."""
        ctx = self.agent_memory.context(principal, agent, user=user, surface=surface)
        return [tool for tool in catalog(dialect) if refusal(tool, ctx.rules, ctx.agent) is None]

    def execute(
        self, principal: Principal, agent: str, tool: str, arguments: Any, *, conversation: str | None = None,
        user: str | None = None, surface: str | None = None,
    ) -> ToolOutcome:
        """Run one tool call; nothing is stored unless it succeeds."""
        definition = find_tool(tool)
        ctx = self.agent_memory.context(principal, agent, user=user, surface=surface, conversation=conversation)
        refused = refusal(definition, ctx.rules, ctx.agent)
        if refused is not None:
            message, reason = refused
            raise ForbiddenError(message, reason=reason, tool=definition.name, surface=ctx.surface)
        call = parse_call(definition.name, arguments)
        if definition.journal:
            if self.conversations is None:
                raise NotImplementedYetError(
                    f"{definition.name}: this deployment keeps no journal", tool=definition.name
                )
            journal_result, journal_text = self._journal(principal, ctx, call, user)
            return ToolOutcome(definition.name, definition.operation, journal_result, journal_text)
        try:
            result, text = self._run(ctx, call)
        except AgentmemError as error:
            _aim_at_argument(error, call)
            raise
        return ToolOutcome(definition.name, definition.operation, result, text)

    def _run(self, ctx: CallContext, call: ToolCall) -> tuple[dict[str, Any], str]:
        memory = self.agent_memory
        if call.operation == "search":
            query = call.query or ""
            page = memory.search(ctx, query, limit=call.limit, memory=call.memory)
            return search_result(query, page.items, page.mode, page.fallback, page.index_lag)
        name = call.name or ""
        if call.operation == "read":
            found = memory.read(ctx, name, call.memory)
            return read_result(found.entry, found.memory, found.also_in)
        if call.operation == "delete":
            deleted = memory.delete(ctx, name, version=call.version, memory=call.memory)
            return delete_result(deleted, deleted.memory or call.memory or ctx.agent.own_memory)
        saved = self._save(ctx, call)
        return save_result(saved.entry, saved.memory, created=saved.created, forced=saved.forced,
                           downgraded=saved.downgraded)

    def _save(self, ctx: CallContext, call: ToolCall) -> AgentSaveResult:
        request = SaveRequest(
            content=call.content or "", description=call.description, category=call.category,
            importance=call.importance, visibility=call.visibility, expires_at=call.expires_at,
            version=call.version,
        )
        name = call.name or ""
        try:
            return self.agent_memory.save(ctx, name, request, call.memory)
        except InvalidError as error:
            # noorle's memory_store: a new entry without a description takes its content's first line
            if call.dialect != "noorle" or call.description is not None or error.details.get("field") != "description":
                raise
        derived = derive_description(request.content, fallback=name)
        return self.agent_memory.save(ctx, name, replace(request, description=derived), call.memory)


def _aim_at_argument(error: AgentmemError, call: ToolCall) -> None:
    """A service error about a field names the tool argument it came from (``arguments.<name>``)."""
    field = error.details.get("field")
    argument = _ARGUMENT_OF_FIELD.get(field) if isinstance(field, str) else None
    if argument is not None:
        error.details["field"] = f"arguments.{call.name_argument if argument == 'name' else argument}"
