"""One thread that serves a worker's connections while their requests arrive whole.

A thread per connection makes every request a race for the GIL: each socket or SQLite call lets it go, and with
more connections ready every let-go is a switch of thread (``docs/benchmarks.md``, "HTTP"). The handler answers
one event at a time in any case, so this loop serves each kept-alive connection from one thread instead, through
the same handler class:

- The loop accepts connections (each takes one of the server's slots, as a thread did) and waits for their
  requests with ``selectors``; a connection waiting for its next request costs no thread.
- A request that has arrived whole (its line, clean ``CRLF`` headers and the whole body its one
  ``Content-Length`` announces, with no ``Expect`` or ``Transfer-Encoding``, for a path of the API) is
  answered here, by the handler class's ``answer_buffered``; pipelined requests in turn.
- A request that is framed that way but has not all arrived yet (its headers or body still on the way, as a
  request of a few KB over a network often is) is waited for, ``PIECES_WAIT_S`` at most, up to
  ``PIECES_LIMIT`` bytes.
- Anything else is handed, with the bytes read so far, to a thread of its own for the rest of the connection's
  life, which reads it under ``local/http_guard.py``'s deadlines as every connection was (the header deadline
  counted from the request's first byte): a request still in pieces after that wait (a slow or hostile
  client), an expected or transfer-encoded body, odd framing, a workspace link's stream. So the guard's rules
  and answers are the thread's, unchanged.
- The answer is written without blocking; a connection whose client does not read it is closed after the idle
  timeout. A connection to be closed after its answer is shut for writing and read out, then closed, so the
  client reads the answer rather than a reset (``http_guard.linger``).
- A connection idle past the idle timeout is closed without an answer, as before.
- On stopping (``server.shutdown()``), the requests already sent are answered, each answer closing its
  connection, and then every connection is closed.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import time
from typing import TYPE_CHECKING, Any

from .http_guard import DRAIN_UNKNOWN_S, LINE_LIMIT

if TYPE_CHECKING:
    from .http_guard import GuardedHTTPServer

RECEIVE = 65_536
ACCEPTS_AT_ONCE = 64  # connections accepted per wake-up of the listener, at most
EXPIRY_CHECK_S = 0.25  # how often the deadlines are looked at
PIECES_WAIT_S = 0.1  # how long a request arriving in pieces is waited for here before a thread reads it
PIECES_LIMIT = 1024 * 1024  # a request that has not all arrived with this much read goes to a thread
MORE = (0, "")  # whole_request: framed plainly so far, not all here yet
FINAL_SEND_S = 2.0  # on stopping, how long the rest of an answer may take to send


class _Connection:
    __slots__ = ("address", "buffer", "close_after", "deadline", "fd", "out", "since", "sock", "state")

    def __init__(self, sock: socket.socket, address: Any, deadline: float) -> None:
        self.sock, self.address, self.deadline = sock, address, deadline
        self.fd = sock.fileno()  # its key, kept: a socket closed under it says -1
        self.since: float | None = None  # when the first byte of a request still in pieces came
        self.buffer = bytearray()
        self.out = memoryview(b"")
        self.close_after = False
        self.state = "read"  # "read", "write" (an answer being sent) or "drain" (shut for writing, read out)


def whole_request(buffer: bytearray) -> tuple[int, str] | None:
    """The size and target of the request at the start of ``buffer`` if it has arrived whole and is framed the
    plain way (request line, ``CRLF`` header lines, at most one ``Content-Length`` of digits, the whole body);
    ``MORE`` if it is framed that way as far as it has arrived; else None: the connection is then served by a
    thread, under the deadlines and rules of ``http_guard``."""
    end = buffer.find(b"\r\n\r\n", 0, LINE_LIMIT)
    if end < 0:
        return MORE if len(buffer) < LINE_LIMIT else None
    head = bytes(buffer[:end + 2])
    line_end = head.find(b"\r\n")
    words = head[:line_end].split()
    if len(words) != 3 or not words[2].startswith(b"HTTP/1."):
        return None
    headers = head[line_end:].lower()
    # a bare LF, a folded line, a body framed otherwise or asked for: the thread's reading, not this one's
    if headers.count(b"\n") != headers.count(b"\r\n") or b"\n " in headers or b"\n\t" in headers:
        return None
    if b"\nexpect" in headers or b"transfer-encoding" in headers:
        return None
    length = 0
    mentions = headers.count(b"content-length")
    if mentions:
        start = headers.find(b"\ncontent-length:")
        if mentions != 1 or start < 0:
            return None
        value = headers[start + 16:headers.find(b"\r", start + 16)].strip(b" \t")
        if not value.isdigit() or len(value) > 18:
            return None
        length = int(value)
    size = end + 4 + length
    if len(buffer) < size:
        return MORE
    return size, words[1].decode("iso-8859-1")


class ConnectionLoop:
    """Serves ``server``'s listener and its connections until ``server.shutdown()`` (see the module's text)."""

    def __init__(self, server: GuardedHTTPServer, handler_class: Any) -> None:
        self.server = server
        self.handler_class = handler_class
        self.idle_s = float(handler_class.timeouts.idle_s)
        self.selector = selectors.DefaultSelector()
        self.connections: dict[int, _Connection] = {}
        self.in_pieces: set[_Connection] = set()  # waited for: a request not all here yet
        self._checked = 0.0

    # -- the loop --------------------------------------------------------------------------------------------
    def run(self, poll_interval: float, stopping: Any) -> None:
        listener = self.server.socket
        listener.setblocking(False)
        self.selector.register(listener, selectors.EVENT_READ, None)
        try:
            while not stopping():
                wait = min(poll_interval, PIECES_WAIT_S / 4 if self.in_pieces else EXPIRY_CHECK_S)
                for key, mask in self.selector.select(wait):
                    if key.data is None:
                        self._accept(listener)
                    else:
                        self._guarded(key.data, self._service, mask)
                now = time.monotonic()
                for waited in [c for c in self.in_pieces if c.deadline <= now]:
                    # still in pieces: a thread reads the rest under the guard's deadlines
                    self._guarded(waited, self._hand_off)
                if now - self._checked >= EXPIRY_CHECK_S:
                    self._checked = now
                    for connection in [c for c in self.connections.values() if c.deadline <= now]:
                        # idle, or not reading its answer, or read out long enough
                        self._guarded(connection, self._close_if_idle)
                self.server.service_actions()
        finally:
            self._finish()
            self.selector.close()

    def _finish(self) -> None:
        """On stopping: answer the requests already sent, each answer closing its connection (as a thread
        answers the request it has read when its server stops), then close every connection."""
        self.server.closing = True
        for connection in list(self.connections.values()):
            if connection.state == "read":
                with contextlib.suppress(OSError):  # nothing sent (BlockingIOError), or the connection is gone
                    connection.buffer += connection.sock.recv(RECEIVE)
                if connection.buffer:
                    self._answer(connection)
        for connection in list(self.connections.values()):
            if connection.state == "write":
                with contextlib.suppress(OSError):
                    connection.sock.settimeout(FINAL_SEND_S)
                    connection.sock.sendall(connection.out)
            self._close(connection)

    def _guarded(self, connection: _Connection, action: Any, *args: Any) -> None:
        """``action`` on one connection. What it raises (a thread that cannot start, a socket gone wrong) is
        logged as the server logs a request's error, and closes that connection alone: the loop serves the
        others on, as socketserver goes on after a request's error."""
        try:
            action(connection, *args)
        except Exception:
            self.server.handle_error(connection.sock, connection.address)
            if self.connections.get(connection.fd) is connection:  # (a hand-off that failed has let it go)
                self._close(connection)

    def _close_if_idle(self, connection: _Connection) -> None:
        if not self._sent_meanwhile(connection):
            self._close(connection)

    @staticmethod
    def _sent_meanwhile(connection: _Connection) -> bool:
        """Whether an idle connection's next request came while the loop was answering another (a long one):
        it is read at the next turn, not closed as idle."""
        if connection.state != "read":
            return False
        try:
            return bool(connection.sock.recv(1, socket.MSG_PEEK))  # (the loop's sockets do not block)
        except OSError:  # nothing there (or a connection gone)
            return False

    def _accept(self, listener: socket.socket) -> None:
        for _ in range(ACCEPTS_AT_ONCE):
            try:
                sock, address = listener.accept()
            except (BlockingIOError, InterruptedError):
                return  # none waiting (or another worker took it)
            except OSError:
                return
            try:
                self.server.process_request(sock, address)  # a slot and adopt(), or a 503
            except Exception:  # (a 503's thread that cannot start): that connection closed, the loop goes on
                self.server.handle_error(sock, address)
                self.server.shutdown_request(sock)
            except BaseException:  # (as socketserver closes it before the interrupt goes on)
                self.server.shutdown_request(sock)
                raise

    def adopt(self, sock: socket.socket, address: Any) -> None:
        """A new connection, its slot taken: served here until it needs a thread or closes."""
        try:
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, True)
            connection = _Connection(sock, address, time.monotonic() + self.idle_s)
            self.selector.register(sock, selectors.EVENT_READ, connection)
        except (OSError, ValueError):  # the connection is gone already
            self.server.release_connection(sock, address)
            return
        self.connections[connection.fd] = connection

    def _service(self, connection: _Connection, mask: int) -> None:
        if connection.state == "write":
            self._send(connection)
            if connection.state == "read" and connection.buffer:
                self._answer(connection)  # requests sent behind the one just answered
            return
        try:
            received = connection.sock.recv(RECEIVE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            received = b""
        if not received:
            if connection.state == "read" and connection.buffer:
                self._hand_off(connection)  # a request cut short: its thread answers it, as a thread always did
            else:
                self._close(connection)
            return
        if connection.state == "drain":
            return  # read and dropped
        connection.buffer += received
        self._answer(connection)

    # -- requests ----------------------------------------------------------------------------------------------
    def _answer(self, connection: _Connection) -> None:
        """Answer the requests whole in the buffer, in turn; hand the connection to a thread at one that is not."""
        while connection.state == "read" and connection.buffer:
            found = whole_request(connection.buffer)
            if found == MORE and len(connection.buffer) < PIECES_LIMIT:
                if connection.since is None:  # its first piece: wait a little for the rest
                    connection.since = time.monotonic()
                    connection.deadline = connection.since + PIECES_WAIT_S
                    self.in_pieces.add(connection)
                return
            if found is None or found == MORE or not self.handler_class.serves_buffered(found[1]):
                self._hand_off(connection)
                return
            if connection.since is not None:
                connection.since = None
                self.in_pieces.discard(connection)
            size = found[0]
            request = bytes(connection.buffer[:size])
            del connection.buffer[:size]
            try:
                answer, close = self.handler_class.answer_buffered(self.server, connection.sock, connection.address,
                                                                   request)
            except Exception:
                self.server.handle_error(connection.sock, connection.address)
                self._close(connection)
                return
            connection.out, connection.close_after = memoryview(answer), close
            self._send(connection)

    def _send(self, connection: _Connection) -> None:
        try:
            while connection.out:
                sent = connection.sock.send(connection.out)
                connection.out = connection.out[sent:]
        except (BlockingIOError, InterruptedError):
            if connection.state != "write":
                connection.state = "write"
                self.selector.modify(connection.sock, selectors.EVENT_WRITE, connection)
            connection.deadline = time.monotonic() + self.idle_s  # the client must read within the idle timeout
            return
        except OSError:
            self._close(connection)
            return
        if connection.state == "write":
            self.selector.modify(connection.sock, selectors.EVENT_READ, connection)
        if connection.close_after:
            self._drain(connection)
            return
        connection.state = "read"
        connection.deadline = time.monotonic() + self.idle_s

    def _drain(self, connection: _Connection) -> None:
        """Stop sending and read out what the client still sends, for a while, before closing."""
        connection.state, connection.buffer = "drain", bytearray()
        connection.deadline = time.monotonic() + DRAIN_UNKNOWN_S
        try:
            connection.sock.shutdown(socket.SHUT_WR)
        except OSError:
            self._close(connection)

    def _hand_off(self, connection: _Connection) -> None:
        self._forget(connection)
        connection.sock.settimeout(self.idle_s)  # the thread's reads set their own; a write waits this long
        self.server.serve_in_thread(connection.sock, connection.address, bytes(connection.buffer), connection.since)

    def _forget(self, connection: _Connection) -> None:
        self.in_pieces.discard(connection)
        self.connections.pop(connection.fd, None)
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(connection.fd)

    def _close(self, connection: _Connection) -> None:
        self._forget(connection)
        self.server.release_connection(connection.sock, connection.address)
