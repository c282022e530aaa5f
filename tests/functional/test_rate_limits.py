"""``agentmem serve``'s rate limits (local/rate_limit.py) over real HTTP: a key's bucket, its account's,
and a source's failed authentications, each answered 429 ``rate_limited`` with ``Retry-After``; and the
limits off.

Each test has a server of its own with small buckets (settings), so one test's spending is not another's.
"""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import requests
from functional_support import Server, auth, running_server

KEY_BURST = 10
ACCOUNT_BURST = 15
FAILURE_BURST = 5
SLOW = "0.2"  # tokens a second: slow enough that a test's own pace adds few


@contextmanager
def limited_server(tmp_path: Path, **settings: str) -> Iterator[Server]:
    env = {
        "AGENTMEM_RATE_LIMIT_KEY_BURST": str(KEY_BURST), "AGENTMEM_RATE_LIMIT_KEY_PER_S": SLOW,
        "AGENTMEM_RATE_LIMIT_ACCOUNT_BURST": str(ACCOUNT_BURST), "AGENTMEM_RATE_LIMIT_ACCOUNT_PER_S": SLOW,
        "AGENTMEM_RATE_LIMIT_AUTH_FAILURES_BURST": str(FAILURE_BURST), "AGENTMEM_RATE_LIMIT_AUTH_FAILURES_PER_S": "1",
        "AGENTMEM_EMBEDDER": "hashing", **settings,
    }
    data_dir = tmp_path / "data"
    with running_server(data_dir, **env) as (base_url, _proc, log):
        yield Server(base_url=base_url, key=(data_dir / "dev-key").read_text().strip(), data_dir=data_dir, log=log)


def _until_limited(session: requests.Session, url: str, key: str, most: int = 60) -> tuple[int, requests.Response]:
    """Requests until one is refused: how many were served, and the refusal."""
    for served in range(most):
        response = session.get(url, headers=auth(key), timeout=10)
        if response.status_code != 200:
            return served, response
    raise AssertionError(f"{most} requests and none limited")


def _assert_limited(status: int, headers: Mapping[str, str], body: Any, scope: str) -> int:
    """The 429's shape; returns its Retry-After."""
    assert status == 429, body
    assert set(body) == {"error"} and body["error"]["code"] == "rate_limited", body
    assert body["error"]["scope"] == scope, body
    retry_after = int({k.lower(): v for k, v in headers.items()}["retry-after"])
    assert retry_after >= 1 and body["error"]["retry_after"] == retry_after
    assert "retry in" in body["error"]["message"]
    return retry_after


def _refused(response: requests.Response, scope: str) -> int:
    return _assert_limited(response.status_code, response.headers, response.json(), scope)


def test_a_key_that_spends_its_bucket_is_refused_429_until_it_refills(tmp_path: Path) -> None:
    with limited_server(tmp_path) as server, requests.Session() as session:
        # When one key sends requests back to back
        started = time.monotonic()
        served, refused = _until_limited(session, server.url("/v1/memories"), server.key)
        # Then its burst is served (and what refilled meanwhile), then 429 with Retry-After
        assert KEY_BURST <= served <= KEY_BURST + 1 + (time.monotonic() - started) * float(SLOW)
        retry_after = _refused(refused, "key")
        # And after Retry-After it is served again
        time.sleep(retry_after)
        assert session.get(server.url("/v1/memories"), headers=auth(server.key), timeout=10).status_code == 200


def test_the_account_bucket_holds_across_its_keys(tmp_path: Path) -> None:
    with limited_server(tmp_path) as server, requests.Session() as session:
        # Given a second key of the same account
        second = session.post(server.url("/v1/keys"), headers=auth(server.key), json={}, timeout=10).json()["secret"]
        # When the first key spends its own bucket
        served_first, refused = _until_limited(session, server.url("/v1/memories"), server.key)
        _refused(refused, "key")
        # Then the second key has only what is left of the account's, though its own bucket is full
        served_second, refused = _until_limited(session, server.url("/v1/memories"), second)
        assert served_second < KEY_BURST
        assert 1 + served_first + served_second <= ACCOUNT_BURST + 2
        _refused(refused, "account")


def test_failed_keys_are_limited_per_source_and_then_even_a_valid_key_waits(tmp_path: Path) -> None:
    with limited_server(tmp_path) as server:
        host, port = server.base_url.removeprefix("http://").split(":")

        def ask(key: str, source: str = "127.0.0.1") -> http.client.HTTPResponse:
            connection = http.client.HTTPConnection(host, int(port), timeout=10, source_address=(source, 0))
            connection.request("GET", "/v1/memories", headers=auth(key))
            return connection.getresponse()

        # When one address guesses keys
        statuses = []
        for attempt in range(FAILURE_BURST + 3):
            answer = ask(f"am_guess_{attempt}")
            statuses.append(answer.status)
            if answer.status == 429:
                break
        # Then its budget of failures is answered 401, the next guess 429
        assert statuses[:FAILURE_BURST] == [401] * FAILURE_BURST
        assert statuses[-1] == 429
        # And while it is limited a valid key from there waits too (a right guess would gain nothing)
        limited = ask(server.key)
        retry_after = _assert_limited(limited.status, dict(limited.getheaders()), json.loads(limited.read()), "source")
        # But another address is served, and its own guesses are its own
        assert ask(server.key, source="127.0.0.2").status == 200
        assert ask("am_guess_elsewhere", source="127.0.0.2").status == 401
        # And after Retry-After the first address is served again
        time.sleep(retry_after)
        assert ask(server.key).status == 200


def test_no_key_at_all_is_not_a_guess(tmp_path: Path) -> None:
    with limited_server(tmp_path) as server:
        # When requests come without any key, more than the failure budget
        statuses = {requests.get(server.url("/v1/memories"), timeout=10).status_code
                    for _ in range(FAILURE_BURST * 2)}
        # Then each is asked for a key, and the address is not limited
        assert statuses == {401}
        assert requests.get(server.url("/v1/memories"), headers=auth(server.key), timeout=10).status_code == 200


def test_limits_turned_off_never_refuse(tmp_path: Path) -> None:
    with limited_server(tmp_path, AGENTMEM_RATE_LIMITS="false") as server, requests.Session() as session:
        # When a key sends more than its bucket would hold, and an address guesses more than its budget
        statuses = {session.get(server.url("/v1/memories"), headers=auth(server.key), timeout=10).status_code
                    for _ in range(KEY_BURST * 3)}
        guesses = {session.get(server.url("/v1/memories"), headers=auth("am_guess"), timeout=10).status_code
                   for _ in range(FAILURE_BURST * 2)}
        # Then nothing is limited
        assert statuses == {200} and guesses == {401}
        assert session.get(server.url("/v1/memories"), headers=auth(server.key), timeout=10).status_code == 200


def test_the_public_paths_are_not_limited(tmp_path: Path) -> None:
    with limited_server(tmp_path) as server, requests.Session() as session:
        for _ in range(KEY_BURST * 2):
            assert session.get(server.url("/v1/health"), timeout=10).status_code == 200


def test_the_openapi_document_says_every_keyed_operation_may_answer_429(server: Server) -> None:
    # Given the served OpenAPI document
    document = requests.get(server.url("/v1/openapi.json"), timeout=10).json()
    operations = [(path, method, operation) for path, methods in document["paths"].items()
                  for method, operation in methods.items()]
    # Then every operation that needs a key documents its 429, in the error shape, with Retry-After
    # (all but the health check and the workspace links, which carry their own signature)
    keyed = [(path, method, operation) for path, method, operation in operations if operation.get("security") != []]
    assert {path for path, _, operation in operations if operation.get("security") == []} == {
        "/v1/health", "/v1/links/{key}"}
    for path, method, operation in keyed:
        limited = operation["responses"].get("429")
        assert limited is not None, (method, path)
        assert limited["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Error"}
        assert limited["headers"]["Retry-After"]["schema"] == {"type": "integer"}
    # And the health check, which no limit touches, does not
    assert "429" not in document["paths"]["/v1/health"]["get"]["responses"]
