"""The Cohere-style reranker against a real HTTP server on 127.0.0.1 that answers as Cohere, Jina and vLLM do
(``{results: [{index, relevance_score}]}``, best first): the request, scores back in the candidates' order, the
bearer key, and refusals, a server that hangs and garbage answers becoming the stage's failure, which the recall
service turns into ``rerank_unavailable``."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from agentmem.adapters.http_reranker import HttpReranker
from agentmem.adapters.rerank_errors import RerankError
from agentmem.bootstrap import build_reranker
from agentmem.ports.reranker import Reranker
from agentmem.services.recall import Reranking
from agentmem.settings import Settings

KEY = "sk-rerank-secret-123"
MODEL = "rerank-v3.5"


def overlap(query: str, document: str) -> float:
    """The server's model: the share of the query's words in the document."""
    words = set(query.lower().split())
    return round(len(words & set(document.lower().split())) / len(words), 6)


class FakeRerankAPI:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.answer: Any = None  # when set, the body answered instead of the scores
        self.status = 200
        self.hang = threading.Event()  # set: answer at once; clear: wait until the test ends
        self.hang.set()


class Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        api: FakeRerankAPI = self.server.api  # type: ignore[attr-defined]
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        api.requests.append(body)
        api.headers.append(dict(self.headers))
        api.hang.wait(5)
        if self.path != "/v1/rerank":
            return self.send(404, {"message": f"no route {self.path}"})
        if api.status != 200:
            return self.send(api.status, {"message": f"refused, key {self.headers.get('Authorization')}"})
        if api.answer is not None:
            return self.send(200, api.answer)
        results = [{"index": i, "relevance_score": overlap(body["query"], d)} for i, d in enumerate(body["documents"])]
        results.sort(key=lambda r: -r["relevance_score"])
        self.send(200, {"id": "r-1", "results": results[: body.get("top_n", len(results))],
                        "meta": {"billed_units": {"search_units": 1}}})

    def send(self, status: int, answer: Any) -> None:
        data = answer.encode() if isinstance(answer, str) else json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def api() -> Iterator[FakeRerankAPI]:
    fake = FakeRerankAPI()
    yield fake
    fake.hang.set()


@pytest.fixture
def url(api: FakeRerankAPI) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.api = api  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1/rerank"
    api.hang.set()
    server.shutdown()
    server.server_close()


DOCUMENTS = ["the pharmacy closes at six", "we moved the standup to tuesday morning", "it rained all week"]


def test_scores_come_back_in_the_candidates_order(api: FakeRerankAPI, url: str) -> None:
    reranker = HttpReranker(url, model=MODEL, api_key=KEY)
    assert isinstance(reranker, Reranker) and reranker.name == f"http/{MODEL}"
    # the server answers best first; each candidate gets its own score, in the order asked
    assert reranker.rerank("standup tuesday", DOCUMENTS) == [0.0, 1.0, 0.0]
    assert reranker.rerank("pharmacy week", DOCUMENTS) == [0.5, 0.0, 0.5]
    assert api.requests[0] == {"model": MODEL, "query": "standup tuesday", "documents": DOCUMENTS, "top_n": 3}
    assert api.headers[0]["Authorization"] == f"Bearer {KEY}"


def test_without_a_model_or_key_neither_is_sent(api: FakeRerankAPI, url: str) -> None:
    assert HttpReranker(url).rerank("rained", DOCUMENTS) == [0.0, 0.0, 1.0]
    assert "model" not in api.requests[0] and "Authorization" not in api.headers[0]


def test_blank_candidates_are_not_sent_and_score_zero(api: FakeRerankAPI, url: str) -> None:
    assert HttpReranker(url).rerank("rained", ["", DOCUMENTS[2], "  "]) == [0.0, 1.0, 0.0]
    assert api.requests[0]["documents"] == [DOCUMENTS[2]] and api.requests[0]["top_n"] == 1
    assert HttpReranker(url).rerank("rained", ["", " "]) == [0.0, 0.0]
    assert len(api.requests) == 1  # nothing to rerank: no request


@pytest.mark.parametrize("answer", [
    "<html>502 Bad Gateway</html>",  # not JSON
    {"data": []},  # no results
    [{"index": 0, "score": 0.5}],  # text-embeddings-inference's own shape
    {"results": [{"index": 0, "relevance_score": 0.5}]},  # fewer results than candidates
    {"results": [{"index": i, "relevance_score": 0.5} for i in range(4)]},  # more
    {"results": [{"index": 0, "relevance_score": 0.5}, {"index": 0, "relevance_score": 0.4},
                 {"index": 1, "relevance_score": 0.3}]},  # a candidate twice
    {"results": [{"index": 0, "relevance_score": 0.5}, {"index": 1, "relevance_score": 0.4},
                 {"index": 3, "relevance_score": 0.3}]},  # an index out of range
    {"results": [{"index": -1, "relevance_score": 0.5}, {"index": 1, "relevance_score": 0.4},
                 {"index": 2, "relevance_score": 0.3}]},
    {"results": [{"index": "0", "relevance_score": 0.5}, {"index": 1, "relevance_score": 0.4},
                 {"index": 2, "relevance_score": 0.3}]},  # an index that is not a number
    {"results": [{"index": 0, "relevance_score": "high"}, {"index": 1, "relevance_score": 0.4},
                 {"index": 2, "relevance_score": 0.3}]},  # a score that is not a number
    {"results": [{"index": 0, "relevance_score": None}, {"index": 1, "relevance_score": 0.4},
                 {"index": 2, "relevance_score": 0.3}]},
    {"results": [{"index": 0, "relevance_score": True}, {"index": 1, "relevance_score": 0.4},
                 {"index": 2, "relevance_score": 0.3}]},
    {"results": [{"index": 0, "relevance_score": 4.2}, {"index": 1, "relevance_score": -1.3},
                 {"index": 2, "relevance_score": 0.3}]},  # raw logits, not [0, 1]
    '{"results": [{"index": 0, "relevance_score": NaN}, {"index": 1, "relevance_score": 0.4},'
    ' {"index": 2, "relevance_score": 0.3}]}',
])
def test_garbage_answers_are_the_stages_failure(api: FakeRerankAPI, url: str, answer: Any) -> None:
    api.answer = answer
    with pytest.raises(RerankError) as raised:
        HttpReranker(url, api_key=KEY).rerank("standup", DOCUMENTS)
    assert url in str(raised.value)


@pytest.mark.parametrize("status", [401, 429, 500, 503])
def test_a_refusal_is_the_stages_failure_without_the_key(api: FakeRerankAPI, url: str, status: int) -> None:
    api.status = status
    with pytest.raises(RerankError) as raised:
        HttpReranker(url, api_key=KEY).rerank("standup", DOCUMENTS)
    assert str(status) in str(raised.value) and KEY not in str(raised.value)
    assert len(api.requests) == 1  # one attempt: a retry would land past the stage's deadline


def test_a_server_that_hangs_is_the_stages_failure_after_the_timeout(api: FakeRerankAPI, url: str) -> None:
    api.hang.clear()
    with pytest.raises(RerankError, match="Timeout"):
        HttpReranker(url, timeout_s=0.2).rerank("standup", DOCUMENTS)


def test_a_server_that_is_not_there_is_the_stages_failure() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(RerankError, match="ConnectionError"):
        HttpReranker(f"http://127.0.0.1:{port}/v1/rerank").rerank("standup", DOCUMENTS)


def test_garbage_makes_deep_search_answer_the_fused_order(api: FakeRerankAPI, url: str) -> None:
    api.answer = {"results": [{"index": 7, "relevance_score": 0.9}]}
    head = [(("c", 1), 0.9), (("c", 2), 0.5), (("c", 3), 0.2)]
    reranked = Reranking(lambda: HttpReranker(url)).run("standup", head, DOCUMENTS)
    assert reranked.ranked == head and reranked.fallback == "rerank_unavailable"


def test_a_good_answer_reorders_deep_search(api: FakeRerankAPI, url: str) -> None:
    head = [(("c", 1), 0.9), (("c", 2), 0.5), (("c", 3), 0.2)]
    reranked = Reranking(lambda: HttpReranker(url), neighbour_share=0.0).run("rained week", head, DOCUMENTS)
    assert reranked.fallback is None and reranked.ranked[0][0] == ("c", 3)


def test_the_setting_chooses_the_endpoint_with_its_model_key_and_deadline(api: FakeRerankAPI, url: str) -> None:
    settings = Settings(reranker="http", rerank_url=url, rerank_model=MODEL, rerank_api_key=KEY,
                        rerank_deadline_ms=750)
    reranker = build_reranker(settings)
    assert isinstance(reranker, HttpReranker) and reranker._http.timeout_s == 0.75
    assert reranker.rerank("standup tuesday", DOCUMENTS) == [0.0, 1.0, 0.0]
    assert api.requests[0]["model"] == MODEL and api.headers[0]["Authorization"] == f"Bearer {KEY}"


def test_the_http_reranker_needs_its_url() -> None:
    with pytest.raises(ValueError, match="AGENTMEM_RERANK_URL"):
        Settings(reranker="http")
    with pytest.raises(ValueError, match="rerank_url"):
        Settings(reranker="http", rerank_url="localhost:8000/rerank")


def test_a_deep_journal_search_is_reranked_by_the_endpoint_the_settings_name(
    api: FakeRerankAPI, url: str, tmp_path: Any
) -> None:
    from agentmem.bootstrap import build_container
    from agentmem.domain.conversations import MessageDraft
    from agentmem.services.agents import AgentSettings

    # Given an embedded service whose re-ranking stage is the endpoint, and a conversation
    container = build_container(Settings(data_dir=tmp_path, embedder="none", reranker="http", rerank_url=url,
                                         rerank_model=MODEL, rerank_api_key=KEY))
    _, secret = container.keys.create_account("acme")
    account = container.keys.authenticate("Bearer " + secret)
    container.agents.put(account, "support", AgentSettings())
    lines = ["the pharmacy shuts at seven on weekdays", "the pharmacy is closed on sundays",
             "pharmacy pharmacy pharmacy, I keep saying pharmacy"]
    container.conversations.append(account, "support", "errands", [MessageDraft("user", line) for line in lines])
    search = container.conversations.search_page
    fused = [hit.seq for hit in search(account, "support", "pharmacy", mode="keyword").items]
    assert len(fused) == 3
    # When a deep search asks, and the endpoint prefers what the fusion put last
    api.answer = {"results": [{"index": 2, "relevance_score": 0.97}, {"index": 1, "relevance_score": 0.1},
                              {"index": 0, "relevance_score": 0.0}]}
    deep = search(account, "support", "pharmacy", mode="deep")
    # Then the endpoint read the fused top with the query, and its order is the page's, the stage named
    assert api.requests[-1]["query"] == "pharmacy" and api.requests[-1]["model"] == MODEL
    assert api.requests[-1]["documents"] == [lines[seq - 1] for seq in fused]
    assert deep.items[0].seq == fused[-1] and deep.fallback != "rerank_unavailable", deep
    assert "rerank" in deep.stages and api.headers[-1]["Authorization"] == f"Bearer {KEY}"
    # and when the endpoint answers garbage, the search answers all the same, in the fused order, the stage not
    # among those that ran (the fallback named is the semantic side's, missing here: "not_configured")
    api.answer = {"results": "none"}
    fell_back = search(account, "support", "pharmacy", mode="deep")
    assert [hit.seq for hit in fell_back.items] == fused and "rerank" not in fell_back.stages, fell_back
    assert fell_back.fallback is not None
