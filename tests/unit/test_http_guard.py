"""The local server's HTTP-layer rules (local/http_guard.py): framing, its own errors, read deadlines."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from email.message import Message

import pytest
from agentmem.local.http_guard import (
    PacedReader,
    Refusal,
    Timeouts,
    declared_length,
    is_method_name,
    linger,
    protocol_error,
)


def headers(*pairs: tuple[str, str]) -> Message:
    message = Message()
    for name, value in pairs:
        message[name] = value
    return message


@pytest.mark.parametrize(("pairs", "length"), [
    ((), None),
    ((("Content-Length", "0"),), 0),
    ((("Content-Length", "42"),), 42),
    ((("Content-Length", "42"), ("Content-Length", "42")), 42),
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

    def trickle() -> None:
        for _ in range(10):
            time.sleep(0.1)
            try:
                client.sendall(b"E")
            except OSError:
                return

    threading.Thread(target=trickle, daemon=True).start()
    with pytest.raises(TimeoutError):  # every read gets a byte in time, but the whole head does not
        while True:
            reader.readinto(bytearray(10))
    assert time.monotonic() - started < 1.0
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
