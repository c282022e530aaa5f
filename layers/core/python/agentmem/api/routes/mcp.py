"""MCP over streamable HTTP (SPEC §9): ``POST /v1/mcp?agent=NAME&user=U`` serves one agent's tools.

Stateless and answering JSON, so each request stands alone (one Lambda invocation each); GET and DELETE
answer 405, as MCP's stateless servers do. The caller's key authenticates it like every route.
"""

from __future__ import annotations

import json
import re
from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query

from ..context import call

router = Router()
_METHOD = re.compile(r"[a-z][A-Za-z/_]{0,48}")


def jsonrpc_method(body: str | None) -> str:
    """The JSON-RPC method a request carries, for the usage counters ("response" for a reply, "other")."""
    try:
        message = json.loads(body or "")
    except ValueError:
        return "other"
    if not isinstance(message, dict):
        return "other"
    method = message.get("method")
    if method is None:
        return "response" if "result" in message or "error" in message else "other"
    return method if isinstance(method, str) and _METHOD.fullmatch(method) else "other"


@router.post("/v1/mcp", summary="MCP streamable HTTP (stateless, JSON answers): an agent's memory tools",
             tags=["mcp"])
def serve_mcp(
    agent: Annotated[str, Query(description="The agent whose tools to serve")],
    user: Annotated[str | None, Query(description="The user the MCP client acts for (a user key implies it)")] = None,
) -> Response[str]:
    from ...mcp_server.http import HttpRequest, in_process_server, serve_request

    event = router.current_event
    body = event.decoded_body or ""
    container, principal = call(router, f"mcp.{jsonrpc_method(body)}", billable=False)
    service = container.tools
    service.definitions(principal, agent, user=user, surface="mcp")  # a wrong agent or user is the API's 404/403
    answer = serve_request(
        in_process_server(service, principal, agent, user),
        HttpRequest("POST", event.path, _query(agent, user), dict(event.headers or {}), body.encode("utf-8")),
    )
    headers = {k: v for k, v in answer.headers.items() if k.lower() not in ("content-length", "content-type")}
    text = answer.body.decode("utf-8", errors="replace")
    if answer.status >= 400 and not _is_json(text):
        # the transport refused the request in plain words: answer as JSON-RPC, as its other refusals do
        error = {"code": -32600, "message": text.strip() or f"the request was refused ({answer.status})"}
        return Response(status_code=answer.status, content_type="application/json", headers=headers,
                        body=json.dumps({"jsonrpc": "2.0", "id": None, "error": error}))
    return Response(
        status_code=answer.status, content_type=answer.headers.get("content-type", "application/json"),
        body=text, headers=headers,
    )


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _query(agent: str, user: str | None) -> str:
    from urllib.parse import urlencode

    return urlencode({"agent": agent, **({"user": user} if user else {})})
