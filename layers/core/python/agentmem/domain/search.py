"""The word rules of SPEC §6.1, as a pure ranking over candidate entries.

An entry matches when its name, description or content holds any query word (a query word also matches
the longer words it starts, and every word of its stem: ``refunding`` finds ``refund``), or when its name
or description holds the whole query. Stop words ("when", "did") are not query words unless the query has
nothing else (``domain/text.py``). Ranking, best first:

1. more distinct query words held (anywhere);
2. more of them held in the name or description;
3. the whole query found in the name or description;
4. BM25 over the searched layers, name (×3) and description (×2) above content: rarer words, held more
   often in shorter entries, rank higher;
5. higher importance, then newest, then name (a stable order).

Each step is worth less than one notch of the step before, so the order is lexicographic; the score is
that one number. Stores may pre-filter candidates any way they like (FTS, a layer query) as long as they
return every entry that can match; this module decides.
"""

from __future__ import annotations

import math
import re
import threading
from bisect import bisect_left
from collections import Counter, OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .errors import InvalidError
from .models import Entry
from .text import query_words, stem, words

FIELD_WEIGHTS = {"name": 3.0, "description": 2.0, "content": 1.0}
PREFIX_WEIGHT = 0.5  # a word the query word only starts ("ref" → "refund") counts half a stem match
K1 = 1.2
B = 0.75


MAX_QUERY = 1000


def check_query(query: object, field: str = "q") -> str:
    """A search query: at least one character that is not a space, at most 1,000 characters."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidError(f"{field} (the query) must hold at least one word", field=field)
    if len(query) > MAX_QUERY:
        raise InvalidError(f"{field} (the query) is longer than 1,000 characters", field=field)
    return query


@dataclass(frozen=True)
class Ranked:
    entry: Entry
    score: float


def bm25_weight(tf: float, length: float, average: float, df: int, total: int) -> float:
    """One term's BM25 weight in one document (Robertson–Spärck Jones idf, never negative)."""
    if tf <= 0:
        return 0.0
    idf = math.log(1.0 + (total - df + 0.5) / (df + 0.5))
    norm = K1 * (1.0 - B + B * length / average) if average > 0 else K1
    return idf * tf * (K1 + 1.0) / (tf + norm)


class _Field:
    """One field of one entry, as the ranking reads it: how often each stem occurs, and its distinct words in
    order with their stems (for the prefix rule, found by bisection)."""

    __slots__ = ("length", "stems", "word_stems", "words")

    def __init__(self, text: str) -> None:
        raw = words(text)
        self.length = len(raw)
        self.stems = Counter(stem(w) for w in raw)
        self.words = sorted(set(raw))
        self.word_stems = [stem(w) for w in self.words]

    def tf(self, word: str, term: str) -> float:
        count = float(self.stems.get(term, 0))
        listed = self.words
        at = bisect_left(listed, word)
        end = len(listed)
        while at < end and listed[at].startswith(word):
            if self.word_stems[at] != term:  # a longer word it starts, not one of its stem's
                count += PREFIX_WEIGHT
            at += 1
        return count


_WEIGHTS = (FIELD_WEIGHTS["name"], FIELD_WEIGHTS["description"], FIELD_WEIGHTS["content"])
_NO_COUNTS = (0, 0, 0)


class _Analysed:
    """One entry's fields, analysed once per version (``analysed`` keeps the latest few thousand).

    For the scoring loop, the three fields merged: each stem's count in (name, description, content), and
    the distinct words of all three in order, each with its stem and the fields that hold it, so one
    bisection per query word finds the longer words it starts in every field."""

    __slots__ = ("counts", "length", "meta", "word_fields", "word_stems", "words")

    def __init__(self, name: str, description: str, content: str) -> None:
        parts = (_Field(name), _Field(description), _Field(content))  # read here only: the cache keeps the merge
        self.length = sum(weight * part.length for weight, part in zip(_WEIGHTS, parts, strict=True))
        self.meta = f"{name}\n{description}".lower()  # where the whole query may be found
        self.counts: dict[str, tuple[int, int, int]] = {
            term: (parts[0].stems.get(term, 0), parts[1].stems.get(term, 0), parts[2].stems.get(term, 0))
            for term in {t for part in parts for t in part.stems}
        }
        held: dict[str, list[int]] = {}
        stems: dict[str, str] = {}  # each field stemmed its words already
        for at, part in enumerate(parts):
            for word, word_stem in zip(part.words, part.word_stems, strict=True):
                held.setdefault(word, []).append(at)
                stems[word] = word_stem
        self.words = sorted(held)
        self.word_stems = [stems[w] for w in self.words]
        self.word_fields = [tuple(held[w]) for w in self.words]


_ANALYSED: OrderedDict[tuple[str, ...], _Analysed] = OrderedDict()
_ANALYSED_MAX = 50_000
_ANALYSING = threading.Lock()


def _analysis(key: tuple[str, ...], name: str, description: str, content: str) -> _Analysed:
    with _ANALYSING:
        found = _ANALYSED.get(key)
        if found is not None:
            _ANALYSED.move_to_end(key)
            return found
    made = _Analysed(name, description, content)
    with _ANALYSING:
        _ANALYSED[key] = made
        while len(_ANALYSED) > _ANALYSED_MAX:
            _ANALYSED.popitem(last=False)
    return made


def analysed(entry: Entry) -> _Analysed:
    """The entry's analysis, from a bounded cache keyed by what it is made from (an entry's text changes only
    with its version, so most searches analyse nothing)."""
    content = entry.content or ""
    key = (entry.memory or "", entry.user_id or "", entry.name, entry.description, entry.content_hash or content)
    return _analysis(key, entry.name, entry.description, content)


def warm(memory: str, user_key: str, name: str, description: str, content: str, content_hash: str) -> None:
    """Analyse an entry version ahead of its first search (the indexer does, as it reads each change)."""
    _analysis((memory, user_key, name, description, content_hash or content), name, description, content)


class Query:
    """A compiled search query; ``rank`` scores candidate entries."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.whole = " ".join(text.lower().split())
        self.words = query_words(text)
        self.terms = [stem(w) for w in self.words]
        self._pairs = list(zip(self.words, self.terms, strict=True))
        self._starts: re.Pattern[str] | None = None  # held_at's pattern, made on its first use

    def held(self, text: str) -> set[str]:
        """The query words ``text`` holds: its stem, or a word it starts."""
        if not self.words or not text:
            return set()
        field = _Field(text)
        return {word for word, term in zip(self.words, self.terms, strict=True) if field.tf(word, term) > 0}

    def held_at(self, text: str) -> list[tuple[int, str]]:
        """Where ``text`` holds a query word, as ``held`` reads it (its stem, or a word it starts): the offset of
        each word of ``text`` that does, and the query word."""
        found: list[tuple[int, str]] = []
        if not self.words:
            return found
        by_term = {term: word for word, term in reversed(self._pairs)}  # the first query word of a stem
        by_word = {word: word for word in self.words}
        lengths = sorted({len(word) for word in self.words})
        seen: dict[str, str | None] = {}  # a token read before: its query word (tokens repeat)
        if self._starts is None:  # the words that start with a query word or its stem: the only ones to read
            starts = sorted({*self.words, *self.terms}, key=len, reverse=True)
            self._starts = re.compile(r"(?<![^\W_])(?:" + "|".join(map(re.escape, starts)) + r")[^\W_]*",
                                      re.IGNORECASE)
        for match in self._starts.finditer(text):
            token = match.group().lower()
            if token not in seen:
                held = by_term.get(stem(token))
                if held is None:
                    held = next((by_word[token[:n]] for n in lengths if token[:n] in by_word), None)
                seen[token] = held
            if (word := seen[token]) is not None:
                found.append((match.start(), word))
        return found

    def _weighted_tfs(self, analysed: _Analysed) -> list[tuple[float, bool]]:
        """For each query word: its field-weighted term frequency, and whether the name or description holds it.
        (``_Field.tf`` of each field, in one pass over the merged fields: this loop runs for every candidate
        of every search.)"""
        found = []
        counts = analysed.counts
        listed = analysed.words
        end = len(listed)
        for word, term in self._pairs:
            name, description, content = counts.get(term, _NO_COUNTS)
            at = bisect_left(listed, word)
            if at < end and listed[at].startswith(word):
                extra = [0.0, 0.0, 0.0]
                stems, holders = analysed.word_stems, analysed.word_fields
                while at < end and listed[at].startswith(word):
                    if stems[at] != term:  # a longer word it starts, not one of its stem's
                        for f in holders[at]:
                            extra[f] += PREFIX_WEIGHT
                    at += 1
                tfs = (float(name) + extra[0], float(description) + extra[1], float(content) + extra[2])
            else:
                tfs = (float(name), float(description), float(content))
            tf = 0.0
            for weight, count in zip(_WEIGHTS, tfs, strict=True):
                if count:
                    tf += weight * count
            found.append((tf, bool(tfs[0] or tfs[1])))
        return found

    def score(
        self, entry: Entry, *, df: Sequence[int] | None = None, total: int = 1, average: float = 0.0
    ) -> float | None:
        """The entry's score, or None when it does not match. ``df``, ``total`` and ``average`` are the
        collection's statistics for BM25 (document frequency of each query word, number of entries, mean
        weighted length); without them every word counts as rare."""
        analysis = analysed(entry)
        return self._score(entry, analysis, self._weighted_tfs(analysis), df, total, average)

    def _score(
        self, entry: Entry, analysed: _Analysed, tfs: list[tuple[float, bool]], df: Sequence[int] | None,
        total: int, average: float,
    ) -> float | None:
        held = in_meta = 0
        bm25 = 0.0
        length = analysed.length
        mean = average or length
        for i, (tf, meta) in enumerate(tfs):
            if tf > 0:
                held += 1
                in_meta += meta
                d = df[i] if df else 1
                bm25 += bm25_weight(tf, length, mean, d, max(total, d))
        whole = bool(self.whole) and self.whole in analysed.meta
        if not held and not whole:
            return None
        n = max(len(self.words), 1)
        # lexicographic order folded into one number: held words, then words in the name or description,
        # then the whole query, then BM25 (squashed below the whole query's notch)
        return held + 0.5 * in_meta / n + (0.25 / n if whole else 0.0) + (0.2 / n) * bm25 / (bm25 + 1.0)

    def full_match(self) -> float | None:
        """The score of an entry that holds every query word once, in its content (``_score`` with each word
        held, none in the name or description, BM25 at 1): what a keyword score is read against in fusion
        (``recall.fuse``'s ``keyword_scale``). Read against the best of the answer instead, one common word of
        a long question, when nothing else matched it, counts as a full match and outweighs the meaning.
        None for a query without words."""
        n = len(self.words)
        return n + (0.2 / n) * 0.5 if n else None

    def rank(self, candidates: Iterable[Entry], limit: int, *, total: int | None = None) -> list[Ranked]:
        """The best ``limit`` matching candidates. ``total`` is how many entries the searched layers hold
        (the candidates are all those holding a query word, so they give each word's document frequency)."""
        pool = list(candidates)
        analyses = [analysed(entry) for entry in pool]
        tfs = [self._weighted_tfs(a) for a in analyses]
        df = [sum(1 for row in tfs if row[i][0] > 0) for i in range(len(self.words))]
        count = max(total or 0, len(pool), 1)
        average = sum(a.length for a in analyses) / len(analyses) if analyses else 0.0
        scored = []
        for entry, a, row in zip(pool, analyses, tfs, strict=True):
            score = self._score(entry, a, row, df, count, average)
            if score is not None:
                scored.append(Ranked(entry, round(score, 6)))
        # stable sorts, least significant first: name, newest, then score and importance
        scored.sort(key=lambda r: (r.entry.memory or "", r.entry.user_id or "", r.entry.name))
        scored.sort(key=lambda r: r.entry.updated_at, reverse=True)
        scored.sort(key=lambda r: (-r.score, -r.entry.importance))
        return scored[:limit]
