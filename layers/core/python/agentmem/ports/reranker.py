"""Re-ranking for recall (SPEC §6.2): a model that reads the query and each candidate together.

An offline model shipped in a package on the embedded backend (``adapters/embedded/minilm_reranker.py``); a
managed or self-hosted rerank endpoint elsewhere. The recall service (``services/recall.py``) runs it over the
fused top candidates, within a deadline, and never fails because of it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence


class Reranker(ABC):
    """Scores passages against a query.

    Contract: one finite score per passage, in order, higher meaning more relevant, in [0, 1]; the same query and
    passage always score the same."""

    @property
    def name(self) -> str:
        return type(self).__name__

    def warm(self) -> None:  # noqa: B027 - a reranker without a model has nothing to load
        """Load what the first call would (a model's weights), so that a query's deadline never pays for it."""

    @abstractmethod
    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        """One score per passage."""

    def rerank_within(self, query: str, passages: Sequence[str], budget_s: float | None) -> list[float | None]:
        """One score per passage, or None for a passage left unread when ``budget_s`` (seconds, from the call)
        ran out; the passages are given best first, and read in that order. A model that reads every passage
        in one call (a remote endpoint) scores them all: a None from ``rerank`` breaks its contract, and is not
        taken for a passage left unread."""
        scores: list[float | None] = list(self.rerank(query, passages))
        if any(score is None for score in scores):
            raise ValueError(f"{self.name} answered None for a passage: rerank scores every passage")
        return scores
