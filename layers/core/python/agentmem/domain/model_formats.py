"""The context in each model API's own shape (SPEC §5): Amazon Bedrock Converse, the Anthropic Messages API
and OpenAI Chat Completions. Pure.

``render(messages, fmt)`` takes a context's ``messages`` as agentmem assembles them (system rows, then the
window's ``user`` / ``assistant`` / ``tool_call`` / ``tool_result`` rows, ``domain/context.py``) and returns
what that API takes as it is:

- ``bedrock``: ``{"system": [{"text"}], "messages": [{"role", "content": [{"text"} | {"toolUse"} |
  {"toolResult"}]}]}`` — ``converse(modelId=..., system=..., messages=...)``;
- ``anthropic``: ``{"system": [{"type": "text", "text"}], "messages": [{"role", "content": [text | tool_use
  | tool_result blocks]}]}`` — ``messages.create(model=..., system=..., messages=...)``;
- ``openai``: ``{"messages": [system, user, assistant (with ``tool_calls``), tool rows]}`` —
  ``chat.completions.create(model=..., messages=...)``.

The rules that make it sendable, the same for the three:

1. **A tool call travels with its result.** The rows are grouped by side: the assistant's (its text and its
   tool calls) and the user's (its text and the tool results). A call is kept when its result is in the
   user's group right after it; a result when its call is in the assistant's group right before it (the
   last of several results for one call). Whatever is left out can join two groups of one side, so this
   repeats until nothing changes. In a turn-aligned window (``domain/window.py``) nothing is left out.
2. **Results come first.** In a user's group the tool results are sent before its text: Anthropic and
   OpenAI want them right after the call.
3. **One message a group** for Bedrock and Anthropic, which require user and assistant to alternate; and
   since both require the first message to be the user's, a window that starts with the assistant's rows
   (one turn longer than the window) is preceded by a user message saying ``CONTINUES``. OpenAI takes one
   message per row, except an assistant's group with tool calls: one message with its text and every call,
   then one ``tool`` message per result.
4. **Nothing blank.** A text of white space only is left out (Bedrock and Anthropic refuse blank text); a
   tool result with no text and no result says ``NO_OUTPUT`` on Bedrock, which needs some content.
5. **Ids and names the APIs accept.** A tool call id or a tool name that is not 1–64 of ``[A-Za-z0-9_-]``
   (Bedrock's and OpenAI's patterns) is sent rewritten: a name with ``_`` for each other character (cut to
   64), an id as ``t_`` and 32 hex digits of its SHA-256 (so a call and its result still match).

A tool call's ``arguments`` are its input (a JSON object; OpenAI's ``arguments`` is that object as JSON
text). A tool result's text is its ``content`` and then its ``result`` as JSON (a text result as it is);
on Bedrock a result that is a JSON object is sent as a ``json`` block.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from .errors import InvalidError

ModelFormat = Literal["bedrock", "anthropic", "openai"]
MODEL_FORMATS: tuple[str, ...] = get_args(ModelFormat)
CONTINUES = "(The conversation continues from earlier messages.)"
NO_OUTPUT = "(no output)"
API_NAME_MAX = 64
_API_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_NOT_NAME_CHARACTER = re.compile(r"[^A-Za-z0-9_-]")

Side = Literal["user", "assistant"]


def check_model_format(value: str | None) -> ModelFormat | None:
    """``format=``: one of the three APIs, or None (agentmem's own shape)."""
    if value is None:
        return None
    if value not in MODEL_FORMATS:
        raise InvalidError(
            f"format must be one of {', '.join(MODEL_FORMATS)} (or left out for agentmem's own shape)",
            field="format",
        )
    return value  # type: ignore[return-value]


def api_id(tool_call_id: str) -> str:
    """A tool call id as the APIs take it (``t_`` and a hash when the id is not one they accept)."""
    if _API_NAME.fullmatch(tool_call_id):
        return tool_call_id
    return "t_" + hashlib.sha256(tool_call_id.encode("utf-8")).hexdigest()[:32]


def api_name(tool_name: str) -> str:
    """A tool name as the APIs take it: each character outside ``[A-Za-z0-9_-]`` as ``_``, at most 64."""
    if _API_NAME.fullmatch(tool_name):
        return tool_name
    return _NOT_NAME_CHARACTER.sub("_", tool_name)[:API_NAME_MAX] or "tool"


def result_text(content: str, result: Any) -> str:
    """What a tool result says, as text: its content, then its result (JSON, or a text result as it is)."""
    parts = [content] if content.strip() else []
    if result is not None:
        parts.append(result if isinstance(result, str) else json.dumps(result, ensure_ascii=False))
    return "\n".join(part for part in parts if part.strip())


# --- the rows, grouped and paired ----------------------------------------------------------------


@dataclass(frozen=True)
class _Row:
    side: Side
    kind: Literal["text", "call", "result"]
    text: str = ""
    call_id: str = ""
    name: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    result: Any = None


def _rows(messages: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[_Row]]:
    """The system texts and the window's rows of a context's ``messages``."""
    system: list[str] = []
    rows: list[_Row] = []
    for message in messages:
        role = message.get("role")
        content = message.get("content") or ""
        content = content if isinstance(content, str) else ""
        if role == "system":
            if content.strip():
                system.append(content)
        elif role in ("user", "assistant"):
            if content.strip():
                rows.append(_Row(role, "text", content))
        elif role == "tool_call":
            if content.strip():  # what the assistant said with the call
                rows.append(_Row("assistant", "text", content))
            arguments = message.get("arguments")
            rows.append(_Row("assistant", "call", call_id=str(message.get("tool_call_id") or ""),
                             name=str(message.get("tool_name") or ""),
                             arguments=dict(arguments) if isinstance(arguments, Mapping) else {}))
        elif role == "tool_result":
            rows.append(_Row("user", "result", content, call_id=str(message.get("tool_call_id") or ""),
                             name=str(message.get("tool_name") or ""), result=message.get("result")))
    return system, rows


def _groups(rows: Sequence[_Row]) -> list[list[int]]:
    """The indexes of ``rows`` in runs of one side."""
    groups: list[list[int]] = []
    for index, row in enumerate(rows):
        if groups and rows[groups[-1][0]].side == row.side:
            groups[-1].append(index)
        else:
            groups.append([index])
    return groups


def _unpaired(rows: Sequence[_Row], groups: Sequence[list[int]]) -> set[int]:
    """The rows rule 1 leaves out in one round: calls not answered by the next group, results not asked
    by the previous one, a second call with one id, all but the last result for one call."""
    out: set[int] = set()
    for number, group in enumerate(groups):
        if rows[group[0]].side == "assistant":
            after = groups[number + 1] if number + 1 < len(groups) else []
            answered = {rows[i].call_id for i in after if rows[i].kind == "result"}
            seen: set[str] = set()
            for i in group:
                if rows[i].kind == "call":
                    if rows[i].call_id in seen or rows[i].call_id not in answered:
                        out.add(i)
                    seen.add(rows[i].call_id)
        else:
            before = groups[number - 1] if number > 0 else []
            asked = {rows[i].call_id for i in before if rows[i].kind == "call" and i not in out}
            last: dict[str, int] = {}
            for i in group:
                if rows[i].kind != "result":
                    continue
                if rows[i].call_id not in asked:
                    out.add(i)
                    continue
                if rows[i].call_id in last:
                    out.add(last[rows[i].call_id])
                last[rows[i].call_id] = i
    return out


def paired(rows: Sequence[_Row]) -> list[list[_Row]]:
    """Rule 1 and 2: the rows in groups of one side, every call with its result, results first."""
    kept = list(rows)
    while True:
        groups = _groups(kept)
        out = _unpaired(kept, groups)
        if not out:
            break
        kept = [row for index, row in enumerate(kept) if index not in out]
    shaped: list[list[_Row]] = []
    for group in _groups(kept):
        members = [kept[i] for i in group]
        shaped.append([r for r in members if r.kind == "result"] + [r for r in members if r.kind != "result"])
    return shaped


# --- the three shapes ------------------------------------------------------------------------------


def _bedrock_block(row: _Row) -> dict[str, Any]:
    if row.kind == "text":
        return {"text": row.text}
    if row.kind == "call":
        return {"toolUse": {"toolUseId": api_id(row.call_id), "name": api_name(row.name), "input": row.arguments}}
    content: list[dict[str, Any]] = []
    if row.text.strip():
        content.append({"text": row.text})
    if isinstance(row.result, Mapping):
        content.append({"json": row.result})
    elif row.result is not None and result_text("", row.result):
        content.append({"text": result_text("", row.result)})
    return {"toolResult": {"toolUseId": api_id(row.call_id), "content": content or [{"text": NO_OUTPUT}]}}


def _anthropic_block(row: _Row) -> dict[str, Any]:
    if row.kind == "text":
        return {"type": "text", "text": row.text}
    if row.kind == "call":
        return {"type": "tool_use", "id": api_id(row.call_id), "name": api_name(row.name), "input": row.arguments}
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": api_id(row.call_id)}
    text = result_text(row.text, row.result)
    if text:
        block["content"] = text
    return block


def _alternating(groups: list[list[_Row]], block: Any) -> list[dict[str, Any]]:
    messages = [{"role": group[0].side, "content": [block(row) for row in group]} for group in groups]
    if messages and messages[0]["role"] == "assistant":
        messages.insert(0, {"role": "user", "content": [block(_Row("user", "text", CONTINUES))]})
    return messages


def _openai(system: list[str], groups: list[list[_Row]]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": text} for text in system]
    for group in groups:
        if group[0].side == "user":
            for row in group:
                if row.kind == "result":
                    messages.append({"role": "tool", "tool_call_id": api_id(row.call_id),
                                     "content": result_text(row.text, row.result)})
                else:
                    messages.append({"role": "user", "content": row.text})
            continue
        calls = [row for row in group if row.kind == "call"]
        texts = [row.text for row in group if row.kind == "text"]
        if not calls:
            messages += [{"role": "assistant", "content": text} for text in texts]
            continue
        messages.append({
            "role": "assistant", "content": "\n\n".join(texts) if texts else None,
            "tool_calls": [{"id": api_id(row.call_id), "type": "function",
                            "function": {"name": api_name(row.name),
                                         "arguments": json.dumps(row.arguments, ensure_ascii=False)}}
                           for row in calls],
        })
    return messages


def render(messages: Sequence[Mapping[str, Any]], fmt: ModelFormat) -> dict[str, Any]:
    """A context's ``messages`` (agentmem's shape) as ``fmt`` takes them: ``system`` and ``messages`` for
    Bedrock and Anthropic, ``messages`` for OpenAI."""
    system, rows = _rows(messages)
    groups = paired(rows)
    if fmt == "bedrock":
        return {"system": [{"text": text} for text in system], "messages": _alternating(groups, _bedrock_block)}
    if fmt == "anthropic":
        return {"system": [{"type": "text", "text": text} for text in system],
                "messages": _alternating(groups, _anthropic_block)}
    return {"messages": _openai(system, groups)}
