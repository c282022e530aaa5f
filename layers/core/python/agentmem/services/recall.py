"""Recall's semantic side and its re-ranking stage (SPEC §6.2): embed the query and ask the index, and have a
model read the query with each top candidate, each within a deadline, never failing.

``SemanticSide.start`` asks in the background (the keyword side runs meanwhile); ``answer()`` gives the index's
hits, or why there are none to use: ``not_configured`` (no embedder or no index), ``timeout`` (the embedder and
the index together took longer than the deadline) or ``index_unavailable`` (either raised, or answered something
that is not a vector). The callers (entries and journal search) fuse these hits with their keyword candidates
(``domain/recall.py``) and re-read every hit from the authoritative store before returning it.

``Reranking.run`` re-orders the fused top candidates (``mode=deep``) by a ``Reranker``'s scores, each candidate
borrowing a little of its neighbours' (``domain/recall.py``): or, when the model is missing, fails, hangs past its
deadline or answers something that is not one score per candidate in [0, 1], keeps the fused order and says why
(``rerank_not_configured``, ``rerank_unavailable``, ``rerank_timeout``). The model has a budget
(``Reranking.budget_s``) to read the candidates it has not read before, best first: those it did not reach keep
their fused place, the others are re-ordered among the places they held, and the answer says ``rerank_partial``.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Hashable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Generic, TypeVar, cast

from ..domain.recall import (
    RERANK_BUDGET_S,
    RERANK_CANDIDATES,
    RERANK_NEIGHBOUR_SHARE,
    Calibration,
    Fallback,
    Mode,
    Seat,
    keep_fused,
    lend_conversation,
    lend_neighbours,
)
from ..observability import count, logger
from ..ports.embedder import Embedder
from ..ports.reranker import Reranker
from ..ports.search_index import Filters, SearchHit, SearchIndex

_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="agentmem-recall")
# the re-ranking stage's own threads: a model that hangs holds these, never the semantic side's
_RERANK_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="agentmem-rerank")


@dataclass(frozen=True)
class SemanticAnswer:
    hits: list[SearchHit]
    fallback: Fallback | None = None  # why the semantic side gave nothing to use


@dataclass(frozen=True)
class Answered:
    """Which mode answered a search, and why it fell back when it did."""

    mode: Mode
    fallback: Fallback | None = None


class SemanticSide:
    def __init__(
        self, embedder: Callable[[], Embedder | None], index: Callable[[], SearchIndex | None],
        calibration: Calibration, *, deadline_s: float = 0.3,
    ) -> None:
        self._embedder = embedder
        self._index = index
        self.calibration = calibration
        self.deadline_s = deadline_s

    def start(self, query: str, filters: Filters, k: int) -> PendingAnswer:
        """Ask the index in the background (the keyword side runs meanwhile); ``answer()`` waits for it, at
        most until the deadline."""
        try:
            embedder, index = self._embedder(), self._index()
            if embedder is not None and index is not None:
                embedder.warm()  # a model's first load is not the query's time
        except Exception:
            logger.exception("the semantic index could not be reached")
            return PendingAnswer(self._fell_back("index_unavailable"))
        if embedder is None or index is None:
            return PendingAnswer(SemanticAnswer([], "not_configured"))
        future = _POOL.submit(self._ask, embedder, index, query, filters, k)
        return PendingAnswer(None, future, time.monotonic() + self.deadline_s)

    @staticmethod
    def _ask(embedder: Embedder, index: SearchIndex, query: str, filters: Filters, k: int) -> list[SearchHit]:
        running = getattr(index, "querying", None)  # an in-process index's indexer lets a running query go first
        with running() if callable(running) else contextlib.nullcontext():
            return SemanticSide._nearest(embedder, index, query, filters, k)

    def lag(self, filters: Filters) -> int | None:
        """How far behind the index is for ``filters`` (``SearchIndex.lag``); None when it cannot tell or fails."""
        try:
            index = self._index()
            return index.lag(filters) if index is not None else None
        except Exception:
            logger.exception("the semantic index could not say how far behind it is")
            return None

    @staticmethod
    def _nearest(embedder: Embedder, index: SearchIndex, query: str, filters: Filters, k: int) -> list[SearchHit]:
        vector = embedder.embed_one(query)
        if len(vector) != index.dimension or not all(math.isfinite(x) for x in vector):
            raise ValueError(f"the embedder answered {len(vector)} numbers for a {index.dimension}-dimension index")
        if not any(vector):
            return []  # nothing to embed (only symbols): no neighbours, not a failure
        hits = index.query(None, vector, {**filters, "embedder": embedder.name}, k)
        for hit in hits:
            if not isinstance(hit.score, int | float) or not math.isfinite(hit.score):
                raise ValueError("the index answered a score that is not a number")
        return hits

    @staticmethod
    def _fell_back(reason: Fallback) -> SemanticAnswer:
        count("RecallFallbacks", reason=reason)
        return SemanticAnswer([], reason)


class PendingAnswer:
    """The semantic side's answer on its way (or already known)."""

    def __init__(self, known: SemanticAnswer | None, future: Future[list[SearchHit]] | None = None,
                 deadline: float = 0.0) -> None:
        self._known = known
        self._future = future
        self._deadline = deadline

    def cancel(self) -> None:
        """Not wanted any more (the question is asked again otherwise): left out if it has not started."""
        if self._future is not None and self._known is None:
            self._future.cancel()

    def answer(self) -> SemanticAnswer:
        if self._known is None:
            assert self._future is not None
            try:
                self._known = SemanticAnswer(self._future.result(timeout=max(self._deadline - time.monotonic(), 0)))
            except FutureTimeout:
                logger.warning("the semantic index missed its deadline")
                self._known = SemanticSide._fell_back("timeout")
            except Exception:
                logger.exception("the semantic index failed")
                self._known = SemanticSide._fell_back("index_unavailable")
        return self._known


def answered(mode: Mode, semantic: SemanticAnswer | None) -> Answered:
    """Which mode answered: a hybrid or semantic search whose semantic side fell back answered by keyword."""
    if semantic is not None and semantic.fallback is not None:
        return Answered("keyword", semantic.fallback)
    return Answered(mode)


K = TypeVar("K", bound=Hashable)  # a candidate's key: a message's seat, an entry's (memory, user, name)


@dataclass(frozen=True)
class Reranked(Generic[K]):
    """The candidates in the re-ranking stage's order with its scores, or, when it did not run, as they came and
    why (``fallback``)."""

    ranked: list[tuple[K, float]]
    fallback: Fallback | None = None  # rerank_partial: it ran, over the candidates read within the budget


@dataclass(frozen=True)
class DeepAnswer(Generic[K]):
    """What ``mode=deep`` made of a fused ranking: the mode that answered (``deep`` only when the stage ran over
    a hybrid answer), why it answered with less, the ranking, and whether the stage ran."""

    mode: Mode
    fallback: Fallback | None
    ranked: list[tuple[K, float]]
    reranked: bool


class Reranking:
    def __init__(self, reranker: Callable[[], Reranker | None], *, deadline_s: float = 1.5,
                 neighbour_share: float = RERANK_NEIGHBOUR_SHARE, candidates: int = RERANK_CANDIDATES,
                 budget_s: float | None = RERANK_BUDGET_S) -> None:
        self._reranker = reranker
        self.deadline_s = deadline_s
        self.budget_s = budget_s  # for reading candidates the model has not read before (None: all)
        self.neighbour_share = neighbour_share
        self.candidates = candidates

    def deepen(
        self, query: str, ranked: list[tuple[K, float]], text_of: Callable[[K], str], *, mode: Mode,
        fallback: Fallback | None, cut: float, neighbours: bool = False, conversations: float = 0.0,
        fused: float = 0.0,
    ) -> DeepAnswer[K]:
        """``mode=deep`` over a fused ranking (made with no cut-off, so the stage reads the top whole): the top
        ``candidates`` read again with the query, the rest after them. When the stage does not run, the fused
        order stands with ``cut`` (the cut-off the fused mode would have applied) and the answer says why; a
        semantic fallback is said first. Journal search and entry recall both answer ``deep`` through here."""
        plain: Mode = "hybrid" if mode == "deep" else mode
        head = ranked[: self.candidates]
        outcome = self.run(query, head, [text_of(key) for key, _ in head], neighbours=neighbours,
                           conversations=conversations, fused=fused)
        if outcome.fallback is not None and outcome.fallback != "rerank_partial":
            return DeepAnswer(plain, fallback or outcome.fallback, [(k, s) for k, s in ranked if s >= cut], False)
        return DeepAnswer(mode, fallback or outcome.fallback, outcome.ranked + ranked[self.candidates:], bool(head))

    def run(self, query: str, head: list[tuple[K, float]], texts: list[str], *,
            neighbours: bool = True, conversations: float = 0.0, fused: float = 0.0) -> Reranked[K]:
        """``head``: the fused top candidates, best first, and ``texts`` what each says. Each read keeps
        ``fused`` of its fused score, as a share of the best one read (``keep_fused``). With ``neighbours`` the
        keys are journal seats, and each borrows a share of its neighbours' score, then ``conversations`` of its
        conversation's (``lend_conversation``: a search across conversations)."""
        if not head:
            return Reranked(head)
        try:
            reranker = self._reranker()
            if reranker is not None:
                reranker.warm()  # a model's first load is not the query's time
        except Exception:
            logger.exception("the reranker could not be loaded")
            return self._fell_back(head, "rerank_unavailable")
        if reranker is None:
            return Reranked(head, "rerank_not_configured")
        future = _RERANK_POOL.submit(reranker.rerank_within, query, texts, self.budget_s)
        try:
            scores = future.result(timeout=self.deadline_s)
        except FutureTimeout:
            logger.warning("the reranker missed its deadline")
            return self._fell_back(head, "rerank_timeout")
        except Exception:
            logger.exception("the reranker failed")
            return self._fell_back(head, "rerank_unavailable")
        if (not isinstance(scores, list) or len(scores) != len(head)
                or not all(x is None or (isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)
                                         and -1e-6 <= x <= 1 + 1e-6) for x in scores)):
            logger.error("the reranker answered something that is not one score per candidate in [0, 1]")
            return self._fell_back(head, "rerank_unavailable")
        read = [n for n, x in enumerate(scores) if x is not None]  # the places of the candidates it read
        if not read:  # the budget went before the first candidate it had to read
            return self._fell_back(head, "rerank_timeout")
        keys = [head[n][0] for n in read]
        own: dict[K, float] = {key: float(scores[n]) for key, n in zip(keys, read, strict=True)}  # type: ignore[arg-type]
        own = keep_fused(own, dict(head), fused)
        lent: Mapping[K, float] = own
        if neighbours:  # the keys are journal seats
            lent = cast("Mapping[K, float]", lend_conversation(
                lend_neighbours(cast("dict[Seat, float]", own), cast("list[Seat]", keys), self.neighbour_share),
                conversations))
        place = {key: n for n, key in enumerate(keys)}
        ordered = sorted(keys, key=lambda key: (-lent.get(key, 0.0), place[key]))
        out = list(head)  # a candidate not read keeps its fused place and score
        for n, key in zip(read, ordered, strict=True):
            out[n] = (key, round(min(max(lent.get(key, 0.0), 0.0), 1.0), 6))
        if len(read) < len(head):
            count("RecallFallbacks", reason="rerank_partial")
            return Reranked(out, "rerank_partial")
        return Reranked(out)

    @staticmethod
    def _fell_back(head: list[tuple[K, float]], reason: Fallback) -> Reranked[K]:
        count("RecallFallbacks", reason=reason)
        return Reranked(head, reason)
