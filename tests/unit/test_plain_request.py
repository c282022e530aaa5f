"""A request the connection loop read whole is read in one pass when its request line and headers are plain
(``http_guard.plain_request``, ``ApiRequestHandler._read_plain``), and line by line otherwise. Whatever the
bytes, both readings must give the handler the same event and the client the same answer, byte for byte: the
one pass is a shortcut, never a second set of rules.
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from agentmem.local import server as server_module
from agentmem.local.http_guard import HEADER_LIMIT, GuardedHTTPServer, Timeouts, plain_request
from agentmem.local.server import ApiRequestHandler
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

_VOLATILE = ("requestId", "requestTimeEpoch")


def _echo(event: dict[str, Any], _context: Any) -> dict[str, Any]:
    """Everything of the event but what differs from one request to the next, as the answer's body."""
    shown = {key: value for key, value in event.items() if key != "requestContext"}
    shown["requestContext"] = {k: v for k, v in event["requestContext"].items() if k not in _VOLATILE}
    return {"statusCode": 200, "headers": {"Content-Type": "application/json", "X-Echo": "1"},
            "body": json.dumps(shown, sort_keys=True)}


@pytest.fixture(scope="module")
def httpd() -> Iterator[GuardedHTTPServer]:
    handler = type("EchoHandler", (ApiRequestHandler,), {
        "handler": staticmethod(_echo), "timeouts": Timeouts(idle_s=1.0, header_s=1.0, body_s=1.0)})
    server = GuardedHTTPServer(("127.0.0.1", 0), handler, 8)
    yield server
    server.server_close()


_DATE = re.compile(rb"\r\nDate: [^\r]*\r\n")


def _answers(httpd: GuardedHTTPServer, raw: bytes, monkeypatch: pytest.MonkeyPatch) -> tuple[tuple[bytes, bool], ...]:
    """The answer and the close flag of ``raw``, read in one pass where it may be, then line by line."""
    handler = httpd.RequestHandlerClass
    with socket.socket() as sock:
        fast = handler.answer_buffered(httpd, sock, ("127.0.0.1", 9), raw)  # type: ignore[attr-defined]
        with monkeypatch.context() as patched:
            patched.setattr(server_module, "plain_request", lambda *_: None)
            slow = handler.answer_buffered(httpd, sock, ("127.0.0.1", 9), raw)  # type: ignore[attr-defined]
    return tuple((_DATE.sub(b"\r\nDate: -\r\n", answer), close) for answer, close in (fast, slow))


def _raw(line: str, headers: list[str], body: bytes = b"", eol: str = "\r\n") -> bytes:
    return (line + eol + "".join(header + eol for header in headers) + eol).encode("latin-1") + body


# -- cases chosen one by one -------------------------------------------------------------------------------------
@pytest.mark.parametrize("raw", [
    _raw("GET /v1/a HTTP/1.1", ["Host: x", "Authorization: Bearer k"]),
    _raw("GET /v1/a?b=1&b=2&c= HTTP/1.1", ["host:x", "X-A:   spaced \t", "x-a: again", "X-Empty:"]),
    _raw("GET //v1/a HTTP/1.1", ["Host: x"]),
    _raw("GET /v1/%2Fa%20b HTTP/1.0", ["Host: x"]),
    _raw("GET /v1/a HTTP/1.0", ["Connection: keep-alive"]),
    _raw("GET /v1/a HTTP/1.1", ["Connection: close"]),
    _raw("GET /v1/a HTTP/1.1", ["Connection: Keep-Alive, Upgrade"]),
    _raw("POST /v1/a HTTP/1.1", ["Content-Type: application/json", "Content-Length: 7"], b'{"a":1}'),
    _raw("PUT /v1/a HTTP/1.1", ["Content-Length: 4", "Content-Type: image/png"], b"\x89PNG"),
    _raw("GET /v1/a HTTP/1.1", ["X-Latin: caf\xe9 \xa0"]),
    _raw("GET /v1/a HTTP/1.1", ["X-Colon: a:b: c"]),
    _raw("GET /v1/a HTTP/1.1", [f"X-{n}: {n}" for n in range(HEADER_LIMIT)]),
    _raw("GET /v1/a HTTP/1.1", [f"X-{n}: {n}" for n in range(HEADER_LIMIT + 1)]),  # 431, line by line
    _raw("GET /v1/a HTTP/1.1", ["X-Bad Name: 1"]),  # 400: not a header
    _raw("GET /v1/a HTTP/1.1", ["X-Ctl: a\x01b"]),  # 400: a control character
    _raw("GET /v1/a HTTP/1.1", ["X-Fold: a", " b"]),  # folded
    _raw("GET /v1/a HTTP/1.1", [": no name"]),
    _raw("GET /v1/a HTTP/1.1", ["X-A: 1\r"]),  # a CR before the CRLF
    _raw("GET /v1/a HTTP/1.1", ["Host: x"], eol="\n"),  # bare LFs
    _raw("GET /v1/a HTTP/2.0", ["Host: x"]),
    _raw("GET /v1/a HTTP/1.2", ["Host: x"]),
    _raw("GET /v1/a HTTP/01.1", ["Host: x"]),
    _raw("GET /v1/a", ["Host: x"]),
    _raw("G@T /v1/a HTTP/1.1", ["Host: x"]),
    _raw("BREW /v1/a HTTP/1.1", ["Host: x"]),
    _raw("OPTIONS * HTTP/1.1", ["Host: x"]),
    _raw("GET http://h/v1/a?q=1#f HTTP/1.1", ["Host: x"]),
    _raw("GET\x0b/v1/a\xa0HTTP/1.1", ["Host: x"]),  # whitespace of str.split() other than the space
    _raw("POST /v1/a HTTP/1.1", ["Transfer-Encoding: chunked"], b"2\r\nhi\r\n0\r\n\r\n"),
    _raw("POST /v1/a HTTP/1.1", ["Content-Length: 2", "Content-Length: 3"], b"hi"),
    _raw("HEAD /v1/a HTTP/1.1", ["Host: x"]),
])
def test_both_readings_answer_alike(httpd: GuardedHTTPServer, raw: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    fast, slow = _answers(httpd, raw, monkeypatch)
    assert fast == slow


def test_the_plain_reading_takes_what_it_should_and_leaves_the_rest() -> None:
    plain = _raw("GET /v1/a HTTP/1.1", ["Host: x", "X-A:  1 "])
    assert plain_request(plain, plain.find(b"\r\n\r\n")) == (["GET", "/v1/a", "HTTP/1.1"],
                                                              [("Host", "x"), ("X-A", "1")])
    for raw in (_raw("GET /v1/a HTTP/1.1", ["X-Fold: a", " b"]), _raw("GET /v1/a HTTP/2.0", []),
                _raw("GET /v1/a HTTP/1.1", ["X A: 1"]), _raw("GET /v1/a HTTP/1.1", ["X-A: \x7f"]),
                _raw("GET /v1/a HTTP/1.1", [f"X-{n}: 1" for n in range(HEADER_LIMIT + 1)])):
        assert plain_request(raw, raw.find(b"\r\n\r\n")) is None


def test_an_answer_read_in_one_pass_is_the_handlers(httpd: GuardedHTTPServer) -> None:
    raw = _raw("GET /v1/a?b=1 HTTP/1.1", ["Host: x", "X-A:  1 "])
    with socket.socket() as sock:
        answer, close = httpd.RequestHandlerClass.answer_buffered(  # type: ignore[attr-defined]
            httpd, sock, ("127.0.0.1", 9), raw)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK\r\n") and b"\r\nX-Echo: 1" in head and not close
    event = json.loads(body)
    assert (event["path"], event["headers"], event["queryStringParameters"]) == (
        "/v1/a", {"Host": "x", "X-A": "1"}, {"b": "1"})


# -- any bytes ---------------------------------------------------------------------------------------------------
_NAMES = st.sampled_from(["Host", "X-A", "x-a", "Content-Type", "Connection", "Authorization", "X Bad", "", "X:Y",
                          "Content-Length", "Expect", "Transfer-Encoding"])
_VALUES = st.lists(st.sampled_from([*"ab :;\t\xe9\xa0\x01\x7f\r", "close", "keep-alive", "application/json", "3",
                                    "100-continue"]), max_size=6).map("".join)


@st.composite
def _requests(draw: st.DrawFn) -> bytes:
    method = draw(st.sampled_from(["GET", "POST", "PUT", "DELETE", "HEAD", "BREW", "G T", ""]))
    target = draw(st.sampled_from(["/v1/a", "//v1/a", "/v1/a?b=1&b=2", "/v1/%2Fa", "*", "http://h/v1/a", "/v1/\xe9"]))
    version = draw(st.sampled_from(["HTTP/1.1", "HTTP/1.0", "HTTP/1.2", "HTTP/2.0", "HTTP/1.1 x", ""]))
    headers = draw(st.lists(st.tuples(_NAMES, st.sampled_from([":", ": ", " :", ":\t"]), _VALUES), max_size=6))
    lines = [name + colon + value for name, colon, value in headers]
    if draw(st.booleans()):
        lines.insert(draw(st.integers(0, len(lines))), draw(st.sampled_from([" folded", "\tfolded"])))
    body = draw(st.sampled_from([b"", b"hi", b'{"a":1}']))
    eol = draw(st.sampled_from(["\r\n", "\r\n", "\n"]))
    return _raw(" ".join(part for part in (method, target, version) if part), lines, body, eol)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=_requests())
def test_any_request_is_answered_alike_by_both_readings(httpd: GuardedHTTPServer, raw: bytes,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    fast, slow = _answers(httpd, raw, monkeypatch)
    assert fast == slow


def test_the_access_log_shows_the_request_line_as_sent_by_both_readings(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    handler = type("LoggedEchoHandler", (ApiRequestHandler,), {
        "handler": staticmethod(_echo), "timeouts": Timeouts(idle_s=1.0, header_s=1.0, body_s=1.0),
        "access_log": True})
    server = GuardedHTTPServer(("127.0.0.1", 0), handler, 8)
    try:
        raw = _raw("GET  /v1/a?b=1   HTTP/1.1", ["Host: x"])  # (spaced as sent; still plain)
        assert plain_request(raw, raw.find(b"\r\n\r\n")) is not None
        _answers(server, raw, monkeypatch)
    finally:
        server.server_close()
    lines = [re.sub(r"\[[^]]*\]", "[-]", line) for line in capsys.readouterr().err.splitlines()]
    assert len(lines) == 2 and lines[0] == lines[1]
    assert '"GET  /v1/a?b=1   HTTP/1.1" 200' in lines[0]
