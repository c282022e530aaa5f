"""Long messages as passages (SPEC §6.2): the one rule, on both backends, for where a message is cut. Pure.

A message of thousands of characters embedded whole is one blurred vector, and the paragraph a question asks
about drowns in the rest. So a message longer than ``PASSAGE_CHARS`` is searched by its *passages*: a few
sentences each, the next one starting with the last sentence of the one before (``OVERLAP_CHARS``), so that a
statement cut at a boundary is still whole in one of them. A message that short is one passage, itself.

Where a passage may end, best first:

- after a sentence (``.``, ``!``, ``?`` or ``…`` then a space) or at the end of a line;
- a fenced code block (``````` … ```````) is kept whole when it fits in a passage, else cut between its lines;
- a list item or any other line is never cut inside, unless it alone is longer than a passage: then between
  two words (and only a run of ``PASSAGE_CHARS`` characters without a space is cut anywhere).

A passage is ``(start, end)``, offsets into the original text (Python string indices, code points):
``text[start:end]`` is what it says, without the spaces and blank lines between two passages.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

PASSAGE_CHARS = 600  # a passage's most characters: a few sentences, a short list or a small code block
OVERLAP_CHARS = 160  # the next passage starts with the sentences that end the last one, up to this long
# a message up to this long is one passage (a passage and a short tail are not worth cutting in two)
WHOLE_CHARS = PASSAGE_CHARS + PASSAGE_CHARS // 4
MAX_PASSAGES = 64  # the most passages of one message; beyond, the last one runs to the end of the text

_FENCE = re.compile(r"[ \t]*(```|~~~)")
# a sentence ends at ".", "!", "?" or "…" before a space; not the "." of a list's number ("2. ")
_SENTENCE_END = re.compile(r"(?<![\s*#(]\d)(?<![\s*#(]\d\d)[.!?…][\"'”’)\]]*\s+")


@dataclass(frozen=True, order=True)
class Passage:
    start: int
    end: int

    def of(self, text: str) -> str:
        return text[self.start : self.end]


def passages(text: str, *, size: int = PASSAGE_CHARS, overlap: int = OVERLAP_CHARS,
             whole: int | None = None) -> list[Passage]:
    """The passages of ``text``, in order: one (the whole text) when it is at most ``whole`` characters."""
    whole = WHOLE_CHARS if whole is None else whole
    if len(text) <= max(whole, size):
        return [Passage(0, len(text))]
    return list(_cut(text, size, overlap))


@lru_cache(maxsize=4096)
def _cut(text: str, size: int, overlap: int) -> tuple[Passage, ...]:
    """A long text's passages (kept for the texts cut lately: a search cuts the messages it shows, and cuts
    them again for the next page)."""
    units = _units(text, size)
    if not units:
        return (Passage(0, len(text)),)
    found: list[Passage] = []
    first = 0
    while first < len(units):
        last = first
        while last + 1 < len(units) and units[last + 1][1] - units[first][0] <= size:
            last += 1
        if len(found) == MAX_PASSAGES - 1:
            last = len(units) - 1
        found.append(Passage(units[first][0], units[last][1]))
        if last == len(units) - 1:
            break
        # the next passage starts with the units that end this one, as many as fit in ``overlap``
        following = last + 1
        while following - 1 > first and units[last][1] - units[following - 1][0] <= overlap:
            following -= 1
        first = following
    return tuple(found)


def _units(text: str, size: int) -> list[tuple[int, int]]:
    """The pieces no passage cuts: sentences, lines, whole code blocks; each at most ``size`` long."""
    units: list[tuple[int, int]] = []
    lines = _lines(text)
    at = 0
    while at < len(lines):
        start, end = lines[at]
        if _FENCE.match(text, start, end):
            fence = text[start:end].strip()[:3]
            close = at + 1
            while close < len(lines) and not text[lines[close][0] : lines[close][1]].strip().startswith(fence):
                close += 1
            close = min(close, len(lines) - 1)
            block = lines[at : close + 1]
            if block[-1][1] - block[0][0] <= size:
                units.append((block[0][0], block[-1][1]))
            else:
                for line in block:
                    units += _fit(text, *line, size)
            at = close + 1
            continue
        units += [piece for sentence in _sentences(text, start, end) for piece in _fit(text, *sentence, size)]
        at += 1
    return [(s, e) for s, e in units if text[s:e].strip()]


def _lines(text: str) -> list[tuple[int, int]]:
    """Each non-blank line's (start, end), without its line break."""
    found = []
    start = 0
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        if body.strip():
            found.append((start, start + len(body)))
        start += len(line)
    return found


def _sentences(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The sentences of one line, each without the spaces after it."""
    found = []
    at = start
    for match in _SENTENCE_END.finditer(text, start, end):
        stop = match.end()
        body_end = stop - (len(match.group(0)) - len(match.group(0).rstrip()))
        found.append((at, body_end))
        at = stop
    if at < end:
        found.append((at, end))
    return found


def _fit(text: str, start: int, end: int, size: int) -> list[tuple[int, int]]:
    """A piece longer than ``size`` cut between two words (anywhere when it has no space)."""
    pieces = []
    while end - start > size:
        cut = text.rfind(" ", start + 1, start + size)
        cut = cut if cut > start else start + size
        pieces.append((start, cut))
        start = cut
        while start < end and text[start] == " ":
            start += 1
    if start < end:
        pieces.append((start, end))
    return pieces


def long_passages(text: str) -> list[Passage]:
    """The passages a long ``text`` is searched by besides its whole (each index holds them, the re-ranking
    stage reads them); none when it is one passage, its whole."""
    found = passages(text)
    return found if len(found) > 1 else []


def best_passage(text: str, held: Sequence[tuple[int, str]], near: Passage | None = None, *,
                 cut: Sequence[Passage] | None = None) -> Passage | None:
    """The passage of a long ``text`` a search hit shows: the one holding most distinct query words (``held``:
    where ``text`` holds which, ``Query.held_at``), the passage the semantic side found nearest (``near``,
    offsets into ``text``) winning a tie and worth half a word; the first on a tie still. None when ``text`` is
    one passage (its snippet is a window around the first word found). ``cut``: ``long_passages(text)``, when
    the caller has it already."""
    found = long_passages(text) if cut is None else cut
    if not found:
        return None

    def worth(passage: Passage) -> float:
        words = len({word for at, word in held if passage.start <= at < passage.end})
        overlap = 0 if near is None else min(passage.end, near.end) - max(passage.start, near.start)
        return words + (0.5 if near is not None and overlap > (near.end - near.start) // 2 else 0.0)

    return max(found, key=lambda p: (worth(p), -p.start))
