"""Conversations: the journal, the window and the context for a turn, journal search, the tool call
view, and what starts a summary pass (SPEC §4, §5)."""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from ..domain.addressing import called_names, capitalised
from ..domain.agents import AgentRecord, agent_of_memory, check_window_messages
from ..domain.asked_when import asks_when, toward_times
from ..domain.clock import Clock, TimeRange, iso, parse_iso, utcnow
from ..domain.context import (
    PINNED_MAX,
    IndexSection,
    Pinned,
    index_line,
    index_room,
    pinned_block,
    row_text,
    section_heading,
)
from ..domain.conversations import (
    APPEND_BATCH_MAX,
    AppendResult,
    ConversationRecord,
    ConversationRef,
    Message,
    MessageDraft,
    check_batch,
    check_conversation_key,
    check_time_range,
    with_times,
)
from ..domain.cursor import decode_cursor, encode_cursor
from ..domain.errors import ForbiddenError, InvalidError, NotFoundError, NotImplementedYetError, UnavailableError
from ..domain.feedback import lend_feedback
from ..domain.model_formats import check_model_format, render
from ..domain.model_messages import Skipped, parse_messages
from ..domain.models import Entry, Layer, MemoryRecord, Principal
from ..domain.passages import Passage, best_passage, long_passages, passages
from ..domain.recall import (
    ASPECT_CANDIDATES,
    CONVERSATION_SHARE,
    FUSED_NEIGHBOUR_SHARE,
    KEYWORD_CANDIDATES,
    MODES,
    NEIGHBOUR_SHARE,
    RERANK_CONVERSATION_SHARE,
    RERANK_FUSED_SHARE,
    SEMANTIC_CANDIDATES,
    Fallback,
    Mode,
    Signals,
    Stage,
    as_near_as,
    asks_for_latest,
    aspects,
    best_of,
    bm25_scale,
    check_min_score,
    check_mode,
    first_of_each,
    fuse,
    lend_neighbours,
    lend_ranked,
    neighbours_to_read,
    pool,
    toward_latest,
    without_common_words,
    without_words,
)
from ..domain.rules import check_limit
from ..domain.search import Query, check_query
from ..domain.summary_author import covered_through, summariser_of
from ..domain.surfaces import check_surface, surface_rules
from ..domain.text import folded, folded_head
from ..domain.timeline import asks_for_timeline, asks_in_first_person, timeline_topic, toward_own
from ..observability import logger
from ..ports.conversations import ConversationStore
from ..ports.jobs import Jobs
from .agent_memory import AgentMemory, CallContext
from .recall import PendingAnswer, Reranking, SemanticAnswer, answered

READ_LIMIT_DEFAULT = 100
READ_LIMIT_MAX = 1000
SEARCH_LIMIT_DEFAULT = 10
SEARCH_LIMIT_MAX = 100
SNIPPET_CHARS = 160
FIRST_INDEX_PAGE = 40  # entries of a layer the index reads first (about half of what 6,000 characters hold)
PART_TOKENS_KEPT = 512  # context parts whose token counts are kept (pinned blocks, indexes, summaries)
PASSES_SHOWN = 20  # the newest passes a checkpoint lists (with the count of all of them)
PASSES_READ = 60  # versions of its history read for them (edits between passes are versions too)
LAST_READS_KEPT = 4096  # (caller, agent, user)s whose last context build's reads are kept, to send them ahead


@dataclass(frozen=True)
class PassLog:
    """The passes that wrote a checkpoint: the newest ones (``version``, ``at``, ``by``, ``summariser``), newest
    first, and how many there have been since it was made (``total``)."""

    items: list[dict[str, Any]]
    total: int


@dataclass(frozen=True)
class ContextReads:
    """What one context build read: the next build for the same caller, agent and user (of any conversation)
    sends the same reads at once beside the agent's record (``ConversationService._read_ahead``); the first build
    for another user of the agent sends them as ``for_user`` guesses that user's."""

    account_id: str
    agent: str
    user_id: str | None  # the user the conversations are with (a user's agent: its user)
    own_memory: str
    memories: tuple[str, ...]
    layers: tuple[Layer, ...]
    pinned: tuple[tuple[Layer, str], ...]
    tail_count: int

    def for_user(self, user_id: str | None) -> ContextReads:
        """These reads as another user's build of the same agent would make them: that user's layers of the same
        memories in place of this user's (none without a user: the account's conversations), this user's pinned
        entries left out. Nothing of one user's is read for another."""
        if user_id == self.user_id:
            return self
        layers = tuple(layer if layer.user_id is None else replace(layer, user_id=user_id)
                       for layer in self.layers if layer.user_id is None or user_id is not None)
        return replace(self, user_id=user_id, layers=layers,
                       pinned=tuple(pin for pin in self.pinned if pin[0].user_id is None))


class LastReads:
    """The ``ContextReads`` of the callers, agents and users this process built contexts for lately, the oldest
    forgotten first (a hint, never an answer: what it names is read again)."""

    def __init__(self, size: int = LAST_READS_KEPT) -> None:
        self.size = size
        self._kept: OrderedDict[tuple[Any, ...], ContextReads] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...]) -> ContextReads | None:
        with self._lock:
            return self._kept.get(key)

    def keep(self, key: tuple[Any, ...], reads: ContextReads) -> None:
        with self._lock:
            self._kept[key] = reads
            self._kept.move_to_end(key)
            while len(self._kept) > self.size:
                self._kept.popitem(last=False)


@dataclass(frozen=True)
class JournalPage:
    items: list[JournalHit]
    next_cursor: str | None
    mode: Mode = "keyword"
    fallback: Fallback | None = None
    index_lag: int | None = None  # journal messages of the search's scope not yet in the semantic index
    stages: tuple[Stage, ...] = ("keyword",)  # what ran, in order


@dataclass(frozen=True)
class JournalHit:
    conversation: str
    seq: int
    role: str
    snippet: str
    score: float
    created_at: str
    # where the snippet's text is in the message's (``message_text``: its content, and a tool row's name and
    # JSON), as character offsets: ``text[snippet_start:snippet_end]`` is the snippet without its "…" marks and
    # with its line breaks (the snippet shows each as a space). A long message's snippet is the passage that
    # matched (domain/passages.py), a short one's about SNIPPET_CHARS characters around the first word found.
    snippet_start: int = 0
    snippet_end: int = 0


def message_text(draft: MessageDraft | Message) -> str:
    """What a message says, for counting tokens and for search: its content, and a tool row's JSON."""
    return row_text(draft)


def snippet(text: str, words: Sequence[str]) -> str:
    """About SNIPPET_CHARS characters of ``text`` around the first query word it holds."""
    return snippet_at(text, words)[0]


def snippet_at(text: str, words: Sequence[str], passage: Passage | None = None) -> tuple[str, int, int]:
    """The snippet of ``text`` and where it is in it: the ``passage`` when given (a long message's that matched),
    else about SNIPPET_CHARS characters around the first query word it holds."""
    if passage is not None:
        start, end = passage.start, passage.end
    else:
        low = text.lower()
        positions = [p for p in (low.find(w) for w in words) if p >= 0]
        start = max(0, min(positions) - SNIPPET_CHARS // 4) if positions else 0
        end = min(start + SNIPPET_CHARS, len(text))
    piece = text[start:end].replace("\n", " ")
    return ("…" if start > 0 else "") + piece + ("…" if end < len(text) else ""), start, end


@dataclass
class _View:
    """One way a journal search reads its question (the whole of it, or one thing it names) and what each side
    found for it."""

    query: Query
    held: dict[str, int]  # how many messages hold each of its words
    pending: PendingAnswer | None = None
    asked: str = ""  # what the semantic side was asked for it
    keyword: dict[tuple[str, int], float] = field(default_factory=dict)
    cosine: dict[tuple[str, int], float] = field(default_factory=dict)
    whole: bool = True  # the whole question (else one thing it names)

    def seats(self, found: dict[tuple[str, int], Message]) -> Collection[tuple[str, int]]:
        """The candidates this reading ranks: every one for the whole question; for an aspect, those its sides
        found and the messages beside them (an aspect ranked over every candidate would cost the whole
        question's work again for each)."""
        if self.whole:
            return found
        own = set(self.keyword) | set(self.cosine)
        return [seat for seat in found
                if seat in own or (seat[0], seat[1] - 1) in own or (seat[0], seat[1] + 1) in own]


def _semantic_passage(message: Message, index: int | None) -> Passage | None:
    """The passage the semantic side found nearest (its place in the message's passages), as offsets into the
    message's text: the index cut the text it embedded (content, and a tool row's name) by the same rule, and
    that text begins the message's."""
    if index is None or not message.content:
        return None
    embedded = f"{message.content}\n{message.tool_name}" if message.tool_name else message.content
    found = passages(embedded)
    return found[index] if 0 <= index < len(found) else None


class ConversationService:
    def __init__(
        self, store: ConversationStore, agent_memory: AgentMemory, *, clock: Clock = utcnow,
        jobs: Callable[[], Jobs | None] = lambda: None, count_tokens: Callable[[str], int] | None = None,
    ) -> None:
        self.store = store
        self.agent_memory = agent_memory
        self.clock = clock
        self.jobs = jobs
        self._count_tokens = count_tokens
        self._part_tokens: dict[str, int] = {}
        self._last_reads = LastReads()  # what the last context build for each caller read, in this process
        # what else a purge removes with a conversation (its workspace), by name: ref -> counts
        self.purge_hooks: list[Callable[[ConversationRef], dict[str, int]]] = []
        self.reranking: Reranking | None = None  # recall's re-ranking stage, mode=deep (the composition root sets it)

    def count_tokens(self, text: str) -> int:
        if self._count_tokens is None:
            from ..domain.tokens import count_tokens

            self._count_tokens = count_tokens
        return self._count_tokens(text)

    # --- which conversation ------------------------------------------------------------------

    def call_context(
        self, principal: Principal, agent: str, key: str | None, *, user: str | None, surface: str | None = None
    ) -> CallContext:
        if key is not None:
            check_conversation_key(key)
        return self.agent_memory.context(principal, agent, user=user, surface=surface, conversation=key)

    @staticmethod
    def ref(ctx: CallContext, key: str) -> ConversationRef:
        return ConversationRef(ctx.principal.account_id, ctx.agent.name, ctx.user, key)

    def _record(self, ref: ConversationRef) -> ConversationRecord:
        record = self.store.get(ref)
        if record is None:
            whom = f"user {ref.user_id!r}" if ref.user_id else "the account"
            raise NotFoundError(f"agent {ref.agent!r} has no conversation {ref.key!r} with {whom}")
        return record

    # --- the journal -------------------------------------------------------------------------

    def append(
        self, principal: Principal, agent: str, key: str, drafts: Sequence[MessageDraft], *,
        user: str | None = None, surface: str | None = None, window_messages: int | None = None,
    ) -> AppendResult:
        """Durable before it returns; a pass starts in the background when the threshold is crossed."""
        ctx = self.call_context(principal, agent, key, user=user, surface=surface)
        check_batch(list(drafts))
        check_window_messages(window_messages)
        moment = self.clock()
        counted = [replace(d, tokens=self.count_tokens(message_text(d))) for d in with_times(list(drafts), moment)]
        ref = self.ref(ctx, key)
        summary = ctx.agent.summary
        result = self.store.append(
            ref, counted, now=iso(moment), surface=ctx.surface, thresholds=(summary.tokens, summary.messages),
            window_messages=window_messages,
        )
        if result.record.due_since is not None and ctx.rules.checkpoint:
            self.start_pass(result.record, reason="threshold")
        return result

    def append_model_messages(
        self, principal: Principal, agent: str, key: str, messages: Sequence[Any], format: str | None, *,
        user: str | None = None, surface: str | None = None, window_messages: int | None = None,
    ) -> tuple[AppendResult, list[Skipped]]:
        """An append of messages in a model API's own shape (``domain/model_messages.py``): their journal
        rows, and what the journal does not keep of them (system messages, images...), with the reasons."""
        fmt = check_model_format(format)
        if fmt is None:
            raise InvalidError("format names the shape of these messages: bedrock, anthropic or openai",
                               field="format")
        if not messages:
            raise InvalidError("messages must hold at least one message", field="messages")
        parsed = parse_messages(messages, fmt)
        if not parsed.rows:
            reasons = "; ".join(skipped.reason for skipped in parsed.skipped)
            raise InvalidError(f"nothing in these messages is kept by the journal ({reasons})", field="messages")
        if len(parsed.rows) > APPEND_BATCH_MAX:
            raise InvalidError(
                f"these {len(messages)} messages make {len(parsed.rows)} journal rows; at most {APPEND_BATCH_MAX} "
                "go in one append: send fewer at a time", field="messages",
            )
        result = self.append(principal, agent, key, parsed.rows, user=user, surface=surface,
                             window_messages=window_messages)
        return result, parsed.skipped

    def start_pass(self, record: ConversationRecord, *, reason: str, again: str = "") -> str | None:
        """Start the conversation's summary pass (or find the one already running); never raises: a
        pass that cannot start now is started by the next append or the scheduled sweep."""
        jobs = self.jobs()
        if jobs is None:
            return None
        ref = record.ref
        payload = {"account": ref.account_id, "agent": ref.agent, "user": ref.user_id, "conversation": ref.key,
                   "surface": record.surface, "reason": reason}
        mark = max(record.folded_through, record.forgotten_through)
        try:
            run = jobs.start(ref.job_name, payload, discriminator=record.pass_discriminator(mark, again))
            if not again and jobs.describe(run).state == "failed":
                # the pass for this mark failed for good: the next append over the threshold tries anew
                run = jobs.start(ref.job_name, payload,
                                 discriminator=record.pass_discriminator(mark, f".after.{record.last_seq}"))
            return run
        except Exception:
            logger.exception("summary pass could not start", extra={"conversation": ref.key, "agent": ref.agent})
            return None

    def messages(
        self, principal: Principal, agent: str, key: str, *, user: str | None = None, after: int | None = None,
        limit: int | None = None,
    ) -> tuple[list[Message], int | None]:
        """A page of the journal, whole and in order, and the ``after`` of the next page (None: the end)."""
        ctx = self.call_context(principal, agent, key, user=user)
        size = check_limit(limit, default=READ_LIMIT_DEFAULT, maximum=READ_LIMIT_MAX)
        start = 0 if after is None else after
        if isinstance(start, bool) or not isinstance(start, int) or start < 0:
            raise InvalidError("after must be a seq ≥ 0", field="after")
        ref = self.ref(ctx, key)
        record = self._record(ref)
        if start >= record.last_seq:  # nothing follows (and an `after` past any seq never reaches the store)
            return [], None
        rows = self.store.messages(ref, after=start, limit=size)
        last = rows[-1].seq if rows else start
        return rows, (last if rows and last < record.last_seq else None)

    def tool_call(
        self, principal: Principal, agent: str, key: str, tool_call_id: str, *, user: str | None = None,
        surface: str | None = None,
    ) -> dict[str, Any]:
        """The full arguments and result of an earlier tool call (SPEC §4.1)."""
        ctx = self.call_context(principal, agent, key, user=user, surface=surface)
        self._require_journal_tools(ctx)
        if not isinstance(tool_call_id, str) or not 1 <= len(tool_call_id) <= 128:
            raise InvalidError("tool_call_id must be 1–128 characters", field="tool_call_id")
        rows = self.store.tool_messages(self.ref(ctx, key), tool_call_id)
        call = next((m for m in rows if m.role == "tool_call"), None)
        results = [m for m in rows if m.role == "tool_result"]
        if call is None and not results:
            raise NotFoundError(f"no tool call {tool_call_id!r} in conversation {key!r}")
        return {
            "conversation": key,
            "tool_call_id": tool_call_id,
            "tool_name": call.tool_name if call else (results[0].tool_name if results else None),
            "arguments": call.arguments if call else None,
            "call_seq": call.seq if call else None,
            "result": results[-1].result if results else None,
            "result_content": results[-1].content if results else None,
            "result_seq": results[-1].seq if results else None,
        }

    def search(
        self, principal: Principal, agent: str, query: str, *, user: str | None = None,
        conversation: str | None = None, limit: int | None = None, surface: str | None = None,
        mode: str | None = None, after: str | None = None, before: str | None = None,
    ) -> list[JournalHit]:
        """Messages of the agent's conversations with this user, by meaning and words (SPEC §4.1): the first page."""
        return self.search_page(principal, agent, query, user=user, conversation=conversation, limit=limit,
                                surface=surface, mode=mode, after=after, before=before).items

    def search_page(
        self, principal: Principal, agent: str, query: str, *, user: str | None = None,
        conversation: str | None = None, limit: int | None = None, surface: str | None = None,
        cursor: str | None = None, mode: str | None = None, min_score: float | None = None,
        after: str | None = None, before: str | None = None,
    ) -> JournalPage:
        """One page of a journal search, and the cursor of the next (None on the last).

        The store answers its most relevant messages by words (BM25 over stems, never the newest), the
        semantic index its nearest by meaning; every semantic hit is read back from the journal before it
        may be returned, and the two lists are fused in ``domain/recall.py``. Pages cut one ranking, so they
        never overlap. ``after`` / ``before`` (times) keep the messages written strictly between them, on both
        sides and again when each is read back."""
        ctx = self.call_context(principal, agent, conversation, user=user, surface=surface)
        self._require_journal_tools(ctx)
        size = check_limit(limit, default=SEARCH_LIMIT_DEFAULT, maximum=SEARCH_LIMIT_MAX)
        check_query(query)
        wanted_mode = check_mode(mode, MODES)
        floor = check_min_score(min_score)
        when = check_time_range(after, before)
        compiled = Query(query)
        if not compiled.words:
            raise InvalidError("q must hold at least one word", field="q")
        # "walk me through what happened with my flight": the words that only ask for a sequence are searched by
        # neither side (domain/timeline.py)
        timeline = wanted_mode in ("hybrid", "deep") and asks_for_timeline(query)
        if timeline and (topic := Query(timeline_topic(query))).words:
            compiled = topic
        asked = {"q": query, "conversation": conversation, **_time_marks(when)}
        offset = _search_offset(cursor, asked)
        keyword_pool = pool(KEYWORD_CANDIDATES, offset, size)
        semantic_pool = pool(SEMANTIC_CANDIDATES, offset, size)
        aspect_pool = pool(ASPECT_CANDIDATES, offset, size)  # an aspect's best need only be near the top
        account, agent_name, user_id = ctx.principal.account_id, ctx.agent.name, ctx.user
        total, held = self.store.word_counts(compiled.words)
        # the question, and each thing it names when it names several to tell apart (domain/recall.py aspects):
        # each is searched on both sides and fused on its own, and the rankings take turns (best_of)
        views = [_View(compiled, held)]
        if wanted_mode in ("hybrid", "deep"):
            for aspect in map(Query, aspects(query)):
                views.append(_View(aspect, {w: held.get(w, 0) for w in aspect.words}, whole=False))

        def ask(view: _View, left_out: Collection[str] = ()) -> None:
            """The semantic side asked for the view's text without ``left_out`` (again, if that changes it)."""
            text = without_common_words(view.query.text, total, view.held, left_out=left_out)
            if view.pending is not None:
                if text == view.asked:
                    return
                view.pending.cancel()
            view.asked = text
            view.pending = self._semantic(account, agent_name, user_id, conversation, text,
                                          semantic_pool if view is views[0] else aspect_pool, wanted_mode, when)

        # a name no message holds (the store's own count) can be matched by nothing: by meaning it only pulls the
        # question towards other names ("Tomasz", whom the conversation calls "tata")
        named = capitalised(query)  # the words the question writes with a capital: the names it may hold
        unheld = {word for word in named if held.get(word) == 0} if total > 0 else set()
        for view in views:
            ask(view, unheld)
        found: dict[tuple[str, int], Message] = {}

        def by_words(view: _View) -> None:
            for hit in self.store.search_candidates(account, agent_name, user_id, view.query.words,
                                                    conversation=conversation, when=when,
                                                    limit=keyword_pool if view is views[0] else aspect_pool):
                key = (hit.conversation, hit.message.seq)
                found[key], view.keyword[key] = hit.message, hit.score

        def read(wanted: dict[str, list[int]]) -> None:
            for key, message in self.store.messages_of(account, agent_name, user_id, wanted).items():
                if when is None or when.holds(message.created_at):  # the journal decides, and its time
                    found[key] = message

        stages: list[Stage] = []
        if wanted_mode != "semantic":
            for view in views:  # while the semantic side embeds and searches
                by_words(view)
            stages.append("keyword")
        called: set[str] = set()
        if wanted_mode in ("hybrid", "deep"):
            # a name the messages holding it mostly call someone by ("hey Rosa!") is asked again without it by
            # meaning (domain/addressing.py): what that person said holds "I", and the calls are not the answer
            called = called_names(named, ((m.role, message_text(m)) for m in found.values()))
            for view in views:  # (a view that holds none of them is not asked again: its text is the same)
                ask(view, called | unheld)
        pending = views[0].pending
        semantic = pending.answer() if pending is not None else None
        # counted once the semantic side has searched: what it applied of the queue first is indexed
        lag = self._index_lag(account, agent_name, user_id, conversation, wanted_mode)
        how = answered(wanted_mode, semantic)
        if wanted_mode == "semantic" and how.mode == "keyword":
            by_words(views[0])  # the semantic side fell back: the words answer
            stages.append("keyword")
        nearest_passage: dict[tuple[str, int], int] = {}  # the passage of a long message the semantic side found
        if semantic is not None:
            for view in views:
                answer = view.pending.answer() if view.pending is not None and how.fallback is None else None
                nearest = answer.hits if answer is not None and answer.fallback is None else []
                near = {(str(h.fields.get("conversation")), int(h.fields.get("seq") or 0)): h.score
                        for h in reversed(nearest)}  # the best score of a message wins
                for h in nearest:  # the whole question's first, then the best hit's
                    if isinstance(h.fields.get("passage"), int):
                        nearest_passage.setdefault((str(h.fields.get("conversation")), int(h.fields.get("seq") or 0)),
                                                   int(h.fields["passage"]))
                unread: dict[str, list[int]] = {}
                for conversation_key, seq in near:
                    if (conversation_key, seq) not in found:
                        unread.setdefault(conversation_key, []).append(seq)
                read(unread)
                view.cosine = {k: score for k, score in near.items() if k in found}
            # a thing a question names is a few words, nearer to no message than the whole question: its nearest
            # reads as near as the question's (domain/recall.py as_near_as)
            for view in views[1:]:
                view.cosine = as_near_as(view.cosine, max(views[0].cosine.values(), default=0.0))
            if semantic.fallback is None:
                stages.append("semantic")
        if how.mode in ("hybrid", "deep") and any(view.keyword for view in views):
            # a message borrows from the one before and after it (a question and its answer): the neighbours of
            # the best keyword hits are read as candidates too, from the journal, like every semantic hit
            for view in views:
                read(neighbours_to_read(view.keyword, found, None if view is views[0] else ASPECT_CANDIDATES // 5))
            for view in views:
                view.keyword = lend_neighbours(view.keyword, view.seats(found), NEIGHBOUR_SHARE)
            stages.append("neighbours")
        if "keyword" in stages and "semantic" in stages:
            stages.append("fusion")
        calibration = self.agent_memory.entries.calibration
        # deep: the default cut-off is the re-ranking stage's to make, so it reads the fused top 50 whole
        cut = 0.0 if wanted_mode == "deep" and floor is None and self.reranking is not None else floor
        lending = how.mode in ("hybrid", "deep")
        across = conversation is None  # a search across conversations weighs each candidate's (lend_conversation)

        bags: dict[tuple[str, int], Counter[str]] = {}  # each candidate's words, read once for every view
        asked_when = lending and asks_when(query)
        timed: dict[tuple[str, int], bool] = {}  # ... and whether each says a time, read once for every view

        def fused(view: _View) -> list[tuple[tuple[str, int], float]]:
            seats = view.seats(found)  # the whole question's: every candidate; an aspect's: its own and theirs
            signals = {k: Signals(view.keyword.get(k), view.cosine.get(k)) for k in seats}
            if not lending:
                return fuse(signals, how.mode, calibration, min_score=cut, keyword_scale=bm25_scale(total, view.held))
            ranked = fuse(signals, how.mode, calibration, min_score=0.0, keyword_scale=bm25_scale(total, view.held))
            # what the best hits say beside the question, or beside the thing it names (domain/feedback.py)
            ranked, lent = lend_feedback(ranked, lambda key: message_text(found[key]), view.query.terms, bags=bags)
            if lent and "feedback" not in stages:
                stages.append("feedback")
            if asked_when:  # "when…?": of the fused top, the messages that say a time (domain/asked_when.py)
                ranked = toward_times(ranked, lambda key: message_text(found[key]), said=timed)
            # each message borrows a share of its neighbours' fused score too (what the meaning found of them),
            # then the cut-off; across conversations, a share of its conversation's best too (lend_conversation)
            return lend_ranked(ranked, seats, FUSED_NEIGHBOUR_SHARE, calibration.min_score if cut is None else cut,
                               CONVERSATION_SHARE if across else 0.0)

        def same(key: tuple[str, int]) -> tuple[str, str]:
            return found[key].role, folded(message_text(found[key]))

        def rough(key: tuple[str, int]) -> tuple[str, str]:
            return found[key].role, folded_head(message_text(found[key]))

        rankings = [fused(view) for view in views]
        ranked = first_of_each(best_of(rankings), same, rough)
        latest = lending and asks_for_latest(query)

        def time_of(key: tuple[str, int]) -> tuple[str, int]:
            return found[key].created_at or "", key[1]

        if latest:  # "what's the code now?": of the best, the later ones (domain/recall.py toward_latest)
            ranked = toward_latest(ranked, time_of)
        own = timeline and lending and asks_in_first_person(query)
        if own:  # "what did I bring up, in order?": of the best, the asker's own messages (domain/timeline.py)
            ranked = toward_own(ranked, lambda key: found[key].role == "user")
        answered_mode, fallback = how.mode, how.fallback

        def shown(key: tuple[str, int]) -> Passage | None:
            """A long message's passage that matched: holding most query words, the nearest by meaning on a tie."""
            text = message_text(found[key])
            cut = long_passages(text)
            if not cut:
                return None
            return best_passage(text, compiled.held_at(text), _semantic_passage(found[key], nearest_passage.get(key)),
                                cut=cut)

        if wanted_mode == "deep":
            # the model reads the question without those names too, as the semantic side did (and without the
            # words that only ask for a sequence: compiled.text, domain/timeline.py)
            answered_mode, fallback, ranked = self._rerank(without_words(compiled.text, called | unheld), ranked, found,
                                                           how.mode, how.fallback, stages, floor, shown,
                                                           RERANK_CONVERSATION_SHARE if across else 0.0)
            if "rerank" in stages and len(rankings) > 1:
                # the model reads each candidate against the whole question and fills the top with the thing it
                # matches best: each thing named keeps taking turns with it, by its own fused ranking
                ranked = first_of_each(best_of([ranked, *rankings[1:]]), same, rough)
            if latest and "rerank" in stages:  # the model's order leans toward the latest too
                ranked = toward_latest(ranked, time_of)
            if own and "rerank" in stages:  # ... and the asker's own messages
                ranked = toward_own(ranked, lambda key: found[key].role == "user")
        hits = []
        for key, score in ranked[offset : offset + size]:  # snippets for the page only
            message = found[key]
            text = message_text(message)
            piece, start, end = snippet_at(text, sorted(compiled.held(text)), shown(key))
            hits.append(JournalHit(key[0], message.seq, message.role, piece, score, message.created_at, start, end))
        more = len(ranked) > offset + size
        next_cursor = encode_cursor({"offset": offset + size, **asked})
        return JournalPage(hits, next_cursor if more else None, answered_mode, fallback, lag, tuple(stages))

    def _rerank(
        self, query: str, ranked: list[tuple[tuple[str, int], float]], found: dict[tuple[str, int], Message],
        mode: Mode, fallback: Fallback | None, stages: list[Stage], floor: float | None,
        shown: Callable[[tuple[str, int]], Passage | None] = lambda seat: None, conversations: float = 0.0,
    ) -> tuple[Mode, Fallback | None, list[tuple[tuple[str, int], float]]]:
        """mode=deep: the fused top read again with the query by the re-ranking stage (a long message's passage
        that matched, ``shown``: a model reads a few hundred tokens of a text). The mode that answered is
        ``deep`` when both the semantic side and the stage ran; a semantic fallback is said first."""
        if self.reranking is None:
            return ("hybrid" if mode == "deep" else mode), fallback or "rerank_not_configured", ranked
        cut = floor if floor is not None else (
            self.agent_memory.entries.calibration.min_score if mode != "keyword" else 0.0)

        def text_of(seat: tuple[str, int]) -> str:  # a long message is read by the passage that matched
            text, passage = message_text(found[seat]), shown(seat)
            return passage.of(text) if passage is not None else text

        deep = self.reranking.deepen(query, ranked, text_of, mode=mode, fallback=fallback, cut=cut, neighbours=True,
                                     conversations=conversations, fused=RERANK_FUSED_SHARE)
        if deep.reranked:
            stages.append("rerank")
        return deep.mode, deep.fallback, deep.ranked

    def _semantic(
        self, account: str, agent: str, user: str | None, conversation: str | None, query: str, k: int,
        mode: Mode, when: TimeRange | None = None,
    ) -> PendingAnswer | None:
        if mode == "keyword":
            return None
        side = self.agent_memory.entries.semantic
        if side is None:
            return PendingAnswer(SemanticAnswer([], "not_configured"))
        filters: dict[str, str | TimeRange] = {"kind": "message", "account": account, "agent": agent,
                                               "user": user or ""}
        if conversation is not None:
            filters["conversation"] = conversation
        if when is not None:
            filters["updated_at"] = when  # a message document's time
        return side.start(query, filters, k)

    def _index_lag(self, account: str, agent: str, user: str | None, conversation: str | None,
                   mode: Mode) -> int | None:
        """How many of the scope's messages the semantic index has not caught up with (None: keyword mode, no
        index, or an index that cannot tell)."""
        side = self.agent_memory.entries.semantic
        if mode == "keyword" or side is None:
            return None
        filters: dict[str, str] = {"kind": "message", "account": account, "agent": agent, "user": user or ""}
        if conversation is not None:
            filters["conversation"] = conversation
        return side.lag(filters)

    @staticmethod
    def _require_journal_tools(ctx: CallContext) -> None:
        if not ctx.rules.journal_tools:
            raise ForbiddenError(
                f"the journal is not searchable on the {ctx.surface} surface (only agent and test)",
                reason="no_journal_tools",
            )

    # --- conversations -----------------------------------------------------------------------

    def list_conversations(
        self, principal: Principal, agent: str, *, user: str | None = None
    ) -> list[ConversationRecord]:
        ctx = self.call_context(principal, agent, None, user=user)
        return self.store.list_conversations(ctx.principal.account_id, ctx.agent.name, ctx.user)

    def compact(self, principal: Principal, agent: str, key: str, *, user: str | None = None) -> str:
        """Start a summary pass now (it still runs in the background); returns its run id."""
        ctx = self.call_context(principal, agent, key, user=user)
        record = self._record(self.ref(ctx, key))
        if not keeps_checkpoint(record):
            where = ("with an anonymous mcp client" if record.surface == "mcp"
                     else f"on the {record.surface} surface")
            raise ForbiddenError(f"a conversation {where} keeps no checkpoint", reason="no_checkpoint")
        if self.jobs() is None:
            raise NotImplementedYetError("summary passes are not configured on this deployment")
        run = self.start_pass(record, reason="compact", again=f".compact.{iso(self.clock())}")
        if run is None:
            raise UnavailableError("the summary pass could not be started now; try again shortly", retry_after=1)
        return run


    def get(self, principal: Principal, agent: str, key: str, *, user: str | None = None) -> ConversationRecord:
        ctx = self.call_context(principal, agent, key, user=user)
        record = self._record(self.ref(ctx, key))
        if record.deleted_at is not None:
            raise NotFoundError(f"conversation {key!r} was deleted (its journal stays until purged)")
        return record

    def checkpoint(
        self, principal: Principal, agent: str, key: str, *, user: str | None = None
    ) -> tuple[Entry, ConversationRecord, PassLog]:
        """The conversation's checkpoint entry, the record saying what it covers, and the passes that
        wrote it: the newest ``PASSES_SHOWN`` its history keeps (30 days), and how many there were in all."""
        ctx = self.call_context(principal, agent, key, user=user)
        ref = self.ref(ctx, key)
        record = self._record(ref)
        entry = self.checkpoint_entry(ctx, ref)
        if entry is None:
            raise NotFoundError(f"conversation {key!r} has no checkpoint (yet, or it was deleted)",
                                reason="no_checkpoint")
        layer = ref.checkpoint_layer(ctx.agent.own_memory)
        history = self.agent_memory.entries.store.history(layer, ref.checkpoint_name, iso(self.clock()),
                                                          limit=PASSES_READ)
        passes: list[dict[str, Any]] = []
        for h in history:
            if h.operation == "delete":
                break  # an earlier checkpoint's, forgotten
            if h.updated_by == "system":
                passes.append({"version": h.version, "at": h.changed_at, "by": h.updated_by,
                               "summariser": summariser_of(h.description)})
        record = _as_written(record, entry)
        # the record counts every pass (a conversation from before it did shows what its history keeps)
        return entry, record, PassLog(passes[:PASSES_SHOWN], max(record.passes, len(passes)))

    def checkpoint_entry(self, ctx: CallContext, ref: ConversationRef) -> Entry | None:
        layer = ref.checkpoint_layer(ctx.agent.own_memory)
        return self.agent_memory.entries.store.get(layer, ref.checkpoint_name, iso(self.clock()))

    def delete(
        self, principal: Principal, agent: str, key: str, *, user: str | None = None, purge: bool = False
    ) -> dict[str, Any]:
        """Delete the record (the journal and checkpoint stay), or with ``purge`` everything, with a receipt."""
        ctx = self.call_context(principal, agent, key, user=user)
        ref = self.ref(ctx, key)
        if not purge:
            return self._delete(ref, key)
        scrub = self.agent_memory.agents.memories.scrub
        with scrub.after():
            scrub.removed("messages")  # and the checkpoint, which no full-text index holds
            return self._purge(ctx.agent.own_memory, ref, key)

    def _delete(self, ref: ConversationRef, key: str) -> dict[str, Any]:
        record = self._record(ref)
        deleting = record.deleted_at is None  # deleting it again removes nothing more
        if deleting:
            self.store.delete(ref, now=iso(self.clock()))
        return {"conversation": key, "purged": False, "removed": {"conversations": int(deleting)}}

    def _purge(self, own_memory: str, ref: ConversationRef, key: str) -> dict[str, Any]:
        if self.store.get(ref) is None:
            # files may be written to a conversation's workspace before its first message
            extras = self._purge_extras(ref)
            if any(extras.values()):
                removed = {"conversations": 0, "messages": 0, "checkpoints": 0, "index_documents": 0, **extras}
                return {"conversation": key, "purged": True, "removed": removed}
        self._record(ref)  # 404 when there is none
        return {"conversation": key, "purged": True, "removed": self.purge_ref(own_memory, ref)}

    def purge_ref(self, own_memory: str, ref: ConversationRef) -> dict[str, int]:
        """Remove one conversation for good: journal, index documents, checkpoint, workspace files."""
        messages = self.store.purge(ref)
        now = self.clock()
        entries = self.agent_memory.entries
        layer = ref.checkpoint_layer(own_memory)
        checkpoints = 0
        if entries.store.get(layer, ref.checkpoint_name, iso(now)) is not None:
            entries.store.delete(layer, ref.checkpoint_name, expected_version=None, now=iso(now),
                                 keep_history_until=iso(now), updated_by="system")
            checkpoints = 1
        # its versions go with it (a summary pass's, a person's corrections)
        entries.store.forget_history(layer, ref.checkpoint_name)
        removed = {"conversations": 1, "messages": messages, "checkpoints": checkpoints, "index_documents": messages}
        for name, count in self._purge_extras(ref).items():
            removed[name] = removed.get(name, 0) + count
        return removed

    def _purge_extras(self, ref: ConversationRef) -> dict[str, int]:
        """What the purge hooks remove with the conversation (its workspace files)."""
        removed: dict[str, int] = {}
        for hook in self.purge_hooks:
            for name, count in hook(ref).items():
                removed[name] = removed.get(name, 0) + count
        return removed

    def purge_agent(self, agent: AgentRecord) -> dict[str, int]:
        """Every conversation of an agent being purged (AgentService's purge hook)."""
        total: dict[str, int] = {}
        for ref in self.store.refs_of_agent(agent.account_id, agent.name):
            for name, count in self.purge_ref(agent.own_memory, ref).items():
                total[name] = total.get(name, 0) + count
        return total

    def forget_checkpoint(self, layer: Layer, entry: Entry) -> None:
        """A checkpoint was deleted (EntryService's hook): its conversation forgets what it covered."""
        agent = agent_of_memory(layer.memory)
        if agent is None or entry.conversation is None:
            return
        ref = ConversationRef(layer.account_id, agent, layer.user_id, entry.conversation)
        record = self.store.get(ref)
        if record is not None:
            self.store.forget_through(ref, record.last_seq, now=iso(self.clock()))

    def start_due_passes(self, *, grace_s: float = 120.0, limit: int = 100) -> int:
        """The sweep: start a pass for each conversation over its threshold for longer than ``grace_s``
        (its pass failed, or its process went away). A new run name each hour, so a failed pass is tried
        again, hourly at most."""
        now = self.clock()
        due = self.store.due_conversations(iso(now - timedelta(seconds=grace_s)), limit=limit)
        started = 0
        for record in due:
            if not keeps_checkpoint(record) or record.deleted_at is not None:
                continue
            if self.start_pass(record, reason="sweep", again=f".sweep.{iso(now)[:13]}") is not None:
                started += 1
        return started

    # --- the context for a turn (SPEC §5) ------------------------------------------------------

    def context(
        self, principal: Principal, agent: str, key: str, *, user: str | None = None, surface: str | None = None,
        format: str | None = None,
    ) -> dict[str, Any]:
        """What the model sees next turn: pinned block, memory index, summary, recent window. Reads only.
        With ``format`` (bedrock, anthropic, openai) its ``messages`` (and ``system``) are in that API's shape."""
        from ..domain.context import SummaryPart, assemble, memory_index
        from ..domain.window import effective_cap, recent_window

        fmt = check_model_format(format)
        moment = self.clock()
        now = iso(moment)
        entries = self.agent_memory.entries.store
        asked = (principal.account_id, principal.kind, principal.user_id, agent, user, surface)
        any_user = (principal.account_id, agent, surface)  # the last build of this agent, for whichever caller
        with entries.context_reads():
            last = self._last_reads.get(asked)
            if last is None:
                template = self._last_reads.get(any_user)
                last = template.for_user(principal.user_id or user) if template is not None else None
            if last is not None:
                check_conversation_key(key)  # (call_context checks it too; nothing is sent for a key it refuses)
                self._read_ahead(last, key, now)  # beside the agent's record: the build is one round of reads
            ctx = self.call_context(principal, agent, key, user=user, surface=surface)
            ref = self.ref(ctx, key)
            checkpoint_at = (ref.checkpoint_layer(ctx.agent.own_memory), ref.checkpoint_name)
            # the tail as long as the agent's cap; the conversation's own setting can only shorten it
            tail_count = effective_cap(ctx.agent.window_messages, None)
            if last is None:
                self._read_ahead_named(ctx, ref, now, checkpoint_at, tail_count)  # beside the memories' records
            readable = sorted(self.agent_memory.readable(ctx), key=lambda m: m.name != ctx.agent.own_memory)
            plan = self._index_layers(ctx, readable, ref.account_id)
            # everything the build reads that depends on nothing else it reads, started at once (a store whose
            # reads wait on the network sends them together): the layers' listings, the checkpoint, and with
            # them the conversation's record and tail; only the pinned entries' content waits for the listings
            # (unless the last build's pinned entries, read ahead, are the ones)
            layers = [layer for _, memory_layers in plan for layer in memory_layers]
            entries.prefetch(layers, now, entries=[checkpoint_at])
            record, tail = self.store.record_and_tail(ref, tail_count)
            cap = effective_cap(ctx.agent.window_messages, record.window_messages if record else None)
            window = recent_window(tail[-cap:], cap) if record is not None else []
            sections, pinned, pinned_read = self._memory_parts(ctx, plan, ref.account_id, now, moment)
            checkpoint = self.checkpoint_entry(ctx, ref) if record is not None else None
            reads = ContextReads(
                ref.account_id, ref.agent, ref.user_id, ctx.agent.own_memory, tuple(m.name for m in readable),
                tuple(layers), tuple(pinned_read), tail_count,
            )
            self._last_reads.keep(asked, reads)
            self._last_reads.keep(any_user, reads)
        summary = None
        if checkpoint is not None and checkpoint.content:
            summary = SummaryPart(checkpoint.content, _as_written(record, checkpoint).folded_through if record else 0)
        built = assemble(pinned, memory_index(sections, now=moment), summary, window, self.part_tokens, cap=cap)
        if fmt is not None:
            built.update(format=fmt, **render(built["messages"], fmt))
        return {"conversation": key, "agent": ctx.agent.name, "user_id": ctx.user, "surface": ctx.surface, **built}

    @staticmethod
    def _index_layers(
        ctx: CallContext, readable: list[MemoryRecord], account_id: str
    ) -> list[tuple[MemoryRecord, list[Layer]]]:
        """Each readable memory with the layers its index section reads: a user's memory its one layer, the
        account's the user's layer first (its copies shadow the account's) and the account's layer."""
        return [(memory, ConversationService._layers(ctx, account_id, memory.name, memory.user_id))
                for memory in readable]

    @staticmethod
    def _layers(ctx: CallContext, account_id: str, memory: str, owner: str | None) -> list[Layer]:
        """The layers a memory's index section reads: a user's memory (``owner``) its one layer; the account's
        the conversation's user's layer and its own, or its own alone in a conversation with the account."""
        users = [owner] if owner is not None else ([ctx.user, None] if ctx.user else [None])
        return [Layer(account_id, memory, user) for user in users]

    def _read_ahead_named(self, ctx: CallContext, ref: ConversationRef, now: str,
                          checkpoint: tuple[Layer, str], tail_count: int) -> None:
        """A first build for this caller and agent here (nothing read ahead): what the agent's record names,
        sent before its memories' records say which layers the build reads, beside them. Each memory's layers
        as an account memory's are read (a memory of this user's own is the first of them), the checkpoint, the
        conversation's record and tail. The build's own reads are answered from these when they are the same
        reads, and read for themselves when not; what was sent and not asked for is dropped. A store whose reads
        do not wait on the network reads nothing ahead."""
        names = [ctx.agent.own_memory, *(attachment.memory for attachment in ctx.agent.memories)]
        layers = [layer for name in names for layer in self._layers(ctx, ref.account_id, name, None)]
        self.agent_memory.entries.store.prefetch(layers, now, entries=[checkpoint])
        self.store.prefetch(ref, tail_count)

    def _memory_parts(
        self, ctx: CallContext, plan: list[tuple[MemoryRecord, list[Layer]]], account_id: str, now: str,
        moment: datetime,
    ) -> tuple[list[IndexSection], Pinned, list[tuple[Layer, str]]]:
        """The memory index's sections (read as far as they can show), the pinned block, and the pinned entries
        whose content was read for it."""
        store = self.agent_memory.entries.store
        sections: list[IndexSection] = []
        candidates: list[Entry] = []
        room = index_room()
        for memory, layers in plan:
            own = memory.name == ctx.agent.own_memory
            listed: list[Entry] = []
            total = 0
            heading = section_heading(memory.name, own)
            for layer in layers:
                shadow = layers[0] if layer.user_id is None and len(layers) == 2 else None
                count = store.index_count(layer, now, shadowed_by=shadow)
                total += count
                room = self._index_read(layer, now, shadow, count, room, listed, heading)
                candidates += store.pinning_candidates(layer, now, limit=PINNED_MAX)
            sections.append(IndexSection(memory.name, listed, own=own, total=total))
        whole, read = self._with_content(candidates, account_id, now)
        return sections, pinned_block(whole, moment), read

    def _index_read(
        self, layer: Layer, now: str, shadow: Layer | None, count: int, room: int, listed: list[Entry],
        heading: str,
    ) -> int:
        """Read the layer's index entries, newest first, into ``listed`` (its memory's, under ``heading``)
        while the index has ``room`` left (negative: full, nothing more is read); returns the room left.
        The room counts as ``memory_index`` measures the text, so whatever could show has been read."""
        store = self.agent_memory.entries.store
        cursor: str | None = None
        read = 0
        used = 0
        while room >= 0 and read < count:
            # a first page of 40, then as many as the room takes at the lines' mean length so far, and one
            wanted = room * read // used + 1 if used else FIRST_INDEX_PAGE
            page = store.index_page(layer, now, limit=max(1, min(count - read, wanted, 100)), cursor=cursor,
                                    shadowed_by=shadow)
            for entry in page.items:
                if not listed:
                    room -= 1 + len(heading)
                listed.append(entry)
                length = 1 + len(index_line(entry))
                room -= length
                used += length
            read += len(page.items)
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        if read < count:
            room = -1  # the layer is not read to its end: what follows is only counted
        return room

    def _with_content(
        self, candidates: list[Entry], account_id: str, now: str
    ) -> tuple[list[Entry], list[tuple[Layer, str]]]:
        """The pinning candidates that can make the block, with their content: the best ``PINNED_MAX`` of all
        layers in the block's order, those that came without it read in one ``get_many`` (and which those were)."""
        best = sorted(candidates, key=lambda e: (-e.importance, -parse_iso(e.updated_at).timestamp(), e.name,
                                                 e.memory, e.user_id or ""))[:PINNED_MAX]
        missing = [(Layer(account_id, e.memory, e.user_id), e.name) for e in best if e.content is None]
        read = self.agent_memory.entries.store.get_many(missing, now) if missing else {}
        whole = [e if e.content is not None else read.get((Layer(account_id, e.memory, e.user_id), e.name))
                 for e in best]
        return [e for e in whole if e is not None], missing

    def _read_ahead(self, last: ContextReads, key: str, now: str) -> None:
        """Send what the last build for the same caller, agent and user read (``ContextReads``), for conversation
        ``key``, before this build knows the agent: a store whose reads wait on the network answers the build's
        reads from these when they are the same ones (the memory records, the listings, the pinned entries, the
        conversation's record, tail and checkpoint), and reads for itself what differs. Nothing read here is
        used unless the build, once it has checked the agent and the caller, asks for it; a store that reads at
        once ignores it all."""
        ref = ConversationRef(last.account_id, last.agent, last.user_id, key)
        checkpoint = (ref.checkpoint_layer(last.own_memory), ref.checkpoint_name)
        self.agent_memory.entries.memories.store.read_ahead(last.account_id, last.memories, now, wait=False)
        self.agent_memory.entries.store.prefetch(last.layers, now, entries=[checkpoint, *last.pinned])
        self.store.prefetch(ref, last.tail_count)

    def part_tokens(self, text: str) -> int:
        """The tokens of a context part, counted once per text: the same entries at the same versions give
        the same pinned block and index, and the same checkpoint version the same summary."""
        counted = self._part_tokens.get(text)
        if counted is None:
            counted = self.count_tokens(text)
            if len(self._part_tokens) >= PART_TOKENS_KEPT:
                self._part_tokens.pop(next(iter(self._part_tokens)))
            self._part_tokens[text] = counted
        return counted


def _time_marks(when: TimeRange | None) -> dict[str, str]:
    """A search's time bounds as its cursor keeps them."""
    if when is None:
        return {}
    return {name: bound for name, bound in (("after", when.after), ("before", when.before)) if bound is not None}


def _search_offset(cursor: str | None, asked: dict[str, Any]) -> int:
    """Where a search's page starts; a cursor of another search (other words, conversation or times) is a 400."""
    if not cursor:
        return 0
    value = decode_cursor(cursor)
    if (not isinstance(value, dict) or {k: v for k, v in value.items() if k != "offset"} != asked
            or not isinstance(value.get("offset"), int) or value["offset"] < 0):
        raise InvalidError("cursor is not one this search gave; ask again without it", field="cursor")
    offset: int = value["offset"]
    return offset


def keeps_checkpoint(record: ConversationRecord) -> bool:
    """SPEC §7: a conversation whose memory is read-only (external, test, anonymous MCP) keeps none."""
    return surface_rules(check_surface(record.surface), record.ref.user_id).checkpoint


def _as_written(record: ConversationRecord, entry: Entry) -> ConversationRecord:
    """The record as the checkpoint stands: a pass writes the checkpoint, then moves the record's mark, so
    between the two steps a reader would see the new summary beside the old mark. A version that a pass
    wrote after the one the record knows is that pass's: what it covers is what its description says."""
    if entry.updated_by != "system" or entry.version <= record.checkpoint_version:
        return record
    through = covered_through(entry.description or "")
    if through is None or through <= record.folded_through:
        return record
    return replace(record, folded_through=through, checkpoint_version=entry.version, passes=record.passes + 1)
