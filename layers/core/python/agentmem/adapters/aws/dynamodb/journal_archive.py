"""The sealed part of the journals: segments in the journal bucket, read, written and removed.

Reads list a conversation's prefix once (the listing is kept until it no longer holds a seq asked for:
segments are only ever added) and fetch the segments they need at once, keeping the last few decoded.
A segment whose header names another incarnation (a leftover of a conversation purged under the same key)
or that is gone is skipped for another that holds the same seqs; the record's ``sealed_through`` guarantees
one exists.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

from ....domain.conversations import ConversationRef, Message
from ....ports.blobs import BlobExistsError, BlobNotFoundError, BlobStore
from .conversation_rows import ConversationState, conversation_pk
from .io_threads import IoThreads
from .journal_segments import (
    Segment,
    SegmentContent,
    SegmentFormatError,
    decode_segment,
    encode_segment,
    journal_prefix,
    plan_reads,
    segment_key,
    segment_of,
)

SEGMENTS_CACHED = 8
LISTINGS_CACHED = 256
READ_ATTEMPTS = 3


class JournalReadError(RuntimeError):
    """Sealed seqs that no segment in the journal bucket holds (objects were lost), or a segment that
    disagrees with the rows it was cut from."""


def seq_runs(seqs: Sequence[int]) -> list[tuple[int, int]]:
    """Sorted seqs as (first, last) runs of consecutive numbers."""
    runs: list[tuple[int, int]] = []
    for seq in seqs:
        if runs and runs[-1][1] == seq - 1:
            runs[-1] = (runs[-1][0], seq)
        else:
            runs.append((seq, seq))
    return runs


class JournalArchive:
    def __init__(self, bucket: BlobStore, threads: IoThreads) -> None:
        self.bucket = bucket
        self.threads = threads
        self._decoded: OrderedDict[str, SegmentContent] = OrderedDict()
        self._listings: OrderedDict[str, list[Segment]] = OrderedDict()
        self._lock = threading.Lock()

    # -- reading ----------------------------------------------------------------------------------------
    def read(self, state: ConversationState, seqs: Sequence[int]) -> dict[int, Message]:
        """The sealed messages at ``seqs`` (sorted, none above ``state.sealed_through``), by seq."""
        if not seqs:
            return {}
        runs = seq_runs(seqs)
        skip: set[str] = set()
        for attempt in range(READ_ATTEMPTS):
            plan = self._plan(state.ref, runs, skip, refresh=attempt > 0)
            if plan is None:
                continue
            fetched = self.threads.map(lambda s: self._fetch(s, state.incarnation), list(plan.values()))
            contents = dict(zip(plan, fetched, strict=True))
            strangers = {key for key, c in contents.items() if c is None or c.incarnation != state.incarnation}
            if strangers:
                skip |= strangers
                continue
            wanted = set(seqs)
            found: dict[int, Message] = {}
            for content in contents.values():
                assert content is not None
                found.update((m.seq, m) for m in content.messages if m.seq in wanted)
            return dict(sorted(found.items()))
        raise JournalReadError(
            f"conversation {state.ref.key!r}: sealed messages {seqs[0]}-{seqs[-1]} are in no journal segment"
        )

    def _plan(self, ref: ConversationRef, runs: list[tuple[int, int]], skip: set[str], *, refresh: bool,
              ) -> dict[str, Segment] | None:
        """The segments holding every run, or None when the listing does not."""
        listing = self._listing(ref, refresh=refresh)
        plan: dict[str, Segment] = {}
        for first, last in runs:
            chain = plan_reads(listing, first, last, skip)
            if not chain or chain[-1].last < last:
                return None
            plan.update((s.key, s) for s in chain)
        return plan

    def _listing(self, ref: ConversationRef, *, refresh: bool) -> list[Segment]:
        pk = conversation_pk(ref)
        with self._lock:
            cached = self._listings.get(pk)
        if cached is not None and not refresh:
            return cached
        listing = self.segments(ref)
        with self._lock:
            self._listings[pk] = listing
            self._listings.move_to_end(pk)
            while len(self._listings) > LISTINGS_CACHED:
                self._listings.popitem(last=False)
        return listing

    def segments(self, ref: ConversationRef) -> list[Segment]:
        """Every segment under the conversation's prefix (one LIST request per 1,000)."""
        return [s for s in (segment_of(info.key) for info in self.bucket.list(journal_prefix(ref))) if s]

    def _fetch(self, segment: Segment, incarnation: str) -> SegmentContent | None:
        with self._lock:
            cached = self._decoded.get(segment.key)
            if cached is not None and cached.incarnation == incarnation:
                self._decoded.move_to_end(segment.key)
                return cached
        try:
            content = decode_segment(self.bucket.get(segment.key), segment)
        except (BlobNotFoundError, SegmentFormatError):
            return None
        if content.incarnation == incarnation:
            with self._lock:
                self._decoded[segment.key] = content
                while len(self._decoded) > SEGMENTS_CACHED:
                    self._decoded.popitem(last=False)
        return content

    # -- writing ----------------------------------------------------------------------------------------
    def write(self, state: ConversationState, lines: Sequence[tuple[Message, str]]) -> tuple[str, bool]:
        """Write one segment create-only; returns its key and whether this call created it.

        Found already written: by a seal of this conversation (the same messages: fine), or as a leftover of
        a conversation purged under the same key (another incarnation: replaced)."""
        first, last = lines[0][0].seq, lines[-1][0].seq
        segment = Segment(segment_key(state.ref, first, last), first, last)
        data = encode_segment(state.ref, state.incarnation, lines)
        for _ in range(READ_ATTEMPTS):
            try:
                self.bucket.put(segment.key, data, if_none_match=True)
                return segment.key, True
            except BlobExistsError:
                pass
            try:
                existing = self.bucket.get(segment.key)
            except BlobNotFoundError:
                continue  # removed meanwhile: try the create again
            if existing == data:
                return segment.key, False
            try:
                content: SegmentContent | None = decode_segment(existing, segment)
            except SegmentFormatError:
                content = None
            if content is not None and content.incarnation == state.incarnation:
                if content.messages != [m for m, _ in lines]:
                    raise JournalReadError(f"{segment.key} holds other messages than the journal's rows")
                return segment.key, False
            self.bucket.put(segment.key, data)
            return segment.key, True
        raise JournalReadError(f"{segment.key} keeps appearing and disappearing; try again")

    def discard(self, keys: Sequence[str]) -> None:
        self.threads.map(self.bucket.delete, keys)

    def remove(self, ref: ConversationRef) -> list[str]:
        """Delete every object under the conversation's prefix; returns their keys."""
        keys = [info.key for info in self.bucket.list(journal_prefix(ref))]
        self.discard(keys)
        self.forget(ref)
        return keys

    def forget_listing(self, ref: ConversationRef) -> None:
        with self._lock:
            self._listings.pop(conversation_pk(ref), None)

    def forget(self, ref: ConversationRef) -> None:
        prefix = journal_prefix(ref)
        with self._lock:
            self._listings.pop(conversation_pk(ref), None)
            for key in [k for k in self._decoded if k.startswith(prefix)]:
                del self._decoded[key]
