"""MCP over streamable HTTP (SPEC §9): ``POST /v1/mcp?agent=NAME&user=U`` serves one agent's tools.

Stateless and answering JSON, so each request stands alone (one Lambda invocation each); GET and DELETE
answer 405, as MCP's stateless servers do. The caller's key authenticates it like every route, and the API
answers a wrong agent or user (404, 403) before MCP is spoken; the protocol is ``agentmem.mcp_server.protocol``
(written for this route, without the ``mcp`` SDK, whose import would cost the cold start about half a second).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query

from ...domain.errors import InvalidError
from ..context import call
from ..json_body import read_json

router = Router()
_METHOD = re.compile(r"[a-z][A-Za-z/_]{0,48}")


def jsonrpc_method(body: str | None) -> str:
    """The JSON-RPC method a request carries, for the usage counters ("response" for a reply, "other")."""
    try:
        message = read_json(body or "")
    except (ValueError, InvalidError):
        return "other"
    if not isinstance(message, dict):
        return "other"
    method = message.get("method")
    if method is None:
        return "response" if "result" in message or "error" in message else "other"
    return method if isinstance(method, str) and _METHOD.fullmatch(method) else "other"


@router.post("/v1/mcp", summary="MCP streamable HTTP (stateless, JSON answers): an agent's memory tools",
             tags=["mcp"], operation_id="serve_mcp")
def serve_mcp(
    agent: Annotated[str, Query(description="The agent whose tools to serve")],
    user: Annotated[str | None, Query(description="The user the MCP client acts for (a user key implies it)")] = None,
) -> Response[str]:
    from ...mcp_server.http import in_process_tools, serve_request

    event = router.current_event
    body = event.decoded_body or ""
    container, principal = call(router, f"mcp.{jsonrpc_method(body)}", billable=False)
    service = container.tools
    service.definitions(principal, agent, user=user, surface="mcp")  # a wrong agent or user is the API's 404/403
    answer = serve_request(in_process_tools(service, principal, agent, user), header_lines(event.raw_event),
                           body.encode("utf-8"))
    return Response(status_code=answer.status, content_type=answer.headers.get("Content-Type", "application/json"),
                    body=answer.body.decode("utf-8"))


def header_lines(event: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The request's header lines as sent: API Gateway's multi-value headers keep a repeated name's every line
    (MCP refuses a routing header sent twice), the single-value ones only its last."""
    many = event.get("multiValueHeaders")
    if many:
        return [(name, str(value)) for name, values in many.items() for value in values or ()]
    return [(name, str(value)) for name, value in (event.get("headers") or {}).items()]
