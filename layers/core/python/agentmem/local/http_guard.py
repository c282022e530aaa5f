"""What keeps ``agentmem serve`` standing in front of slow, broken or hostile clients.

- **Timeouts** (``PacedReader``), each a deadline for the whole phase, not for one read, so a client
  trickling a byte at a time gains nothing: a kept-alive connection waits ``serve_idle_timeout_s`` for its
  next request; once the request has begun, its line and headers have ``serve_header_timeout_s``; its body
  has ``serve_body_timeout_s`` plus a second per ``serve_body_min_rate`` bytes it declared (Apache's
  mod_reqtimeout rule), and must keep coming: in each window of ``BODY_WINDOW_S`` (the body timeout if shorter)
  at least ``BODY_FLOOR_RATE`` bytes a second of it, or the rest of it. A request that runs out of time, or
  whose body comes slower than that, is answered 408 and its connection closed.
- **Nothing read for a request refused whatever its body** (``server.ApiRequestHandler``): before a body still
  on its way is read, the API's handler is asked (``api.app.answer_before_body``) whether it refuses the
  request anyway: 413 for the declared size against the route's limit, 401 for a missing, malformed or unknown
  key, 404 or 405 for the route. That answer is given at once and the connection closed, the body unread; a
  client that waits for ``100 Continue`` is asked for its body only once the request passed.
- **Framing** (``declared_length``): a body is framed by one ``Content-Length``; a transfer-encoded body
  is 411, conflicting or malformed lengths are 400 (RFC 9112 §6.3: they cannot be told apart from a
  request smuggled behind another).
- **Errors of the HTTP layer itself** (``protocol_error``): a bad request line, an over-long one (414),
  huge headers (431), an HTTP version other than 1.x, in the §10 error shape like every other answer.
- **Headers read once** (``read_headers``): each line split at its colon into one ``RequestHeaders``, the
  names looked up without case; a line that is not ``name: value`` (whitespace before the colon, a name that
  is not a token) or a value holding a control character is 400 (RFC 9112 §5), a folded line joins the one
  before it with a space. ``Authorization``, ``Content-Length``, ``If-Match`` or ``If-None-Match`` sent twice
  (``SINGLE_HEADERS``, names in any case) is 400 naming it, before anything else is looked at.
- **Answers before the body is read** (a 401, 413, 411) close the connection after a lingering read
  (``linger``): the body still on its way is read and dropped, up to ``DRAIN_LIMIT`` bytes and only while it
  comes at the floor rate (windows of ``DRAIN_UNKNOWN_S``), so a client that sends all of it before reading
  sees the answer instead of a broken pipe, and one that trickles it is let go.
- **A cap on connections** (``GuardedHTTPServer``): past ``serve_max_connections`` open at once, or past
  ``serve_max_connections_per_source`` open from one address (default: half the cap, so that one client
  cannot hold them all), a new connection is answered 503 ``unavailable`` with ``Retry-After`` and closed. The
  connections are served by ``local/connection_loop.py`` while their requests arrive whole; one whose request
  does not is handed, with what was read of it, to a thread of its own that reads it under these deadlines.
"""

from __future__ import annotations

import io
import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from email.message import Message
from http.server import ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from ..api.limits import SINGLE_HEADERS
from ..settings import Settings

if TYPE_CHECKING:
    from .connection_loop import ConnectionLoop

# read and dropped at most, after an answer given before the body was read (a workspace file through a link
# is at most 100 MB: any upload a client means to make gets its answer)
DRAIN_LIMIT = 128 * 1024 * 1024
# a body of unknown length (transfer-encoded) is drained this long at most
DRAIN_UNKNOWN_S = 2.0
# a connection over the cap: how long its request and the drain after the 503 may take, and how many such
# answers are given at once (beyond, the connection is closed unanswered)
BUSY_ANSWER_S = 1.0
BUSY_ANSWERS_AT_ONCE = 8
# a body must keep coming: in each window of this many seconds (the body timeout, if shorter) at least
# BODY_FLOOR_RATE bytes a second of it, or the rest of it, must arrive; a drain after an answer given before the
# body was read, in windows of DRAIN_UNKNOWN_S
BODY_WINDOW_S = 10.0
BODY_FLOOR_RATE = 1024
LINE_LIMIT = 65_536  # the request line and each header line (http.server's and http.client's limit)
HEADER_LIMIT = 100  # header lines (http.client's)

_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # RFC 9110 §5.6.2: what a method or header name is made of
_DIGITS = re.compile(r"[0-9]{1,18}")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # no field value holds one (a tab is whitespace)
_END_OF_HEADERS = (b"\r\n", b"\n", b"")


@dataclass(frozen=True)
class Timeouts:
    idle_s: float = 60.0
    header_s: float = 20.0
    body_s: float = 30.0
    body_min_rate: int = 50_000  # bytes a second
    body_floor_rate: int = BODY_FLOOR_RATE  # bytes a second, in every window of a body (``window_s``)

    @classmethod
    def from_settings(cls, settings: Settings) -> Timeouts:
        return cls(settings.serve_idle_timeout_s, settings.serve_header_timeout_s, settings.serve_body_timeout_s,
                   settings.serve_body_min_rate)

    def body_allowance_s(self, length: int) -> float:
        return self.body_s + length / self.body_min_rate

    @property
    def window_s(self) -> float:
        """The windows a body's floor rate is counted over: ``BODY_WINDOW_S``, or the body timeout if shorter."""
        return min(BODY_WINDOW_S, self.body_s)


class Refusal(Exception):
    """A request the HTTP layer refuses before the API sees it: a status and the §10 error."""

    def __init__(self, status: int, code: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.details = status, code, message, details

    def body(self) -> bytes:
        return json.dumps({"error": {"code": self.code, "message": self.message, **self.details}}).encode()


class PacedReader(io.RawIOBase):
    """The connection's reads, each bounded by what is left of the current phase's deadline."""

    def __init__(self, sock: socket.socket, timeouts: Timeouts, clock: Callable[[], float] = time.monotonic,
                 pending: bytes = b"", began_at: float | None = None) -> None:
        """``pending``: bytes of the connection read already (by the connection loop), read first; ``began_at``:
        when the first of them came, which starts the header deadline of the request they begin."""
        super().__init__()
        self._sock = sock
        self._pending = memoryview(pending)
        self._began_at = began_at
        self._timeouts = timeouts
        self._clock = clock
        self._deadline = 0.0
        self._waiting = False  # for a request to begin: its first byte starts the header deadline
        self._phase = ""
        # a body's floor rate: the window's length and end, and the bytes still due in it (0: none is counted)
        self._window_s = 0.0
        self._window_end = 0.0
        self._due = 0
        self._left = 0  # bytes of the body still to come
        self.began = False  # a byte of the current request has arrived
        self.timed_out: str | None = None  # what ran out of time, once something has

    def readable(self) -> bool:
        return True

    def await_request(self) -> None:
        self._waiting, self.began, self.timed_out = True, False, None
        self._deadline = self._clock() + self._timeouts.idle_s
        self._due = self._left = 0

    def await_body(self, length: int, window_s: float | None = None) -> None:
        """The body's deadline (``body_allowance_s``), and its floor rate counted in windows of ``window_s``
        (the timeouts' ``window_s`` unless given)."""
        self._waiting = False
        self._phase = f"the body did not arrive within {self._timeouts.body_allowance_s(length):.3g} s"
        now = self._clock()
        self._deadline = now + self._timeouts.body_allowance_s(length)
        self._window_s = self._timeouts.window_s if window_s is None else window_s
        self._left = length
        self._open_window(now)

    def linger(self, length: int | None) -> None:
        """The deadline of a drain: as for a body of ``length`` bytes (its floor rate counted in windows of
        ``DRAIN_UNKNOWN_S``), or ``DRAIN_UNKNOWN_S`` if unknown."""
        if length is not None:
            self.await_body(length, window_s=DRAIN_UNKNOWN_S)
            return
        self._waiting = False
        self._deadline = self._clock() + DRAIN_UNKNOWN_S
        self._due = self._left = 0

    def _open_window(self, now: float) -> None:
        self._window_end = now + self._window_s
        self._due = min(int(self._timeouts.body_floor_rate * self._window_s), self._left)

    def _until(self, now: float) -> float:
        """When the read under way must have ended: the phase's deadline, or the end of the body's window."""
        if not self._left:
            return self._deadline
        while self._due <= 0 and now >= self._window_end:  # the window's due came in time: the next window
            self._window_end += self._window_s
            self._due = min(int(self._timeouts.body_floor_rate * self._window_s), self._left)
        if self._due > 0 and now >= self._window_end:
            raise self._too_slow()
        return min(self._deadline, self._window_end)

    def readinto(self, buffer: Any) -> int:
        while True:
            now = self._clock()
            remaining = self._until(now) - now
            if now >= self._deadline:
                raise self._timeout()
            if self._pending:
                received = min(len(buffer), len(self._pending))
                buffer[:received] = self._pending[:received]
                self._pending = self._pending[received:]
                break
            self._sock.settimeout(remaining)
            try:
                received = self._sock.recv_into(buffer)
                break
            except TimeoutError:
                continue  # the deadline (a timeout), or a window's end (too slow, or the next window)
            finally:
                self._sock.settimeout(self._timeouts.idle_s)  # a write waits at most this long for the client to read
        if self._left:
            self._left = max(0, self._left - received)
            self._due -= received
        if received and self._waiting:
            self._waiting, self.began = False, True
            self._phase = f"the request line and headers did not arrive within {self._timeouts.header_s:g} s"
            began, self._began_at = self._began_at, None
            self._deadline = (self._clock() if began is None else began) + self._timeouts.header_s
        return received

    def _timeout(self) -> TimeoutError:
        self.timed_out = "idle" if self._waiting else self._phase
        return TimeoutError(self.timed_out)

    def _too_slow(self) -> TimeoutError:
        self.timed_out = (f"the body came at fewer than {self._timeouts.body_floor_rate:,} bytes a second over "
                          f"{self._window_s:g} s")
        return TimeoutError(self.timed_out)


class WholeRequest:
    """The reader of a request the connection loop read whole: nothing to wait for, nothing timed out."""

    timed_out: str | None = None

    def await_request(self) -> None:
        pass

    def await_body(self, length: int) -> None:
        pass


WHOLE = WholeRequest()


def is_method_name(command: str) -> bool:
    return _TOKEN.fullmatch(command) is not None


class HeaderLinesError(Exception):
    """The headers are over ``LINE_LIMIT`` a line or ``HEADER_LIMIT`` lines: what ``http.server`` answers 431
    (the argument is its reason, "Line too long" or "Too many headers")."""


class RequestHeaders:
    """A request's headers as read, once: in order, and by name without case (``get`` gives the first value of
    a name, as ``email.message.Message`` does, which ``http.server`` would have read them into)."""

    __slots__ = ("_by_name", "_pairs")

    def __init__(self, pairs: list[tuple[str, str]]) -> None:
        self._pairs = pairs
        self._by_name: dict[str, list[str]] = {}
        for name, value in pairs:
            self._by_name.setdefault(name.lower(), []).append(value)

    def repeated(self) -> Refusal | None:
        """The 400 for a header of ``SINGLE_HEADERS`` sent more than once (in any case), None if none is."""
        if len(self._by_name) == len(self._pairs):  # no name twice: the common case, at no cost
            return None
        for name in SINGLE_HEADERS:
            values = self._by_name.get(name.lower())
            if values is not None and len(values) > 1:
                return Refusal(400, "invalid", f"the request has {len(values)} {name} headers: send it once",
                               field=name)
        return None

    def get(self, name: str, default: str | None = None) -> str | None:
        values = self._by_name.get(name.lower())
        return values[0] if values else default

    def get_all(self, name: str, failobj: list[str] | None = None) -> list[str] | None:
        values = self._by_name.get(name.lower())
        return list(values) if values else failobj

    def __getitem__(self, name: str) -> str | None:
        return self.get(name)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._by_name

    def __iter__(self) -> Iterator[str]:
        return (name for name, _ in self._pairs)

    def __len__(self) -> int:
        return len(self._pairs)

    def keys(self) -> list[str]:
        return [name for name, _ in self._pairs]

    def values(self) -> list[str]:
        return [value for _, value in self._pairs]

    def items(self) -> list[tuple[str, str]]:
        return list(self._pairs)

    def as_dict(self) -> dict[str, str]:
        """Each name as sent with its last value (what an API Gateway event's ``headers`` holds)."""
        return dict(self._pairs)


def read_headers(rfile: io.BufferedIOBase) -> RequestHeaders:
    """The headers that follow a request line, up to the empty line: ``HeaderLinesError`` past the limits (the
    431s ``http.server`` gives), ``Refusal`` (400) for a line that is not a header."""
    lines: list[bytes] = []
    while True:
        line = rfile.readline(LINE_LIMIT + 1)
        if len(line) > LINE_LIMIT:
            raise HeaderLinesError("Line too long")
        if line in _END_OF_HEADERS:
            break
        lines.append(line)
        if len(lines) > HEADER_LIMIT:
            raise HeaderLinesError("Too many headers")
    pairs: list[tuple[str, str]] = []
    for number, raw in enumerate(lines, start=1):
        text = raw.decode("iso-8859-1").rstrip("\r\n")
        if text[:1] in (" ", "\t"):  # obs-fold: the line before it goes on (RFC 9112 §5.2: as one space)
            if not pairs:
                raise _bad_header(number, "begins with whitespace")
            name, value = pairs[-1]
            more = text.strip(" \t")
            pairs[-1] = (name, value + " " + more if value and more else value or more)
            continue
        name, colon, value = text.partition(":")
        if not colon or _TOKEN.fullmatch(name) is None:
            raise _bad_header(number, "is not a header (name: value)")
        value = value.strip(" \t")
        if _CONTROL.search(value) is not None:
            raise _bad_header(number, f"holds a control character in the value of {name}")
        pairs.append((name, value))
    headers = RequestHeaders(pairs)
    refused = headers.repeated()
    if refused is not None:
        raise refused
    return headers


# header lines with nothing to fix or refuse: a name, a colon, a value without a control character, CRLF
_PLAIN_HEADERS = re.compile(r"(?:[!#$%&'*+.^_`|~0-9A-Za-z-]+:[^\x00-\x08\x0a-\x1f\x7f]*\r\n)*")
_PLAIN_HEADER = re.compile(r"([^:]+):[ \t]*([^\r]*?)[ \t]*\r\n")
_PLAIN_VERSIONS = ("HTTP/1.1", "HTTP/1.0")


def plain_request(request: bytes, head_end: int) -> tuple[list[str], list[tuple[str, str]]] | None:
    """The request line's three words and the header pairs of a request read whole, whose headers end at
    ``head_end`` (the blank line's CRLF CRLF), when both are plain: a line of method, target and HTTP/1.1 or
    HTTP/1.0, and at most ``HEADER_LIMIT`` header lines each ``name: value`` with nothing ``read_headers`` would
    fold, refuse or strip but the spaces around the value. None otherwise: the request is then read line by
    line, with every check and answer of ``http.server``'s reading and ``read_headers``'."""
    line_end = request.find(b"\r\n", 0, head_end + 2)
    words = str(request[:line_end], "iso-8859-1").split()
    if len(words) != 3 or words[2] not in _PLAIN_VERSIONS:
        return None
    block = str(request[line_end + 2:head_end + 2], "iso-8859-1")
    if _PLAIN_HEADERS.fullmatch(block) is None:
        return None
    pairs = _PLAIN_HEADER.findall(block)
    return (words, pairs) if len(pairs) <= HEADER_LIMIT else None


def _bad_header(number: int, why: str) -> Refusal:
    return Refusal(400, "invalid", f"header line {number} {why}", field="headers")


def declared_length(headers: RequestHeaders | Message) -> int | None:
    """The body's length from its one ``Content-Length`` (None without one), or the ``Refusal`` of framing
    the server does not accept."""
    if headers.get_all("Transfer-Encoding"):
        raise Refusal(411, "length_required",
                      "send a Content-Length; chunked (or otherwise transfer-encoded) bodies are not accepted")
    values = headers.get_all("Content-Length") or []
    if not values:
        return None
    given = {part.strip() for value in values for part in str(value).split(",")}
    if len(given) > 1:
        raise Refusal(400, "invalid", "the request has conflicting Content-Length headers "
                      f"({', '.join(sorted(given))})", field="Content-Length")
    value = given.pop()
    if _DIGITS.fullmatch(value) is None:
        raise Refusal(400, "invalid", "Content-Length is not a number of bytes", field="Content-Length")
    return int(value)


def protocol_error(status: int, reason: str | None) -> Refusal:
    """The answer to what ``http.server`` refuses while reading a request (it calls ``send_error``)."""
    said = f" ({reason})" if reason else ""
    if status == 414:
        return Refusal(414, "too_large", f"the request line is longer than {LINE_LIMIT:,} bytes", limit=LINE_LIMIT)
    if status == 431:
        return Refusal(431, "too_large", f"the request's headers are too large: at most {HEADER_LIMIT} lines of at "
                       f"most {LINE_LIMIT:,} bytes each{said}", limit=LINE_LIMIT)
    if status == 505:  # HTTP/2 and later spoken over a plain connection: the client's mistake, not ours
        return Refusal(400, "invalid", f"this server speaks HTTP/1.0 and HTTP/1.1{said}")
    if status == 501:
        return Refusal(405, "method_not_allowed", f"the method is not served{said}")
    return Refusal(status if 400 <= status < 500 else 400, "invalid", f"the request is not valid HTTP{said}")


def linger(sock: socket.socket, reader: PacedReader, length: int | None) -> None:
    """After an answer given before the body was read: stop sending, read and drop what the client still
    sends (until it closes, or ``length`` bytes at most ``DRAIN_LIMIT``, or the body's deadline), then let the
    connection close. Without it the client's write would meet a reset before it read the answer."""
    try:
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        return
    limit = DRAIN_LIMIT if length is None else min(length, DRAIN_LIMIT)
    reader.linger(None if length is None else limit)
    buffer = bytearray(256 * 1024)
    drained = 0
    try:
        while drained < limit:
            received = reader.readinto(buffer)
            if not received:
                return
            drained += received
    except OSError:  # TimeoutError included: the client had its time
        return


# socketserver.BaseServer's private flags: set by its shutdown(), read by serve_forever() (and by ours)
_SHUTDOWN_REQUEST, _SHUT_DOWN = "_BaseServer__shutdown_request", "_BaseServer__is_shut_down"

def _busy_response(message: str) -> bytes:
    busy = Refusal(503, "unavailable", message)
    return (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
            b"Connection: close\r\n" + f"Content-Length: {len(busy.body())}\r\n\r\n".encode() + busy.body())


BUSY_RESPONSE = _busy_response("the server has as many connections open as it takes; retry shortly")
SOURCE_BUSY_RESPONSE = _busy_response("the server has as many connections open from this address as it takes from "
                                      "one; retry shortly")


def answer_busy(sock: socket.socket, response: bytes = BUSY_RESPONSE) -> None:
    """Answer a connection over a cap with 503: read its request's head (briefly), answer, drain, close."""
    try:
        sock.settimeout(BUSY_ANSWER_S)
        received = b""
        started = time.monotonic()
        while b"\r\n\r\n" not in received and len(received) < LINE_LIMIT and time.monotonic() - started < BUSY_ANSWER_S:
            chunk = sock.recv(65_536)
            if not chunk:
                break
            received += chunk
        sock.sendall(response)
        sock.shutdown(socket.SHUT_WR)
        while time.monotonic() - started < 2 * BUSY_ANSWER_S and sock.recv(65_536):
            pass
    except OSError:
        pass
    finally:
        sock.close()


def _source(client_address: Any) -> str:
    """The address a connection comes from (its host; a Unix socket's, '')."""
    return str(client_address[0]) if isinstance(client_address, tuple) and client_address else ""


class _Answering:
    """``GuardedHTTPServer.answering``: counts the requests being answered, for ``wait_idle`` (a class, not a
    generator: it is entered on every request)."""

    __slots__ = ("_server",)

    def __init__(self, server: GuardedHTTPServer) -> None:
        self._server = server

    def __enter__(self) -> None:
        server = self._server
        with server._idle:
            server._requests += 1

    def __exit__(self, *exc: object) -> None:
        server = self._server
        with server._idle:
            server._requests -= 1
            if not server._requests:
                server._idle.notify_all()


class GuardedHTTPServer(ThreadingHTTPServer):
    """At most ``max_connections`` connections, served by its ``ConnectionLoop`` while their requests arrive whole
    and each by a thread of its own otherwise (a thread per connection for a handler class that cannot answer a
    request read whole); quiet about clients that go away."""

    daemon_threads = True
    request_queue_size = 128  # connections the kernel holds before they are accepted

    def __init__(self, address: tuple[str, int], handler: Any, max_connections: int,
                 listener: socket.socket | None = None, *, reuse_port: bool = False,
                 max_per_source: int | None = None) -> None:
        """``listener``: a socket bound and listening already (a worker's), served instead of binding ``address``.
        ``reuse_port``: bind with ``SO_REUSEPORT``, for other sockets to listen beside it (``local/workers.py``).
        ``max_per_source``: the connections one address may have open (default: half of ``max_connections``)."""
        self.allow_reuse_port = reuse_port
        self.max_connections = max_connections
        self.max_per_source = max_per_source or max(1, max_connections // 2)
        self._slots = threading.BoundedSemaphore(max_connections)
        self._sources: dict[str, int] = {}  # connections open by address (those with none left out)
        self._sources_lock = threading.Lock()
        self._busy_answers = threading.BoundedSemaphore(BUSY_ANSWERS_AT_ONCE)
        self._requests = 0  # requests being answered now
        self._answering = _Answering(self)
        self.closing = False  # stopping: each answer closes its connection
        self._loop: ConnectionLoop | None = None  # serving connections, while serve_forever runs one
        self._pending: dict[socket.socket, tuple[bytes, float | None]] = {}  # the loop's, for the thread
        self._idle = threading.Condition()
        super().__init__(address, handler, bind_and_activate=listener is None)
        if listener is not None:
            self.socket.close()
            listener.setblocking(False)
            self.socket = listener
            self.server_address = listener.getsockname()[:2]
            self.server_name, self.server_port = str(self.server_address[0]), int(self.server_address[1])

    def answering(self) -> _Answering:
        """Around the handling of one request: ``wait_idle`` waits for it."""
        return self._answering

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no request is being answered (at most ``timeout`` seconds); whether none is."""
        with self._idle:
            return self._idle.wait_for(lambda: self._requests == 0, timeout)

    # -- serving: a loop for connections whose requests arrive whole, a thread for the others ---------------
    def serve_forever(self, poll_interval: float = 0.5) -> None:
        """Serve until ``shutdown()``: through a ``ConnectionLoop`` when the handler class can answer a request
        read whole (``answer_buffered``), else a thread per connection."""
        if not hasattr(self.RequestHandlerClass, "answer_buffered"):
            super().serve_forever(poll_interval)
            return
        from .connection_loop import ConnectionLoop

        # socketserver's own flags, so that its shutdown() stops this loop as it stops its own
        shut_down: threading.Event = getattr(self, _SHUT_DOWN)
        shut_down.clear()
        try:
            self._loop = ConnectionLoop(self, self.RequestHandlerClass)
            self._loop.run(poll_interval, lambda: bool(getattr(self, _SHUTDOWN_REQUEST)))
        finally:
            self._loop = None
            setattr(self, _SHUTDOWN_REQUEST, False)
            shut_down.set()

    def serve_in_thread(self, request: socket.socket, client_address: Any, pending: bytes,
                        began_at: float | None = None) -> None:
        """Serve a connection of the loop, its slot taken and ``pending`` read of it already (the request's first
        byte come at ``began_at``), in a thread."""
        if pending:
            self._pending[request] = (pending, began_at)
        try:
            ThreadingHTTPServer.process_request(self, request, client_address)
        except BaseException:
            self._pending.pop(request, None)
            self.release_connection(request, client_address)
            raise

    def take_pending(self, request: socket.socket) -> tuple[bytes, float | None]:
        """What the loop read of a connection before handing it to a thread, and when its first byte came."""
        return self._pending.pop(request, (b"", None))

    def release_connection(self, request: socket.socket, client_address: Any) -> None:
        """Close a connection of the loop and free its slot."""
        try:
            self.shutdown_request(request)
        finally:
            self._free_slot(client_address)

    def _take_slot(self, client_address: Any) -> bytes | None:
        """Take a slot for a connection from ``client_address``: None, or the 503 to answer it (over the cap, or
        over its address's share)."""
        source = _source(client_address)
        with self._sources_lock:
            held = self._sources.get(source, 0)
            if held >= self.max_per_source:
                return SOURCE_BUSY_RESPONSE
            if not self._slots.acquire(blocking=False):
                return BUSY_RESPONSE
            self._sources[source] = held + 1
        return None

    def _free_slot(self, client_address: Any) -> None:
        source = _source(client_address)
        with self._sources_lock:
            held = self._sources.pop(source, 0) - 1
            if held > 0:
                self._sources[source] = held
            self._slots.release()

    def process_request(self, request: Any, client_address: Any) -> None:
        refusal = self._take_slot(client_address)
        if refusal is None:
            if self._loop is not None:
                self._loop.adopt(request, client_address)
                return
            try:
                super().process_request(request, client_address)
            except BaseException:  # no thread was started: the slot is free again
                self._free_slot(client_address)
                raise
            return
        if self._busy_answers.acquire(blocking=False):
            try:
                threading.Thread(target=self._answer_busy, args=(request, refusal), daemon=True).start()
            except BaseException:  # no thread was started: its turn is free again (the caller closes the connection)
                self._busy_answers.release()
                raise
        else:
            self.shutdown_request(request)

    def _answer_busy(self, request: socket.socket, response: bytes) -> None:
        try:
            answer_busy(request, response)
        finally:
            self._busy_answers.release()

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._free_slot(client_address)

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        error = sys.exc_info()[1]
        if isinstance(error, OSError):  # the client went away or stopped reading: nothing to report
            return
        super().handle_error(request, client_address)
