"""Health and usage."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query

from ... import __version__
from ...bootstrap import get_container
from ...domain.access import require_account_key
from ..context import call
from ..presenters import page, usage_json

router = Router()


@router.get("/v1/health", summary="Liveness (no key needed)", tags=["system"], operation_id="get_health")
def health() -> dict[str, Any]:
    return {"status": "ok", "version": __version__, "backend": get_container().settings.backend}


@router.get("/v1/usage", summary="Usage counters of the account by day and operation", tags=["system"],
            operation_id="get_usage")
def usage(since: Annotated[str | None, Query(description="First day, YYYY-MM-DD")] = None) -> dict[str, Any]:
    container, principal = call(router, "usage.read")
    require_account_key(principal, "reading usage")
    return page([usage_json(c) for c in container.usage.counts(principal, since)])
