"""Hybrid recall (SPEC §6.2), the pure part: modes, the fusion of the keyword and semantic lists, the
importance boost and the cut-off. "Why did this hit rank first" is answered here.

Each candidate carries what each side said of it: the keyword engine's score (``domain/search.py`` for
entries, the store's BM25 for journals; only its order within one answer counts, so it is scaled by the
answer's best) and the semantic side's cosine similarity, calibrated per embedder to a relevance in [0, 1]
(``floor`` is what unrelated texts score, ``ceiling`` what a paraphrase does). The fused relevance is

    weight × keyword + (1 − weight) × semantic + boost × (importance − 0.5)

a convex combination, which on our evaluation (``bench/recall_quality.py``) ranks better than reciprocal-rank
fusion because it keeps how strong each match is, not only its place; RRF stays available (``fusion="rrf"``).
A hit under ``min_score`` is left out, so an off-topic query answers few hits or none.
"""

from __future__ import annotations

import heapq
import math
import re
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar, get_args

from .errors import InvalidError
from .text import query_words, telling_words, words

Mode = Literal["hybrid", "keyword", "semantic", "deep"]  # deep: hybrid, then the re-ranking stage
Fallback = Literal["index_unavailable", "timeout", "not_configured",
                   "rerank_unavailable", "rerank_timeout", "rerank_not_configured", "rerank_partial"]
Stage = Literal["keyword", "semantic", "neighbours", "fusion", "feedback", "rerank"]
Fusion = Literal["weighted", "rrf"]
MODES: tuple[str, ...] = get_args(Mode)
K = TypeVar("K", bound=Hashable)
KEYWORD_CANDIDATES = 200  # the most relevant candidates the words offer a journal search ...
# ... and an entry search: ten pages of the default size. Entries are few and their words telling, so the
# words' best 100 hold the page (bench/recall_quality.py); each candidate more costs a ranking in Python
ENTRY_KEYWORD_CANDIDATES = 100
SEMANTIC_CANDIDATES = 100  # ... and the nearest the semantic index offers (each is read again from the store)
# A question is often answered across a message and the one before or after it (a question and its answer, a
# statement and its correction): in a journal search each message borrows this share of the better keyword score
# of its neighbours, and the neighbours of the best keyword hits join the candidates (bench/recall_models.py,
# the dev half of bench/recall_eval: BM25 R@10 0.479 -> 0.534 with a third)
NEIGHBOUR_SHARE = 1 / 3
# ... and, in hybrid, this share of the better fused score of its neighbours (what the meaning found of them too:
# a question found by its meaning lends to the answer after it, whose words may not match)
FUSED_NEIGHBOUR_SHARE = 0.2
FARTHER_SHARE = 0.5  # a message two steps away lends half what one beside it does
# A search across a journal (no conversation named) is about one conversation more than the others: in it each
# candidate also borrows this share of the mean of the CONVERSATION_BEST best fused scores of the other candidates
# of its conversation (``lend_conversation``), so a match in the conversation that holds several rises above a
# stray one in a conversation about something else. On the dev half of bench/recall_eval asked across each half's
# journal (--across), hybrid R@10 0.649 -> 0.682, R@20 0.764 -> 0.802. Within one conversation it is not applied:
# a window of 20 messages either side in its place (the session a question is about) cost the chat conversations
# R@10 there (0.628 -> 0.619; test half 0.645 -> 0.618), favouring the parts that talk most about a topic over the
# one short message that answers
CONVERSATION_SHARE = 0.4
CONVERSATION_BEST = 3
RERANK_CONVERSATION_SHARE = 0.4  # ... and of the re-ranking stage's scores (mode=deep), which order the top again
NEIGHBOUR_SOURCES = 50  # the best keyword hits whose neighbours are read as candidates
RERANK_CANDIDATES = 50  # the fused top that the re-ranking stage reads (mode=deep)
RERANK_NEIGHBOUR_SHARE = 0.1  # ... and the share of its neighbours' re-ranking score a candidate borrows
# ... and, in a journal search, the share of its fused score a candidate keeps (``keep_fused``): the model (late
# interaction over a sentence model's token states, not trained to order passages) then breaks the fusion's
# near-ties more than it overturns its order. On the dev half of bench/recall_eval deep R@10 went 0.789 -> 0.823
# within conversations, 0.742 -> 0.762 across the journal and 0.693 -> 0.713 in one thread, MRR up in each (0.05:
# 0.803, 0.1: 0.814, 0.2: 0.821, 0.3: 0.813, 0.6: 0.794 within). Entry recall keeps the model's own order: there
# it cost R@1 (0.878 -> 0.853 by memory search, bench/recall_eval_entries.py)
RERANK_FUSED_SHARE = 0.15
RERANK_BUDGET_S = 0.08  # ... and the time it has to read candidates it has not read before (rerank_partial past it)
# A long message is searched by its passages too (domain/passages.py): its semantic score is this share of its
# best passage's cosine, and the rest its whole text's (see passage_score). On the dev half of bench/recall_eval
# the largest weight tried (0, 0.3, 0.5, 0.7, 1) that leaves hybrid's R@10 and R@20 as they were and its MRR
# within 0.005: semantic R@20 on the questions about long messages 0.851 -> 0.900, hybrid MRR 0.443 -> 0.441
PASSAGE_WEIGHT = 0.3
# A question that names several things to tell apart ("which came first, the move or the wedding?", "put these in
# order: A, B, C") is also searched by each of them (``aspects``): at most this many, each of at least
# ASPECT_MIN_WORDS telling words (a shorter part is read with the question's head: "whose parcel came first,
# Amara's or Henrik's?" asks of "whose parcel came first Amara's" and "... Henrik's"). A message's score is the best
# its question's ranking or an aspect's gave it (``best_of``): on the dev half of bench/recall_eval, R@10 of the
# order questions 0.682 -> 0.735, the other kinds as they were
ASPECTS_MAX = 4
ASPECT_CANDIDATES = 50  # ... each offering this many candidates a side (or three pages' worth), the neighbours of
# its best fifth read: an aspect's best need only be near the top, and a question with aspects does its work again
# for each
ASPECT_MIN_WORDS = 2
COMMON_WORD_SHARE = 0.2  # a word held by more of the messages searched than this is not embedded with the query
COMMON_WORD_MIN_MESSAGES = 200  # ... once there are this many
# A question about how things stand now ("what's the door code now?", "when did it end up starting?"): among the
# first LATEST_AMONG of its ranking, each message gains up to LATEST_SHARE by its place in time among them (the
# newest all of it, the oldest none). A fact said again, changed, is said in the same words as before, and only
# the latest counts. Chosen on the dev half of bench/recall_eval.py (22 such questions): updated facts R@10 0.541
# -> 0.605 at 0.15 among 30, no other kind moved (0.12 among 20 gave 0.591; 0.3 gave 0.637 but lost a multi-hop
# question; by time itself rather than by place, the same or one question less).
LATEST_AMONG = 30
LATEST_SHARE = 0.15
_LATEST = re.compile(
    r"\b(?:now|nowadays|currently|current|at the moment|at present|these days|in the end|end(?:s|ed)? up|finally"
    r"|final|latest|most recent(?:ly)?|any ?more|still|as of)\b", re.IGNORECASE)


def pool(least: int, offset: int, size: int) -> int:
    """How many candidates a side offers for one page: at least ``least``, and three pages' worth."""
    return max(least, 3 * (offset + size))


@dataclass(frozen=True)
class Calibration:
    """How to read one embedder's cosine similarities, and how to fuse (settings carry the numbers)."""

    floor: float = 0.15  # the cosine of unrelated texts: relevance 0
    ceiling: float = 0.65  # the cosine of a close paraphrase: relevance 1
    keyword_weight: float = 0.5
    importance_boost: float = 0.1
    min_score: float = 0.12  # the default cut-off in hybrid and semantic modes
    fusion: Fusion = "weighted"
    rrf_k: int = 60


@dataclass(frozen=True)
class Signals:
    keyword: float | None = None  # the keyword engine's score, None when it did not find the candidate
    semantic: float | None = None  # cosine similarity, None when the semantic side did not return it
    importance: float = 0.5


def check_mode(value: str | None, allowed: Sequence[str] = MODES) -> Mode:
    """The mode asked for (default hybrid); one outside ``allowed`` is a 400 naming them."""
    if value is None:
        return "hybrid"
    if value not in allowed:
        raise InvalidError(f"mode must be one of {', '.join(allowed)}", field="mode")
    return value  # type: ignore[return-value]


Seat = tuple[str, int]  # a journal message's place: (conversation, seq)


def neighbours_to_read(keyword: Mapping[Seat, float], known: Collection[Seat], top: int | None = None,
                       ) -> dict[str, list[int]]:
    """The messages just before and after the ``top`` best keyword hits that are not candidates yet, by
    conversation: they may hold the other half of what a question asks (the answer to a question found)."""
    best = sorted(keyword, key=lambda seat: -keyword[seat])[:NEIGHBOUR_SOURCES if top is None else top]
    wanted: dict[str, list[int]] = {}
    for conversation, seq in best:
        for near in (seq - 1, seq + 1):
            if near >= 1 and (conversation, near) not in known and near not in wanted.get(conversation, ()):
                wanted.setdefault(conversation, []).append(near)
    return wanted


def lend_neighbours(scores: Mapping[Seat, float], seats: Iterable[Seat], share: float) -> dict[Seat, float]:
    """Each seat's score (0 when it has none) plus ``share`` of the better score of the messages just before and
    after it in its conversation, and ``FARTHER_SHARE`` of that share of the better of the two messages one step
    farther (a question, a word between, its answer; a tool call, its result, what the assistant made of it);
    seats that end with nothing are left out."""
    lent: dict[Seat, float] = {}
    for conversation, seq in seats:
        own = scores.get((conversation, seq), 0.0)
        near = max(scores.get((conversation, seq - 1), 0.0), scores.get((conversation, seq + 1), 0.0))
        farther = max(scores.get((conversation, seq - 2), 0.0), scores.get((conversation, seq + 2), 0.0))
        value = own + share * (near + FARTHER_SHARE * farther)
        if value > 0:
            lent[(conversation, seq)] = value
    return lent


def lend_conversation(scores: Mapping[Seat, float], share: float, best: int = CONVERSATION_BEST,
                      ) -> dict[Seat, float]:
    """Each seat's score plus ``share`` of the mean of the ``best`` best scores of the other seats of its
    conversation (fewer count as zeros): the conversation a question is about holds several matches, a stray
    match in another stands alone."""
    if share <= 0:
        return dict(scores)
    by_conversation: dict[str, list[float]] = {}
    for (conversation, _), score in scores.items():
        by_conversation.setdefault(conversation, []).append(score)
    tops = {conversation: heapq.nlargest(best + 1, held) for conversation, held in by_conversation.items()}
    lent: dict[Seat, float] = {}
    for seat, score in scores.items():
        others = list(tops[seat[0]])
        if score in others:  # the others' best: without the seat's own score when it is among them
            others.remove(score)
        lent[seat] = score + share * sum(others[:best]) / best
    return lent


def lend_ranked(ranked: Sequence[tuple[Seat, float]], seats: Iterable[Seat], share: float, cut: float,
                conversation: float = 0.0) -> list[tuple[Seat, float]]:
    """A journal's fused ranking with each of ``seats`` (the candidates) scored by its own fused score (0 when it
    was not ranked) plus ``share`` of the better fused score of the messages just before and after it
    (``lend_neighbours``); those under ``cut`` left out; then ``conversation`` of its
    conversation's (``lend_conversation``, read from every candidate), which orders what passed the cut-off and
    lets nothing else pass it (a message is no hit for being in the right conversation); best first (ties keep
    the ranked order), each score shown at most 1 (two above it keep their order)."""
    own = dict(ranked)
    neighboured = lend_neighbours(own, seats, share)
    lent = lend_conversation(neighboured, conversation)
    place = {seat: n for n, (seat, _) in enumerate(ranked)}
    kept = sorted((seat for seat, score in neighboured.items() if score >= cut),
                  key=lambda seat: (-round(lent[seat], 6), place.get(seat, len(place))))
    return [(seat, round(min(lent[seat], 1.0), 6)) for seat in kept]  # ordered as lent, shown at most 1


def keep_fused(scores: Mapping[K, float], fused: Mapping[K, float], share: float) -> dict[K, float]:
    """Each of ``scores`` (the re-ranking stage's, from 0 to 1) keeping ``share`` of its ``fused`` score, read as a
    share of the best fused score among them: (score + share × fused / best) / (1 + share), from 0 to 1 still."""
    best = max((fused.get(key, 0.0) for key in scores), default=0.0)
    if share <= 0 or best <= 0:
        return dict(scores)
    return {key: (score + share * min(max(fused.get(key, 0.0), 0.0) / best, 1.0)) / (1 + share)
            for key, score in scores.items()}


def passage_score(whole: float | None, passages: Sequence[float], weight: float | None = None) -> float:
    """A long message's semantic score from its whole text's cosine and its passages': ``weight`` of the best
    passage's and the rest the whole's. The best of many short passages is a high score by chance more often than
    one text's (a long message would rise above the short ones for nothing), and the whole's alone blurs the one
    paragraph that answers; either alone when the other is missing."""
    weight = PASSAGE_WEIGHT if weight is None else weight
    best = max(passages, default=None)
    if best is None:
        return whole if whole is not None else 0.0
    if whole is None:
        return best
    return weight * best + (1.0 - weight) * whole


def check_min_score(value: float | None) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value) or not 0 <= value <= 1:
        raise InvalidError("min_score must be a number from 0 to 1", field="min_score")
    return float(value)


def semantic_relevance(cosine: float, calibration: Calibration) -> float:
    span = max(calibration.ceiling - calibration.floor, 1e-6)
    return min(max((cosine - calibration.floor) / span, 0.0), 1.0)


def fuse(
    candidates: Mapping[K, Signals], mode: Mode, calibration: Calibration, *, min_score: float | None = None,
    keyword_scale: float | None = None,
) -> list[tuple[K, float]]:
    """The candidates best first with their relevance, those under the cut-off left out. In keyword mode
    every keyword match counts (SPEC §6.1) unless ``min_score`` is asked for. ``keyword_scale``: the keyword
    score of a full match (``bm25_scale``), when the engine's scores can be read against one; without it
    they are read against the best of the answer."""
    if not candidates:
        return []
    cut = min_score if min_score is not None else (0.0 if mode == "keyword" else calibration.min_score)
    best_keyword = max((s.keyword for s in candidates.values() if s.keyword is not None), default=0.0)
    if keyword_scale is not None and keyword_scale > 0:
        best_keyword = max(keyword_scale, best_keyword)
    keyword_rank = _ranks({k: s.keyword for k, s in candidates.items() if s.keyword is not None})
    semantic_rank = _ranks({k: s.semantic for k, s in candidates.items() if s.semantic is not None})
    scored: list[tuple[K, float]] = []
    for key, signals in candidates.items():
        keyword = signals.keyword / best_keyword if signals.keyword is not None and best_keyword > 0 else 0.0
        semantic = semantic_relevance(signals.semantic, calibration) if signals.semantic is not None else 0.0
        if mode == "keyword":
            relevance = keyword if signals.keyword is not None else 0.0
        elif mode == "semantic":
            relevance = semantic
        elif calibration.fusion == "rrf":
            rrf = sum(1.0 / (calibration.rrf_k + rank[key]) for rank in (keyword_rank, semantic_rank) if key in rank)
            relevance = rrf * (calibration.rrf_k + 1) / 2.0  # 1.0 for the first of both lists
        else:
            weight = calibration.keyword_weight
            relevance = weight * keyword + (1.0 - weight) * semantic
        if mode != "keyword":
            relevance += calibration.importance_boost * (signals.importance - 0.5)
        relevance = round(min(max(relevance, 0.0), 1.0), 6)
        if mode == "keyword" and signals.keyword is None:
            continue
        if relevance < cut or (relevance == 0.0 and mode != "keyword"):
            continue
        scored.append((key, relevance))
    # a stable order: relevance, then the keyword side's order, then the semantic side's
    scored.sort(key=lambda pair: (-pair[1], keyword_rank.get(pair[0], math.inf), semantic_rank.get(pair[0], math.inf)))
    return scored


def best_of(rankings: Sequence[Sequence[tuple[K, float]]]) -> list[tuple[K, float]]:
    """Several rankings of the same candidates (a question's, and each of the things it names) as one, taking
    turns: the first of each, then the second of each, and so on, each candidate once at its best place (so each
    ranking's best is near the top, however the others score), ties by the best score any of them gave it.
    A candidate's score is the best any gave it, made no higher than the one's before it, so the answer stays
    best first."""
    if len(rankings) == 1:
        return list(rankings[0])
    best: dict[K, float] = {}
    place: dict[K, tuple[int, int]] = {}
    for n, ranking in enumerate(rankings):
        for m, (key, score) in enumerate(ranking):
            best[key] = max(best.get(key, 0.0), score)
            place[key] = min(place.get(key, (m, n)), (m, n))
    ordered = sorted(best, key=lambda key: (place[key][0], -best[key], place[key][1]))
    out: list[tuple[K, float]] = []
    for key in ordered:
        out.append((key, min(best[key], out[-1][1]) if out else best[key]))
    return out


def asks_for_latest(query: str) -> bool:
    """Whether ``query`` asks how things stand now, or how they ended (``toward_latest``)."""
    return _LATEST.search(query) is not None


def toward_latest(ranked: Sequence[tuple[K, float]], time_of: Callable[[K], tuple[str, int]], *,
                  among: int = LATEST_AMONG, share: float = LATEST_SHARE) -> list[tuple[K, float]]:
    """``ranked`` (best first) with each of its first ``among`` raised by ``share`` times its place in time among
    them (``time_of``: an ISO time, and a number that orders equal times; the newest gains ``share``, the oldest
    nothing), ordered again; a score is at most 1, and the rest follow as they were."""
    head = list(ranked[:among])
    if len(head) < 2:
        return list(ranked)
    by_time = sorted(range(len(head)), key=lambda i: time_of(head[i][0]))
    place = {i: n / (len(head) - 1) for n, i in enumerate(by_time)}
    raised = sorted(((score + share * place[i], i) for i, (_, score) in enumerate(head)),
                    key=lambda pair: (-pair[0], pair[1]))  # (ordered past 1: a message at 1 already can be passed)
    return [(head[i][0], min(1.0, score)) for score, i in raised] + list(ranked[among:])


def bm25_scale(total: int, counts: Mapping[str, int]) -> float | None:
    """The BM25 score of a message holding each word of a query once at the average length: the sum of the
    words' idf (FTS5's: ``log((N - n + 0.5) / (n + 0.5))``, at least 1e-6), ``counts`` saying how many of the
    ``total`` messages hold each. A match on a word every message holds then reads as the nothing it is,
    where read against the best of the answer it would read as a full match when nothing better matched.
    None when nothing was counted."""
    if total <= 0 or not counts:
        return None
    return sum(max(math.log((total - held + 0.5) / (held + 0.5)), 1e-6) for held in counts.values())


def without_common_words(query: str, total: int, counts: Mapping[str, int], *, share: float = COMMON_WORD_SHARE,
                         least: int = COMMON_WORD_MIN_MESSAGES, left_out: Collection[str] = ()) -> str:
    """What the semantic side embeds of ``query``: without the words held by more than ``share`` of the
    ``total`` messages searched (``counts``: how many hold each word), once there are ``least`` messages, and
    without the words of ``left_out`` (the names the conversation calls its people by, ``domain/addressing.py``),
    as long as a word that tells remains. A word most messages hold (a speaker's name written before every line,
    a project's name) says nothing about which message is meant, and in an embedding it pulls the query
    towards every short message that holds it; so does a name the messages holding it mostly call someone by."""
    common = {word for word, held in counts.items() if held > share * total} if total >= least else set()
    return without_words(query, common | set(left_out))


def without_words(query: str, left_out: Collection[str]) -> str:
    """``query`` as its lower-cased words without those of ``left_out``, as long as a word that tells remains
    (else, or when it holds none of them, ``query`` as it is)."""
    every = words(query)
    kept = [word for word in every if word not in left_out]
    if len(kept) == len(every) or all(word in left_out for word in query_words(query)):
        return query
    return " ".join(kept)


# the words that frame a question about order without naming what it asks of ("which came first", "what happened
# first", "put these in order"): a part of a question holding only these and stop words names nothing to search
ORDER_WORDS = frozenset({"first", "came", "come", "comes", "happened", "happen", "happens", "order", "ordered",
                         "sequence", "put", "earlier", "later", "sooner"})
# a question naming alternatives ("or", "before or after"); where one names one more thing: a comma or semicolon
# (not inside a number), "or", "then", "before or after", and "and" in a list only ("Lena and Matthias became a
# couple" is one thing)
_ALTERNATIVE = re.compile(r"\bor\b", re.IGNORECASE)
_BREAK = r"(?<!\d)[,;](?!\d)|[?!]|\bbefore or after\b|\bor\b|\bthen\b"
_ASPECT_BREAK = re.compile(_BREAK, re.IGNORECASE)
_LIST_BREAK = re.compile(_BREAK + r"|\band\b", re.IGNORECASE)
# a yes-or-no question whether one thing came before or after another ("did we ship it before the audit?", "was
# the vote right after the baby was born?"): cut at "before" / "after"
_YES_NO = re.compile(r"^\W*(?:did|does|do|was|were|is|are|has|have|had)\b", re.IGNORECASE)
_SEQUENCE = r"\b(?:(?:right|just|shortly|soon|long|straight|immediately)\s+)?(?:before|after)\b"
_SEQUENCE_BREAK = re.compile(_BREAK + "|" + _SEQUENCE, re.IGNORECASE)
_BEFORE_OR_AFTER = re.compile(r"\bbefore or after\b", re.IGNORECASE)
# a list asked for in order without a colon ("in what order did we fix the login bug, the cache and the docs?",
# "what was the sequence of the outage, the rollback and the post-mortem?"): the frame ends after "order of" /
# "order did" ..., and the list follows
_ORDER_FRAME = re.compile(
    r"^(.*?\b(?:order|sequence)\b(?:\s+(?:of|did|do|does|were|was|are|is|had|have|has))?)\s+(.*)$",
    re.IGNORECASE | re.DOTALL)
_LISTED = re.compile(r"(?<!\d),(?!\d)|\band\b", re.IGNORECASE)


def _frames_only(part: str) -> bool:
    """True when ``part`` names nothing: only stop words and the words that frame a question about order."""
    return all(word in ORDER_WORDS for word in telling_words(part))


def aspects(query: str, *, most: int | None = None, least: int | None = None) -> list[str]:
    """The things a question asks to tell apart, one by one, when it names more than one; else none (``[]``).

    One ranked list for "which came first: the move or the wedding?" fills its top with whichever of the two
    the words and the meaning favour, and the other is lost; each searched alone finds its own best. A question
    is cut when it names alternatives ("A or B", "before or after"), asks yes or no whether one thing came
    before or after another ("did we ship it before the audit?"), or lists things after a frame ("put these in
    order: A, B, C", "in what order did A, B and C happen?"): "how much was it, and why?" asks two things of
    the same events, and its second half alone ("why") would find other ones. It is cut where it names one more
    thing (a comma, "or", "then", "before or after"; "and" in a list; "before" / "after" in a yes-or-no
    question); the frame is not an aspect, nor a part that only frames ("which came first"). The two sides of
    "before" / "after" are each an event and stand alone; of alternatives, a part with fewer than ``least``
    telling words (not stop words) is read with the head (the frame, else the first part): "Amara's" alone
    would find every message naming her, unless the head only frames. Parts are kept in order, each once, at
    most ``most``; a question with fewer than two is one aspect, itself."""
    most = ASPECTS_MAX if most is None else most
    least = ASPECT_MIN_WORDS if least is None else least
    frame, colon, body = query.partition(":")
    if not colon or not telling_words(frame) or not telling_words(body):
        frame, body = "", query
        listed = _ORDER_FRAME.match(query)
        if listed and _LISTED.search(listed.group(2)) and telling_words(listed.group(2)):
            frame, body = listed.group(1), listed.group(2)
    sides = False  # each part an event of its own (the two sides of "before" / "after")
    if frame:
        breaks = _LIST_BREAK
    elif _ALTERNATIVE.search(body):
        breaks, sides = _ASPECT_BREAK, _BEFORE_OR_AFTER.search(body) is not None
    elif _YES_NO.match(body) and re.search(_SEQUENCE, body, re.IGNORECASE):
        breaks, sides = _SEQUENCE_BREAK, True
    else:
        return []
    parts = [" ".join(p.split()) for p in breaks.split(body)]
    parts = [p for p in parts if telling_words(p)]
    head = frame or (parts[0] if parts else "")
    alone = sides or _frames_only(head)  # each part is read as it is; the head lends it nothing
    found: list[str] = []
    for part in parts:
        if _frames_only(part):
            continue
        text = part if alone or len(telling_words(part)) >= least or part == head else f"{head} {part}"
        if len(telling_words(text)) >= (1 if alone else least) and text not in found:
            found.append(text)
    return found[:most] if len(found) >= 2 else []


def as_near_as(cosines: Mapping[K, float], nearest: float) -> dict[K, float]:
    """An aspect's cosine similarities (``aspects``) in proportion, raised so that its nearest is ``nearest``, the
    whole question's nearest; as they are when theirs is as near already. An aspect is a few words, and a few
    words are nearer to no message than a question: read against the calibration made for questions, the message
    an aspect finds nearest reads as barely related, and the words' side fills the aspect's ranking. Raised no
    higher than the whole question's nearest, an aspect of a question that matches nothing still matches
    nothing. On the dev half of bench/recall_eval, hybrid R@10 of the order questions 0.735 -> 0.754 (two up, none
    down), no other kind moved."""
    top = max(cosines.values(), default=0.0)
    if top <= 0.0 or nearest <= top:
        return dict(cosines)
    return {key: value * nearest / top for key, value in cosines.items()}


def first_of_each(
    ranked: Sequence[tuple[K, float]], same: Callable[[K], Hashable], rough: Callable[[K], Hashable] | None = None,
) -> list[tuple[K, float]]:
    """``ranked`` with only the best-ranked of the candidates ``same`` says are one (identical messages: a line
    said in many sessions, a greeting, a tool's repeated output). Ten copies of one line in a page tell a
    reader no more than one, and hide what else matched. ``rough``: a cheaper marker that is equal for any two
    ``same`` calls one (a text's first words): ``same`` is asked only of candidates whose rough marker an
    earlier one has."""
    seen: set[Hashable] = set()
    unasked: dict[Hashable, list[K]] = {}  # a rough marker's kept candidates that ``same`` was not asked of yet
    kept: list[tuple[K, float]] = []
    for key, score in ranked:
        if rough is not None:
            marker = rough(key)
            if marker not in unasked:
                unasked[marker] = [key]
                kept.append((key, score))
                continue
            seen.update(same(earlier) for earlier in unasked[marker])
            unasked[marker] = []
        marker = same(key)
        if marker not in seen:
            seen.add(marker)
            kept.append((key, score))
    return kept


def _ranks(scores: Mapping[K, float]) -> dict[K, int]:
    """1-based places by score, best first; ties keep the given order."""
    ordered = sorted(scores, key=lambda key: -scores[key])
    return {key: place for place, key in enumerate(ordered, start=1)}
