"""The Titan V2 embedder against botocore's Stubber on a real ``bedrock-runtime`` client: the request body,
dedupe and order, empty texts, retries and their limits, and answers it must not accept.

Stubbed calls are answered in the order they were queued, so tests that queue several answers run with one
worker; the concurrency itself is checked with a fake client that answers from the text it is given.
"""

from __future__ import annotations

import io
import json
import math
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from agentmem.adapters.aws.bedrock_embedder import (
    BACKOFF_BASE_S,
    DEFAULT_MODEL_ID,
    MAX_INPUT_CHARS,
    BedrockTitanEmbedder,
    backoff_delay,
)
from agentmem.adapters.embedding_errors import EmbeddingError
from agentmem.ports.embedder import Embedder
from botocore.exceptions import ClientError, EndpointConnectionError
from botocore.response import StreamingBody
from botocore.stub import Stubber

MODEL = DEFAULT_MODEL_ID
DIM = 256


class JsonBody:
    """Equal to a request body that is this JSON, whatever its spacing or key order."""

    def __init__(self, expected: dict[str, Any]) -> None:
        self.expected = expected

    def __eq__(self, other: object) -> bool:
        raw = other.decode() if isinstance(other, bytes) else other
        return isinstance(raw, str) and json.loads(raw) == self.expected

    def __repr__(self) -> str:
        return f"JsonBody({self.expected!r})"


def params(text: str, dimension: int = DIM, model: str = MODEL) -> dict[str, Any]:
    body = JsonBody({"inputText": text, "dimensions": dimension, "normalize": True})
    return {"modelId": model, "body": body, "contentType": "application/json", "accept": "application/json"}


def answer(embedding: list[float], tokens: int = 3) -> dict[str, Any]:
    data = json.dumps({"embedding": embedding, "inputTextTokenCount": tokens}).encode()
    return {"body": StreamingBody(io.BytesIO(data), len(data)), "contentType": "application/json"}


def raw_answer(data: bytes) -> dict[str, Any]:
    return {"body": StreamingBody(io.BytesIO(data), len(data)), "contentType": "application/json"}


def one_hot(i: int, dimension: int = DIM) -> list[float]:
    vector = [0.0] * dimension
    vector[i] = 1.0
    return vector


@pytest.fixture
def client() -> Any:
    return boto3.client("bedrock-runtime", region_name="us-east-1", aws_access_key_id="testing",
                        aws_secret_access_key="testing")


@pytest.fixture
def stubber(client: Any) -> Iterator[Stubber]:
    with Stubber(client) as stub:
        yield stub
        stub.assert_no_pending_responses()


@pytest.fixture
def sleeps() -> list[float]:
    return []


def embedder(client: Any, sleeps: list[float], **kwargs: Any) -> BedrockTitanEmbedder:
    kwargs.setdefault("dimension", DIM)
    kwargs.setdefault("max_workers", 1)
    return BedrockTitanEmbedder(client=client, sleep=sleeps.append, **kwargs)


def test_vectors_come_back_in_order_and_each_distinct_text_is_sent_once(
    client: Any, stubber: Stubber, sleeps: list[float]
) -> None:
    stubber.add_response("invoke_model", answer(one_hot(0)), params("alpha"))
    stubber.add_response("invoke_model", answer(one_hot(1)), params("beta"))
    vectors = embedder(client, sleeps).embed(["alpha", "beta", "alpha", "beta", "alpha"])
    assert vectors == [one_hot(0), one_hot(1), one_hot(0), one_hot(1), one_hot(0)]
    vectors[0][0] = 9.0  # a caller changing one vector does not change its duplicate
    assert vectors[2][0] == 1.0


def test_empty_and_blank_texts_are_the_zero_vector_and_never_sent(
    client: Any, stubber: Stubber, sleeps: list[float]
) -> None:
    stubber.add_response("invoke_model", answer(one_hot(5)), params("x"))
    vectors = embedder(client, sleeps).embed(["", "  \n\t", "x", ""])
    assert vectors == [[0.0] * DIM, [0.0] * DIM, one_hot(5), [0.0] * DIM]
    assert embedder(client, sleeps).embed(["", " "]) == [[0.0] * DIM] * 2  # no call queued: none made
    assert embedder(client, sleeps).embed([]) == []


@pytest.mark.parametrize("dimension", [0, 128, 300, 768, 1536])
def test_only_titan_dimensions_are_accepted(client: Any, dimension: int) -> None:
    with pytest.raises(ValueError, match="256, 512 or 1024"):
        BedrockTitanEmbedder(client=client, dimension=dimension)


@pytest.mark.parametrize("dimension", [256, 512, 1024])
def test_each_titan_dimension_is_asked_for_and_named(client: Any, stubber: Stubber, dimension: int) -> None:
    stubber.add_response("invoke_model", answer(one_hot(0, dimension)), params("hi", dimension))
    titan = BedrockTitanEmbedder(client=client, dimension=dimension)
    assert titan.embed_one("hi") == one_hot(0, dimension)
    assert titan.dimension == dimension
    assert titan.name == f"bedrock/{MODEL}:{dimension}"


def test_the_model_id_is_sent(client: Any, stubber: Stubber, sleeps: list[float]) -> None:
    model = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.amazon.titan-embed-text-v2:0"
    stubber.add_response("invoke_model", answer(one_hot(0)), params("hi", model=model))
    titan = embedder(client, sleeps, model_id=model)
    assert titan.embed_one("hi") == one_hot(0)
    assert titan.name == f"bedrock/{model}:{DIM}"


def test_the_answer_is_scaled_to_unit_length(client: Any, stubber: Stubber, sleeps: list[float]) -> None:
    stubber.add_response("invoke_model", answer([3.0, 4.0] + [0.0] * (DIM - 2)), params("x"))
    vector = embedder(client, sleeps).embed_one("x")
    assert vector[:2] == pytest.approx([0.6, 0.8])
    assert math.sqrt(sum(v * v for v in vector)) == pytest.approx(1.0)


@pytest.mark.parametrize("code", ["ThrottlingException", "ServiceUnavailableException", "ModelNotReadyException",
                                  "InternalServerException"])
def test_a_passing_failure_is_retried_then_succeeds(
    client: Any, stubber: Stubber, sleeps: list[float], code: str
) -> None:
    stubber.add_client_error("invoke_model", service_error_code=code, service_message="slow down",
                             http_status_code=429 if code == "ThrottlingException" else 503,
                             expected_params=params("x"))
    stubber.add_client_error("invoke_model", service_error_code=code, service_message="slow down",
                             http_status_code=503, expected_params=params("x"))
    stubber.add_response("invoke_model", answer(one_hot(2)), params("x"))
    assert embedder(client, sleeps).embed_one("x") == one_hot(2)
    assert len(sleeps) == 2
    assert BACKOFF_BASE_S / 2 <= sleeps[0] <= BACKOFF_BASE_S
    assert BACKOFF_BASE_S <= sleeps[1] <= 2 * BACKOFF_BASE_S  # the wait grows


@pytest.mark.parametrize("code, status", [("ValidationException", 400), ("AccessDeniedException", 403)])
def test_a_refused_request_is_not_retried(
    client: Any, stubber: Stubber, sleeps: list[float], code: str, status: int
) -> None:
    stubber.add_client_error("invoke_model", service_error_code=code, service_message="Malformed input request",
                             http_status_code=status)
    with pytest.raises(EmbeddingError) as raised:
        embedder(client, sleeps).embed_one("x")
    assert MODEL in str(raised.value) and code in str(raised.value)
    assert "Malformed input request" in str(raised.value)
    assert sleeps == []


def test_exhausted_retries_raise_an_embedding_error(client: Any, stubber: Stubber, sleeps: list[float]) -> None:
    for _ in range(3):
        stubber.add_client_error("invoke_model", service_error_code="ThrottlingException",
                                 service_message="Too many requests", http_status_code=429)
    with pytest.raises(EmbeddingError) as raised:
        embedder(client, sleeps, max_attempts=3).embed_one("x")
    message = str(raised.value)
    assert MODEL in message and "3 attempts" in message and "ThrottlingException" in message
    assert len(sleeps) == 2  # no wait after the last attempt


class FlakyConnection:
    """A client whose first ``failures`` calls can't connect; later calls go to ``inner``."""

    def __init__(self, inner: Any, failures: int) -> None:
        self.inner = inner
        self.failures = failures

    def invoke_model(self, **kwargs: Any) -> Any:
        if self.failures:
            self.failures -= 1
            raise EndpointConnectionError(endpoint_url="https://bedrock-runtime.us-east-1.amazonaws.com")
        return self.inner.invoke_model(**kwargs)


def test_a_connection_error_is_retried(client: Any, stubber: Stubber, sleeps: list[float]) -> None:
    stubber.add_response("invoke_model", answer(one_hot(1)), params("x"))
    assert embedder(FlakyConnection(client, failures=2), sleeps).embed_one("x") == one_hot(1)
    assert len(sleeps) == 2


def test_a_connection_that_never_comes_raises_an_embedding_error(client: Any, sleeps: list[float]) -> None:
    with pytest.raises(EmbeddingError, match="EndpointConnectionError"):
        embedder(FlakyConnection(client, failures=10), sleeps, max_attempts=2).embed_one("x")
    assert len(sleeps) == 1


def test_an_answer_of_the_wrong_length_raises(client: Any, stubber: Stubber, sleeps: list[float]) -> None:
    stubber.add_response("invoke_model", answer(one_hot(0, 255)), params("x"))
    with pytest.raises(EmbeddingError) as raised:
        embedder(client, sleeps).embed_one("x")
    assert "255" in str(raised.value) and "256" in str(raised.value)
    assert sleeps == []


@pytest.mark.parametrize("data", [b"<html>oops</html>", b'{"inputTextTokenCount": 3}', b'{"embedding": "no"}',
                                  json.dumps({"embedding": [0.0] * DIM}).encode()])
def test_an_answer_without_a_usable_embedding_raises(
    client: Any, stubber: Stubber, sleeps: list[float], data: bytes
) -> None:
    stubber.add_response("invoke_model", raw_answer(data), params("x"))
    with pytest.raises(EmbeddingError, match=MODEL):
        embedder(client, sleeps).embed_one("x")


def test_long_text_is_cut_to_the_model_limit(client: Any, stubber: Stubber, sleeps: list[float]) -> None:
    text = "word " * 12_000  # 60,000 characters
    stubber.add_response("invoke_model", answer(one_hot(3)), params(text[:MAX_INPUT_CHARS]))
    # the second text differs from the first only past the limit: what is sent is the same, so one call
    assert embedder(client, sleeps).embed([text, text + "tail"]) == [one_hot(3), one_hot(3)]


class TextClient:
    """A fake client answering each text with its own one-hot vector, slowly, counting calls in flight."""

    def __init__(self, slots: dict[str, int]) -> None:
        self.slots = slots
        self.lock = threading.Lock()
        self.in_flight = 0
        self.most_in_flight = 0
        self.calls: list[str] = []

    def invoke_model(self, **kwargs: Any) -> dict[str, Any]:
        text = json.loads(kwargs["body"])["inputText"]
        with self.lock:
            self.calls.append(text)
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        time.sleep(0.02 * (len(self.slots) - self.slots[text]))  # the first texts answer last
        with self.lock:
            self.in_flight -= 1
        return answer(one_hot(self.slots[text]))


def test_distinct_texts_are_sent_concurrently_within_the_bound(sleeps: list[float]) -> None:
    texts = [f"text {i}" for i in range(10)]
    fake = TextClient({text: i for i, text in enumerate(texts)})
    titan = BedrockTitanEmbedder(client=fake, dimension=DIM, max_workers=4, sleep=sleeps.append)
    vectors = titan.embed([*texts, "", texts[0]])
    assert vectors == [one_hot(i) for i in range(10)] + [[0.0] * DIM, one_hot(0)]
    assert sorted(fake.calls) == sorted(texts)  # each once
    assert 2 <= fake.most_in_flight <= 4


def test_one_failing_text_fails_the_batch(client: Any, sleeps: list[float]) -> None:
    class HalfRefused(TextClient):
        def invoke_model(self, **kwargs: Any) -> dict[str, Any]:
            if json.loads(kwargs["body"])["inputText"] == "bad":
                raise ClientError({"Error": {"Code": "ValidationException", "Message": "refused"}}, "InvokeModel")
            return super().invoke_model(**kwargs)

    fake = HalfRefused({"good": 0, "bad": 1})
    titan = BedrockTitanEmbedder(client=fake, dimension=DIM, max_workers=2, sleep=sleeps.append)
    with pytest.raises(EmbeddingError, match="refused"):
        titan.embed(["good", "bad"])


def test_backoff_grows_and_is_capped() -> None:
    for attempt in range(1, 12):
        ceiling = min(8.0, BACKOFF_BASE_S * 2 ** (attempt - 1))
        assert ceiling / 2 <= backoff_delay(attempt) <= ceiling


def test_a_client_from_a_session_makes_one_attempt_per_call() -> None:
    session = boto3.session.Session(region_name="eu-west-1", aws_access_key_id="testing",
                                    aws_secret_access_key="testing")
    titan = BedrockTitanEmbedder(boto3_session=session, dimension=512)
    assert isinstance(titan, Embedder)
    assert titan.client.meta.region_name == "eu-west-1"
    config = titan.client.meta.config
    assert config.retries == {"total_max_attempts": 1, "mode": "standard"}
    assert config.connect_timeout == 2 and config.read_timeout == 10
    assert BedrockTitanEmbedder(boto3_session=session, region="eu-central-1").client.meta.region_name == "eu-central-1"
    with pytest.raises(ValueError):
        BedrockTitanEmbedder("", boto3_session=session)
    with pytest.raises(ValueError):
        BedrockTitanEmbedder(boto3_session=session, max_attempts=0)
    with pytest.raises(ValueError):
        BedrockTitanEmbedder(boto3_session=session, max_workers=0)


def test_its_own_client_sends_once_per_attempt(monkeypatch: pytest.MonkeyPatch, sleeps: list[float]) -> None:
    with socket.socket() as probe:  # a port nothing listens on: every send fails to connect, at once
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", f"http://127.0.0.1:{port}")
    session = boto3.session.Session(region_name="us-east-1", aws_access_key_id="testing",
                                    aws_secret_access_key="testing")
    titan = BedrockTitanEmbedder(boto3_session=session, dimension=DIM, max_attempts=3, sleep=sleeps.append)
    sends: list[str] = []
    titan.client.meta.events.register("before-send.bedrock-runtime.InvokeModel",
                                      lambda **kwargs: sends.append("sent"))
    with pytest.raises(EmbeddingError, match="3 attempts"):
        titan.embed_one("x")
    assert len(sends) == 3  # botocore retried none of them: the retries are the embedder's
    assert len(sleeps) == 2
