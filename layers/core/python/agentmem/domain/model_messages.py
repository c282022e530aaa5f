"""Messages in a model API's own shape, read as journal rows (SPEC §4.1). Pure.

What a loop sent to Amazon Bedrock Converse, the Anthropic Messages API or OpenAI Chat Completions, and what
it got back, becomes the rows agentmem keeps: one row for each text (a string content, each text block or
text part), one ``tool_call`` row for each tool use (Bedrock ``toolUse``, Anthropic ``tool_use``, OpenAI
``tool_calls[]``) and one ``tool_result`` row for each result (``toolResult``, ``tool_result``, a ``tool``
message), in order. A result takes the tool name of its call when the call came in the same messages.

What the journal does not hold is **skipped, with the reason** (``Skipped``) rather than refused: system
and developer messages (the context brings its own), images, documents, audio, thinking and other
non-text blocks, and blank text. A message that is not the API's shape (a missing role or id, a text that
is not text, arguments that are not a JSON object) is refused with a 400 naming it (``messages[3].
content[1].input``). Keys the journal does not use (``name``, ``refusal: null``, ``citations``, a
response's ``id`` or ``usage``...) are ignored, so a response's message can be handed over as it came.

A message may carry ``client_id`` beside the API's keys: its first row gets it, the next ones
``<client_id>.1``, ``<client_id>.2``..., so sending the same messages again stores nothing twice.

``draft_from_json`` reads one row of agentmem's own shape (a line of a JSONL transcript).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .clock import utcnow
from .conversations import MessageDraft, check_created_at, check_message
from .errors import InvalidError
from .model_formats import ModelFormat

_SYSTEM_ROLES = ("system", "developer")
_SYSTEM_REASON = "a {role} message is not kept in the journal: the context brings its own system messages"
_DRAFT_FIELDS = ("role", "content", "tool_name", "tool_call_id", "arguments", "result", "client_id", "created_at")


@dataclass(frozen=True)
class Skipped:
    """A message (``index``: its place in what was given) or a part of one that the journal does not keep."""

    index: int
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "reason": self.reason}


@dataclass(frozen=True)
class Parsed:
    """The journal rows of some messages, with ``sources[i]`` the index of the message row ``i`` came from."""

    rows: list[MessageDraft] = field(default_factory=list)
    sources: list[int] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


def _name(index: int) -> str:
    return f"messages[{index}]"


class _Reader:
    """One message being read: its rows, and where a complaint is about."""

    def __init__(self, where: str, index: int, calls: dict[str, str]) -> None:
        self.where = where
        self.index = index
        self.calls = calls  # tool call id -> tool name, across the messages read together
        self.rows: list[MessageDraft] = []
        self.skipped: list[Skipped] = []

    # --- checked access -------------------------------------------------------------------------

    def fail(self, path: str, message: str) -> InvalidError:
        return InvalidError(f"{self.where}{path} {message}", field=f"{self.where}{path}")

    def text(self, value: Any, path: str) -> str:
        if not isinstance(value, str):
            raise self.fail(path, "must be text")
        return value

    def obj(self, value: Any, path: str) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(path, "must be an object")
        return value

    def blocks(self, value: Any, path: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(path, "must be a list of content blocks")
        return value

    def skip(self, path: str, reason: str) -> None:
        self.skipped.append(Skipped(self.index, f"{self.where}{path}: {reason}"))

    # --- rows ------------------------------------------------------------------------------------

    def say(self, role: str, text: str, path: str) -> None:
        if text.strip():
            self.rows.append(MessageDraft(role=role, content=text))  # type: ignore[arg-type]
        else:
            self.skip(path, "blank text is not kept")

    def call(self, call_id: str, name: Any, arguments: Mapping[str, Any], path: str) -> None:
        self.calls[call_id] = self.text(name, f"{path}.name")
        self.rows.append(MessageDraft(role="tool_call", content="", tool_name=self.calls[call_id],
                                      tool_call_id=call_id, arguments=dict(arguments)))

    def result(self, call_id: str, content: str, result: Any = None) -> None:
        self.rows.append(MessageDraft(role="tool_result", content=content, tool_call_id=call_id, result=result,
                                      tool_name=self.calls.get(call_id)))

    def texts_of(self, parts: list[Any], path: str, kind: str = "type") -> str:
        """The text of a tool result's parts (text parts joined by a line; others skipped)."""
        texts: list[str] = []
        for number, part in enumerate(parts):
            where = f"{path}[{number}]"
            part = self.obj(part, where)
            if kind == "type":
                if part.get("type") == "text":
                    texts.append(self.text(part.get("text"), f"{where}.text"))
                else:
                    self.skip(where, f"{part.get('type')!r} parts are not kept (the journal holds text)")
            elif "text" in part:
                texts.append(self.text(part["text"], f"{where}.text"))
            else:
                self.skip(where, f"{_first_key(part)!r} content is not kept (the journal holds text and JSON)")
        return "\n".join(texts)


def _first_key(block: Mapping[str, Any]) -> str:
    return next(iter(block), "empty")


# --- each API ------------------------------------------------------------------------------------


def _openai(reader: _Reader, message: Mapping[str, Any]) -> None:
    role = message.get("role")
    content = message.get("content")
    if role in _SYSTEM_ROLES:
        reader.skip("", _SYSTEM_REASON.format(role=role))
    elif role in ("user", "assistant"):
        if isinstance(content, list):
            for number, part in enumerate(content):
                where = f".content[{number}]"
                part = reader.obj(part, where)
                kind = part.get("type")
                if kind in ("text", "refusal"):
                    reader.say(role, reader.text(part.get(kind), f"{where}.{kind}"), where)
                else:
                    reader.skip(where, f"{kind!r} parts are not kept (the journal holds text)")
        elif content is not None:
            reader.say(role, reader.text(content, ".content"), ".content")
        if role == "assistant":
            if message.get("refusal") is not None:
                reader.say(role, reader.text(message["refusal"], ".refusal"), ".refusal")
            calls = message.get("tool_calls")
            for number, call in enumerate([] if calls is None else reader.blocks(calls, ".tool_calls")):
                where = f".tool_calls[{number}]"
                call = reader.obj(call, where)
                if call.get("type", "function") != "function":
                    reader.skip(where, f"{call.get('type')!r} tool calls are not kept (only function calls)")
                    continue
                function = reader.obj(call.get("function"), f"{where}.function")
                reader.call(reader.text(call.get("id"), f"{where}.id"), function.get("name"),
                            _arguments(reader, function.get("arguments"), f"{where}.function.arguments"),
                            f"{where}.function")
            if message.get("function_call") is not None:
                reader.skip(".function_call", "the deprecated function_call is not kept (use tool_calls)")
        if not reader.rows and not reader.skipped:
            reader.skip("", "it holds no text and no tool call")
    elif role == "tool":
        call_id = reader.text(message.get("tool_call_id"), ".tool_call_id")
        text = (reader.texts_of(content, ".content") if isinstance(content, list)
                else reader.text(content if content is not None else "", ".content"))
        reader.result(call_id, text)
    elif role == "function":
        reader.skip("", "a function message (the deprecated function calling) is not kept; use tool messages")
    else:
        raise reader.fail(".role", "must be one of system, developer, user, assistant, tool (OpenAI's roles)")


def _arguments(reader: _Reader, value: Any, path: str) -> dict[str, Any]:
    """OpenAI's arguments: a JSON object as text ("" for none)."""
    text = reader.text(value if value is not None else "", path)
    if not text.strip():
        return {}
    try:
        parsed = json.loads(text)
    except ValueError:
        raise reader.fail(path, "must be a JSON object as text") from None
    if not isinstance(parsed, dict):
        raise reader.fail(path, "must be a JSON object as text")
    return parsed


def _anthropic(reader: _Reader, message: Mapping[str, Any]) -> None:
    role = message.get("role")
    if role in _SYSTEM_ROLES:
        reader.skip("", _SYSTEM_REASON.format(role=role))
        return
    if role not in ("user", "assistant"):
        raise reader.fail(".role", "must be user or assistant (the Messages API's roles)")
    content = message.get("content")
    if isinstance(content, str):
        reader.say(role, content, ".content")
        return
    for number, block in enumerate(reader.blocks(content, ".content")):
        where = f".content[{number}]"
        block = reader.obj(block, where)
        kind = block.get("type")
        if kind == "text":
            reader.say(role, reader.text(block.get("text"), f"{where}.text"), where)
        elif kind == "tool_use":
            if role != "assistant":
                raise reader.fail(where, "is a tool_use block, which belongs to an assistant message")
            call_id = reader.text(block.get("id"), f"{where}.id")
            reader.call(call_id, block.get("name"), reader.obj(block.get("input", {}), f"{where}.input"), where)
        elif kind == "tool_result":
            if role != "user":
                raise reader.fail(where, "is a tool_result block, which belongs to a user message")
            call_id = reader.text(block.get("tool_use_id"), f"{where}.tool_use_id")
            inner = block.get("content")
            text = (reader.texts_of(inner, f"{where}.content") if isinstance(inner, list)
                    else reader.text(inner if inner is not None else "", f"{where}.content"))
            reader.result(call_id, text)
        elif isinstance(kind, str):
            reader.skip(where, f"{kind!r} blocks are not kept (the journal holds text and tool calls)")
        else:
            raise reader.fail(f"{where}.type", "must name the block's type")


def _bedrock(reader: _Reader, message: Mapping[str, Any]) -> None:
    role = message.get("role")
    if role in _SYSTEM_ROLES:
        reader.skip("", _SYSTEM_REASON.format(role=role))
        return
    if role not in ("user", "assistant"):
        raise reader.fail(".role", "must be user or assistant (Converse's roles)")
    for number, block in enumerate(reader.blocks(message.get("content"), ".content")):
        where = f".content[{number}]"
        block = reader.obj(block, where)
        if "text" in block:
            reader.say(role, reader.text(block["text"], f"{where}.text"), where)
        elif "toolUse" in block:
            if role != "assistant":
                raise reader.fail(where, "is a toolUse block, which belongs to an assistant message")
            use = reader.obj(block["toolUse"], f"{where}.toolUse")
            call_id = reader.text(use.get("toolUseId"), f"{where}.toolUse.toolUseId")
            arguments = reader.obj(use.get("input", {}), f"{where}.toolUse.input")
            reader.call(call_id, use.get("name"), arguments, f"{where}.toolUse")
        elif "toolResult" in block:
            if role != "user":
                raise reader.fail(where, "is a toolResult block, which belongs to a user message")
            answer = reader.obj(block["toolResult"], f"{where}.toolResult")
            call_id = reader.text(answer.get("toolUseId"), f"{where}.toolResult.toolUseId")
            parts = reader.blocks(answer.get("content", []), f"{where}.toolResult.content")
            found = [reader.obj(p, f"{where}.toolResult.content[{n}]") for n, p in enumerate(parts)]
            values = [part["json"] for part in found if "json" in part]
            text = reader.texts_of([p for p in found if "json" not in p], f"{where}.toolResult.content", "key")
            result = values[0] if len(values) == 1 else (values or None)
            reader.result(call_id, text, result)
        else:
            reader.skip(where, f"{_first_key(block)!r} blocks are not kept (the journal holds text and tool calls)")


_READERS: dict[str, Callable[[_Reader, Mapping[str, Any]], None]] = {
    "openai": _openai, "anthropic": _anthropic, "bedrock": _bedrock,
}


# --- the entry points ----------------------------------------------------------------------------


def _client_ids(reader: _Reader, message: Mapping[str, Any]) -> list[MessageDraft]:
    client_id = message.get("client_id")
    if client_id is None:
        return reader.rows
    if not isinstance(client_id, str) or not client_id:
        raise reader.fail(".client_id", "must be 1–128 characters")
    return [replace(row, client_id=client_id if n == 0 else f"{client_id}.{n}") for n, row in enumerate(reader.rows)]


def parse_messages(
    messages: Sequence[Any], fmt: ModelFormat, *, where: Callable[[int], str] = _name,
) -> Parsed:
    """The journal rows of ``messages`` in ``fmt``'s shape, checked as an append checks them (a 400 names the
    message as ``where(i)``, ``messages[i]`` by default), and what was skipped."""
    parsed = Parsed()
    calls: dict[str, str] = {}
    seen: set[str] = set()
    for index, message in enumerate(messages):
        reader = _Reader(where(index), index, calls)
        if not isinstance(message, Mapping):
            raise InvalidError(f"{reader.where} must be an object (a {fmt} message)", field=reader.where)
        _READERS[fmt](reader, message)
        for row in _client_ids(reader, message):
            check_message(row, index, where=reader.where)
            if row.client_id is not None:
                if row.client_id in seen:
                    raise reader.fail(".client_id", f"{row.client_id!r} is given twice")
                seen.add(row.client_id)
            parsed.rows.append(row)
            parsed.sources.append(index)
        parsed.skipped.extend(reader.skipped)
    return parsed


def draft_from_json(data: Any, where: str) -> MessageDraft:
    """One row of agentmem's own shape (``{"role", "content", "tool_name", ...}``), checked as an append checks it."""
    if not isinstance(data, Mapping):
        raise InvalidError(f"{where} must be a message object", field=where)
    unknown = sorted(str(key) for key in data if key not in _DRAFT_FIELDS)
    if unknown:
        raise InvalidError(f"{where}: unknown field {unknown[0]!r}", field=f"{where}.{unknown[0]}")
    if "role" not in data:
        raise InvalidError(f"{where}.role is required", field=f"{where}.role")
    arguments = data.get("arguments")
    if arguments is not None and not isinstance(arguments, Mapping):
        raise InvalidError(f"{where}.arguments must be a JSON object", field=f"{where}.arguments")
    content = data.get("content", "")
    draft = MessageDraft(
        role=data["role"], content=content, tool_name=data.get("tool_name"), tool_call_id=data.get("tool_call_id"),
        arguments=dict(arguments) if arguments is not None else None, result=data.get("result"),
        client_id=data.get("client_id"),
        created_at=None if data.get("created_at") is None else check_created_at(
            data["created_at"], utcnow(), f"{where}.created_at"),
    )
    return check_message(draft, 0, where=where)
