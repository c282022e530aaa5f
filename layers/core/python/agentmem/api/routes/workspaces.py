"""Workspaces (SPEC §8): a conversation's files, and links to them that need no key.

A file's path is the rest of the URL after ``/workspace/files/``, slashes and all; Powertools' ``<name>``
parameters stop at a slash, so those routes match the rest with a pattern and read it from the path.
"""

from __future__ import annotations

import base64
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Query

from ..context import call, json_response
from ..limits import file_path
from ..presenters import page
from ..schemas import WorkspaceLinkBody

router = Router()
User = Annotated[str | None, Query(description="The user of the conversation (a user key implies it)")]
BASE = "/v1/agents/<agent>/conversations/<key>/workspace"
FILE_RULE = f"{BASE}/files/[\\s\\S]+"  # see the module's docstring
def _raw_body() -> bytes:
    event = router.current_event
    body = event.body or ""
    if event.is_base64_encoded:
        return base64.b64decode(body)
    return body.encode("utf-8")


@router.put(FILE_RULE, summary="Write a file (the body is its bytes, at most 4 MiB; larger ones: upload links)",
            tags=["workspaces"], operation_id="write_file")
def write_file(agent: str, key: str, user: User = None) -> dict[str, Any]:
    container, principal = call(router, "workspaces.write")
    path = file_path(router.current_event.path)
    return container.workspaces.write(principal, agent, key, path, _raw_body(), user=user).to_dict()


@router.get(FILE_RULE, summary="Read a file's bytes (a file over 4 MiB answers 307 to a download link)",
            tags=["workspaces"], operation_id="read_file")
def read_file(agent: str, key: str, user: User = None):  # type: ignore[no-untyped-def]
    # No return annotation: the document describes the answer's bytes itself (api/openapi.py). The bytes leave
    # base64-encoded, whatever type the file's name gives them (api/app.answer_body).
    container, principal = call(router, "workspaces.read")
    found = container.workspaces.read(principal, agent, key, file_path(router.current_event.path), user=user)
    if found.redirect is not None:
        return Response(status_code=307, headers={"Location": found.redirect, "Cache-Control": "no-store"},
                        content_type="application/json", body='{"redirect": true}')
    return Response(status_code=200, content_type=found.content_type, body=found.data,
                    headers={"Cache-Control": "no-store"})


@router.delete(FILE_RULE, summary="Delete a file", tags=["workspaces"], operation_id="delete_file")
def delete_file(agent: str, key: str, user: User = None) -> dict[str, Any]:
    container, principal = call(router, "workspaces.delete")
    return container.workspaces.delete(principal, agent, key, file_path(router.current_event.path), user=user)


@router.get(f"{BASE}/files", summary="The workspace's files, each with a fresh download link", tags=["workspaces"],
            operation_id="list_files")
def list_files(
    agent: str, key: str, user: User = None,
    prefix: Annotated[str | None, Query(description="Only paths that start with this")] = None,
    limit: Annotated[int | None, Query(description="At most 1,000; default 100")] = None,
    cursor: Annotated[str | None, Query(description="next_cursor of the previous page")] = None,
    expires_in_s: Annotated[int | None, Query(description="How long each link works: 1–86,400 s; default 3,600")]
    = None,
) -> dict[str, Any]:
    container, principal = call(router, "workspaces.list")
    files, next_cursor = container.workspaces.files(
        principal, agent, key, user=user, prefix=prefix, limit=limit, cursor=cursor, expires_in_s=expires_in_s
    )
    return page([f.to_dict() for f in files], next_cursor)


@router.post(f"{BASE}/links", summary="A link to download (GET) or upload (PUT) one file, with no key",
             tags=["workspaces"], operation_id="create_link")
def create_link(agent: str, key: str, body: Annotated[WorkspaceLinkBody, Body()], user: User = None) -> Response[Any]:
    container, principal = call(router, "workspaces.link")
    link = container.workspaces.link(
        principal, agent, key, body.path, user=user, method=body.method, expires_in_s=body.expires_in_s,
        size_bytes=body.size_bytes,
    )
    return json_response(201, link)
