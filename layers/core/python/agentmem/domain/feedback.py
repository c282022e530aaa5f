"""The words' feedback (stage ``feedback``; journal search, ``hybrid`` and ``deep``): what the best hits say
beside the question, lent to the candidates that say it too.

A question names a thing in its own words; the messages that answer it name it in theirs, and often by what
only the conversation knows: the hotel's booking reference, the novel's 420 pages, the plumber's name. The best
few hits of a search hold those words, and the message that answers the rest of the question (the ticket that
was issued, the translation sent "yesterday") holds them too, where the question's own words are not. This is
pseudo-relevance feedback (the idea of Rocchio's and RM3's query expansion), read over the candidates at hand
rather than the whole index, with fixed weights and nothing trained:

1. the fused top ``FEEDBACK_AMONG`` candidates are read as bags of terms (stems, stop words left out; a long
   message's first ``FEEDBACK_CHARS`` characters); with fewer than ``FEEDBACK_FEWEST`` nothing is done: among a
   handful, a word two of them hold is more than a fifth of them, and cannot be told from the topic's;
2. the terms of the best ``FEEDBACK_FROM`` that the question does not hold are weighed by their idf among those
   candidates and the fused score of each hit holding them; a term held by more than ``FEEDBACK_COMMON`` of the
   candidates says only what the topic is and is left out; the best ``FEEDBACK_TERMS`` are kept;
3. each candidate is scored by BM25 over those terms (within the candidates: their idf, their mean length), and
   gains up to ``FEEDBACK_SHARE`` of its fused score by it, the best of them all of it; then they are ordered again.

It adds no candidate the two sides did not find; one under the cut-off may pass it by what it holds of the best
hits' words, as one may by its neighbours' evidence. It costs no query of the store: a few milliseconds of reading
texts already read.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Collection, Hashable, Sequence
from typing import TypeVar

from .text import STOP_WORDS, stem, words

K = TypeVar("K", bound=Hashable)

FEEDBACK_FROM = 3  # the best fused hits whose words are read
FEEDBACK_TERMS = 15  # the terms of theirs kept, by idf and the hits' scores
FEEDBACK_AMONG = 50  # the fused top that is scored by them (and whose counts make their idf)
# fewer candidates than this cannot tell the topic's words from the telling ones (a word two of them hold is more
# than a fifth of them): no feedback
FEEDBACK_FEWEST = 10
FEEDBACK_SHARE = 0.15  # what the best-scored candidate gains; the others in proportion
FEEDBACK_COMMON = 0.2  # a term held by more than this share of those candidates is the topic's, left out
FEEDBACK_CHARS = 2000  # of a long message, what is read
_K1, _B = 1.2, 0.75  # BM25's usual constants


def bag_of(text: str) -> Counter[str]:
    """The terms of ``text`` the feedback reads: its stems without stop words, its first ``FEEDBACK_CHARS``."""
    return Counter(stem(w) for w in words(text[:FEEDBACK_CHARS]) if w not in STOP_WORDS)


def lend_feedback(ranked: Sequence[tuple[K, float]], text_of: Callable[[K], str], question: Collection[str], *,
                  share: float = FEEDBACK_SHARE, bags: dict[K, Counter[str]] | None = None,
                  ) -> tuple[list[tuple[K, float]], bool]:
    """``ranked`` (fused, best first, before the cut-off) ordered again with each of its top ``FEEDBACK_AMONG``
    raised by the terms the best few hold and the question (its stems, ``question``) does not; whether any term was
    found to lend by (the ranking comes back as it was when none was). Scores may pass 1 here: the cut-off and the
    score shown are the caller's (``lend_ranked``). ``bags``: the candidates' words read so far, kept (a question
    and the things it names rank the same candidates)."""
    among = list(ranked[:FEEDBACK_AMONG])
    if len(among) < FEEDBACK_FEWEST or share <= 0:
        return list(ranked), False
    read = {} if bags is None else bags  # (a search's views share what was read of each candidate)
    for key, _ in among:
        if key not in read:
            read[key] = bag_of(text_of(key))
    bags_of = {key: read[key] for key, _ in among}
    n = len(bags_of)
    held = Counter(term for bag in bags_of.values() for term in bag)
    idf = {term: math.log(1 + (n - count + 0.5) / (count + 0.5)) for term, count in held.items()}
    common = max(2.0, FEEDBACK_COMMON * n)
    weight: dict[str, float] = {}
    for key, score in among[:FEEDBACK_FROM]:
        for term in bags_of[key]:
            # (a term no other candidate holds lends to nobody: it would only raise the hit that says it)
            if term not in question and 2 <= held[term] <= common:
                weight[term] = weight.get(term, 0.0) + idf[term] * score
    chosen = [term for term in sorted(weight, key=lambda t: -weight[t])[:FEEDBACK_TERMS] if weight[term] > 0]
    if not chosen:
        return list(ranked), False
    mean_length = max(sum(sum(bag.values()) for bag in bags_of.values()) / n, 1.0)
    scored: dict[K, float] = {}
    for key, bag in bags_of.items():
        norm = _K1 * (1 - _B + _B * sum(bag.values()) / mean_length)
        scored[key] = sum(idf[t] * bag[t] * (_K1 + 1) / (bag[t] + norm) for t in chosen if bag.get(t))
    best = max(scored.values())  # > 0: each term chosen is held by two candidates at least
    lent = [(key, score + share * scored.get(key, 0.0) / best) for key, score in ranked]
    place = {key: at for at, (key, _) in enumerate(ranked)}
    lent.sort(key=lambda pair: (-round(pair[1], 6), place[pair[0]]))
    return lent, True
