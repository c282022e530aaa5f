"""The agent tools (SPEC §9): their definitions in a model API's format, and running one."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Query

from ..context import call
from ..presenters import page
from ..schemas import ToolCallBody

router = Router()
User = Annotated[str | None, Query(description="The user of the conversation (a user key implies it)")]


@router.get("/v1/agents/<agent>/tools", summary="The agent's tools as a model API takes them", tags=["tools"],
            operation_id="list_tools")
def list_tools(
    agent: str, user: User = None,
    dialect: Annotated[str | None, Query(description="noclick (default: memory__search, ...) or noorle")] = None,
    format: Annotated[str | None, Query(description="bedrock, openai, anthropic or mcp (default)")] = None,
    surface: Annotated[str | None, Query(description="Where the agent is talking (SPEC §7); default agent")] = None,
) -> dict[str, Any]:
    # the tools' definitions and formats come with the first tools request (the tools service needs them too)
    from ...domain.tool_formats import check_format, render
    from ...domain.tools import check_dialect

    container, principal = call(router, "tools.list", billable=False)
    chosen_dialect, chosen_format = check_dialect(dialect), check_format(format)
    tools = container.tools.definitions(
        principal, agent, user=user, surface=surface, dialect=chosen_dialect
    )
    return page([render(t, chosen_format) for t in tools], dialect=chosen_dialect, format=chosen_format)


@router.post("/v1/agents/<agent>/tools/<tool>", summary="Run one of the agent's tools", tags=["tools"],
             operation_id="run_tool")
def run_tool(agent: str, tool: str, body: Annotated[ToolCallBody, Body()], user: User = None) -> dict[str, Any]:
    from ...domain.tools import find_tool  # see list_tools

    operation = find_tool(tool).operation
    container, principal = call(router, f"tools.{operation}", billable=False)
    outcome = container.tools.execute(
        principal, agent, tool, body.arguments, conversation=body.conversation, user=user, surface=body.surface
    )
    return outcome.to_dict()
