"""What a route needs besides its parameters: the services, the caller, and its conditional headers."""

from __future__ import annotations

import re
from typing import Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.metrics import MetricUnit

from ..bootstrap import Container, get_container
from ..domain.errors import InvalidError
from ..domain.models import Principal
from ..observability import logger, metrics


def call(router: Router, operation: str, *, billable: bool = True) -> tuple[Container, Principal]:
    """The container and the authenticated caller; counts the operation for usage."""
    container = get_container()
    principal: Principal = router.context["principal"]
    container.usage.record(principal.account_id, operation, billable=billable)
    metrics.add_dimension(name="operation", value=operation)
    metrics.add_dimension(name="billable", value=str(billable).lower())
    metrics.add_metric(name="Requests", unit=MetricUnit.Count, value=1)
    logger.append_keys(operation=operation)
    return container, principal


def header(router: Router, name: str) -> str | None:
    value = router.current_event.headers.get(name)
    return None if value is None else str(value)


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
