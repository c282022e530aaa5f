"""The SDK (agentmem.client) against a fake transport: what it sends, and what it makes of the answers."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any

import pytest
import requests
from agentmem.client import (
    AgentmemError,
    Attached,
    Client,
    ConfigurationError,
    Conflict,
    Entry,
    Forbidden,
    HttpTransport,
    InProcessTransport,
    Invalid,
    LayerFull,
    Memory,
    MemoryInfo,
    NotFound,
    RateLimited,
    Rejected,
    ServerError,
    TooLarge,
    TransportResponse,
    Unauthorized,
    Unreachable,
    default_client,
    set_default_client,
)


@dataclass
class Sent:
    method: str
    path: str
    params: dict[str, str] | None
    headers: dict[str, str]
    body: bytes | None

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


class FakeTransport:
    """Answers with canned responses, in order, and records every request."""

    def __init__(self, *responses: TransportResponse) -> None:
        self.responses = list(responses)
        self.sent: list[Sent] = []

    def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None,
        headers: dict[str, str],
        body: bytes | None,
    ) -> TransportResponse:
        self.sent.append(Sent(method, path, params, headers, body))
        assert self.responses, f"unexpected request {method} {path}"
        return self.responses.pop(0)


def answer(
    status: int = 200, payload: Any = None, headers: Mapping[str, str] | None = None
) -> TransportResponse:
    body = b"" if payload is None else json.dumps(payload).encode()
    return TransportResponse(status, {"content-type": "application/json", **(headers or {})}, body)


def error(status: int, code: str, message: str = "nope", **details: Any) -> TransportResponse:
    return answer(status, {"error": {"code": code, "message": message, **details}})


MEMORY = {
    "name": "company",
    "user_id": None,
    "entry_count": 2,
    "attached_to": ["support"],
    "created_at": "2025-01-01T00:00:00Z",
    "deleted_at": None,
    "purge_after": None,
}
ENTRY = {
    "name": "refunds",
    "description": "Our refund rules",
    "category": "note",
    "importance": 0.5,
    "visibility": "shared",
    "expires_at": None,
    "version": 3,
    "updated_by": "api",
    "created_at": "2025-01-01T00:00:00Z",
    "updated_at": "2025-01-02T00:00:00Z",
    "conversation": None,
}


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.delenv("AGENTMEM_URL", raising=False)
    monkeypatch.delenv("AGENTMEM_API_KEY", raising=False)
    set_default_client(None)
    yield
    set_default_client(None)


def client_with(*responses: TransportResponse) -> tuple[Client, FakeTransport]:
    fake = FakeTransport(*responses)
    return Client("http://agentmem.test", "sk-test", transport=fake), fake


# --- paths, headers, bodies ----------------------------------------------------------------------


def test_an_agent_memory_name_is_percent_encoded_in_the_path() -> None:
    # Given an agent's own memory, whose name holds a ':'
    client, fake = client_with(answer(200, {**ENTRY, "content": "30 days"}))
    # When an entry of it is read
    client.memory("agent:support").read("refunds")
    # Then the ':' travels encoded, under /v1
    assert fake.sent[0].method == "GET"
    assert fake.sent[0].path == "/v1/memories/agent%3Asupport/entries/refunds"


def test_every_request_carries_the_bearer_key_and_asks_for_json() -> None:
    # Given a client with a key
    client, fake = client_with(answer(200, MEMORY))
    # When it asks about a memory
    client.memory("company").info()
    # Then the key is sent as a bearer token
    assert fake.sent[0].headers["Authorization"] == "Bearer sk-test"
    assert fake.sent[0].headers["Accept"] == "application/json"


def test_save_sends_only_the_fields_given_and_the_layer_as_a_query_parameter() -> None:
    # Given a memory whose entry will be created at version 1
    client, fake = client_with(answer(201, {**ENTRY, "version": 1, "visibility": "private"}))
    # When an entry is saved for a user with a description and an importance
    entry = client.memory("company").save(
        "refunds", "30 days", description="Our refund rules", user="user_42", importance=0.9
    )
    # Then the body holds those fields and nothing unset, and the user is a query parameter
    sent = fake.sent[0]
    assert (sent.method, sent.path) == ("PUT", "/v1/memories/company/entries/refunds")
    assert sent.params == {"user": "user_42"}
    assert sent.json() == {"content": "30 days", "description": "Our refund rules", "importance": 0.9}
    assert sent.headers["Content-Type"] == "application/json"
    # And the answer comes back as an Entry with its new version and the content that was sent
    assert entry.version == 1
    assert entry.content == "30 days"


def test_save_with_version_zero_sends_it_so_the_entry_must_not_exist() -> None:
    # Given a save that must only create
    client, fake = client_with(answer(201, {**ENTRY, "version": 1}))
    # When version=0 is passed
    client.memory("company").save("refunds", "30 days", description="d", version=0)
    # Then the 0 is sent rather than dropped as if unset
    assert fake.sent[0].json()["version"] == 0


def test_a_save_forced_private_reports_why() -> None:
    # Given the server stored a sensitive save in the user's layer
    client, _ = client_with(answer(201, {**ENTRY, "visibility": "private", "forced": "sensitive_content"}))
    # When the save returns
    entry = client.memory("company").save("contact", "ana@example.com", description="d")
    # Then the entry says it was forced private
    assert (entry.visibility, entry.forced) == ("private", "sensitive_content")


def test_read_passes_the_version_and_falls_back_to_the_etag() -> None:
    # Given an answer whose body lacks a version but whose ETag carries it
    body = {k: v for k, v in ENTRY.items() if k != "version"}
    client, fake = client_with(answer(200, {**body, "content": "old text"}, {"ETag": '"2"'}))
    # When an older version is read
    entry = client.memory("company").read("refunds", version=2)
    # Then the version is a query parameter and the entry's version comes from the ETag
    assert fake.sent[0].params == {"version": "2"}
    assert (entry.version, entry.content) == (2, "old text")


def test_unknown_fields_in_an_answer_are_ignored() -> None:
    # Given a newer server that answers a field this SDK does not know
    client, _ = client_with(answer(200, {**ENTRY, "content": "x", "embedding_model": "v9"}))
    # When the entry is read
    entry = client.memory("company").read("refunds")
    # Then it still parses
    assert entry.name == "refunds" and entry.content == "x"


def test_search_sends_the_query_limit_and_user_and_returns_entries_with_their_memory() -> None:
    # Given a search answer with one hit in a user's layer
    hit = {**ENTRY, "content": "30 days", "memory": "company", "user_id": "user_42", "score": 2.5}
    client, fake = client_with(answer(200, {"items": [hit], "next_cursor": None, "mode": "keyword"}))
    # When the memory is searched for a user
    results = client.memory("company").search("refund policy", limit=5, user="user_42")
    # Then the query travels as q, and the hit carries memory, user and score
    assert fake.sent[0].path == "/v1/memories/company/search"
    assert fake.sent[0].params == {"q": "refund policy", "limit": "5", "user": "user_42"}
    assert [(e.name, e.memory, e.user_id, e.score) for e in results] == [
        ("refunds", "company", "user_42", 2.5)
    ]
    # and the list also says how it was found
    assert (results.mode, results.fallback, results.stages, results.index_lag) == ("keyword", None, (), None)


def test_a_search_s_hits_say_how_they_were_found_and_are_still_a_plain_list() -> None:
    from agentmem.client import Found

    # Given answers of a memory search, an agent's recall and a journal search, the index behind for two
    hit = {**ENTRY, "content": "30 days", "memory": "company", "user_id": None, "score": 0.8}
    message = {"conversation": "c1", "seq": 3, "role": "user", "snippet": "refund", "score": 0.7,
               "created_at": "2026-01-01T00:00:00.000000Z"}
    client, _ = client_with(
        answer(200, {"items": [hit], "next_cursor": None, "mode": "hybrid", "stages": ["keyword", "semantic",
                     "fusion"], "index_lag": 12}),
        answer(200, {"items": [hit], "next_cursor": None, "mode": "keyword", "fallback": "timeout",
                     "stages": ["keyword"], "index_lag": None}),
        answer(200, {"items": [message], "next_cursor": None, "mode": "hybrid", "index_lag": 40}),
    )
    # When each is asked
    memory = client.memory("company").search("refund")
    agent = client.agent("support").search("refund")
    journal = client.agent("support").search_messages("refund", user="ana")
    # Then each is a list of its hits, and says what answered, why it fell back, what ran and how far behind
    assert isinstance(memory, list) and isinstance(memory, Found)
    assert [e.name for e in memory] == ["refunds"] and memory == [memory[0]]
    assert (memory.mode, memory.fallback, memory.stages, memory.index_lag) == (
        "hybrid", None, ("keyword", "semantic", "fusion"), 12)
    assert (agent.mode, agent.fallback, agent.stages, agent.index_lag) == ("keyword", "timeout", ("keyword",), None)
    assert [h.seq for h in journal] == [3] and (journal.mode, journal.index_lag) == ("hybrid", 40)


def test_forget_deletes_an_entry_with_its_version() -> None:
    # Given an entry to delete
    client, fake = client_with(answer(204))
    # When it is forgotten at the version that was read
    client.memory("company").forget("old-pricing", version=4)
    # Then one DELETE goes to the entry with the version
    assert (fake.sent[0].method, fake.sent[0].path) == ("DELETE", "/v1/memories/company/entries/old-pricing")
    assert fake.sent[0].params == {"version": "4"}


def test_delete_moves_the_memory_itself_to_the_trash() -> None:
    # Given a memory the server puts in the trash
    trashed = {**MEMORY, "deleted_at": "2025-02-01T00:00:00Z", "purge_after": "2025-03-03T00:00:00Z"}
    client, fake = client_with(answer(200, trashed))
    # When the memory is deleted
    info = client.memory("company").delete()
    # Then the DELETE names the memory, not an entry, and the answer says when it will be purged
    assert (fake.sent[0].method, fake.sent[0].path) == ("DELETE", "/v1/memories/company")
    assert info.purge_after == "2025-03-03T00:00:00Z"


def test_restore_posts_to_the_memory_restore_path() -> None:
    # Given a memory in the trash
    client, fake = client_with(answer(200, MEMORY))
    # When it is restored
    info = client.memory("company").restore()
    # Then the restore path is used and the memory comes back without deleted_at
    assert (fake.sent[0].method, fake.sent[0].path) == ("POST", "/v1/memories/company/restore")
    assert info.deleted_at is None


def test_history_lists_changes_newest_first() -> None:
    # Given two changes of an entry
    items = [
        {"version": 2, "operation": "update", "updated_by": "agent", "changed_at": "t2", "content": "b"},
        {"version": 1, "operation": "create", "updated_by": "api", "changed_at": "t1", "content": "a"},
    ]
    client, fake = client_with(answer(200, {"items": items, "next_cursor": None}))
    # When its history is read
    history = client.memory("agent:support").history("refunds", user="u1")
    # Then the path is the entry's history and the order is kept
    assert fake.sent[0].path == "/v1/memories/agent%3Asupport/entries/refunds/history"
    assert fake.sent[0].params == {"user": "u1"}
    assert [(h.version, h.operation, h.content) for h in history] == [(2, "update", "b"), (1, "create", "a")]


# --- pagination ------------------------------------------------------------------------------------


def test_list_follows_next_cursor_until_the_last_page() -> None:
    # Given entries spread over two pages
    client, fake = client_with(
        answer(200, {"items": [{**ENTRY, "name": "a"}, {**ENTRY, "name": "b"}], "next_cursor": "c1"}),
        answer(200, {"items": [{**ENTRY, "name": "c"}], "next_cursor": None}),
    )
    # When a user's layer is listed
    names = [entry.name for entry in client.memory("company").list(user="user_42")]
    # Then every page was read, the second with the cursor of the first
    assert names == ["a", "b", "c"]
    assert fake.sent[0].params == {"user": "user_42"}
    assert fake.sent[1].params == {"user": "user_42", "cursor": "c1"}


def test_list_with_a_limit_stops_once_it_has_enough() -> None:
    # Given a first page that already holds enough entries, and more pages behind it
    client, fake = client_with(
        answer(200, {"items": [{**ENTRY, "name": "a"}, {**ENTRY, "name": "b"}], "next_cursor": "c1"}),
    )
    # When at most two entries are asked for
    entries = client.memory("company").entries(limit=2)
    # Then the page size is the limit and no second page is fetched
    assert [e.name for e in entries] == ["a", "b"]
    assert fake.sent[0].params == {"limit": "2"}
    assert len(fake.sent) == 1


def test_a_cursor_that_repeats_does_not_loop_forever() -> None:
    # Given a server that keeps answering the same cursor
    page = {"items": [{**ENTRY, "name": "a"}], "next_cursor": "same"}
    client, fake = client_with(answer(200, page), answer(200, page))
    # When the layer is listed
    entries = client.memory("company").list()
    # Then listing stops after the cursor repeats
    assert len(entries) == 2 and len(fake.sent) == 2


# --- memories ------------------------------------------------------------------------------------


def test_from_name_with_create_if_missing_issues_a_put() -> None:
    # Given no memory named company yet
    client, fake = client_with(answer(201, {**MEMORY, "entry_count": 0}))
    # When it is fetched with create_if_missing
    company = Memory.from_name("company", create_if_missing=True, client=client)
    # Then a PUT creates it and the handle names it
    assert (fake.sent[0].method, fake.sent[0].path) == ("PUT", "/v1/memories/company")
    assert fake.sent[0].body is None
    assert company.name == "company"
    assert company.last_info is not None and company.last_info.entry_count == 0


def test_from_name_without_create_issues_a_get_and_raises_not_found() -> None:
    # Given no memory named ghost
    client, fake = client_with(error(404, "not_found", "memory 'ghost' not found"))
    # When it is fetched without create_if_missing
    with pytest.raises(NotFound) as caught:
        Memory.from_name("ghost", client=client)
    # Then a GET was sent and the error says what is missing
    assert fake.sent[0].method == "GET"
    assert str(caught.value) == "memory 'ghost' not found"


def test_a_user_memory_sends_its_user_on_entry_calls() -> None:
    # Given a memory created for one user
    client, fake = client_with(
        answer(201, {**MEMORY, "user_id": "u1"}), answer(200, {"items": [], "next_cursor": None})
    )
    notes = Memory.create("notes", user="u1", client=client)
    # When its entries are listed without naming a user
    notes.list()
    # Then both calls act for that user
    assert fake.sent[0].params == {"user": "u1"}
    assert fake.sent[1].params == {"user": "u1"}


def test_memory_list_on_the_class_lists_memories_and_on_an_instance_lists_entries() -> None:
    # Given one answer listing memories and one listing entries
    client, fake = client_with(
        answer(200, {"items": [MEMORY], "next_cursor": None}),
        answer(200, {"items": [ENTRY], "next_cursor": None}),
    )
    # When Memory.list is called on the class, then on a handle
    memories = Memory.list(client=client, trash=True)
    entries = Memory("company", client=client).list()
    # Then the first lists memories (from the trash) and the second one memory's entries
    assert fake.sent[0].path == "/v1/memories" and fake.sent[0].params == {"trash": "true"}
    assert memories == [MemoryInfo.from_dict(MEMORY)] and memories[0].attached_to == ("support",)
    assert fake.sent[1].path == "/v1/memories/company/entries"
    assert [type(e) for e in entries] == [Entry]


# --- errors --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "code", "expected"),
    [
        (400, "invalid", Invalid),
        (401, "unauthorized", Unauthorized),
        (403, "forbidden", Forbidden),
        (404, "not_found", NotFound),
        (409, "conflict", Conflict),
        (409, "layer_full", LayerFull),
        (409, "attached", Attached),
        (412, "precondition_failed", Conflict),
        (413, "too_large", TooLarge),
        (422, "rejected_injection", Rejected),
        (422, "sensitive_without_user", Rejected),
        (422, "no_user_context", Rejected),
        (429, "rate_limited", RateLimited),
        (500, "internal", ServerError),
    ],
)
def test_each_error_code_raises_its_own_exception(
    status: int, code: str, expected: type[AgentmemError]
) -> None:
    # Given the server refuses with this status and code
    client, _ = client_with(error(status, code, "refused for a reason"))
    # When a request is made
    with pytest.raises(AgentmemError) as caught:
        client.memory("company").save("x", "y")
    # Then the exception is exactly the mapped class, with the status, code and message
    assert type(caught.value) is expected
    assert (caught.value.status, caught.value.code, caught.value.message) == (
        status,
        code,
        "refused for a reason",
    )


def test_a_version_conflict_carries_the_current_version() -> None:
    # Given the entry moved on to version 3
    client, _ = client_with(
        error(409, "conflict", "entry 'refunds' is at version 3 (you sent 2)", current_version=3)
    )
    # When a save at version 2 is refused
    with pytest.raises(Conflict) as caught:
        client.memory("company").save("refunds", "text", version=2)
    # Then the current version is on the exception
    assert caught.value.current_version == 3


def test_a_failed_precondition_is_a_conflict_too() -> None:
    # Given a 412 from a header precondition
    client, _ = client_with(error(412, "precondition_failed", "If-Match failed", current_version=5))
    # When it is raised
    with pytest.raises(Conflict) as caught:
        client.memory("company").save("refunds", "text")
    # Then it is caught as Conflict with the current version
    assert (caught.value.status, caught.value.current_version) == (412, 5)


def test_deleting_an_attached_memory_lists_the_agents() -> None:
    # Given two agents attach the memory
    client, _ = client_with(error(409, "attached", "memory is attached", attached_to=["support", "scribe"]))
    # When it is deleted
    with pytest.raises(Conflict) as caught:
        client.memory("company").delete()
    # Then it is an Attached conflict naming the agents, and not a version conflict
    assert isinstance(caught.value, Attached)
    assert caught.value.attached_to == ["support", "scribe"]
    assert caught.value.current_version is None


def test_too_large_is_an_invalid_request_and_invalid_names_its_field() -> None:
    # Given a 400 naming a field and a 413
    client, _ = client_with(
        error(400, "invalid", "description too long", field="description"),
        error(413, "too_large", "body over 1 MB"),
    )
    # When both come back
    with pytest.raises(Invalid) as first:
        client.memory("company").save("x", "y")
    with pytest.raises(Invalid) as second:
        client.memory("company").save("x", "y")
    # Then the field is named and the 413 is a TooLarge, caught as Invalid
    assert first.value.field == "description"
    assert isinstance(second.value, TooLarge)


def test_a_rejected_write_says_why_in_its_code() -> None:
    # Given the account layer refuses sensitive content
    client, _ = client_with(error(422, "sensitive_without_user", "looks like an email address"))
    # When it is saved there
    with pytest.raises(Rejected) as caught:
        client.memory("company").save("contact", "ana@example.com", description="d")
    # Then the code says why
    assert caught.value.code == "sensitive_without_user"


def test_rate_limited_reads_retry_after_from_the_header() -> None:
    # Given a 429 with a Retry-After header
    client, _ = client_with(
        answer(429, {"error": {"code": "rate_limited", "message": "slow down"}}, {"Retry-After": "7"})
    )
    # When it is raised
    with pytest.raises(RateLimited) as caught:
        client.memory("company").info()
    # Then the hint is on the exception
    assert caught.value.retry_after == 7.0


def test_a_server_error_without_a_json_body_still_raises_server_error() -> None:
    # Given a proxy answering 502 with plain text
    client, _ = client_with(TransportResponse(502, {"content-type": "text/plain"}, b"Bad Gateway"))
    # When a request is made
    with pytest.raises(ServerError) as caught:
        client.memory("company").info()
    # Then the status and the text are kept
    assert (caught.value.status, caught.value.message) == (502, "Bad Gateway")


# --- configuration -------------------------------------------------------------------------------


def test_url_and_key_default_to_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given the environment names a service and a key
    monkeypatch.setenv("AGENTMEM_URL", "http://mem.internal:9000/")
    monkeypatch.setenv("AGENTMEM_API_KEY", "sk-env")
    # When a client is built without arguments
    client = Client()
    # Then it uses them
    assert (client.url, client.api_key) == ("http://mem.internal:9000", "sk-env")


def test_url_defaults_to_the_local_server_when_unset() -> None:
    # Given no AGENTMEM_URL
    # When a client is built
    client = Client(api_key="k")
    # Then it points at agentmem serve's default address
    assert client.url == "http://127.0.0.1:8787"


def test_a_missing_key_raises_a_configuration_error_naming_the_variable_before_sending() -> None:
    # Given no key anywhere
    fake = FakeTransport()
    client = Client(transport=fake)
    # When a request needs one
    with pytest.raises(ConfigurationError) as caught:
        client.memory("company").info()
    # Then the error names AGENTMEM_API_KEY and nothing was sent
    assert "AGENTMEM_API_KEY" in str(caught.value)
    assert fake.sent == []


def test_health_needs_no_key() -> None:
    # Given a client without a key
    fake = FakeTransport(answer(200, {"status": "ok", "version": "0.1.0", "backend": "embedded"}))
    client = Client(transport=fake)
    # When the service's health is asked
    health = client.health()
    # Then no Authorization is sent and the answer parses
    assert "Authorization" not in fake.sent[0].headers
    assert (fake.sent[0].path, health.status, health.backend) == ("/v1/health", "ok", "embedded")


def test_memory_without_a_client_uses_the_default_client_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given the environment's key, and the default client's transport swapped for a fake
    monkeypatch.setenv("AGENTMEM_API_KEY", "sk-env")
    client = default_client()
    fake = FakeTransport(answer(201, MEMORY))
    client._transport = fake
    # When a memory is made with no client
    Memory.from_name("company", create_if_missing=True)
    # Then the default client sent it with the environment's key
    assert default_client() is client
    assert fake.sent[0].headers["Authorization"] == "Bearer sk-env"


# --- keys and usage ------------------------------------------------------------------------------


def test_keys_create_list_and_delete() -> None:
    # Given answers for a user key, a listing and a revocation
    created = {
        "id": "key_1",
        "kind": "user",
        "user": "u1",
        "created_at": "t",
        "last4": "abcd",
        "secret": "sk-u1",
    }
    listed = {k: v for k, v in created.items() if k != "secret"}
    client, fake = client_with(
        answer(201, created), answer(200, {"items": [listed], "next_cursor": None}), answer(204)
    )
    # When a user key is created, the keys listed and one revoked
    key = client.keys.create(user="u1")
    keys = client.keys.list()
    client.keys.delete("key_1")
    # Then the calls match the contract, and only creation shows a secret
    assert (fake.sent[0].method, fake.sent[0].path, fake.sent[0].json()) == (
        "POST",
        "/v1/keys",
        {"user": "u1"},
    )
    assert key.secret == "sk-u1" and keys[0].secret is None and keys[0].last4 == "abcd"
    assert (fake.sent[2].method, fake.sent[2].path) == ("DELETE", "/v1/keys/key_1")


def test_an_account_key_is_created_with_an_empty_body() -> None:
    # Given an account key answer
    client, fake = client_with(answer(201, {"id": "key_2", "kind": "account", "secret": "sk-a"}))
    # When a key is created without a user
    client.keys.create()
    # Then the body is an empty object
    assert fake.sent[0].json() == {}


def test_usage_sends_since_as_a_day() -> None:
    # Given usage counters
    row = {"operation": "entries.save", "billable": True, "count": 4, "day": "2025-01-02"}
    client, fake = client_with(answer(200, {"items": [row]}))
    # When usage since a date is asked
    usage = client.usage(since=date(2025, 1, 1))
    # Then since is a YYYY-MM-DD parameter and the rows parse
    assert fake.sent[0].params == {"since": "2025-01-01"}
    assert [(u.operation, u.count) for u in usage] == [("entries.save", 4)]


# --- transports ----------------------------------------------------------------------------------


class RecordingSession:
    """A requests.Session stand-in: records the call, answers or raises."""

    def __init__(self, failure: Exception | None = None) -> None:
        self.failure = failure
        self.calls: list[dict[str, Any]] = []

    def request(self, method: str, url: str, **kwargs: Any) -> Any:
        self.calls.append({"method": method, "url": url, **kwargs})
        if self.failure is not None:
            raise self.failure
        response = requests.Response()
        response.status_code = 200
        response.headers["ETag"] = '"1"'
        response._content = json.dumps({**ENTRY, "content": "c", "version": 1}).encode()
        return response

    def close(self) -> None:
        pass


def test_http_transport_sends_the_encoded_path_to_the_base_url() -> None:
    # Given an HTTP transport on a recording session
    session = RecordingSession()
    transport = HttpTransport("http://mem.test/", 5.0, session=session)  # type: ignore[arg-type]
    client = Client("http://mem.test/", "k", transport=transport)
    # When an agent memory's entry is read
    entry = client.memory("agent:support").read("refunds", user="u1")
    # Then the URL joins base and encoded path, with the timeout and params, and the answer parses
    call = session.calls[0]
    assert call["url"] == "http://mem.test/v1/memories/agent%3Asupport/entries/refunds"
    assert (call["params"], call["timeout"]) == ({"user": "u1"}, 5.0)
    assert entry.content == "c"


def test_http_transport_turns_a_refused_connection_into_unreachable() -> None:
    # Given nothing listens at the URL
    session = RecordingSession(failure=requests.ConnectionError("Connection refused"))
    transport = HttpTransport("http://127.0.0.1:8787", session=session)  # type: ignore[arg-type]
    # When a request is sent
    with pytest.raises(Unreachable) as caught:
        Client("http://127.0.0.1:8787", "k", transport=transport).memory("company").info()
    # Then the error names the URL and is not a timeout
    assert caught.value.url == "http://127.0.0.1:8787"
    assert caught.value.timed_out is False


def test_http_transport_reports_a_read_timeout_as_timed_out() -> None:
    # Given a server that never answers
    session = RecordingSession(failure=requests.ReadTimeout("read timed out"))
    transport = HttpTransport("http://127.0.0.1:8787", 0.5, session=session)  # type: ignore[arg-type]
    # When a request is sent
    with pytest.raises(Unreachable) as caught:
        Client("http://127.0.0.1:8787", "k", transport=transport).memory("company").info()
    # Then the error says it timed out
    assert caught.value.timed_out is True


def test_in_process_transport_hands_the_handler_a_rest_event_and_decodes_its_answer() -> None:
    # Given a Lambda handler that records its event and answers 201 with an ETag
    events: list[dict[str, Any]] = []

    def handler(event: dict[str, Any], context: object) -> dict[str, Any]:
        events.append(event)
        return {
            "statusCode": 201,
            "headers": {"ETag": '"1"', "Content-Type": "application/json"},
            "body": json.dumps({**ENTRY, "version": 1}),
            "isBase64Encoded": False,
        }

    client = Client("http://in-process", "k", transport=InProcessTransport(handler))
    # When an agent memory's entry is saved for a user
    entry = client.memory("agent:support").save("refunds", "30 days", description="d", user="u1")
    # Then the handler saw the decoded path, the method, the query, the key and the JSON body
    event = events[0]
    assert (event["httpMethod"], event["path"]) == ("PUT", "/v1/memories/agent:support/entries/refunds")
    assert event["queryStringParameters"] == {"user": "u1"}
    assert event["headers"]["Authorization"] == "Bearer k"
    assert json.loads(event["body"]) == {"content": "30 days", "description": "d"}
    # And its answer came back as the saved entry
    assert entry.version == 1


def test_in_process_transport_lower_cases_response_headers() -> None:
    # Given a handler answering with mixed-case headers
    def handler(event: dict[str, Any], context: object) -> dict[str, Any]:
        return {"statusCode": 200, "multiValueHeaders": {"ETag": ['"4"']}, "body": "{}"}

    # When a request goes through
    response = InProcessTransport(handler).request("GET", "/v1/health", params=None, headers={}, body=None)
    # Then header names are lower-cased
    assert response.headers == {"etag": '"4"'}
