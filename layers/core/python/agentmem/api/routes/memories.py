"""Memories (SPEC §3.1)."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Query

from ..context import call, json_response
from ..presenters import memory_json, page
from ..schemas import EmptyBody

router = Router()
User = Annotated[str | None, Query(description="Act for this user (a user key implies it)")]


@router.get("/v1/memories", summary="List memories with entry counts and the agents attaching them", tags=["memories"],
            operation_id="list_memories")
def list_memories(
    user: User = None, trash: Annotated[bool, Query(description="List the trash instead")] = False
) -> dict[str, Any]:
    container, principal = call(router, "memories.list")
    return page([memory_json(m) for m in container.memories.list_memories(principal, user, trash=trash)])


@router.put("/v1/memories/<memory>", summary="Create a memory, or return the existing one", tags=["memories"],
            operation_id="put_memory")
def put_memory(memory: str, user: User = None, body: Annotated[EmptyBody | None, Body()] = None) -> Response[Any]:
    container, principal = call(router, "memories.create")
    record, created = container.memories.create(principal, memory, user)
    return json_response(201 if created else 200, memory_json(record))


@router.get("/v1/memories/<memory>", summary="One memory", tags=["memories"], operation_id="get_memory")
def get_memory(memory: str, user: User = None) -> dict[str, Any]:
    container, principal = call(router, "memories.read")
    return memory_json(container.memories.get(principal, memory, user))


@router.delete(
    "/v1/memories/<memory>", summary="Move a memory to the trash (409 while attached)", tags=["memories"],
    operation_id="delete_memory",
)
def delete_memory(memory: str, user: User = None) -> dict[str, Any]:
    container, principal = call(router, "memories.delete")
    return memory_json(container.memories.delete(principal, memory, user))


@router.post("/v1/memories/<memory>/restore", summary="Bring a memory back from the trash", tags=["memories"],
             operation_id="restore_memory")
def restore_memory(
    memory: str, user: User = None, body: Annotated[EmptyBody | None, Body()] = None
) -> dict[str, Any]:
    container, principal = call(router, "memories.restore")
    return memory_json(container.memories.restore(principal, memory, user))
