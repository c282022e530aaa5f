"""Entries of a memory (SPEC §2) and word search (§6.1)."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Query

from ...domain.access import check_requested_visibility
from ...domain.errors import InvalidError, PreconditionFailedError, VersionConflictError
from ..context import call, etag, json_response, precondition, writer
from ..presenters import entry_json, history_json, page, search_page
from ..schemas import SaveEntryBody
from . import SearchMode

router = Router()
User = Annotated[str | None, Query(description="The user's layer; absent = the account layer")]
Limit = Annotated[int | None, Query(description="Page size, at most 100")]


@router.get("/v1/memories/<memory>/entries", summary="One layer's entries, newest first, without content",
            tags=["entries"], operation_id="list_entries")
def list_entries(
    memory: str, user: User = None, limit: Limit = None, cursor: Annotated[str | None, Query()] = None,
    content: Annotated[bool, Query(description="Each entry with its content and content_hash (an export's walk)")]
    = False,
) -> dict[str, Any]:
    container, principal = call(router, "entries.list")
    result = container.entries.list_entries(principal, memory, user=user, limit=limit, cursor=cursor, content=content)
    return page([entry_json(e, content=content) for e in result.items], result.next_cursor)


@router.get("/v1/memories/<memory>/layers", summary="The memory's layers that hold entries, with their counts",
            tags=["entries"], operation_id="list_layers")
def list_layers(
    memory: str,
    user: Annotated[str | None, Query(description="Only the account layer and this user's (a user key implies it)")]
    = None,
) -> dict[str, Any]:
    container, principal = call(router, "entries.layers")
    return page([{"user": layer_user, "entry_count": held}
                 for layer_user, held in container.entries.layers(principal, memory, user=user)])


@router.get("/v1/memories/<memory>/entries/<name>", summary="Read an entry (or an old version)", tags=["entries"],
            operation_id="read_entry")
def read_entry(
    memory: str, name: str, user: User = None,
    version: Annotated[int | None, Query(description="An old version, while history keeps it")] = None,
) -> Response[Any]:
    container, principal = call(router, "entries.read")
    entry = container.entries.read(principal, memory, name, user=user, version=version)
    return json_response(200, entry_json(entry, content=True), etag(entry.version))


@router.put("/v1/memories/<memory>/entries/<name>", summary="Create or replace an entry", tags=["entries"],
            operation_id="save_entry")
def save_entry(memory: str, name: str, body: Annotated[SaveEntryBody, Body()], user: User = None) -> Response[Any]:
    from ...services.entries import SaveRequest  # with the entries service, on the first entry route (bootstrap)

    container, principal = call(router, "entries.save")
    check_requested_visibility(principal, body.visibility)  # before the preconditions, as the service would
    from_header = precondition(router)
    if from_header is not None and body.version is not None and body.version != from_header:
        raise InvalidError("the body's version and the If-Match/If-None-Match header disagree", field="version")
    request = SaveRequest(
        content=body.content, description=body.description, category=body.category, importance=body.importance,
        visibility=body.visibility, expires_at=body.expires_at,
        version=from_header if from_header is not None else body.version,
        clear_expiry="expires_at" in body.model_fields_set and body.expires_at is None,
    )
    try:
        result = container.entries.save(principal, memory, name, request, user=user, updated_by=writer(router))
    except VersionConflictError as conflict:
        if from_header is None:
            raise
        raise PreconditionFailedError(conflict.message, current_version=conflict.current_version) from None
    return json_response(
        201 if result.created else 200,
        entry_json(result.entry, content=False, forced=result.forced),
        etag(result.entry.version),
    )


@router.delete("/v1/memories/<memory>/entries/<name>", summary="Delete an entry", tags=["entries"],
               operation_id="delete_entry")
def delete_entry(
    memory: str, name: str, user: User = None,
    version: Annotated[int | None, Query(description="Delete only if the stored version is this")] = None,
) -> Response[Any]:
    container, principal = call(router, "entries.delete")
    from_header = precondition(router)
    try:
        container.entries.delete(
            principal, memory, name, user=user, version=from_header if from_header is not None else version,
            updated_by=writer(router),
        )
    except VersionConflictError as conflict:
        if from_header is None:
            raise
        raise PreconditionFailedError(conflict.message, current_version=conflict.current_version) from None
    return Response(status_code=204)


@router.get("/v1/memories/<memory>/entries/<name>/history", summary="An entry's changes, kept 30 days",
            tags=["entries"], operation_id="entry_history")
def entry_history(memory: str, name: str, user: User = None) -> dict[str, Any]:
    container, principal = call(router, "entries.history")
    return page([history_json(h) for h in container.entries.history(principal, memory, name, user=user)])


@router.get("/v1/memories/<memory>/search", summary="Recall a memory's entries by meaning and words", tags=["entries"],
            operation_id="search_memory")
def search_memory(
    memory: str, q: Annotated[str, Query(description="Words to find")], user: User = None,
    limit: Annotated[int | None, Query(description="At most 100; default 10")] = None,
    cursor: Annotated[str | None, Query(description="next_cursor of the previous page")] = None,
    mode: SearchMode = None,
    min_score: Annotated[float | None, Query(description="Leave out hits scoring under this (0 to 1)")] = None,
) -> dict[str, Any]:
    container, principal = call(router, "entries.search")
    found = container.entries.search_page(
        principal, memory, q, user=user, limit=limit, cursor=cursor, mode=mode, min_score=min_score
    )
    return search_page([entry_json(r.entry, content=True, score=r.score) for r in found.items], found.next_cursor,
                       found.mode, found.fallback, found.stages) | {"index_lag": found.index_lag}
