"""What a tool call answers: the ``result`` object of the contract and a short text a model reads. Pure."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .models import Entry
from .search import Ranked

SNIPPET_CHARS = 160


def entry_dict(entry: Entry, *, content: bool) -> dict[str, Any]:
    """An entry with the field names of SPEC §2.1, as the API answers it."""
    body: dict[str, Any] = {
        "name": entry.name,
        "memory": entry.memory,
        "user_id": entry.user_id,
        "description": entry.description,
        "category": entry.category,
        "importance": entry.importance,
        "visibility": entry.visibility,
        "version": entry.version,
        "updated_by": entry.updated_by,
        "created_at": entry.created_at,
        "updated_at": entry.updated_at,
        "expires_at": entry.expires_at,
    }
    if content:
        body["content"] = entry.content
    return body


def _layer(memory: str, user_id: str | None) -> str:
    return f"{memory}, user {user_id}'s layer" if user_id is not None else f"{memory}, the account's layer"


def _snippet(text: str | None) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= SNIPPET_CHARS else flat[: SNIPPET_CHARS - 1].rstrip() + "…"


def _answered(mode: str, fallback: str | None, index_lag: int | None = None) -> dict[str, Any]:
    """The mode that answered, why it fell back (when it did), and how many documents of the search's scope the
    semantic index has not caught up with (``index_lag``; None: keyword, or the backend cannot tell)."""
    return {"mode": mode, **({"fallback": fallback} if fallback else {}), "index_lag": index_lag}


def _behind(index_lag: int | None, one: str, many: str) -> str:
    """What the model is told when the semantic index has not caught up with the search's scope: '' when it has."""
    if not index_lag or index_lag <= 0:
        return ""
    return (f"\n(The search index has not caught up with {index_lag} {one if index_lag == 1 else many} yet: until it "
            "does, those are found by their words only.)")


def search_result(
    query: str, ranked: Sequence[Ranked], mode: str = "hybrid", fallback: str | None = None,
    index_lag: int | None = None,
) -> tuple[dict[str, Any], str]:
    """memory__search (memory_recall): the entries found, the mode that answered, and how many entries of the
    memories searched the semantic index has not caught up with (``index_lag``; None: keyword, or it cannot tell)."""
    items = []
    for hit in ranked:
        e = hit.entry
        items.append({
            "name": e.name, "description": e.description, "content": e.content, "memory": e.memory,
            "user_id": e.user_id, "score": hit.score, "category": e.category, "importance": e.importance,
            "visibility": e.visibility, "version": e.version, "updated_at": e.updated_at,
        })
    answered = _answered(mode, fallback, index_lag)
    behind = _behind(index_lag, "entry", "entries")
    if not ranked:
        return {"items": items, **answered}, f"No entry matches {query!r}." + behind
    lines = [f"{len(ranked)} entr{'y' if len(ranked) == 1 else 'ies'} for {query!r}:"]
    for number, hit in enumerate(ranked, 1):
        e = hit.entry
        whose = "account" if e.user_id is None else f"user {e.user_id}"
        lines.append(f"{number}. {e.name} — {e.description} — {e.memory} ({whose}) — {_snippet(e.content)}")
    return {"items": items, **answered}, "\n".join(lines) + behind


def read_result(entry: Entry, memory: str, also_in: Sequence[str]) -> tuple[dict[str, Any], str]:
    result = {"entry": entry_dict(entry, content=True), "memory": memory, "also_in": list(also_in)}
    text = (
        f"{entry.name} (version {entry.version}, {_layer(memory, entry.user_id)}) — {entry.description}\n\n"
        f"{entry.content}"
    )
    if also_in:
        text += (
            f"\n\n(Another entry named {entry.name!r} is in {', '.join(also_in)}; read it with memory="
            f"{also_in[0]!r}.)"
        )
    return result, text


_FORCED = {
    "sensitive_content": "It holds what looks like a credential or personal data, so it was kept private to the user.",
}
_DOWNGRADED = {
    "no_user_context": "No user is known here, so it was stored shared: every conversation of the agent reads it.",
}


def save_result(
    entry: Entry, memory: str, *, created: bool, forced: str | None, downgraded: str | None
) -> tuple[dict[str, Any], str]:
    result: dict[str, Any] = {"entry": entry_dict(entry, content=False), "memory": memory, "created": created}
    what = "Created" if created else "Saved"
    text = f"{what} {entry.name!r} (version {entry.version}) in {_layer(memory, entry.user_id)}."
    if forced is not None:
        result["forced"] = forced
        text += " " + _FORCED.get(forced, f"It was stored private ({forced}).")
    if downgraded is not None:
        result["downgraded"] = downgraded
        text += " " + _DOWNGRADED.get(downgraded, f"It was stored shared ({downgraded}).")
    return result, text


def delete_result(entry: Entry, memory: str) -> tuple[dict[str, Any], str]:
    result = {"deleted": entry.name, "memory": memory, "version": entry.version}
    return result, f"Deleted {entry.name!r} (version {entry.version}) from {_layer(memory, entry.user_id)}."


def journal_search_result(
    query: str, hits: Sequence[Any], mode: str = "hybrid", fallback: str | None = None,
    index_lag: int | None = None,
) -> tuple[dict[str, Any], str]:
    """journal_message_search: the messages found, each with its conversation and seq, the mode that answered and
    how many messages of the scope the semantic index has not caught up with (``index_lag``)."""
    items = [{"conversation": h.conversation, "seq": h.seq, "role": h.role, "snippet": h.snippet, "score": h.score,
              "created_at": h.created_at, "snippet_start": h.snippet_start, "snippet_end": h.snippet_end}
             for h in hits]
    answered = _answered(mode, fallback, index_lag)
    behind = _behind(index_lag, "message", "messages")
    if not items:
        return {"items": [], **answered}, f"No message of these conversations matches {query!r}." + behind
    lines = [f"{n}. [{i['conversation']} #{i['seq']}, {i['role']}, {i['created_at'][:16].replace('T', ' ')} UTC] "
             f"{i['snippet']}" for n, i in enumerate(items, 1)]
    return ({"items": items, **answered},
            f"{len(items)} messages match {query!r}:\n" + "\n".join(lines) + behind)


def tool_call_view_result(view: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """journal_tool_call_view: the whole arguments and result of an earlier tool call."""
    result = view.get("result")
    shown = json.dumps(result, ensure_ascii=False) if result is not None else view.get("result_content")
    text = (
        f"Tool call {view['tool_call_id']} ({view.get('tool_name') or 'unknown tool'}) in {view['conversation']}:\n"
        f"arguments: {json.dumps(view.get('arguments'), ensure_ascii=False)}\nresult: {shown}"
    )
    return view, text
