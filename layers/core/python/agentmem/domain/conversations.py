"""Conversations and their journal: the records and the message rules of SPEC §4.1. Pure."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, get_args

from .clock import TimeRange, iso, parse_iso
from .errors import InvalidError
from .models import Layer
from .rules import check_user_id

Role = Literal["user", "assistant", "tool_call", "tool_result"]
ROLES: tuple[str, ...] = get_args(Role)
# A message is one DynamoDB item (400 KB): its content and its arguments or result stay well inside it
MESSAGE_CONTENT_MAX = 50_000  # characters of one message's content
MESSAGE_JSON_MAX = 50_000  # characters of a tool call's arguments or a tool result, as JSON
APPEND_BATCH_MAX = 40  # messages in one append: one transaction of its rows and their client ids
TOOL_NAME_MAX = 128
TOOL_CALL_ID_MAX = 128
CLIENT_ID_MAX = 128
# A message's original time (``created_at``): not in the future beyond a client's clock skew, and not before
# EARLIEST_TIME (a year mistyped as 0202 is refused, not stored as the year 202)
CLOCK_SKEW = timedelta(minutes=5)
EARLIEST_TIME = datetime(1900, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class ConversationRef:
    """One conversation: an agent talking with a user (``user_id``) or with the account itself (None)."""

    account_id: str
    agent: str
    user_id: str | None
    key: str

    @property
    def checkpoint_name(self) -> str:
        """``context.<hash of the key>``: the conversation's checkpoint entry (SPEC §4.4)."""
        return checkpoint_name(self.key)

    def checkpoint_layer(self, own_memory: str) -> Layer:
        """Where the checkpoint lives: the layer of the conversation's user (the account's, without one) in the
        agent's own memory ``own_memory``."""
        return Layer(self.account_id, own_memory, self.user_id)

    @property
    def job_name(self) -> str:
        """What names its summary passes (one at a time per conversation)."""
        return f"{self.account_id}.{self.agent}.{self.user_id or '-'}.{self.key}"


def checkpoint_name(key: str) -> str:
    return "context." + hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class MessageDraft:
    """A message as appended, before the store numbers it. ``tokens`` is counted by the service."""

    role: Role
    content: str
    tool_name: str | None = None
    tool_call_id: str | None = None
    arguments: dict[str, Any] | None = None
    result: Any = None
    client_id: str | None = None
    tokens: int = 0
    created_at: str | None = None  # its original time, as ``iso`` writes it (None: the time it is appended)


@dataclass(frozen=True)
class Message:
    """One row of the journal. ``turn`` counts user messages: a user message opens a new turn."""

    seq: int
    turn: int
    role: Role
    content: str
    created_at: str
    tool_name: str | None = None
    tool_call_id: str | None = None
    arguments: dict[str, Any] | None = None
    result: Any = None
    client_id: str | None = None
    tokens: int = 0


@dataclass(frozen=True)
class ConversationRecord:
    """The conversation's state beside its journal.

    ``last_seq`` is the seq of its newest message (0: none yet). Messages up to ``folded_through`` are
    in the summary; ``unfolded_tokens`` / ``unfolded_messages`` count the ones after it (the threshold
    of SPEC §4.3). ``forgotten_through``: a deleted checkpoint took the messages up to here with it, and
    no pass summarises them again. ``surface`` is the one its latest append named.

    What the passes wrote (SPEC §4.4): ``passes`` counts the summary passes that wrote the checkpoint,
    ``checkpoint_version`` is the version the latest one wrote, and ``lines_by_hand`` marks the lines of it a
    person wrote, which every pass carries (``domain.checkpoint_edits.ByHand.mark``: the line's id and when it
    was written). All three start again when the checkpoint is deleted.
    """

    ref: ConversationRef
    created_at: str
    updated_at: str
    last_seq: int = 0
    last_turn: int = 0
    folded_through: int = 0
    forgotten_through: int = 0
    unfolded_tokens: int = 0
    unfolded_messages: int = 0
    window_messages: int | None = None
    surface: str = "agent"
    due_since: str | None = None  # over its summary threshold since then (None: under it)
    deleted_at: str | None = None
    passes: int = 0
    checkpoint_version: int = 0
    lines_by_hand: tuple[str, ...] = ()

    def pass_discriminator(self, mark: int, again: str = "") -> str:
        """What tells this conversation's summary passes apart, beside its ``ref.job_name``: the mark a pass folds
        from (and why it runs again), and when this record was made. A conversation purged (or erased) and
        started again under the same key is a new record, whose passes fold from 0 again: without its moment
        they would be named as the first record's, and the finished run of that name answered for them."""
        born = "".join(character for character in self.created_at if character.isdigit())
        return f"{mark}{again}@{born}"


@dataclass(frozen=True)
class CheckpointWritten:
    """What a summary pass wrote, for ``ConversationStore.mark_folded`` to keep on the record: the
    checkpoint's new ``version`` and the marks of the lines in it a person wrote."""

    version: int
    lines_by_hand: tuple[str, ...] = ()


@dataclass(frozen=True)
class AppendResult:
    record: ConversationRecord
    messages: list[Message]  # one per draft, in order; a retried client_id gives back the stored message
    added: int  # how many were new


def check_conversation_key(key: str) -> str:
    return check_user_id(key, field="conversation")


def _check_short(value: Any, field: str, limit: int) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value or len(value) > limit:
        raise InvalidError(f"{field} must be 1–{limit} characters", field=field)
    _check_unicode(value, field)
    return value


def _check_unicode(text: str, field: str) -> None:
    """JSON may carry lone surrogates (``"\\ud800"``), which no store can hold."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidError(f"{field} is not valid Unicode text (it holds a lone surrogate)", field=field) from None


def _json_size(value: Any, field: str) -> int:
    """The characters of a tool row's ``arguments`` or ``result`` as JSON; refused when it is not JSON a
    store can hold: NaN or Infinity (no JSON number), or a lone surrogate in a string or a key."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except ValueError:
        raise InvalidError(f"{field} holds NaN or Infinity, which are not JSON numbers", field=field) from None
    _check_unicode(text, field)
    return len(text)


def check_message(draft: MessageDraft, index: int, *, where: str | None = None) -> MessageDraft:
    """The rules of one message (SPEC §4.1), with ``field`` naming it as ``messages[i].<field>`` (or as
    ``<where>.<field>``: a message read from a transcript's line, or from a model API's content block)."""
    where = where or f"messages[{index}]"
    if draft.role not in ROLES:
        raise InvalidError(f"{where}.role must be one of {', '.join(ROLES)}", field=f"{where}.role")
    if not isinstance(draft.content, str):
        raise InvalidError(f"{where}.content must be text", field=f"{where}.content")
    if len(draft.content) > MESSAGE_CONTENT_MAX:
        raise InvalidError(
            f"{where}.content is {len(draft.content):,} characters; at most {MESSAGE_CONTENT_MAX:,} are allowed",
            field=f"{where}.content",
        )
    _check_unicode(draft.content, f"{where}.content")
    _check_short(draft.tool_name, f"{where}.tool_name", TOOL_NAME_MAX)
    _check_short(draft.tool_call_id, f"{where}.tool_call_id", TOOL_CALL_ID_MAX)
    _check_short(draft.client_id, f"{where}.client_id", CLIENT_ID_MAX)
    if draft.role in ("tool_call", "tool_result"):
        if draft.tool_call_id is None:
            raise InvalidError(f"{where}: a {draft.role} needs its tool_call_id", field=f"{where}.tool_call_id")
    elif draft.tool_call_id is not None or draft.arguments is not None or draft.result is not None:
        raise InvalidError(
            f"{where}: tool_call_id, arguments and result belong to tool_call and tool_result rows",
            field=f"{where}.role",
        )
    if draft.role == "tool_call" and draft.tool_name is None:
        raise InvalidError(f"{where}: a tool_call needs its tool_name", field=f"{where}.tool_name")
    if draft.role != "tool_call" and draft.arguments is not None:
        raise InvalidError(f"{where}: only a tool_call carries arguments", field=f"{where}.arguments")
    if draft.role != "tool_result" and draft.result is not None:
        raise InvalidError(f"{where}: only a tool_result carries a result", field=f"{where}.result")
    for name, value in (("arguments", draft.arguments), ("result", draft.result)):
        if value is not None and _json_size(value, f"{where}.{name}") > MESSAGE_JSON_MAX:
            raise InvalidError(f"{where}.{name} is over {MESSAGE_JSON_MAX:,} characters as JSON",
                               field=f"{where}.{name}")
    if draft.role in ("user", "assistant") and not draft.content:
        raise InvalidError(f"{where}.content must not be empty", field=f"{where}.content")
    return draft


def parse_time(value: Any, field: str) -> datetime:
    """An ISO 8601 date-time (``2026-03-01T09:30:00Z``; without an offset it is UTC; a date alone is its
    midnight, UTC) from EARLIEST_TIME on; a 400 naming ``field`` otherwise."""
    if not isinstance(value, str) or not value.strip() or len(value) > 64:
        raise InvalidError(f"{field} must be an ISO 8601 date-time such as 2026-03-01T09:30:00Z", field=field)
    try:
        moment = parse_iso(value.strip())
    except (ValueError, OverflowError):
        raise InvalidError(f"{field} is not an ISO 8601 date-time ({value[:40]!r}); "
                           "write it as 2026-03-01T09:30:00Z", field=field) from None
    if moment < EARLIEST_TIME:
        raise InvalidError(f"{field} is before {EARLIEST_TIME.year}: no message is that old", field=field)
    return moment


def check_created_at(value: Any, now: datetime, field: str) -> str:
    """A message's original time as stored (``iso``: UTC, microseconds, sortable as text): ISO 8601, not
    later than ``now`` beyond CLOCK_SKEW."""
    moment = parse_time(value, field)
    if moment > now + CLOCK_SKEW:
        raise InvalidError(f"{field} ({value}) is in the future; a message keeps the time it was written",
                           field=field)
    return iso(min(moment, now))


def with_times(drafts: list[MessageDraft], now: datetime) -> list[MessageDraft]:
    """The drafts with their ``created_at`` checked and written as stored. Messages of one append need not be
    in time order: each keeps its own time, and seq keeps the order they were appended in."""
    return [d if d.created_at is None else replace(d, created_at=check_created_at(
        d.created_at, now, f"messages[{i}].created_at")) for i, d in enumerate(drafts)]


def check_time_range(after: Any, before: Any) -> TimeRange | None:
    """``after=`` / ``before=`` of a journal search (None when neither is given); ``after`` later than
    ``before`` is a 400 naming both."""
    if after is None and before is None:
        return None
    start = parse_time(after, "after") if after is not None else None
    end = parse_time(before, "before") if before is not None else None
    if start is not None and end is not None and start > end:
        raise InvalidError(f"after ({after}) is later than before ({before}): no message is between them",
                           field="after")
    return TimeRange(iso(start) if start else None, iso(end) if end else None)


def check_batch(drafts: list[MessageDraft]) -> list[MessageDraft]:
    if not drafts:
        raise InvalidError("messages must hold at least one message", field="messages")
    if len(drafts) > APPEND_BATCH_MAX:
        raise InvalidError(f"at most {APPEND_BATCH_MAX} messages per append; {len(drafts)} were sent",
                           field="messages")
    seen: set[str] = set()
    for index, draft in enumerate(drafts):
        check_message(draft, index)
        if draft.client_id is not None:
            if draft.client_id in seen:
                raise InvalidError(f"client_id {draft.client_id!r} appears twice in one append",
                                   field=f"messages[{index}].client_id")
            seen.add(draft.client_id)
    return drafts
