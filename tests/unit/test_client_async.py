"""The async SDK (``AsyncClient`` and its handles) against the sync one: the same scenarios run through both —
on the real API handler in-process, over HTTP through each of the async client's HTTP transports (aiohttp's and
httpx's), and on a scripted transport — give equal results, raise the same typed errors, walk the same pages
and retry the same way."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import threading
import warnings
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import agentmem
import pytest
from agentmem.api.app import lambda_handler
from agentmem.bootstrap import build_container, ensure_default_account, set_container
from agentmem.client import (
    AsyncClient,
    AsyncInProcessTransport,
    Client,
    ConfigurationError,
    Conflict,
    InProcessTransport,
    Invalid,
    Message,
    NotFound,
    RateLimited,
    ServerError,
    TransportResponse,
    Unauthorized,
    Unreachable,
)
from agentmem.client.aio import AiohttpTransport, AsyncHttpTransport, default_transport
from agentmem.client.conversation import ConversationRequests
from agentmem.settings import Settings

T = TypeVar("T")
MODES = ["sync", "async"]
# the async client on the handler in-process, and over HTTP (``agentmem serve``'s server) through each transport
ASYNC_MODES = ["async", "async-aiohttp", "async-httpx"]
HTTP_TRANSPORTS = {"async-aiohttp": AiohttpTransport, "async-httpx": AsyncHttpTransport}


class Sdk:
    """One client of either kind, and ``do``: a sync call's value, or an async call's awaited."""

    def __init__(self, mode: str, client: Client | AsyncClient) -> None:
        self.mode = mode
        self.client: Any = client
        self._loop = asyncio.new_event_loop() if mode != "sync" else None

    def do(self, value: T | Awaitable[T]) -> T:
        if self._loop is None:
            return value  # type: ignore[return-value]
        return self._loop.run_until_complete(value)  # type: ignore[arg-type]

    def close(self) -> None:
        if self._loop is not None:
            self._loop.run_until_complete(self.client.aclose())
            self._loop.close()


OPENED: list[Sdk] = []  # sdk_for's, closed after each test (``quiet``)


def sdk_for(mode: str, url: str, key: str | None, transport: Any) -> Sdk:
    if mode == "sync":
        return Sdk(mode, Client(url, key, transport=transport))
    OPENED.append(Sdk(mode, AsyncClient(url, key, transport=AsyncOf(transport))))
    return OPENED[-1]


class AsyncOf:
    """A sync transport, awaited (the scripted one below; ``AsyncInProcessTransport`` is the real one's)."""

    def __init__(self, sync: Any) -> None:
        self.sync = sync

    async def request(self, method: str, path: str, *, params: dict[str, str] | None, headers: dict[str, str],
                      body: bytes | None) -> TransportResponse:
        return self.sync.request(method, path, params=params, headers=headers, body=body)


@pytest.fixture(autouse=True)
def quiet(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    monkeypatch.delenv("AGENTMEM_API_KEY", raising=False)
    monkeypatch.setattr(ConversationRequests, "retry_backoff_s", 0.0)
    yield
    while OPENED:
        OPENED.pop().close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Callable[[str], Sdk]]:
    """A fresh embedded service per client, reached in-process by the sync or the async transport, or over HTTP
    (``agentmem serve``'s server on a free port) by one of the async client's HTTP transports."""
    from agentmem.local.server import make_server

    made: list[Sdk] = []
    servers: list[Any] = []

    def make(mode: str) -> Sdk:
        container = build_container(Settings(data_dir=tmp_path / mode))
        key = ensure_default_account(container)
        set_container(container)
        if mode in HTTP_TRANSPORTS:
            os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
            server = make_server(container, "127.0.0.1", 0)
            threading.Thread(target=server.serve_forever, daemon=True).start()
            servers.append(server)
            url = f"http://127.0.0.1:{server.server_address[1]}"
            sdk = Sdk(mode, AsyncClient(url, key, transport=HTTP_TRANSPORTS[mode](url)))
        else:
            transport: Any = InProcessTransport(lambda_handler) if mode == "sync" else AsyncInProcessTransport(
                lambda_handler)
            sdk = Sdk(mode, (Client if mode == "sync" else AsyncClient)("http://in-process", key,
                                                                        transport=transport))
        made.append(sdk)
        return sdk

    yield make
    for sdk in made:
        sdk.close()
    for server in servers:
        server.shutdown()
        server.server_close()
    set_container(None)


# --- the same scenario, on the real handler -------------------------------------------------------


def memory_scenario(sdk: Sdk) -> dict[str, Any]:
    do, client = sdk.do, sdk.client
    company = do(client.memories.create("company"))
    first = do(company.save("refunds", "Refund within 30 days.", description="Our refund rules"))
    do(company.save("refunds", "Refund within 30 days. No custom orders.", version=1))
    with pytest.raises(Conflict) as stale:
        do(company.save("refunds", "A stale edit", version=1))
    for n in range(5):
        do(company.save(f"note-{n}", f"Note number {n}", description=f"note {n}", user="user_42"))
    read = do(company.read("refunds"))
    with pytest.raises(NotFound) as missing:
        do(company.read("nothing-here"))
    with pytest.raises(Invalid) as invalid:
        do(company.save("fresh", "x"))  # a new entry needs a description
    hits = do(company.search("refund", user="user_42"))
    do(company.forget("note-0", user="user_42"))
    return {
        "first": (first.name, first.version, first.content),
        "read": (read.version, read.content),
        "stale": (stale.value.status, stale.value.code, stale.value.current_version),
        "missing": (missing.value.status, missing.value.code, missing.value.message),
        "invalid": (invalid.value.status, invalid.value.code),
        "hits": [(h.name, h.user_id) for h in hits],
        "found": (type(hits).__name__, hits.mode, hits.fallback, hits.stages[:1], hits.index_lag),
        "entries": sorted(e.name for e in do(company.entries(user="user_42"))),
        "two": len(do(company.entries(user="user_42", limit=2))),
        "history": [h.operation for h in do(company.history("refunds"))],
        "memories": [m.name for m in do(client.memories.list())],
        "info": do(company.info()).entry_count,
    }


def agent_scenario(sdk: Sdk) -> dict[str, Any]:
    do, client = sdk.do, sdk.client
    support = do(client.agents.from_name("support", create_if_missing=True, instructions="Answer billing."))
    again = do(client.agents.from_name("support", create_if_missing=True))
    chat = support.conversation("ticket-7", user="user_42")
    appended = do(chat.append(Message.user("Hi, I'm Ana, on the Team plan."), Message.assistant("Hello Ana!")))
    more = do(chat.append([{"role": "user", "content": f"message {n}"} for n in range(45)]))  # two requests
    page = do(chat.messages_page(limit=10))
    context = do(chat.context())
    tools = do(support.tools(format="openai", user="user_42"))
    saved = do(support.call_tool("memory__save", {"name": "plan", "content": "Ana: Team plan.",
                                                  "description": "Her plan"}, user="user_42"))
    workspace = support.workspace("ticket-7", user="user_42")
    written = do(workspace.write("notes/plan.md", "# Plan\n"))
    with pytest.raises(NotFound) as no_agent:
        do(client.agents.get("nobody"))
    return {
        "agent": (do(support.info()).instructions, again.name),
        "appended": (appended.seqs, appended.added),
        "more": (len(more.seqs), more.added, more.seqs[0], more.seqs[-1]),
        "messages": [(m.seq, m.role, m.content) for m in do(chat.messages())],
        "after": [m.seq for m in do(chat.messages(after=40, limit=5))],
        "page": (len(page.items), page.next_cursor),
        "context": [m.get("content") if isinstance(m, dict) else str(m) for m in context.messages][-2:],
        "tools": sorted(str(t.get("name") or t.get("function", {}).get("name")) for t in tools),
        "saved": saved.text,
        "own": do(support.memory.read("plan", user="user_42")).content,
        "conversations": [c.key for c in do(support.conversations(user="user_42"))],
        "written": (written.path, written.size_bytes),
        "read": do(workspace.read("notes/plan.md")),
        "files": [f.path for f in do(workspace.files())],
        "deleted": do(workspace.delete("notes/plan.md")),
        "no_agent": (no_agent.value.status, no_agent.value.code),
        "info": (do(chat.info()).messages, do(chat.info()).turns),
    }


@pytest.mark.parametrize("mode", ASYNC_MODES)
@pytest.mark.parametrize("scenario", [memory_scenario, agent_scenario], ids=["memory", "agent"])
def test_the_async_client_answers_as_the_sync_one(served: Callable[[str], Sdk],
                                                  scenario: Callable[[Sdk], dict[str, Any]], mode: str) -> None:
    # When the same scenario runs through the sync client and through the async one (in-process, or over HTTP
    # through either transport), each on a fresh service
    results = {kind: scenario(served(kind)) for kind in ("sync", mode)}
    # Then every result and every error is the same
    assert results[mode] == results["sync"]
    assert results["sync"]  # (and the scenario did something)


def test_the_memory_scenarios_values(served: Callable[[str], Sdk]) -> None:
    # the values both clients agree on are the right ones
    got = memory_scenario(served("async"))
    assert got["stale"] == (409, "conflict", 2)
    assert got["read"] == (2, "Refund within 30 days. No custom orders.")
    assert got["entries"] == ["note-1", "note-2", "note-3", "note-4"] and got["two"] == 2
    assert got["history"] == ["update", "create"]
    assert ("refunds", None) in got["hits"]
    assert got["found"][0] == "Found" and got["found"][1] in ("hybrid", "keyword")  # (keyword: no embedder here)


@pytest.mark.parametrize("mode", ASYNC_MODES)
def test_async_handles_are_concurrent_on_one_client(served: Callable[[str], Sdk], mode: str) -> None:
    # Given one async client shared by many tasks
    sdk = served(mode)
    memory = sdk.do(sdk.client.memories.create("notes"))

    async def many() -> list[int]:
        saved = await asyncio.gather(*(memory.save(f"n{i}", f"note {i}", description="d") for i in range(20)))
        return [entry.version for entry in saved]

    # When twenty saves run at once, Then each lands, and all are listed
    assert sdk.do(many()) == [1] * 20
    assert len(sdk.do(memory.entries())) == 20


# --- the same rules, on a scripted transport -------------------------------------------------------


class Scripted:
    """Answers with canned responses in order (a callable is called with the request), recording each."""

    def __init__(self, *answers: TransportResponse | Callable[[dict[str, Any]], TransportResponse]) -> None:
        self.answers = list(answers)
        self.sent: list[dict[str, Any]] = []

    def request(self, method: str, path: str, *, params: dict[str, str] | None, headers: dict[str, str],
                body: bytes | None) -> TransportResponse:
        sent = {"method": method, "path": path, "params": params, "headers": headers,
                "body": json.loads(body) if body else None}
        self.sent.append(sent)
        assert self.answers, f"unexpected request {method} {path}"
        answer = self.answers.pop(0)
        return answer(sent) if callable(answer) else answer


def answer(status: int = 200, payload: Any = None, headers: dict[str, str] | None = None) -> TransportResponse:
    return TransportResponse(status, {"content-type": "application/json", **(headers or {})},
                             b"" if payload is None else json.dumps(payload).encode())


def failed(status: int, code: str, **extra: Any) -> TransportResponse:
    return answer(status, {"error": {"code": code, "message": f"{code}!", **extra}})


class Lost:
    """A transport whose answer never came (the service unreachable)."""

    def __init__(self, then: Scripted, times: int) -> None:
        self.then, self.times, self.tries = then, times, 0

    def request(self, method: str, path: str, **kwargs: Any) -> TransportResponse:
        self.tries += 1
        if self.tries <= self.times:
            raise Unreachable("http://agentmem.test", "connection refused")
        return self.then.request(method, path, **kwargs)


APPENDED = {"items": [{"seq": 1, "role": "user", "content": "Hi", "client_id": "c1"}], "added": 1,
            "conversation": {"agent": "support", "key": "c1", "message_count": 1}}


@pytest.mark.parametrize("mode", MODES)
def test_an_append_without_an_answer_is_sent_again_with_the_same_body(mode: str) -> None:
    # Given a service that answers 503, then 429 with Retry-After 0, then stores the append
    script = Scripted(failed(503, "server_error"), failed(429, "rate_limited", retry_after=0), answer(201, APPENDED))
    sdk = sdk_for(mode, "http://agentmem.test", "sk", script)
    # When one message is appended
    result = sdk.do(sdk.client.agent("support").conversation("c1").append(Message.user("Hi")))
    # Then it was sent three times, the same body each time, and the third answer is the result
    path = "/v1/agents/support/conversations/c1/messages"
    assert [(s["method"], s["path"]) for s in script.sent] == [("POST", path)] * 3
    assert script.sent[0]["body"] == script.sent[1]["body"] == script.sent[2]["body"]
    assert (result.seqs, result.added) == ([1], 1)


@pytest.mark.parametrize("mode", MODES)
def test_an_append_gives_up_after_three_tries_and_never_retries_a_refusal(mode: str) -> None:
    lost = Lost(Scripted(), times=5)
    sdk = sdk_for(mode, "http://agentmem.test", "sk", lost)
    with pytest.raises(Unreachable):
        sdk.do(sdk.client.agent("support").conversation("c1").append(Message.user("Hi")))
    assert lost.tries == 3
    refused = Scripted(failed(400, "invalid", field="messages[0].content"))
    sdk = sdk_for(mode, "http://agentmem.test", "sk", refused)
    with pytest.raises(Invalid) as error:
        sdk.do(sdk.client.agent("support").conversation("c1").append({"role": "user", "content": ""}))
    assert (len(refused.sent), error.value.field) == (1, "messages[0].content")


@pytest.mark.parametrize("mode", MODES)
def test_lists_follow_cursors_stop_on_a_repeated_one_and_honour_limit(mode: str) -> None:
    # Given a list endpoint whose third page hands back the first cursor again
    def page(names: list[str], cursor: str | None) -> TransportResponse:
        return answer(200, {"items": [{"name": n, "user_id": None} for n in names], "next_cursor": cursor})

    script = Scripted(page(["a", "b"], "p2"), page(["c"], "p3"), page(["d"], "p2"))
    sdk = sdk_for(mode, "http://agentmem.test", "sk", script)
    # When every memory is listed, Then the walk follows p2 and p3 and stops at the repeated p2
    assert [m.name for m in sdk.do(sdk.client.memories.list(user="u1"))] == ["a", "b", "c", "d"]
    assert [s["params"] for s in script.sent] == [{"user": "u1"}, {"user": "u1", "cursor": "p2"},
                                                  {"user": "u1", "cursor": "p3"}]
    # and a walk with a limit asks pages of that size and stops once it has them
    script = Scripted(page(["a", "b"], "p2"), page(["c", "d"], "p3"))
    sdk = sdk_for(mode, "http://agentmem.test", "sk", script)
    assert [e.name for e in sdk.do(sdk.client.memory("m").entries(limit=3))] == ["a", "b", "c"]
    assert [s["params"] for s in script.sent] == [{"limit": "3"}, {"limit": "3", "cursor": "p2"}]


@pytest.mark.parametrize("mode", MODES)
def test_requests_carry_the_same_url_headers_and_body(mode: str) -> None:
    script = Scripted(answer(200, {"name": "refunds", "version": 4, "content": "x"}))
    sdk = sdk_for(mode, "http://agentmem.test", "sk-1", script)
    sdk.do(sdk.client.memory("agent:support").save("refunds", "x", description="d", user="u 1", importance=0.5))
    (sent,) = script.sent
    assert (sent["method"], sent["path"], sent["params"]) == ("PUT", "/v1/memories/agent%3Asupport/entries/refunds",
                                                             {"user": "u 1"})
    assert sent["headers"] == {"Accept": "application/json", "User-Agent": "agentmem-python",
                               "Authorization": "Bearer sk-1", "Content-Type": "application/json"}
    assert sent["body"] == {"content": "x", "description": "d", "importance": 0.5}


@pytest.mark.parametrize("mode", MODES)
def test_error_answers_are_the_same_typed_errors(mode: str) -> None:
    script = Scripted(failed(401, "unauthorized"), failed(429, "rate_limited", retry_after=3),
                      answer(502, None), failed(409, "conflict", current_version=7))
    sdk = sdk_for(mode, "http://agentmem.test", "sk", script)
    memory = sdk.client.memory("m")
    with pytest.raises(Unauthorized):
        sdk.do(memory.info())
    with pytest.raises(RateLimited) as limited:
        sdk.do(memory.read("x"))
    assert limited.value.retry_after == 3
    with pytest.raises(ServerError) as server:
        sdk.do(memory.search("x"))
    assert (server.value.status, server.value.code) == (502, "server_error")
    with pytest.raises(Conflict) as conflict:
        sdk.do(memory.save("x", "y", version=6))
    assert conflict.value.current_version == 7
    # and without a key, nothing is sent
    keyless = sdk_for(mode, "http://agentmem.test", None, Scripted())
    with pytest.raises(ConfigurationError, match="no API key"):
        keyless.do(keyless.client.memory("m").info())


def test_the_async_names_are_the_packages() -> None:
    assert {"AsyncClient", "AsyncMemory", "AsyncAgent", "AsyncConversation", "AsyncWorkspace"} <= set(
        agentmem.__all__)
    assert agentmem.AsyncClient is AsyncClient


@pytest.mark.parametrize("mode", ["sync", *ASYNC_MODES])
def test_from_name_warns_alike_when_the_stored_agent_has_other_settings(served: Callable[[str], Sdk],
                                                                        mode: str) -> None:
    # Given an agent made with some instructions
    sdk = served(mode)
    sdk.do(sdk.client.agents.create("support", instructions="Answer billing questions."))
    # When from_name asks for it with others, through either client
    async def awaited() -> Any:  # as an application awaits it, from a coroutine of its own
        return await sdk.client.agents.from_name("support", create_if_missing=True, instructions="Other")

    with pytest.warns(agentmem.SettingsDifferWarning, match="with other instructions than given") as warned:
        found = (sdk.do(awaited()) if mode != "sync"
                 else sdk.client.agents.from_name("support", create_if_missing=True, instructions="Other"))
    # Then it is returned as stored, and the warning points at the caller's line, not into the SDK
    assert sdk.do(found.info()).instructions == "Answer billing questions."
    assert len(warned.list) == 1 and warned.list[0].filename == __file__
    # and the same settings say nothing
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sdk.do(sdk.client.agents.from_name("support", create_if_missing=True,
                                           instructions="Answer billing questions."))


# --- the HTTP transports ---------------------------------------------------------------------------


def test_the_default_transport_is_aiohttp_unless_a_proxy_applies(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy",
                 "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    # aiohttp (the async extra) sends when nothing stands in the way
    assert isinstance(AsyncClient("http://127.0.0.1:8787", "sk").transport, AiohttpTransport)
    # a proxy for the service's URL: httpx, which speaks to it
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    assert isinstance(default_transport("https://memory.example", 5.0), AsyncHttpTransport)
    # unless NO_PROXY covers the service
    monkeypatch.setenv("NO_PROXY", "memory.example")
    assert isinstance(default_transport("https://memory.example", 5.0), AiohttpTransport)


@pytest.mark.parametrize("mode", HTTP_TRANSPORTS)
def test_a_service_that_is_not_there_is_unreachable(mode: str) -> None:
    # Given a port nobody listens on
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    sdk = Sdk(mode, AsyncClient(url, "sk", transport=HTTP_TRANSPORTS[mode](url)))
    try:
        # When a memory is read, Then the error is Unreachable, not timed out, naming the service
        with pytest.raises(Unreachable) as error:
            sdk.do(sdk.client.memory("m").read("x"))
        assert error.value.timed_out is False and url in str(error.value)
    finally:
        sdk.close()


@pytest.mark.parametrize("mode", HTTP_TRANSPORTS)
def test_a_service_that_never_answers_times_out(mode: str) -> None:
    # Given a server that accepts the connection and never answers
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        sdk = Sdk(mode, AsyncClient(url, "sk", transport=HTTP_TRANSPORTS[mode](url, timeout=0.3)))
        try:
            # When a memory is read, Then it is Unreachable, timed out after the client's timeout
            with pytest.raises(Unreachable) as error:
                sdk.do(sdk.client.memory("m").read("x"))
            assert error.value.timed_out is True and "no answer within 0.3s" in str(error.value)
        finally:
            sdk.close()


@pytest.mark.parametrize("mode", HTTP_TRANSPORTS)
def test_a_large_file_goes_through_an_absolute_link_on_either_transport(served: Callable[[str], Sdk],
                                                                         mode: str) -> None:
    # Given a workspace reached over HTTP
    sdk = served(mode)
    workspace = sdk.client.agent("support").workspace("ticket-7", user="user_42")
    sdk.do(sdk.client.agents.create("support"))
    data = bytes(range(256)) * (5 * 4096)  # 5 MiB: past what is written through the API
    # When it is written and read back, Then the bytes are the same, through the server's absolute links
    assert sdk.do(workspace.write("big.bin", data)).size_bytes == len(data)
    assert sdk.do(workspace.read("big.bin")) == data
    assert sdk.do(workspace.url("big.bin")).startswith(sdk.client.url + "/v1/links/")
