"""``agentmem serve`` in front of slow, broken and hostile clients (local/http_guard.py), over raw sockets:
methods it does not know, huge headers, conflicting lengths, slow bodies and headers, idle connections,
a 50 MB body sent without asking, more connections than it takes; and ``agentmem serve`` refusing to
start in one line.

The module's server runs with short timeouts and a small connection cap (settings), so each case takes
about a second.
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from functional_support import AGENTMEM, Server, auth, clean_env, running_server

HEADER_TIMEOUT_S = 1.0
BODY_TIMEOUT_S = 1.0
IDLE_TIMEOUT_S = 2.0
MAX_CONNECTIONS = 6
SETTINGS = {
    "AGENTMEM_SERVE_HEADER_TIMEOUT_S": str(HEADER_TIMEOUT_S),
    "AGENTMEM_SERVE_BODY_TIMEOUT_S": str(BODY_TIMEOUT_S),
    "AGENTMEM_SERVE_IDLE_TIMEOUT_S": str(IDLE_TIMEOUT_S),
    "AGENTMEM_SERVE_MAX_CONNECTIONS": str(MAX_CONNECTIONS),
    "AGENTMEM_SERVE_MAX_CONNECTIONS_PER_SOURCE": str(MAX_CONNECTIONS),  # every client here is 127.0.0.1
    "AGENTMEM_EMBEDDER": "hashing",
}
SLACK_S = 2.0  # a loaded machine answers late; never early


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    data_dir = tmp_path_factory.mktemp("guarded") / "data"
    with running_server(data_dir, **SETTINGS) as (base_url, _proc, log):
        yield Server(base_url=base_url, key=(data_dir / "dev-key").read_text().strip(), data_dir=data_dir, log=log)


@pytest.fixture
def memory(guarded: Server) -> str:
    name = f"mem-{uuid.uuid4().hex[:10]}"
    assert requests.put(guarded.url(f"/v1/memories/{name}"), headers=auth(guarded.key), timeout=10).status_code == 201
    return name


def _connect(server: Server, timeout: float = 10.0) -> socket.socket:
    host, port = server.base_url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=timeout)


def _read_answer(sock: socket.socket) -> tuple[int, dict[str, str], Any]:
    """One response: status, headers (lower-cased names) and the JSON body."""
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = sock.recv(65536)
        assert chunk, f"the connection closed without an answer: {received!r}"
        received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {name.strip().lower(): value.strip() for name, value in (line.split(":", 1) for line in lines)}
    while len(body) < int(headers.get("content-length", "0")):
        chunk = sock.recv(65536)
        assert chunk, "the connection closed mid-answer"
        body += chunk
    return int(status_line.split(" ")[1]), headers, json.loads(body) if body else None


def _exchange(server: Server, request: bytes) -> tuple[int, dict[str, str], Any]:
    with _connect(server) as sock:
        sock.sendall(request)
        return _read_answer(sock)


def _closed(sock: socket.socket) -> bool:
    """Whether the server has closed the connection (what it sends before that is read and dropped)."""
    try:
        while chunk := sock.recv(65536):
            del chunk
    except ConnectionResetError:
        pass
    return True


def _assert_error_shape(body: Any, code: str) -> None:
    assert set(body) == {"error"}, body
    assert body["error"]["code"] == code, body
    assert isinstance(body["error"]["message"], str) and len(body["error"]["message"]) >= 10, body


def _head(method: str, path: str, *lines: str) -> bytes:
    return "\r\n".join([f"{method} {path} HTTP/1.1", "Host: localhost", *lines, "", ""]).encode()


# -- methods ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["TRACE", "PROPFIND", "MKCOL", "BREW", "PATCH"])
def test_a_method_the_api_does_not_serve_is_a_json_405_with_allow(guarded: Server, method: str) -> None:
    # Given a path that serves GET (and HEAD) only
    # When it is asked with a method nobody serves, with a key
    status, headers, body = _exchange(guarded, _head(method, "/v1/memories", f"Authorization: Bearer {guarded.key}"))
    # Then it is the API's 405, as for PATCH: JSON, with Allow and the same list in the body
    assert status == 405
    assert headers["content-type"] == "application/json"
    assert headers["allow"] == "GET, HEAD"
    _assert_error_shape(body, "method_not_allowed")
    assert body["error"]["allowed"] == ["GET", "HEAD"]


@pytest.mark.parametrize("method", ["TRACE", "PROPFIND", "BREW"])
def test_an_unknown_method_without_a_key_is_asked_for_one(guarded: Server, method: str) -> None:
    # When a method nobody serves comes without a key
    status, headers, body = _exchange(guarded, _head(method, "/v1/memories"))
    # Then the key is asked for first, as for every other method
    assert status == 401 and headers["content-type"] == "application/json"
    _assert_error_shape(body, "unauthorized")


def test_connect_is_a_json_405_this_is_not_a_proxy(guarded: Server) -> None:
    # When a client takes the server for a proxy
    status, headers, body = _exchange(guarded, _head("CONNECT", "example.com:443"))
    # Then 405 in the error shape, listing what the API serves
    assert status == 405 and headers["content-type"] == "application/json"
    assert headers["allow"] == "DELETE, GET, HEAD, POST, PUT"
    _assert_error_shape(body, "method_not_allowed")


def test_a_method_name_that_is_not_a_token_is_a_json_400(guarded: Server) -> None:
    status, headers, body = _exchange(guarded, _head("GE<T", "/v1/health"))
    assert status == 400 and headers["content-type"] == "application/json"
    _assert_error_shape(body, "invalid")


# -- the HTTP layer's own refusals, in the error shape ------------------------------------------------


@pytest.mark.parametrize(("request_bytes", "status", "code"), [
    (_head("GET", "/v1/health", "X-Huge: " + "a" * 70_000), 431, "too_large"),
    (_head("GET", "/v1/health", *(f"X-Many-{i}: 1" for i in range(150))), 431, "too_large"),
    (_head("GET", "/v1/" + "a" * 70_000), 414, "too_large"),
    (b"GET /v1/health HTTP/2.0\r\nHost: localhost\r\n\r\n", 400, "invalid"),
    (b"GET /v1/health HTTP/x\r\n\r\n", 400, "invalid"),
    (b"nonsense\r\n\r\n", 400, "invalid"),
    (_head("GET", "/v1/health", "X-Spaced : 1"), 400, "invalid"),
    (_head("GET", "/v1/health", "no colon here"), 400, "invalid"),
    (_head("GET", "/v1/health", "X-Ctl: a\rb"), 400, "invalid"),
    (b"GET /v1/health HTTP/1.\xb2\r\nHost: localhost\r\n\r\n", 400, "invalid"),
], ids=["header-line-70kb", "150-headers", "request-line-70kb", "http-2", "bad-version", "no-request-line",
        "space-before-colon", "not-a-header", "bare-cr-in-a-value", "a-digit-not-ascii"])
def test_what_http_itself_refuses_is_answered_in_the_error_shape(
    guarded: Server, request_bytes: bytes, status: int, code: str
) -> None:
    # When the request cannot be read as HTTP/1.1
    got, headers, body = _exchange(guarded, request_bytes)
    # Then a 4xx in JSON, never HTML and never a 5xx
    assert got == status
    assert headers["content-type"] == "application/json"
    _assert_error_shape(body, code)


# -- framing --------------------------------------------------------------------------------------


@pytest.mark.parametrize("lengths", [("2", "40"), ("2, 40",), ("+2",), ("2_0",)],
                         ids=["two-headers", "a-list", "a-sign", "an-underscore"])
def test_conflicting_or_malformed_content_lengths_are_400_and_store_nothing(
    guarded: Server, memory: str, lengths: tuple[str, ...]
) -> None:
    # Given the store as it is
    before = guarded.snapshot()
    body = b'{"content": "x", "description": "d"}'
    # When a save declares its body's length twice, differently (or in a form that is not digits)
    request = _head("PUT", f"/v1/memories/{memory}/entries/smuggled", f"Authorization: Bearer {guarded.key}",
                    "Content-Type: application/json", *(f"Content-Length: {n}" for n in lengths)) + body
    status, headers, answer = _exchange(guarded, request)
    # Then it is refused (RFC 9112 §6.3) and nothing is stored
    assert status == 400 and headers["content-type"] == "application/json"
    _assert_error_shape(answer, "invalid")
    assert answer["error"]["field"] == "Content-Length"
    assert guarded.snapshot() == before


@pytest.mark.parametrize(("name", "first", "last"), [
    ("Authorization", "Bearer not-a-key", "Bearer {key}"), ("If-Match", '"1"', '"1"'), ("If-None-Match", "*", "*"),
    ("Content-Length", "{length}", "{length}")])
def test_a_header_that_may_come_once_sent_twice_is_a_400_and_stores_nothing(
    guarded: Server, memory: str, name: str, first: str, last: str
) -> None:
    # Given the store as it is
    before = guarded.snapshot()
    body = b'{"content": "x", "description": "d"}'
    values = {"key": guarded.key, "length": len(body)}
    lines = [f"Authorization: Bearer {guarded.key}", "Content-Type: application/json", f"Content-Length: {len(body)}"]
    lines = [line for line in lines if not line.startswith(name + ":")]
    lines += [f"{name.lower()}: {first.format(**values)}", f"{name}: {last.format(**values)}"]
    # When a save sends it twice (the last a valid one, the first in another case), whole or in pieces
    request = _head("PUT", f"/v1/memories/{memory}/entries/twice", *lines) + body
    for pieces in (1, 2):
        with _connect(guarded) as sock:
            sock.sendall(request[:len(request) // pieces])
            if pieces == 2:
                time.sleep(0.3)
                sock.sendall(request[len(request) // pieces:])
            status, headers, answer = _read_answer(sock)
        # Then it is refused naming the header, in the shape of the API's other 400s, and nothing is stored
        assert status == 400 and headers["content-type"] == "application/json"
        assert answer == {"error": {"code": "invalid", "message": f"the request has 2 {name} headers: send it once",
                                    "field": name}}
    assert guarded.snapshot() == before


@pytest.mark.parametrize("encoding", ["chunked", "gzip, chunked", "identity"])
def test_a_transfer_encoded_body_is_411_even_beside_a_length(guarded: Server, memory: str, encoding: str) -> None:
    before = guarded.snapshot()
    request = _head("PUT", f"/v1/memories/{memory}/entries/te", f"Authorization: Bearer {guarded.key}",
                    f"Transfer-Encoding: {encoding}", "Content-Length: 4") + b"0\r\n\r\n"
    status, _, answer = _exchange(guarded, request)
    assert status == 411
    _assert_error_shape(answer, "length_required")
    assert guarded.snapshot() == before


# -- timeouts -------------------------------------------------------------------------------------


def test_a_body_shorter_than_its_length_is_answered_408_and_closed_after_the_timeout(
    guarded: Server, memory: str
) -> None:
    # Given the store as it is
    before = guarded.snapshot()
    with _connect(guarded) as sock:
        # When a save declares 100 bytes of body and sends 2
        started = time.monotonic()
        sock.sendall(_head("PUT", f"/v1/memories/{memory}/entries/slow", f"Authorization: Bearer {guarded.key}",
                           "Content-Type: application/json", "Content-Length: 100") + b"{}")
        status, headers, body = _read_answer(sock)
        took = time.monotonic() - started
        # Then after the body timeout it is answered 408 and the connection closed
        assert status == 408 and headers["connection"] == "close"
        _assert_error_shape(body, "request_timeout")
        assert BODY_TIMEOUT_S <= took < BODY_TIMEOUT_S + SLACK_S
        assert _closed(sock)
    # And nothing is stored
    assert guarded.snapshot() == before


def test_a_bare_request_line_is_answered_408_after_the_header_timeout(guarded: Server) -> None:
    with _connect(guarded) as sock:
        # When a request line comes and no headers follow
        started = time.monotonic()
        sock.sendall(b"GET /v1/health HTTP/1.1\r\n")
        status, _, body = _read_answer(sock)
        # Then the header timeout answers it, and the connection is closed
        assert status == 408
        _assert_error_shape(body, "request_timeout")
        assert HEADER_TIMEOUT_S <= time.monotonic() - started < HEADER_TIMEOUT_S + SLACK_S
        assert _closed(sock)


def test_headers_trickled_a_byte_at_a_time_do_not_extend_the_deadline(guarded: Server) -> None:
    with _connect(guarded) as sock:
        # When a client sends its headers one byte every 0.2 s (each read on its own would be in time)
        started = time.monotonic()
        sock.sendall(b"GET /v1/health HTTP/1.1\r\n")
        answered = b""
        sock.settimeout(0.2)
        for byte in b"X-Slow: " + b"a" * 100:
            try:
                sock.sendall(bytes([byte]))
                answered += sock.recv(65536)
            except TimeoutError:
                continue
            except (BrokenPipeError, ConnectionResetError):
                break
            if answered:
                break
        took = time.monotonic() - started
    # Then the whole head had the header timeout, not one byte's worth each
    assert answered.startswith(b"HTTP/1.1 408"), answered[:80]
    assert took < HEADER_TIMEOUT_S + SLACK_S


def test_an_idle_connection_is_closed_after_the_idle_timeout_without_an_answer(guarded: Server) -> None:
    with _connect(guarded) as sock:
        # Given a kept-alive connection that has been answered once
        sock.sendall(_head("GET", "/v1/health"))
        assert _read_answer(sock)[0] == 200
        started = time.monotonic()
        # When it sends nothing more
        received = sock.recv(65536)
        # Then the server closes it after the idle timeout, saying nothing
        assert received == b""
        assert IDLE_TIMEOUT_S - 0.1 <= time.monotonic() - started < IDLE_TIMEOUT_S + SLACK_S


@pytest.mark.parametrize(("lines", "target", "status", "code"), [
    ((), "/v1/memories/{memory}/entries/e", 401, "unauthorized"),
    (("Authorization: Basic dXNlcjpwYXNz",), "/v1/memories/{memory}/entries/e", 401, "unauthorized"),
    (("Authorization: Bearer not-a-key",), "/v1/memories/{memory}/entries/e", 401, "unauthorized"),
    (("Authorization: Bearer {key}",), "/v1/nowhere/at/all", 404, "not_found"),
    (("Authorization: Bearer {key}",), "/v1/memories", 405, "method_not_allowed"),
    (("Authorization: Bearer {key}",), "/v1/memories/{memory}/entries/e", 413, "too_large"),
], ids=["no-key", "not-bearer", "unknown-key", "no-route", "no-method", "over-the-routes-limit"])
@pytest.mark.parametrize("expect", [False, True], ids=["sent", "asked"])
def test_a_request_refused_whatever_its_body_is_answered_before_the_body_comes(
    guarded: Server, memory: str, lines: tuple[str, ...], target: str, status: int, code: str, expect: bool
) -> None:
    # Given a body the request declares and has not sent (2 MB for the 413: over the API's 1 MB, under 8 MB)
    length = 2_000_000 if status == 413 else 5_000
    head = _head("PUT", target.format(memory=memory), "Content-Type: application/json",
                 *(line.format(key=guarded.key) for line in lines), *(["Expect: 100-continue"] if expect else []),
                 f"Content-Length: {length}")
    with _connect(guarded) as sock:
        # When only its head has come (and, to a client that waits, without asking for the body)
        started = time.monotonic()
        sock.sendall(head + (b"" if expect else b'{"content": '))
        got, headers, body = _read_answer(sock)
        # Then it is refused before the body timeout could have run out, and the connection is closed
        assert time.monotonic() - started < BODY_TIMEOUT_S
        assert (got, headers["connection"]) == (status, "close")
        _assert_error_shape(body, code)
        assert _closed(sock)


def test_a_keyed_request_is_asked_for_its_body_and_served(guarded: Server, memory: str) -> None:
    body = b'{"content": "asked for", "description": "d"}'
    with _connect(guarded) as sock:
        sock.sendall(_head("PUT", f"/v1/memories/{memory}/entries/asked-keyed", f"Authorization: Bearer {guarded.key}",
                           "Content-Type: application/json", "Expect: 100-continue", f"Content-Length: {len(body)}"))
        assert sock.recv(65536).startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
        sock.sendall(body)
        assert _read_answer(sock)[0] == 201


def test_a_body_that_stops_coming_is_a_408_at_the_end_of_a_window(guarded: Server, memory: str) -> None:
    # Given a save with a valid key that declares 200 KB (its allowance: the body timeout and 4 s)
    with _connect(guarded) as sock:
        sock.sendall(_head("PUT", f"/v1/memories/{memory}/entries/stalled", f"Authorization: Bearer {guarded.key}",
                           "Content-Type: application/json", "Content-Length: 200000") + b'{"content": "')
        started = time.monotonic()
        # When a byte of it comes each 0.3 s (under the floor of 1,024 bytes a second)
        answer = b""
        sock.settimeout(0.3)
        while not answer and time.monotonic() - started < 10:
            try:
                sock.sendall(b"a")
                answer = sock.recv(65536)
            except TimeoutError:
                continue
            except (BrokenPipeError, ConnectionResetError):
                break
    # Then it is a 408 once a window (the body timeout, 1 s, here) passed under the floor
    assert answer.startswith(b"HTTP/1.1 408"), answer[:80]
    assert b"bytes a second" in answer
    assert time.monotonic() - started < BODY_TIMEOUT_S + SLACK_S


# -- a body too large, sent without asking ----------------------------------------------------------


def test_a_50_mb_body_sent_whole_gets_a_readable_413(guarded: Server, memory: str) -> None:
    # Given the store as it is
    before = guarded.snapshot()
    # When a client sends a 50 MB body at once (no Expect: 100-continue) and only then reads
    response = requests.put(guarded.url(f"/v1/memories/{memory}/entries/huge"), data=b"x" * 50_000_000,
                            headers={**auth(guarded.key), "Content-Type": "application/json"}, timeout=60)
    # Then it reads the 413 (not a broken pipe) and nothing is stored
    assert response.status_code == 413
    _assert_error_shape(response.json(), "too_large")
    assert guarded.snapshot() == before


def test_a_large_body_announced_with_expect_is_refused_before_it_is_sent(guarded: Server, memory: str) -> None:
    with _connect(guarded) as sock:
        # When a client asks whether it may send 50 MB
        sock.sendall(_head("PUT", f"/v1/memories/{memory}/entries/huge", f"Authorization: Bearer {guarded.key}",
                           "Expect: 100-continue", "Content-Length: 50000000"))
        # Then the final answer comes at once, instead of 100 Continue
        status, _, body = _read_answer(sock)
        assert status == 413
        _assert_error_shape(body, "too_large")


def test_a_small_body_announced_with_expect_is_asked_for(guarded: Server, memory: str) -> None:
    body = b'{"content": "x", "description": "d"}'
    with _connect(guarded) as sock:
        sock.sendall(_head("PUT", f"/v1/memories/{memory}/entries/asked", f"Authorization: Bearer {guarded.key}",
                           "Expect: 100-continue", f"Content-Length: {len(body)}"))
        assert sock.recv(65536).startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
        sock.sendall(body)
        assert _read_answer(sock)[0] == 201


# -- the connection cap ---------------------------------------------------------------------------


def test_a_connection_over_the_cap_is_answered_503_and_the_server_recovers(guarded: Server) -> None:
    # Given as many open connections as the server takes
    held = [_connect(guarded) for _ in range(MAX_CONNECTIONS)]
    try:
        # When one more asks for something, once the server has accepted them all (on a loaded machine that
        # can take longer than a moment: until then one more is served, and its connection closed, as it should)
        deadline = time.monotonic() + 10
        while True:
            status, headers, body = _exchange(guarded, _head("GET", "/v1/health", "Connection: close"))
            if status != 200 or time.monotonic() > deadline:
                break
            # (held connections it has not counted yet, or has closed as idle after IDLE_TIMEOUT_S on a machine
            # that slow: a fresh set, and ask again)
            for sock in held:
                sock.close()
            held = [_connect(guarded) for _ in range(MAX_CONNECTIONS)]
            time.sleep(0.1)
        # Then it is told to come back, in the error shape, without a thread of its own
        assert status == 503
        assert headers["retry-after"] == "1" and headers["connection"] == "close"
        _assert_error_shape(body, "unavailable")
    finally:
        for sock in held:
            sock.close()
    # And once they are gone it is served again
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if _exchange(guarded, _head("GET", "/v1/health", "Connection: close"))[0] == 200:
            return
        time.sleep(0.1)
    raise AssertionError("the server did not take connections again")


def test_the_server_still_answers_normally(guarded: Server) -> None:
    # After every case above, a plain keep-alive client is served as before
    with requests.Session() as session:
        for _ in range(3):
            assert session.get(guarded.url("/v1/memories"), headers=auth(guarded.key), timeout=10).status_code == 200


# -- agentmem serve refusing to start ----------------------------------------------------------------


@pytest.mark.parametrize(("args", "said"), [
    (["--port", "99999"], "--port is a TCP port, 0 to 65535"),
    (["--port", "-1"], "--port is a TCP port, 0 to 65535"),
    (["--host", "999.1.1.1"], "cannot listen on 999.1.1.1:8787: '999.1.1.1' is not an address of this machine"),
    (["--host", "192.0.2.1"], "cannot listen on 192.0.2.1:8787"),
    (["--data-dir", "/proc/nope"], "cannot use the data dir /proc/nope"),
    (["--workers", "0"], "--workers is a number of processes, 1 to 256, not 0"),
    (["--workers", "257"], "--workers is a number of processes, 1 to 256, not 257"),
], ids=["port-too-high", "port-negative", "host-not-an-address", "host-not-this-machine", "data-dir-impossible",
        "no-workers", "too-many-workers"])
def test_serve_that_cannot_start_says_why_in_one_line(tmp_path: Path, args: list[str], said: str) -> None:
    data_dir = ["--data-dir", str(tmp_path / "data")] if "--data-dir" not in args else []
    # When agentmem serve is started with what cannot work
    done = subprocess.run([str(AGENTMEM), "serve", *data_dir, *args], capture_output=True, text=True,
                          env=clean_env(AGENTMEM_EMBEDDER="hashing"), timeout=60, check=False)
    # Then it exits 1 with one line saying why, and no traceback
    assert done.returncode == 1, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert said in lines[0] and lines[0].startswith("Error: ")
    assert "Traceback" not in done.stderr + done.stdout


def test_an_upload_link_asks_for_a_large_body_announced_with_expect(guarded: Server) -> None:
    # Given an upload link for a 9 MB file (over what the API reads, within what a link takes)
    size = 9 * 1024 * 1024
    agent = f"guard-{uuid.uuid4().hex[:8]}"
    headers = auth(guarded.key)
    assert requests.put(guarded.url(f"/v1/agents/{agent}"), headers=headers, json={}, timeout=10).status_code == 201
    made = requests.post(guarded.url(f"/v1/agents/{agent}/conversations/c1/workspace/links"), headers=headers,
                         json={"path": "big.bin", "method": "PUT", "size_bytes": size}, timeout=10)
    assert made.status_code == 201, made.text
    target = made.json()["url"].removeprefix(guarded.base_url)
    with _connect(guarded) as sock:
        # When a client announces the body and waits to be asked
        sock.sendall(_head("PUT", target, "Expect: 100-continue", f"Content-Length: {size}"))
        # Then it is asked for it, and the upload lands
        assert sock.recv(65536).startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
        sock.sendall(b"\0" * size)
        status, _, body = _read_answer(sock)
        assert status == 200 and body == {"size_bytes": size}
