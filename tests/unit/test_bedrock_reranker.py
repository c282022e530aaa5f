"""The Bedrock reranker against botocore's Stubber on a real ``bedrock-agent-runtime`` client (the service model
validates every request and answer): the request's shape and model ARN, scores put back in the candidates'
order, blank candidates, and throttling, refusals and garbage answers becoming the stage's failure, which the
recall service turns into ``rerank_unavailable``."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from agentmem.adapters.aws.bedrock_reranker import MAX_TEXT_CHARS, MODELS, BedrockReranker, model_arn
from agentmem.adapters.rerank_errors import RerankError
from agentmem.bootstrap import build_reranker
from agentmem.ports.reranker import Reranker
from agentmem.services.recall import Reranking
from agentmem.settings import Settings
from botocore.exceptions import EndpointConnectionError
from botocore.stub import Stubber

REGION = "us-west-2"


@pytest.fixture
def client() -> Any:
    return boto3.client("bedrock-agent-runtime", region_name=REGION, aws_access_key_id="testing",
                        aws_secret_access_key="testing")


@pytest.fixture
def stubber(client: Any) -> Iterator[Stubber]:
    with Stubber(client) as stub:
        yield stub
        stub.assert_no_pending_responses()


def request(query: str, documents: list[str], model: str = MODELS[0]) -> dict[str, Any]:
    return {
        "queries": [{"type": "TEXT", "textQuery": {"text": query}}],
        "sources": [{"type": "INLINE", "inlineDocumentSource": {"type": "TEXT", "textDocument": {"text": d}}}
                    for d in documents],
        "rerankingConfiguration": {"type": "BEDROCK_RERANKING_MODEL", "bedrockRerankingConfiguration": {
            "numberOfResults": len(documents),
            "modelConfiguration": {"modelArn": f"arn:aws:bedrock:{REGION}::foundation-model/{model}"}}},
    }


def results(*pairs: tuple[int, float]) -> dict[str, Any]:
    return {"results": [{"index": i, "relevanceScore": s} for i, s in pairs]}


@pytest.mark.parametrize("model", MODELS)
def test_scores_come_back_in_the_candidates_order(client: Any, stubber: Stubber, model: str) -> None:
    # Given three candidates, answered best first as Bedrock does
    documents = ["the pharmacy closes at six", "we moved the standup to Tuesday", "it rained all week"]
    stubber.add_response("rerank", results((1, 0.91), (0, 0.42), (2, 0.03)),
                         request("when is the standup?", documents, model))
    # Then each candidate gets its own score, in the order asked
    reranker = BedrockReranker(model, client=client)
    assert isinstance(reranker, Reranker) and reranker.name == f"bedrock/{model}"
    assert reranker.rerank("when is the standup?", documents) == [0.42, 0.91, 0.03]


def test_blank_candidates_are_not_sent_and_score_zero(client: Any, stubber: Stubber) -> None:
    stubber.add_response("rerank", results((1, 0.2), (0, 0.8)), request("q", ["first", "second"]))
    assert BedrockReranker(client=client).rerank("q", ["first", "  ", "", "second"]) == [0.8, 0.0, 0.0, 0.2]


def test_nothing_to_rerank_makes_no_call(client: Any, stubber: Stubber) -> None:
    assert BedrockReranker(client=client).rerank("q", ["", " \n"]) == [0.0, 0.0]
    assert BedrockReranker(client=client).rerank("   ", ["text"]) == [0.0]


def test_texts_past_the_api_limit_are_cut(client: Any, stubber: Stubber) -> None:
    long = "word " * 10_000
    stubber.add_response("rerank", results((0, 0.5)), request(long[:MAX_TEXT_CHARS], [long[:MAX_TEXT_CHARS]]))
    assert BedrockReranker(client=client).rerank(long, [long]) == [0.5]


@pytest.mark.parametrize(("code", "status"), [("ThrottlingException", 429), ("AccessDeniedException", 403),
                                              ("ValidationException", 400), ("ServiceQuotaExceededException", 400)])
def test_throttling_and_refusals_are_the_stages_failure(client: Any, stubber: Stubber, code: str, status: int) -> None:
    stubber.add_client_error("rerank", service_error_code=code, service_message="Too many requests",
                             http_status_code=status)
    with pytest.raises(RerankError) as raised:
        BedrockReranker(client=client).rerank("q", ["a"])
    assert MODELS[0] in str(raised.value) and code in str(raised.value)


@pytest.mark.parametrize("answer", [
    results((0, 0.5)),  # one result for two candidates
    results((0, 0.5), (0, 0.4)),  # the same candidate twice
    results((0, 0.5), (2, 0.4)),  # a candidate never sent
    results((0, 0.5), (1, 1.7)),  # a score outside [0, 1]
    results((0, 0.5), (1, -0.2)),
])
def test_answers_that_are_not_one_score_per_candidate_fail(client: Any, stubber: Stubber,
                                                            answer: dict[str, Any]) -> None:
    stubber.add_response("rerank", answer, request("q", ["a", "b"]))
    with pytest.raises(RerankError):
        BedrockReranker(client=client).rerank("q", ["a", "b"])


class Unreachable:
    """A client that cannot connect, with a real one's meta."""

    def __init__(self, inner: Any) -> None:
        self.meta = inner.meta

    def rerank(self, **kwargs: Any) -> Any:
        raise EndpointConnectionError(endpoint_url=f"https://bedrock-agent-runtime.{REGION}.amazonaws.com")


def test_a_connection_that_never_comes_is_the_stages_failure(client: Any) -> None:
    with pytest.raises(RerankError, match="EndpointConnectionError"):
        BedrockReranker(client=Unreachable(client)).rerank("q", ["a"])


def test_throttling_makes_deep_search_answer_the_fused_order(client: Any, stubber: Stubber) -> None:
    # Given the stage with the Bedrock reranker, and Bedrock throttling
    stubber.add_client_error("rerank", service_error_code="ThrottlingException", http_status_code=429)
    head = [(("c", 1), 0.9), (("c", 2), 0.5)]
    reranked = Reranking(lambda: BedrockReranker(client=client)).run("q", head, ["a", "b"])
    # Then the candidates keep the fused order and the answer names the fallback
    assert reranked.ranked == head and reranked.fallback == "rerank_unavailable"


def test_a_client_from_a_session_makes_one_attempt_within_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_AGENT_RUNTIME", f"http://127.0.0.1:{port}")
    session = boto3.session.Session(region_name="eu-central-1", aws_access_key_id="testing",
                                    aws_secret_access_key="testing")
    reranker = BedrockReranker(MODELS[1], boto3_session=session, timeout_s=1.5)
    assert reranker.model_arn == "arn:aws:bedrock:eu-central-1::foundation-model/cohere.rerank-v3-5:0"
    config = reranker.client.meta.config
    assert config.retries == {"total_max_attempts": 1, "mode": "standard"} and config.read_timeout == 1.5
    sends: list[str] = []
    reranker.client.meta.events.register("before-send.bedrock-agent-runtime.Rerank",
                                         lambda **kwargs: sends.append("sent"))
    with pytest.raises(RerankError):
        reranker.rerank("q", ["a"])
    assert sends == ["sent"]  # botocore retried nothing: a retry would land past the deadline


def test_the_model_arn_follows_the_partition() -> None:
    assert model_arn("amazon.rerank-v1:0", "cn-north-1", "aws-cn") == (
        "arn:aws-cn:bedrock:cn-north-1::foundation-model/amazon.rerank-v1:0")


def test_the_setting_chooses_bedrock_with_its_model_and_region() -> None:
    settings = Settings(reranker="bedrock", rerank_model_id="cohere.rerank-v3-5:0", region="ap-northeast-1",
                        rerank_deadline_ms=800)
    reranker = build_reranker(settings)
    assert isinstance(reranker, BedrockReranker)
    assert reranker.model_arn == "arn:aws:bedrock:ap-northeast-1::foundation-model/cohere.rerank-v3-5:0"
    assert reranker.client.meta.config.read_timeout == 0.8


def test_only_bedrocks_rerank_models_are_accepted() -> None:
    with pytest.raises(ValueError, match="rerank_model_id"):
        Settings(reranker="bedrock", rerank_model_id="amazon.titan-embed-text-v2:0")
