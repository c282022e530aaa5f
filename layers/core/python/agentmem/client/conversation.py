"""``Conversation``: one thread between an agent and a user (or the account), and its memory.

    support = Agent.from_name("support", create_if_missing=True)
    chat = support.conversation("ticket-7", user="user_42")
    chat.append(Message.user("Hi, I'm Ana."), Message.assistant("Hello Ana!"))
    for message in chat.messages():               # the journal, whole and in order
        print(message.seq, message.role, message.content)
    context = chat.context()                      # what the model sees next turn
    reply = my_model(context.messages)

Building a handle sends nothing. Every message is stored durably before ``append`` returns; each
gets a ``client_id`` when it has none, and an append that got no answer (the service unreachable,
a 5xx, a 429) is sent again with the same ids, so it is stored once (SPEC §4.1).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from .errors import AgentmemError, NotFound
from .models import (
    AppendResult,
    Checkpoint,
    Context,
    ConversationInfo,
    ConversationReceipt,
    Found,
    ImportReport,
    Message,
    MessageHit,
    Page,
    Skipped,
    ToolCall,
)
from .rules import Call, Op, RetryPolicy, items_of, json_op
from .transcripts import Source, Transcript, from_model_messages, read_transcript
from .transport import segment

if TYPE_CHECKING:
    from .agent import Agent, AgentRequests
    from .client import Client
    from .rules import ParamValue

MessageLike = Message | Mapping[str, Any]
APPEND_BATCH_MAX = 40  # messages the service takes in one append (one transaction)
READ_PAGE_MAX = 1000  # messages the service returns in one page


def new_client_id() -> str:
    """A fresh ``client_id`` for a message (random, 32 hex digits)."""
    return uuid.uuid4().hex


def message_body(message: MessageLike) -> dict[str, Any]:
    """The JSON of one message for an append, with a ``client_id`` when it had none."""
    if isinstance(message, Message):
        body = message.to_dict()
    elif isinstance(message, Mapping):
        body = dict(message)
    else:
        raise TypeError(f"a message is a Message or a dict, not {type(message).__name__}")
    if body.get("client_id") is None:
        body["client_id"] = new_client_id()
    return body


def _flatten(messages: Sequence[MessageLike | Sequence[MessageLike]]) -> list[MessageLike]:
    flat: list[MessageLike] = []
    for item in messages:
        if isinstance(item, (Message, Mapping)):
            flat.append(item)
        elif isinstance(item, (list, tuple)):
            flat.extend(item)
        else:
            raise TypeError(f"append takes messages or a list of them, not {type(item).__name__}")
    return flat


def append_bodies(
    messages: Sequence[MessageLike | Sequence[MessageLike]], surface: str | None, window_messages: int | None,
    format: str | None,
) -> tuple[list[dict[str, Any]], list[Skipped]]:
    """The bodies of an append's requests (40 messages each, in order; one empty one for no message at all, to
    let the service say what is wrong), and what a model format's messages left out."""
    flat = _flatten(messages)
    skipped: list[Skipped] = []
    if format is not None:
        rows, reasons = from_model_messages(list(flat), format)
        skipped = [Skipped(index, reason) for index, reason in reasons]
        flat = list(rows)
    bodies = [message_body(message) for message in flat]
    extra: dict[str, Any] = {}
    if surface is not None:
        extra["surface"] = surface
    if window_messages is not None:
        extra["window_messages"] = window_messages
    batches = [bodies[start : start + APPEND_BATCH_MAX] for start in range(0, len(bodies), APPEND_BATCH_MAX)]
    return [{"messages": batch, **extra} for batch in batches or [[]]], skipped


def appended(results: Sequence[AppendResult], skipped: list[Skipped]) -> AppendResult:
    """One append's result from its requests' results."""
    stored = [message for result in results for message in result.messages]
    return AppendResult(stored, sum(result.added for result in results), results[-1].conversation, skipped)


class ConversationRequests:
    """What a conversation handle asks and what the answers mean, for ``Conversation`` and
    ``AsyncConversation`` alike (each ``*_op`` one request and its parser)."""

    agent: AgentRequests
    key: str
    user: str | None
    append_attempts: ClassVar[int] = 3  # an append that got no answer is tried this many times in all
    retry_backoff_s: ClassVar[float] = 0.2  # the wait before the second try; doubled before each next one
    retry_wait_max_s: ClassVar[float] = 5.0  # the longest wait, whatever a 429's Retry-After asks

    def _retry_policy(self) -> RetryPolicy:
        return RetryPolicy(self.append_attempts, self.retry_backoff_s, self.retry_wait_max_s)

    def _append_op(self, body: dict[str, Any]) -> Op[AppendResult]:
        return json_op(Call("POST", self._path("messages"), self._scope(), body), AppendResult.from_dict)

    def _messages_page_op(self, after: int | None, limit: int | None) -> Op[Page[Message]]:
        params: dict[str, ParamValue] = {**self._scope(), "after": after, "limit": limit}

        def parse(data: dict[str, Any]) -> Page[Message]:
            cursor = data.get("next_cursor")
            return Page(items_of(data, Message.from_dict), str(cursor) if cursor is not None else None)

        return json_op(Call("GET", self._path("messages"), params), parse)

    def _context_op(self, surface: str | None, format: str | None) -> Op[Context]:
        params: dict[str, ParamValue] = {**self._scope(), "surface": surface, "format": format}
        return json_op(Call("GET", self._path("context"), params), Context.from_dict)

    def _info_op(self) -> Op[ConversationInfo]:
        return json_op(Call("GET", self._path(), self._scope()), ConversationInfo.from_dict)

    def _delete_op(self, purge: bool) -> Op[ConversationReceipt]:
        params: dict[str, ParamValue] = {**self._scope(), "purge": True if purge else None}
        return json_op(Call("DELETE", self._path(), params), ConversationReceipt.from_dict)

    # --- helpers --------------------------------------------------------------------------

    def _path(self, *rest: str) -> str:
        return self.agent._path("conversations", segment(self.key), *rest)

    def _scope(self) -> dict[str, ParamValue]:
        return {"user": self.user}


class Conversation(ConversationRequests):
    """A handle on the conversation ``key`` of ``agent`` with ``user`` (``None``: the account itself).

    Make one with ``agent.conversation(key, user=...)``.
    """

    agent: Agent

    def __init__(self, agent: Agent, key: str, *, user: str | None = None) -> None:
        self.agent = agent
        self.key = key
        self.user = user

    def __repr__(self) -> str:
        scope = f", user={self.user!r}" if self.user is not None else ""
        return f"Conversation({self.agent.name!r}, {self.key!r}{scope})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Conversation) and (other.agent, other.key, other.user) == (
            self.agent, self.key, self.user)

    def __hash__(self) -> int:
        return hash(("conversation", self.agent, self.key, self.user))

    @property
    def client(self) -> Client:
        return self.agent.client

    # --- the journal ----------------------------------------------------------------------

    def append(
        self, *messages: MessageLike | Sequence[MessageLike], surface: str | None = None,
        window_messages: int | None = None, format: str | None = None,
    ) -> AppendResult:
        """Append messages, in order: ``append(m1, m2)`` or ``append([m1, m2])``; each a ``Message``
        or a dict with the API's fields (``role``, ``content``, ``tool_name``, ``tool_call_id``,
        ``arguments``, ``result``, ``client_id``).

        With ``format="openai"`` (or ``"anthropic"``, ``"bedrock"``) the dicts are messages in that
        model API's own shape, as a loop sent them or got them back: each becomes its journal rows
        here (``Message.from_openai`` and the like), and what the journal does not keep (a system
        message, an image) is left out, listed in the result's ``skipped``.

        Stored durably when it returns, each with its ``seq``. A message whose ``client_id`` is
        already stored is not stored again: the result gives back the stored one (``added`` counts
        the new ones; after a retry whose first try did land, it can say 0). More than 40 messages
        go 40 at a time, in order. ``surface`` says where the conversation happens (default
        ``agent``); ``window_messages`` lowers this conversation's recent window (1–20).
        """
        bodies, skipped = append_bodies(messages, surface, window_messages, format)
        return appended([self._append_once(body) for body in bodies], skipped)

    def import_messages(
        self, source: Source, *, format: str = "jsonl", surface: str | None = None,
        on_progress: Callable[[int], None] | None = None,
    ) -> ImportReport:
        """Bring a whole transcript into the journal: a path, an open text file, or a list of messages.

        ``format`` is ``jsonl`` (agentmem's rows, one per line) or ``openai``, ``anthropic``, ``bedrock``
        (that API's messages: JSON Lines, a list, or a request body holding ``messages``). The transcript is
        read and checked whole before anything is sent (``Invalid`` names the bad line), then sent 40 rows
        at a time, each row with its ``client_id`` (its own, or one derived from its place and content):
        importing it again adds nothing, and a transcript that grew adds only what is new. ``on_progress``
        is called with the number of rows each append sent.
        """
        return self.import_transcript(read_transcript(source, format), surface=surface, on_progress=on_progress)

    def import_transcript(
        self, transcript: Transcript, *, surface: str | None = None, on_progress: Callable[[int], None] | None = None,
    ) -> ImportReport:
        """Send a transcript already read (``agentmem.client.transcripts.read_transcript``)."""
        extra: dict[str, Any] = {"surface": surface} if surface is not None else {}
        added = 0
        seqs: list[int] = []
        rows = transcript.rows
        for start in range(0, len(rows), APPEND_BATCH_MAX):
            batch = rows[start : start + APPEND_BATCH_MAX]
            result = self._append_once({"messages": [message_body(row) for row in batch], **extra})
            added += result.added
            seqs += result.seqs
            if on_progress is not None:
                on_progress(len(batch))
        return ImportReport(transcript.messages, len(rows), added, len(rows) - added, list(transcript.skipped),
                            min(seqs, default=None), max(seqs, default=None))

    def _append_once(self, body: dict[str, Any]) -> AppendResult:
        """One append request, sent again (same body, same client ids) while it gets no answer."""
        policy = self._retry_policy()
        attempt = 1
        while True:
            try:
                return self.client.run(self._append_op(body))
            except AgentmemError as error:
                wait = policy.wait_before_retry(attempt, error)
                if wait is None:
                    raise
                time.sleep(wait)
                attempt += 1

    def messages_page(self, *, after: int | None = None, limit: int | None = None) -> Page[Message]:
        """One page of the journal: the messages after seq ``after`` (at most ``limit``, up to 1,000;
        default 100). ``next_cursor`` is the ``after`` of the next page, ``None`` on the last."""
        return self.client.run(self._messages_page_op(after, limit))

    def iter_messages(self, *, after: int | None = None, limit: int | None = None) -> Iterator[Message]:
        """The journal's messages after seq ``after`` (at most ``limit``), page by page as needed."""
        if limit is not None and limit <= 0:
            return
        yielded = 0
        cursor = after
        while True:
            size = READ_PAGE_MAX if limit is None else min(READ_PAGE_MAX, limit - yielded)
            page = self.messages_page(after=cursor, limit=size)
            for message in page:
                yield message
                yielded += 1
            if page.next_cursor is None or not page.items or (limit is not None and yielded >= limit):
                return
            cursor = int(page.next_cursor)

    def messages(self, *, after: int | None = None, limit: int | None = None) -> list[Message]:
        """Every message of the journal, whole and in order (those after seq ``after``; at most ``limit``):
        whatever the summary folded or the window left out, the journal keeps."""
        return [*self.iter_messages(after=after, limit=limit)]

    # --- what the model sees --------------------------------------------------------------

    def context(self, surface: str | None = None, *, format: str | None = None) -> Context:
        """The context for the next turn: pinned block, memory index, summary and recent window, and
        ``messages``, all of it in order. Building it reads; it never writes.

        ``format="bedrock"`` (or ``"anthropic"``, ``"openai"``) gives ``messages`` (and ``system``) in that
        model API's own shape, to send as they are: ``converse(system=context.system, messages=context.messages)``."""
        return self.client.run(self._context_op(surface, format))

    def tool_call(self, tool_call_id: str, *, surface: str | None = None) -> ToolCall:
        """The full arguments and result of an earlier tool call, by its id (``NotFound`` if none)."""
        params: dict[str, ParamValue] = {**self._scope(), "surface": surface}
        path = self._path("tool-calls", segment(tool_call_id))
        return ToolCall.from_dict(self.client.request_json("GET", path, params=params))

    def search(
        self, query: str, *, limit: int | None = None, surface: str | None = None, mode: str | None = None,
        after: str | datetime | None = None, before: str | datetime | None = None,
    ) -> Found[MessageHit]:
        """This conversation's messages that say what ``query`` asks, best first (journal search); ``after`` /
        ``before`` bound when they were written. A list, which also says how it was found (``Found``)."""
        return self.agent.search_messages(query, user=self.user, conversation=self.key, limit=limit,
                                          surface=surface, mode=mode, after=after, before=before)

    # --- the summary ----------------------------------------------------------------------

    def checkpoint(self) -> Checkpoint | None:
        """The conversation's checkpoint (its rolling summary, with ``covers_through_seq``), or
        ``None`` while it has none (no pass has run yet, or it was deleted). ``NotFound`` when the
        conversation does not exist."""
        try:
            data = self.client.request_json("GET", self._path("checkpoint"), params=self._scope())
        except NotFound:
            self.messages_page(limit=1)  # raises NotFound when the conversation itself does not exist
            return None
        return Checkpoint.from_dict(data)

    def compact(self) -> str:
        """Start a summary pass now; it runs in the background. Returns its job id."""
        data = self.client.request_json("POST", self._path("compact"), params=self._scope())
        return str(data.get("job_id", ""))

    # --- the conversation itself ----------------------------------------------------------

    def info(self) -> ConversationInfo:
        """The conversation's record: its length, what the summary covers, its window. ``NotFound``
        when it does not exist or was deleted."""
        return self.client.run(self._info_op())

    def delete(self, *, purge: bool = False) -> ConversationReceipt:
        """Delete the conversation: its record goes, its journal and checkpoint stay. With ``purge=True``
        the journal, checkpoint, workspace and index documents go too, for good."""
        return self.client.run(self._delete_op(purge))
