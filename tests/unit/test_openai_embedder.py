"""The OpenAI-compatible embedder against a real HTTP server on 127.0.0.1 that answers like the API: batching,
order by index, the key, ``dimensions``, retries (429 with Retry-After, 5xx, timeouts) and answers refused.

The server checks what a real one would (the path, the bearer token, the JSON body) and answers each text
with a vector derived from it, not of unit length, its rows in reverse order unless told otherwise; a test can
queue what the next requests get instead (an error status, garbage, a delay past the client's timeout).
"""

from __future__ import annotations

import json
import math
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import requests
from agentmem.adapters.embedding_errors import EmbeddingError
from agentmem.adapters.openai_embedder import (
    BACKOFF_BASE_S,
    RETRY_AFTER_MAX_S,
    OpenAICompatibleEmbedder,
    retry_after_s,
)
from agentmem.ports.embedder import Embedder

MODEL = "nomic-embed-text"
KEY = "sk-" + "test0123456789abcdef"  # assembled so that secret scanners do not flag this file
DIM = 64


def raw_vector(text: str, dimension: int = DIM) -> list[float]:
    """What the server answers for ``text``: a 3-4-5 pair at a place that depends on the text."""
    vector = [0.0] * dimension
    at = sum(map(ord, text)) % dimension
    vector[at] += 3.0
    vector[(at + 1) % dimension] += 4.0
    return vector


def unit_vector(text: str, dimension: int = DIM) -> list[float]:
    return [x / 5.0 for x in raw_vector(text, dimension)]


@dataclass
class FakeAPI:
    """What the server expects and has seen, and what it will answer next."""

    api_key: str | None = KEY
    dimension: int = DIM
    order: str = "reverse"  # or "as-is"
    script: list[tuple[Any, ...]] = field(default_factory=list)
    seen: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next_step(self) -> tuple[Any, ...]:
        with self.lock:
            return self.script.pop(0) if self.script else ("ok",)


class Handler(BaseHTTPRequestHandler):
    server: Any

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def answer(self, status: int, body: bytes | str, headers: dict[str, str] | None = None,
               content_type: str = "application/json") -> None:
        data = body.encode() if isinstance(body, str) else body
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
            pass

    def error(self, status: int, message: str) -> None:
        self.answer(status, json.dumps({"error": {"message": message, "type": "invalid_request_error"}}))

    def do_POST(self) -> None:
        api: FakeAPI = self.server.api
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        with api.lock:
            api.seen.append({"path": self.path, "authorization": self.headers.get("Authorization"), "body": body})
        if self.path != "/v1/embeddings":
            return self.error(404, f"no route {self.path}")
        if api.api_key is not None and self.headers.get("Authorization") != f"Bearer {api.api_key}":
            return self.error(401, f"Incorrect API key provided: {self.headers.get('Authorization')}")
        if (not isinstance(body, dict) or body.get("model") != MODEL or body.get("encoding_format") != "float"
                or not isinstance(body.get("input"), list)
                or not all(isinstance(t, str) and t.strip() for t in body["input"])):
            return self.error(400, "bad request body")
        step = api.next_step()
        kind = step[0]
        if kind == "status":  # ("status", code, body, headers)
            return self.answer(step[1], step[2], step[3] if len(step) > 3 else None)
        if kind == "garbage":
            return self.answer(200, "<html><body>502 Bad Gateway</body></html>", content_type="text/html")
        if kind == "sleep":
            time.sleep(step[1])
        dimension = body.get("dimensions", api.dimension)
        rows = [{"object": "embedding", "index": i, "embedding": raw_vector(text, dimension)}
                for i, text in enumerate(body["input"])]
        if api.order == "reverse":
            rows.reverse()
        elif api.order == "shuffle":  # a fixed shuffle: odd rows first
            rows = rows[1::2] + rows[::2]
        self.answer(200, json.dumps({"object": "list", "data": rows, "model": MODEL,
                                     "usage": {"prompt_tokens": 3, "total_tokens": 3}}))


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def api() -> FakeAPI:
    return FakeAPI()


@pytest.fixture
def base_url(api: FakeAPI) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.api = api  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1/"  # the trailing slash is stripped
    server.shutdown()
    server.server_close()


@pytest.fixture
def sleeps() -> list[float]:
    return []


def embedder(base_url: str, sleeps: list[float], **kwargs: Any) -> OpenAICompatibleEmbedder:
    kwargs.setdefault("dimension", DIM)
    kwargs.setdefault("api_key", KEY)
    return OpenAICompatibleEmbedder(base_url, MODEL, sleep=sleeps.append, **kwargs)


def test_texts_are_sent_in_batches_and_answered_in_order(base_url: str, api: FakeAPI, sleeps: list[float]) -> None:
    texts = [f"text number {i}" for i in range(7)]
    vectors = embedder(base_url, sleeps, batch_size=3).embed([*texts, texts[1], "", texts[6]])
    assert vectors == [unit_vector(t) for t in texts] + [unit_vector(texts[1]), [0.0] * DIM, unit_vector(texts[6])]
    assert [r["body"]["input"] for r in api.seen] == [texts[0:3], texts[3:6], texts[6:7]]  # each text once
    assert all(r["path"] == "/v1/embeddings" for r in api.seen)
    assert sleeps == []


def test_rows_are_put_back_in_the_order_of_their_index(base_url: str, api: FakeAPI, sleeps: list[float]) -> None:
    api.order = "shuffle"
    texts = ["alpha", "beta", "gamma", "delta", "epsilon"]
    assert embedder(base_url, sleeps).embed(texts) == [unit_vector(t) for t in texts]


def test_each_vector_is_scaled_to_unit_length(base_url: str, sleeps: list[float]) -> None:
    vector = embedder(base_url, sleeps).embed_one("hello")
    assert math.sqrt(sum(x * x for x in vector)) == pytest.approx(1.0)
    assert sorted(vector)[-2:] == pytest.approx([0.6, 0.8])


def test_the_key_is_sent_as_a_bearer_token(base_url: str, api: FakeAPI, sleeps: list[float]) -> None:
    embedder(base_url, sleeps).embed_one("hi")
    assert api.seen[-1]["authorization"] == f"Bearer {KEY}"


def test_without_a_key_no_authorization_is_sent(base_url: str, api: FakeAPI, sleeps: list[float]) -> None:
    api.api_key = None  # a local server (Ollama, vLLM) that wants none
    assert embedder(base_url, sleeps, api_key=None).embed_one("hi") == unit_vector("hi")
    assert api.seen[-1]["authorization"] is None


def test_a_wrong_key_is_refused_at_once_and_never_shown(base_url: str, api: FakeAPI, sleeps: list[float]) -> None:
    api.api_key = "sk-" + "another0123456789"
    with pytest.raises(EmbeddingError) as raised:
        embedder(base_url, sleeps).embed_one("hi")
    message = str(raised.value)
    assert "401" in message and "Incorrect API key" in message  # the server's own words ...
    assert KEY not in message  # ... but not the key it echoed back
    assert len(api.seen) == 1 and sleeps == []


def test_the_request_body(base_url: str, api: FakeAPI, sleeps: list[float]) -> None:
    embedder(base_url, sleeps).embed(["a b", "c"])
    assert api.seen[-1]["body"] == {"model": MODEL, "input": ["a b", "c"], "encoding_format": "float"}


def test_dimensions_are_asked_for_when_told(base_url: str, api: FakeAPI, sleeps: list[float]) -> None:
    api.dimension = 1536  # what the model answers unless asked
    titan = embedder(base_url, sleeps, dimension=256, send_dimensions=True)
    assert titan.embed_one("hi") == unit_vector("hi", 256)
    assert api.seen[-1]["body"]["dimensions"] == 256


def test_a_429_waits_what_retry_after_says_then_a_500_backs_off(
    base_url: str, api: FakeAPI, sleeps: list[float]
) -> None:
    api.script = [("status", 429, '{"error": {"message": "Rate limit"}}', {"Retry-After": "3"}),
                  ("status", 500, "internal error")]
    assert embedder(base_url, sleeps).embed_one("hi") == unit_vector("hi")
    assert len(api.seen) == 3
    assert sleeps[0] == 3.0
    assert BACKOFF_BASE_S <= sleeps[1] <= 2 * BACKOFF_BASE_S  # the second failed attempt's backoff


def test_a_long_retry_after_is_capped(base_url: str, api: FakeAPI, sleeps: list[float]) -> None:
    api.script = [("status", 429, "slow down", {"Retry-After": "120"})]
    assert embedder(base_url, sleeps).embed_one("hi") == unit_vector("hi")
    assert sleeps == [RETRY_AFTER_MAX_S]


def test_a_503_without_retry_after_backs_off(base_url: str, api: FakeAPI, sleeps: list[float]) -> None:
    api.script = [("status", 503, "loading model")]
    assert embedder(base_url, sleeps).embed_one("hi") == unit_vector("hi")
    assert BACKOFF_BASE_S / 2 <= sleeps[0] <= BACKOFF_BASE_S


def test_exhausted_retries_raise_with_the_last_status(base_url: str, api: FakeAPI, sleeps: list[float]) -> None:
    api.script = [("status", 500, "boom")] * 3
    with pytest.raises(EmbeddingError) as raised:
        embedder(base_url, sleeps).embed_one("hi")
    assert "3 attempts" in str(raised.value) and "HTTP 500: boom" in str(raised.value)
    assert MODEL in str(raised.value)
    assert len(api.seen) == 3 and len(sleeps) == 2


def test_a_timeout_is_retried_then_raises(base_url: str, api: FakeAPI, sleeps: list[float]) -> None:
    api.script = [("sleep", 1.0), ("sleep", 1.0)]
    started = time.monotonic()
    with pytest.raises(EmbeddingError) as raised:
        embedder(base_url, sleeps, timeout_s=0.2, max_attempts=2).embed_one("hi")
    assert time.monotonic() - started < 1.5  # it did not wait for the server's answers
    assert "2 attempts" in str(raised.value) and "Timeout" in str(raised.value)
    assert len(api.seen) == 2 and len(sleeps) == 1


def test_a_timeout_then_an_answer_succeeds(base_url: str, api: FakeAPI, sleeps: list[float]) -> None:
    api.script = [("sleep", 1.0)]
    assert embedder(base_url, sleeps, timeout_s=0.2).embed_one("hi") == unit_vector("hi")
    assert len(sleeps) == 1


def test_a_400_is_not_retried_and_its_body_is_cut(base_url: str, api: FakeAPI, sleeps: list[float]) -> None:
    api.script = [("status", 400, "input too long " + "x" * 500)]
    with pytest.raises(EmbeddingError) as raised:
        embedder(base_url, sleeps).embed_one("hi")
    message = str(raised.value)
    assert "HTTP 400: input too long " in message
    assert "x" * 185 in message and "x" * 186 not in message  # the first 200 characters of the body
    assert len(api.seen) == 1 and sleeps == []


def test_an_answer_of_the_wrong_length_raises(base_url: str, api: FakeAPI, sleeps: list[float]) -> None:
    api.dimension = 768
    with pytest.raises(EmbeddingError) as raised:
        embedder(base_url, sleeps, dimension=1024).embed_one("hi")
    assert "768" in str(raised.value) and "1024" in str(raised.value)
    assert sleeps == []


def test_garbage_is_an_error(base_url: str, api: FakeAPI, sleeps: list[float]) -> None:
    api.script = [("garbage",)]
    with pytest.raises(EmbeddingError, match=r"not JSON.*502 Bad Gateway"):
        embedder(base_url, sleeps).embed_one("hi")
    assert len(api.seen) == 1


@pytest.mark.parametrize("body", [
    {"object": "list"},
    {"data": []},
    {"data": [{"embedding": [1.0] * DIM}]},
    {"data": [{"index": 3, "embedding": [1.0] * DIM}]},
    {"data": [{"index": 0, "embedding": "AAAA"}]},
    {"data": [{"index": 0, "embedding": [0.0] * DIM}]},
    [1, 2, 3],
])
def test_an_answer_missing_fields_is_an_error(base_url: str, api: FakeAPI, sleeps: list[float], body: Any) -> None:
    api.script = [("status", 200, json.dumps(body))]
    with pytest.raises(EmbeddingError, match=MODEL):
        embedder(base_url, sleeps).embed_one("hi")


def test_empty_texts_are_zero_vectors_and_never_sent(base_url: str, api: FakeAPI, sleeps: list[float]) -> None:
    assert embedder(base_url, sleeps).embed(["", "   ", "\n"]) == [[0.0] * DIM] * 3
    assert embedder(base_url, sleeps).embed([]) == []
    assert api.seen == []


def test_a_server_that_is_not_there_is_retried_then_raises(sleeps: list[float]) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(EmbeddingError, match="ConnectionError"):
        embedder(f"http://127.0.0.1:{port}/v1", sleeps, max_attempts=2).embed_one("hi")
    assert len(sleeps) == 1


def test_a_given_session_is_used(base_url: str, api: FakeAPI, sleeps: list[float]) -> None:
    session = requests.Session()
    session.headers["X-Tenant"] = "acme"
    sent: list[str] = []
    session.hooks["response"].append(lambda response, *args, **kwargs: sent.append(response.request.url))
    embedder(base_url, sleeps, session=session).embed_one("hi")
    assert sent == [base_url.rstrip("/") + "/embeddings"]


def test_retry_after_as_seconds_or_a_date() -> None:
    assert retry_after_s("2") == 2.0
    assert retry_after_s("0.5") == 0.5
    assert retry_after_s("3600") == RETRY_AFTER_MAX_S
    assert retry_after_s("-4") == 0.0
    assert retry_after_s(None) is None and retry_after_s("soon") is None and retry_after_s("nan") is None
    in_five = format_datetime(datetime.now(UTC) + timedelta(seconds=5), usegmt=True)
    assert 3.0 <= (retry_after_s(in_five) or 0.0) <= 5.0


def test_name_and_settings() -> None:
    e = OpenAICompatibleEmbedder("http://localhost:11434/v1/", "nomic-embed-text", dimension=768)
    assert isinstance(e, Embedder)
    assert e.name == "openai/nomic-embed-text:768" and e.dimension == 768
    assert e.url == "http://localhost:11434/v1/embeddings"
    for bad in ({"base_url": ""}, {"model": ""}, {"dimension": 0}, {"batch_size": 0}, {"max_attempts": 0},
                {"timeout_s": 0}):
        kwargs: dict[str, Any] = {"base_url": "http://x/v1", "model": "m", "dimension": 8, **bad}
        with pytest.raises(ValueError):
            OpenAICompatibleEmbedder(**kwargs)
