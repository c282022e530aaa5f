"""API keys of the caller's account (account key only)."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body

from ..context import call, json_response
from ..presenters import key_json, page
from ..schemas import CreateKeyBody

router = Router()


@router.post("/v1/keys", summary="Create a key; the secret is shown once", tags=["keys"], operation_id="create_key")
def create_key(body: Annotated[CreateKeyBody | None, Body()] = None) -> Response[Any]:
    container, principal = call(router, "keys.create")
    key, secret = container.keys.create_key(principal, body.user if body else None)
    return json_response(201, key_json(key, secret))


@router.get("/v1/keys", summary="List the account's keys (never their secrets)", tags=["keys"],
            operation_id="list_keys")
def list_keys() -> dict[str, Any]:
    container, principal = call(router, "keys.list")
    return page([key_json(k) for k in container.keys.list_keys(principal)])


@router.delete("/v1/keys/<key_id>", summary="Revoke a key", tags=["keys"], operation_id="delete_key")
def delete_key(key_id: str) -> Response[Any]:
    container, principal = call(router, "keys.delete")
    container.keys.delete_key(principal, key_id)
    return Response(status_code=204)
