"""Sealing: the older part of a hot tail moves into journal segments, crash-safe, in three steps.

1. the rows are read (``CHUNK_SEQS`` a Query, a few at once), cut into segments (``SegmentCutter``) and each
   segment written create-only; sealed tool rows get a pointer (so ``tool_messages`` still finds them);
2. the record's ``sealed_through`` moves, conditioned on where this seal found it (one UpdateItem, sent as a
   transaction so a conflict returns the record as it is);
3. the rows are deleted in batches.

Readers go by ``sealed_through``: before step 2 they read the rows, after it the segments, so no seq is
ever read twice or missed. Cut short before step 2, a seal leaves segments nobody reads; the next one finds
them written (``JournalArchive.write`` checks they hold the same messages) and goes on. Cut short in step 3,
it leaves rows the next seal deletes first (``HotTail.sealed_leftovers``). Two seals at once: the one whose
step 2 lands second finds ``sealed_through`` moved — past its own end, it stops; short of it, it moves it on
from there (its segments hold every seq after it).
"""

from __future__ import annotations

import random
import time
from concurrent.futures import Future
from functools import partial
from typing import cast

from pynamodb.expressions.condition import Condition

from ....domain.conversations import Message
from ....domain.errors import ConflictError
from . import layout
from .conversation_rows import ConversationState, state_from_raw
from .hot_tail import HotTail
from .journal_archive import JournalArchive
from .journal_segments import SegmentCutter
from .models import BoundModels, ConversationRow
from .transactions import Cancelled, WriteSet

MARK_ATTEMPTS = 20


class SealRacedError(Exception):
    """Another seal deleted rows this one was reading: start again from the record."""


class JournalSealer:
    def __init__(self, models: BoundModels, tail: HotTail, archive: JournalArchive) -> None:
        self.models = models
        self.tail = tail
        self.archive = archive

    def seal(self, state: ConversationState, last: int) -> int:
        """Seal seqs ``state.sealed_through + 1`` to ``last``; returns how many this call sealed (0 when
        another seal got there first or the conversation is going). Raises SealRacedError."""
        self.tail.delete(state.pk, self.tail.sealed_leftovers(state))
        first = state.sealed_through + 1
        if last < first:
            return 0
        written = self._write_segments(state, first, last)
        marked_from = self._mark(state, last, written)
        if marked_from is None:
            return 0
        self.tail.delete(state.pk, range(first, last + 1))
        return last - marked_from

    def _write_segments(self, state: ConversationState, first: int, last: int) -> list[str]:
        """Step 1; returns the keys of the segments this call created."""
        cutter = SegmentCutter()
        writing: list[Future[tuple[str, bool]]] = []
        tools: list[Message] = []
        expected = first
        for chunk in self.tail.chunks(state.pk, first, last):
            for message in chunk:
                if message.seq != expected:
                    raise SealRacedError(f"seq {expected} left the hot tail while it was being sealed")
                expected += 1
                if message.tool_call_id is not None:
                    tools.append(message)
                closed = cutter.add(message)
                if closed:
                    writing.append(self.tail.threads.submit(partial(self.archive.write, state, closed)))
        if expected != last + 1:
            raise SealRacedError(f"seq {expected} left the hot tail while it was being sealed")
        rest = cutter.close()
        if rest:
            writing.append(self.tail.threads.submit(partial(self.archive.write, state, rest)))
        created = [key for key, new in (w.result() for w in writing) if new]
        if tools:
            self.tail.point_to_tool_rows(state.pk, tools)
        return created

    def _mark(self, state: ConversationState, last: int, written: list[str]) -> int | None:
        """Step 2; returns where it moved ``sealed_through`` from. None when another seal sealed as far, or
        the conversation is being purged or was started again (the segments this call created are then
        removed: nobody will read them)."""
        through = state.sealed_through
        for attempt in range(MARK_ATTEMPTS):
            writes = WriteSet(self.models.connection)
            writes.update("meta", self.models.conversation(state.pk, layout.META_SK),
                          [ConversationRow.sealed_through.set(last), ConversationRow.rev.add(1)],
                          _where_it_was(state.incarnation, through), all_old=True)
            try:
                writes.commit()
            except Cancelled as cancelled:
                if cancelled.contended:  # appends kept the record busy: nothing failed, try again
                    time.sleep(random.uniform(0, 0.01 * (attempt + 1)))
                    continue
                now = state_from_raw(self.models, cancelled.old_item("meta"))
            else:
                self.archive.forget_listing(state.ref)
                return through
            if now is None or now.purging or now.incarnation != state.incarnation:
                self.archive.discard(written)
                return None
            if now.sealed_through >= last:
                return None  # another seal sealed as far or further: it deletes the rows
            through = now.sealed_through
        raise ConflictError(f"conversation {state.ref.key!r} is being sealed by too many runs at once; try again")


def _where_it_was(incarnation: str, through: int) -> Condition:
    return cast(Condition, (ConversationRow.incarnation == incarnation) & ConversationRow.purging.does_not_exist()
                & (ConversationRow.sealed_through == through))
