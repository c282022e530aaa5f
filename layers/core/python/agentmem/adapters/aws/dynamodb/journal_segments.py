"""Sealed journal segments: gzip JSON lines in the journal bucket, named by the seqs they hold. No I/O.

``journal/{account}/{agent}/{user, or ~ for the account}/{key}/{first:012d}-{last:012d}.jsonl.gz`` (``~`` is
no user id's character; padded seqs list in seq order). The first line is a header naming the
conversation and its *incarnation* (the id its record got when it was created); then one message per
line, every seq from ``first`` to ``last``. Gzip without a timestamp: the same messages make the same
bytes, so a seal that finds its segment already written can tell a twin from a stranger.

A segment holds at most ``SEGMENT_MAX_MESSAGES`` messages and about ``SEGMENT_MAX_BYTES`` of JSON (a
single larger message gets a segment to itself). Segments never change once written. Two seals that
stopped at different seqs may leave overlapping segments (``1-1000`` and ``1-1500``): a reader takes each
seq once, from any segment that holds it (``plan_reads``), and only up to the record's ``sealed_through``.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ....domain.conversations import ConversationRef, Message
from .conversation_rows import message_document, message_from_document

SEGMENT_MAX_MESSAGES = 1000
SEGMENT_MAX_BYTES = 1_000_000  # of JSON lines, before compression
FORMAT = "agentmem.journal/1"
NO_USER = "~"
_NAME = re.compile(r"^(\d{12})-(\d{12})\.jsonl\.gz$")


@dataclass(frozen=True)
class Segment:
    key: str
    first: int
    last: int


@dataclass(frozen=True)
class SegmentContent:
    incarnation: str
    messages: list[Message]


class SegmentFormatError(ValueError):
    """A journal object that is not a segment of ours, whole."""


def journal_prefix(ref: ConversationRef) -> str:
    user = ref.user_id if ref.user_id is not None else NO_USER
    return f"journal/{ref.account_id}/{ref.agent}/{user}/{ref.key}/"


def segment_key(ref: ConversationRef, first: int, last: int) -> str:
    return f"{journal_prefix(ref)}{first:012d}-{last:012d}.jsonl.gz"


def segment_of(key: str) -> Segment | None:
    """The segment an object key names (None for any other object)."""
    match = _NAME.match(key.rsplit("/", 1)[-1])
    if match is None:
        return None
    first, last = int(match.group(1)), int(match.group(2))
    return Segment(key, first, last) if 0 < first <= last else None


def message_line(message: Message) -> str:
    return json.dumps(message_document(message), ensure_ascii=False, separators=(",", ":"))


def encode_segment(ref: ConversationRef, incarnation: str, lines: Sequence[tuple[Message, str]]) -> bytes:
    header = {
        "format": FORMAT, "account": ref.account_id, "agent": ref.agent, "user": ref.user_id, "conversation": ref.key,
        "incarnation": incarnation, "first": lines[0][0].seq, "last": lines[-1][0].seq,
    }
    text = "\n".join([json.dumps(header, ensure_ascii=False, separators=(",", ":")), *(line for _, line in lines)])
    return gzip.compress((text + "\n").encode("utf-8"), compresslevel=6, mtime=0)


def decode_segment(data: bytes, segment: Segment) -> SegmentContent:
    try:
        # "\n" only: JSON escapes it inside strings, but not U+2028 and the other breaks splitlines() knows
        lines = gzip.decompress(data).decode("utf-8").split("\n")
        header: dict[str, Any] = json.loads(lines[0])
        messages = [message_from_document(json.loads(line)) for line in lines[1:] if line]
    except (OSError, EOFError, UnicodeDecodeError, ValueError, KeyError, TypeError, IndexError) as error:
        raise SegmentFormatError(f"{segment.key}: not a journal segment ({error})") from None
    seqs = [m.seq for m in messages]
    if header.get("format") != FORMAT or seqs != list(range(segment.first, segment.last + 1)):
        raise SegmentFormatError(f"{segment.key}: its messages are not seqs {segment.first}-{segment.last}")
    return SegmentContent(incarnation=str(header.get("incarnation")), messages=messages)


class SegmentCutter:
    """Cuts a run of messages, in seq order, into segments: ``add`` returns a segment when one is full."""

    def __init__(self, max_messages: int = SEGMENT_MAX_MESSAGES, max_bytes: int = SEGMENT_MAX_BYTES) -> None:
        self.max_messages = max_messages
        self.max_bytes = max_bytes
        self._open: list[tuple[Message, str]] = []
        self._bytes = 0

    def add(self, message: Message) -> list[tuple[Message, str]] | None:
        line = message_line(message)
        size = len(line.encode("utf-8")) + 1
        closed = None
        if self._open and (len(self._open) >= self.max_messages or self._bytes + size > self.max_bytes):
            closed = self.close()
        self._open.append((message, line))
        self._bytes += size
        return closed

    def close(self) -> list[tuple[Message, str]] | None:
        closed, self._open, self._bytes = self._open, [], 0
        return closed or None


def plan_reads(segments: Iterable[Segment], first: int, last: int, skip: set[str] | None = None) -> list[Segment]:
    """Segments that together hold every seq from ``first`` to ``last``, each taken from the segment that
    reaches furthest; stops at the first seq no segment holds (the caller lists again or fails)."""
    usable = sorted((s for s in segments if not skip or s.key not in skip), key=lambda s: (s.first, s.last))
    plan: list[Segment] = []
    at, scanned = first, 0
    best: Segment | None = None  # of the segments starting at or before ``at``, the one reaching furthest
    while at <= last:
        while scanned < len(usable) and usable[scanned].first <= at:
            if best is None or usable[scanned].last > best.last:
                best = usable[scanned]
            scanned += 1
        if best is None or best.last < at:
            break
        plan.append(best)
        at = best.last + 1
    return plan
