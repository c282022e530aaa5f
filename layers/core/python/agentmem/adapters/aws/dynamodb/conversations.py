"""Conversations on DynamoDB, their journals sealed into S3 (SPEC §4.1, §12).

A conversation is one partition (``layout``): its record (``META``), the hot tail of its journal (one item
per message, ``MSG#{seq:012d}``) and one idempotency item per client id (``CID#{client_id}``). Its agent's
and its user's partitions each hold a reference item, written with the record, which list it. Older
messages are *sealed*: moved into gzip JSON-lines segments in the journal bucket
(``journal_segments``); the record's ``sealed_through`` says which seqs are read from segments, every
later one being a row.

Round trips (requests to DynamoDB and S3) of each operation:

- ``append``: ONE ``TransactWriteItems`` in the common case — the ``META`` Put conditioned on the revision
  this process last saw (``rev``, moved by every write of the record, so it implies ``last_seq``, the turn and
  the counters are the ones the append computed from), a Put per message and a Put per client id
  (condition: not there yet). The revision comes from a per-process cache (``StateCache``): a warm Lambda
  appending to the same conversation again and again never reads first.
  * cache hit, nobody else wrote since: 1 request;
  * cache miss (a cold process, or a conversation it has not seen lately): a consistent ``GetItem`` of
    ``META`` + the transaction, 2 requests; the first append of a conversation also creates it (+2 reference
    items in the same transaction);
  * another writer appended meanwhile: the cancelled transaction returns ``META`` as it is now
    (``ALL_OLD``), and the append tries again from it: +1 transaction per race lost, with jittered
    backoff after the first;
  * a client id the conversation already holds: the cancelled transaction returns its item (the stored
    seq), the stored messages are read back (one ``BatchGetItem``, or their segment), and the other drafts
    are appended: +2 requests; a retry whose every draft is stored writes nothing.
  The threads of one process append to one conversation one at a time (a striped lock): they would only
  cancel each other's transactions. Across processes, the conditions decide.
- ``get``: one consistent ``GetItem``. ``list_conversations``: one ``Query`` of the agent's references + one
  ``BatchGetItem`` per 100 records. ``refs_of_user`` / ``refs_of_agent``: one ``Query``.
- ``tail``: the record and the newest rows, read at once (``GetItem`` and ``Query`` in parallel: one round
  trip); only when the tail reaches back into sealed seqs, the segments that hold them too.
- ``messages``: ``GetItem`` of the record, then, in parallel, a ``Query`` of the hot rows in range (1 per MB)
  and the sealed seqs' segments: a ``ListObjectsV2`` of the conversation's prefix (once per process until it
  no longer covers ``sealed_through``; 1,000 segments a page) and one ``GetObject`` per segment in range
  (1,000 messages each). A 100,000-message conversation sealed to its last 1,000 reads back whole in one
  call with 2 DynamoDB requests, 1 LIST and 99 GETs (tests/integration/test_dynamodb_journal.py counts them).
- ``tool_messages``: one ``Query`` of the by_tool_call index (keys only), then the record and the rows
  (``GetItem`` + ``BatchGetItem``), and a segment for a sealed one.
- ``search_candidates``: with a search index, one index query and the hits read back from the journal (one
  ``BatchGetItem`` of their records, one of their rows, a segment for a sealed hit); without one (local AWS
  mode), see ``_search_hot_rows``.
- ``mark_folded`` / ``forget_through`` / ``delete``: the record Put conditioned on its revision (cached
  copy, else a ``GetItem`` first; ``forget_through`` reads the forgotten messages' token counts too).
- ``seal``: ``GetItem``; a keys-only ``Query`` for rows an earlier seal left behind; a ``Query`` per 1,000
  seqs sealed; one create-only ``PutObject`` per segment; a ``BatchWriteItem`` of pointers for sealed tool
  rows; one conditional ``UpdateItem`` (as a transaction: it returns the record on a conflict) moving
  ``sealed_through``; one ``BatchWriteItem`` per 25 rows deleted. Reads, writes and deletes run on a few
  threads.
- ``purge``: the record marked ``purging`` (one transaction), the segments listed and deleted, the
  partition queried (keys) and deleted in batches, the record deleted, then its two reference items (one
  transaction, conditioned on there being no record: a conversation started again meanwhile keeps them).
  Not safe against itself: two purges of one conversation at once, and an append starting it again in
  between, could delete the new conversation's first rows (BatchWriteItem deletes carry no condition).
- ``due_conversations``: one ``Query`` of the by_due index (``DUE#C``) + one ``BatchGetItem`` per 100.

Crash safety: a segment is written create-only *before* ``sealed_through`` moves, and rows are deleted only
after; a reader never takes a seq from both places because it goes by ``sealed_through``. A seal cut short
before the mark leaves segments no reader uses (the next seal finds them written, checks they hold the same
messages, and goes on); cut short after it leaves rows the next seal deletes first. A purge cut short leaves
the record marked ``purging``: every read treats the conversation as gone, and the next ``purge`` (or
``append``, which finishes it before starting a new conversation) completes it. A conversation started again
under a purged key gets a new *incarnation*, and segments name theirs, so a leftover of the old one is never
read as the new one's.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import suppress
from dataclasses import replace
from functools import partial

from ....domain.clock import TimeRange
from ....domain.conversations import (
    AppendResult,
    CheckpointWritten,
    ConversationRecord,
    ConversationRef,
    Message,
    MessageDraft,
    check_batch,
)
from ....domain.errors import AgentmemError, ConflictError, NotFoundError, VersionConflictError
from ....ports.blobs import BlobStore
from ....ports.conversations import ConversationStore, MessageHit
from ....ports.entries import context_memo
from ....ports.search_index import Filters, SearchIndex
from ..journal_index import WordMatcher, best_first, journal_filters, location_of, searchable_text
from . import layout
from .conversation_rows import (
    ConversationState,
    StateCache,
    appended,
    conversation_pk,
    message_row,
    meta_row,
    new_state,
    over,
    state_from_raw,
    state_from_row,
)
from .hot_tail import HotTail
from .io_threads import IoThreads
from .journal_archive import JournalArchive, JournalReadError
from .journal_sealing import JournalSealer, SealRacedError
from .journal_segments import segment_of
from .models import BoundModels, ClientIdRow, ConversationRow, TableRow
from .transactions import Cancelled, WriteSet

APPEND_PATIENCE_S = 15.0  # how long an append keeps trying against other writers before its 409
MAX_WRITE_ATTEMPTS = 120  # with the jittered backoff, several seconds of contention before an update gives up
APPEND_LOCKS = 64  # stripes of the per-process append lock
BACKOFF_BASE_S = 0.002
BACKOFF_CAP_S = 0.05
FRESH_BACKOFF_CAP_S = 0.004  # a retry that already holds the record as it is: waiting only lets it go stale
READ_ATTEMPTS = 3
BATCH_GET = 100
FALLBACK_CONVERSATIONS = 20  # journal search without an index: the newest conversations it reads
FALLBACK_ROWS = 1000  # and at most this many of each one's newest hot rows

__all__ = ["DynamoConversationStore", "JournalReadError"]


def _backoff(attempt: int, cap_s: float = BACKOFF_CAP_S) -> None:
    """The first retry goes at once (the cancelled write returned the item as it is); later ones wait a
    random time that doubles up to a cap, so writers racing for one conversation spread out."""
    if attempt:
        time.sleep(random.uniform(0, min(cap_s, BACKOFF_BASE_S * 2 ** min(attempt, 10))))


def _text(message: Message) -> str:
    return searchable_text(message.content, message.tool_name)


class DynamoConversationStore(ConversationStore):
    def __init__(self, models: BoundModels, journal: BlobStore, index: SearchIndex | None = None) -> None:
        self.models = models
        self.index = index
        self.cache = StateCache()
        self.threads = IoThreads()
        self.tail_rows = HotTail(models, self.threads)
        self.archive = JournalArchive(journal, self.threads)
        self.sealer = JournalSealer(models, self.tail_rows, self.archive)
        self._append_locks = [threading.Lock() for _ in range(APPEND_LOCKS)]

    # -- append ---------------------------------------------------------------------------------------------
    def append(
        self, ref: ConversationRef, drafts: Sequence[MessageDraft], *, now: str, surface: str,
        thresholds: tuple[int, int], window_messages: int | None = None,
    ) -> AppendResult:
        checked = check_batch(list(drafts))
        pk = conversation_pk(ref)
        # this process's appends to one conversation go one at a time: they would only race each other
        with self._append_locks[hash(pk) % APPEND_LOCKS]:
            return self._append(ref, pk, checked, now=now, surface=surface, thresholds=thresholds,
                                window_messages=window_messages)

    def _append(
        self, ref: ConversationRef, pk: str, drafts: list[MessageDraft], *, now: str, surface: str,
        thresholds: tuple[int, int], window_messages: int | None,
    ) -> AppendResult:
        state = self.cache.get(pk)
        if state is None:
            state = self._read_state(pk)
        stored: dict[int, Message] = {}  # draft index → the message its client id already names
        deadline = time.monotonic() + APPEND_PATIENCE_S
        attempt = 0
        while time.monotonic() < deadline:
            attempt += 1
            if state is not None and state.purging:
                self.purge(ref)  # a purge cut short: finish it, then this append starts a new conversation
                state = None
            pending = [i for i in range(len(drafts)) if i not in stored]
            if not pending:
                if state is None:
                    state = self._read_state(pk)
                    continue
                return AppendResult(state.record(), [stored[i] for i in range(len(drafts))], added=0)
            base = state if state is not None else new_state(ref, now)
            after, messages = appended(base, [drafts[i] for i in pending], now=now, surface=surface,
                                       thresholds=thresholds, window_messages=window_messages)
            try:
                self._append_writes(base, after, messages, pending, creating=state is None).commit()
            except Cancelled as cancelled:
                state, found = self._after_cancelled(pk, state, cancelled, pending, drafts)
                stored.update(found)
                # Another transaction in flight on the record: wait it out. Lost to a write that landed: the
                # answer carried the record as it is now, so try again almost at once, before it moves on.
                _backoff(attempt - 1, BACKOFF_CAP_S if cancelled.contended else FRESH_BACKOFF_CAP_S)
                continue
            self.cache.put(after)
            new = dict(zip(pending, messages, strict=True))
            return AppendResult(after.record(), [stored.get(i) or new[i] for i in range(len(drafts))],
                                added=len(messages))
        raise ConflictError(f"conversation {ref.key!r} is being appended to by too many writers at once; try again")

    def _append_writes(
        self, base: ConversationState, after: ConversationState, messages: list[Message], pending: list[int],
        *, creating: bool,
    ) -> WriteSet:
        pk, ref = after.pk, after.ref
        writes = WriteSet(self.models.connection)
        unchanged = ConversationRow.sk.does_not_exist() if creating else ConversationRow.rev == base.rev
        writes.put("meta", meta_row(self.models, after), unchanged, all_old=True)
        for index, message in zip(pending, messages, strict=True):
            writes.put(f"msg:{index}", message_row(self.models, pk, message))
            if message.client_id is not None:
                item = self.models.client_id(pk, layout.client_id_sk(message.client_id))
                item.seq = message.seq
                writes.put(f"cid:{index}", item, ClientIdRow.sk.does_not_exist(), all_old=True)
        if creating:
            for ref_pk, ref_sk in _reference_keys(ref):
                writes.put(f"ref:{ref_pk}", self.models.conversation_ref(ref_pk, ref_sk))
        return writes

    def _after_cancelled(
        self, pk: str, state: ConversationState | None, cancelled: Cancelled, pending: list[int],
        drafts: Sequence[MessageDraft],
    ) -> tuple[ConversationState | None, dict[int, Message]]:
        """What a cancelled append learnt: the record as it is, and the drafts whose client id is stored."""
        if cancelled.contended:
            return self._read_state(pk), {}
        if cancelled.failed("meta"):
            state = state_from_raw(self.models, cancelled.old_item("meta"))
        # else the record was as this append saw it, and only client ids failed
        seqs: dict[int, int] = {}
        for index in pending:
            if cancelled.failed(f"cid:{index}"):
                seqs[index] = int((cancelled.old_item(f"cid:{index}") or {})["seq"]["N"])
        if not seqs:
            return state, {}
        if state is None or max(seqs.values()) > state.last_seq:
            state = self._read_state(pk)
            if state is None:
                return None, {}
        found = self._messages_at(state, sorted(set(seqs.values())))
        by_client = {m.client_id: m for m in found.values()}
        return state, {i: by_client[drafts[i].client_id] for i in seqs if drafts[i].client_id in by_client}

    # -- the record -----------------------------------------------------------------------------------------
    def _read_state(self, pk: str) -> ConversationState | None:
        try:
            row = self.models.conversation.get(pk, layout.META_SK, consistent_read=True)
        except self.models.conversation.DoesNotExist:
            self.cache.drop(pk)
            return None
        state = state_from_row(row)
        self.cache.put(state)
        return state

    def _change(
        self, ref: ConversationRef, change: Callable[[ConversationState], ConversationState | None], *,
        cached: bool = True,
    ) -> ConversationState:
        """Apply ``change`` to the record (None: nothing to write), conditioned on the revision it saw. A
        domain error decided from a cached copy is decided again from the record as it is."""
        pk = conversation_pk(ref)
        state = self.cache.get(pk) if cached else None
        fresh = state is None
        if state is None:
            state = self._read_state(pk)
        for attempt in range(MAX_WRITE_ATTEMPTS):
            try:
                if state is None or state.purging:
                    raise NotFoundError(f"no conversation {ref.key!r}", conversation=ref.key)
                after = change(state)
            except AgentmemError:
                if fresh:
                    raise
                state, fresh = self._read_state(pk), True
                continue
            if after is None:
                return state
            writes = WriteSet(self.models.connection)
            writes.put("meta", meta_row(self.models, after), ConversationRow.rev == state.rev, all_old=True)
            try:
                writes.commit()
            except Cancelled as cancelled:
                state = self._read_state(pk) if cancelled.contended else state_from_raw(
                    self.models, cancelled.old_item("meta"))
                fresh = True
                _backoff(attempt)
                continue
            self.cache.put(after)
            return after
        raise ConflictError(f"conversation {ref.key!r} is being changed by too many writers at once; try again")

    def get(self, ref: ConversationRef) -> ConversationRecord | None:
        state = self._read_state(conversation_pk(ref))
        return state.record() if state is not None and not state.purging else None

    def list_conversations(
        self, account_id: str, agent: str, user_id: str | None, *, include_deleted: bool = False
    ) -> list[ConversationRecord]:
        states = self._states(self._refs_with(account_id, agent, user_id))
        shown = [s for s in states if include_deleted or s.deleted_at is None]
        shown.sort(key=lambda s: (s.updated_at, s.created_at), reverse=True)
        return [s.record() for s in shown]

    def _refs_with(self, account_id: str, agent: str, user_id: str | None) -> list[ConversationRef]:
        prefix = layout.agent_conversation_sk(user_id, "")
        rows = self.models.conversation_ref.query(
            layout.agent_conversations_pk(account_id, agent), TableRow.sk.startswith(prefix), consistent_read=True
        )
        return [ConversationRef(account_id, agent, user_id, row.sk[len(prefix):]) for row in rows]

    def _states(self, refs: Iterable[ConversationRef]) -> list[ConversationState]:
        """The records of ``refs`` there are (consistent, 100 a request), not being purged, in no order."""
        keys = [(conversation_pk(ref), layout.META_SK) for ref in refs]
        states = []
        for start in range(0, len(keys), BATCH_GET):
            for row in self.models.conversation.batch_get(keys[start:start + BATCH_GET], consistent_read=True):
                state = state_from_row(row)
                if not state.purging:
                    states.append(state)
        return states

    def refs_of_user(self, account_id: str, user_id: str) -> list[ConversationRef]:
        rows = self.models.conversation_ref.query(
            layout.user_conversations_pk(account_id, user_id), TableRow.sk.startswith(layout.CONVERSATION_PREFIX),
            consistent_read=True,
        )
        refs = []
        for row in rows:
            agent, key = layout.parse_user_conversation_sk(row.sk)
            refs.append(ConversationRef(account_id, agent, user_id, key))
        return refs

    def refs_of_agent(self, account_id: str, agent: str) -> list[ConversationRef]:
        rows = self.models.conversation_ref.query(
            layout.agent_conversations_pk(account_id, agent), TableRow.sk.startswith(layout.CONVERSATION_PREFIX),
            consistent_read=True,
        )
        return [ConversationRef(account_id, agent, *layout.parse_agent_conversation_sk(row.sk)) for row in rows]

    def mark_folded(
        self, ref: ConversationRef, *, expected_folded_through: int, folded_through: int, folded_tokens: int,
        folded_messages: int, now: str, thresholds: tuple[int, int], written: CheckpointWritten | None = None,
    ) -> ConversationRecord:
        def change(state: ConversationState) -> ConversationState:
            if state.folded_through != expected_folded_through:
                raise VersionConflictError(
                    f"conversation {ref.key!r} is folded through {state.folded_through} (expected "
                    f"{expected_folded_through}): another pass moved it", current_version=state.folded_through,
                )
            after = replace(
                state, rev=state.rev + 1, updated_at=now, folded_through=folded_through,
                unfolded_tokens=max(0, state.unfolded_tokens - folded_tokens),
                unfolded_messages=max(0, state.unfolded_messages - folded_messages),
            )
            if written is not None:
                after = replace(after, passes=state.passes + 1, checkpoint_version=written.version,
                                lines_by_hand=tuple(written.lines_by_hand))
            return replace(after, due_since=(after.due_since or now) if over(after, thresholds) else None)

        return self._change(ref, change).record()

    def forget_through(self, ref: ConversationRef, seq: int, *, now: str) -> ConversationRecord:
        def change(state: ConversationState) -> ConversationState | None:
            # what was neither folded nor forgotten yet, up to seq (never past the newest message)
            mark = max(state.folded_through, state.forgotten_through)
            through = min(seq, state.last_seq)
            written = state.passes or state.checkpoint_version or state.lines_by_hand
            if through <= state.forgotten_through and not written:
                return None
            gone = self._range(state, mark + 1, through) if through > mark else []
            return replace(
                state, rev=state.rev + 1, updated_at=now, forgotten_through=max(through, state.forgotten_through),
                unfolded_tokens=max(0, state.unfolded_tokens - sum(m.tokens for m in gone)),
                unfolded_messages=max(0, state.unfolded_messages - len(gone)),
                passes=0, checkpoint_version=0, lines_by_hand=(),
            )

        return self._change(ref, change, cached=False).record()

    def delete(self, ref: ConversationRef, *, now: str) -> ConversationRecord:
        def change(state: ConversationState) -> ConversationState:
            if state.deleted_at is not None:
                raise NotFoundError(f"no conversation {ref.key!r}", conversation=ref.key)
            return replace(state, rev=state.rev + 1, deleted_at=now)

        return self._change(ref, change).record()

    def due_conversations(self, before: str, *, limit: int = 100) -> list[ConversationRecord]:
        if limit <= 0:
            return []
        due: list[ConversationState] = []
        keys: list[tuple[str, str]] = []

        def take() -> None:
            found = [state_from_row(row) for row in self.models.conversation.batch_get(keys, consistent_read=True)]
            # the index may lag the records: keep the ones still due since before ``before``
            due.extend(sorted((s for s in found if s.due_since is not None and s.due_since < before
                               and not s.purging), key=lambda s: (s.due_since or "", s.pk)))
            keys.clear()

        for key in self.models.conversation.by_due.query(
            layout.CONVERSATION_DUE, ConversationRow.due_sk < before, page_size=min(limit + 10, 1000)
        ):
            keys.append((key.pk, key.sk))
            if len(keys) == BATCH_GET:
                take()
                if len(due) >= limit:
                    break
        if keys and len(due) < limit:
            take()
        return [s.record() for s in due[:limit]]

    # -- reading the journal --------------------------------------------------------------------------------
    def messages(self, ref: ConversationRef, *, after: int, limit: int) -> list[Message]:
        if limit <= 0:
            return []
        state = self._read_state(conversation_pk(ref))
        if state is None or state.purging:
            return []
        first = max(after, 0) + 1
        return self._range(state, first, min(state.last_seq, first + limit - 1))

    def tail(self, ref: ConversationRef, count: int) -> list[Message]:
        return self._tail(ref, count)[1] if count > 0 else []

    def prefetch(self, ref: ConversationRef, count: int) -> None:
        memo = context_memo()
        key = ("record_and_tail", id(self), ref, count)
        if memo is not None and key not in memo and count > 0:
            pk = conversation_pk(ref)
            memo[key] = (self.threads.submit(partial(self._read_state, pk)),
                         self.threads.submit(partial(self._newest_rows, pk, count)))

    def record_and_tail(self, ref: ConversationRef, count: int) -> tuple[ConversationRecord | None, list[Message]]:
        """The record's GetItem and the tail's Query at once (one round), as ``tail`` sends them; or the
        answers of those ``prefetch`` sent."""
        memo = context_memo()
        ahead = memo.pop(("record_and_tail", id(self), ref, count), None) if memo is not None else None
        if ahead is not None:
            state, messages = self._cut_tail(ahead[0].result(), ahead[1].result(), count)
        else:
            state, messages = self._tail(ref, count)
        return (state.record() if state is not None and not state.purging else None), messages

    def _newest_rows(self, pk: str, count: int) -> list[Message]:
        return list(self.tail_rows.rows(pk, 1, layout.MAX_SEQ, descending=True, limit=count))

    def _tail(self, ref: ConversationRef, count: int) -> tuple[ConversationState | None, list[Message]]:
        pk = conversation_pk(ref)
        if count <= 0:
            return self._read_state(pk), []
        # the newest rows and the record at once: the rows are the tail unless it reaches sealed seqs
        newest = self.threads.submit(partial(self._newest_rows, pk, count))
        state = self._read_state(pk)
        return self._cut_tail(state, newest.result(), count)

    def _cut_tail(
        self, state: ConversationState | None, newest: Sequence[Message], count: int
    ) -> tuple[ConversationState | None, list[Message]]:
        """The last ``count`` messages by the record: the newest rows read beside it, when they are all of them."""
        rows = {m.seq: m for m in newest}
        if state is None or state.purging:
            return state, []
        wanted = range(max(1, state.last_seq - count + 1), state.last_seq + 1)
        if all(seq in rows for seq in wanted):
            return state, [rows[seq] for seq in wanted]
        return state, self._range(state, wanted.start, wanted.stop - 1)

    def _range(self, state: ConversationState, first: int, last: int) -> list[Message]:
        """Every message from ``first`` to ``last`` (within the conversation) in order: segments up to
        ``sealed_through``, rows after it, read at once."""
        for _ in range(READ_ATTEMPTS):
            if last < first:
                return []
            hot_from = max(first, state.sealed_through + 1)
            hot = self.threads.submit(partial(self.tail_rows.rows, state.pk, hot_from, last)) if hot_from <= last \
                else None
            sealed = self.archive.read(state, range(first, min(last, state.sealed_through) + 1))
            rows = hot.result() if hot is not None else []
            if [m.seq for m in rows] == list(range(hot_from, last + 1)):
                return [*sealed.values(), *rows]
            # a seal moved on and deleted rows between the record's read and the rows'
            fresh = self._read_state(state.pk)
            if fresh is None or fresh.purging:
                return []
            state = fresh
        raise ConflictError("the journal is being sealed too fast to read it; try again")

    def messages_at(self, ref: ConversationRef, seqs: Sequence[int]) -> dict[int, Message]:
        states = self._states([ref])
        if not states:
            return {}
        return self._messages_at(states[0], sorted(s for s in set(seqs) if 0 < s <= states[0].last_seq))

    def _messages_at(self, state: ConversationState, seqs: Sequence[int]) -> dict[int, Message]:
        """The messages at ``seqs`` (sorted, within the conversation): their rows, else their segments."""
        found = self.tail_rows.at(state.pk, seqs)
        missing = [seq for seq in seqs if seq not in found]
        if missing and missing[-1] > state.sealed_through:  # sealed since the record was read
            fresh = self._read_state(state.pk)
            if fresh is None or fresh.purging:
                return {}
            state = fresh
        found.update(self.archive.read(state, [seq for seq in missing if seq <= state.sealed_through]))
        return found

    def tool_messages(self, ref: ConversationRef, tool_call_id: str) -> list[Message]:
        pk = conversation_pk(ref)
        seqs = self.tail_rows.tool_call_seqs(pk, tool_call_id)
        if not seqs:
            return []
        state = self._read_state(pk)
        if state is None or state.purging:
            return []
        found = self._messages_at(state, [seq for seq in seqs if seq <= state.last_seq])
        return [m for _, m in sorted(found.items()) if m.tool_call_id == tool_call_id]

    # -- journal search -------------------------------------------------------------------------------------
    def search_candidates(
        self, account_id: str, agent: str, user_id: str | None, words: Sequence[str], *,
        conversation: str | None = None, limit: int = 200, when: TimeRange | None = None,
    ) -> list[MessageHit]:
        """With a search index: its best ``limit`` documents for the words, each read back from the journal
        and kept only if it still holds a word starting with one of ``words`` — a stale document (a purged
        conversation, or one started again under its key) is never returned — newest first. The index
        decides which documents match and which ``limit`` come back: OpenSearch matches whole words as its
        analyzer splits them (``refund`` does not find ``refunded``, nor ``lookup_refund``), and returns
        the best scored, not the newest — where the port's contract wants every message holding a word
        *starting* with a query word, newest first. Sealed messages are found (their documents stay).
        Without an index, ``_search_hot_rows``. ``when`` bounds the messages' times: a ``range`` filter on the
        documents' time, and again on each message read back (the journal's time decides)."""
        matcher = WordMatcher(words)
        if not matcher.words or limit <= 0:
            return []
        if self.index is None:
            return self._search_hot_rows(account_id, agent, user_id, matcher, conversation, limit, when)
        filters: Filters = journal_filters(account_id, agent, user_id, conversation)
        if when is not None:
            filters = {**filters, "updated_at": when}
        wanted: dict[str, set[int]] = {}
        scores: dict[tuple[str, int], float] = {}
        for hit in self.index.query(matcher.query_text(), None, filters, limit):
            where = location_of(hit.fields)
            if where is not None and (where.account_id, where.agent, where.user_id) == (account_id, agent, user_id):
                wanted.setdefault(where.key, set()).add(where.seq)
                scores[(where.key, where.seq)] = max(scores.get((where.key, where.seq), 0.0), hit.score)
        states = self._states(ConversationRef(account_id, agent, user_id, key) for key in wanted)
        read = self.threads.map(
            lambda s: self._messages_at(s, sorted(q for q in wanted[s.ref.key] if q <= s.last_seq)), states
        )
        found = [MessageHit(state.ref.key, m, scores[(state.ref.key, m.seq)])
                 for state, messages in zip(states, read, strict=True) for m in messages.values()
                 if matcher.matches(_text(m)) and (when is None or when.holds(m.created_at))]
        return best_first(found)[:limit]  # the index's relevance, newest on a tie

    def _search_hot_rows(
        self, account_id: str, agent: str, user_id: str | None, matcher: WordMatcher, conversation: str | None,
        limit: int, when: TimeRange | None = None,
    ) -> list[MessageHit]:
        """Without a search index (local AWS mode): the hot rows of the agent's conversations with that user
        — the ``FALLBACK_CONVERSATIONS`` most recently updated (or the one asked for), the newest
        ``FALLBACK_ROWS`` unsealed messages of each — matched here. Sealed messages are not searched."""
        refs = ([ConversationRef(account_id, agent, user_id, conversation)] if conversation is not None
                else self._refs_with(account_id, agent, user_id))
        states = sorted(self._states(refs), key=lambda s: s.updated_at, reverse=True)[:FALLBACK_CONVERSATIONS]

        def hot(state: ConversationState) -> list[Message]:
            first = max(state.sealed_through + 1, state.last_seq - FALLBACK_ROWS + 1)
            return self.tail_rows.rows(state.pk, first, state.last_seq)

        found = [MessageHit(state.ref.key, m, float(held))
                 for state, rows in zip(states, self.threads.map(hot, states), strict=True) for m in rows
                 if (when is None or when.holds(m.created_at)) and (held := matcher.held(_text(m)))]
        return best_first(found)[:limit]  # more query words held first, newest on a tie

    # -- sealing and purging --------------------------------------------------------------------------------
    def seal(self, ref: ConversationRef, *, keep_hot: int = 1000) -> int:
        pk = conversation_pk(ref)
        for _ in range(MAX_WRITE_ATTEMPTS):
            state = self._read_state(pk)
            if state is None or state.purging:
                return 0
            try:
                return self.sealer.seal(state, state.last_seq - max(keep_hot, 0))
            except SealRacedError:
                continue
        raise ConflictError(f"conversation {ref.key!r} is being sealed by too many runs at once; try again")

    def purge(self, ref: ConversationRef) -> int:
        pk = conversation_pk(ref)
        state = self._read_state(pk)
        for _ in range(MAX_WRITE_ATTEMPTS):
            if state is None or state.purging or self._mark_purging(state):
                break
            state = self._read_state(pk)  # changed meanwhile: purge what is there now
        objects = self.archive.remove(ref)
        items = self.tail_rows.remove_partition(pk, keep=layout.META_SK)
        if state is not None:
            removed = state.last_seq
            self._delete_record(state)
        else:  # finishing a purge that already removed the record: count what was left
            removed = max([0, *(s.last for s in map(segment_of, objects) if s),
                           *(layout.message_seq(sk) for sk in items if sk.startswith(layout.MESSAGE_PREFIX))])
        self._delete_references(ref)
        self.cache.drop(pk)
        return removed

    def _mark_purging(self, state: ConversationState) -> bool:
        """Mark the record ``purging`` (appends and seals stop, reads see no conversation); False when it
        went or was started again meanwhile."""
        writes = WriteSet(self.models.connection)
        writes.update("meta", self.models.conversation(state.pk, layout.META_SK),
                      [ConversationRow.purging.set(True), ConversationRow.rev.add(1)],
                      ConversationRow.incarnation == state.incarnation)
        try:
            writes.commit()
        except Cancelled:
            return False
        return True

    def _delete_references(self, ref: ConversationRef) -> None:
        """The references go last (until then a purge cut short is found again by refs_of_user and
        refs_of_agent), and only while there is no record: a conversation started again under the key
        meanwhile has written them anew, and keeps them."""
        writes = WriteSet(self.models.connection)
        writes.check("meta", self.models.conversation, conversation_pk(ref), layout.META_SK,
                     ConversationRow.sk.does_not_exist())
        for ref_pk, ref_sk in _reference_keys(ref):
            writes.delete(f"ref:{ref_pk}", self.models.conversation_ref(ref_pk, ref_sk))
        with suppress(Cancelled):
            writes.commit()

    def _delete_record(self, state: ConversationState) -> None:
        writes = WriteSet(self.models.connection)
        writes.delete("meta", self.models.conversation(state.pk, layout.META_SK),
                      ConversationRow.incarnation == state.incarnation)
        with suppress(Cancelled):  # already gone
            writes.commit()


def _reference_keys(ref: ConversationRef) -> list[tuple[str, str]]:
    """Where the conversation is listed: under its agent, and under its user."""
    keys = [(layout.agent_conversations_pk(ref.account_id, ref.agent),
             layout.agent_conversation_sk(ref.user_id, ref.key))]
    if ref.user_id is not None:
        keys.append((layout.user_conversations_pk(ref.account_id, ref.user_id),
                     layout.user_conversation_sk(ref.agent, ref.key)))
    return keys
