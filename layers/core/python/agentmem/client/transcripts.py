"""Messages in a model API's own shape as the SDK's ``Message`` rows, and transcripts read for an import.

    chat.append(Message.from_openai(response.choices[0].message.model_dump()))
    chat.append(sent_messages, format="anthropic")
    report = chat.import_messages("transcript.jsonl")               # agentmem's rows, one per line
    report = chat.import_messages("export.json", format="openai")   # {"messages": [...]} or a list, or JSONL

The reading is the service's own (``agentmem.domain.model_messages``), done here before anything is sent: a
bad message is an ``Invalid`` naming its line (or its place in the list), and nothing is stored.

A transcript is JSON Lines (one message a line, blank lines ignored), or one JSON document: a list of
messages or an object holding them under ``messages`` (a request body as it was sent; its ``system`` is
skipped, as system messages are). Every row gets a ``client_id``: its own, or one derived from the
message's place among the transcript's messages and its content, so importing the same transcript again
stores nothing twice, and importing a longer one adds only what is new. A row of agentmem's own shape may
carry ``created_at`` (ISO 8601, not in the future): the message keeps that time, so imported history keeps its
dates (a model API's shape has no time: its rows get the time of the import).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal, get_args

from .errors import Invalid
from .models import Message

TranscriptFormat = Literal["jsonl", "openai", "anthropic", "bedrock"]
TRANSCRIPT_FORMATS: tuple[str, ...] = get_args(TranscriptFormat)
ModelFormat = Literal["openai", "anthropic", "bedrock"]
Source = str | os.PathLike[str] | IO[str] | Sequence[Mapping[str, Any] | Message]


@dataclass(frozen=True)
class Transcript:
    """A transcript read and checked: its rows with their client ids, how many messages it held, and
    what it holds that the journal does not keep (each reason names its line or place)."""

    rows: list[Message] = field(default_factory=list)
    messages: int = 0
    skipped: list[str] = field(default_factory=list)


def _invalid(error: Any) -> Invalid:
    """The service's own 400 (``domain.errors.InvalidError``), raised here before anything is sent."""
    return Invalid(error.message, 400, "invalid", dict(error.details))


def _message(draft: Any) -> Message:
    return Message(draft.role, draft.content, tool_name=draft.tool_name, tool_call_id=draft.tool_call_id,
                   arguments=draft.arguments, result=draft.result, client_id=draft.client_id,
                   created_at=draft.created_at)


def from_model(message: Mapping[str, Any], fmt: ModelFormat) -> list[Message]:
    """The rows of one message of ``fmt`` (none for what the journal does not keep, like a system message)."""
    return from_model_messages([message], fmt)[0]


def from_model_messages(
    messages: Sequence[Any], fmt: str, where: Callable[[int], str] | None = None
) -> tuple[list[Message], list[tuple[int, str]]]:
    """The rows of ``messages`` in ``fmt``'s shape, and what was skipped: the index of its message and the
    reason (which names it)."""
    from ..domain.errors import InvalidError
    from ..domain.model_formats import check_model_format
    from ..domain.model_messages import parse_messages

    try:
        checked = check_model_format(fmt)
        if checked is None:
            raise InvalidError("format names the shape of these messages: bedrock, anthropic or openai",
                               field="format")
        parsed = parse_messages(messages, checked, **({"where": where} if where else {}))
    except InvalidError as error:
        raise _invalid(error) from None
    return [_message(draft) for draft in parsed.rows], [(item.index, item.reason) for item in parsed.skipped]


# --- reading a transcript -------------------------------------------------------------------------


def _text_of(source: str | os.PathLike[str] | IO[str]) -> str:
    if isinstance(source, (str, os.PathLike)):
        try:
            return Path(source).read_text(encoding="utf-8")
        except UnicodeDecodeError as error:
            raise Invalid(f"{source} is not UTF-8 text (byte {error.start})", 400, "invalid") from None
    return source.read()


def _items(text: str) -> Iterator[tuple[str, Any]]:
    """Each message with where it is: ``line N`` of JSON Lines, or ``messages[i]`` of one JSON document."""
    if text.lstrip()[:1] in ("[", "{"):
        try:
            document = json.loads(text)
        except ValueError:
            document = None
        if isinstance(document, Mapping) and isinstance(document.get("messages"), list):
            if document.get("system"):
                yield "system", None
            document = document["messages"]
        if isinstance(document, list):
            yield from ((f"messages[{index}]", item) for index, item in enumerate(document))
            return
    for number, line in enumerate(io.StringIO(text), start=1):
        if not line.strip():
            continue
        try:
            yield f"line {number}", json.loads(line)
        except ValueError as error:
            raise Invalid(f"line {number} is not JSON: {error}", 400, "invalid",
                          {"field": f"line {number}", "line": number}) from None


def _named(where: str) -> Callable[[int], str]:
    return lambda _index: where


def _derived_id(ordinal: int, row: int, message: Any) -> str:
    """A message's place among the transcript's messages and its content: the same on every import."""
    content = json.dumps(message, sort_keys=True, ensure_ascii=False, default=str)
    digest = hashlib.sha256(f"{ordinal}\x00{row}\x00{content}".encode()).hexdigest()
    return f"import:{digest[:40]}"


def read_transcript(source: Source, fmt: str = "jsonl") -> Transcript:
    """Read and check a whole transcript (a path, an open text file, or a list of messages) before anything
    is sent. ``Invalid`` names the first bad line (or place) and what is wrong with it."""
    from dataclasses import replace

    from ..domain.errors import InvalidError
    from ..domain.model_messages import draft_from_json

    if fmt not in TRANSCRIPT_FORMATS:
        raise Invalid(f"format must be one of {', '.join(TRANSCRIPT_FORMATS)}", 400, "invalid", {"field": "format"})
    if isinstance(source, (str, os.PathLike)) or hasattr(source, "read"):
        items = list(_items(_text_of(source)))  # type: ignore[arg-type]
    else:
        items = [(f"messages[{index}]", item.to_dict() if isinstance(item, Message) else item)
                 for index, item in enumerate(source)]
    rows: list[Message] = []
    skipped: list[str] = []
    seen: dict[str, str] = {}
    ordinal = -1
    for where, item in items:
        if where == "system":
            skipped.append("system: the request's system prompt is not kept in the journal: the context brings its "
                           "own system messages")
            continue
        ordinal += 1
        if fmt == "jsonl":
            try:
                found = [_message(draft_from_json(item, where))]
            except InvalidError as error:
                raise _invalid(error) from None
        else:
            found, reasons = from_model_messages([item], fmt, where=_named(where))
            skipped += [reason for _, reason in reasons]
        for number, row in enumerate(found):
            if row.client_id is None:
                row = replace(row, client_id=_derived_id(ordinal, number, item))
            assert row.client_id is not None
            if row.client_id in seen:
                raise Invalid(f"{where}: client_id {row.client_id!r} was already given at {seen[row.client_id]}",
                              400, "invalid", {"field": f"{where}.client_id"})
            seen[row.client_id] = where
            rows.append(row)
    return Transcript(rows, ordinal + 1, skipped)
