"""An embedder for any OpenAI-compatible ``POST {base_url}/embeddings``: OpenAI itself, Ollama's ``/v1``, vLLM,
LM Studio, hosted providers. One request carries up to ``batch_size`` texts.

The answer is trusted for nothing it can get wrong: its rows are put back in the order of their ``index``
(servers that batch internally may answer out of order), every vector must have the length the embedder was
configured with (a model swapped behind the same name must not slip vectors of another size, or another
space, into the index), and each is scaled to unit length (not every server normalises, and the index scores
by inner product).

Failures that pass — 429, a 5xx, a dropped or timed-out connection — are retried with backoff, waiting what a
``Retry-After`` asks for up to ``RETRY_AFTER_MAX_S``. Anything else is an ``EmbeddingError`` at once, naming
the status and the start of the body: a 4xx will answer the same next time. The api key is never in a
message, even when a server echoes it back.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import requests

from ..ports.embedder import Embedder
from .embedding_errors import EmbeddingError
from .openai_http import BACKOFF_BASE_S, RETRY_AFTER_MAX_S, JsonEndpoint, retry_after_s  # noqa: F401 (tests read the retry rules here)

DEFAULT_BATCH_SIZE = 64
DEFAULT_TIMEOUT_S = 10.0
DEFAULT_MAX_ATTEMPTS = 3
_log = logging.getLogger(__name__)


class OpenAICompatibleEmbedder(Embedder):
    """``embed`` with ``model`` at ``base_url`` (``http://localhost:11434/v1``). ``dimension`` is what the
    model answers (``send_dimensions`` asks for it, which OpenAI's text-embedding-3 models honour); ``api_key``
    goes as a bearer token. ``session`` is used as given (else one is made); ``sleep`` is how the backoff
    waits (tests pass a recorder)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        dimension: int,
        api_key: str | None = None,
        send_dimensions: bool = False,
        batch_size: int = DEFAULT_BATCH_SIZE,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not base_url or not base_url.strip("/"):
            raise ValueError("base_url must be the API's root, e.g. http://localhost:11434/v1")
        if not model:
            raise ValueError("model must name an embedding model")
        if dimension < 1:
            raise ValueError("dimension must be the length of the model's vectors")
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if timeout_s <= 0:
            raise ValueError("timeout_s must be positive")
        self.base_url = base_url.rstrip("/")
        self.url = f"{self.base_url}/embeddings"
        self.model = model
        self._dimension = dimension
        self._api_key = api_key or None
        self.send_dimensions = send_dimensions
        self.batch_size = batch_size
        self.timeout_s = timeout_s
        self.max_attempts = max_attempts
        self.session = session or requests.Session()
        self._http = JsonEndpoint(self.url, where=self._where, doing="embedding", error=EmbeddingError,
                                  api_key=self._api_key, timeout_s=timeout_s, max_attempts=max_attempts,
                                  session=self.session, sleep=sleep, log=_log)

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def name(self) -> str:
        return f"openai/{self.model}:{self._dimension}"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        distinct = list(dict.fromkeys(text for text in texts if text.strip()))
        by_text: dict[str, list[float]] = {}
        for start in range(0, len(distinct), self.batch_size):
            batch = distinct[start : start + self.batch_size]
            by_text.update(zip(batch, self._embed_batch(batch), strict=True))
        zero = [0.0] * self._dimension
        return [list(by_text[text]) if text.strip() else list(zero) for text in texts]

    # --- one request -----------------------------------------------------------------------------

    def _embed_batch(self, batch: list[str]) -> list[list[float]]:
        payload: dict[str, Any] = {"model": self.model, "input": batch, "encoding_format": "float"}
        if self.send_dimensions:
            payload["dimensions"] = self._dimension
        return self._vectors(self._http.post(payload), len(batch))

    def _vectors(self, response: requests.Response, count: int) -> list[list[float]]:
        """The rows of a 2xx answer, in the order of their ``index``."""
        rows = self._http.rows_by_index(response, "data", count, rows="embeddings", sent="texts")
        return [self._unit(rows[i].get("embedding")) for i in range(count)]

    def _unit(self, embedding: Any) -> list[float]:
        if not isinstance(embedding, list) or not all(
            isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) for x in embedding
        ):
            raise EmbeddingError(f"{self._where} answered an embedding that is not a list of numbers")
        if len(embedding) != self._dimension:
            raise EmbeddingError(f"{self._where} answered {len(embedding)} dimensions, expected {self._dimension}")
        norm = math.sqrt(sum(float(x) * float(x) for x in embedding))
        if not norm:
            raise EmbeddingError(f"{self._where} answered the zero vector for a text with something in it")
        return [float(x) / norm for x in embedding]

    # --- messages ----------------------------------------------------------------------------------

    @property
    def _where(self) -> str:
        return f"{self.model} at {self.url}"

    def _body(self, response: requests.Response) -> str:
        return self._http.body(response)
