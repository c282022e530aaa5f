"""Conversations (SPEC §4, §5): the journal, the context for a turn, journal search, the tool call view,
summaries on demand, deleting and purging."""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from pydantic import BaseModel, ValidationError

from ..context import call, json_response
from ..presenters import conversation_json, entry_json, message_json, page, search_page
from ..schemas import AppendBody, EmptyBody, ModelAppendBody
from . import SearchMode

router = Router()
User = Annotated[str | None, Query(description="The user of the conversation (a user key implies it)")]
Surface = Annotated[str | None, Query(description="Where the conversation happens (SPEC §7); default agent")]
BASE = "/v1/agents/<agent>/conversations"


Format = Annotated[str | None, Query(
    description="bedrock, anthropic or openai: that model API's own shape (default: agentmem's own)")]
ModelBody = Annotated[dict[str, Any], Body(
    description="`AppendBody` (agentmem's rows), or with `format=` a `ModelAppendBody` (the API's messages)")]
B = TypeVar("B", bound=BaseModel)


def _parse_body(model: type[B], body: dict[str, Any]) -> B:
    """The body as ``model``; a complaint is a 400 naming the field, as the resolver's own validation says it."""
    try:
        return model.model_validate(body)
    except ValidationError as error:
        problems = [{**problem, "loc": ("body", *problem["loc"])} for problem in error.errors(include_url=False)]
        raise RequestValidationError(problems) from None


@router.post(f"{BASE}/<key>/messages", summary="Append messages to the journal (durable when it answers)",
             tags=["conversations"], operation_id="append_messages")
def append_messages(agent: str, key: str, body: ModelBody, user: User = None, format: Format = None) -> Response[Any]:
    container, principal = call(router, "conversations.append")
    extra: dict[str, Any] = {}
    if format is None:
        from ...domain.conversations import MessageDraft  # with the conversations service, on its first route

        plain = _parse_body(AppendBody, body)
        drafts = [
            MessageDraft(role=m.role, content=m.content, tool_name=m.tool_name, tool_call_id=m.tool_call_id,
                         arguments=m.arguments, result=m.result, client_id=m.client_id,
                         created_at=m.created_at)
            for m in plain.messages
        ]
        result = container.conversations.append(
            principal, agent, key, drafts, user=user, surface=plain.surface, window_messages=plain.window_messages
        )
    else:
        shaped = _parse_body(ModelAppendBody, body)
        result, skipped = container.conversations.append_model_messages(
            principal, agent, key, shaped.messages, format, user=user, surface=shaped.surface,
            window_messages=shaped.window_messages,
        )
        extra = {"format": format, "skipped": [item.to_dict() for item in skipped]}
    answer = {"items": [message_json(m) for m in result.messages], "added": result.added,
              "conversation": conversation_json(result.record), **extra}
    return json_response(201 if result.added else 200, answer)


@router.get(f"{BASE}/<key>/messages", summary="Read the journal back, whole and in order", tags=["conversations"],
            operation_id="read_messages")
def read_messages(
    agent: str, key: str, user: User = None,
    after: Annotated[int | None, Query(description="Messages after this seq (next_cursor of the last page)")] = None,
    limit: Annotated[int | None, Query(description="At most 1,000; default 100")] = None,
) -> dict[str, Any]:
    container, principal = call(router, "conversations.read")
    rows, next_after = container.conversations.messages(principal, agent, key, user=user, after=after, limit=limit)
    return page([message_json(m) for m in rows], None if next_after is None else str(next_after))


@router.get(f"{BASE}/<key>/context", summary="What the model sees next turn: pinned, index, summary, window",
            tags=["conversations"], operation_id="read_context")
def read_context(
    agent: str, key: str, user: User = None, surface: Surface = None, format: Format = None
) -> dict[str, Any]:
    container, principal = call(router, "conversations.context")
    return container.conversations.context(principal, agent, key, user=user, surface=surface, format=format)


@router.get(f"{BASE}/<key>/tool-calls/<tool_call_id>", summary="The full arguments and result of a tool call",
            tags=["conversations"], operation_id="read_tool_call")
def read_tool_call(
    agent: str, key: str, tool_call_id: str, user: User = None, surface: Surface = None
) -> dict[str, Any]:
    container, principal = call(router, "conversations.tool_call")
    return container.conversations.tool_call(principal, agent, key, tool_call_id, user=user, surface=surface)


@router.get("/v1/agents/<agent>/messages/search",
            summary="Find messages of the agent's conversations by meaning and words", tags=["conversations"],
            operation_id="search_messages")
def search_messages(
    agent: str, q: Annotated[str, Query(description="Words to find")], user: User = None,
    conversation: Annotated[str | None, Query(description="Only this conversation")] = None,
    limit: Annotated[int | None, Query(description="At most 100; default 10")] = None, surface: Surface = None,
    cursor: Annotated[str | None, Query(description="next_cursor of the previous page (the same q)")] = None,
    mode: SearchMode = None,
    min_score: Annotated[float | None, Query(description="Leave out hits scoring under this (0 to 1)")] = None,
    after: Annotated[str | None, Query(
        description="Only messages written after this time (ISO 8601; a date alone is its midnight, UTC)")] = None,
    before: Annotated[str | None, Query(
        description="Only messages written before this time (ISO 8601); not earlier than `after`")] = None,
) -> dict[str, Any]:
    container, principal = call(router, "conversations.search")
    found = container.conversations.search_page(
        principal, agent, q, user=user, conversation=conversation, limit=limit, surface=surface, cursor=cursor,
        mode=mode, min_score=min_score, after=after, before=before,
    )
    items = [{"conversation": h.conversation, "seq": h.seq, "role": h.role, "snippet": h.snippet, "score": h.score,
              "created_at": h.created_at, "snippet_start": h.snippet_start, "snippet_end": h.snippet_end}
             for h in found.items]
    return search_page(items, found.next_cursor, found.mode, found.fallback) | {"index_lag": found.index_lag,
                                                                              "stages": list(found.stages)}


@router.get(BASE, summary="The agent's conversations with this user (or the account)", tags=["conversations"],
            operation_id="list_conversations")
def list_conversations(agent: str, user: User = None) -> dict[str, Any]:
    container, principal = call(router, "conversations.list")
    return page([conversation_json(r) for r in container.conversations.list_conversations(principal, agent, user=user)])


@router.get(f"{BASE}/<key>", summary="One conversation", tags=["conversations"], operation_id="read_conversation")
def read_conversation(agent: str, key: str, user: User = None) -> dict[str, Any]:
    container, principal = call(router, "conversations.get")
    return conversation_json(container.conversations.get(principal, agent, key, user=user))


@router.get(f"{BASE}/<key>/checkpoint", summary="The conversation's checkpoint: its rolling summary",
            tags=["conversations"], operation_id="read_checkpoint")
def read_checkpoint(agent: str, key: str, user: User = None) -> dict[str, Any]:
    container, principal = call(router, "conversations.checkpoint")
    entry, record, passes = container.conversations.checkpoint(principal, agent, key, user=user)
    return entry_json(entry, content=True, covers_through_seq=record.folded_through, passes=passes.items,
                      passes_total=passes.total, lines_by_hand=len(record.lines_by_hand))


@router.delete(f"{BASE}/<key>", summary="Delete a conversation (purge=true: its journal, checkpoint and files too)",
               tags=["conversations"], operation_id="delete_conversation")
def delete_conversation(
    agent: str, key: str, user: User = None,
    purge: Annotated[bool, Query(description="Remove the journal, checkpoint, workspace and index too")] = False,
) -> dict[str, Any]:
    container, principal = call(router, "conversations.delete")
    return container.conversations.delete(principal, agent, key, user=user, purge=purge)


@router.post(f"{BASE}/<key>/compact", summary="Run a summary pass now, in the background", tags=["conversations"],
             operation_id="compact_conversation")
def compact(agent: str, key: str, user: User = None, body: Annotated[EmptyBody | None, Body()] = None) -> Response[Any]:
    container, principal = call(router, "conversations.compact")
    return json_response(202, {"job_id": container.conversations.compact(principal, agent, key, user=user)})


@router.delete("/v1/users/<user_id>", summary="Erase a user: their layers, conversations, files and keys",
               tags=["users"], operation_id="erase_user")
def erase_user(user_id: str) -> dict[str, Any]:
    container, principal = call(router, "users.erase")
    return {"user": user_id, "removed": container.erasure.erase_user(principal, user_id)}
