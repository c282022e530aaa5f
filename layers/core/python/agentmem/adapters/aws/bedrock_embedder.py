"""The embedder on AWS: Amazon Titan Text Embeddings V2 through ``bedrock-runtime`` ``invoke_model``.

Titan V2 embeds one text per call, so a batch is many calls: ``embed`` sends each distinct non-empty text once,
a few at a time (a bounded thread pool: boto3 clients are thread-safe, and Bedrock throttles by requests per
minute, so an unbounded fan-out would only buy throttling), and answers in the order it was asked. Empty and
whitespace-only texts are the zero vector of the port's contract and never reach Bedrock (which refuses them).

This class does its own retries, not botocore: it knows which failures are worth another try (throttling, a
model still loading, a 5xx, a dropped connection) and it backs off with jitter so that the pool's threads don't
retry in lock step. Its own client therefore makes a single attempt per call. Anything else — a refused
request, no access to the model, an answer of the wrong shape — is an ``EmbeddingError`` at once.

Every vector is scaled to unit length again even though ``normalize`` is asked for: the index scores by inner
product, and a vector that is not quite unit would skew every score it takes part in.
"""

from __future__ import annotations

import json
import logging
import math
import random
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as BotoConnectionError

from ...ports.embedder import Embedder
from ..embedding_errors import EmbeddingError

if TYPE_CHECKING:
    from mypy_boto3_bedrock_runtime import BedrockRuntimeClient
else:
    BedrockRuntimeClient = Any

DEFAULT_MODEL_ID = "amazon.titan-embed-text-v2:0"
DIMENSIONS = (256, 512, 1024)  # the only sizes Titan V2 answers
DEFAULT_DIMENSION = 1024
DEFAULT_MAX_WORKERS = 8
DEFAULT_MAX_ATTEMPTS = 4
MAX_INPUT_CHARS = 50_000  # Titan V2's input limit (with 8,192 tokens): longer input is refused, not cut
BACKOFF_BASE_S = 0.25  # the ceiling of the first wait; it doubles with each failed attempt ...
BACKOFF_MAX_S = 8.0  # ... up to this
RETRYABLE_CODES = frozenset(
    {"ThrottlingException", "ServiceUnavailableException", "ModelNotReadyException", "InternalServerException"}
)
# One attempt per botocore call (the retries are ours), and short timeouts: an embedding takes well under 1 s.
# ``total_max_attempts`` counts the first attempt; botocore's ``max_attempts`` counts retries only (1 = two sends).
CLIENT_CONFIG = Config(retries={"total_max_attempts": 1, "mode": "standard"}, connect_timeout=2, read_timeout=10)

_log = logging.getLogger(__name__)


def backoff_delay(attempt: int) -> float:
    """The wait after failed attempt ``attempt`` (1, 2, …): between half the ceiling and the ceiling, which
    doubles each time. Half is fixed so waits grow, half random so concurrent callers spread out."""
    ceiling = min(BACKOFF_MAX_S, BACKOFF_BASE_S * 2.0 ** (attempt - 1))
    return ceiling / 2 + random.uniform(0, ceiling / 2)


def unit(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector]


class BedrockTitanEmbedder(Embedder):
    """``embed`` through ``invoke_model`` with ``model_id`` (Titan V2 or a model taking the same body) at
    ``dimension`` (256, 512 or 1024). ``client`` is used as given; else one is made from ``boto3_session``
    (or a default session) in ``region`` (or the session's), making a single attempt per call.
    ``sleep`` is how the backoff waits (tests pass a recorder)."""

    def __init__(
        self,
        model_id: str = DEFAULT_MODEL_ID,
        *,
        dimension: int = DEFAULT_DIMENSION,
        client: BedrockRuntimeClient | None = None,
        boto3_session: boto3.session.Session | None = None,
        region: str | None = None,
        max_workers: int = DEFAULT_MAX_WORKERS,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not model_id:
            raise ValueError("model_id must name a Bedrock embedding model")
        if dimension not in DIMENSIONS:
            raise ValueError(f"Titan V2 embeds at 256, 512 or 1024 dimensions, not {dimension!r}")
        if max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.model_id = model_id
        self._dimension = dimension
        self.max_workers = max_workers
        self.max_attempts = max_attempts
        self._sleep = sleep
        self.client: BedrockRuntimeClient = client or (boto3_session or boto3.session.Session()).client(
            "bedrock-runtime", region_name=region, config=CLIENT_CONFIG
        )

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def name(self) -> str:
        return f"bedrock/{self.model_id}:{self._dimension}"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        # the text as sent is the key: two texts that differ only past the limit are one call
        sent = [text[:MAX_INPUT_CHARS] if text.strip() else "" for text in texts]
        distinct = list(dict.fromkeys(text for text in sent if text))
        by_text = dict(zip(distinct, self._embed_all(distinct), strict=True))
        zero = [0.0] * self._dimension
        return [list(by_text[text]) if text else list(zero) for text in sent]

    def _embed_all(self, texts: list[str]) -> list[list[float]]:
        workers = min(self.max_workers, len(texts))
        if workers <= 1:  # no pool for one text (the indexer's embed_one) or a pool of one
            return [self._embed_text(text) for text in texts]
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="titan-embed") as pool:
            futures = [pool.submit(self._embed_text, text) for text in texts]
            try:
                return [future.result() for future in futures]
            except BaseException:
                for future in futures:  # the batch has failed: don't start the calls still queued
                    future.cancel()
                raise

    def _embed_text(self, text: str) -> list[float]:
        """One text, retried while the failure is a passing one."""
        attempt = 1
        while True:
            try:
                return self._invoke(text)
            except ClientError as error:
                code = str(error.response.get("Error", {}).get("Code", ""))
                reason = f"{code}: {error.response.get('Error', {}).get('Message', '')}"
                if code not in RETRYABLE_CODES:
                    raise EmbeddingError(f"{self.model_id} refused the request ({reason})") from error
            except (BotoConnectionError, HTTPClientError) as error:
                reason = f"{type(error).__name__}: {error}"
            if attempt >= self.max_attempts:
                raise EmbeddingError(f"{self.model_id} failed after {attempt} attempts ({reason})")
            _log.warning("embedding with %s failed (attempt %d of %d): %s", self.model_id, attempt,
                         self.max_attempts, reason)
            self._sleep(backoff_delay(attempt))
            attempt += 1

    def _invoke(self, text: str) -> list[float]:
        response = self.client.invoke_model(
            modelId=self.model_id,
            body=json.dumps({"inputText": text, "dimensions": self._dimension, "normalize": True}),
            contentType="application/json",
            accept="application/json",
        )
        raw = response["body"].read()
        try:
            answer = json.loads(raw)
            embedding = answer["embedding"]
        except (ValueError, TypeError, KeyError) as error:
            raise EmbeddingError(f"{self.model_id} answered without an embedding: {raw[:200]!r}") from error
        if not isinstance(embedding, list) or not all(
            isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) for x in embedding
        ):
            raise EmbeddingError(f"{self.model_id} answered an embedding that is not a list of numbers")
        if len(embedding) != self._dimension:
            raise EmbeddingError(f"{self.model_id} answered {len(embedding)} dimensions, "
                                 f"expected {self._dimension}")
        vector = [float(x) for x in embedding]
        if not any(vector):
            raise EmbeddingError(f"{self.model_id} answered the zero vector for a text with something in it")
        return unit(vector)
