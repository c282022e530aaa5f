"""Recall's semantic side (SPEC §6.2): embed the query and ask the index, within a deadline, never failing.

``SemanticSide.start`` asks in the background (the keyword side runs meanwhile); ``answer()`` gives the index's
hits, or why there are none to use: ``not_configured`` (no embedder or no index), ``timeout`` (the embedder and
the index together took longer than the deadline) or ``index_unavailable`` (either raised, or answered something
that is not a vector). The callers (entries and journal search) fuse these hits with their keyword candidates
(``domain/recall.py``) and re-read every hit from the authoritative store before returning it.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass

from ..domain.recall import Calibration, Fallback, Mode
from ..observability import count, logger
from ..ports.embedder import Embedder
from ..ports.search_index import Filters, SearchHit, SearchIndex

_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="agentmem-recall")


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
