"""The word rules of SPEC §6.1, as a pure ranking over candidate entries.

An entry matches when its name, description or content holds any query word
(a query word also matches the longer words it starts), or when its name or
description holds the whole query. Ranking, best first:

1. more distinct query words held (anywhere);
2. more of them held in the name or description;
3. the whole query found in the name or description;
4. higher importance, then newest.

Stores may pre-filter candidates any way they like (FTS, a layer query) as
long as they return every entry that can match; this module decides.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from .models import Entry

_WORD = re.compile(r"[^\W_]+")


def query_words(query: str) -> list[str]:
    """Distinct lower-cased words of a query, in order."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(query.lower()):
        seen.setdefault(word, None)
    return list(seen)


def _prefix_pattern(words: list[str]) -> re.Pattern[str]:
    # A query word matches at the start of a word of the text: not preceded by a letter or digit.
    alternatives = "|".join(sorted((re.escape(w) for w in words), key=len, reverse=True))
    return re.compile(rf"(?<![^\W_])(?:{alternatives})")


@dataclass(frozen=True)
class Ranked:
    entry: Entry
    score: float


class Query:
    """A compiled search query; ``rank`` scores candidate entries."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.whole = " ".join(text.lower().split())
        self.words = query_words(text)
        self._pattern = _prefix_pattern(self.words) if self.words else None

    def held(self, text: str) -> set[str]:
        """The query words ``text`` holds (a query word also matches the longer words it starts)."""
        if self._pattern is None or not text:
            return set()
        found = set()
        lowered = text.lower()
        for match in self._pattern.finditer(lowered):
            start = match.start()
            # the alternation picked one word; more than one query word may start here
            for word in self.words:
                if lowered.startswith(word, start):
                    found.add(word)
        return found

    def score(self, entry: Entry) -> float | None:
        """The entry's score, or None when it does not match."""
        meta = f"{entry.name}\n{entry.description}"
        in_meta = self.held(meta)
        # name words are split on . _ - as well ("refund-policy" holds "policy")
        in_content = self.held(entry.content or "") - in_meta
        whole = bool(self.whole) and self.whole in meta.lower()
        held = len(in_meta) + len(in_content)
        if not held and not whole:
            return None
        n = max(len(self.words), 1)
        # lexicographic order folded into one number: held words dominate, then meta words, then whole.
        return held + 0.5 * len(in_meta) / n + (0.25 / n if whole else 0.0)

    def rank(self, candidates: Iterable[Entry], limit: int) -> list[Ranked]:
        scored = []
        for entry in candidates:
            score = self.score(entry)
            if score is not None:
                scored.append(Ranked(entry, round(score, 4)))
        # two stable sorts: newest first, then by score and importance
        scored.sort(key=lambda r: r.entry.updated_at, reverse=True)
        scored.sort(key=lambda r: (-r.score, -r.entry.importance))
        return scored[:limit]
