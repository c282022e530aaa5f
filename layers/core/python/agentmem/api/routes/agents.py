"""Agents (SPEC §3.2) and the recall over every memory an agent reads (§6)."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Query

from ...domain.agents import Attachment
from ...domain.errors import PreconditionFailedError, VersionConflictError
from ...services.agents import AgentSettings
from ..context import call, etag, json_response, precondition
from ..presenters import agent_json, entry_json, page, search_page
from ..schemas import AgentBody, EmptyBody
from . import SearchMode

router = Router()
User = Annotated[str | None, Query(description="Act for this user (a user key implies it); makes a user's agent")]


def _settings(body: AgentBody) -> AgentSettings:
    capabilities = body.capabilities
    context = body.context
    return AgentSettings(
        instructions=body.instructions,
        memories=None if body.memories is None else tuple(Attachment(m.name, m.writable) for m in body.memories),
        memory_capability=capabilities.memory if capabilities is not None else None,
        window_messages=body.window_messages,
        clear_window="window_messages" in body.model_fields_set and body.window_messages is None,
        summary_tokens=context.summary_tokens if context is not None else None,
        summary_messages=context.summary_messages if context is not None else None,
        user_conversations_write_shared=body.user_conversations_write_shared,
        anonymous_private_writes=body.anonymous_private_writes,
    )


@router.get("/v1/agents", summary="List agents", tags=["agents"], operation_id="list_agents")
def list_agents(
    user: User = None, trash: Annotated[bool, Query(description="List the trash instead")] = False
) -> dict[str, Any]:
    container, principal = call(router, "agents.list")
    return page([agent_json(a) for a in container.agents.list_agents(principal, user, trash=trash)])


@router.put("/v1/agents/<agent>", summary="Create an agent, or change its settings", tags=["agents"],
            operation_id="put_agent")
def put_agent(agent: str, user: User = None, body: Annotated[AgentBody | None, Body()] = None) -> Response[Any]:
    container, principal = call(router, "agents.put")
    expected = precondition(router)
    try:
        record, created = container.agents.put(
            principal, agent, _settings(body or AgentBody()), user=user, expected_version=expected
        )
    except VersionConflictError as conflict:
        if expected is None:
            raise
        raise PreconditionFailedError(conflict.message, current_version=conflict.current_version) from None
    return json_response(201 if created else 200, agent_json(record), etag(record.version))


@router.get("/v1/agents/<agent>", summary="One agent", tags=["agents"], operation_id="get_agent")
def get_agent(agent: str, user: User = None) -> Response[Any]:
    container, principal = call(router, "agents.read")
    record = container.agents.get(principal, agent, user)
    return json_response(200, agent_json(record), etag(record.version))


@router.delete("/v1/agents/<agent>", summary="Move an agent and its own memory to the trash", tags=["agents"],
               operation_id="delete_agent")
def delete_agent(agent: str, user: User = None) -> dict[str, Any]:
    container, principal = call(router, "agents.delete")
    return agent_json(container.agents.delete(principal, agent, user))


@router.post("/v1/agents/<agent>/restore", summary="Bring an agent back from the trash", tags=["agents"],
             operation_id="restore_agent")
def restore_agent(agent: str, user: User = None, body: Annotated[EmptyBody | None, Body()] = None) -> dict[str, Any]:
    container, principal = call(router, "agents.restore")
    return agent_json(container.agents.restore(principal, agent, user))


@router.post(
    "/v1/agents/<agent>/purge",
    summary="Delete an agent for good: its own memory, conversations, checkpoints, workspaces", tags=["agents"],
    operation_id="purge_agent",
)
def purge_agent(agent: str, user: User = None, body: Annotated[EmptyBody | None, Body()] = None) -> dict[str, Any]:
    container, principal = call(router, "agents.purge")
    return {"agent": agent, "removed": container.agents.purge(principal, agent, user)}


@router.get("/v1/agents/<agent>/search", summary="Search every memory the agent reads, as it sees them",
            tags=["agents"], operation_id="search_agent")
def search_agent(
    agent: str, q: Annotated[str, Query(description="Words to find")], user: User = None,
    limit: Annotated[int | None, Query(description="At most 100; default 10")] = None,
    cursor: Annotated[str | None, Query(description="next_cursor of the previous page")] = None,
    surface: Annotated[str | None, Query(description="Where the agent is talking (SPEC §7); default agent")] = None,
    mode: SearchMode = None,
    min_score: Annotated[float | None, Query(description="Leave out hits scoring under this (0 to 1)")] = None,
) -> dict[str, Any]:
    container, principal = call(router, "agents.search")
    ctx = container.agent_memory.context(principal, agent, user=user, surface=surface)
    found = container.agent_memory.search(ctx, q, limit=limit, cursor=cursor, mode=mode, min_score=min_score)
    return search_page([entry_json(r.entry, content=True, score=r.score) for r in found.items], found.next_cursor,
                       found.mode, found.fallback, found.stages) | {"index_lag": found.index_lag}
