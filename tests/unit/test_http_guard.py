"""The local server's HTTP-layer rules (local/http_guard.py): framing, its own errors, read deadlines."""

from __future__ import annotations

import io
import socket
import threading
import time
from collections.abc import Iterator

import pytest
from agentmem.local.http_guard import (
    HEADER_LIMIT,
    LINE_LIMIT,
    HeaderLinesError,
    PacedReader,
    Refusal,
    RequestHeaders,
    Timeouts,
    declared_length,
    is_method_name,
    linger,
    protocol_error,
    read_headers,
)


def headers(*pairs: tuple[str, str]) -> RequestHeaders:
    return RequestHeaders(list(pairs))


def read(*lines: bytes) -> RequestHeaders:
    return read_headers(io.BytesIO(b"".join(lines) + b"\r\nthe body"))


def test_headers_are_read_once_in_order_and_found_in_any_case() -> None:
    # Given a request's headers, one name twice, values with spaces around them and a bare-LF line
    read_back = read(b"Host: localhost\r\n", b"X-Tag:  one \r\n", b"x-tag: two\r\n", b"Accept:\tall\n")
    # Then each is read as sent, without the whitespace around its value
    assert read_back.items() == [("Host", "localhost"), ("X-Tag", "one"), ("x-tag", "two"), ("Accept", "all")]
    # And a name is found in any case: get gives its first value, get_all every one
    assert read_back.get("x-TAG") == "one" and read_back["ACCEPT"] == "all"
    assert read_back.get_all("X-Tag") == ["one", "two"] and read_back.get_all("Missing") is None
    assert "host" in read_back and read_back.get("Missing", "") == ""
    # And an event's headers take each name as sent, with its last value
    assert read_back.as_dict() == {"Host": "localhost", "X-Tag": "one", "x-tag": "two", "Accept": "all"}


def test_a_folded_header_line_goes_on_as_one_space() -> None:
    assert read(b"X-Long: first\r\n", b"   second\r\n", b"\tthird\r\n").get("X-Long") == "first second third"


@pytest.mark.parametrize("line", [b"X Bad: 1\r\n", b"X-Spaced : 1\r\n", b"no colon at all\r\n", b": no name\r\n",
                                  b"X-Ctl: a\rb\r\n", b"X-Nul: a\x00b\r\n"],
                         ids=["space-in-name", "space-before-colon", "no-colon", "no-name", "bare-cr", "nul"])
def test_a_line_that_is_not_a_header_is_a_400_naming_it(line: bytes) -> None:
    with pytest.raises(Refusal) as refused:
        read(b"Host: localhost\r\n", line)
    assert refused.value.status == 400 and refused.value.code == "invalid"
    assert refused.value.details == {"field": "headers"} and "header line 2" in refused.value.message


def test_a_first_header_line_that_goes_on_from_nothing_is_a_400() -> None:
    with pytest.raises(Refusal, match="header line 1 begins with whitespace"):
        read(b" folded\r\n", b"Host: localhost\r\n")


def test_headers_past_the_limits_are_what_http_server_answers_431() -> None:
    with pytest.raises(HeaderLinesError, match="Line too long"):
        read(b"X-Huge: " + b"a" * LINE_LIMIT + b"\r\n")
    with pytest.raises(HeaderLinesError, match="Too many headers"):
        read(*(b"X-Many-%d: 1\r\n" % i for i in range(HEADER_LIMIT + 1)))
    assert len(read(*(b"X-Many-%d: 1\r\n" % i for i in range(HEADER_LIMIT)))) == HEADER_LIMIT


@pytest.mark.parametrize("name", ["Authorization", "If-Match", "If-None-Match", "Content-Length"])
def test_a_header_that_may_come_once_sent_twice_is_a_400_naming_it(name: str) -> None:
    # When a request sends it twice, the second time in another case, even with the same value
    with pytest.raises(Refusal) as refused:
        read(b"Host: localhost\r\n", f"{name}: 1\r\n".encode(), f"{name.lower()}: 1\r\n".encode())
    # Then it is refused, naming it, in the shape of the API's other 400s
    assert (refused.value.status, refused.value.code, refused.value.details) == (400, "invalid", {"field": name})
    assert name in refused.value.message
    # And any other header may come twice
    assert read(b"Accept: a\r\n", b"accept: b\r\n", f"{name}: 1\r\n".encode()).get_all("Accept") == ["a", "b"]


@pytest.mark.parametrize(("pairs", "length"), [
    ((), None),
    ((("Content-Length", "0"),), 0),
    ((("Content-Length", "42"),), 42),
    ((("Content-Length", "42, 42"),), 42),
    ((("Content-Length", " 7 "),), 7),
])
def test_one_length_however_repeated_is_the_bodys(pairs: tuple[tuple[str, str], ...], length: int | None) -> None:
    assert declared_length(headers(*pairs)) == length


@pytest.mark.parametrize(("pairs", "status"), [
    ((("Content-Length", "4"), ("Content-Length", "5")), 400),
    ((("Content-Length", "4, 5"),), 400),
    ((("Content-Length", "-5"),), 400),
    ((("Content-Length", "+5"),), 400),
    ((("Content-Length", "5_0"),), 400),
    ((("Content-Length", "٥"),), 400),  # a digit, but not an ASCII one
    ((("Content-Length", "9" * 19),), 400),
    ((("Content-Length", ""),), 400),
    ((("Transfer-Encoding", "chunked"),), 411),
    ((("Transfer-Encoding", "gzip"), ("Content-Length", "3")), 411),
])
def test_framing_that_cannot_be_used_is_refused(pairs: tuple[tuple[str, str], ...], status: int) -> None:
    with pytest.raises(Refusal) as refused:
        declared_length(headers(*pairs))
    assert refused.value.status == status
    assert refused.value.code == ("length_required" if status == 411 else "invalid")


def test_method_names_are_tokens() -> None:
    assert is_method_name("GET") and is_method_name("PROPFIND") and is_method_name("M-SEARCH")
    assert not is_method_name("GE<T") and not is_method_name("") and not is_method_name("G ET")


@pytest.mark.parametrize(("status", "answered", "code"), [
    (400, 400, "invalid"), (414, 414, "too_large"), (431, 431, "too_large"), (505, 400, "invalid"),
    (501, 405, "method_not_allowed"),
])
def test_what_http_server_refuses_is_a_4xx_in_the_error_shape(status: int, answered: int, code: str) -> None:
    refusal = protocol_error(status, "reason")
    assert (refusal.status, refusal.code) == (answered, code)
    assert refusal.body().startswith(b'{"error": {"code": ')


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    server, client = socket.socketpair()
    yield server, client
    server.close()
    client.close()


def test_waiting_for_a_request_ends_after_the_idle_timeout(pair: tuple[socket.socket, socket.socket]) -> None:
    server, _client = pair
    reader = PacedReader(server, Timeouts(idle_s=0.2, header_s=5, body_s=5))
    reader.await_request()
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        reader.readinto(bytearray(10))
    assert 0.2 <= time.monotonic() - started < 1.5
    assert reader.timed_out == "idle" and not reader.began


def test_the_header_deadline_starts_at_the_first_byte_and_holds_across_reads(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    server, client = pair
    reader = PacedReader(server, Timeouts(idle_s=5, header_s=0.4, body_s=5))
    reader.await_request()
    client.sendall(b"G")
    started = time.monotonic()
    assert reader.readinto(bytearray(10)) == 1 and reader.began

    def trickle() -> None:  # a byte every 0.1 s for 5 s: far past the 0.4 s head deadline
        for _ in range(50):
            time.sleep(0.1)
            try:
                client.sendall(b"E")
            except OSError:
                return

    threading.Thread(target=trickle, daemon=True).start()
    with pytest.raises(TimeoutError):  # every read gets a byte in time, but the whole head does not
        while True:
            reader.readinto(bytearray(10))
    assert time.monotonic() - started < 3.0  # cut off long before the trickle ends, with room for a loaded machine
    assert reader.timed_out is not None and "headers" in reader.timed_out


def test_bytes_read_before_count_from_their_first_byte_for_the_header_deadline(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    # Given a reader handed the first bytes of a request that came 0.3 s ago (the connection loop waited for more)
    server, client = pair
    now = [100.0]
    reader = PacedReader(server, Timeouts(idle_s=5, header_s=0.4, body_s=5), clock=lambda: now[0],
                         pending=b"GET /v1/a HTTP/1.1\r\n", began_at=99.7)
    reader.await_request()
    # When it reads them, they come first, and the header deadline is the first byte's time and header_s
    buffer = bytearray(64)
    assert bytes(buffer[:reader.readinto(buffer)]) == b"GET /v1/a HTTP/1.1\r\n" and reader.began
    now[0] = 100.11  # 0.41 s after the first byte: what comes now is too late
    client.sendall(b"Host: x\r\n")
    with pytest.raises(TimeoutError):
        reader.readinto(buffer)
    assert reader.timed_out is not None and "headers" in reader.timed_out


def test_a_body_has_its_timeout_plus_a_second_per_min_rate_bytes() -> None:
    assert Timeouts(body_s=30, body_min_rate=50_000).body_allowance_s(1_000_000) == 50


def test_linger_drains_what_the_client_still_sends(pair: tuple[socket.socket, socket.socket]) -> None:
    server, client = pair
    reader = PacedReader(server, Timeouts(idle_s=5, header_s=5, body_s=2))
    sent = threading.Thread(target=lambda: (client.sendall(b"x" * 3_000_000), client.shutdown(socket.SHUT_WR)))
    sent.start()
    started = time.monotonic()
    linger(server, reader, 3_000_000)  # without it the sender would block: nobody reads
    sent.join(timeout=5)
    assert not sent.is_alive()
    assert time.monotonic() - started < 2
    assert client.recv(10) == b""  # the server's side is shut for writing


def _feed(client: socket.socket, piece: bytes, every_s: float, count: int) -> threading.Thread:
    def send() -> None:
        for _ in range(count):
            time.sleep(every_s)
            try:
                client.sendall(piece)
            except OSError:
                return

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread


def test_a_body_under_the_floor_rate_in_a_window_times_out_before_its_allowance(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    # Given a body of 10,000 bytes whose allowance is 10 s, counted in windows of 0.3 s at 1,024 bytes a second
    server, client = pair
    reader = PacedReader(server, Timeouts(idle_s=5, header_s=5, body_s=0.3, body_min_rate=1_000))
    reader.await_body(10_000)
    # When it comes 10 bytes every 0.05 s (200 bytes a second)
    _feed(client, b"x" * 10, 0.05, 100)
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        while True:
            reader.readinto(bytearray(100))
    # Then the first window under the floor ends it, saying so
    assert time.monotonic() - started < 2
    assert reader.timed_out is not None and "fewer than 1,024 bytes a second over 0.3 s" in reader.timed_out


def test_a_body_at_the_floor_rate_or_above_goes_on_window_after_window(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    # Given the same windows of 0.3 s, and a body of 3,000 bytes
    server, client = pair
    reader = PacedReader(server, Timeouts(idle_s=5, header_s=5, body_s=0.3, body_min_rate=100))
    reader.await_body(3_000)
    # When it comes at 2,000 bytes a second, for 1.5 s
    _feed(client, b"x" * 100, 0.05, 30)
    received = 0
    buffer = bytearray(100)
    while received < 3_000:
        received += reader.readinto(buffer)
    # Then all of it is read, over several windows
    assert received == 3_000 and reader.timed_out is None


def test_a_drain_stops_once_the_client_sends_under_the_floor(pair: tuple[socket.socket, socket.socket]) -> None:
    # Given an answer given before a body of 8 MB was read (whose allowance is minutes)
    server, client = pair
    reader = PacedReader(server, Timeouts(idle_s=5, header_s=5, body_s=30))
    _feed(client, b"x", 0.5, 20)  # a byte every 0.5 s
    started = time.monotonic()
    linger(server, reader, 8_388_608)
    # Then the drain ends after one window of DRAIN_UNKNOWN_S, not the body's allowance
    assert time.monotonic() - started < 4


def test_one_address_has_at_most_its_share_of_the_connections() -> None:
    from agentmem.local.http_guard import SOURCE_BUSY_RESPONSE, GuardedHTTPServer

    server = GuardedHTTPServer(("127.0.0.1", 0), object, 4)
    try:
        # Given a server of 4 connections: one address may have 2 (half, by default)
        assert server.max_per_source == 2
        assert server._take_slot(("10.0.0.1", 1)) is None and server._take_slot(("10.0.0.1", 2)) is None
        # When it asks for a third, it is refused; another address is not
        assert server._take_slot(("10.0.0.1", 3)) == SOURCE_BUSY_RESPONSE
        assert server._take_slot(("10.0.0.2", 1)) is None
        # And once one of its connections is closed, it may open one again
        server._free_slot(("10.0.0.1", 1))
        assert server._take_slot(("10.0.0.1", 4)) is None
        assert GuardedHTTPServer(("127.0.0.1", 0), object, 4, max_per_source=3).max_per_source == 3
    finally:
        server.server_close()
