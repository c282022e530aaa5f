"""The re-ranking stage on a self-hosted or hosted Cohere-style endpoint: ``POST {model, query, documents,
top_n}`` answered ``{results: [{index, relevance_score}]}``, the shape Cohere's ``/v2/rerank``, Jina's
``/v1/rerank`` and vLLM's ``/v1/rerank`` serve (text-embeddings-inference's own ``/rerank`` takes ``texts`` and
answers a bare list: it is not this shape).

The URL is the endpoint itself (the paths differ between servers). One request carries every candidate and asks
for as many results as candidates; they come back best first with each candidate's ``index`` and are put back
in the candidates' order. Blank candidates are never sent and score 0.

Sent through the HTTP helper every OpenAI-compatible adapter uses (``openai_http.py``: the api key as a bearer
token and never in a message), with one attempt by default: the stage runs within a deadline
(``rerank_deadline_ms``) that a retry would miss. The answer is trusted for nothing it can get wrong: not JSON,
not one result per candidate, an index twice or out of range, a score that is not a number in [0, 1] (servers
that answer raw logits) is a ``RerankError``, which the recall service reads as ``rerank_unavailable`` and answers
in the fused order.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import requests

from ..ports.reranker import Reranker
from .openai_http import JsonEndpoint
from .rerank_errors import RerankError

DEFAULT_TIMEOUT_S = 2.0
TOLERANCE = 1e-6  # a score this far outside [0, 1] is rounding, and is clamped
_log = logging.getLogger(__name__)


class HttpReranker(Reranker):
    """``rerank`` at ``url`` (``http://localhost:8000/v1/rerank``) with ``model`` (sent when given); ``api_key``
    goes as a bearer token. ``session`` is used as given (else one is made)."""

    def __init__(
        self,
        url: str,
        *,
        model: str | None = None,
        api_key: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_attempts: int = 1,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError("url must be the rerank endpoint, e.g. http://localhost:8000/v1/rerank")
        if timeout_s <= 0:
            raise ValueError("timeout_s must be positive")
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.url = url
        self.model = model or None
        self._where = f"the reranker at {url}"
        self._http = JsonEndpoint(url, where=self._where, doing="re-ranking", error=RerankError, api_key=api_key,
                                  timeout_s=timeout_s, max_attempts=max_attempts,
                                  session=session or requests.Session(), sleep=sleep, log=_log)

    @property
    def name(self) -> str:
        return f"http/{self.model or self.url}"

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        sent = [i for i, passage in enumerate(passages) if passage.strip()]
        if not sent or not query.strip():
            return [0.0] * len(passages)
        payload: dict[str, Any] = {"query": query, "documents": [passages[i] for i in sent], "top_n": len(sent)}
        if self.model:
            payload["model"] = self.model
        response = self._http.post(payload)
        scores = self._scores(response, len(sent))
        out = [0.0] * len(passages)
        for position, score in zip(sent, scores, strict=True):
            out[position] = score
        return out

    def _scores(self, response: requests.Response, count: int) -> list[float]:
        """One score per candidate sent, in the order sent."""
        results = self._http.rows_by_index(response, "results", count, rows="results", sent="candidates")
        scores = []
        for index in range(count):
            score = results[index].get("relevance_score")
            if (not isinstance(score, int | float) or isinstance(score, bool) or not math.isfinite(score)
                    or not -TOLERANCE <= score <= 1 + TOLERANCE):
                raise RerankError(f"{self._where} answered a score that is not a number in [0, 1] ({score!r})")
            scores.append(min(max(float(score), 0.0), 1.0))
        return scores
