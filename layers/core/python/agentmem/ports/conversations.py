from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..domain.clock import TimeRange
from ..domain.conversations import (
    AppendResult,
    CheckpointWritten,
    ConversationRecord,
    ConversationRef,
    Message,
    MessageDraft,
)


@dataclass(frozen=True)
class MessageHit:
    """A journal search candidate: the message, its conversation, and the store's keyword score (BM25 or the
    index's own: higher is better; only its order within one answer means anything)."""

    conversation: str
    message: Message
    score: float = 0.0


class ConversationStore(ABC):
    """Conversation records and their journals (SPEC §4.1).

    ``append`` is atomic and durable before it returns: the drafts get the seqs after the newest,
    contiguous (no gap, no reordering, whatever runs concurrently), a user message opens a new turn,
    and a draft whose ``client_id`` the conversation already holds is not stored again: the stored
    message comes back in its place (idempotent retries). The record's ``last_seq``, ``last_turn`` and
    unfolded counters move in the same write, and the record is created by the first append.
    """

    @abstractmethod
    def append(
        self, ref: ConversationRef, drafts: Sequence[MessageDraft], *, now: str, surface: str,
        thresholds: tuple[int, int], window_messages: int | None = None,
    ) -> AppendResult:
        """Store the messages; ``window_messages`` (when given) becomes the conversation's setting.

        ``thresholds`` (tokens, messages): when the unfolded counters go over either, the record's
        ``due_since`` is set to ``now`` (kept if already set), which ``due_conversations`` finds."""

    @abstractmethod
    def get(self, ref: ConversationRef) -> ConversationRecord | None:
        """The record (deleted or not); None when there never was one or it was purged."""

    @abstractmethod
    def list_conversations(
        self, account_id: str, agent: str, user_id: str | None, *, include_deleted: bool = False
    ) -> list[ConversationRecord]:
        """The agent's conversations with ``user_id`` (None: with the account), newest first."""

    @abstractmethod
    def messages(self, ref: ConversationRef, *, after: int, limit: int) -> list[Message]:
        """Messages with seq > ``after``, in order, at most ``limit``: the journal read back whole."""

    def messages_at(self, ref: ConversationRef, seqs: Sequence[int]) -> dict[int, Message]:
        """The messages of these seqs that exist, by seq (recall's re-check of its semantic candidates). The
        default reads them one by one; a store that can read many at once overrides it."""
        found = {}
        for seq in sorted(set(seqs)):
            page = self.messages(ref, after=seq - 1, limit=1) if seq > 0 else []
            if page and page[0].seq == seq:
                found[seq] = page[0]
        return found

    def messages_of(self, account_id: str, agent: str, user_id: str | None,
                    wanted: Mapping[str, Sequence[int]]) -> dict[tuple[str, int], Message]:
        """The messages of these seqs of these conversations (by key) of one agent and user that exist, by
        (conversation, seq): ``messages_at`` of each conversation, which is what the default does; a store that
        can read them all at once overrides it."""
        found: dict[tuple[str, int], Message] = {}
        for key, seqs in wanted.items():
            for seq, message in self.messages_at(ConversationRef(account_id, agent, user_id, key), seqs).items():
                found[(key, seq)] = message
        return found

    @abstractmethod
    def tail(self, ref: ConversationRef, count: int) -> list[Message]:
        """The newest ``count`` messages, in order (what the window is cut from)."""

    def prefetch(self, ref: ConversationRef, count: int) -> None:
        """Inside a context build (``EntryStore.context_reads``): the ``record_and_tail(ref, count)`` about to
        come, known before the build reads it, so a store whose reads wait on the network can send them now
        and answer that call from them. The default reads nothing ahead."""
        return None

    def record_and_tail(self, ref: ConversationRef, count: int) -> tuple[ConversationRecord | None, list[Message]]:
        """The record (as ``get``) and, when there is one, its newest ``count`` messages (as ``tail``): what a
        context build reads of its conversation. The default reads one after the other; a store whose reads
        wait on the network reads both at once."""
        record = self.get(ref)
        return record, self.tail(ref, count) if record is not None else []

    @abstractmethod
    def tool_messages(self, ref: ConversationRef, tool_call_id: str) -> list[Message]:
        """The tool_call and tool_result rows carrying ``tool_call_id``, in order."""

    def word_counts(self, words: Sequence[str]) -> tuple[int, dict[str, int]]:
        """How many messages the journals' word index holds, and how many of them hold each of ``words`` (its
        stem), when this store can count them at little cost (from its index's vocabulary): what recall reads
        a word's weight from. The default counts nothing: ``(0, {})``."""
        return 0, {}

    @abstractmethod
    def search_candidates(
        self, account_id: str, agent: str, user_id: str | None, words: Sequence[str], *,
        conversation: str | None = None, limit: int = 200, when: TimeRange | None = None,
    ) -> list[MessageHit]:
        """Messages of the agent's conversations with ``user_id`` (one ``conversation`` when given) that
        hold a word starting with one of ``words`` (or one of its stems) — the ``limit`` most relevant, best
        first, chosen by relevance (BM25), never by recency; the domain ranks them. With ``when``, only the
        messages whose ``created_at`` is within it, chosen among those (never filtered after the choice)."""

    @abstractmethod
    def mark_folded(
        self, ref: ConversationRef, *, expected_folded_through: int, folded_through: int, folded_tokens: int,
        folded_messages: int, now: str, thresholds: tuple[int, int], written: CheckpointWritten | None = None,
    ) -> ConversationRecord:
        """A summary pass folded the messages up to ``folded_through``: move the mark and take what it
        folded off the unfolded counters, only if the mark is still at ``expected_folded_through``
        (VersionConflictError otherwise: another pass moved it). ``due_since`` is cleared when the
        counters are back under ``thresholds``. With ``written`` (what the pass wrote to the checkpoint),
        in the same write: ``passes`` goes up by one, ``checkpoint_version`` and ``lines_by_hand`` become
        its own."""

    @abstractmethod
    def forget_through(self, ref: ConversationRef, seq: int, *, now: str) -> ConversationRecord:
        """The checkpoint was deleted: no pass summarises messages up to ``seq`` again (the mark only
        ever moves forward), and they leave the unfolded counters; ``passes``, ``checkpoint_version`` and
        ``lines_by_hand`` start again from nothing."""

    @abstractmethod
    def delete(self, ref: ConversationRef, *, now: str) -> ConversationRecord:
        """Remove the record from the listing; its journal stays (NotFoundError when there is none)."""

    @abstractmethod
    def purge(self, ref: ConversationRef) -> int:
        """Remove the record and the whole journal (index documents too); returns the messages removed."""

    @abstractmethod
    def refs_of_user(self, account_id: str, user_id: str) -> list[ConversationRef]:
        """Every conversation (any agent, deleted or not) with that user: what erasing a user removes."""

    @abstractmethod
    def refs_of_agent(self, account_id: str, agent: str) -> list[ConversationRef]:
        """Every conversation of the agent, with anyone: what purging the agent removes."""

    def seal(self, ref: ConversationRef, *, keep_hot: int = 1000) -> int:
        """Move all but the newest ``keep_hot`` messages out of the hot store into compressed journal
        segments, crash-safe (a segment is written create-only, and only then are its rows marked
        sealed); returns how many were sealed. Stores without a hot tail have nothing to do."""
        return 0

    @abstractmethod
    def due_conversations(self, before: str, *, limit: int = 100) -> list[ConversationRecord]:
        """Conversations of every account over their threshold since before ``before`` (``due_since``),
        oldest first: the ones a pass should have folded by now (the scheduled sweep's work)."""
