"""What a route needs besides its parameters: the services, the caller, and its conditional headers."""

from __future__ import annotations

import re
from contextvars import ContextVar
from typing import Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router

from ..bootstrap import Container, get_container
from ..domain.errors import InvalidError
from ..domain.models import Principal, UpdatedBy
from ..invocation import log_keys

# (account, operation, billable) of the request being served; the handler records it when it succeeds
pending_usage: ContextVar[tuple[str, str, bool] | None] = ContextVar("pending_usage", default=None)


def call(router: Router, operation: str, *, billable: bool = True) -> tuple[Container, Principal]:
    """The container and the authenticated caller; counts the operation for usage."""
    container = get_container()
    principal: Principal = router.context["principal"]
    pending_usage.set((principal.account_id, operation, billable))  # counted once the call succeeds
    log_keys(operation=operation)
    return container, principal


def header(router: Router, name: str) -> str | None:
    value = router.current_event.headers.get(name)
    return None if value is None else str(value)


CLIENT_HEADER = "X-Agentmem-Client"


def writer(router: Router) -> UpdatedBy:
    """Who a write through the API is recorded as (``updated_by``): ``console`` when the console sent it
    (``X-Agentmem-Client: console``), else ``api``. A label of the caller's own key, not a permission: any
    client may send it, and it changes nothing of what the key may do (docs/console.md). Any other value is a
    400 naming the header: a misspelt label must not be recorded as the API's."""
    sent = header(router, CLIENT_HEADER)
    if sent is None:
        return "api"
    if sent.strip().lower() != "console":
        raise InvalidError(f"{CLIENT_HEADER} only takes \"console\" (the console's writes)", field=CLIENT_HEADER)
    return "console"


_ETAG = re.compile(r'^(?:W/)?"?(\d{1,18})"?$')


def precondition(router: Router) -> int | None:
    """``If-Match: "N"`` → N; ``If-None-Match: *`` → 0; neither → None."""
    if_match = header(router, "If-Match")
    if_none_match = header(router, "If-None-Match")
    if if_match is not None and if_none_match is not None:
        raise InvalidError("send If-Match or If-None-Match, not both", field="If-Match")
    if if_none_match is not None:
        if if_none_match.strip() != "*":
            raise InvalidError('If-None-Match only takes "*" (the entry must not exist)', field="If-None-Match")
        return 0
    if if_match is not None:
        match = _ETAG.match(if_match.strip())
        if match is None:
            raise InvalidError('If-Match takes an ETag like "3"', field="If-Match")
        return int(match.group(1))
    return None


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> Response[Any]:
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body=body, headers=headers)


def etag(version: int) -> dict[str, str]:
    return {"ETag": f'"{version}"'}
