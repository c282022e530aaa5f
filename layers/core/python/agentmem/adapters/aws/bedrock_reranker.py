"""The re-ranking stage on AWS: Amazon Bedrock's rerank models through ``bedrock-agent-runtime`` ``rerank``.

``amazon.rerank-v1:0`` and ``cohere.rerank-v3-5:0`` (``MODELS``), named by their foundation-model ARN in the
client's region and partition. One call carries the query and every candidate (up to ``MAX_SOURCES``) and asks for
as many results as candidates; the answer comes best first with each candidate's ``index``, and is put back in
the candidates' order. Blank candidates are never sent (Bedrock refuses empty text) and score 0.

One attempt, no retries: the stage runs within a deadline of a couple of seconds (``rerank_deadline_ms``), and
a retry after throttling would land past it. Throttling, a refused request, no access to the model, a dropped
connection or an answer that is not one score in [0, 1] per candidate is a ``RerankError``, which the recall
service reads as ``rerank_unavailable`` and answers in the fused order.

IAM: ``bedrock:Rerank`` (which takes no resource) and ``bedrock:InvokeModel`` on the model.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from ...ports.reranker import Reranker
from ..rerank_errors import RerankError

if TYPE_CHECKING:
    from mypy_boto3_bedrock_agent_runtime import AgentsforBedrockRuntimeClient
else:
    AgentsforBedrockRuntimeClient = Any

MODELS = ("amazon.rerank-v1:0", "cohere.rerank-v3-5:0")
DEFAULT_MODEL_ID = MODELS[0]
MAX_SOURCES = 1000  # the API's limit on sources (and results) in one call
MAX_TEXT_CHARS = 32_000  # the API's limit on a query's or a document's text: longer is cut, not refused
DEFAULT_TIMEOUT_S = 2.0
TOLERANCE = 1e-6  # a score this far outside [0, 1] is rounding, and is clamped


def client_config(timeout_s: float) -> Config:
    """One attempt per call (``total_max_attempts`` counts the first), timeouts within the stage's deadline."""
    return Config(retries={"total_max_attempts": 1, "mode": "standard"},
                  connect_timeout=min(2.0, timeout_s), read_timeout=timeout_s)


def model_arn(model_id: str, region: str, partition: str = "aws") -> str:
    """The foundation-model ARN the rerank API takes (``arn:aws:bedrock:us-west-2::foundation-model/…``)."""
    return f"arn:{partition}:bedrock:{region}::foundation-model/{model_id}"


class BedrockReranker(Reranker):
    """``rerank`` with ``model_id`` through ``client`` (used as given; else one is made from ``boto3_session``, or
    a default session, in ``region``, or the session's, with one attempt and ``timeout_s``)."""

    def __init__(
        self,
        model_id: str = DEFAULT_MODEL_ID,
        *,
        client: AgentsforBedrockRuntimeClient | None = None,
        boto3_session: boto3.session.Session | None = None,
        region: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        if not model_id:
            raise ValueError("model_id must name a Bedrock rerank model")
        if timeout_s <= 0:
            raise ValueError("timeout_s must be positive")
        self.model_id = model_id
        self.client: AgentsforBedrockRuntimeClient = client or (boto3_session or boto3.session.Session()).client(
            "bedrock-agent-runtime", region_name=region, config=client_config(timeout_s)
        )
        region_name = self.client.meta.region_name
        if not region_name:
            raise ValueError("the Bedrock reranker needs a region (AGENTMEM_REGION or AWS_REGION)")
        self.model_arn = model_arn(model_id, region_name, self.client.meta.partition or "aws")

    @property
    def name(self) -> str:
        return f"bedrock/{self.model_id}"

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        sent = [i for i, passage in enumerate(passages) if passage.strip()]
        if not sent or not query.strip():
            return [0.0] * len(passages)
        if len(sent) > MAX_SOURCES:
            raise RerankError(f"{self.model_id} re-ranks at most {MAX_SOURCES} candidates, not {len(sent)}")
        try:
            answer = self.client.rerank(
                queries=[{"type": "TEXT", "textQuery": {"text": query[:MAX_TEXT_CHARS]}}],
                sources=[{"type": "INLINE", "inlineDocumentSource": {
                    "type": "TEXT", "textDocument": {"text": passages[i][:MAX_TEXT_CHARS]}}} for i in sent],
                rerankingConfiguration={"type": "BEDROCK_RERANKING_MODEL", "bedrockRerankingConfiguration": {
                    "numberOfResults": len(sent), "modelConfiguration": {"modelArn": self.model_arn}}},
            )
        except ClientError as error:
            detail = error.response.get("Error", {})
            raise RerankError(f"{self.model_id} refused to re-rank ({detail.get('Code', '')}: "
                              f"{detail.get('Message', '')})") from error
        except BotoCoreError as error:
            raise RerankError(f"{self.model_id} could not be reached ({type(error).__name__}: {error})") from error
        scores = self._scores(answer.get("results"), len(sent))
        out = [0.0] * len(passages)
        for position, score in zip(sent, scores, strict=True):
            out[position] = score
        return out

    def _scores(self, results: Any, count: int) -> list[float]:
        """One score per candidate sent, in the order sent: every index once, every score a number in [0, 1]."""
        if not isinstance(results, list) or len(results) != count:
            got = len(results) if isinstance(results, list) else "no"
            raise RerankError(f"{self.model_id} answered {got} results for {count} candidates")
        scores: dict[int, float] = {}
        for result in results:
            index = result.get("index") if isinstance(result, dict) else None
            score = result.get("relevanceScore") if isinstance(result, dict) else None
            if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < count or index in scores:
                raise RerankError(f"{self.model_id} answered a result for no candidate sent (index {index!r})")
            if (not isinstance(score, int | float) or isinstance(score, bool) or not math.isfinite(score)
                    or not -TOLERANCE <= score <= 1 + TOLERANCE):
                raise RerankError(f"{self.model_id} answered a score that is not in [0, 1] ({score!r})")
            scores[index] = min(max(float(score), 0.0), 1.0)
        return [scores[i] for i in range(count)]
