"""The local server's connection loop (local/connection_loop.py): which requests it answers itself, pipelined
requests in order, and connections that are slow, split, unread or idle, none of which holds up another.

The server here is the real ``GuardedHTTPServer`` and ``ApiRequestHandler`` with a stand-in for the Lambda
handler that echoes what it was given; ``tests/functional/test_server_guard.py`` runs the guard's cases against
``agentmem serve`` itself.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from typing import Any

import pytest
from agentmem.local.connection_loop import MORE, PIECES_WAIT_S, whole_request
from agentmem.local.http_guard import GuardedHTTPServer, Timeouts
from agentmem.local.server import ApiRequestHandler

IDLE_S = 1.0
BIG = 8 * 1024 * 1024  # an answer larger than what the sockets' buffers hold


def _echo(event: dict[str, Any], _context: Any) -> dict[str, Any]:
    if event["path"] == "/slow":
        time.sleep(IDLE_S + 0.5)
    if event["path"] == "/big":
        return {"statusCode": 200, "headers": {"Content-Type": "text/plain"}, "body": "x" * BIG}
    body = {"path": event["path"], "method": event["httpMethod"], "body": event["body"],
            "thread": threading.current_thread().name}
    return {"statusCode": 200, "headers": {"Content-Type": "application/json"}, "body": json.dumps(body)}


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[GuardedHTTPServer]:
    handler = type("EchoHandler", (ApiRequestHandler,), {
        "handler": staticmethod(_echo), "timeouts": Timeouts(idle_s=IDLE_S, header_s=1.0, body_s=1.0),
        "access_log": bool(getattr(request, "param", False))})
    httpd = GuardedHTTPServer(("127.0.0.1", 0), handler, 8, max_per_source=8)  # (every client here is 127.0.0.1)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="loop", daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()
    thread.join(5)


def _connect(server: GuardedHTTPServer) -> socket.socket:
    host, port = server.server_address[:2]
    return socket.create_connection((str(host), int(port)), timeout=10)


def _request(path: str, body: bytes = b"", *headers: str) -> bytes:
    lines = [f"POST {path} HTTP/1.1" if body else f"GET {path} HTTP/1.1", "Host: localhost", *headers]
    if body:
        lines.append(f"Content-Length: {len(body)}")
    return "\r\n".join([*lines, "", ""]).encode() + body


class _Answers:
    """Reads answers off one connection, in order."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.buffer = sock, b""

    def next(self) -> tuple[int, dict[str, str], bytes]:
        while b"\r\n\r\n" not in self.buffer:
            self._more()
        head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        status_line, *lines = head.decode("latin-1").split("\r\n")
        headers = {name.strip().lower(): value.strip() for name, value in (line.split(":", 1) for line in lines)}
        length = int(headers["content-length"])
        while len(self.buffer) < length:
            self._more()
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        return int(status_line.split(" ")[1]), headers, body

    def json(self) -> dict[str, Any]:
        status, _, body = self.next()
        assert status == 200, body
        answer: dict[str, Any] = json.loads(body)
        return answer

    def _more(self) -> None:
        chunk = self.sock.recv(1 << 20)
        assert chunk, f"the connection closed; read so far {self.buffer[:200]!r}"
        self.buffer += chunk


# -- which requests the loop answers itself ---------------------------------------------------------------------
@pytest.mark.parametrize(("raw", "expected"), [
    (b"GET /v1/a HTTP/1.1\r\nHost: x\r\n\r\n", (31, "/v1/a")),
    (b"POST /v1/a?b=1 HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi", (48, "/v1/a?b=1")),
    (b"POST /v1/a HTTP/1.1\r\ncontent-length:  2 \r\n\r\nhiGET", (46, "/v1/a")),  # the next request's start left
])
def test_a_request_read_whole_and_framed_plainly_is_found_with_its_size(raw: bytes, expected: tuple[int, str]) -> None:
    assert whole_request(bytearray(raw)) == expected


@pytest.mark.parametrize("raw", [
    b"GET /v1/a HTTP/1.1\r\nHost: x\r\n",  # the headers not ended yet
    b"GET /v1/a HTTP/1.1\nHost: x\n\n",  # (bare LFs: waited for, then read by a thread)
    b"POST /v1/a HTTP/1.1\r\nContent-Length: 5\r\n\r\nhi",  # the body not all here
])
def test_a_request_framed_plainly_as_far_as_it_came_is_waited_for(raw: bytes) -> None:
    assert whole_request(bytearray(raw)) == MORE


@pytest.mark.parametrize("raw", [
    b"GET /v1/a HTTP/1.1\r\nHost: x\r\nX-A: 1\nX-B: 2\r\n\r\n",  # one bare LF among the CRLFs
    b"GET /v1/a HTTP/1.1\r\nX-A: 1\r\n  folded\r\n\r\n",  # a folded line
    b"POST /v1/a HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nhi",  # two lengths
    b"POST /v1/a HTTP/1.1\r\nContent-Length : 2\r\n\r\nhi",  # whitespace before the colon
    b"POST /v1/a HTTP/1.1\r\nContent-Length: +2\r\n\r\nhi",  # not digits
    b"POST /v1/a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n",
    b"POST /v1/a HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n",
    b"GET /v1/a\r\n\r\n",  # HTTP/0.9
    b"GET /v1/a HTTP/2.0\r\n\r\n",
    b"GET  HTTP/1.1\r\n\r\n",
])
def test_anything_else_goes_to_a_thread_under_the_guards_rules(raw: bytes) -> None:
    assert whole_request(bytearray(raw)) is None


# -- over a connection ------------------------------------------------------------------------------------------
def test_requests_on_a_kept_alive_connection_are_answered_by_the_loop_in_order(server: GuardedHTTPServer) -> None:
    with _connect(server) as sock:
        answers = _Answers(sock)
        for number in range(3):
            sock.sendall(_request(f"/v1/n{number}"))
            answer = answers.json()
            assert answer["path"] == f"/v1/n{number}"
            assert answer["thread"] == "loop"


def test_pipelined_requests_are_answered_in_the_order_sent(server: GuardedHTTPServer) -> None:
    with _connect(server) as sock:
        sock.sendall(b"".join([_request("/v1/one"), _request("/v1/two", b'{"a": 1}'), _request("/v1/three")]))
        answers = _Answers(sock)
        seen = [answers.json() for _ in range(3)]
    assert [(a["path"], a["method"], a["body"]) for a in seen] == [
        ("/v1/one", "GET", None), ("/v1/two", "POST", '{"a": 1}'), ("/v1/three", "GET", None)]


def test_a_request_whose_pieces_come_close_together_is_answered_by_the_loop(server: GuardedHTTPServer) -> None:
    request = _request("/v1/pieces", b'{"pieces": "' + b"x" * 3000 + b'"}')
    with _connect(server) as sock:
        for start in range(0, len(request), 700):  # as a request of a few KB can come over a network
            sock.sendall(request[start:start + 700])
            time.sleep(0.005)
        answer = _Answers(sock).json()
    assert (answer["path"], len(answer["body"]), answer["thread"]) == ("/v1/pieces", 3014, "loop")


def test_a_request_that_arrives_in_pieces_is_answered_by_a_thread(server: GuardedHTTPServer) -> None:
    request = _request("/v1/split", b'{"split": true}')
    with _connect(server) as sock:
        sock.sendall(request[:20])
        time.sleep(PIECES_WAIT_S + 0.3)
        sock.sendall(request[20:])
        answers = _Answers(sock)
        answer = answers.json()
        assert (answer["path"], answer["body"]) == ("/v1/split", '{"split": true}')
        assert answer["thread"] != "loop"
        sock.sendall(_request("/v1/after"))  # the connection goes on, in its thread
        assert answers.json()["path"] == "/v1/after"


def test_a_stalled_request_holds_up_no_other_connection(server: GuardedHTTPServer) -> None:
    with _connect(server) as stalled, _connect(server) as other:
        stalled.sendall(b"GET /v1/stalled HTTP/1.1\r\nHost: x")
        time.sleep(0.1)
        started = time.monotonic()
        other.sendall(_request("/v1/other"))
        assert _Answers(other).json()["path"] == "/v1/other"
        assert time.monotonic() - started < 0.9  # before the stalled request's header deadline (1 s) ran out
        status, _, _ = _Answers(stalled).next()  # and that one is answered 408 by its thread when it runs out
        assert status == 408


def test_a_client_that_does_not_read_its_answer_holds_up_no_other(server: GuardedHTTPServer) -> None:
    with _connect(server) as slow, _connect(server) as other:
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        slow.sendall(_request("/big"))
        time.sleep(0.2)
        other.sendall(_request("/v1/other"))
        assert _Answers(other).json()["path"] == "/v1/other"
        loop = server._loop
        assert loop is not None
        held = [c.address for c in loop.connections.values()]
        assert slow.getsockname() in held  # its answer is waiting to be sent
        deadline = time.monotonic() + IDLE_S + 2
        while slow.getsockname() in [c.address for c in loop.connections.values()]:  # given up after the idle timeout
            assert time.monotonic() < deadline, "the loop kept a client that reads nothing"
            time.sleep(0.05)


def test_a_connection_asked_to_close_gets_its_answer_then_the_end(server: GuardedHTTPServer) -> None:
    with _connect(server) as sock:
        sock.sendall(_request("/v1/last", b"", "Connection: close") + _request("/v1/ignored"))
        answers = _Answers(sock)
        status, headers, _ = answers.next()
        assert (status, headers["connection"]) == (200, "close")
        assert sock.recv(65536) == answers.buffer == b""  # nothing after it: the pipelined request is dropped


def test_an_idle_connection_is_closed_without_an_answer(server: GuardedHTTPServer) -> None:
    with _connect(server) as sock:
        sock.sendall(_request("/v1/once"))
        answers = _Answers(sock)
        answers.json()
        started = time.monotonic()
        assert sock.recv(65536) == b""
        assert IDLE_S - 0.1 <= time.monotonic() - started < IDLE_S + 2


def test_a_request_sent_while_the_loop_answers_a_long_one_is_answered_not_closed_as_idle(
        server: GuardedHTTPServer) -> None:
    with _connect(server) as waiting, _connect(server) as slow:
        answers = _Answers(waiting)
        waiting.sendall(_request("/v1/first"))
        answers.json()  # its idle timeout starts now
        slow.sendall(_request("/slow"))  # the loop is busy with this past that timeout
        time.sleep(0.3)
        waiting.sendall(_request("/v1/second"))  # sent well within it
        assert answers.json()["path"] == "/v1/second"
        assert _Answers(slow).json()["path"] == "/slow"


def test_kept_alive_connections_cost_no_thread_each(server: GuardedHTTPServer) -> None:
    before = threading.active_count()
    sockets = [_connect(server) for _ in range(6)]
    try:
        for number, sock in enumerate(sockets):
            sock.sendall(_request(f"/v1/c{number}"))
            assert _Answers(sock).json()["thread"] == "loop"
        assert threading.active_count() == before
    finally:
        for sock in sockets:
            sock.close()


def test_a_bad_request_line_read_whole_is_answered_in_the_error_shape(server: GuardedHTTPServer) -> None:
    with _connect(server) as sock:
        sock.sendall(b"GET /v1/a HTTP/1.x\r\nHost: x\r\n\r\n")
        status, headers, body = _Answers(sock).next()
    assert status == 400 and headers["connection"] == "close"
    assert json.loads(body)["error"]["code"] == "invalid"


@pytest.mark.parametrize("server", [True], indirect=True)
def test_the_access_log_has_a_line_a_request_when_it_is_asked_for(server: GuardedHTTPServer,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    with _connect(server) as sock:
        sock.sendall(_request("/v1/logged") + _request("/v1/missing", b"", "Connection: close"))
        answers = _Answers(sock)
        answers.json()
        answers.next()
    logged = capsys.readouterr().err
    assert '"GET /v1/logged HTTP/1.1" 200 -' in logged
    assert '"GET /v1/missing HTTP/1.1" 200 -' in logged


def test_no_access_log_unless_asked_for(server: GuardedHTTPServer, capsys: pytest.CaptureFixture[str]) -> None:
    with _connect(server) as sock:
        sock.sendall(_request("/v1/quiet"))
        _Answers(sock).json()
    assert "/v1/quiet" not in capsys.readouterr().err


def test_on_stopping_a_request_already_sent_is_answered_and_its_connection_closed(server: GuardedHTTPServer) -> None:
    with _connect(server) as waiting, _connect(server) as slow:
        answers = _Answers(waiting)
        waiting.sendall(_request("/v1/first"))
        answers.json()
        slow.sendall(_request("/slow"))  # the loop is busy with this ...
        time.sleep(0.2)
        stopping = threading.Thread(target=server.shutdown)
        stopping.start()  # ... when the server is asked to stop ...
        time.sleep(0.2)
        waiting.sendall(_request("/v1/last"))  # ... and this request comes
        status, headers, body = answers.next()
        assert (status, headers["connection"], json.loads(body)["path"]) == (200, "close", "/v1/last")
        assert waiting.recv(65536) == b""
        assert _Answers(slow).json()["path"] == "/slow"
        stopping.join(5)


def test_a_request_cut_short_by_the_client_is_answered_as_a_thread_answers_it(server: GuardedHTTPServer) -> None:
    with _connect(server) as sock:
        sock.sendall(b"POST /v1/cut HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n" + b"x" * 40)
        sock.shutdown(socket.SHUT_WR)  # and no more
        answer = _Answers(sock).json()
    # (a thread hands the handler what came: the API refuses a JSON body cut short as it refuses any bad JSON)
    assert (answer["path"], answer["body"], answer["thread"] != "loop") == ("/v1/cut", "x" * 40, True)


def test_a_connection_whose_thread_cannot_start_is_closed_and_every_other_is_served(
        server: GuardedHTTPServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # Given a server whose next thread cannot start (as when a process has run out of threads)
    start_thread = ThreadingHTTPServer.process_request
    failed: list[Any] = []

    def no_thread(self: Any, sock: socket.socket, address: Any) -> None:
        if not failed:
            failed.append(address)
            raise RuntimeError("can't start new thread")
        start_thread(self, sock, address)

    monkeypatch.setattr(ThreadingHTTPServer, "process_request", no_thread)
    with _connect(server) as split:
        # When a request that arrives in pieces is to go to a thread
        split.sendall(b"GET /v1/split HTTP/1.1\r\n")
        time.sleep(PIECES_WAIT_S + 0.3)
        # Then that connection is closed, without an answer ...
        assert split.recv(65536) == b""
    assert len(failed) == 1
    # ... the error is logged once, as a request's error is ...
    assert capsys.readouterr().err.count("RuntimeError: can't start new thread") == 1
    # ... and the loop serves on: as many connections as the server takes at once (its slot was freed once)
    connections = [_connect(server) for _ in range(8)]
    try:
        for n, sock in enumerate(connections):
            sock.sendall(_request(f"/v1/after-{n}"))
        assert [_Answers(sock).json()["path"] for sock in connections] == [f"/v1/after-{n}" for n in range(8)]
    finally:
        for sock in connections:
            sock.close()
    assert "Traceback" not in capsys.readouterr().err
